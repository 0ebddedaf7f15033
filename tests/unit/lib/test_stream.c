/* test_stream.c - one connection's input handling: buffer growth bounded
 * by max_frame_bytes, release when idle, EOF, fatal framing errors, and
 * replies that do not depend on how the input was split. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "dispatch.h"
#include "engine_fx.h"
#include "framing.h"
#include "http.h"
#include "stream.h"

/* Checks jrpc_at() against first/next iteration, in increasing, decreasing
 * and scattered order (at() caches its last answer: the cache must never
 * give a wrong element), for the array or object in params[0]. */
static int at_check(jrpc_call_t *c, jrpc_val_t params, void *udata) {
  jrpc_val_t box = jrpc_at(c, params, 0);
  uint32_t n = jrpc_len(c, box);
  uint32_t *idx = jrpc_alloc(c, sizeof(uint32_t) * (n + 1));
  uint32_t k = 0;
  for (jrpc_val_t v = jrpc_first(c, box); !jrpc_is_none(v); v = jrpc_next(c, v))
    idx[k++] = v.idx_;
  if (k != n)
    return jrpc_error(c, JRPC_INTERNAL_ERROR, "len and iteration disagree");
  uint32_t order[3 * 64];
  size_t m = 0;
  for (uint32_t i = 0; i < n && m < 64; i++)
    order[m++] = i;
  for (uint32_t i = n; i-- > 0 && m < 128;)
    order[m++] = i;
  for (uint32_t i = 0; i < 64 && n; i++)
    order[m++] = (i * 7919u) % n;
  for (size_t j = 0; j < m; j++) {
    jrpc_val_t v = jrpc_at(c, box, order[j]);
    if (jrpc_is_none(v) || v.idx_ != idx[order[j]])
      return jrpc_error(c, JRPC_INTERNAL_ERROR, "at() gave a wrong element");
  }
  if (!jrpc_is_none(jrpc_at(c, box, n)))
    return jrpc_error(c, JRPC_INTERNAL_ERROR, "at(len) is not none");
  return jrpc_w_u64(c, n);
}

/* jrpc_error with code 0: "failed, no code given" is -32000 on the wire. */
static int fail_code0(jrpc_call_t *c, jrpc_val_t params, void *udata) {
  return jrpc_error(c, 0, "no code");
}

/* Absurd scratch sizes are refused, not wrapped around. */
static int huge_alloc(jrpc_call_t *c, jrpc_val_t params, void *udata) {
  if (jrpc_alloc(c, SIZE_MAX) || jrpc_alloc(c, ((size_t)1 << 63) + 1))
    return jrpc_error(c, JRPC_INTERNAL_ERROR, "huge allocation succeeded");
  char *a = jrpc_alloc(c, 16), *b = jrpc_alloc(c, 16);
  if (!a || !b || a == b)
    return jrpc_error(c, JRPC_INTERNAL_ERROR, "small allocations broken");
  return jrpc_w_bool(c, 1);
}

static int setup(void **state) {
  static const engine_fx_method_t methods[] = {
      {"echo", engine_fx_echo},
      {"at.check", at_check},
      {"fail.code0", fail_code0},
      {"huge.alloc", huge_alloc},
  };
  *state = engine_fx_new(methods, sizeof(methods) / sizeof(methods[0]), 1000000,
                         "jsmn");
  return 0;
}

typedef struct run {
  char *out;
  size_t out_n;
  int rc;             /* last feed status */
  size_t max_cap;     /* largest input buffer seen */
  size_t max_pending; /* largest partial frame buffered */
} run_t;

