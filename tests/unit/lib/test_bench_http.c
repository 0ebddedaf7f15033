/* test_bench_http.c - bench/jrpc_bench_http.c, jrpc-bench's HTTP/1.1
 * response reader: pipelined responses in one buffer, a response arriving
 * one byte at a time (every split point), the header forms servers and
 * HAProxy send, and the responses it must refuse rather than misread.
 * Buffers are exact-size heap copies, so ASan sees any read past the end. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "jrpc_bench_http.h"

#define MAX_BODY 1024

/* One call on an exact-size copy of text[0, len) from *pos. */
static int next(const char *text, size_t len, size_t *pos, size_t *scan,
                http_response_t *r, const char **why, char **copy) {
  free(*copy);
  *copy = malloc(len ? len : 1);
  memcpy(*copy, text, len);
  return http_next_response(*copy, len, pos, scan, MAX_BODY, r, why);
}

static void expect_bad(const char *text, const char *why_part) {
  size_t pos = 0, scan = 0;
  http_response_t r;
  const char *why = NULL;
  char *copy = NULL;
  int rc = next(text, strlen(text), &pos, &scan, &r, &why, &copy);
  free(copy);
  if (rc != HTTP_BAD || !why || !strstr(why, why_part))
    fail_msg("%s: expected HTTP_BAD (%s), got %d (%s)", text, why_part, rc,
             why ? why : "-");
}

static void test_pipelined(void **state) {
  (void)state;
  static const char text[] =
      "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\n"
      "Content-Length: 35\r\n\r\n"
      "{\"jsonrpc\":\"2.0\",\"result\":3,\"id\":1}"
      "HTTP/1.1 204 No Content\r\n\r\n"
      "HTTP/1.0 200 OK\r\ncontent-length:  2 \r\nConnection: keep-alive, "
      "Close\r\n\r\n[]";
  size_t len = strlen(text), pos = 0, scan = 0;
  http_response_t r;
  const char *why = NULL;
  char *copy = NULL;
  assert_int_equal(next(text, len, &pos, &scan, &r, &why, &copy),
                   HTTP_RESPONSE);
  assert_int_equal(r.status, 200);
  assert_int_equal(r.body_len, 35);
  assert_memory_equal(r.body, "{\"jsonrpc\":\"2.0\",\"result\":3,\"id\":1}",
                      35);
  assert_false(r.close);
  assert_int_equal(next(text, len, &pos, &scan, &r, &why, &copy),
                   HTTP_RESPONSE);
  assert_int_equal(r.status, 204);
  assert_int_equal(r.body_len, 0);
  assert_int_equal(next(text, len, &pos, &scan, &r, &why, &copy),
                   HTTP_RESPONSE);
  assert_int_equal(r.status, 200);
  assert_int_equal(r.body_len, 2);
  assert_memory_equal(r.body, "[]", 2);
  assert_true(r.close);
  assert_int_equal(pos, len);
  assert_int_equal(next(text, len, &pos, &scan, &r, &why, &copy),
                   HTTP_NEED_MORE);
  free(copy);
}

/* Every prefix of a response is HTTP_NEED_MORE, fed as a client reads it
 * (the same pos and scan carried along), and the whole one is read. */
static void test_every_split(void **state) {
  (void)state;
  static const char text[] =
      "HTTP/1.1 200 OK\r\nServer: x\r\nContent-Length: 10\r\n\r\n0123456789";
  size_t len = strlen(text);
  for (size_t step = 1; step <= len; step++) {
    size_t pos = 0, scan = 0, have = 0;
    http_response_t r;
    const char *why = NULL;
    char *copy = NULL;
    int rc = HTTP_NEED_MORE;
    while (rc == HTTP_NEED_MORE) {
      have = have + step > len ? len : have + step;
      rc = next(text, have, &pos, &scan, &r, &why, &copy);
      if (have < len)
        assert_int_equal(rc, HTTP_NEED_MORE);
      else
        break;
    }
    assert_int_equal(rc, HTTP_RESPONSE);
    assert_int_equal(r.body_len, 10);
    assert_memory_equal(r.body, "0123456789", 10);
    assert_int_equal(pos, len);
    free(copy);
  }
}

static void test_refused(void **state) {
  (void)state;
  expect_bad("HTTP/2 200\r\n\r\n", "status line");
  expect_bad("HTTP/1.1 20x OK\r\n\r\n", "status line");
  expect_bad("HTTP/1.1 2000 OK\r\n\r\n", "status line");
  expect_bad("HTTP/1.1 100 Continue\r\n\r\n", "informational");
  expect_bad("HTTP/1.1 200 OK\r\n\r\n{}", "without Content-Length");
  expect_bad("HTTP/1.1 200 OK\r\nContent-Length: -1\r\n\r\n", "Content-Length");
  expect_bad("HTTP/1.1 200 OK\r\nContent-Length: 2\r\nContent-Length: 3\r\n"
             "\r\n{}",
             "Content-Length");
  expect_bad("HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n"
             "2\r\n{}\r\n0\r\n\r\n",
             "Transfer-Encoding");
  expect_bad("HTTP/1.1 200 OK\r\nA: b\nContent-Length: 2\r\n\r\n{}", "CRLF");
}

static void test_limits(void **state) {
  (void)state;
  /* A body over the limit, and a head that never ends. */
  char text[64];
  snprintf(text, sizeof(text), "HTTP/1.1 200 OK\r\nContent-Length: %d\r\n\r\n",
           MAX_BODY + 1);
  size_t pos = 0, scan = 0;
  http_response_t r;
  const char *why = NULL;
  char *copy = NULL;
  assert_int_equal(next(text, strlen(text), &pos, &scan, &r, &why, &copy),
                   HTTP_TOO_BIG);
  size_t n = HTTP_MAX_HEAD + 100;
  char *head = malloc(n);
  memcpy(head, "HTTP/1.1 200 OK\r\nX: ", 20);
  memset(head + 20, 'a', n - 20);
  pos = scan = 0;
  assert_int_equal(next(head, n, &pos, &scan, &r, &why, &copy), HTTP_BAD);
  assert_non_null(strstr(why, "8192"));
  free(head);
  free(copy);
}

static void test_request_head(void **state) {
  (void)state;
  char head[256];
  size_t n =
      http_request_head(head, sizeof(head), "/rpc", "127.0.0.1:7400", 42);
  static const char want[] = "POST /rpc HTTP/1.1\r\nHost: 127.0.0.1:7400\r\n"
                             "Content-Type: application/json\r\n"
                             "Content-Length: 42\r\n\r\n";
  assert_int_equal(n, strlen(want));
  assert_memory_equal(head, want, n);
  assert_int_equal(http_request_head(head, 20, "/rpc", "h", 1), 0);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_pipelined),    cmocka_unit_test(test_every_split),
      cmocka_unit_test(test_refused),      cmocka_unit_test(test_limits),
      cmocka_unit_test(test_request_head),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
