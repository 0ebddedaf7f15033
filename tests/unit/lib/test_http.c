/* test_http.c - lib/http.c: the http and content-length framings, in
 * process. Every status path, the same replies whether the input comes in
 * one read or byte by byte, pipelined requests answered in order (deferred
 * ones included), and the input buffer bounded by the limits. */
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
#include "http.h"
#include "stream.h"

#define MAX_FRAME 4096
#define MAX_HEAD 1024

static jrpc_call_t *stashed; /* the call "later" deferred */

static int later(jrpc_call_t *c, jrpc_val_t params, void *udata) {
  stashed = jrpc_defer(c);
  return stashed ? JRPC_ASYNC : jrpc_error(c, JRPC_INTERNAL_ERROR, "no defer");
}

/* Defers and finishes at once, inside its own dispatch. */
static int now(jrpc_call_t *c, jrpc_val_t params, void *udata) {
  jrpc_call_t *d = jrpc_defer(c);
  if (!d)
    return jrpc_error(c, JRPC_INTERNAL_ERROR, "no defer");
  jrpc_w_u64(d, 7);
  jrpc_finish(d);
  return JRPC_ASYNC;
}

static int outputs;
static void host_output(void *arg, jrpc__sink_t *sink) {
  outputs++;
}
static const jrpc__host_t host = {.output = host_output};

static int up = 1;
static int healthy(void *arg) {
  return up;
}
static int metrics(void *arg, jrpc__outbuf_t *o) {
  return jrpc__out_put(o, "x_total 3\n", 10);
}
/* The host's authorize, for streams with auth: lets "Bearer good" in and
 * remembers what it was asked. */
static int asked;
static char asked_cred[128];
static int authorize(void *arg, jrpc__stream_t *s, const char *cred, size_t n,
                     const char **why) {
  asked++;
  snprintf(asked_cred, sizeof(asked_cred), "%.*s", cred ? (int)n : 6,
           cred ? cred : "(none)");
  if (cred && n == 11 && memcmp(cred, "Bearer good", 11) == 0)
    return 0;
  *why = "no good";
  return 401;
}
static const jrpc__http_host_t http_host = {healthy, metrics, authorize, NULL};

static int setup(void **state) {
  static const engine_fx_method_t methods[] = {
      {"echo", engine_fx_echo},
      {"later", later},
      {"now", now},
  };
  engine_fx_t *f = engine_fx_new(methods, sizeof(methods) / sizeof(methods[0]),
                                 MAX_FRAME, "native");
  f->e.host = &host;
  *state = f;
  up = 1;
  stashed = NULL;
  return 0;
}

typedef struct conn {
  jrpc__stream_t s;
  jrpc__http_t h;
  char out[1 << 16];
  size_t out_n;
  int rc;
  size_t max_cap; /* largest input buffer */
} conn_t;

static conn_t *conn_new(jrpc__engine_t *e, jrpc__framing_t framing) {
  conn_t *c = calloc(1, sizeof(*c));
  jrpc__stream_init(&c->s, e, framing);
  jrpc__http_init(&c->h, &c->s, MAX_HEAD,
                  JRPC__HTTP_ROUTE_HEALTH | JRPC__HTTP_ROUTE_METRICS,
                  &http_host, NULL);
  return c;
}

static void take_output(conn_t *c) {
  size_t n = jrpc__out_copy(&c->s.out, c->out + c->out_n,
                            sizeof(c->out) - 1 - c->out_n);
  c->out_n += n;
  c->out[c->out_n] = '\0';
  jrpc__out_consume(&c->s.out, (size_t)jrpc__out_pending(&c->s.out));
}

/* Feeds in reads of at most `chunk` bytes; stops at the first status. */
static void conn_send(conn_t *c, const char *in, size_t n, size_t chunk) {
  size_t off = 0;
  while (off < n && c->rc == 0) {
    size_t k = engine_fx_put(&c->s, in + off, n - off, chunk);
    off += k;
    c->rc = jrpc__http_feed(&c->s, k, 0);
    if (c->s.cap > c->max_cap)
      c->max_cap = c->s.cap;
    take_output(c);
  }
}

static void conn_free(conn_t *c) {
  jrpc__http_free(&c->h);
  jrpc__stream_free(&c->s);
  free(c);
}

/* The whole output of `in`, sent in reads of `chunk` bytes. */
static char *run(jrpc__engine_t *e, jrpc__framing_t framing, const char *in,
                 size_t chunk, int *rc) {
  conn_t *c = conn_new(e, framing);
  conn_send(c, in, strlen(in), chunk);
  if (rc)
    *rc = c->rc;
  char *out = strdup(c->out);
  conn_free(c);
  return out;
}

/* run() in one read and byte by byte must agree; returns the output. */
static char *run_both(jrpc__engine_t *e, jrpc__framing_t framing,
                      const char *in, int *rc) {
  int rc1, rc2;
  char *a = run(e, framing, in, 1 << 20, &rc1);
  char *b = run(e, framing, in, 1, &rc2);
  assert_string_equal(a, b);
  assert_int_equal(rc1, rc2);
  free(b);
  if (rc)
    *rc = rc1;
  return a;
}

