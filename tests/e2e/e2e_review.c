/* e2e_review.c - regression tests for defects found in review: a
 * thread-pool task that outlives its plugin generation, notifications and
 * max_pending_calls, the daemon-wide max_pending_calls_total, replies of
 * held frames answered during a shutdown, and the shutdown deadline with
 * held frames.
 *
 * Bounds on the daemon's exit after SIGTERM are liveness bounds a few
 * times its shutdown_timeout_ms; nothing measures speed. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <errno.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "e2e.h"

#ifndef JRPC_HANDLERS_DIR
#error "JRPC_HANDLERS_DIR must name the sample plugins' folder"
#endif
#ifndef JRPC_FIXTURE_DIR
#error "JRPC_FIXTURE_DIR must name the fixture plugins' folder"
#endif

/* SIGTERM, then a bounded wait for a clean exit (status 0, no sanitizer
 * report, no socket file left). */
static void stop_within(e2e_daemon_t *d, int ms) {
  uint64_t t0 = e2e_now_ms();
  e2e_signal(d, SIGTERM);
  if (!e2e_wait_exit(d, ms))
    fail_msg("jrpcd did not exit within %d ms of SIGTERM", ms);
  print_message("jrpcd exited %llu ms after SIGTERM\n",
                (unsigned long long)(e2e_now_ms() - t0));
  e2e_assert_clean_exit(d);
}

/* ---- 1. a thread-pool task outlives its plugin generation ---- */

/* Copies of sleep.so for test 1, each its own file (and inode), so that
 * dlopen loads them apart and a dlclose of one really unmaps it. */
static char plugdir[64];

static void copy_file(const char *from, const char *to) {
  FILE *in = fopen(from, "rb");
  if (!in)
    fail_msg("%s: %s", from, strerror(errno));
  FILE *out = fopen(to, "wb");
  if (!out) {
    fclose(in);
    fail_msg("%s: %s", to, strerror(errno));
  }
  char buf[65536];
  size_t k;
  int bad = 0;
  while ((k = fread(buf, 1, sizeof(buf), in)) > 0)
    bad |= fwrite(buf, 1, k, out) != k;
  bad |= ferror(in);
  fclose(in);
  bad |= fclose(out) != 0;
  if (bad)
    fail_msg("cannot copy %s to %s", from, to);
}

static void remove_plugdir(void) {
  if (!plugdir[0])
    return;
  static const char *const names[] = {"sleep_a.so", "sleep_b.so"};
  for (size_t i = 0; i < 2; i++) {
    char path[128];
    snprintf(path, sizeof(path), "%s/%s", plugdir, names[i]);
    unlink(path);
  }
  rmdir(plugdir);
  plugdir[0] = '\0';
}

static int plugdir_teardown(void **state) {
  int rc = e2e_teardown(state); /* the daemon first: it maps the copies */
  remove_plugdir();
  return rc;
}

