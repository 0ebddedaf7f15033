/* stats.h - counters the owning thread bumps and any thread may read.
 * Each counter has exactly one writer (the worker whose engine or
 * connection it counts), so a relaxed load plus a relaxed store is enough:
 * on x86-64 that is a plain add, where an atomic fetch-add would be a
 * locked instruction on every request. Readers see a recent value. */
#ifndef JRPC_STATS_H
#define JRPC_STATS_H

#include <stdatomic.h>
#include <stdint.h>

typedef _Atomic uint64_t jrpc__counter_t;

#define JRPC__STAT_ADD(ctr, n)                                                 \
  atomic_store_explicit(                                                       \
      &(ctr), atomic_load_explicit(&(ctr), memory_order_relaxed) + (n),        \
      memory_order_relaxed)
#define JRPC__STAT_INC(ctr) JRPC__STAT_ADD(ctr, 1)
#define JRPC__STAT_GET(ctr) atomic_load_explicit(&(ctr), memory_order_relaxed)

/* Per method and per worker: one row per worker, indexed like the
 * registry's slots. */
typedef struct jrpc__mstat {
  jrpc__counter_t calls;  /* requests and notifications that reached it */
  jrpc__counter_t errors; /* error responses it produced */
} jrpc__mstat_t;

/* Per engine (worker). */
typedef struct jrpc__estat {
  jrpc__counter_t calls;  /* request objects received, batches counted per
                             element, notifications included */
  jrpc__counter_t errors; /* error responses written, of any code */
} jrpc__estat_t;

#endif