#define CALL1                                                                  \
  "{\"jsonrpc\":\"2.0\",\"method\":\"echo\",\"params\":[1],\"id\":1}"
#define REPLY1 "{\"jsonrpc\":\"2.0\",\"result\":[1],\"id\":1}\n"
#define NOTE "{\"jsonrpc\":\"2.0\",\"method\":\"echo\",\"params\":[2]}"
#define POST(body)                                                             \
  "POST / HTTP/1.1\r\nHost: t\r\nContent-Type: application/json\r\n"           \
  "Content-Length: %zu\r\n\r\n%s"

static char *post(const char *body) {
  char *s = malloc(strlen(body) + 200);
  sprintf(s, POST(body), strlen(body), body);
  return s;
}

static const char OK_HEAD[] = "HTTP/1.1 200 OK\r\n"
                              "Content-Type: application/json\r\n"
                              "Content-Length:         38\r\n\r\n";

static void test_call_200(void **state) {
  engine_fx_t *f = *state;
  char *in = post(CALL1);
  int rc;
  char *out = run_both(&f->e, JRPC_FRAMING_HTTP, in, &rc);
  char want[512];
  snprintf(want, sizeof(want), "%s%s", OK_HEAD, REPLY1);
  assert_string_equal(out, want);
  assert_int_equal(rc, 0);
  free(out);
  free(in);
}

static void test_jsonrpc_error_is_200(void **state) {
  engine_fx_t *f = *state;
  char *in = post("{\"jsonrpc\":\"2.0\",\"method\":\"nope\",\"id\":2}");
  char *out = run_both(&f->e, JRPC_FRAMING_HTTP, in, NULL);
  assert_non_null(strstr(out, "HTTP/1.1 200 OK\r\n"));
  assert_non_null(strstr(out, "-32601"));
  free(out);
  free(in);
}

static void test_notification_204(void **state) {
  engine_fx_t *f = *state;
  char *in = post(NOTE);
  char *out = run_both(&f->e, JRPC_FRAMING_HTTP, in, NULL);
  assert_string_equal(out, "HTTP/1.1 204 No Content\r\n\r\n");
  free(out);
  free(in);
  /* A batch of notifications only, too. */
  in = post("[" NOTE "," NOTE "]");
  out = run_both(&f->e, JRPC_FRAMING_HTTP, in, NULL);
  assert_string_equal(out, "HTTP/1.1 204 No Content\r\n\r\n");
  free(out);
  free(in);
}

static void test_pipelined_in_order(void **state) {
  engine_fx_t *f = *state;
  const char *chunked_call =
      "POST /x HTTP/1.1\r\nTransfer-Encoding: chunked\r\n"
      "Content-Type: application/json; charset=utf-8\r\n"
      "\r\n"
      "7\r\n{\"jsonr\r\n"
      "2e;ext=1\r\npc\":\"2.0\",\"method\":\"echo\","
      "\"params\":[3],\"id\":3}\r\n"
      "0\r\nX-Trailer: t\r\n\r\n";
  char *a = post(CALL1), *b = post(NOTE);
  char in[2048];
  snprintf(in, sizeof(in), "%s%s%sGET /health HTTP/1.1\r\n\r\n%s", a,
           chunked_call, b, a);
  char *out = run_both(&f->e, JRPC_FRAMING_HTTP, in, NULL);
  char want[2048];
  snprintf(want, sizeof(want),
           "%s%s"
           "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\n"
           "Content-Length:         38\r\n\r\n"
           "{\"jsonrpc\":\"2.0\",\"result\":[3],\"id\":3}\n"
           "HTTP/1.1 204 No Content\r\n\r\n"
           "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\n"
           "Content-Length:         21\r\n\r\n{\"status\":\"serving\"}\n"
           "%s%s",
           OK_HEAD, REPLY1, OK_HEAD, REPLY1);
  assert_string_equal(out, want);
  free(out);
  free(a);
  free(b);
}

static void expect_status(engine_fx_t *f, const char *in, const char *status,
                          int closes) {
  int rc;
  char *out = run_both(&f->e, JRPC_FRAMING_HTTP, in, &rc);
  char line[128];
  snprintf(line, sizeof(line), "HTTP/1.1 %s\r\n", status);
  if (strncmp(out, line, strlen(line)) != 0)
    fail_msg("for %s wanted %s, got %s", in, status, out);
  assert_non_null(strstr(out, "Content-Type: application/json\r\n"));
  assert_non_null(strstr(out, "\"id\":null}\n"));
  assert_int_equal(rc, closes ? JRPC__ECLOSE : 0);
  assert_int_equal(strstr(out, "Connection: close\r\n") != NULL, closes);
  free(out);
}

