/* e2e_latency.c - rpc.stats' latency per method (p50, p99, max from the
 * workers' histograms, timeouts, cancelled) and slow_call_ms against a
 * real daemon: after deferred sleeps of known length the figures are
 * ordered and at least the sleep (never bounded above: the machine may be
 * slow); slow calls are logged at most a line a second per worker, the
 * lines held back are counted in the next, and rpc.stats lists the last
 * ones in order of time; slow_call_ms = 0 logs nothing. */
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

#ifndef JRPC_FIXTURE_DIR
#error "JRPC_FIXTURE_DIR must name the fixture plugins' folder"
#endif

/* The unsigned number after "key": past the first `scope`. */
static uint64_t stat_of(const char *json, const char *scope, const char *key) {
  return (uint64_t)e2e_num_after(json, scope, key);
}

#define STATS_REQ "{\"jsonrpc\":\"2.0\",\"method\":\"rpc.stats\",\"id\":0}"

static char *fetch_stats(e2e_conn_t *c) {
  return e2e_call_copy(c, STATS_REQ);
}

/* Sends n sleep.ms calls of ms each at once, then takes their n replies
 * (in any order). */
static void sleeps(e2e_conn_t *c, const char *method, int n, int ms) {
  for (int i = 0; i < n; i++)
    e2e_queuef(c,
               "{\"jsonrpc\":\"2.0\",\"method\":\"%s\",\"params\":[%d],"
               "\"id\":%d}",
               method, ms, 1000 + i);
  e2e_flush(c);
  for (int i = 0; i < n; i++) {
    const char *p;
    size_t len;
    assert_int_equal(e2e_recv(c, &p, &len, E2E_REPLY_MS), 1);
    char want[32];
    snprintf(want, sizeof(want), "\"result\":%d", ms);
    if (!strstr(p, want))
      fail_msg("not a sleep's reply: %s", p);
  }
}

/* p50 <= p99 <= max, max at least least_us. */
static void ordered(const char *stats, const char *scope, uint64_t least_us) {
  uint64_t p50 = stat_of(stats, scope, "p50_us");
  uint64_t p99 = stat_of(stats, scope, "p99_us");
  uint64_t max = stat_of(stats, scope, "max_us");
  if (!(p50 <= p99 && p99 <= max && max >= least_us))
    fail_msg("%s: p50 %llu, p99 %llu, max %llu us; want ordered, max >= "
             "%llu",
             scope, (unsigned long long)p50, (unsigned long long)p99,
             (unsigned long long)max, (unsigned long long)least_us);
}

static void test_latency_fields(void **state) {
  e2e_daemon_t *d = *state;
  e2e_opts_t o = {.workers = 2};
  e2e_start(d, &o);
  e2e_conn_t *c = e2e_connect(d, E2E_UNIX_NL);
  /* sleep.ms: one of 5 ms, three of 60 ms; p50 is the second of four, so
   * it is 60 ms or more too. */
  sleeps(c, "sleep.ms", 1, 5);
  sleeps(c, "sleep.ms", 3, 60);
  sleeps(c, "sleep.work_ms", 2, 30); /* on the thread pool */
  for (int i = 0; i < 10; i++)
    e2e_roundtrip(c, i); /* math.add, synchronous */
  char *s = fetch_stats(c);
  assert_int_equal(stat_of(s, "\"sleep.ms\":{", "calls"), 4);
  ordered(s, "\"sleep.ms\":{", 60000);
  assert_true(stat_of(s, "\"sleep.ms\":{", "p50_us") >= 60000);
  ordered(s, "\"sleep.work_ms\":{", 30000);
  assert_true(stat_of(s, "\"sleep.work_ms\":{", "p50_us") >= 30000);
  ordered(s, "\"math.add\":{", 1);
  assert_true(stat_of(s, "\"math.add\":{", "p50_us") >= 1);
  assert_int_equal(stat_of(s, "\"sleep.ms\":{", "timeouts"), 0);
  assert_int_equal(stat_of(s, "\"sleep.ms\":{", "cancelled"), 0);
  /* Never called: nothing to say. */
  assert_int_equal(stat_of(s, "\"math.divide\":{", "max_us"), 0);
  assert_int_equal(stat_of(s, "\"math.divide\":{", "p99_us"), 0);
  /* The default slow_call_ms (1000) saw none of these. */
  assert_non_null(strstr(s, "\"slow_calls\":[]"));
  e2e_close(c);
  e2e_stop(d);
}

