/* fuzz_access.c - a method that a connection's view hides or denies never
 * runs its handler, whatever a client sends (issue 21, point 1).
 *
 * The registry holds methods with descriptions, so that they have params
 * plans (validate_params), and methods without; a view of it hides some
 * and denies others through jrpc__registry_view_withhold, exactly as the
 * daemon's admit.c does. Every handler counts its calls. The input goes
 * through the real stream (lib/stream.c, lib/http.c) and dispatch on one
 * parser backend with the engine looking methods up in the view.
 *
 * Input: one flags byte, then the bytes a client sends.
 *   bits 0-1  backend: native, jsmn, simdjson (jsmn in a build without
 *             it), auto with a 200-byte threshold (both sides of it)
 *   bits 2-3  framing: newline, length, http, content-length
 *   bits 4-5  reads: as much as fits, a byte at a time, 0..16 or 1..5000
 *             bytes (drawn from a generator seeded with the input)
 *
 * Checked (aborts otherwise):
 *  - no handler of a hidden or denied method ran, on any path: fast or
 *    full params check, notification, batch element, any framing;
 *  - no reply tells a denied method's params: g.deny_secret's and
 *    g.deny_named's names start with "secret_", and a -32602 for either
 *    would carry "param":"secret_...". No handler here writes input back
 *    and the served method with a plan takes any extra names, so nothing
 *    else can put that text in the output (a JSON string never holds an
 *    unescaped quote). */
#include <stdlib.h>
#include <string.h>

#include "dispatch.h"
#include "fuzz.h"
#include "http.h"
#include "parser.h"
#include "stream.h"
#include "validate.h"

/* The methods: a handler's udata is its row in `ran`. */
enum {
  G_OK,          /* served, described: the control */
  G_PLAIN,       /* served, not described */
  G_DENY,        /* denied, described like the control */
  G_DENY_SECRET, /* denied, a required param named secret_n */
  G_DENY_NAMED,  /* denied, by-name with a long and a quoted name */
  G_DENY_PLAIN,  /* denied, not described */
  G_DENY_ANY,    /* denied, "x-jrpcd-params": "any" (no plan) */
  G_DENY_DEFER,  /* denied, described, a handler that would defer */
  G_HIDE,        /* hidden, described like the control */
  G_HIDE_PLAIN,  /* hidden, not described */
  G_COUNT
};

/* n, a required integer, and tag, a string or null: the shapes of the
 * seeds pass these checks, so a denied method's handler is what would
 * run if a plan decided before the view. */
#define N_TAG                                                                  \
  "{\"name\":\"n\",\"required\":true,\"schema\":{\"type\":\"integer\"}},"      \
  "{\"name\":\"tag\",\"schema\":{\"type\":[\"string\",\"null\"]}}"
#define SECRET "{\"name\":\"secret_"
static const struct {
  const char *name, *desc;
  int deny, hide;
} methods[G_COUNT] = {
    [G_OK] = {"g.ok", "{\"x-jrpcd-extra-params\":true,\"params\":[" N_TAG "]}",
              0, 0},
    [G_PLAIN] = {"g.plain", NULL, 0, 0},
    [G_DENY] = {"g.deny", "{\"params\":[" N_TAG "]}", 1, 0},
    [G_DENY_SECRET] = {"g.deny_secret",
                       "{\"params\":[" SECRET "n\",\"required\":true,"
                       "\"schema\":{\"type\":\"integer\"}}]}",
                       1, 0},
    [G_DENY_NAMED] = {"g.deny_named",
                      "{\"paramStructure\":\"by-name\",\"params\":[" SECRET
                      "alpha_beta_gamma\",\"required\":true,\"schema\":{"
                      "\"type\":\"string\"}}," SECRET "q\\\"x\"}]}",
                      1, 0},
    [G_DENY_PLAIN] = {"g.deny_plain", NULL, 1, 0},
    [G_DENY_ANY] = {"g.deny_any", "{\"x-jrpcd-params\":\"any\",\"params\":[]}",
                    1, 0},
    [G_DENY_DEFER] = {"g.deny_defer", "{\"params\":[" N_TAG "]}", 1, 0},
    [G_HIDE] = {"g.hide", "{\"params\":[" N_TAG "]}", 0, 1},
    [G_HIDE_PLAIN] = {"g.hide_plain", NULL, 0, 1},
};

static unsigned ran[G_COUNT];

static int h_count(jrpc_call_t *c, jrpc_val_t params, void *udata) {
  (void)params;
  unsigned k = (unsigned)(uintptr_t)udata;
  ran[k]++;
  if (k == G_DENY_DEFER)
    return jrpc_defer(c) ? JRPC_ASYNC : jrpc_w_null(c);
  return jrpc_w_u64(c, ran[k]);
}

/* What the daemon's stand-in answers: -32006 with the name as data. */
static int h_denied(jrpc_call_t *c, jrpc_val_t params, void *udata) {
  (void)params;
  const char *name = udata;
  jrpc_error_begin(c, JRPC_ACCESS_DENIED, NULL);
  jrpc_w_str(c, name, strlen(name));
  return JRPC_EFAIL;
}

static jrpc__registry_t reg, view;
static jrpc__engine_t engines[4];
static int engines_made[4];
static const int owner = 0; /* the methods' module, for their plans */

