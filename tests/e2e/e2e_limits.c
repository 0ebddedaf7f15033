/* e2e_limits.c - regression tests for the defects of issue 11, each
 * checked to fail before its fix: requests held behind deferred
 * notifications never answered, frames trickled for ever
 * (frame_timeout_ms), one batch deferring past max_pending_calls, and the
 * memory a deferred call in flight costs. (Running out of descriptors
 * with several workers is driven in tests/adversarial, which sets the
 * daemon's RLIMIT_NOFILE.)
 *
 * Waits are liveness bounds; nothing measures speed. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>

#include "e2e.h"

static void roundtrip(e2e_conn_t *c, int id) {
  char req[128], want[128];
  snprintf(req, sizeof(req), REQ("math.add", "[%d,%d]", "%d"), id, id, id);
  snprintf(want, sizeof(want), RES("%d", "%d"), 2 * id, id);
  e2e_send(c, req);
  e2e_expect(c, want);
}

/* Queues n deferred notifications as single frames. */
static void queue_notes(e2e_conn_t *c, int n) {
  for (int i = 0; i < n; i++)
    e2e_queuef(c, NOTE("sleep.ms", "[%d]"), 10);
}

/* ---- 1. requests held behind deferred notifications ---- */

/* max_pending_calls (1024 by default) deferred notifications hold the
 * next request unread; once they finish (10 ms each) it must be read and
 * answered, not left until idle_timeout_ms closes the connection. The
 * idle timeout is long, so that only the fix can answer in time. */
static void held_behind_notes(e2e_daemon_t *d, e2e_ep_t ep, int batch) {
  e2e_conn_t *c = e2e_connect(d, ep);
  if (batch) {
    /* A batch of 1000 notifications counts 1000; 24 more fill the 1024. */
    size_t cap = 1000 * 64 + 2, n = 0;
    char *b = e2e_calloc(1, cap);
    b[n++] = '[';
    for (int i = 0; i < 1000; i++)
      n += (size_t)snprintf(b + n, cap - n, "%s" NOTE("sleep.ms", "[10]"),
                            i ? "," : "");
    b[n++] = ']';
    e2e_queue(c, b, n);
    e2e_free(b);
    queue_notes(c, 24);
  } else {
    queue_notes(c, 1024);
  }
  e2e_queuef(c, REQ("math.add", "[1,2]", "1"));
  e2e_flush(c);
  e2e_expect(c, RES("3", "1"));
  /* The connection reads on afterwards. */
  roundtrip(c, 2);
  e2e_close(c);
}

static void test_held_behind_notifications(void **state) {
  e2e_daemon_t *d = *state;
  e2e_opts_t o = {.server = "idle_timeout_ms = 600000\n"};
  e2e_start(d, &o);
  held_behind_notes(d, E2E_UNIX_NL, 0);
  held_behind_notes(d, E2E_TCP_NL, 0);
  held_behind_notes(d, E2E_UNIX_LEN, 1);
  held_behind_notes(d, E2E_TCP_LEN, 1);
  e2e_stop(d);
}

/* A half-closed connection whose last calls are notifications closes
 * once they finish (before, it stayed open until the idle sweep). */
static void test_eof_after_notifications(void **state) {
  e2e_daemon_t *d = *state;
  e2e_opts_t o = {.server = "idle_timeout_ms = 600000\n"};
  e2e_start(d, &o);
  e2e_conn_t *c = e2e_connect(d, E2E_UNIX_NL);
  queue_notes(c, 5);
  e2e_flush(c);
  shutdown(c->fd, SHUT_WR);
  e2e_expect_eof(c, E2E_REPLY_MS, 0);
  e2e_close(c);
  e2e_stop(d);
}

/* ---- 2. frame_timeout_ms ---- */

/* Part of a frame, then one byte every 100 ms: -32009 once the frame is
 * frame_timeout_ms old, then the connection closes. */
