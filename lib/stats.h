/* stats.h - counters the owning thread bumps and any thread may read.
 * Each counter has exactly one writer (the worker whose engine or
 * connection it counts), so a relaxed load plus a relaxed store is enough:
 * on x86-64 that is a plain add, where an atomic fetch-add would be a
 * locked instruction on every request. Readers see a recent value. */
#ifndef JRPC_STATS_H
#define JRPC_STATS_H

#include <stdatomic.h>
#include <stdint.h>
#include <time.h>

typedef _Atomic uint64_t jrpc__counter_t;

#define JRPC__STAT_ADD(ctr, n)                                                 \
  atomic_store_explicit(                                                       \
      &(ctr), atomic_load_explicit(&(ctr), memory_order_relaxed) + (n),        \
      memory_order_relaxed)
#define JRPC__STAT_INC(ctr) JRPC__STAT_ADD(ctr, 1)
#define JRPC__STAT_GET(ctr) atomic_load_explicit(&(ctr), memory_order_relaxed)

/* Latency: a fixed log-scale histogram of microseconds. Below 4 us one
 * bucket per microsecond; from there each power of two is split in four,
 * so a bucket's width is at most a quarter of its lower bound (the
 * resolution of p50/p99: within 25%, read as the bucket's upper bound).
 * The last bucket, from 2^25 * 7/4 us (about 58.7 s) up, takes everything
 * longer. */
#define JRPC__LAT_BUCKETS 100

static inline unsigned jrpc__lat_bucket(uint64_t ns) {
  uint64_t us = ns / 1000;
  if (us < 4)
    return (unsigned)us;
  unsigned b = 63u - (unsigned)__builtin_clzll(us); /* 2.. */
  unsigned k = 4 * (b - 1) + (unsigned)((us >> (b - 2)) & 3);
  return k < JRPC__LAT_BUCKETS ? k : JRPC__LAT_BUCKETS - 1;
}

/* The least duration, in ns, of bucket k (k = JRPC__LAT_BUCKETS: where
 * the last one would end; UINT64_MAX stands for "no bound" there). */
static inline uint64_t jrpc__lat_lower_ns(unsigned k) {
  if (k >= JRPC__LAT_BUCKETS)
    return UINT64_MAX;
  if (k < 4)
    return (uint64_t)k * 1000;
  unsigned b = k / 4 + 1, sub = k % 4;
  return ((uint64_t)(4 + sub) << (b - 2)) * 1000;
}

/* How a call ended (jrpc__stats_call_end). */
typedef enum jrpc__outcome {
  JRPC__OUT_OK = 0,
  JRPC__OUT_ERROR,     /* answered with an error */
  JRPC__OUT_TIMED_OUT, /* its deadline passed (-32004) */
  JRPC__OUT_CANCELLED, /* cancelled by the client or a disconnect */
} jrpc__outcome_t;

/* Per method and per worker: one row per worker, indexed like the
 * registry's slots. Each on cache lines of its own. */
typedef struct jrpc__mstat {
  _Alignas(64) jrpc__counter_t calls; /* requests and notifications that
                                         reached it */
  jrpc__counter_t errors;             /* error responses it produced */
  jrpc__counter_t timeouts;           /* calls that ended JRPC__OUT_TIMED_OUT */
  jrpc__counter_t cancelled;          /* calls that ended JRPC__OUT_CANCELLED */
  jrpc__counter_t max_ns;             /* the longest call */
  jrpc__counter_t sum_ns;             /* all calls' time, for /metrics' _sum */
  jrpc__counter_t lat[JRPC__LAT_BUCKETS]; /* calls per latency bucket */
  /* The owner's alone: synchronous calls of the read being handled, not
   * yet in lat (jrpc__lat_flush), and how many of those failed. */
  uint32_t pend, pend_err;
} jrpc__mstat_t;

/* n calls of ns each into ms's histogram. */
static inline void jrpc__lat_add(jrpc__mstat_t *ms, uint64_t ns, uint64_t n) {
  JRPC__STAT_ADD(ms->lat[jrpc__lat_bucket(ns)], n);
  JRPC__STAT_ADD(ms->sum_ns, ns * n);
  if (ns > JRPC__STAT_GET(ms->max_ns))
    atomic_store_explicit(&ms->max_ns, ns, memory_order_relaxed);
}

/* The q-quantile (0 < q <= 1) of a histogram of `total` calls, as the
 * upper bound of the bucket it falls in, and never more than the longest
 * call, max_ns (so that p50 <= p99 <= max always holds). */
static inline uint64_t jrpc__lat_quantile_ns(const uint64_t *h, uint64_t total,
                                             double q, uint64_t max_ns) {
  if (!total)
    return 0;
  uint64_t rank = (uint64_t)(q * (double)total + 0.999999), seen = 0;
  if (rank < 1)
    rank = 1;
  for (unsigned k = 0; k < JRPC__LAT_BUCKETS; k++) {
    seen += h[k];
    if (seen >= rank) {
      uint64_t upper = jrpc__lat_lower_ns(k + 1);
      return upper < max_ns ? upper : max_ns;
    }
  }
  return max_ns;
}

/* The clock of latencies: CLOCK_MONOTONIC in ns (libuv's uv_hrtime reads
 * the same). */
static inline uint64_t jrpc__clock_ns(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

/* Per engine (worker). */
typedef struct jrpc__estat {
  jrpc__counter_t calls;  /* request objects received, batches counted per
                             element, notifications included */
  jrpc__counter_t errors; /* error responses written, of any code */
} jrpc__estat_t;

#endif
