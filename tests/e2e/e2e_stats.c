/* e2e_stats.c - the built-in rpc.stats method against a real daemon: its
 * counters agree exactly with the traffic a client sent (calls, errors per
 * kind, bytes both ways, per method), it is "Method not found" where
 * stats is off (tcp by default), sums over workers agree with the
 * connections made, and per-method counters restart with a reload. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "e2e.h"

#define STATS_REQ(id)                                                          \
  "{\"jsonrpc\":\"2.0\",\"method\":\"rpc.stats\",\"id\":" id "}"

/* The unsigned number after "key": in the object that starts at `scope`
 * (a unique text such as "\"worker\":1," or "\"math.add\":{"). */
static uint64_t stat_of(const char *json, const char *scope, const char *key) {
  return (uint64_t)e2e_num_after(json, scope, key);
}

/* Sends a request, takes its reply; counts the bytes of both as framed on
 * a newline connection. */
static void call(e2e_conn_t *c, const char *req, const char *want, uint64_t *in,
                 uint64_t *out) {
  e2e_send(c, req);
  *in += strlen(req) + 1;
  const char *p;
  size_t n;
  assert_int_equal(e2e_recv(c, &p, &n, E2E_REPLY_MS), 1);
  if (want && !e2e_same(p, n, want))
    fail();
  *out += n + 1;
}

static char *fetch_stats(e2e_conn_t *c) {
  char *s = e2e_call_copy(c, STATS_REQ("99"));
  static const char head[] = "{\"jsonrpc\":\"2.0\",\"result\":{";
  if (strncmp(s, head, sizeof(head) - 1) != 0)
    fail_msg("not a stats result: %s", s);
  return s;
}

static void test_counts_match_traffic(void **state) {
  e2e_daemon_t *d = *state;
  e2e_opts_t o = {.workers = 1};
  e2e_start(d, &o);
  e2e_conn_t *c = e2e_connect(d, E2E_UNIX_NL);
  uint64_t in = 0, out = 0;
  call(c, REQ("math.add", "[1,2]", "1"), RES("3", "1"), &in, &out);
  call(c, REQ("math.add", "[2,3]", "2"), RES("5", "2"), &in, &out);
  call(c, REQ("math.divide", "[1,0]", "3"), NULL, &in, &out);
  call(c, REQ("no.such", "[]", "4"), ERR("-32601", "Method not found", "4"),
       &in, &out);
  call(c, "{bad json", ERR("-32700", "Parse error", "null"), &in, &out);
  /* A notification: counted as a call, never answered. */
  e2e_send(c, NOTE("math.add", "[1,1]"));
  in += strlen(NOTE("math.add", "[1,1]")) + 1;
  call(c,
       "[" REQ("math.add", "[1,1]", "5") "," REQ("math.subtract", "[3,1]",
                                                 "6") "]",
       "[" RES("2", "5") "," RES("2", "6") "]", &in, &out);
  char *s = fetch_stats(c);
  in += strlen(STATS_REQ("99")) + 1; /* read before it is answered */

  assert_int_equal(stat_of(s, "\"result\":{", "generation"), 1);
  assert_int_equal(stat_of(s, "\"result\":{", "connections"), 1);
  const char *w0 = "\"worker\":0,";
  assert_int_equal(stat_of(s, w0, "connections"), 1);
  assert_int_equal(stat_of(s, w0, "accepted"), 1);
  /* 2 adds, divide, no.such, notification, 2 in the batch, rpc.stats */
  assert_int_equal(stat_of(s, w0, "calls"), 8);
  /* division by zero, unknown method, parse error */
  assert_int_equal(stat_of(s, w0, "errors"), 3);
  assert_int_equal(stat_of(s, w0, "bytes_in"), in);
  assert_int_equal(stat_of(s, w0, "bytes_out"), out);
  assert_int_equal(stat_of(s, "\"math.add\":{", "calls"), 4);
  assert_int_equal(stat_of(s, "\"math.add\":{", "errors"), 0);
  assert_int_equal(stat_of(s, "\"math.divide\":{", "calls"), 1);
  assert_int_equal(stat_of(s, "\"math.divide\":{", "errors"), 1);
  assert_int_equal(stat_of(s, "\"math.subtract\":{", "calls"), 1);
  assert_int_equal(stat_of(s, "\"math.multiply\":{", "calls"), 0);
  assert_int_equal(stat_of(s, "\"rpc.stats\":{", "calls"), 1);
  assert_null(strstr(s, "\"no.such\""));
  /* Methods come sorted by name. */
  assert_true(strstr(s, "\"echo.echo\"") < strstr(s, "\"math.add\""));
  assert_true(strstr(s, "\"math.subtract\"") < strstr(s, "\"rpc.stats\""));
  e2e_free(s);
  e2e_close(c);
  e2e_stop(d);
}

