/* tu_parser.c - the parser backend the backend-neutral tests run on.
 *
 * ctest runs those tests once per backend ($JRPC_TEST_PARSER). "auto"
 * would otherwise take its measured threshold, which sends every frame to
 * one backend on a given CPU (simdjson on AVX-512, native elsewhere), and
 * the _auto runs would only repeat another run. Here it gets a threshold
 * of TU_AUTO_THRESHOLD bytes, so that both backends serve within one run,
 * and counters of the frames on each side of it and of the backend their
 * documents name, so that tu_test_auto_switched can check that they did. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <cmocka.h>

#include <stdlib.h>
#include <string.h>

#include "testutil.h"

const char *tu_parser_name(void) {
  const char *name = getenv("JRPC_TEST_PARSER");
  return name && *name ? name : "jsmn";
}

/* Frames the auto parser took, by size: below the threshold (native's)
 * and from it on (simdjson's); and those whose documents named a backend
 * other than the one their size calls for. */
static unsigned long small_frames, large_frames, misrouted;

typedef struct counted {
  jrpc__parser_t base;
  jrpc__parser_t *inner;
} counted_t;

/* The backend that made a frame's documents, where a request's params
 * show it (a frame that is not valid JSON, or has no params, does not
 * tell): native below the threshold; simdjson from it on, or jsmn, to
 * which simdjson hands numbers its DOM refuses. */
static void count_frame(size_t len, const jrpc__parsed_t *out) {
  int large = len >= TU_AUTO_THRESHOLD;
  if (large)
    large_frames++;
  else
    small_frames++;
  if (out->status != JRPC__PARSE_OK || !out->env)
    return;
  for (uint32_t i = 0; i < out->count; i++) {
    const jrpc__doc_t *doc = out->env[i].params.doc_;
    if (out->env[i].params_t == JRPC_T_NONE || !doc)
      continue;
    int native = strcmp(doc->ops->name, "native") == 0;
    if (native == large)
      misrouted++;
    return;
  }
}

static int counted_parse(jrpc__parser_t *p, const char *buf, size_t len,
                         jrpc__arena_t *a, uint32_t max_batch,
                         jrpc__parsed_t *out) {
  counted_t *c = (counted_t *)p;
  int rc = c->inner->ops->parse(c->inner, buf, len, a, max_batch, out);
  if (rc == 0)
    count_frame(len, out);
  return rc;
}

static void counted_destroy(jrpc__parser_t *p) {
  counted_t *c = (counted_t *)p;
  jrpc__parser_destroy(c->inner);
  free(c);
}

/* As the auto parser's own table: views never come through it. */
static const jrpc__parser_ops_t counted_ops = {
    "auto",        counted_destroy,
    counted_parse, NULL,
    NULL,          NULL,
    NULL,          NULL,
    NULL,          NULL,
    NULL,
};

jrpc__parser_t *tu_parser_new(void) {
  const char *name = tu_parser_name();
  if (strcmp(name, "auto") != 0)
    return jrpc__parser_new(name);
  counted_t *c = calloc(1, sizeof(*c));
  if (!c)
    return NULL;
  c->base.ops = &counted_ops;
  c->inner = jrpc__parser_auto_new(TU_AUTO_THRESHOLD);
  if (!c->inner || jrpc__parser_auto_threshold(c->inner) != TU_AUTO_THRESHOLD) {
    counted_destroy(&c->base);
    return NULL;
  }
  return &c->base;
}

void tu_test_auto_switched(void **state) {
  (void)state;
  if (strcmp(tu_parser_name(), "auto") != 0)
    skip();
  print_message("auto (threshold %d bytes): %lu frames below it, %lu from it "
                "on, %lu parsed by the wrong backend\n",
                TU_AUTO_THRESHOLD, small_frames, large_frames, misrouted);
  assert_true(small_frames > 0);
  assert_true(large_frames > 0);
  assert_int_equal(misrouted, 0);
}
