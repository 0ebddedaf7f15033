/* parser_auto.c - parser = auto: each frame goes to the backend measured
 * faster for frames of its size on a CPU like this one. Documents carry
 * their own backend's view table, so handlers never see which one ran.
 *
 * Below the threshold frames go to the native tokenizer, from it on to
 * simdjson. The thresholds come from bench/parsers (see BENCHMARKS.md,
 * "Parsers"), per kernel simdjson picked at run time, every row measured
 * against native; a kernel never measured means native. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "parser.h"

typedef struct auto_backend {
  jrpc__parser_t base;
  jrpc__parser_t *small; /* native */
  jrpc__parser_t *large; /* simdjson, or NULL */
  size_t threshold;
  const char *why;
} auto_backend_t;

/* Frames of at least `bytes` go to simdjson, per kernel. bench/parsers
 * (parse + envelope + a full params read), medians of interleaved trials;
 * since native scans strings by SIMD (strspan.h) it is the faster on every
 * workload measured, the 64 KB string included:
 *   icelake (Intel Xeon, AVX-512, 2026-12-01): native 1.2-1.9x faster on
 *     small requests and batches, 1.1-1.3x on 1 to 64 KB of params, 2.5x
 *     on one 64 KB string (7.5 against 18.5 us).
 *   haswell, westmere (AMD EPYC, 2026-11-30, before the SIMD strings):
 *     native 1.3-1.7x faster on small requests and batches, 1.1-1.4x on
 *     frames of 1 to 64 KB, even on a 64 KB string.
 *   fallback (portable): slower than jsmn already. */
static const struct {
  const char *kernel;
  size_t bytes;
  const char *why;
} measured[] = {
    {"icelake", SIZE_MAX,
     "measured faster than simdjson's icelake kernel at every size and shape "
     "of bench/parsers (AVX-512 Intel, 2026-12-01)"},
    {"haswell", SIZE_MAX,
     "measured faster than simdjson's haswell kernel at every size and shape "
     "of bench/parsers (2026-11-30)"},
    {"westmere", SIZE_MAX,
     "measured faster than simdjson's westmere kernel at every size and shape "
     "of bench/parsers (2026-11-30)"},
    {"fallback", SIZE_MAX,
     "simdjson's portable fallback kernel is slower than jsmn"},
};

static size_t measured_threshold(const char *kernel, const char **why) {
  for (size_t i = 0; kernel && i < sizeof(measured) / sizeof(measured[0]); i++)
    if (strcmp(kernel, measured[i].kernel) == 0) {
      *why = measured[i].why;
      return measured[i].bytes;
    }
  *why = "simdjson's kernel on this CPU was never measured against native";
  return SIZE_MAX;
}

static int auto_parse(jrpc__parser_t *p, const char *buf, size_t len,
                      jrpc__arena_t *a, uint32_t max_batch,
                      jrpc__parsed_t *out) {
  auto_backend_t *b = (auto_backend_t *)p;
  jrpc__parser_t *use = len >= b->threshold && b->large ? b->large : b->small;
  return use->ops->parse(use, buf, len, a, max_batch, out);
}

static void auto_destroy(jrpc__parser_t *p) {
  auto_backend_t *b = (auto_backend_t *)p;
  jrpc__parser_destroy(b->small);
  jrpc__parser_destroy(b->large);
  free(b);
}

/* Views are never reached through this table: every document names the
 * backend that made it. */
static const jrpc__parser_ops_t auto_ops = {
    "auto", auto_destroy, auto_parse, NULL, NULL, NULL,
    NULL,   NULL,         NULL,       NULL, NULL,
};

jrpc__parser_t *jrpc__parser_auto_new(size_t threshold) {
  auto_backend_t *b = calloc(1, sizeof(*b));
  if (!b)
    return NULL;
  b->base.ops = &auto_ops;
  b->small = jrpc__parser_native_new();
#ifdef JRPC_HAVE_SIMDJSON
  b->large = jrpc__parser_simdjson_new();
  if (threshold != JRPC__AUTO_MEASURED) {
    b->threshold = threshold;
    b->why = "parser_auto_threshold set in the configuration";
  } else {
    b->threshold = measured_threshold(jrpc__simdjson_kernel(), &b->why);
  }
#else
  (void)measured_threshold;
  b->threshold = SIZE_MAX;
  b->why = "simdjson is not in this build";
#endif
  if (!b->small) {
    auto_destroy(&b->base);
    return NULL;
  }
  if (!b->large && b->threshold != SIZE_MAX) {
    b->threshold = SIZE_MAX;
    b->why = "simdjson is not available";
  }
  return &b->base;
}

size_t jrpc__parser_auto_threshold(const jrpc__parser_t *p) {
  return p->ops == &auto_ops ? ((const auto_backend_t *)p)->threshold
                             : SIZE_MAX;
}

const char *jrpc__parser_auto_why(const jrpc__parser_t *p) {
  return p->ops == &auto_ops ? ((const auto_backend_t *)p)->why
                             : "not an auto parser";
}

#ifndef JRPC_HAVE_SIMDJSON
/* Builds without simdjson (JRPC_SIMDJSON=OFF) still answer the question. */
const char *jrpc__simdjson_kernel(void) {
  return "none (not built)";
}
jrpc__parser_t *jrpc__parser_simdjson_new(void) {
  return NULL;
}
#endif
