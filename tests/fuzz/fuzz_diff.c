/* fuzz_diff.c - the parser backends against each other.
 *
 * The input is one frame's payload, as is (so JSON files make good seeds:
 * JSONTestSuite can be handed to the fuzzer as an extra seed folder). It
 * goes through the engines below, each on its own exact-size copy followed
 * by JRPC__PAD bytes of padding (zeros for the first engine, hostile bytes
 * for the others), and every engine must give the first one's answer:
 *
 *   jsmn           jrpc__parser_new("jsmn"): validation fused into the
 *                  envelope walk (the default)
 *   jsmn-separate  jrpc__parser_jsmn_new(JRPC__JSMN_SEPARATE): validation
 *                  in a walk of its own
 *   native         jrpc__parser_native_new(): jrpcd's own tokenizer
 *   simdjson       jrpc__parser_new(FUZZ_DIFF_OTHER), FUZZ_DIFF_OTHER being
 *                  "simdjson" unless defined otherwise: in a build without
 *                  it (JRPC_SIMDJSON=OFF) that is NULL, the target says so
 *                  once on stderr and compares the two jsmn modes only
 *   auto           jrpc__parser_auto_new(32): native below 32 bytes,
 *                  simdjson from there on (only when simdjson is in the
 *                  build)
 *
 * JRPC_FUZZ_DIFF=jsmn-separate, =native, =simdjson or =auto (in the
 * environment)
 * restricts the comparison to jsmn and that one engine; naming an engine
 * the build does not have is an error.
 *
 * Compared, engine by engine:
 *  - the parse itself (accept/reject), with max_batch 1000 and 3: status,
 *    batch or not, count, and per request the envelope (object or not,
 *    duplicate members, the type, text and escape flag of "jsonrpc" and
 *    "method", the id's bytes, the type and bytes of "params");
 *  - the framed reply of jrpc__dispatch_frame, byte for byte, with the
 *    fuzz handlers (the "walk" handler writes params back through every
 *    view operation) and the math module.
 * The first engine's reply is also checked against the oracle (see
 * fz_check_answer in fuzz_common.c). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common.h"
#include "fuzz.h"
#include "parser.h"
#include "view.h"

#ifndef FUZZ_DIFF_OTHER
#define FUZZ_DIFF_OTHER "simdjson"
#endif

#define MAX_ENGINES 5

static struct {
  int ready;
  jrpc__registry_t reg;
  jrpc__module_t math;
  size_t n;
  const char *name[MAX_ENGINES];
  jrpc__engine_t eng[MAX_ENGINES];
} G;

static void teardown(void) {
  for (size_t i = 0; i < G.n; i++)
    jrpc__engine_free(&G.eng[i]);
  fz_handlers_free(&G.reg, &G.math);
}

static void add_engine(const char *name, jrpc__parser_t *p) {
  FZ_CHECK(jrpc__engine_init(&G.eng[G.n], &G.reg, NULL, p) == 0,
           "engine_init %s", name);
  G.eng[G.n].log = fz_log_drop;
  G.name[G.n++] = name;
}

static void setup(void) {
  const char *only = getenv("JRPC_FUZZ_DIFF");
  if (only && !*only)
    only = NULL;
  FZ_CHECK(!only || strcmp(only, "jsmn-separate") == 0 ||
               strcmp(only, "native") == 0 ||
               strcmp(only, FUZZ_DIFF_OTHER) == 0 || strcmp(only, "auto") == 0,
           "JRPC_FUZZ_DIFF=%s: not jsmn-separate, native, %s or auto", only,
           FUZZ_DIFF_OTHER);
  fz_handlers_init(&G.reg, &G.math);
  add_engine("jsmn", jrpc__parser_new("jsmn"));
  if (!only || strcmp(only, "jsmn-separate") == 0)
    add_engine("jsmn-separate", jrpc__parser_jsmn_new(JRPC__JSMN_SEPARATE));
  if (!only || strcmp(only, "native") == 0)
    add_engine("native", jrpc__parser_native_new());
  jrpc__parser_t *other = jrpc__parser_new(FUZZ_DIFF_OTHER);
  if (!other) {
    FZ_CHECK(!only || strcmp(only, "jsmn-separate") == 0 ||
                 strcmp(only, "native") == 0,
             "JRPC_FUZZ_DIFF=%s: no %s backend in this build", only,
             FUZZ_DIFF_OTHER);
    fprintf(stderr,
            "fuzz_diff: no \"%s\" backend in this build: comparing jsmn "
            "with jsmn-separate and native only\n",
            FUZZ_DIFF_OTHER);
  } else {
    if (!only || strcmp(only, FUZZ_DIFF_OTHER) == 0)
      add_engine(FUZZ_DIFF_OTHER, other);
    else
      jrpc__parser_destroy(other);
    if (!only || strcmp(only, "auto") == 0)
      add_engine("auto", jrpc__parser_auto_new(32));
  }
  G.ready = 1;
  atexit(teardown);
}

/* ------------------------------------------------------------------ */
/* The parse, summarised                                               */
/* ------------------------------------------------------------------ */