/* Feeds `in` in reads of `chunk` bytes, then EOF; collects the output. */
static run_t feed_all(jrpc__engine_t *e, int framing, const char *in, size_t n,
                      size_t chunk) {
  run_t r = {malloc(1 << 22), 0, 0, 0, 0};
  jrpc__stream_t s;
  jrpc__stream_init(&s, e, framing);
  size_t off = 0;
  while (off < n && r.rc == 0) {
    size_t k = engine_fx_put(&s, in + off, n - off, chunk);
    off += k;
    r.rc = jrpc__stream_feed(&s, k, 0);
    if (s.cap > r.max_cap)
      r.max_cap = s.cap;
    if (jrpc__stream_partial(&s) > r.max_pending)
      r.max_pending = jrpc__stream_partial(&s);
    r.out_n += jrpc__out_copy(&s.out, r.out + r.out_n, (1 << 22) - r.out_n);
    jrpc__out_consume(&s.out, (size_t)jrpc__out_pending(&s.out));
  }
  if (r.rc == 0)
    r.rc = jrpc__stream_feed(&s, 0, 1);
  r.out_n += jrpc__out_copy(&s.out, r.out + r.out_n, (1 << 22) - r.out_n);
  /* Nothing partial left, and no input buffer held once idle. */
  if (r.rc == 0) {
    assert_int_equal(jrpc__stream_partial(&s), 0);
    assert_null(s.buf);
  }
  jrpc__stream_free(&s);
  return r;
}

/* The output is exactly one -32700 reply with id null. */
static void assert_parse_error(const run_t *r) {
  const char want[] = "{\"jsonrpc\":\"2.0\",\"error\":{\"code\":-32700,"
                      "\"message\":\"Parse error\"},\"id\":null}\n";
  assert_int_equal(r->out_n, sizeof(want) - 1);
  assert_memory_equal(r->out, want, sizeof(want) - 1);
}

static void test_replies_independent_of_split(void **state) {
  engine_fx_t *f = *state;
  const char in[] =
      "{\"jsonrpc\":\"2.0\",\"method\":\"echo\",\"params\":[1,\"a "
      "b\"],\"id\":1}\n"
      "\r\n   \n"
      "{\"jsonrpc\":\"2.0\",\"method\":\"echo\",\"params\":{\"k\":[]},\"id\":2}"
      "\r\n"
      "not json\n"
      "{\"jsonrpc\":\"2.0\",\"method\":\"echo\",\"params\":[3],\"id\":3}";
  run_t whole =
      feed_all(&f->e, JRPC_FRAMING_NEWLINE, in, sizeof(in) - 1, 1 << 20);
  const char want[] =
      "{\"jsonrpc\":\"2.0\",\"result\":[1,\"a b\"],\"id\":1}\n"
      "{\"jsonrpc\":\"2.0\",\"result\":{\"k\":[]},\"id\":2}\n"
      "{\"jsonrpc\":\"2.0\",\"error\":{\"code\":-32700,\"message\":\"Parse "
      "error\"},\"id\":null}\n"
      "{\"jsonrpc\":\"2.0\",\"result\":[3],\"id\":3}\n";
  assert_int_equal(whole.out_n, sizeof(want) - 1);
  assert_memory_equal(whole.out, want, sizeof(want) - 1);
  for (size_t chunk = 1; chunk < 40; chunk++) {
    run_t r = feed_all(&f->e, JRPC_FRAMING_NEWLINE, in, sizeof(in) - 1, chunk);
    assert_int_equal(r.out_n, whole.out_n);
    assert_memory_equal(r.out, whole.out, whole.out_n);
    free(r.out);
  }
  free(whole.out);
}

/* A frame of `n` payload bytes: an echo request padded with spaces. */
static char *big_request(size_t n, int framing, size_t *total) {
  char *b = malloc(n + 8);
  size_t h = framing == JRPC_FRAMING_LENGTH ? 4 : 0;
  const char head[] = "{\"jsonrpc\":\"2.0\",\"method\":\"echo\",\"params\":[\"";
  const char tail[] = "\"],\"id\":9}";
  memcpy(b + h, head, sizeof(head) - 1);
  memset(b + h + sizeof(head) - 1, 'x',
         n - (sizeof(head) - 1) - (sizeof(tail) - 1));
  memcpy(b + h + n - (sizeof(tail) - 1), tail, sizeof(tail) - 1);
  if (framing == JRPC_FRAMING_LENGTH) {
    b[0] = (char)(n >> 24);
    b[1] = (char)(n >> 16);
    b[2] = (char)(n >> 8);
    b[3] = (char)n;
  } else {
    b[n] = '\n';
  }
  *total = n + (h ? 4 : 1);
  return b;
}