static void test_error_statuses(void **state) {
  engine_fx_t *f = *state;
  expect_status(f, "GARBAGE\r\n\r\n", "400 Bad Request", 1);
  expect_status(f, "POST / HTTP/1.1\r\nContent-Length: x\r\n\r\n",
                "400 Bad Request", 1);
  expect_status(f, "GET / HTTP/1.1\r\n\r\n", "405 Method Not Allowed", 0);
  expect_status(f, "POST /health HTTP/1.1\r\nContent-Length: 0\r\n\r\n",
                "405 Method Not Allowed", 0);
  expect_status(f, "DELETE /metrics HTTP/1.1\r\n\r\n", "405 Method Not Allowed",
                0);
  expect_status(f,
                "POST / HTTP/1.1\r\nContent-Type: text/plain\r\n"
                "Content-Length: 2\r\n\r\n{}",
                "415 Unsupported Media Type", 0);
  expect_status(f,
                "POST / HTTP/1.1\r\nContent-Type: application/x-www-form-"
                "urlencoded\r\nContent-Length: 2\r\n\r\n{}",
                "415 Unsupported Media Type", 0);
  expect_status(f, "POST / HTTP/1.1\r\nContent-Length: 4097\r\n\r\n",
                "413 Content Too Large", 1);
  /* One chunk over the limit is refused from its size line. */
  expect_status(f,
                "POST / HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n"
                "1001\r\n",
                "413 Content Too Large", 1);
  /* Chunks that add up to over the limit. */
  char big[8192];
  int n = snprintf(big, sizeof(big),
                   "POST / HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n");
  for (int i = 0; i < 3; i++) {
    n += snprintf(big + n, sizeof(big) - (size_t)n, "600\r\n");
    memset(big + n, ' ', 0x600);
    n += 0x600;
    n += snprintf(big + n, sizeof(big) - (size_t)n, "\r\n");
  }
  expect_status(f, big, "413 Content Too Large", 1);
  /* A chunk size that does not fit 64 bits. */
  expect_status(f,
                "POST / HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n"
                "1ffffffffffffffff\r\n",
                "400 Bad Request", 1);
  char head[4096];
  n = snprintf(head, sizeof(head), "POST / HTTP/1.1\r\nX-Pad: ");
  memset(head + n, 'a', MAX_HEAD);
  snprintf(head + n + MAX_HEAD, sizeof(head) - (size_t)n - MAX_HEAD,
           "\r\nContent-Length: 2\r\n\r\n{}");
  expect_status(f, head, "431 Request Header Fields Too Large", 1);
  /* Not ended: 431 once the limit is passed, whatever comes next. */
  head[n + MAX_HEAD] = '\0';
  expect_status(f, head, "431 Request Header Fields Too Large", 1);
}

static void test_health_and_metrics(void **state) {
  engine_fx_t *f = *state;
  char *out = run_both(&f->e, JRPC_FRAMING_HTTP,
                       "GET /health?probe=1 HTTP/1.1\r\n\r\n", NULL);
  assert_string_equal(out, "HTTP/1.1 200 OK\r\nContent-Type: application/json"
                           "\r\nContent-Length:         21\r\n\r\n"
                           "{\"status\":\"serving\"}\n");
  free(out);
  up = 0;
  out =
      run_both(&f->e, JRPC_FRAMING_HTTP, "GET /health HTTP/1.1\r\n\r\n", NULL);
  assert_non_null(strstr(out, "HTTP/1.1 503 Service Unavailable\r\n"));
  assert_non_null(strstr(out, "{\"status\":\"draining\"}\n"));
  free(out);
  out =
      run_both(&f->e, JRPC_FRAMING_HTTP, "GET /metrics HTTP/1.1\r\n\r\n", NULL);
  assert_string_equal(out, "HTTP/1.1 200 OK\r\nContent-Type: text/plain; "
                           "version=0.0.4; charset=utf-8\r\nContent-Length: "
                           "        10\r\n\r\nx_total 3\n");
  free(out);
  /* Routes turned off: the paths are JSON-RPC's like any other. */
  conn_t *c = conn_new(&f->e, JRPC_FRAMING_HTTP);
  c->h.routes = 0;
  const char *in = "GET /health HTTP/1.1\r\n\r\n";
  conn_send(c, in, strlen(in), 100);
  assert_non_null(strstr(c->out, "405 Method Not Allowed\r\n"));
  assert_non_null(strstr(c->out, "Allow: POST\r\n"));
  conn_free(c);
}

static void test_connection_close_and_http10(void **state) {
  engine_fx_t *f = *state;
  char body[] = CALL1;
  char in[512];
  int rc;
  snprintf(in, sizeof(in),
           "POST / HTTP/1.1\r\nConnection: close\r\nContent-Length: %zu\r\n"
           "\r\n%s",
           strlen(body), body);
  char *out = run_both(&f->e, JRPC_FRAMING_HTTP, in, &rc);
  assert_non_null(strstr(out, "HTTP/1.1 200 OK\r\n"));
  assert_non_null(strstr(out, "Connection: close\r\n"));
  assert_int_equal(rc, JRPC__ECLOSE);
  free(out);
  snprintf(in, sizeof(in), "POST / HTTP/1.0\r\nContent-Length: %zu\r\n\r\n%s",
           strlen(body), body);
  out = run_both(&f->e, JRPC_FRAMING_HTTP, in, &rc);
  assert_non_null(strstr(out, "Connection: close\r\n"));
  assert_int_equal(rc, JRPC__ECLOSE);
  free(out);
  snprintf(in, sizeof(in),
           "POST / HTTP/1.0\r\nConnection: keep-alive\r\nContent-Length: %zu"
           "\r\n\r\n%s",
           strlen(body), body);
  out = run_both(&f->e, JRPC_FRAMING_HTTP, in, &rc);
  assert_non_null(strstr(out, "Connection: keep-alive\r\n"));
  assert_int_equal(rc, 0);
  free(out);
}

