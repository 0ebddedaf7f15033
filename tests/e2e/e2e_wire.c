/* e2e_wire.c - the real daemon over real sockets: both framings on both
 * transports, requests and replies split at odd points, oversized frames,
 * bad and empty length prefixes, deferred calls in batches. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "e2e.h"
#include "testutil.h"

/* ---- 1. both framings on both transports ---- */

static void basics_on(e2e_daemon_t *d, e2e_ep_t ep) {
  e2e_conn_t *c = e2e_connect(d, ep);

  e2e_send(c, REQ("math.add", "[1,2]", "1"));
  e2e_expect(c, RES("3", "1"));

  /* Notifications are run and never answered, even failing ones: the next
   * reply is the next call's. */
  e2e_send(c, NOTE("math.add", "[1,2]"));
  e2e_send(c, NOTE("math.divide", "[1,0]"));
  e2e_send(c, NOTE("no.such.method", "[]"));
  e2e_send(c, REQ("math.divide", "{\"a\":1,\"b\":4}", "\"q\""));
  e2e_expect(c, RES("0.25", "\"q\""));

  /* A batch: one array, in request order, notifications left out. */
  e2e_send(c,
           "[" REQ("math.add", "[1,2]", "\"a\"") "," REQ(
               "echo", "{\"x\":[1,\"two\",null],\"y\":\"\\u00e9\\n\"}",
               "\"b\"") "," NOTE("math.add", "[5,5]") "," REQ("no.such", "[]",
                                                              "3") ",1]");
  e2e_expect(c, "[" RES("3", "\"a\"") "," RES(
                    "{\"x\":[1,\"two\",null],\"y\":\"\\u00e9\\n\"}",
                    "\"b\"") "," ERR("-32601", "Method not found",
                                     "3") "," ERR("-32600", "Invalid Request",
                                                  "null") "]");

  /* A batch of notifications: no output at all. */
  e2e_send(c, "[" NOTE("math.add", "[1,1]") "," NOTE("echo", "[]") "]");

  /* Invalid JSON: one -32700 with id null, and the connection goes on. */
  e2e_send(c, "{\"jsonrpc\":\"2.0\",\"method\":\"math.add\",\"params\":[1,2]"
              ",\"id\":4");
  e2e_expect(c, ERR("-32700", "Parse error", "null"));
  e2e_send(c, "[1,2");
  e2e_expect(c, ERR("-32700", "Parse error", "null"));
  e2e_send(c, "{}");
  e2e_expect(c, ERR("-32600", "Invalid Request", "null"));

  e2e_send(c, REQ("math.multiply", "[6,7]", "1e3"));
  e2e_expect(c, RES("42", "1e3"));

  /* Half-close: the last request is still answered, then the daemon
   * closes. On newline framing the last line needs no '\n' at EOF. */
  static const char last[] = REQ("math.subtract", "[10,4]", "5");
  if (c->framing == E2E_NEWLINE)
    e2e_send_raw(c, last, sizeof(last) - 1);
  else
    e2e_send(c, last);
  assert_int_equal(shutdown(c->fd, SHUT_WR), 0);
  e2e_expect(c, RES("6", "5"));
  e2e_expect_eof(c, E2E_REPLY_MS, 0);
  e2e_close(c);
}

static void test_framings_and_transports(void **state) {
  e2e_daemon_t *d = *state;
  e2e_start(d, NULL);
  for (e2e_ep_t ep = 0; ep < E2E_NEP; ep++)
    basics_on(d, ep);
  e2e_stop(d);
}

/* ---- 4. requests split at odd points, replies read a byte at a time ---- */

