/* test_native_scan.c - the native scanner's shortcuts for the usual
 * request ({"jsonrpc":"2.0","method":"...","params":...,"id":...}, whose
 * members it recognises by their bytes) and for runs of small integers
 * and "key":N members read nothing past the frame: a
 * frame that ends where such a member would start, or inside its key, is
 * refused as the general scan refuses it, whatever the bytes after it (the
 * padding every frame has) spell. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "arena.h"
#include "common.h"
#include "parser.h"
#include "view.h"

/* What a test looks at in a parse's result, while it is alive. */
typedef void (*inspect_fn)(const jrpc__parsed_t *out, const char *arg);

/* Parses frame with pad right after it (then zeros); the status, and the
 * reason in *why; inspect (when not NULL) sees the result first. */
static int parse_inspect(const char *frame, const char *pad, const char **why,
                         inspect_fn inspect, const char *arg) {
  size_t n = strlen(frame), pn = strlen(pad);
  assert_true(pn <= JRPC__PAD);
  char *buf = calloc(1, n + JRPC__PAD);
  assert_non_null(buf);
  memcpy(buf, frame, n);
  memcpy(buf + n, pad, pn);
  jrpc__parser_t *p = jrpc__parser_native_new();
  assert_non_null(p);
  jrpc__arena_t a;
  jrpc__arena_init(&a, 4096, 4096);
  jrpc__parsed_t out;
  assert_int_equal(p->ops->parse(p, buf, n, &a, 100, &out), 0);
  int status = out.status;
  *why = out.why;
  if (inspect)
    inspect(&out, arg);
  jrpc__arena_free(&a);
  jrpc__parser_destroy(p);
  free(buf);
  return status;
}

static int parse_padded(const char *frame, const char *pad, const char **why) {
  return parse_inspect(frame, pad, why, NULL, NULL);
}

static void expect_invalid(const char *frame, const char *pad,
                           const char *reason) {
  const char *why = NULL;
  assert_int_equal(parse_padded(frame, pad, &why), JRPC__PARSE_INVALID);
  assert_non_null(why);
  assert_string_equal(why, reason);
}

static void expect_incomplete(const char *frame, const char *pad) {
  expect_invalid(frame, pad, "incomplete JSON");
}

static void test_params_past_the_end(void **state) {
  (void)state;
  expect_incomplete("{\"jsonrpc\":\"2.0\",\"method\":\"m\"",
                    ",\"params\":[1],\"id\":1}");
  expect_incomplete("[{\"jsonrpc\":\"2.0\",\"method\":\"m\"",
                    ",\"params\":[1],\"id\":1}]");
  expect_incomplete("{\"jsonrpc\":\"2.0\",\"method\":\"m\",\"params\":",
                    "[1],\"id\":1}");
  expect_incomplete("{\"jsonrpc\":\"2.0\",\"method\":\"m\",\"params\":[",
                    "1],\"id\":1}");
  expect_incomplete("{\"jsonrpc\":\"2.0\",\"method\":\"m\",\"params\":[1",
                    "],\"id\":1}");
  expect_incomplete("{\"jsonrpc\":\"2.0\",\"method\":\"m\",\"params\":[1,2",
                    "],\"id\":1}");
  expect_incomplete("{\"jsonrpc\":\"2.0\",\"method\":\"m\",\"params\":{",
                    "\"a\":1},\"id\":1}");
  expect_incomplete("{\"jsonrpc\":\"2.0\",\"method\":\"m\",\"params\":{\"a\":1",
                    "},\"id\":1}");
  expect_incomplete("{\"jsonrpc\":\"2.0\",\"method\":\"m\",\"params\":{\"a\":",
                    "1},\"id\":1}");
  expect_invalid("{\"jsonrpc\":\"2.0\",\"method\":\"m\",\"params\":{\"a",
                 "\":1},\"id\":1}", "invalid string");
}