static void test_large_frame_grows_buffer_within_limit(void **state) {
  engine_fx_t *f = *state;
  for (int framing = 0; framing < 2; framing++) {
    size_t total;
    char *in = big_request(1000000, framing, &total); /* exactly the max */
    run_t r = feed_all(&f->e, framing, in, total, 65536);
    assert_int_equal(r.rc, 0);
    /* The reply echoes the 1 MB string back. */
    assert_true(r.out_n > 1000000 - 100);
    assert_non_null(memmem(r.out, r.out_n, "\"id\":9}", 7));
    /* Growth stops at the frame: the buffer class just above 1 MB. */
    assert_true(r.max_cap >= 1000000);
    assert_true(r.max_cap < 2 * 1024 * 1024);
    free(r.out);
    free(in);
  }
}

static void test_oversized_newline_frame_skipped_not_buffered(void **state) {
  engine_fx_t *f = *state;
  size_t total;
  char *in = big_request(3000000, JRPC_FRAMING_NEWLINE, &total);
  const char next[] = "{\"jsonrpc\":\"2.0\",\"method\":\"echo\",\"id\":10}\n";
  char *both = malloc(total + sizeof(next));
  memcpy(both, in, total);
  memcpy(both + total, next, sizeof(next) - 1);
  run_t r = feed_all(&f->e, JRPC_FRAMING_NEWLINE, both,
                     total + sizeof(next) - 1, 65536);
  assert_int_equal(r.rc, 0);
  assert_true(r.max_pending <= 1000000 + 2);
  assert_true(r.max_cap < 2 * 1024 * 1024);
  const char want[] =
      "{\"jsonrpc\":\"2.0\",\"error\":{\"code\":-32001,\"message\":\"Frame too "
      "large\",\"data\":{\"limit\":1000000,\"got\":3000000}},\"id\":null}\n"
      "{\"jsonrpc\":\"2.0\",\"result\":null,\"id\":10}\n";
  assert_int_equal(r.out_n, sizeof(want) - 1);
  assert_memory_equal(r.out, want, sizeof(want) - 1);
  free(r.out);
  free(both);
  free(in);
}

static void test_oversized_length_frame_closes(void **state) {
  engine_fx_t *f = *state;
  /* Header says 2 GB: refused before a byte of payload is buffered. */
  const char in[] = "\x80\x00\x00\x00{\"jsonrpc\":\"2.0\"";
  run_t r = feed_all(&f->e, JRPC_FRAMING_LENGTH, in, sizeof(in) - 1, 3);
  assert_int_equal(r.rc, JRPC__ECLOSE);
  assert_true(r.max_cap < 100000);
  const char body[] = "{\"jsonrpc\":\"2.0\",\"error\":{\"code\":-32001,"
                      "\"message\":\"Frame too large\",\"data\":{\"limit\":"
                      "1000000,\"got\":2147483648}},\"id\":null}";
  assert_int_equal(r.out_n, 4 + sizeof(body) - 1);
  assert_int_equal((unsigned char)r.out[3], sizeof(body) - 1);
  assert_memory_equal(r.out + 4, body, sizeof(body) - 1);
  free(r.out);
}

static void test_length_framing_many_frames(void **state) {
  engine_fx_t *f = *state;
  /* 1000 frames of varying size, fed in odd-sized reads. */
  size_t cap = 1 << 21, n = 0;
  char *in = malloc(cap);
  for (int i = 0; i < 1000; i++) {
    char body[256];
    int bn = snprintf(body, sizeof(body),
                      "{\"jsonrpc\":\"2.0\",\"method\":\"echo\",\"params\":"
                      "[\"%.*s\"],\"id\":%d}",
                      i % 150,
                      "..........................................."
                      "..........................................."
                      "..........................................."
                      "...........",
                      i);
    in[n++] = 0;
    in[n++] = 0;
    in[n++] = (char)(bn >> 8);
    in[n++] = (char)bn;
    memcpy(in + n, body, (size_t)bn);
    n += (size_t)bn;
  }
  run_t r = feed_all(&f->e, JRPC_FRAMING_LENGTH, in, n, 997);
  assert_int_equal(r.rc, 0);
  /* Walk the reply frames: 1000 of them, ids in order. */
  size_t p = 0;
  for (int i = 0; i < 1000; i++) {
    assert_true(p + 4 <= r.out_n);
    size_t len = ((size_t)(unsigned char)r.out[p + 2] << 8) |
                 (unsigned char)r.out[p + 3];
    char idtail[32];
    int tn = snprintf(idtail, sizeof(idtail), ",\"id\":%d}", i);
    assert_memory_equal(r.out + p + 4 + len - (size_t)tn, idtail, (size_t)tn);
    p += 4 + len;
  }
  assert_int_equal(p, r.out_n);
  free(r.out);
  free(in);
}