/* HEAD: the status without a body (Content-Length 0), and the next
 * request is read as such. */
static void test_head_405_no_body(void **state) {
  engine_fx_t *f = *state;
  char *b = post(CALL1);
  char in[512];
  snprintf(in, sizeof(in), "HEAD / HTTP/1.1\r\n\r\n%s", b);
  char *out = run_both(&f->e, JRPC_FRAMING_HTTP, in, NULL);
  char want[512];
  snprintf(want, sizeof(want),
           "HTTP/1.1 405 Method Not Allowed\r\nContent-Type: application/json"
           "\r\nAllow: POST\r\nContent-Length:          0\r\n\r\n%s%s",
           OK_HEAD, REPLY1);
  assert_string_equal(out, want);
  free(out);
  free(b);
}

/* HEAD on the routes (issue 25 point 5): GET's head, its Content-Length
 * that of GET's body, and no body; the request behind it read as such. A
 * method other than GET and HEAD there is still 405, and says both. */
static void test_head_routes(void **state) {
  engine_fx_t *f = *state;
  char *b = post(CALL1);
  char in[512];
  snprintf(in, sizeof(in), "HEAD /health HTTP/1.1\r\n\r\n%s", b);
  char *out = run_both(&f->e, JRPC_FRAMING_HTTP, in, NULL);
  char want[512];
  snprintf(want, sizeof(want),
           "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\n"
           "Content-Length:         21\r\n\r\n%s%s",
           OK_HEAD, REPLY1);
  assert_string_equal(out, want);
  free(out);
  out = run_both(&f->e, JRPC_FRAMING_HTTP,
                 "HEAD /metrics HTTP/1.1\r\n\r\nGET /health HTTP/1.1\r\n\r\n",
                 NULL);
  assert_string_equal(out, "HTTP/1.1 200 OK\r\nContent-Type: text/plain; "
                           "version=0.0.4; charset=utf-8\r\nContent-Length: "
                           "        10\r\n\r\n"
                           "HTTP/1.1 200 OK\r\nContent-Type: application/json"
                           "\r\nContent-Length:         21\r\n\r\n"
                           "{\"status\":\"serving\"}\n");
  free(out);
  conn_t *c = conn_new(&f->e, JRPC_FRAMING_HTTP);
  const char *put = "PUT /health HTTP/1.1\r\nContent-Length: 0\r\n\r\n";
  conn_send(c, put, strlen(put), 100);
  assert_non_null(strstr(c->out, "405 Method Not Allowed\r\n"));
  assert_non_null(strstr(c->out, "Allow: GET, HEAD\r\n"));
  conn_free(c);
  free(b);
}

/* Connection: close on a deferred request: closed once it is answered. */
static void test_deferred_close(void **state) {
  engine_fx_t *f = *state;
  conn_t *c = conn_new(&f->e, JRPC_FRAMING_HTTP);
  const char *body = "{\"jsonrpc\":\"2.0\",\"method\":\"later\",\"id\":9}";
  char in[512];
  snprintf(in, sizeof(in),
           "POST / HTTP/1.1\r\nConnection: close\r\nContent-Length: %zu\r\n"
           "\r\n%s",
           strlen(body), body);
  conn_send(c, in, strlen(in), 1 << 20);
  assert_int_equal(c->rc, 0);
  assert_int_equal(c->s.held, 1);
  jrpc_w_u64(stashed, 1);
  jrpc_finish(stashed);
  c->rc = jrpc__http_feed(&c->s, 0, 0);
  take_output(c);
  assert_int_equal(c->rc, JRPC__ECLOSE);
  assert_int_equal(c->s.held, 0); /* nothing keeps the host from closing */
  assert_non_null(strstr(c->out, "Connection: close\r\n"));
  assert_non_null(strstr(c->out, "\"result\":1,\"id\":9}"));
  conn_free(c);
}

static void test_expect_continue(void **state) {
  engine_fx_t *f = *state;
  conn_t *c = conn_new(&f->e, JRPC_FRAMING_HTTP);
  char head[256];
  snprintf(head, sizeof(head),
           "POST / HTTP/1.1\r\nExpect: 100-continue\r\nContent-Length: %zu\r\n"
           "\r\n",
           strlen(CALL1));
  conn_send(c, head, strlen(head), 1000);
  assert_string_equal(c->out, "HTTP/1.1 100 Continue\r\n\r\n");
  conn_send(c, CALL1, strlen(CALL1), 1000);
  assert_non_null(strstr(c->out, "\r\n\r\nHTTP/1.1 200 OK\r\n"));
  conn_free(c);
}

