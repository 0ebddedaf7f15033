/* test_spec.c - every example of the JSON-RPC 2.0 specification
 * (jsonrpc.org/specification, section 7 "Examples"), bytes in -> bytes out
 * through the whole pipeline (stream, framing, parser, rules, dispatch,
 * writer), with length framing and, where the request is one line, newline
 * framing. Replies are compared as JSON values with the specification's
 * response (batch reply order not assumed), and then byte-for-byte with
 * the compact form of it. "No response" examples must produce no bytes. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "testutil.h"

typedef struct example {
  const char *name;
  const char *request;
  const char *response; /* NULL: nothing is returned */
} example_t;

/* The texts as the specification prints them (its "-->" and "<--" marks
 * removed). */
static const example_t examples[] = {
    {"positional_1",
     "{\"jsonrpc\": \"2.0\", \"method\": \"subtract\", \"params\": [42, 23], "
     "\"id\": 1}",
     "{\"jsonrpc\": \"2.0\", \"result\": 19, \"id\": 1}"},
    {"positional_2",
     "{\"jsonrpc\": \"2.0\", \"method\": \"subtract\", \"params\": [23, 42], "
     "\"id\": 2}",
     "{\"jsonrpc\": \"2.0\", \"result\": -19, \"id\": 2}"},
    {"named_1",
     "{\"jsonrpc\": \"2.0\", \"method\": \"subtract\", \"params\": "
     "{\"subtrahend\": 23, \"minuend\": 42}, \"id\": 3}",
     "{\"jsonrpc\": \"2.0\", \"result\": 19, \"id\": 3}"},
    {"named_2",
     "{\"jsonrpc\": \"2.0\", \"method\": \"subtract\", \"params\": "
     "{\"minuend\": 42, \"subtrahend\": 23}, \"id\": 4}",
     "{\"jsonrpc\": \"2.0\", \"result\": 19, \"id\": 4}"},
    {"notification_update",
     "{\"jsonrpc\": \"2.0\", \"method\": \"update\", \"params\": "
     "[1,2,3,4,5]}",
     NULL},
    {"notification_foobar", "{\"jsonrpc\": \"2.0\", \"method\": \"foobar\"}",
     NULL},
    {"method_not_found",
     "{\"jsonrpc\": \"2.0\", \"method\": \"foobar\", \"id\": \"1\"}",
     "{\"jsonrpc\": \"2.0\", \"error\": {\"code\": -32601, \"message\": "
     "\"Method not found\"}, \"id\": \"1\"}"},
    {"invalid_json",
     "{\"jsonrpc\": \"2.0\", \"method\": \"foobar, \"params\": \"bar\", "
     "\"baz]",
     "{\"jsonrpc\": \"2.0\", \"error\": {\"code\": -32700, \"message\": "
     "\"Parse error\"}, \"id\": null}"},
    {"invalid_request",
     "{\"jsonrpc\": \"2.0\", \"method\": 1, \"params\": \"bar\"}",
     "{\"jsonrpc\": \"2.0\", \"error\": {\"code\": -32600, \"message\": "
     "\"Invalid Request\"}, \"id\": null}"},
    {"batch_invalid_json",
     "[\n"
     "  {\"jsonrpc\": \"2.0\", \"method\": \"sum\", \"params\": [1,2,4], "
     "\"id\": \"1\"},\n"
     "  {\"jsonrpc\": \"2.0\", \"method\"\n"
     "]",
     "{\"jsonrpc\": \"2.0\", \"error\": {\"code\": -32700, \"message\": "
     "\"Parse error\"}, \"id\": null}"},
    {"empty_array", "[]",
     "{\"jsonrpc\": \"2.0\", \"error\": {\"code\": -32600, \"message\": "
     "\"Invalid Request\"}, \"id\": null}"},
    {"invalid_batch_1", "[1]",
     "[\n"
     "  {\"jsonrpc\": \"2.0\", \"error\": {\"code\": -32600, \"message\": "
     "\"Invalid Request\"}, \"id\": null}\n"
     "]"},
    {"invalid_batch_3", "[1,2,3]",
     "[\n"
     "  {\"jsonrpc\": \"2.0\", \"error\": {\"code\": -32600, \"message\": "
     "\"Invalid Request\"}, \"id\": null},\n"
     "  {\"jsonrpc\": \"2.0\", \"error\": {\"code\": -32600, \"message\": "
     "\"Invalid Request\"}, \"id\": null},\n"
     "  {\"jsonrpc\": \"2.0\", \"error\": {\"code\": -32600, \"message\": "
     "\"Invalid Request\"}, \"id\": null}\n"
     "]"},
    {"mixed_batch",
     "[\n"
     "        {\"jsonrpc\": \"2.0\", \"method\": \"sum\", \"params\": "
     "[1,2,4], \"id\": \"1\"},\n"
     "        {\"jsonrpc\": \"2.0\", \"method\": \"notify_hello\", "
     "\"params\": [7]},\n"
     "        {\"jsonrpc\": \"2.0\", \"method\": \"subtract\", \"params\": "
     "[42,23], \"id\": \"2\"},\n"
     "        {\"foo\": \"boo\"},\n"
     "        {\"jsonrpc\": \"2.0\", \"method\": \"foo.get\", \"params\": "
     "{\"name\": \"myself\"}, \"id\": \"5\"},\n"
     "        {\"jsonrpc\": \"2.0\", \"method\": \"get_data\", \"id\": "
     "\"9\"} \n"
     "    ]",
     "[\n"
     "        {\"jsonrpc\": \"2.0\", \"result\": 7, \"id\": \"1\"},\n"
     "        {\"jsonrpc\": \"2.0\", \"result\": 19, \"id\": \"2\"},\n"
     "        {\"jsonrpc\": \"2.0\", \"error\": {\"code\": -32600, "
     "\"message\": \"Invalid Request\"}, \"id\": null},\n"
     "        {\"jsonrpc\": \"2.0\", \"error\": {\"code\": -32601, "
     "\"message\": \"Method not found\"}, \"id\": \"5\"},\n"
     "        {\"jsonrpc\": \"2.0\", \"result\": [\"hello\", 5], \"id\": "
     "\"9\"}\n"
     "    ]"},
    {"batch_all_notifications",
     "[\n"
     "        {\"jsonrpc\": \"2.0\", \"method\": \"notify_sum\", \"params\": "
     "[1,2,4]},\n"
     "        {\"jsonrpc\": \"2.0\", \"method\": \"notify_hello\", "
     "\"params\": [7]}\n"
     "    ]",
     NULL},
};