static void test_work_outlives_generation(void **state) {
  e2e_daemon_t *d = *state;
  snprintf(plugdir, sizeof(plugdir), "/tmp/jrpcd-e2e-plug-XXXXXX");
  if (!mkdtemp(plugdir)) {
    plugdir[0] = '\0';
    fail_msg("mkdtemp: %s", strerror(errno));
  }
  char a[128], b[128];
  snprintf(a, sizeof(a), "%s/sleep_a.so", plugdir);
  snprintf(b, sizeof(b), "%s/sleep_b.so", plugdir);
  copy_file(JRPC_HANDLERS_DIR "/sleep.so", a);
  copy_file(JRPC_HANDLERS_DIR "/sleep.so", b);

  char plugins[512];
  snprintf(plugins, sizeof(plugins),
           "[plugin math]\npath = math.so\n[plugin sleep]\npath = %s\n", a);
  e2e_opts_t o = {.server = "shutdown_timeout_ms = 500\n", .plugins = plugins};
  e2e_start(d, &o);
  e2e_conn_t *c = e2e_connect(d, E2E_UNIX_NL);
  /* Frames are answered in order: once math.add is, the work is on the
   * thread pool, running code of copy A. */
  e2e_send(c, REQ("sleep.work_ms", "[2000]", "1"));
  e2e_send(c, REQ("math.add", "[1,2]", "2"));
  e2e_expect(c, RES("3", "2"));

  /* A reload to copy B: generation 1 (copy A) is now held only by the
   * call in flight and its thread-pool task. */
  char plugins_b[512];
  snprintf(plugins_b, sizeof(plugins_b),
           "[plugin math]\npath = math.so\n[plugin sleep]\npath = %s\n", b);
  e2e_opts_t ob = {.server = o.server, .plugins = plugins_b};
  e2e_rewrite(d, &ob, NULL);
  e2e_signal(d, SIGHUP);
  e2e_wait_log(d, "] reloaded ", 1, E2E_REPLY_MS);
  assert_int_equal(e2e_log_count(d, "reload failed"), 0);

  /* The deadline answers the call and closes the connection; the task
   * still sleeps in copy A, which must stay mapped until the process is
   * gone. */
  uint64_t t0 = e2e_now_ms();
  e2e_signal(d, SIGTERM);
  e2e_expect(c, ERR("-32007", "Shutting down", "1"));
  e2e_expect_eof(c, E2E_REPLY_MS, 0);
  e2e_close(c);
  if (!e2e_wait_exit(d, 5000))
    fail_msg("jrpcd did not exit within 5000 ms of SIGTERM");
  print_message("jrpcd exited %llu ms after SIGTERM\n",
                (unsigned long long)(e2e_now_ms() - t0));
  e2e_assert_clean_exit(d);
  assert_true(e2e_log_count(d, "not waiting for them") > 0);
}

/* ---- 2. notifications count toward max_pending_calls ---- */

static void test_notifications_count(void **state) {
  e2e_daemon_t *d = *state;
  e2e_opts_t o = {.server = "max_pending_calls = 1\n"
                            "shutdown_timeout_ms = 1000\n"};
  e2e_start(d, &o);
  e2e_conn_t *a = e2e_connect(d, E2E_UNIX_NL);
  e2e_conn_t *b = e2e_connect(d, E2E_TCP_NL);
  e2e_roundtrip(a, 1); /* both accepted before the flood */
  e2e_roundtrip(b, 2);
  uint64_t rss0 = e2e_rss_kib(d);

  /* As many notifications as the daemon takes in about a second. Each
   * would be a deferred call for a minute; only the first may be. */
  static const char note[] = NOTE("sleep.ms", "[60000]") "\n";
  enum { NOTES = 512, LEN = sizeof(note) - 1 };
  static char buf[NOTES * LEN];
  for (size_t i = 0; i < NOTES; i++)
    memcpy(buf + i * LEN, note, LEN);
  uint64_t sent = 0, end = e2e_now_ms() + 1000;
  while (e2e_now_ms() < end) {
    size_t off = (size_t)(sent % sizeof(buf));
    ssize_t k =
        send(a->fd, buf + off, sizeof(buf) - off, MSG_NOSIGNAL | MSG_DONTWAIT);
    if (k > 0) {
      sent += (uint64_t)k;
      continue;
    }
    if (k < 0 && errno != EAGAIN && errno != EINTR)
      fail_msg("send: %s", strerror(errno));
    struct pollfd p = {a->fd, POLLOUT, 0};
    (void)poll(&p, 1, 10);
  }
  uint64_t rss1 = e2e_rss_kib(d);
  uint64_t grew = rss1 > rss0 ? rss1 - rss0 : 0;
  print_message("%llu notifications sent; VmRSS %llu -> %llu KiB\n",
                (unsigned long long)(sent / LEN), (unsigned long long)rss0,
                (unsigned long long)rss1);
  if (grew >= 32u * 1024u)
    fail_msg("VmRSS grew by %llu KiB with max_pending_calls = 1",
             (unsigned long long)grew);

  /* Another client is served meanwhile. */
  e2e_send(b, REQ("math.add", "[20,22]", "3"));
  const char *p;
  size_t n;
  int r = e2e_recv(b, &p, &n, 2000);
  if (r != 1)
    fail_msg("client B: no reply within 2000 ms (%s)",
             r == 0 ? "connection closed" : "timeout");
  assert_true(e2e_same(p, n, RES("42", "3")));
  e2e_close(b);

  stop_within(d, 3000);
  /* Notifications are never answered: a's end is all it gets. */
  assert_int_equal(e2e_recv(a, &p, &n, E2E_REPLY_MS), 0);
  e2e_close(a);
}