static const char *const split_reqs[] = {
    REQ("math.add", "[1,2]", "1"),
    NOTE("math.add", "[3,4]"),
    REQ("echo", "[\"a\\\"b\\\\c\\u0001\",{\"k\":[]},-0.5e-3]", "\"two\""),
    "[" REQ("math.multiply", "[3,3]", "3") "," REQ("math.add", "[1]", "4") "]",
    "{\"jsonrpc\":\"2.0\",\"method\":",
    REQ("echo", "\"not structured\"", "5"),
    REQ("math.subtract", "{\"a\":1.5,\"b\":0.25}", "6"),
};
static const char *const split_replies[] = {
    RES("3", "1"),
    RES("[\"a\\\"b\\\\c\\u0001\",{\"k\":[]},-0.5e-3]", "\"two\""),
    "[" RES("9", "3") "," ERRD("-32602", "Invalid params",
                               "{\"param\":\"b\",\"reason\":\"missing\"}",
                               "4") "]",
    ERR("-32700", "Parse error", "null"),
    ERR("-32600", "Invalid Request", "5"),
    RES("1.25", "6"),
};

static void split_on(e2e_daemon_t *d, e2e_ep_t ep) {
  e2e_conn_t *c = e2e_connect(d, ep);
  c->rchunk = 1; /* every reply is read one byte per recv() */
  size_t nreq = sizeof(split_reqs) / sizeof(split_reqs[0]);
  for (size_t i = 0; i < nreq; i++)
    e2e_queue(c, split_reqs[i], strlen(split_reqs[i]));
  if (c->framing == E2E_NEWLINE) /* CRLF and blank lines are tolerated */
    e2e_queue(c, "\r\n \t\r", 4);
  /* The first two requests a byte per send(), with pauses so that the
   * daemon sees partial frames (and, on length framing, partial length
   * prefixes); the rest in chunks of odd sizes. */
  size_t first = strlen(split_reqs[0]) + strlen(split_reqs[1]) +
                 (c->framing == E2E_LENGTH ? 8 : 2);
  size_t at = 0;
  for (; at < first; at++) {
    e2e_send_raw(c, c->out + at, 1);
    if (at % 16 == 0)
      e2e_sleep_ms(1);
  }
  static const size_t chunks[] = {7, 1, 13, 2, 31, 3, 64, 5, 1, 127};
  for (size_t k = 0; at < c->out_len; k++) {
    size_t n = chunks[k % (sizeof(chunks) / sizeof(chunks[0]))];
    if (n > c->out_len - at)
      n = c->out_len - at;
    e2e_send_raw(c, c->out + at, n);
    at += n;
    if (k % 3 == 0)
      e2e_sleep_ms(1);
  }
  c->out_len = c->out_off = 0;
  for (size_t i = 0; i < sizeof(split_replies) / sizeof(split_replies[0]); i++)
    e2e_expect(c, split_replies[i]);
  /* Nothing else came: the next reply is this one's. */
  e2e_send(c, REQ("math.add", "[20,22]", "7"));
  e2e_expect(c, RES("42", "7"));
  e2e_close(c);
}

static void test_split_requests_and_replies(void **state) {
  e2e_daemon_t *d = *state;
  e2e_start(d, NULL);
  for (e2e_ep_t ep = 0; ep < E2E_NEP; ep++)
    split_on(d, ep);
  e2e_stop(d);
}

/* ---- 7. oversized frames ---- */

/* An echo request of exactly n bytes (n >= 64). */
static char *sized_request(size_t n, int id) {
  char head[64];
  int h = snprintf(head, sizeof(head),
                   "{\"jsonrpc\":\"2.0\",\"id\":%d,\"method\":\"echo\","
                   "\"params\":[\"",
                   id);
  static const char tail[] = "\"]}";
  assert_true(n >= (size_t)h + sizeof(tail) - 1);
  char *p = e2e_calloc(n + 1, 1);
  memcpy(p, head, (size_t)h);
  memset(p + h, 'x', n - (size_t)h - (sizeof(tail) - 1));
  memcpy(p + n - (sizeof(tail) - 1), tail, sizeof(tail));
  return p;
}

static void expect_too_large(e2e_conn_t *c, unsigned long long limit,
                             unsigned long long got) {
  char want[256];
  snprintf(want, sizeof(want),
           ERRD("-32001", "Frame too large", "{\"limit\":%llu,\"got\":%llu}",
                "null"),
           limit, got);
  e2e_expect(c, want);
}