static void test_at_matches_iteration(void **state) {
  engine_fx_t *f = *state;
  const char *reqs[] = {
      "{\"jsonrpc\":\"2.0\",\"method\":\"at.check\",\"params\":[[1,[2,3],{"
      "\"a\":[4]},\"x\",null,5,6,7,[],{},8]],\"id\":1}\n",
      "{\"jsonrpc\":\"2.0\",\"method\":\"at.check\",\"params\":[{\"a\":1,"
      "\"b\":[2,{\"c\":3}],\"d\":{},\"e\":\"s\",\"f\":null}],\"id\":2}\n",
      "{\"jsonrpc\":\"2.0\",\"method\":\"at.check\",\"params\":[[]],"
      "\"id\":3}\n",
  };
  const char *want[] = {"{\"jsonrpc\":\"2.0\",\"result\":11,\"id\":1}\n",
                        "{\"jsonrpc\":\"2.0\",\"result\":5,\"id\":2}\n",
                        "{\"jsonrpc\":\"2.0\",\"result\":0,\"id\":3}\n"};
  for (int i = 0; i < 3; i++) {
    run_t r = feed_all(&f->e, JRPC_FRAMING_NEWLINE, reqs[i], strlen(reqs[i]),
                       1 << 20);
    assert_int_equal(r.out_n, strlen(want[i]));
    assert_memory_equal(r.out, want[i], r.out_n);
    free(r.out);
  }
}

/* jsmn takes time quadratic in nesting depth; the depth pre-check must see
 * the nesting jsmn sees, also when a quote stands inside a primitive (where
 * jsmn does not start a string). Each frame here nests 250,000 deep: without
 * the check it costs jsmn minutes, with it microseconds (ctest's timeout
 * catches a regression). */
static void test_deep_nesting_behind_a_quote(void **state) {
  engine_fx_t *f = *state;
  const size_t d = 250000;
  const char *heads[] = {"[1\" ", "[1\",", "[\"a\"1\""};
  const char *tails[] = {"]", ",1\"]", "]"};
  for (int k = 0; k < 3; k++) {
    size_t hn = strlen(heads[k]), tn = strlen(tails[k]);
    size_t n = hn + 2 * d + tn + 1;
    char *in = malloc(n);
    memcpy(in, heads[k], hn);
    memset(in + hn, '[', d);
    memset(in + hn + d, ']', d);
    memcpy(in + hn + 2 * d, tails[k], tn);
    in[n - 1] = '\n';
    run_t r = feed_all(&f->e, JRPC_FRAMING_NEWLINE, in, n, 65536);
    assert_parse_error(&r);
    free(r.out);
    free(in);
  }
}

/* Frames over 4 KiB always get the structural pre-scan: it must refuse a
 * ':' chain (strict jsmn accepts ':' after any token and chains what
 * follows, which every closing bracket then walks) and must accept valid
 * JSON whose strings hold colons, quotes, brackets and backslashes. */