static void trickle(e2e_daemon_t *d, e2e_ep_t ep) {
  e2e_conn_t *c = e2e_connect(d, ep);
  roundtrip(c, 1);
  if (e2e_ep_framing(ep) == E2E_LENGTH)
    e2e_send_raw(c, "\0\0\0\x40{\"jsonrpc\"", 15);
  else
    e2e_send_raw(c, "{\"jsonrpc\"", 10);
  uint64_t t0 = e2e_now_ms();
  const char *p;
  size_t n;
  int r = 0;
  while (e2e_now_ms() - t0 < 5000) {
    r = e2e_recv(c, &p, &n, 100);
    if (r != -1)
      break;
    if (!c->eof)
      (void)send(c->fd, " ", 1, MSG_NOSIGNAL);
  }
  uint64_t took = e2e_now_ms() - t0;
  if (r != 1)
    fail_msg("%s: no -32009 within 5 s of trickling (%s)", e2e_ep_name(ep),
             r == 0 ? "closed without a reply" : "nothing");
  if (!strstr(p, "\"code\":-32009") || !strstr(p, "\"timeout_ms\":500") ||
      !strstr(p, "\"id\":null"))
    fail_msg("%s: unexpected reply %.*s", e2e_ep_name(ep), (int)n, p);
  /* Not before the timeout: it counts from the frame's first byte. */
  assert_true(took >= 450);
  e2e_expect_eof(c, E2E_REPLY_MS, 1);
  e2e_close(c);
}

/* A client that keeps sending whole frames, each read ending inside the
 * next one, is never cut off, however long it goes on. */
static void steady_pipeline(e2e_daemon_t *d) {
  e2e_conn_t *c = e2e_connect(d, E2E_UNIX_NL);
  static const char req[] = REQ("math.add", "[1,1]", "7") "\n";
  const size_t len = sizeof(req) - 1;
  uint64_t t0 = e2e_now_ms();
  int answered = 0;
  /* 1.5 s of half frames 50 ms apart: each frame takes 50 ms to arrive
   * whole, and some frame is always incomplete. */
  for (int i = 0; e2e_now_ms() - t0 < 1500; i++) {
    size_t half = len / 2;
    e2e_send_raw(c, i ? req + half : req, i ? len - half : half);
    if (i)
      e2e_send_raw(c, req, half);
    e2e_sleep_ms(50);
    const char *p;
    size_t n;
    while (e2e_recv(c, &p, &n, 0) == 1) {
      assert_true(e2e_same(p, n, RES("2", "7")));
      answered++;
    }
    assert_false(c->eof);
  }
  e2e_send_raw(c, req + len / 2, len - len / 2);
  e2e_expect(c, RES("2", "7"));
  print_message("steady pipeline: %d replies in 1.5 s\n", answered + 1);
  assert_true(answered > 10);
  e2e_close(c);
}

static void test_frame_timeout(void **state) {
  e2e_daemon_t *d = *state;
  e2e_opts_t o = {.server = "frame_timeout_ms = 500\n"};
  e2e_start(d, &o);
  for (int ep = 0; ep < E2E_NEP; ep++)
    trickle(d, (e2e_ep_t)ep);
  steady_pipeline(d);
  assert_int_equal(e2e_log_count(d, "frame incomplete after 500 ms"), 4);
  e2e_stop(d);
}

/* frame_timeout_ms = 0: a frame may take as long as it likes. */
static void test_frame_timeout_off(void **state) {
  e2e_daemon_t *d = *state;
  e2e_opts_t o = {.server = "frame_timeout_ms = 0\n"};
  e2e_start(d, &o);
  e2e_conn_t *c = e2e_connect(d, E2E_UNIX_NL);
  e2e_send_raw(c, "{\"jsonrpc\":\"2.0\",", 17);
  e2e_sleep_ms(1500);
  e2e_send(c, "\"method\":\"math.add\",\"params\":[2,3],\"id\":4}");
  e2e_expect(c, RES("5", "4"));
  e2e_close(c);
  e2e_stop(d);
}

/* ---- 3. one batch and max_pending_calls ---- */