static void oversized_newline(e2e_daemon_t *d, e2e_ep_t ep) {
  e2e_conn_t *c = e2e_connect(d, ep);
  char *big = sized_request(5000, 1);
  e2e_send(c, big);
  expect_too_large(c, 1024, 5000);
  /* The stream goes on with the next line. */
  e2e_send(c, REQ("math.add", "[1,2]", "2"));
  e2e_expect(c, RES("3", "2"));

  /* At the limit: served. One byte over: refused. CR before LF is not
   * part of the frame. */
  char *exact = sized_request(1024, 3);
  e2e_send(c, exact);
  const char *params = strstr(exact, "\"params\":") + 9;
  char want[1200];
  snprintf(want, sizeof(want), "{\"jsonrpc\":\"2.0\",\"result\":%.*s,\"id\":3}",
           (int)(strlen(params) - 1), params);
  e2e_expect(c, want);
  char *over = sized_request(1025, 4);
  e2e_send(c, over);
  expect_too_large(c, 1024, 1025);
  e2e_send_raw(c, big, strlen(big));
  e2e_send_raw(c, "\r\n", 2);
  expect_too_large(c, 1024, 5000);

  /* Far bigger than one read: skipped as it arrives. */
  char *huge = sized_request(300000, 5);
  e2e_send(c, huge);
  expect_too_large(c, 1024, 300000);
  e2e_send(c, REQ("math.add", "[2,2]", "6"));
  e2e_expect(c, RES("4", "6"));
  e2e_free(huge);
  e2e_free(over);
  e2e_free(exact);
  e2e_free(big);
  e2e_close(c);
}

static void oversized_length(e2e_daemon_t *d, e2e_ep_t ep, int with_payload) {
  e2e_conn_t *c = e2e_connect(d, ep);
  e2e_send(c, REQ("math.add", "[1,2]", "1"));
  e2e_expect(c, RES("3", "1"));
  char *big = sized_request(5000, 2);
  if (with_payload) {
    e2e_send(c, big);
  } else {
    static const unsigned char hdr[4] = {0, 0, 0x13, 0x88}; /* 5000 */
    e2e_send_raw(c, hdr, 4);
  }
  expect_too_large(c, 1024, 5000);
  /* Framing is lost: the daemon closes after the reply. Unread payload
   * bytes may make the close a reset. */
  e2e_expect_eof(c, E2E_REPLY_MS, with_payload);
  e2e_free(big);
  e2e_close(c);
}

static void test_oversized_frames(void **state) {
  e2e_daemon_t *d = *state;
  e2e_opts_t o = {.server = "max_frame_bytes = 1024\n"};
  e2e_start(d, &o);
  oversized_newline(d, E2E_UNIX_NL);
  oversized_newline(d, E2E_TCP_NL);
  oversized_length(d, E2E_UNIX_LEN, 0);
  oversized_length(d, E2E_TCP_LEN, 0);
  oversized_length(d, E2E_UNIX_LEN, 1);
  oversized_length(d, E2E_TCP_LEN, 1);
  /* The daemon goes on serving others. */
  e2e_conn_t *c = e2e_connect(d, E2E_TCP_LEN);
  e2e_send(c, REQ("math.add", "[1,1]", "9"));
  e2e_expect(c, RES("2", "9"));
  e2e_close(c);
  e2e_stop(d);
}

/* ---- 8. a bad length prefix, a zero-length frame ---- */