/* A deferred reply holds the requests behind it, then goes first. */
static void test_deferred_in_order(void **state) {
  engine_fx_t *f = *state;
  conn_t *c = conn_new(&f->e, JRPC_FRAMING_HTTP);
  char *a = post("{\"jsonrpc\":\"2.0\",\"method\":\"later\",\"id\":9}");
  char *b = post(CALL1);
  char in[1024];
  snprintf(in, sizeof(in), "%s%s", a, b);
  conn_send(c, in, strlen(in), 1 << 20);
  assert_int_equal(c->out_n, 0);
  assert_non_null(stashed);
  assert_int_equal(c->s.held, 1);
  jrpc_w_u64(stashed, 42);
  jrpc_finish(stashed);
  take_output(c);
  c->rc = jrpc__http_feed(&c->s, 0, 0); /* the host feeds on */
  take_output(c);
  char want[1024];
  snprintf(want, sizeof(want),
           "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\n"
           "Content-Length:         37\r\n\r\n"
           "{\"jsonrpc\":\"2.0\",\"result\":42,\"id\":9}\n%s%s",
           OK_HEAD, REPLY1);
  assert_string_equal(c->out, want);
  assert_int_equal(c->s.held, 0);
  conn_free(c);
  /* Finished within its own dispatch: an ordinary 200. */
  char *d = post("{\"jsonrpc\":\"2.0\",\"method\":\"now\",\"id\":1}");
  char *out = run_both(&f->e, JRPC_FRAMING_HTTP, d, NULL);
  assert_string_equal(out, "HTTP/1.1 200 OK\r\nContent-Type: application/json"
                           "\r\nContent-Length:         36\r\n\r\n"
                           "{\"jsonrpc\":\"2.0\",\"result\":7,\"id\":1}\n");
  free(out);
  free(d);
  free(a);
  free(b);
}

/* A deferred notification: 204 once it is over, and not before. */
static void test_deferred_notification_204(void **state) {
  engine_fx_t *f = *state;
  conn_t *c = conn_new(&f->e, JRPC_FRAMING_HTTP);
  char *a = post("{\"jsonrpc\":\"2.0\",\"method\":\"later\"}");
  conn_send(c, a, strlen(a), 1 << 20);
  assert_int_equal(c->out_n, 0);
  assert_int_equal(c->s.held, 1);
  jrpc_finish(stashed);
  c->rc = jrpc__http_feed(&c->s, 0, 0);
  take_output(c);
  assert_string_equal(c->out, "HTTP/1.1 204 No Content\r\n\r\n");
  conn_free(c);
  free(a);
}

static void test_timeout_408(void **state) {
  engine_fx_t *f = *state;
  conn_t *c = conn_new(&f->e, JRPC_FRAMING_HTTP);
  conn_send(c, "POST / HTTP/1.1\r\nHost", 21, 100);
  assert_int_equal(c->out_n, 0);
  assert_int_equal(jrpc__http_timeout(&c->s, 500, 21), JRPC__ECLOSE);
  take_output(c);
  assert_non_null(strstr(c->out, "HTTP/1.1 408 Request Timeout\r\n"));
  assert_non_null(strstr(c->out, "Connection: close\r\n"));
  assert_non_null(strstr(c->out, "-32009"));
  conn_free(c);
}

/* The buffer holds the head and the body, not the chunk framing: 1-byte
 * chunks with extensions, of a body at the limit. */
static void test_chunked_buffer_bounded(void **state) {
  engine_fx_t *f = *state;
  size_t cap = 64 + MAX_FRAME * 40 + 1000;
  char *in = malloc(cap);
  size_t n = (size_t)sprintf(
      in, "POST / HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n");
  const char *pre = "{\"jsonrpc\":\"2.0\",\"method\":\"echo\",\"params\":[\"";
  const char *post_ = "\"],\"id\":1}";
  size_t body = MAX_FRAME;
  for (size_t i = 0; i < body; i++) {
    char ch = i < strlen(pre)             ? pre[i]
              : i >= body - strlen(post_) ? post_[i - (body - strlen(post_))]
                                          : 'a';
    n += (size_t)sprintf(in + n, "1;pad=%020zu\r\n%c\r\n", i, ch);
  }
  n += (size_t)sprintf(in + n, "0\r\n\r\n");
  conn_t *c = conn_new(&f->e, JRPC_FRAMING_HTTP);
  conn_send(c, in, n, 4096);
  assert_int_equal(c->rc, 0);
  assert_non_null(strstr(c->out, "HTTP/1.1 200 OK\r\n"));
  assert_non_null(strstr(c->out, "\"id\":1}\n"));
  /* The raw message is 30 times the body (128 KiB); the buffer stays
   * at the first pool class (64 KiB): head + body + a read. */
  assert_true(c->max_cap <= 65536);
  assert_null(c->s.buf); /* released once idle */
  conn_free(c);
  free(in);
}