enum {
  N_EXAMPLES = sizeof examples / sizeof examples[0],
  OUT_CAP = 1 << 16,
};

static char out[OUT_CAP];

/* Runs one example's request through `framing` and checks the reply as a
 * JSON value. */
static void check_one(tu_fixture *f, const example_t *ex, int framing,
                      const char *req) {
  size_t n = tu_call(f, framing, req, strlen(req), out, sizeof out);
  if (!ex->response) {
    if (n != 0 || f->out_n != 0)
      print_error("%s: expected no output, got %llu bytes: %s\n", ex->name,
                  (unsigned long long)f->out_n, out);
    assert_int_equal(f->out_n, 0);
    return;
  }
  if (n == 0)
    print_error("%s: no reply\n", ex->name);
  assert_true(n > 0);
  tu_assert_json(out, n, ex->response);
}

/* Length framing with the text as printed; newline framing with the text
 * as printed when it is one line, else with its line breaks turned into
 * spaces (the same JSON text). */
static void run_example(void **state, const example_t *ex) {
  tu_fixture *f = *state;
  check_one(f, ex, JRPC_FRAMING_LENGTH, ex->request);

  char *line = tu_strdup(ex->request);
  for (char *p = line; *p; p++)
    if (*p == '\n')
      *p = ' ';
  check_one(f, ex, JRPC_FRAMING_NEWLINE, line);
  free(line);
}

#define EXAMPLE_TEST(ident, i)                                                 \
  static void test_##ident(void **state) {                                     \
    assert_string_equal(examples[i].name, #ident);                             \
    run_example(state, &examples[i]);                                          \
  }
EXAMPLE_TEST(positional_1, 0)
EXAMPLE_TEST(positional_2, 1)
EXAMPLE_TEST(named_1, 2)
EXAMPLE_TEST(named_2, 3)
EXAMPLE_TEST(notification_update, 4)
EXAMPLE_TEST(notification_foobar, 5)
EXAMPLE_TEST(method_not_found, 6)
EXAMPLE_TEST(invalid_json, 7)
EXAMPLE_TEST(invalid_request, 8)
EXAMPLE_TEST(batch_invalid_json, 9)
EXAMPLE_TEST(empty_array, 10)
EXAMPLE_TEST(invalid_batch_1, 11)
EXAMPLE_TEST(invalid_batch_3, 12)
EXAMPLE_TEST(mixed_batch, 13)
EXAMPLE_TEST(batch_all_notifications, 14)