static void test_bad_and_empty_length_prefix(void **state) {
  e2e_daemon_t *d = *state;
  e2e_start(d, NULL);
  for (e2e_ep_t ep = E2E_UNIX_LEN; ep <= E2E_TCP_LEN; ep += 2) {
    e2e_conn_t *c = e2e_connect(d, ep);
    /* A zero-length payload is an empty JSON text: -32700 (lib/frame.c
     * hands it on as a frame; docs/protocol.md: "A zero-length payload is
     * invalid JSON"), and the stream goes on. */
    static const unsigned char zero[8] = {0};
    e2e_send_raw(c, zero, 4);
    e2e_expect(c, ERR("-32700", "Parse error", "null"));
    e2e_send_raw(c, zero, 8);
    e2e_send(c, REQ("math.add", "[1,2]", "1"));
    e2e_expect(c, ERR("-32700", "Parse error", "null"));
    e2e_expect(c, ERR("-32700", "Parse error", "null"));
    e2e_expect(c, RES("3", "1"));

    static const unsigned char bad[4] = {0xff, 0xff, 0xff, 0xff};
    e2e_send_raw(c, bad, 4);
    expect_too_large(c, 1048576, 4294967295ull);
    e2e_expect_eof(c, E2E_REPLY_MS, 0);
    e2e_close(c);
  }
  e2e_conn_t *c = e2e_connect(d, E2E_UNIX_NL);
  e2e_send(c, REQ("math.add", "[1,1]", "2"));
  e2e_expect(c, RES("2", "2"));
  e2e_close(c);
  e2e_stop(d);
}

/* ---- 13. deferred calls in batches ---- */

#define DEFERRED_BATCH                                                         \
  "[" REQ("sleep.ms", "[100]", "1") "," REQ("math.add", "[1,2]", "2") "," REQ( \
      "sleep.work_ms", "{\"ms\":50}", "3") "]"

/* Each element of the array `got` equals exactly one of want[], and every
 * one of want[] is there (the specification lets a server order a batch's
 * responses as it likes). */
static void assert_batch_set(const char *got, size_t n, const char *const *want,
                             size_t nwant) {
  tu_json_t *j = tu_json_parse(got, n);
  if (!j || j->type != TU_J_ARRAY || j->nkids != nwant) {
    fprintf(stderr, "batch reply: %.*s\n", (int)n, got);
    tu_json_free(j);
    fail_msg("not an array of %zu responses", nwant);
  }
  for (size_t i = 0; i < nwant; i++) {
    tu_json_t *w = tu_json_parse(want[i], strlen(want[i]));
    size_t hits = 0;
    for (size_t k = 0; w && k < nwant; k++)
      hits += (size_t)tu_json_node_equal(j->kids[k], w);
    tu_json_free(w);
    if (hits != 1) {
      fprintf(stderr, "batch reply: %.*s\nexpected once: %s\n", (int)n, got,
              want[i]);
      tu_json_free(j);
      fail_msg("a response is missing or repeated");
    }
  }
  tu_json_free(j);
}

static void test_deferred_calls_in_batch(void **state) {
  e2e_daemon_t *d = *state;
  e2e_start(d, NULL);
  for (e2e_ep_t ep = 0; ep < E2E_NEP; ep++) {
    e2e_conn_t *c = e2e_connect(d, ep);
    /* All three answers in one array, whatever order they finish in. */
    e2e_send(c, DEFERRED_BATCH);
    const char *p;
    size_t n;
    assert_int_equal(e2e_recv(c, &p, &n, E2E_REPLY_MS), 1);
    static const char *const want[] = {RES("100", "1"), RES("3", "2"),
                                       RES("50", "3")};
    assert_batch_set(p, n, want, 3);

    /* A batch whose only call is deferred. */
    e2e_send(c, "[" REQ("sleep.ms", "[10]", "\"only\"") "]");
    e2e_expect(c, "[" RES("10", "\"only\"") "]");
    /* Deferred notifications are left out; the array has the rest. */
    e2e_send(c, "[" NOTE("sleep.ms", "[5]") "," REQ("math.add", "[2,3]",
                                                    "\"s\"") "]");
    e2e_expect(c, "[" RES("5", "\"s\"") "]");
    /* Only deferred notifications: no output at all. */
    e2e_send(c,
             "[" NOTE("sleep.ms", "[5]") "," NOTE("sleep.work_ms", "[5]") "]");
    /* Bad params of a deferring method are answered at once. */
    e2e_send(c, "[" REQ("sleep.ms", "[-1]", "7") "," REQ("sleep.ms", "[1]",
                                                         "8") "]");
    const char *q;
    size_t qn;
    assert_int_equal(e2e_recv(c, &q, &qn, E2E_REPLY_MS), 1);
    static const char *const want2[] = {
        ERRD("-32602", "Invalid params",
             "{\"param\":\"ms\",\"reason\":\"must be an integer from 0 to "
             "60000\"}",
             "7"),
        RES("1", "8")};
    assert_batch_set(q, qn, want2, 2);
    e2e_send(c, REQ("math.add", "[0,0]", "9"));
    e2e_expect(c, RES("0", "9"));
    /* Half-closed with deferred calls still running: answered, then
     * closed. */
    e2e_send(c, "[" REQ("sleep.ms", "[30]", "10") "]");
    e2e_send(c, REQ("sleep.work_ms", "[20]", "11"));
    assert_int_equal(shutdown(c->fd, SHUT_WR), 0);
    int got10 = 0, got11 = 0;
    for (int k = 0; k < 2; k++) {
      assert_int_equal(e2e_recv(c, &p, &n, E2E_REPLY_MS), 1);
      if (!got10 && e2e_is(p, n, "[" RES("30", "10") "]"))
        got10 = 1;
      else if (!got11 && e2e_is(p, n, RES("20", "11")))
        got11 = 1;
      else
        fail_msg("unexpected reply after a half-close: %s", p);
    }
    e2e_expect_eof(c, E2E_REPLY_MS, 0);
    e2e_close(c);
  }
  e2e_stop(d);
}