static void test_off_on_tcp_by_default(void **state) {
  e2e_daemon_t *d = *state;
  e2e_start(d, NULL);
  for (e2e_ep_t ep = E2E_TCP_NL; ep <= E2E_TCP_LEN; ep++) {
    e2e_conn_t *c = e2e_connect(d, ep);
    e2e_send(c, STATS_REQ("1"));
    e2e_expect(c, ERR("-32601", "Method not found", "1"));
    e2e_close(c);
  }
  e2e_conn_t *c = e2e_connect(d, E2E_UNIX_LEN);
  e2e_free(fetch_stats(c));
  e2e_close(c);
  e2e_stop(d);
}

static void test_sums_over_workers(void **state) {
  e2e_daemon_t *d = *state;
  e2e_opts_t o = {.workers = 2};
  e2e_start(d, &o);
  enum { N = 6 };
  e2e_conn_t *cs[N];
  for (int i = 0; i < N; i++) {
    cs[i] = e2e_connect(d, i % 2 ? E2E_UNIX_LEN : E2E_UNIX_NL);
    char req[96], want[64];
    snprintf(req, sizeof(req), REQ("math.multiply", "[%d,2]", "%d"), i, i);
    snprintf(want, sizeof(want), RES("%d", "%d"), 2 * i, i);
    e2e_send(cs[i], req);
    e2e_expect(cs[i], want);
  }
  e2e_conn_t *c = e2e_connect(d, E2E_UNIX_NL);
  char *s = fetch_stats(c);
  uint64_t conns = 0, accepted = 0, calls = 0;
  for (int w = 0; w < 2; w++) {
    char scope[32];
    snprintf(scope, sizeof(scope), "\"worker\":%d,", w);
    conns += stat_of(s, scope, "connections");
    accepted += stat_of(s, scope, "accepted");
    calls += stat_of(s, scope, "calls");
  }
  assert_int_equal(conns, N + 1);
  assert_int_equal(accepted, N + 1);
  assert_int_equal(calls, N + 1);
  assert_int_equal(stat_of(s, "\"result\":{", "connections"), N + 1);
  assert_int_equal(stat_of(s, "\"math.multiply\":{", "calls"), N);
  e2e_free(s);
  for (int i = 0; i < N; i++)
    e2e_close(cs[i]);
  e2e_close(c);
  e2e_stop(d);
}

static void test_reload_restarts_method_counters(void **state) {
  e2e_daemon_t *d = *state;
  e2e_opts_t o = {.workers = 1};
  e2e_start(d, &o);
  e2e_conn_t *c = e2e_connect(d, E2E_UNIX_NL);
  e2e_send(c, REQ("math.add", "[1,2]", "1"));
  e2e_expect(c, RES("3", "1"));
  e2e_signal(d, SIGHUP);
  e2e_wait_log(d, "(generation 2)", 1, E2E_REPLY_MS);
  /* The worker switches at its next wake-up; a call makes sure it has. */
  for (int tries = 0;; tries++) {
    char *s = fetch_stats(c);
    uint64_t gen = stat_of(s, "\"result\":{", "generation");
    if (gen == 2) {
      assert_int_equal(stat_of(s, "\"math.add\":{", "calls"), 0);
      assert_int_equal(stat_of(s, "\"rpc.stats\":{", "calls"), 1);
      /* Worker counters run on from the start. */
      assert_true(stat_of(s, "\"worker\":0,", "calls") >= 2);
      e2e_free(s);
      break;
    }
    e2e_free(s);
    if (tries > 100)
      fail_msg("still generation %llu after the reload",
               (unsigned long long)gen);
    e2e_sleep_ms(20);
  }
  e2e_close(c);
  e2e_stop(d);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test_setup_teardown(test_counts_match_traffic, e2e_setup,
                                      e2e_teardown),
      cmocka_unit_test_setup_teardown(test_off_on_tcp_by_default, e2e_setup,
                                      e2e_teardown),
      cmocka_unit_test_setup_teardown(test_sums_over_workers, e2e_setup,
                                      e2e_teardown),
      cmocka_unit_test_setup_teardown(test_reload_restarts_method_counters,
                                      e2e_setup, e2e_teardown),
  };
  return cmocka_run_group_tests_name("e2e_stats", tests, NULL, NULL);
}