/* ---- 3. max_pending_calls_total ---- */

static void test_pending_total(void **state) {
  e2e_daemon_t *d = *state;
  e2e_opts_t o = {.server = "max_pending_calls_total = 2\n"};
  e2e_start(d, &o);
  e2e_conn_t *c1 = e2e_connect(d, E2E_UNIX_NL);
  e2e_conn_t *c2 = e2e_connect(d, E2E_TCP_LEN);
  e2e_conn_t *c3 = e2e_connect(d, E2E_UNIX_LEN);
  /* Each sleep is deferred once the math.add after it is answered. */
  e2e_send(c1, REQ("sleep.ms", "[2000]", "1"));
  e2e_send(c1, REQ("math.add", "[1,1]", "2"));
  e2e_expect(c1, RES("2", "2"));
  e2e_send(c2, REQ("sleep.ms", "[2000]", "3"));
  e2e_send(c2, REQ("math.add", "[2,2]", "4"));
  e2e_expect(c2, RES("4", "4"));

  /* A third: refused at once, not queued behind the two (its reply would
   * then be 2000 after the sleeps). */
  e2e_send(c3, REQ("sleep.ms", "[2000]", "5"));
  e2e_expect(c3, ERRD("-32005", "Server busy", "{\"limit\":2,\"got\":2}", "5"));
  /* Calls that are not deferred are not limited. */
  e2e_send(c3, REQ("math.add", "[3,3]", "6"));
  e2e_expect(c3, RES("6", "6"));
  e2e_send(c3, "[" REQ("math.add", "[4,4]", "7") "," REQ("sleep.ms", "[1]",
                                                         "8") "]");
  e2e_expect(c3,
             "[" RES("8", "7") "," ERRD("-32005", "Server busy",
                                        "{\"limit\":2,\"got\":2}", "8") "]");

  e2e_expect(c1, RES("2000", "1"));
  e2e_expect(c2, RES("2000", "3"));
  /* Both slots are free again. A call ends by sending its reply and only
   * then gives its slot back (on the worker of c1 or c2, not c3's), so a
   * refusal in that instant is retried; a slot never given back fails
   * here. */
  uint64_t end = e2e_now_ms() + E2E_REPLY_MS;
  for (int id = 100, refused = 0;; id++) {
    char req[96], want[96], busy[160];
    snprintf(req, sizeof(req), REQ("sleep.ms", "[10]", "%d"), id);
    snprintf(want, sizeof(want), RES("10", "%d"), id);
    snprintf(busy, sizeof(busy),
             ERRD("-32005", "Server busy", "{\"limit\":2,\"got\":2}", "%d"),
             id);
    e2e_send(c3, req);
    const char *p;
    size_t n;
    if (e2e_recv(c3, &p, &n, E2E_REPLY_MS) != 1)
      fail_msg("no reply to sleep.ms after the sleeps ended");
    if (e2e_is(p, n, want)) {
      if (refused)
        print_message("refused %d times before the slots were free\n", refused);
      break;
    }
    if (!e2e_same(p, n, busy))
      fail_msg("unexpected reply");
    refused++;
    if (e2e_now_ms() > end)
      fail_msg("still -32005 %d ms after both calls ended", E2E_REPLY_MS);
    e2e_sleep_ms(10);
  }
  /* Two at once fit again. */
  e2e_send(c1, REQ("sleep.ms", "[10]", "9"));
  e2e_send(c2, REQ("sleep.ms", "[10]", "10"));
  e2e_expect(c1, RES("10", "9"));
  e2e_expect(c2, RES("10", "10"));
  e2e_close(c1);
  e2e_close(c2);
  e2e_close(c3);
  e2e_stop(d);
}

/* ---- 4. held frames answered during a shutdown ---- */