static void test_content_length_framing(void **state) {
  engine_fx_t *f = *state;
  char in[1024];
  snprintf(in, sizeof(in),
           "Content-Length: %zu\r\n\r\n%s"
           "Content-Type: application/vscode-jsonrpc; charset=utf-8\r\n"
           "Content-Length: %zu\r\n\r\n%s"
           "Content-Length: %zu\r\n\r\n%s",
           strlen(CALL1), CALL1, strlen(NOTE), NOTE, strlen(CALL1), CALL1);
  char *out = run_both(&f->e, JRPC_FRAMING_CONTENT_LENGTH, in, NULL);
  char want[512];
  snprintf(want, sizeof(want),
           "Content-Length:         38\r\n\r\n%sContent-Length:         38"
           "\r\n\r\n%s",
           REPLY1, REPLY1);
  assert_string_equal(out, want);
  free(out);
  int rc;
  out = run_both(&f->e, JRPC_FRAMING_CONTENT_LENGTH,
                 "Content-Type: x\r\n\r\n{}", &rc);
  assert_int_equal(rc, JRPC__ECLOSE);
  assert_non_null(strstr(out, "-32700"));
  free(out);
  out = run_both(&f->e, JRPC_FRAMING_CONTENT_LENGTH,
                 "Content-Length: 100000\r\n\r\n", &rc);
  assert_int_equal(rc, JRPC__ECLOSE);
  assert_non_null(strstr(out, "-32001"));
  assert_true(strncmp(out, "Content-Length: ", 16) == 0);
  free(out);
  /* A deferred reply is framed too. */
  conn_t *c = conn_new(&f->e, JRPC_FRAMING_CONTENT_LENGTH);
  const char *l = "{\"jsonrpc\":\"2.0\",\"method\":\"later\",\"id\":5}";
  snprintf(in, sizeof(in), "Content-Length: %zu\r\n\r\n%s", strlen(l), l);
  conn_send(c, in, strlen(in), 7);
  assert_int_equal(c->out_n, 0);
  jrpc_w_u64(stashed, 1);
  jrpc_finish(stashed);
  take_output(c);
  assert_string_equal(c->out, "Content-Length:         36\r\n\r\n"
                              "{\"jsonrpc\":\"2.0\",\"result\":1,\"id\":5}\n");
  conn_free(c);
}

/* The statuses of out's replies, in order, as "200 415 ...". */
static void statuses(const char *out, char *dst, size_t cap) {
  size_t n = 0;
  dst[0] = '\0';
  for (const char *p = strstr(out, "HTTP/1.1 "); p && n + 4 < cap;
       p = strstr(p + 1, "HTTP/1.1 ")) {
    n += (size_t)snprintf(dst + n, cap - n, "%s%.3s", n ? " " : "", p + 9);
  }
}

/* Appends a request to in: head (its one %zu the body's length), body. */
static void append(char *in, size_t cap, const char *head, const char *body) {
  size_t n = strlen(in);
  n += (size_t)snprintf(in + n, cap - n, head, strlen(body));
  snprintf(in + n, cap - n, "%s", body);
}

#define HEAD_A(type)                                                           \
  "POST / HTTP/1.1\r\nHost: t\r\nContent-Type: " type "\r\n"                   \
  "Content-Length: %zu\r\n\r\n"
#define HEAD_B(type, extra)                                                    \
  "POST / HTTP/1.1\r\nContent-Length: %zu\r\nContent-Type: " type "\r\n" extra \
  "\r\n"

/* A head the same as the last one but for its Content-Length digits is
 * not parsed again (the memo): every other difference still counts. In
 * one read the memo serves; byte by byte every head is parsed; run_both
 * holds the two to the same output. */
/* A header folded over two lines (obs-fold) is a 400 and the end of the
 * connection, whichever header it is: folded, Content-Length and
 * Transfer-Encoding would be read here otherwise than by a proxy that
 * does not unfold. */
static void test_obs_fold_400(void **state) {
  engine_fx_t *f = *state;
  static const char *const folded[] = {
      "POST / HTTP/1.1\r\nContent-Length:\r\n 2\r\n\r\n{}",
      "POST / HTTP/1.1\r\nContent-Length:\r\n\t2\r\n\r\n{}",
      "POST / HTTP/1.1\r\nTransfer-Encoding:\r\n chunked\r\n\r\n"
      "2\r\n{}\r\n0\r\n\r\n",
      "POST / HTTP/1.1\r\nContent-Type: application/json\r\n"
      "Authorization: Bearer\r\n good\r\nContent-Length: 2\r\n\r\n{}",
      "POST / HTTP/1.1\r\nX-Any: a\r\n  b\r\nContent-Length: 2\r\n\r\n{}",
  };
  for (size_t i = 0; i < sizeof(folded) / sizeof(folded[0]); i++)
    expect_status(f, folded[i], "400 Bad Request", 1);
  /* Blanks after the colon are no fold. */
  char *out = run_both(&f->e, JRPC_FRAMING_HTTP,
                       "POST / HTTP/1.1\r\nContent-Type: application/json"
                       "\r\nContent-Length: \t "
                       "53\r\n\r\n" CALL1,
                       NULL);
  assert_non_null(strstr(out, REPLY1));
  free(out);
  /* The content-length framing's header block: -32700, closed. */
  int rc;
  out = run_both(&f->e, JRPC_FRAMING_CONTENT_LENGTH,
                 "Content-Length:\r\n 53\r\n\r\n" CALL1, &rc);
  assert_int_equal(rc, JRPC__ECLOSE);
  assert_non_null(strstr(out, "-32700"));
  assert_null(strstr(out, "\"result\""));
  free(out);
}

