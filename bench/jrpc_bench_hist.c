/* jrpc_bench_hist.c - see jrpc_bench_hist.h. */
#include "jrpc_bench_hist.h"

static uint64_t bucket_top(unsigned i) {
  if (i < HIST_SUB)
    return i;
  unsigned shift = (i >> HIST_SUB_BITS) - 1u;
  uint64_t sub = (uint64_t)(i & (HIST_SUB - 1u)) + HIST_SUB;
  uint64_t low = sub << shift;
  return low + ((uint64_t)1 << shift) - 1u;
}

uint64_t hist_quantile(const bench_hist_t *h, double q) {
  if (h->n == 0)
    return 0;
  /* The rank of the wanted value, 1-based: the smallest r with
   * r >= q * n, so that p50 of {1, 2} is 1 and p100 is the max. */
  double want = q * (double)h->n;
  uint64_t rank = (uint64_t)want;
  if ((double)rank < want)
    rank++;
  if (rank < 1)
    rank = 1;
  uint64_t seen = 0;
  for (unsigned i = 0; i < HIST_BUCKETS; i++) {
    seen += h->counts[i];
    if (seen >= rank) {
      uint64_t top = bucket_top(i);
      return top < h->max ? top : h->max;
    }
  }
  return h->max;
}
