/* jrpc_bench_workload.h - the request jrpc-bench sends, rendered once with
 * its framing; each send copies it and writes the ids in place.
 *
 * Ids are fixed-width decimal numbers (id_digits, 9 or 16, digits, the
 * first never 0), so the frame's length, and with length framing its prefix,
 * never change. The k-th id slot of request number r carries id_base + r *
 * n_ids + k. */
#ifndef JRPC_BENCH_WORKLOAD_H
#define JRPC_BENCH_WORKLOAD_H

#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "jrpc_bench_opts.h"

typedef struct bench_workload {
  char *frame; /* the framed request bytes, ids as placeholders */
  size_t len;
  size_t *id_off; /* where each id's digits start in frame */
  unsigned n_ids; /* ids per request: N of a batch, else 1 */
  unsigned calls; /* calls per request: N of a batch, 2 for notify */
  int batch;      /* the reply is an array */
  unsigned id_digits;
  uint64_t id_base; /* 10^(id_digits-1): the smallest id */
  uint64_t id_span; /* ids are below id_base + id_span */
  char desc[96];    /* what the request is, for the report */
} bench_workload_t;

/* Builds the request of o's workload for up to window requests in flight
 * per connection. 0, or -1 after printing why. */
int bench_workload_build(bench_workload_t *wl, const bench_opts_t *o,
                         uint64_t window_slots);
void bench_workload_free(bench_workload_t *wl);

static const char bench_digit_pairs[201] =
    "00010203040506070809101112131415161718192021222324252627282930313233343536"
    "37383940414243444546474849505152535455565758596061626364656667686970717273"
    "7475767778798081828384858687888990919293949596979899";

static inline void bench_put2(char *p, uint32_t v) {
  memcpy(p, bench_digit_pairs + v * 2, 2);
}

/* v < 10^8 as 8 digits. */
static inline void bench_put8(char *p, uint32_t v) {
  uint32_t hi = v / 10000, lo = v % 10000;
  bench_put2(p, hi / 100);
  bench_put2(p + 2, hi % 100);
  bench_put2(p + 4, lo / 100);
  bench_put2(p + 6, lo % 100);
}

/* v as exactly `digits` (9 or 16) decimal digits; v must fit. */
static inline void bench_put_id(char *dst, uint64_t v, unsigned digits) {
  if (digits == 9) {
    dst[0] = (char)('0' + v / 100000000);
    bench_put8(dst + 1, (uint32_t)(v % 100000000));
  } else {
    bench_put8(dst, (uint32_t)(v / 100000000));
    bench_put8(dst + 8, (uint32_t)(v % 100000000));
  }
}

/* Copies the request into dst with request number r's ids. */
static inline void bench_workload_render(const bench_workload_t *wl, char *dst,
                                         uint64_t r) {
  memcpy(dst, wl->frame, wl->len);
  uint64_t id = wl->id_base + r * wl->n_ids;
  for (unsigned k = 0; k < wl->n_ids; k++)
    bench_put_id(dst + wl->id_off[k], id + k, wl->id_digits);
}

#endif