/* With auth, every head but /health's goes to the host's authorize with
 * its Authorization value, before anything else of the request: a
 * refusal is 401 with WWW-Authenticate: Bearer, -32006 and the host's
 * reason, and the connection closes; the memo skips no head. */
static char *run_auth(jrpc__engine_t *e, const char *in, size_t chunk,
                      int *rc) {
  conn_t *c = conn_new(e, JRPC_FRAMING_HTTP);
  jrpc__http_set_auth(&c->h, 1);
  conn_send(c, in, strlen(in), chunk);
  *rc = c->rc;
  char *out = strdup(c->out);
  conn_free(c);
  return out;
}

static char *run_auth_both(jrpc__engine_t *e, const char *in, int *rc) {
  int rc2;
  char *a = run_auth(e, in, 1 << 20, rc);
  char *b = run_auth(e, in, 1, &rc2);
  assert_string_equal(a, b);
  assert_int_equal(*rc, rc2);
  free(b);
  return a;
}

#define AUTH_POST(auth)                                                        \
  "POST / HTTP/1.1\r\nHost: t\r\n" auth "Content-Type: application/json\r\n"   \
  "Content-Length: 53\r\n\r\n" CALL1

static void test_auth(void **state) {
  engine_fx_t *f = *state;
  int rc;
  /* None: asked with no credentials; refused, closed, nothing run. */
  asked = 0;
  char *out = run_auth(&f->e, AUTH_POST(""), 1 << 20, &rc);
  assert_int_equal(asked, 1);
  assert_string_equal(asked_cred, "(none)");
  assert_true(strncmp(out, "HTTP/1.1 401 Unauthorized\r\n", 27) == 0);
  assert_non_null(strstr(out, "WWW-Authenticate: Bearer\r\n"));
  assert_non_null(strstr(out, "Connection: close\r\n"));
  assert_non_null(strstr(out, "-32006"));
  assert_non_null(strstr(out, "\"data\":\"no good\""));
  assert_null(strstr(out, "\"result\""));
  assert_int_equal(rc, JRPC__ECLOSE);
  free(out);
  /* A good one, in one read and byte by byte: the value as sent. */
  out = run_auth_both(&f->e, AUTH_POST("Authorization: Bearer good\r\n"), &rc);
  assert_string_equal(asked_cred, "Bearer good");
  assert_non_null(strstr(out, REPLY1));
  assert_int_equal(rc, 0);
  free(out);
  /* A wrong one, and two Authorization headers (asked with none). */
  out = run_auth_both(&f->e, AUTH_POST("Authorization: Bearer bad\r\n"), &rc);
  assert_string_equal(asked_cred, "Bearer bad");
  assert_non_null(strstr(out, "401 Unauthorized"));
  assert_null(strstr(out, "\"result\""));
  free(out);
  out = run_auth_both(&f->e,
                      AUTH_POST("Authorization: Bearer good\r\n"
                                "Authorization: Bearer good\r\n"),
                      &rc);
  assert_string_equal(asked_cred, "(none)");
  assert_non_null(strstr(out, "401 Unauthorized"));
  free(out);
  /* The same head twice (the memo's case): asked twice. */
  asked = 0;
  out = run_auth(&f->e,
                 AUTH_POST("Authorization: Bearer good\r\n")
                     AUTH_POST("Authorization: Bearer good\r\n"),
                 1 << 20, &rc);
  assert_int_equal(asked, 2);
  assert_non_null(strstr(strstr(out, REPLY1) + 1, REPLY1));
  free(out);
  /* /health is not asked; /metrics is, and refused without a token. */
  asked = 0;
  out = run_auth(&f->e, "GET /health HTTP/1.1\r\n\r\n", 1 << 20, &rc);
  assert_int_equal(asked, 0);
  assert_non_null(strstr(out, "200 OK"));
  free(out);
  out = run_auth(&f->e, "GET /metrics HTTP/1.1\r\n\r\n", 1 << 20, &rc);
  assert_int_equal(asked, 1);
  assert_non_null(strstr(out, "401 Unauthorized"));
  assert_null(strstr(out, "x_total"));
  free(out);
  /* Auth turned on (a reload that adds tokens_file) on a connection whose
   * memo holds a head: that head is asked about all the same. */
  conn_t *c = conn_new(&f->e, JRPC_FRAMING_HTTP);
  conn_send(c, AUTH_POST(""), strlen(AUTH_POST("")), 1 << 20);
  assert_int_not_equal(c->h.memo_len, 0);
  assert_non_null(strstr(c->out, REPLY1));
  jrpc__http_set_auth(&c->h, 1);
  asked = 0;
  conn_send(c, AUTH_POST(""), strlen(AUTH_POST("")), 1 << 20);
  assert_int_equal(asked, 1);
  assert_non_null(strstr(c->out, "401 Unauthorized"));
  assert_int_equal(c->rc, JRPC__ECLOSE);
  conn_free(c);
  /* Without auth, the header is not looked at and no one is asked. */
  asked = 0;
  out = run_both(&f->e, JRPC_FRAMING_HTTP,
                 AUTH_POST("Authorization: Bearer bad\r\n"), &rc);
  assert_int_equal(asked, 0);
  assert_non_null(strstr(out, REPLY1));
  free(out);
}