/* docs/protocol.md, "JSON-RPC": a batch with deferred calls gets the immediate
 * replies first, then the deferred ones in the order they finished. */
static void test_deferred_batch_order(void **state) {
  e2e_daemon_t *d = *state;
  e2e_start(d, NULL);
  e2e_conn_t *c = e2e_connect(d, E2E_UNIX_NL);
  /* The thread-pool call must finish first: 50 ms against 1 s leaves room
   * for a loaded machine (100 ms once did not, under ASan). */
  e2e_send(c, "[" REQ("sleep.ms", "[1000]", "1") "," REQ(
                  "math.add", "[1,2]", "2") "," REQ("sleep.work_ms",
                                                    "{\"ms\":50}", "3") "]");
  e2e_expect(c, "[" RES("3", "2") "," RES("50", "3") "," RES("1000", "1") "]");
  e2e_close(c);
  e2e_stop(d);
}

/* max_pending_calls: with that many deferred calls unfinished, further
 * frames of the connection wait unparsed until half of them are done. */
static void test_max_pending_calls(void **state) {
  e2e_daemon_t *d = *state;
  e2e_opts_t o = {.server = "max_pending_calls = 4\n"};
  e2e_start(d, &o);
  for (e2e_ep_t ep = 0; ep < E2E_NEP; ep += 3) {
    e2e_conn_t *c = e2e_connect(d, ep);
    for (int i = 1; i <= 10; i++)
      e2e_queuef(c, REQ("sleep.ms", "[50]", "%d"), i);
    static const char last[] = REQ("math.add", "[1,2]", "11");
    e2e_queue(c, last, sizeof(last) - 1);
    e2e_flush(c);
    /* The call after the ten is parsed only once at most three of them
     * are unfinished: at least seven replies come before its own. */
    int before = 0, seen[12] = {0};
    for (int k = 0; k < 11; k++) {
      const char *p;
      size_t n;
      if (e2e_recv(c, &p, &n, E2E_REPLY_MS) != 1)
        fail_msg("%d of 11 replies", k);
      char want[64];
      const char *idp = strstr(p, "\"id\":");
      assert_non_null(idp);
      int id = (int)strtol(idp + 5, NULL, 10);
      assert_true(id >= 1 && id <= 11 && !seen[id]);
      seen[id] = 1;
      snprintf(want, sizeof(want), id == 11 ? RES("3", "%d") : RES("50", "%d"),
               id);
      assert_true(e2e_same(p, n, want));
      if (id == 11) {
        before = k;
        if (before < 7)
          fail_msg("the 11th call was answered after only %d of the ten "
                   "deferred ones (max_pending_calls = 4)",
                   before);
      }
    }
    e2e_close(c);
  }
  e2e_stop(d);
}