/* The entries of "slow_calls", checked: method, outcome, at least
 * least_us, in order of time. Returns how many. */
static size_t slow_entries(const char *stats, const char *method,
                           uint64_t least_us) {
  const char *p = strstr(stats, "\"slow_calls\":[");
  assert_non_null(p);
  size_t n = 0;
  uint64_t last_at = 0;
  char want[96];
  snprintf(want, sizeof(want), "{\"method\":\"%s\",\"duration_us\":", method);
  while ((p = strstr(p, "{\"method\":")) != NULL) {
    if (strncmp(p, want, strlen(want)) != 0)
      fail_msg("a slow call of another method: %.120s", p);
    uint64_t us = strtoull(p + strlen(want), NULL, 10);
    if (us < least_us)
      fail_msg("slow call of %llu us, under %llu: %.160s",
               (unsigned long long)us, (unsigned long long)least_us, p);
    if (!strstr(p, "\"outcome\":\"ok\",\"peer\":\"pid "))
      fail_msg("no outcome or peer: %.160s", p);
    uint64_t at = stat_of(p, "{\"method\":", "at_ms");
    assert_true(at >= last_at);
    last_at = at;
    n++;
    p++;
  }
  return n;
}

static void test_slow_calls(void **state) {
  e2e_daemon_t *d = *state;
  e2e_opts_t o = {.workers = 1, .server = "slow_call_ms = 40\n"};
  e2e_start(d, &o);
  e2e_conn_t *c = e2e_connect(d, E2E_UNIX_NL);
  sleeps(c, "sleep.ms", 2, 1); /* not slow */
  e2e_roundtrip(c, 1);
  /* Twenty slow calls that end together: one line, not twenty (the rest
   * are counted for the next line). */
  sleeps(c, "sleep.ms", 20, 60);
  char *s = fetch_stats(c);
  assert_int_equal(slow_entries(s, "sleep.ms", 40000), 16); /* the last 16 */
  e2e_wait_log(d, "slow call: sleep.ms took ", 1, E2E_REPLY_MS);
  size_t lines = e2e_log_count(d, "slow call: sleep.ms took ");
  if (lines >= 20)
    fail_msg("%zu slow-call lines for 20 calls: not rate-limited", lines);
  assert_true(e2e_log_count(d, "(ok, peer pid ") >= 1);
  /* A second later the next one is logged, with those held back. */
  e2e_sleep_ms(1100);
  sleeps(c, "sleep.ms", 1, 60);
  e2e_wait_log(d, "more slow calls not logged)", 1, E2E_REPLY_MS);
  e2e_close(c);
  e2e_stop(d);
}

/* Slow synchronous calls: fx.block holds the worker. Four in one write
 * (most likely one read, whose duration they then share); the
 * slow_calls entries say how many calls each stands for and whether they
 * failed. */
static void test_slow_sync(void **state) {
  e2e_daemon_t *d = *state;
  char plugins[1024];
  snprintf(plugins, sizeof(plugins), "%s[plugin fx]\npath = %s/fx_count.so\n",
           e2e_plugins_default, JRPC_FIXTURE_DIR);
  e2e_opts_t o = {
      .workers = 1, .server = "slow_call_ms = 20\n", .plugins = plugins};
  e2e_start(d, &o);
  e2e_conn_t *c = e2e_connect(d, E2E_UNIX_NL);
  for (int i = 0; i < 4; i++)
    e2e_queuef(c,
               "{\"jsonrpc\":\"2.0\",\"method\":\"fx.block\",\"params\":"
               "[30,%s],\"id\":%d}",
               i == 3 ? "true" : "false", i);
  e2e_flush(c);
  for (int i = 0; i < 4; i++) {
    const char *p;
    size_t n;
    assert_int_equal(e2e_recv(c, &p, &n, E2E_REPLY_MS), 1);
  }
  char *s = fetch_stats(c);
  ordered(s, "\"fx.block\":{", 30000);
  assert_true(stat_of(s, "\"fx.block\":{", "p50_us") >= 30000);
  /* Every call is in slow_calls, in entries of `calls` each; three ok,
   * one failed. */
  uint64_t ok = 0, failed = 0;
  for (const char *p = strstr(s, "{\"method\":\"fx.block\""); p;
       p = strstr(p + 1, "{\"method\":\"fx.block\"")) {
    uint64_t calls = stat_of(p, "{", "calls");
    assert_true(stat_of(p, "{", "duration_us") >= 30000);
    if (!strncmp(strstr(p, "\"outcome\":"), "\"outcome\":\"ok\"", 14))
      ok += calls;
    else if (!strncmp(strstr(p, "\"outcome\":"), "\"outcome\":\"error\"", 17))
      failed += calls;
    else
      fail_msg("outcome? %.160s", p);
  }
  assert_int_equal(ok, 3);
  assert_int_equal(failed, 1);
  e2e_wait_log(d, "slow call: fx.block took ", 1, E2E_REPLY_MS);
  e2e_close(c);
  e2e_stop(d);
}