static void test_batch_bounded(void **state) {
  e2e_daemon_t *d = *state;
  e2e_opts_t o = {.server = "max_pending_calls = 4\n"};
  e2e_start(d, &o);
  e2e_conn_t *c = e2e_connect(d, E2E_UNIX_NL);
  char batch[2048];
  size_t n = 0;
  batch[n++] = '[';
  for (int i = 1; i <= 10; i++)
    n += (size_t)snprintf(batch + n, sizeof(batch) - n,
                          "%s" REQ("sleep.ms", "[%d]", "%d"), i > 1 ? "," : "",
                          i, i);
  batch[n++] = ']';
  batch[n] = '\0';
  e2e_send(c, batch);
  const char *p;
  size_t len;
  assert_int_equal(e2e_recv(c, &p, &len, E2E_REPLY_MS), 1);
  /* Four calls answered, six refused, each once, in one array. */
  int ok = 0, busy = 0;
  for (const char *s = p; (s = strstr(s, "\"result\":")); s++)
    ok++;
  for (const char *s = p; (s = strstr(s, "\"code\":-32005")); s++)
    busy++;
  if (ok != 4 || busy != 6)
    fail_msg("expected 4 results and 6 -32005 in %.*s", (int)len, p);
  assert_non_null(strstr(p, "{\"limit\":4,\"got\":4}"));
  roundtrip(c, 11);
  e2e_close(c);
  e2e_stop(d);
}

/* ---- 4. memory per deferred call in flight ---- */

/* 20,000 sleep.ms calls in flight on one connection: the daemon's RSS
 * grows by less than 2 KiB a call (it was about 4.7 KiB, each call's reply
 * holding a 4 KiB buffer). Not in sanitizer builds, whose allocator pads
 * every block. */
static void test_deferred_memory(void **state) {
#ifdef JRPC_SANITIZE
  skip();
#endif
  e2e_daemon_t *d = *state;
  enum { CALLS = 20000 };
  e2e_opts_t o = {.workers = 1,
                  .server = "max_pending_calls = 20000\n"
                            "idle_timeout_ms = 600000\n"};
  e2e_start(d, &o);
  e2e_conn_t *c = e2e_connect(d, E2E_UNIX_NL);
  roundtrip(c, 1);
  uint64_t rss0 = e2e_rss_kib(d);
  for (int i = 0; i < CALLS; i++)
    e2e_queuef(c, REQ("sleep.ms", "[2000]", "%d"), i);
  e2e_flush(c);
  e2e_sleep_ms(1000); /* all read and deferred, none finished */
  uint64_t rss1 = e2e_rss_kib(d);
  uint64_t per_call = (rss1 - rss0) * 1024 / CALLS;
  print_message("%d deferred calls in flight: VmRSS %llu -> %llu KiB, "
                "%llu bytes a call\n",
                CALLS, (unsigned long long)rss0, (unsigned long long)rss1,
                (unsigned long long)per_call);
  if (per_call >= 2048)
    fail_msg("%llu bytes of RSS per deferred call in flight",
             (unsigned long long)per_call);
  for (int i = 0; i < CALLS; i++) {
    const char *p;
    size_t n;
    assert_int_equal(e2e_recv(c, &p, &n, E2E_REPLY_MS), 1);
  }
  e2e_close(c);
  e2e_stop(d);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test_setup_teardown(test_held_behind_notifications, e2e_setup,
                                      e2e_teardown),
      cmocka_unit_test_setup_teardown(test_eof_after_notifications, e2e_setup,
                                      e2e_teardown),
      cmocka_unit_test_setup_teardown(test_frame_timeout, e2e_setup,
                                      e2e_teardown),
      cmocka_unit_test_setup_teardown(test_frame_timeout_off, e2e_setup,
                                      e2e_teardown),
      cmocka_unit_test_setup_teardown(test_batch_bounded, e2e_setup,
                                      e2e_teardown),
      cmocka_unit_test_setup_teardown(test_deferred_memory, e2e_setup,
                                      e2e_teardown),
  };
  return cmocka_run_group_tests_name("e2e_limits", tests, NULL, NULL);
}