static void test_held_frames_answered_at_stop(void **state) {
  e2e_daemon_t *d = *state;
  char plugins[1024];
  snprintf(plugins, sizeof(plugins), "%s[plugin fx]\npath = %s/%s\n",
           e2e_plugins_default, JRPC_FIXTURE_DIR, "fx_async.so");
  e2e_opts_t o = {.server = "max_pending_calls = 1\n"
                            "shutdown_timeout_ms = 5000\n",
                  .plugins = plugins};
  e2e_start(d, &o);
  e2e_conn_t *c = e2e_connect(d, E2E_UNIX_NL);
  e2e_roundtrip(c, 9); /* accepted */
  /* One write to a Unix socket: the daemon has all three at once, either
   * from its read or from the one it makes at the stop. sleep.ms fills
   * the connection's one slot, so 2 and 3 are held unparsed until it
   * ends, which is after the SIGTERM. */
  e2e_queue(c, REQ("sleep.ms", "[500]", "1"),
            strlen(REQ("sleep.ms", "[500]", "1")));
  e2e_queue(c, REQ("fx.defer_finish_now", "[]", "2"),
            strlen(REQ("fx.defer_finish_now", "[]", "2")));
  e2e_queue(c, REQ("math.add", "[1,2]", "3"),
            strlen(REQ("math.add", "[1,2]", "3")));
  e2e_flush(c);
  e2e_signal(d, SIGTERM);
  e2e_expect(c, RES("500", "1"));
  e2e_expect(c, RES("\"now\"", "2"));
  e2e_expect(c, RES("3", "3"));
  e2e_expect_eof(c, E2E_REPLY_MS, 0);
  e2e_close(c);
  if (!e2e_wait_exit(d, E2E_STOP_MS))
    fail_msg("jrpcd did not exit after SIGTERM");
  e2e_assert_clean_exit(d);
  assert_int_equal(e2e_log_count(d, "shutdown_timeout_ms passed"), 0);
}

/* ---- 5. the shutdown deadline with held frames ---- */

static void test_deadline_with_held_frames(void **state) {
  e2e_daemon_t *d = *state;
  e2e_opts_t o = {.server = "max_pending_calls = 1\n"
                            "shutdown_timeout_ms = 500\n"};
  e2e_start(d, &o);
  e2e_conn_t *c = e2e_connect(d, E2E_UNIX_NL);
  e2e_roundtrip(c, 99); /* accepted */
  /* One write: the first is in flight for a minute, 19 wait unparsed. */
  for (int id = 1; id <= 20; id++)
    e2e_queuef(c, REQ("sleep.ms", "[60000]", "%d"), id);
  e2e_flush(c);
  uint64_t t0 = e2e_now_ms();
  e2e_signal(d, SIGTERM);
  /* The call in flight is ended; the held frames stay unread. */
  e2e_expect(c, ERR("-32007", "Shutting down", "1"));
  e2e_expect_eof(c, E2E_REPLY_MS, 0);
  e2e_close(c);
  if (!e2e_wait_exit(d, 2000))
    fail_msg("jrpcd did not exit within 2000 ms of SIGTERM");
  print_message("jrpcd exited %llu ms after SIGTERM\n",
                (unsigned long long)(e2e_now_ms() - t0));
  e2e_assert_clean_exit(d);
  assert_true(e2e_log_count(d, "shutdown_timeout_ms passed") > 0);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test_setup_teardown(test_work_outlives_generation, e2e_setup,
                                      plugdir_teardown),
      cmocka_unit_test_setup_teardown(test_notifications_count, e2e_setup,
                                      e2e_teardown),
      cmocka_unit_test_setup_teardown(test_pending_total, e2e_setup,
                                      e2e_teardown),
      cmocka_unit_test_setup_teardown(test_held_frames_answered_at_stop,
                                      e2e_setup, e2e_teardown),
      cmocka_unit_test_setup_teardown(test_deadline_with_held_frames, e2e_setup,
                                      e2e_teardown),
  };
  return cmocka_run_group_tests_name("e2e_review", tests, NULL, NULL);
}