static void test_large_frame_prescan(void **state) {
  engine_fx_t *f = *state;
  size_t cap = 700000, n = 0;
  char *in = malloc(cap);
  for (int i = 0; i < 100; i++)
    in[n++] = '[';
  while (n < 600000) {
    memcpy(in + n, "1 :", 3);
    n += 3;
  }
  in[n++] = '1';
  for (int i = 0; i < 100; i++)
    in[n++] = ']';
  in[n++] = '\n';
  run_t r = feed_all(&f->e, JRPC_FRAMING_NEWLINE, in, n, 65536);
  assert_parse_error(&r);
  free(r.out);

  /* ~20 KB of valid params that look like structure inside strings. */
  n = 0;
  n += (size_t)sprintf(in + n, "{\"jsonrpc\":\"2.0\",\"method\":\"echo\","
                               "\"params\":{");
  for (int i = 0; i < 300; i++)
    n += (size_t)sprintf(in + n,
                         "%s\"k:%d\" : [\"a:b\", \"[{\\\"q\\\\\\\\\", "
                         "{\"x\":\":\"}]",
                         i ? "," : "", i);
  n += (size_t)sprintf(in + n, "},\"id\":5}\n");
  assert_true(n > 4096);
  r = feed_all(&f->e, JRPC_FRAMING_NEWLINE, in, n, 65536);
  assert_true(r.out_n > 4096);
  assert_non_null(memmem(r.out, r.out_n, "\"result\":{\"k:0\"", 15));
  assert_memory_equal(r.out + r.out_n - 9, ",\"id\":5}\n", 9);
  free(r.out);
  free(in);
}

static void test_handler_edge_cases(void **state) {
  engine_fx_t *f = *state;
  const char in[] =
      "{\"jsonrpc\":\"2.0\",\"method\":\"fail.code0\",\"id\":1}\n"
      "{\"jsonrpc\":\"2.0\",\"method\":\"huge.alloc\",\"id\":2}\n";
  const char want[] =
      "{\"jsonrpc\":\"2.0\",\"error\":{\"code\":-32000,\"message\":\"no "
      "code\"},\"id\":1}\n"
      "{\"jsonrpc\":\"2.0\",\"result\":true,\"id\":2}\n";
  run_t r = feed_all(&f->e, JRPC_FRAMING_NEWLINE, in, sizeof(in) - 1, 1 << 20);
  assert_int_equal(r.out_n, sizeof(want) - 1);
  assert_memory_equal(r.out, want, sizeof(want) - 1);
  free(r.out);
}

/* frame_budget: a feed hands back after that many frames with `more` set
 * and the replies so far in the output; feeding 0 bytes goes on, and the
 * replies come out in order, the same as without a budget. */
static void test_frame_budget(void **state) {
  engine_fx_t *f = *state;
  const char *in =
      "{\"jsonrpc\":\"2.0\",\"method\":\"echo\",\"params\":[1],\"id\":1}\n"
      "{\"jsonrpc\":\"2.0\",\"method\":\"echo\",\"params\":[2],\"id\":2}\n"
      "{\"jsonrpc\":\"2.0\",\"method\":\"echo\",\"params\":[3],\"id\":3}\n"
      "{\"jsonrpc\":\"2.0\",\"method\":\"echo\",\"params\":[4],\"id\":4}\n"
      "{\"jsonrpc\":\"2.0\",\"method\":\"echo\",\"params\":[5],\"id\":5}\n";
  size_t n = strlen(in);
  run_t whole = feed_all(&f->e, JRPC_FRAMING_NEWLINE, in, n, n);
  jrpc__stream_t s;
  jrpc__stream_init(&s, &f->e, JRPC_FRAMING_NEWLINE);
  s.frame_budget = 2;
  size_t room;
  char *dst = jrpc__stream_rbuf(&s, &room);
  assert_true(room >= n);
  memcpy(dst, in, n);
  char out[4096];
  size_t out_n = 0;
  int rounds = 0;
  int rc = jrpc__stream_feed(&s, n, 0);
  for (;;) {
    assert_int_equal(rc, 0);
    size_t got = jrpc__out_copy(&s.out, out + out_n, sizeof(out) - out_n);
    jrpc__out_consume(&s.out, got);
    /* Two replies per round, one in the last. */
    size_t lines = 0;
    for (size_t i = 0; i < got; i++)
      lines += out[out_n + i] == '\n';
    assert_int_equal(lines, s.more ? 2 : 1);
    out_n += got;
    rounds++;
    if (!s.more)
      break;
    rc = jrpc__stream_feed(&s, 0, 0);
  }
  assert_int_equal(rounds, 3);
  assert_int_equal(out_n, whole.out_n);
  assert_memory_equal(out, whole.out, out_n);
  assert_null(s.buf); /* idle again */
  jrpc__stream_free(&s);
  free(whole.out);
}