static void registry_make(void) {
  char err[256];
  FZ_CHECK(jrpc__registry_init(&reg) == 0, "registry_init");
  jrpc__regctx_t ctx;
  jrpc__regctx_init(&ctx, &reg, &owner, NULL);
  for (unsigned k = 0; k < G_COUNT; k++) {
    FZ_CHECK(jrpc__registry_add(&reg, methods[k].name, h_count,
                                (void *)(uintptr_t)k, &owner, NULL) == 0,
             "registry_add %s", methods[k].name);
    if (methods[k].desc)
      FZ_CHECK(jrpc__describe(&ctx, methods[k].name, methods[k].desc) == 0,
               "describe %s: %s", methods[k].name, ctx.err);
  }
  FZ_CHECK(jrpc__validate_owner(&reg, &owner, err, sizeof(err), NULL, NULL) ==
               0,
           "validate_owner: %s", err);
  FZ_CHECK(jrpc__registry_find(&reg, "g.deny", 6)->vplan,
           "g.deny has no plan: the slow path would go unfuzzed");
  FZ_CHECK(jrpc__registry_view_init(&view, &reg) == 0, "view_init");
  for (unsigned k = 0; k < G_COUNT; k++) {
    const jrpc__method_t *m =
        jrpc__registry_find(&reg, methods[k].name, strlen(methods[k].name));
    if (methods[k].hide)
      jrpc__registry_view_withhold(&view, m->slot, NULL, NULL);
    else if (methods[k].deny)
      jrpc__registry_view_withhold(&view, m->slot, h_denied, m->name);
  }
}

static void free_all(void) {
  for (int i = 0; i < 4; i++)
    if (engines_made[i])
      jrpc__engine_free(&engines[i]);
  jrpc__registry_view_free(&view);
  jrpc__registry_free(&reg);
}

static jrpc__engine_t *engine(int which) {
  if (!reg.slots) {
    registry_make();
    atexit(free_all);
  }
  jrpc__engine_t *e = &engines[which];
  if (engines_made[which])
    return e;
  jrpc__parser_t *p;
  switch (which) {
  case 0:
    p = jrpc__parser_new("native");
    break;
  case 2:
    p = jrpc__parser_new("simdjson");
    if (!p)
      p = jrpc__parser_new("jsmn");
    break;
  case 3:
    p = jrpc__parser_auto_new(200);
    break;
  default:
    p = jrpc__parser_new("jsmn");
    break;
  }
  FZ_CHECK(p, "no parser %d", which);
  FZ_CHECK(jrpc__engine_init(e, &reg, NULL, p) == 0, "engine_init");
  e->reg = &view; /* a connection's view, as the daemon's feed sets it */
  e->log = fz_log_drop;
  engines_made[which] = 1;
  return e;
}

static int healthy(void *arg) {
  (void)arg;
  return 1;
}
static int metrics(void *arg, jrpc__outbuf_t *o) {
  (void)arg;
  return jrpc__out_put(o, "m 1\n", 4);
}
static const jrpc__http_host_t host = {healthy, metrics, NULL, NULL};

/* The output's bytes, checked as they come: a denied method's schema
 * never shows. */
static void drain(jrpc__outbuf_t *o) {
  size_t n;
  char *s = fz_out_take(o, &n);
  FZ_CHECK(!memmem(s, n, "\"param\":\"secret_", 16),
           "a denied method's params are told: %s", fz_show(s, n));
  free(s);
}

static void run(jrpc__engine_t *e, int framing, int chunking, const char *in,
                size_t n, fz_rng_t *rng) {
  int http = framing >= JRPC_FRAMING_HTTP;
  jrpc__stream_t s;
  jrpc__http_t h;
  jrpc__stream_init(&s, e, (jrpc__framing_t)framing);
  if (http)
    jrpc__http_init(&h, &s, 8192, 0, &host, NULL);
  size_t off = 0;
  for (;;) {
    size_t k = fz_read_into(&s, rng, chunking, in, n, &off);
    int eof = off == n;
    int rc = http ? jrpc__http_feed(&s, k, eof) : jrpc__stream_feed(&s, k, eof);
    while (rc == 0 && s.more)
      rc = http ? jrpc__http_feed(&s, 0, eof) : jrpc__stream_feed(&s, 0, eof);
    drain(&s.out);
    if (rc != 0 || eof)
      break;
  }
  if (http)
    jrpc__http_free(&h);
  jrpc__stream_free(&s);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  if (size < 1)
    return 0;
  static const int framings[4] = {JRPC_FRAMING_NEWLINE, JRPC_FRAMING_LENGTH,
                                  JRPC_FRAMING_HTTP,
                                  JRPC_FRAMING_CONTENT_LENGTH};
  jrpc__engine_t *e = engine(data[0] & 3);
  int framing = framings[(data[0] >> 2) & 3];
  int chunking = (data[0] >> 4) & 3;
  fz_rng_t rng;
  fz_rng_seed(&rng, data, size, 3);
  memset(ran, 0, sizeof(ran));
  run(e, framing, chunking, (const char *)data + 1, size - 1, &rng);
  jrpc__arena_reset(&e->arena);
  for (unsigned k = 0; k < G_COUNT; k++)
    FZ_CHECK(!ran[k] || (!methods[k].deny && !methods[k].hide),
             "%s is %s, yet its handler ran %u time%s", methods[k].name,
             methods[k].deny ? "denied" : "hidden", ran[k],
             ran[k] == 1 ? "" : "s");
  return 0;
}