/* Timeouts and cancellations are counted, and timed: sleep.ms with a
 * call_timeout_ms of 50 ms, and one cancelled by $/cancelRequest; both
 * are slow calls with their outcome. */
static void test_timeouts_and_cancels(void **state) {
  e2e_daemon_t *d = *state;
  e2e_opts_t o = {.workers = 1,
                  .server = "call_timeout_ms = 50\nslow_call_ms = 40\n"};
  e2e_start(d, &o);
  e2e_conn_t *c = e2e_connect(d, E2E_UNIX_NL);
  e2e_send(c, REQ("sleep.ms", "[5000]", "1"));
  e2e_expect(c, ERRD("-32004", "Timed out", "{\"timeout_ms\":50}", "1"));
  char *s = fetch_stats(c);
  assert_int_equal(stat_of(s, "\"sleep.ms\":{", "timeouts"), 1);
  assert_int_equal(stat_of(s, "\"sleep.ms\":{", "cancelled"), 0);
  /* Timers run on the loop's millisecond clock, which may be a little
   * behind the read's: the timeout can end the call just short of 50 ms
   * by the monotonic clock. */
  ordered(s, "\"sleep.ms\":{", 45000);
  e2e_rewrite(d,
              &(e2e_opts_t){.workers = 1,
                            .server = "call_timeout_ms = 0\n"
                                      "slow_call_ms = 40\n"},
              NULL);
  e2e_signal(d, SIGHUP);
  e2e_wait_log(d, "] reloaded ", 1, E2E_REPLY_MS);
  e2e_send(c, REQ("sleep.ms", "[5000]", "2"));
  /* The reply to a later request on the same connection says the daemon
   * has read this one (a loaded machine may read it late), so the call is
   * at least 60 ms old when cancelled. */
  e2e_free(fetch_stats(c));
  e2e_sleep_ms(60); /* so that it is slow when cancelled */
  e2e_send(c, NOTE("$/cancelRequest", "{\"id\":2}"));
  e2e_expect(c, ERR("-32800", "Request cancelled", "2"));
  s = fetch_stats(c);
  /* The reload restarted the counters: the cancelled call is there. */
  assert_int_equal(stat_of(s, "\"sleep.ms\":{", "cancelled"), 1);
  assert_int_equal(stat_of(s, "\"sleep.ms\":{", "timeouts"), 0);
  ordered(s, "\"sleep.ms\":{", 50000); /* the cancel came 60 ms later */
  /* slow_calls outlive the reload: both endings, in order. */
  const char *t = strstr(s, "\"outcome\":\"timed out\"");
  const char *x = strstr(s, "\"outcome\":\"cancelled\"");
  if (!t || !x || t > x)
    fail_msg("slow_calls lack a timed-out then a cancelled call: %s", s);
  e2e_close(c);
  e2e_stop(d);
}

static void test_slow_off(void **state) {
  e2e_daemon_t *d = *state;
  e2e_opts_t o = {.workers = 1, .server = "slow_call_ms = 0\n"};
  e2e_start(d, &o);
  e2e_conn_t *c = e2e_connect(d, E2E_UNIX_NL);
  sleeps(c, "sleep.ms", 2, 50);
  char *s = fetch_stats(c);
  assert_non_null(strstr(s, "\"slow_calls\":[]"));
  ordered(s, "\"sleep.ms\":{", 50000);
  assert_int_equal(e2e_log_count(d, "slow call"), 0);
  e2e_close(c);
  e2e_stop(d);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test_setup_teardown(test_latency_fields, e2e_setup,
                                      e2e_teardown),
      cmocka_unit_test_setup_teardown(test_slow_calls, e2e_setup, e2e_teardown),
      cmocka_unit_test_setup_teardown(test_slow_sync, e2e_setup, e2e_teardown),
      cmocka_unit_test_setup_teardown(test_timeouts_and_cancels, e2e_setup,
                                      e2e_teardown),
      cmocka_unit_test_setup_teardown(test_slow_off, e2e_setup, e2e_teardown),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