static void test_id_past_the_end(void **state) {
  (void)state;
  expect_incomplete("{\"params\":[1]", ",\"id\":1}");
  expect_incomplete("{\"jsonrpc\":\"2.0\",\"method\":\"m\",\"id\":1", "}");
  expect_incomplete("{\"jsonrpc\":\"2.0\",\"method\":\"m\",\"id\":12", "3}");
  /* A batch whose frame ends after a request and its ',' */
  expect_incomplete("[{\"jsonrpc\":\"2.0\",\"method\":\"m\",\"id\":1},",
                    "{\"jsonrpc\":\"2.0\",\"method\":\"m\",\"id\":2}]");
  /* The frame ends inside the key: an unterminated string. */
  expect_invalid("{\"params\":[1],\"id", "\":1}", "invalid string");
  expect_invalid("{\"params\":[1],\"i", "d\":1}", "invalid string");
  expect_incomplete("{\"jsonrpc\":\"2.0\",\"method\":\"m\",\"params\":[1]",
                    ",\"id\":1}");
}

/* Runs of small integers in arrays, and of "key":N members in objects,
 * are read by a loop of their own: bounded by the frame too. */
static void test_runs_past_the_end(void **state) {
  (void)state;
  expect_incomplete("[1", ",2]");
  expect_incomplete("[1,2", "]");
  expect_incomplete("[12", "3]");
  expect_incomplete("{\"a\":1", "}");
  expect_incomplete("{\"a\":1,\"b\":23", "4}");
  expect_invalid("{\"a\":[{\"a", "\":1}]}", "invalid string");
  expect_invalid("{\"a\":[{\"a\"", ":1}]}", "missing ':' after an object key");
}

/* Integers of two or more digits are scanned 8 bytes at a time: every
 * length ends where its digits do, and one cut short by the frame's end
 * is incomplete even when the padding goes on with digits. */
static void long_id_and_param(const jrpc__parsed_t *out, const char *num) {
  size_t n = strlen(num);
  assert_int_equal(out->count, 1);
  assert_int_equal(out->env[0].id_n, n);
  assert_memory_equal(out->env[0].id, num, n);
  jrpc_val_t params = out->env[0].params;
  const char *raw;
  size_t rn;
  assert_int_equal(jrpc__view_len(params), 2);
  assert_int_equal(jrpc__view_raw(jrpc__view_first(params), &raw, &rn), 0);
  assert_int_equal(rn, n);
  assert_memory_equal(raw, num, n);
}

static void test_long_integers(void **state) {
  (void)state;
  static const char digits[] = "12345678901234567890123456";
  char frame[160], num[32];
  for (int n = 2; n <= 25; n++) {
    memcpy(num, digits, (size_t)n);
    num[n] = '\0';
    snprintf(frame, sizeof(frame),
             "{\"jsonrpc\":\"2.0\",\"method\":\"m\",\"params\":[%s,7],"
             "\"id\":%s}",
             num, num);
    const char *why = "";
    assert_int_equal(parse_inspect(frame, "", &why, long_id_and_param, num),
                     JRPC__PARSE_OK);

    snprintf(frame, sizeof(frame), "[%s", num);
    expect_incomplete(frame, "99999999999999999999]");
    snprintf(frame, sizeof(frame), "{\"a\":%s", num);
    expect_incomplete(frame, "99999999999999999999}");
    snprintf(frame, sizeof(frame),
             "{\"jsonrpc\":\"2.0\",\"method\":\"m\",\"id\":%s", num);
    expect_incomplete(frame, "99999999999999999999}");
  }
}

/* The same frames with the bytes inside are complete requests. */
static void test_inside_the_frame(void **state) {
  (void)state;
  const char *why = "";
  assert_int_equal(
      parse_padded("{\"jsonrpc\":\"2.0\",\"method\":\"m\",\"params\":[1],"
                   "\"id\":1}",
                   "", &why),
      JRPC__PARSE_OK);
  assert_null(why);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_params_past_the_end),
      cmocka_unit_test(test_id_past_the_end),
      cmocka_unit_test(test_runs_past_the_end),
      cmocka_unit_test(test_long_integers),
      cmocka_unit_test(test_inside_the_frame),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