/* The notifications in the examples do run, even without a reply. */
static void test_notifications_run(void **state) {
  tu_fixture *f = *state;
  int upd = tu_calls_update, hello = tu_calls_notify_hello;
  assert_int_equal(tu_calls(f, examples[4].request, out, sizeof out), 0);
  assert_int_equal(tu_calls_update, upd + 1);
  assert_int_equal(tu_calls(f, examples[14].request, out, sizeof out), 0);
  assert_int_equal(tu_calls_notify_hello, hello + 1);
  assert_true(tu_calls(f, examples[13].request, out, sizeof out) > 0);
  assert_int_equal(tu_calls_notify_hello, hello + 2);
}

/* Byte-exact (docs/architecture.md, "Conventions"): a single reply is exactly
 * the compact form of the specification's response, member order included; a
 * batch reply is compact, and equal as a JSON value. */
static void test_byte_exact(void **state) {
  tu_fixture *f = *state;
  static char want[4096];
  for (size_t i = 0; i < N_EXAMPLES; i++) {
    const example_t *ex = &examples[i];
    if (!ex->response)
      continue;
    size_t n = tu_calls(f, ex->request, out, sizeof out);
    size_t wn =
        tu_json_minify(ex->response, strlen(ex->response), want, sizeof want);
    assert_true(wn != (size_t)-1);
    if (ex->response[0] == '[') {
      static char mini[OUT_CAP];
      size_t mn = tu_json_minify(out, n, mini, sizeof mini);
      if (mn != n || memcmp(mini, out, n) != 0)
        print_error("%s: batch reply not compact: %s\n", ex->name, out);
      assert_true(mn == n && memcmp(mini, out, n) == 0);
      tu_assert_json(out, n, ex->response);
    } else if (n != wn || memcmp(out, want, n) != 0) {
      print_error("%s:\n  got:      %.*s\n  expected: %s\n", ex->name, (int)n,
                  out, want);
      fail();
    }
  }
}

/* Several examples on one stream, back to back: one reply frame per
 * answered request, in request order, nothing for the notifications. */
static void test_all_on_one_stream(void **state) {
  tu_fixture *f = *state;
  for (int framing = 0; framing < 2; framing++) {
    size_t cap = 1 << 16, n = 0;
    char *in = malloc(cap);
    assert_non_null(in);
    int want = 0;
    for (size_t i = 0; i < N_EXAMPLES; i++) {
      char *line = tu_strdup(examples[i].request);
      for (char *p = line; *p; p++)
        if (*p == '\n')
          *p = ' ';
      n += tu_frame(framing, line, strlen(line), in + n, cap - n);
      free(line);
      want += examples[i].response != NULL;
    }
    for (size_t chunk = 0; chunk <= 7; chunk += 7) {
      const char *fp[N_EXAMPLES];
      size_t fn[N_EXAMPLES];
      f->chunk = chunk;
      size_t on = tu_run(f, framing, in, n, out, sizeof out);
      int k = tu_unframe(framing, out, on, fp, fn, N_EXAMPLES);
      assert_int_equal(k, want);
      int r = 0;
      for (size_t i = 0; i < N_EXAMPLES; i++) {
        if (!examples[i].response)
          continue;
        tu_assert_json(fp[r], fn[r], examples[i].response);
        r++;
      }
    }
    f->chunk = 0;
    free(in);
  }
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_positional_1),
      cmocka_unit_test(test_positional_2),
      cmocka_unit_test(test_named_1),
      cmocka_unit_test(test_named_2),
      cmocka_unit_test(test_notification_update),
      cmocka_unit_test(test_notification_foobar),
      cmocka_unit_test(test_method_not_found),
      cmocka_unit_test(test_invalid_json),
      cmocka_unit_test(test_invalid_request),
      cmocka_unit_test(test_batch_invalid_json),
      cmocka_unit_test(test_empty_array),
      cmocka_unit_test(test_invalid_batch_1),
      cmocka_unit_test(test_invalid_batch_3),
      cmocka_unit_test(test_mixed_batch),
      cmocka_unit_test(test_batch_all_notifications),
      cmocka_unit_test(test_notifications_run),
      cmocka_unit_test(test_byte_exact),
      cmocka_unit_test(test_all_on_one_stream),
      cmocka_unit_test(tu_test_auto_switched),
  };
  return cmocka_run_group_tests(tests, tu_setup, tu_teardown);
}