static void str_eq(const char *what, size_t k, const char *a, size_t an,
                   const char *b, size_t bn, const char *eng) {
  FZ_CHECK(an == bn && (an == 0 || memcmp(a, b, an) == 0),
           "request %zu: %s differs: jsmn %s, %s %s", k, what, fz_show(a, an),
           eng, fz_show(b, bn));
}

static void same_envelope(size_t k, const jrpc__envelope_t *a,
                          const jrpc__envelope_t *b, const char *eng) {
  FZ_CHECK(a->is_object == b->is_object && a->duplicate == b->duplicate &&
               a->jsonrpc_t == b->jsonrpc_t && a->method_t == b->method_t &&
               a->params_t == b->params_t && a->id_t == b->id_t,
           "request %zu: envelope differs: jsmn object %d dup %d types "
           "%d/%d/%d/%d, %s object %d dup %d types %d/%d/%d/%d",
           k, a->is_object, a->duplicate, a->jsonrpc_t, a->method_t,
           a->params_t, a->id_t, eng, b->is_object, b->duplicate, b->jsonrpc_t,
           b->method_t, b->params_t, b->id_t);
  if (a->jsonrpc_t == JRPC_T_STRING) {
    FZ_CHECK(a->jsonrpc_esc == b->jsonrpc_esc, "request %zu: jsonrpc_esc", k);
    str_eq("\"jsonrpc\"", k, a->jsonrpc, a->jsonrpc_n, b->jsonrpc, b->jsonrpc_n,
           eng);
  }
  if (a->method_t == JRPC_T_STRING) {
    FZ_CHECK(a->method_esc == b->method_esc, "request %zu: method_esc", k);
    str_eq("\"method\"", k, a->method, a->method_n, b->method, b->method_n,
           eng);
  }
  if (a->id_t != JRPC_T_NONE)
    str_eq("\"id\"", k, a->id, a->id_n, b->id, b->id_n, eng);
  FZ_CHECK(jrpc__view_type(a->params) == a->params_t &&
               jrpc__view_type(b->params) == b->params_t,
           "request %zu: params view type differs from params_t", k);
  if (a->params_t != JRPC_T_NONE) {
    const char *as, *bs;
    size_t an, bn;
    jrpc__view_raw(a->params, &as, &an);
    jrpc__view_raw(b->params, &bs, &bn);
    str_eq("\"params\"", k, as, an, bs, bn, eng);
  }
}