/* max_batch and max_response_bytes as the config sets them (jrpcd.conf(5),
 * [server]): both are far below their defaults here, so a daemon that kept
 * the defaults answers these calls instead of refusing them. */
static void test_configured_limits(void **state) {
  e2e_daemon_t *d = *state;
  e2e_opts_t o = {.server = "max_batch = 3\nmax_response_bytes = 100\n"};
  e2e_start(d, &o);
  for (e2e_ep_t ep = 0; ep < E2E_NEP; ep += 3) {
    e2e_conn_t *c = e2e_connect(d, ep);
    /* At the limit: served. */
    e2e_send(
        c, "[" REQ("math.add", "[1,1]", "1") "," REQ(
               "math.add", "[2,2]", "2") "," REQ("math.add", "[3,3]", "3") "]");
    e2e_expect(c, "[" RES("2", "1") "," RES("4", "2") "," RES("6", "3") "]");
    /* One more: -32002 with the configured limit, and the stream goes on. */
    e2e_send(c, "[" REQ("math.add", "[1,1]", "1") "," REQ(
                    "math.add", "[2,2]", "2") "," REQ("math.add", "[3,3]",
                                                      "3") "," NOTE("echo",
                                                                    "[]") "]");
    e2e_expect(c, ERRD("-32002", "Batch too large", "{\"limit\":3,\"got\":4}",
                       "null"));
    /* The limit counts the reply from its start, 26 bytes of
     * {"jsonrpc":"2.0","result": before the result (as test_async's
     * test_too_large): a result of 74 bytes (["" and 70 x) is sent, one of
     * 75 is not. */
    char req[256], want[256], x[128];
    memset(x, 'x', 71);
    x[70] = '\0';
    snprintf(req, sizeof(req), REQ("echo", "[\"%s\"]", "4"), x);
    snprintf(want, sizeof(want), RES("[\"%s\"]", "4"), x);
    e2e_send(c, req);
    e2e_expect(c, want);
    x[70] = 'x';
    x[71] = '\0';
    snprintf(req, sizeof(req), REQ("echo", "[\"%s\"]", "5"), x);
    e2e_send(c, req);
    e2e_expect(c, ERRD("-32003", "Response too large",
                       "{\"limit\":100,\"got\":101}", "5"));
    e2e_send(c, REQ("math.add", "[1,2]", "6"));
    e2e_expect(c, RES("3", "6"));
    e2e_close(c);
  }
  e2e_stop(d);
}

/* ---- the asynchronous API's edge cases, through a fixture plugin ---- */

static void test_async_edge_cases(void **state) {
  e2e_daemon_t *d = *state;
  char plugins[1024];
  snprintf(plugins, sizeof(plugins), "%s[plugin fx]\npath = %s/fx_async.so\n",
           e2e_plugins_default, JRPC_FIXTURE_DIR);
  e2e_opts_t o = {.plugins = plugins};
  e2e_start(d, &o);
  for (e2e_ep_t ep = 0; ep < E2E_NEP; ep++) {
    e2e_conn_t *c = e2e_connect(d, ep);
    e2e_send(c, REQ("fx.post_self", "[]", "1"));
    e2e_expect(c, RES("true", "1"));
    e2e_send(c, REQ("fx.defer_error", "[]", "2"));
    e2e_expect(c, ERRD("-32000", "deferred failure", "\"late\"", "2"));
    e2e_send(c, REQ("fx.defer_finish_now", "[]", "3"));
    e2e_expect(c, RES("\"now\"", "3"));
    e2e_send(c, REQ("fx.async_no_defer", "[]", "4"));
    e2e_expect(c, ERRD("-32000", "Handler failed",
                       "\"returned JRPC_ASYNC without jrpc_defer\"", "4"));
    e2e_send(c, NOTE("fx.defer_finish_now", "[]"));
    e2e_send(c, "[" REQ("fx.defer_finish_now", "[]",
                        "5") "," REQ("math.add", "[1,1]", "6") "]");
    const char *p;
    size_t n;
    assert_int_equal(e2e_recv(c, &p, &n, E2E_REPLY_MS), 1);
    static const char *const want[] = {RES("\"now\"", "5"), RES("2", "6")};
    assert_batch_set(p, n, want, 2);
    /* Finished during the frame, the last one before a half-close. */
    static const char last[] = REQ("fx.defer_finish_now", "[]", "7");
    if (c->framing == E2E_NEWLINE)
      e2e_send_raw(c, last, sizeof(last) - 1);
    else
      e2e_send(c, last);
    assert_int_equal(shutdown(c->fd, SHUT_WR), 0);
    e2e_expect(c, RES("\"now\"", "7"));
    e2e_expect_eof(c, E2E_REPLY_MS, 0);
    e2e_close(c);
  }
  e2e_stop(d);
}