/* The framing table (framing.h): each framing's row is whole, and a stream
 * reaches its framing through it: its name, its sink's deliver, its own
 * state made and let go, and its answer to a frame that came too slowly
 * (-32009 in the framing's own wrapping, 408 on http). */
static void test_framing_rows(void **state) {
  engine_fx_t *f = *state;
  static const char *const names[JRPC__FRAMINGS] = {
      [JRPC_FRAMING_NEWLINE] = "newline",
      [JRPC_FRAMING_LENGTH] = "length",
      [JRPC_FRAMING_HTTP] = "http",
      [JRPC_FRAMING_CONTENT_LENGTH] = "content-length",
      [JRPC_FRAMING_WEBSOCKET] = "websocket"};
  static const char *const timeouts[JRPC__FRAMINGS] = {
      [JRPC_FRAMING_NEWLINE] =
          "{\"jsonrpc\":\"2.0\",\"error\":{\"code\":-32009",
      [JRPC_FRAMING_LENGTH] = "{\"jsonrpc\":\"2.0\",\"error\":{\"code\":-32009",
      [JRPC_FRAMING_HTTP] = "HTTP/1.1 408 Request Timeout\r\n",
      [JRPC_FRAMING_CONTENT_LENGTH] = "Content-Length: ",
      /* a close frame, 1008 */
      [JRPC_FRAMING_WEBSOCKET] = "\x88"};
  for (unsigned k = 0; k < JRPC__FRAMINGS; k++) {
    const jrpc__framing_ops_t *row = &jrpc__framings[k];
    assert_string_equal(jrpc__framing_name((jrpc__framing_t)k), names[k]);
    assert_non_null(row->feed);
    assert_non_null(row->deliver);
    assert_non_null(row->timeout);
    assert_true(!row->init == !row->free); /* what init makes, free frees */
    jrpc__stream_t s;
    jrpc__stream_init(&s, &f->e, (jrpc__framing_t)k);
    assert_ptr_equal(s.fx, row);
    assert_ptr_equal(s.sink.deliver, row->deliver);
    jrpc__framing_conf_t conf = {.max_head = 8192};
    if (row->init) {
      assert_int_equal(row->init(&s, &conf), 0);
      assert_true(s.http || s.ws);
    }
    row->timeout(&s, 500, 3);
    char out[512];
    size_t n = jrpc__out_copy(&s.out, out, sizeof(out) - 1);
    out[n] = 0;
    /* length framing: the reply behind its 4-byte prefix */
    const char *at = k == JRPC_FRAMING_LENGTH && n > 4 ? out + 4 : out;
    assert_true(n > 0);
    assert_memory_equal(at, timeouts[k], strlen(timeouts[k]));
    if (k == JRPC_FRAMING_CONTENT_LENGTH)
      assert_non_null(strstr(out, "\"code\":-32009"));
    if (row->free) {
      row->free(&s);
      assert_null(s.http);
      assert_null(s.ws);
    }
    jrpc__stream_free(&s);
  }
  assert_string_equal(jrpc__framing_name(JRPC__FRAMINGS), "?");
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_replies_independent_of_split),
      cmocka_unit_test(test_large_frame_grows_buffer_within_limit),
      cmocka_unit_test(test_oversized_newline_frame_skipped_not_buffered),
      cmocka_unit_test(test_oversized_length_frame_closes),
      cmocka_unit_test(test_length_framing_many_frames),
      cmocka_unit_test(test_at_matches_iteration),
      cmocka_unit_test(test_deep_nesting_behind_a_quote),
      cmocka_unit_test(test_handler_edge_cases),
      cmocka_unit_test(test_large_frame_prescan),
      cmocka_unit_test(test_frame_budget),
      cmocka_unit_test(test_framing_rows),
  };
  return cmocka_run_group_tests(tests, setup, engine_fx_teardown);
}