static void compare_parse(char **bufs, size_t n, uint32_t max_batch) {
  jrpc__parsed_t ps[MAX_ENGINES];
  for (size_t i = 0; i < G.n; i++) {
    jrpc__engine_t *e = &G.eng[i];
    int rc = e->parser->ops->parse(e->parser, bufs[i], n, &e->arena, max_batch,
                                   &ps[i]);
    FZ_CHECK(rc == 0, "%s: parse returned %d", G.name[i], rc);
  }
  const jrpc__parsed_t *a = &ps[0];
  for (size_t i = 1; i < G.n; i++) {
    const jrpc__parsed_t *b = &ps[i];
    FZ_CHECK(a->status == b->status,
             "accept/reject differs (max_batch %u): jsmn %d (%s), %s %d (%s)",
             max_batch, a->status, a->why ? a->why : "", G.name[i], b->status,
             b->why ? b->why : "");
    if (a->status == JRPC__PARSE_INVALID)
      continue;
    FZ_CHECK(a->is_batch == b->is_batch && a->count == b->count,
             "shape differs: jsmn batch %d count %u, %s batch %d count %u",
             a->is_batch, a->count, G.name[i], b->is_batch, b->count);
    if (a->status == JRPC__PARSE_OK)
      for (uint32_t k = 0; k < a->count; k++)
        same_envelope(k, &a->env[k], &b->env[k], G.name[i]);
  }
  for (size_t i = 0; i < G.n; i++)
    jrpc__arena_reset(&G.eng[i].arena);
}

/* ------------------------------------------------------------------ */
/* The reply                                                           */
/* ------------------------------------------------------------------ */

static char *reply_of(size_t i, const char *buf, size_t n, size_t *rn) {
  jrpc__engine_t *e = &G.eng[i];
  jrpc__outbuf_t o;
  jrpc__sink_t sink;
  jrpc__out_init(&o, &e->pool);
  jrpc__sink_init(&sink, &o, JRPC_FRAMING_LENGTH);
  int rc = jrpc__dispatch_frame(e, &sink, buf, n, NULL);
  jrpc__arena_reset(&e->arena);
  FZ_CHECK(rc == 0, "%s: dispatch returned %d", G.name[i], rc);
  char *r = fz_out_take(&o, rn);
  jrpc__sink_detach(&sink);
  jrpc__out_free(&o);
  return r;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  static const char *const pads[MAX_ENGINES] = {
      "", "\"\\]}\",:[{1e", "}]\"\\u00\xff\xc3 0-", "\\\"\xe2\x80 ]]]}",
      "\t\" ,ntf-9\\x"};
  if (!G.ready)
    setup();
  char *bufs[MAX_ENGINES];
  for (size_t i = 0; i < G.n; i++) {
    bufs[i] = malloc(size + JRPC__PAD);
    FZ_CHECK(bufs[i], "out of memory");
    if (size)
      memcpy(bufs[i], data, size);
    size_t pn = strlen(pads[i]);
    for (size_t k = 0; k < JRPC__PAD; k++)
      bufs[i][size + k] = pn ? pads[i][k % pn] : 0;
  }

  compare_parse(bufs, size, 1000);
  compare_parse(bufs, size, 3);

  size_t rn0;
  char *r0 = reply_of(0, bufs[0], size, &rn0);
  const char **fp;
  size_t *fn;
  size_t nf = fz_unframe(JRPC_FRAMING_LENGTH, r0, rn0, &fp, &fn);
  FZ_CHECK(nf <= 1, "%zu reply frames for one frame", nf);
  fz_check_answer(bufs[0], size, nf ? fp[0] : NULL, nf ? fn[0] : 0);
  free(fp);
  free(fn);
  for (size_t i = 1; i < G.n; i++) {
    size_t rn;
    char *r = reply_of(i, bufs[i], size, &rn);
    if (rn != rn0 || memcmp(r, r0, rn) != 0) {
      fprintf(stderr, "jsmn replied (%zu bytes): %s\n", rn0, fz_show(r0, rn0));
      fz_fail("%s replied differently (%zu bytes): %s", G.name[i], rn,
              fz_show(r, rn));
    }
    free(r);
  }
  free(r0);
  for (size_t i = 0; i < G.n; i++)
    free(bufs[i]);
  return 0;
}