/* The early-reply tests' one write: 32 quick calls, one that blocks the
 * worker until `flag` exists (id 33), then 3 more. */
static void queue_blocked_run(e2e_conn_t *c, const char *flag) {
  for (int i = 1; i <= 32; i++)
    e2e_queuef(c, REQ("math.add", "[%d,1]", "%d"), i, i);
  e2e_queuef(c, REQ("late.block_until", "[\"%s\"]", "33"), flag);
  for (int i = 34; i <= 36; i++)
    e2e_queuef(c, REQ("math.add", "[%d,1]", "%d"), i, i);
  e2e_flush(c);
}

/* Its replies from id `from` on, in order. */
static void expect_blocked_run(e2e_conn_t *c, int from) {
  char want[64];
  for (int i = from; i <= 36; i++) {
    if (i == 33) {
      e2e_expect(c, RES("true", "33"));
      continue;
    }
    snprintf(want, sizeof(want), RES("%d", "%d"), i + 1, i);
    e2e_expect(c, want);
  }
}

static void create_file(const char *path) {
  FILE *f = fopen(path, "w");
  assert_non_null(f);
  fclose(f);
}

/* early_reply_frames: replies of a long read go out every N frames, not
 * only at its end. 32 quick calls, then one that blocks the worker until
 * the test creates a file, then 3 more, all in one write: with the default
 * (32) the first 32 replies arrive while the worker is blocked; with 0
 * none does until it is released. The blocking call gives up after 10 s,
 * past the 5 s this waits, so a daemon that holds replies back fails. */
static void early_replies(e2e_daemon_t *d, const char *server, int early) {
  char plugins[1024];
  snprintf(plugins, sizeof(plugins), "%s[plugin late]\npath = %s/%s\n",
           e2e_plugins_default, E2E_PLUGIN_DIR, "e2e_fx_late.so");
  e2e_opts_t o = {.workers = 1, .server = server, .plugins = plugins};
  e2e_start(d, &o);
  char flag[160];
  snprintf(flag, sizeof(flag), "%s/release", d->dir);
  e2e_conn_t *c = e2e_connect(d, E2E_UNIX_NL);
  queue_blocked_run(c, flag);
  const char *p;
  size_t n;
  char want[64];
  if (early) {
    for (int i = 1; i <= 32; i++) {
      if (e2e_recv(c, &p, &n, 5000) != 1)
        fail_msg("reply %d did not come while the worker was blocked", i);
      snprintf(want, sizeof(want), RES("%d", "%d"), i + 1, i);
      assert_true(e2e_same(p, n, want));
    }
  } else {
    assert_int_equal(e2e_recv(c, &p, &n, 300), -1); /* nothing yet */
  }
  create_file(flag);
  expect_blocked_run(c, early ? 33 : 1);
  e2e_close(c);
  e2e_stop(d);
}

static void test_early_replies(void **state) {
  early_replies(*state, NULL, 1);
}

static void test_early_replies_off(void **state) {
  early_replies(*state, "early_reply_frames = 0\n", 0);
}

