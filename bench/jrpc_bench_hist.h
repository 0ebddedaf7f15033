/* jrpc_bench_hist.h - latency histogram of jrpc-bench: log-linear buckets
 * (each power of two split into 2^HIST_SUB_BITS equal steps), so a value
 * is recorded with one count++ and no allocation, at a relative error
 * below 1/2^HIST_SUB_BITS over the whole uint64 range. */
#ifndef JRPC_BENCH_HIST_H
#define JRPC_BENCH_HIST_H

#include <stdint.h>

#define HIST_SUB_BITS 7
#define HIST_SUB (1u << HIST_SUB_BITS)
#define HIST_BUCKETS ((65u - HIST_SUB_BITS) << HIST_SUB_BITS)

typedef struct bench_hist {
  uint64_t n;
  uint64_t max;
  uint64_t counts[HIST_BUCKETS];
} bench_hist_t;

static inline unsigned hist_index(uint64_t v) {
  if (v < HIST_SUB)
    return (unsigned)v;
  unsigned shift = 63u - (unsigned)__builtin_clzll(v) - HIST_SUB_BITS;
  return ((shift + 1u) << HIST_SUB_BITS) + (unsigned)((v >> shift) - HIST_SUB);
}

static inline void hist_record(bench_hist_t *h, uint64_t v) {
  h->counts[hist_index(v)]++;
  h->n++;
  if (v > h->max)
    h->max = v;
}

/* The value at quantile q (0..1): the highest value of the bucket holding
 * it, never above the largest value recorded. 0 when empty. */
uint64_t hist_quantile(const bench_hist_t *h, double q);

#endif