static void test_memo_same_head(void **state) {
  engine_fx_t *f = *state;
  static const char pad[] = "0123456789012345678901234567890123456789"
                            "0123456789012345678901234567890123456789";
  char big[256], in[4096] = "";
  snprintf(big, sizeof(big),
           "{\"jsonrpc\":\"2.0\",\"method\":\"echo\",\"params\":[\"%s\"],"
           "\"id\":7}",
           pad);
  const char *small = CALL1;
  /* Head A has Content-Length last, head B a header after it. */
  append(in, sizeof(in), HEAD_A("application/json"), small);
  append(in, sizeof(in), HEAD_A("application/json"), big); /* 3 digits */
  append(in, sizeof(in),
         "POST / HTTP/1.1\r\nHost: t\r\nContent-Type: application/json\r\n"
         "Content-Length: 0%zu\r\n\r\n",
         small);
  append(in, sizeof(in), HEAD_A("text/plain"), small);
  append(in, sizeof(in), HEAD_A("application/json"), big);
  append(in, sizeof(in),
         "PUT / HTTP/1.1\r\nHost: t\r\nContent-Type: application/json\r\n"
         "Content-Length: %zu\r\n\r\n",
         small);
  append(in, sizeof(in), HEAD_B("application/json", ""), big);
  append(in, sizeof(in), HEAD_B("application/jsox", ""), small);
  append(in, sizeof(in), HEAD_B("application/json", ""), small);
  append(in, sizeof(in), HEAD_B("application/json", ""), "");
  append(in, sizeof(in), HEAD_B("application/json", "Connection: close\r\n"),
         small);
  int rc;
  char *out = run_both(&f->e, JRPC_FRAMING_HTTP, in, &rc);
  char got[128];
  statuses(out, got, sizeof(got));
  assert_string_equal(got, "200 200 200 415 200 405 200 415 200 200 200");
  assert_int_equal(rc, JRPC__ECLOSE);
  /* The bodies were cut where their Content-Length said. */
  char want[512];
  snprintf(want, sizeof(want), "\"result\":[\"%s\"],\"id\":7}", pad);
  const char *at = strstr(out, want);
  assert_non_null(at);
  assert_non_null(strstr(at + 1, want));
  assert_non_null(strstr(out, "-32700")); /* the empty body */
  free(out);
  /* And the memo is what served the one read. */
  conn_t *c = conn_new(&f->e, JRPC_FRAMING_HTTP);
  in[0] = '\0';
  append(in, sizeof(in), HEAD_A("application/json"), small);
  conn_send(c, in, strlen(in), 1 << 20);
  assert_int_equal(c->h.memo_len, strlen(in) - strlen(small));
  assert_int_equal(c->h.memo_hits, 0);
  conn_send(c, in, strlen(in), 1 << 20);
  assert_int_equal(c->s.nframes, 2);
  assert_int_equal(c->h.memo_hits, 1);
  conn_free(c);
}

/* Each test on a fresh engine. */
#define FX_TEST(fn)                                                            \
  cmocka_unit_test_setup_teardown(fn, setup, engine_fx_teardown)

int main(void) {
  const struct CMUnitTest tests[] = {
      FX_TEST(test_call_200),
      FX_TEST(test_jsonrpc_error_is_200),
      FX_TEST(test_notification_204),
      FX_TEST(test_pipelined_in_order),
      FX_TEST(test_error_statuses),
      FX_TEST(test_health_and_metrics),
      FX_TEST(test_connection_close_and_http10),
      FX_TEST(test_expect_continue),
      FX_TEST(test_head_405_no_body),
      FX_TEST(test_head_routes),
      FX_TEST(test_deferred_close),
      FX_TEST(test_deferred_in_order),
      FX_TEST(test_deferred_notification_204),
      FX_TEST(test_timeout_408),
      FX_TEST(test_chunked_buffer_bounded),
      FX_TEST(test_memo_same_head),
      FX_TEST(test_obs_fold_400),
      FX_TEST(test_auth),
      FX_TEST(test_content_length_framing),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