/* Early replies are for a client that has its worker to itself. Here the
 * worker is held by a blocking call on a third connection while b (one
 * call) and then a (32 quick calls, a blocking one, 3 more) arrive; once
 * released, one poll brings both, b's read before a's in the same
 * millisecond, so a's replies wait for the end of its read: none of them
 * comes while its own blocking call holds the worker. */
static void test_early_replies_not_when_turns(void **state) {
  e2e_daemon_t *d = *state;
  char plugins[1024];
  snprintf(plugins, sizeof(plugins), "%s[plugin late]\npath = %s/%s\n",
           e2e_plugins_default, E2E_PLUGIN_DIR, "e2e_fx_late.so");
  e2e_opts_t o = {.workers = 1, .plugins = plugins};
  e2e_start(d, &o);
  char hold[160], release[160];
  snprintf(hold, sizeof(hold), "%s/hold", d->dir);
  snprintf(release, sizeof(release), "%s/release", d->dir);
  e2e_conn_t *x = e2e_connect(d, E2E_UNIX_NL);
  e2e_conn_t *a = e2e_connect(d, E2E_UNIX_NL);
  e2e_conn_t *b = e2e_connect(d, E2E_UNIX_NL);
  /* One call each first, so the worker has accepted a and b before x holds
   * it: accepted after, they would be watched in the order accepted, a's
   * data read before b's and a in a loop millisecond of its own. */
  e2e_conn_t *all[] = {x, a, b};
  for (int i = 0; i < 3; i++) {
    e2e_queuef(all[i], REQ("math.add", "[1,1]", "0"));
    e2e_flush(all[i]);
    e2e_expect(all[i], RES("2", "0"));
  }
  e2e_queuef(x, REQ("late.block_until", "[\"%s\"]", "1"), hold);
  e2e_flush(x);
  usleep(100 * 1000); /* x's call holds the worker */
  e2e_queuef(b, REQ("math.add", "[1,1]", "1"));
  e2e_flush(b);
  queue_blocked_run(a, release);
  create_file(hold);
  e2e_expect(x, RES("true", "1"));
  e2e_expect(b, RES("2", "1"));
  const char *p;
  size_t n;
  assert_int_equal(e2e_recv(a, &p, &n, 300), -1); /* nothing yet */
  create_file(release);
  expect_blocked_run(a, 1);
  e2e_close(a);
  e2e_close(b);
  e2e_close(x);
  e2e_stop(d);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test_setup_teardown(test_framings_and_transports, e2e_setup,
                                      e2e_teardown),
      cmocka_unit_test_setup_teardown(test_split_requests_and_replies,
                                      e2e_setup, e2e_teardown),
      cmocka_unit_test_setup_teardown(test_oversized_frames, e2e_setup,
                                      e2e_teardown),
      cmocka_unit_test_setup_teardown(test_bad_and_empty_length_prefix,
                                      e2e_setup, e2e_teardown),
      cmocka_unit_test_setup_teardown(test_deferred_calls_in_batch, e2e_setup,
                                      e2e_teardown),
      cmocka_unit_test_setup_teardown(test_deferred_batch_order, e2e_setup,
                                      e2e_teardown),
      cmocka_unit_test_setup_teardown(test_max_pending_calls, e2e_setup,
                                      e2e_teardown),
      cmocka_unit_test_setup_teardown(test_configured_limits, e2e_setup,
                                      e2e_teardown),
      cmocka_unit_test_setup_teardown(test_async_edge_cases, e2e_setup,
                                      e2e_teardown),
      cmocka_unit_test_setup_teardown(test_early_replies, e2e_setup,
                                      e2e_teardown),
      cmocka_unit_test_setup_teardown(test_early_replies_off, e2e_setup,
                                      e2e_teardown),
      cmocka_unit_test_setup_teardown(test_early_replies_not_when_turns,
                                      e2e_setup, e2e_teardown),
  };
  return cmocka_run_group_tests_name("e2e_wire", tests, NULL, NULL);
}
