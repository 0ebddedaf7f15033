/* e2e_life.c - the real daemon's life cycle: max_connections, the idle
 * timeout, the graceful stop on SIGTERM (and its deadline), and reloads on
 * SIGHUP while clients keep calling. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/wait.h>

#include "e2e.h"
#include "testutil.h"

/* Replies of calls in flight come whenever those calls end: want[] lists
 * them, seen[] marks those that came (each once). */
typedef struct inflight {
  const char *const *want;
  size_t n;
  uint8_t seen[8];
} inflight_t;

/* 1 if p[0..n) is one of f's replies not seen yet (now marked). */
static int take_inflight(inflight_t *f, const char *p, size_t n) {
  for (size_t k = 0; f && k < f->n; k++)
    if (!f->seen[k] && e2e_is(p, n, f->want[k])) {
      f->seen[k] = 1;
      return 1;
    }
  return 0;
}

/* The next reply that is not one of f's; f's are taken on the way. */
static void next_reply(e2e_conn_t *c, inflight_t *f, const char **p,
                       size_t *n) {
  do {
    if (e2e_recv(c, p, n, E2E_REPLY_MS) != 1)
      fail_msg("no reply (%s)",
               c->eof || c->err ? "connection closed" : "timeout");
  } while (take_inflight(f, *p, *n));
}

static void expect_among(e2e_conn_t *c, inflight_t *f, const char *want) {
  const char *p;
  size_t n;
  next_reply(c, f, &p, &n);
  if (!e2e_same(p, n, want))
    fail_msg("unexpected reply");
}

/* Waits for every reply of f still due. */
static void expect_inflight(e2e_conn_t *c, inflight_t *f) {
  for (;;) {
    size_t due = 0;
    for (size_t k = 0; k < f->n; k++)
      due += !f->seen[k];
    if (!due)
      return;
    const char *p;
    size_t n;
    if (e2e_recv(c, &p, &n, E2E_REPLY_MS) != 1)
      fail_msg("%zu calls in flight got no reply", due);
    if (!take_inflight(f, p, n)) {
      fprintf(stderr, "reply: %s\n", p);
      fail_msg("unexpected reply while waiting for calls in flight");
    }
  }
}

/* The reload is logged by the main thread before the workers take the new
 * plugins up, so new calls see them a moment later: calls echo (ids from
 * *id up) on c until it is served (present) or is -32601 (gone). */
static void await_echo(e2e_conn_t *c, int present, int *id, inflight_t *f) {
  uint64_t end = e2e_now_ms() + E2E_REPLY_MS;
  for (;;) {
    char req[96], served[96], gone[128];
    snprintf(req, sizeof(req), REQ("echo", "[1]", "%d"), *id);
    snprintf(served, sizeof(served), RES("[1]", "%d"), *id);
    snprintf(gone, sizeof(gone), ERR("-32601", "Method not found", "%d"), *id);
    (*id)++;
    e2e_send(c, req);
    const char *p;
    size_t n;
    next_reply(c, f, &p, &n);
    if (e2e_is(p, n, present ? served : gone))
      return;
    if (!e2e_same(p, n, present ? gone : served))
      fail_msg("unexpected reply while waiting for a reload");
    if (e2e_now_ms() > end)
      fail_msg("the reloaded plugins were not in use within %d ms",
               E2E_REPLY_MS);
    e2e_sleep_ms(1);
  }
}

/* ---- 9. max_connections ---- */

static void test_max_connections(void **state) {
  e2e_daemon_t *d = *state;
  e2e_opts_t o = {.server = "max_connections = 3\n"};
  e2e_start(d, &o);
  e2e_conn_t *c[3];
  /* Each answered: accepted and counted by the daemon. */
  for (int i = 0; i < 3; i++) {
    c[i] = e2e_connect(d, (e2e_ep_t)i);
    e2e_roundtrip(c[i], i + 1);
  }
  /* One too many, on each transport: accepted and closed at once, without
   * a byte. */
  static const e2e_ep_t extra[] = {E2E_UNIX_LEN, E2E_TCP_NL};
  for (size_t k = 0; k < 2; k++) {
    e2e_conn_t *x = e2e_connect(d, extra[k]);
    e2e_expect_eof(x, E2E_REPLY_MS, 0);
    e2e_close(x);
  }
  e2e_wait_log(d, "max_connections (3) reached", 1, E2E_REPLY_MS);
  /* The three still work. */
  for (int i = 0; i < 3; i++)
    e2e_roundtrip(c[i], i + 10);
  /* Once one has gone (and the daemon has seen it go), a new one is
   * served. */
  e2e_close(c[0]);
  uint64_t end = e2e_now_ms() + E2E_REPLY_MS;
  for (;;) {
    e2e_conn_t *n = e2e_connect(d, E2E_TCP_LEN);
    /* Not e2e_send: a refused connection may already be reset. */
    static const char req[] = "\0\0\0\x3b" REQ("math.add", "[1,1]", "1");
    (void)!send(n->fd, req, sizeof(req) - 1, MSG_NOSIGNAL);
    const char *p;
    size_t len;
    int r = e2e_recv(n, &p, &len, E2E_REPLY_MS);
    if (r == 1) {
      assert_true(e2e_same(p, len, RES("2", "1")));
      e2e_roundtrip(n, 99);
      e2e_close(n);
      break;
    }
    e2e_close(n);
    if (e2e_now_ms() > end)
      fail_msg("no connection served after one of three went away");
    e2e_sleep_ms(20);
  }
  for (int i = 1; i < 3; i++)
    e2e_close(c[i]);
  e2e_stop(d);
}

/* ---- 10. idle_timeout_ms ---- */

static void test_idle_timeout(void **state) {
  e2e_daemon_t *d = *state;
  e2e_opts_t o = {.server = "idle_timeout_ms = 300\n"};
  e2e_start(d, &o);
  /* A call in flight for twice the timeout keeps its connection open. */
  e2e_conn_t *busy = e2e_connect(d, E2E_TCP_LEN);
  e2e_send(busy, REQ("sleep.ms", "[600]", "\"slow\""));
  e2e_conn_t *idle = e2e_connect(d, E2E_UNIX_NL);
  e2e_roundtrip(idle, 1);
  /* Quiet since: closed (bounded wait; the timeout is a lower bound). */
  e2e_expect_eof(idle, E2E_REPLY_MS, 0);
  e2e_close(idle);
  e2e_expect(busy, RES("600", "\"slow\""));
  /* Answered and then quiet: now it goes too. */
  e2e_expect_eof(busy, E2E_REPLY_MS, 0);
  e2e_close(busy);
  e2e_wait_log(d, "idle for 300 ms; closing it", 2, E2E_REPLY_MS);
  e2e_conn_t *c = e2e_connect(d, E2E_TCP_NL);
  e2e_roundtrip(c, 2);
  e2e_close(c);
  e2e_stop(d);
}

/* The timeout is also a lower bound: a quiet connection lives until
 * idle_timeout_ms have passed since its last request. The daemon's clock
 * for it starts when it reads that request, after the client sent it, so
 * the close can come no sooner than the timeout after the send (a few ms
 * of slack for the loop's millisecond clock). */
static void test_idle_timeout_not_early(void **state) {
  e2e_daemon_t *d = *state;
  enum { IDLE_MS = 1200, SLACK_MS = 20 };
  e2e_opts_t o = {.server = "idle_timeout_ms = 1200\n"};
  e2e_start(d, &o);
  e2e_conn_t *c[2] = {e2e_connect(d, E2E_UNIX_NL), e2e_connect(d, E2E_TCP_LEN)};
  uint64_t sent[2];
  for (int i = 0; i < 2; i++) {
    sent[i] = e2e_now_ms();
    e2e_roundtrip(c[i], i + 1);
  }
  for (int i = 0; i < 2; i++) {
    e2e_expect_eof(c[i], E2E_REPLY_MS, 0);
    uint64_t lived = e2e_now_ms() - sent[i];
    if (lived + SLACK_MS < IDLE_MS)
      fail_msg("a connection quiet since its last request was closed after "
               "%llu ms; idle_timeout_ms is %d",
               (unsigned long long)lived, IDLE_MS);
    e2e_close(c[i]);
  }
  e2e_wait_log(d, "idle for 1200 ms; closing it", 2, E2E_REPLY_MS);
  e2e_stop(d);
}

/* ---- 11. SIGTERM: everything received is answered ---- */

/* A reply as one of want[] (each expected once): returns its index. */
static size_t match_reply(const char *p, size_t n, const char *const *want,
                          size_t nwant, uint8_t *seen) {
  for (size_t i = 0; i < nwant; i++) {
    int same = want[i][0] == '['
                   ? tu_json_equal(p, n, want[i], strlen(want[i]), 1)
                   : n == strlen(want[i]) && !memcmp(p, want[i], n);
    if (same) {
      if (seen[i])
        fail_msg("reply repeated: %.*s", (int)n, p);
      seen[i] = 1;
      return i;
    }
  }
  fprintf(stderr, "unexpected reply: %.*s\n", (int)n, p);
  fail_msg("a reply nobody expected");
  return 0;
}

/* Reads replies until EOF: every one of want[] exactly once. */
static void expect_all_then_eof(e2e_conn_t *c, const char *const *want,
                                size_t nwant) {
  uint8_t seen[16] = {0};
  assert_true(nwant <= 16);
  for (size_t k = 0; k < nwant; k++) {
    const char *p;
    size_t n;
    int r = e2e_recv(c, &p, &n, E2E_REPLY_MS);
    if (r != 1) {
      for (size_t i = 0; i < nwant; i++)
        if (!seen[i])
          fprintf(stderr, "missing: %s\n", want[i]);
      fail_msg("%zu of %zu replies before the connection %s", k, nwant,
               r == 0 ? "closed" : "timed out");
    }
    match_reply(p, n, want, nwant, seen);
  }
  e2e_expect_eof(c, E2E_REPLY_MS, 0);
}

static void test_sigterm_drains(void **state) {
  e2e_daemon_t *d = *state;
  e2e_start(d, NULL);
  static const char *const reqs[] = {
      REQ("math.add", "[1,2]", "1"),
      REQ("sleep.ms", "[300]", "2"),
      REQ("echo", "[\"three\"]", "3"),
      REQ("sleep.work_ms", "[200]", "4"),
      "[" REQ("math.add", "[2,3]", "5") "," REQ("sleep.ms", "[100]", "6") "]",
      NOTE("sleep.ms", "[50]"),
      REQ("math.multiply", "[3,3]", "7"),
  };
  static const char *const want[] = {
      RES("3", "1"),
      RES("300", "2"),
      RES("[\"three\"]", "3"),
      RES("200", "4"),
      "[" RES("5", "5") "," RES("100", "6") "]",
      RES("9", "7"),
  };
  e2e_conn_t *c[E2E_NEP];
  for (e2e_ep_t ep = 0; ep < E2E_NEP; ep++) {
    c[ep] = e2e_connect(d, ep);
    e2e_roundtrip(c[ep], 100); /* accepted: the daemon knows this connection */
    for (size_t i = 0; i < sizeof(reqs) / sizeof(reqs[0]); i++)
      e2e_queue(c[ep], reqs[i], strlen(reqs[i]));
    /* In one write; the first reply shows the daemon has read it all (one
     * segment on loopback TCP, one message on a Unix socket). */
    e2e_flush(c[ep]);
    e2e_expect(c[ep], want[0]);
  }
  /* On a Unix socket a completed send is in the daemon's receive buffer at
   * once: these it has not read yet when the signal comes. */
  e2e_send(c[E2E_UNIX_NL], REQ("echo", "[\"unread\"]", "8"));
  e2e_send(c[E2E_UNIX_LEN], REQ("echo", "[\"unread\"]", "8"));
  e2e_signal(d, SIGTERM);
  static const char *const unread = RES("[\"unread\"]", "8");
  const char *rest[8];
  size_t nrest = 0;
  for (size_t i = 1; i < sizeof(want) / sizeof(want[0]); i++)
    rest[nrest++] = want[i];
  for (e2e_ep_t ep = 0; ep < E2E_NEP; ep++) {
    int is_unix = ep == E2E_UNIX_NL || ep == E2E_UNIX_LEN;
    rest[nrest] = unread;
    expect_all_then_eof(c[ep], rest, nrest + (size_t)is_unix);
    e2e_close(c[ep]);
  }
  if (!e2e_wait_exit(d, E2E_STOP_MS))
    fail_msg("jrpcd did not exit after SIGTERM");
  e2e_assert_clean_exit(d);
  assert_true(e2e_log_count(d, "] stopped") == 1);
}

/* SIGINT stops like SIGTERM. Calls still running at shutdown_timeout_ms
 * are answered with -32007, and a client that reads nothing does not hold
 * the stop up. */
static void test_stop_deadline(void **state) {
  e2e_daemon_t *d = *state;
  e2e_opts_t o = {.server = "shutdown_timeout_ms = 500\n"};
  e2e_start(d, &o);
  e2e_conn_t *c[2];
  c[0] = e2e_connect(d, E2E_UNIX_NL);
  c[1] = e2e_connect(d, E2E_TCP_LEN);
  for (int i = 0; i < 2; i++) {
    e2e_roundtrip(c[i], 9);
    /* Longer than E2E_STOP_MS: only the deadline can end them in time. */
    e2e_send(c[i], REQ("sleep.ms", "[30000]", "1"));
    e2e_send(c[i], "[" REQ("sleep.ms", "[30000]",
                           "2") "," REQ("math.add", "[1,1]", "3") "]");
    e2e_send(c[i], REQ("math.add", "[2,2]", "4"));
    e2e_expect(c[i], RES("4", "4"));
  }
  /* Replies piled up for a client that does not read. */
  e2e_conn_t *mute = e2e_connect(d, E2E_UNIX_NL);
  static char big[65536 + 128];
  int h = snprintf(big, sizeof(big), "%s",
                   "{\"jsonrpc\":\"2.0\",\"method\":\"echo\",\"id\":1,"
                   "\"params\":[\"");
  memset(big + h, 'm', 65536);
  memcpy(big + h + 65536, "\"]}\n", 4);
  size_t len = (size_t)h + 65536 + 4, sent = 0;
  uint64_t quiet = e2e_now_ms();
  while (sent < (8u << 20) && e2e_now_ms() - quiet < 300) {
    ssize_t k = send(mute->fd, big + sent % len, len - sent % len,
                     MSG_NOSIGNAL | MSG_DONTWAIT);
    if (k > 0) {
      sent += (size_t)k;
      quiet = e2e_now_ms();
    } else {
      e2e_sleep_ms(5);
    }
  }
  e2e_signal(d, SIGINT);
  static const char *const want[] = {
      ERR("-32007", "Shutting down", "1"),
      "[" ERR("-32007", "Shutting down", "2") "," RES("2", "3") "]",
  };
  for (int i = 0; i < 2; i++) {
    expect_all_then_eof(c[i], want, 2);
    e2e_close(c[i]);
  }
  if (!e2e_wait_exit(d, E2E_STOP_MS))
    fail_msg("jrpcd did not exit after its shutdown deadline");
  e2e_close(mute);
  e2e_assert_clean_exit(d);
  assert_true(e2e_log_count(d, "-32007") > 0);
}

/* A second signal during the stop kills the process at once. */
static void test_second_signal_kills(void **state) {
  e2e_daemon_t *d = *state;
  e2e_opts_t o = {.server = "shutdown_timeout_ms = 60000\n"};
  e2e_start(d, &o);
  e2e_conn_t *c = e2e_connect(d, E2E_UNIX_LEN);
  e2e_roundtrip(c, 1);
  e2e_send(c, REQ("sleep.ms", "[60000]", "2"));
  e2e_signal(d, SIGTERM);
  e2e_wait_log(d, "stopping", 1, E2E_REPLY_MS);
  /* Until it is gone: one sent before the handler is reset may be taken
   * as the first signal again. */
  uint64_t end = e2e_now_ms() + E2E_STOP_MS;
  while (!e2e_wait_exit(d, 50)) {
    if (e2e_now_ms() > end)
      fail_msg("a second SIGTERM did not end the stopping daemon");
    kill(d->pid, SIGTERM);
  }
  if (!WIFSIGNALED(d->status) || WTERMSIG(d->status) != SIGTERM) {
    e2e_print_log(d);
    fail_msg("jrpcd did not die of the second SIGTERM (status 0x%x)",
             d->status);
  }
  e2e_close(c);
}

/* ---- 12. SIGHUP reloads while a client keeps calling ---- */

#define WINDOW 200

typedef struct streamer {
  e2e_daemon_t *d;
  unsigned sent, got;
  unsigned next_sync; /* synchronous replies come in order */
  uint8_t *seen;
  unsigned cap;
  int hups;              /* SIGHUPs sent */
  unsigned after_reload; /* replies since the last reload was logged */
  uint64_t last_check;
  size_t reloaded0;
} streamer_t;

static int is_deferred(unsigned i) {
  return i % 50 == 25;
}

static void streamer_refill(void *arg, size_t i, e2e_conn_t *c) {
  streamer_t *s = arg;
  while (s->sent - s->got < WINDOW && s->sent < s->cap) {
    unsigned k = s->sent++;
    if (is_deferred(k))
      e2e_queuef(c, REQ("sleep.ms", "[%u]", "%u"), 10 + k % 20, k);
    else
      e2e_queuef(c, REQ("math.add", "[%u,1000]", "%u"), k, k);
  }
  /* The next SIGHUP once the previous reload is logged and some replies
   * came after it. */
  uint64_t now = e2e_now_ms();
  if (s->hups < 3 && now - s->last_check >= 10) {
    s->last_check = now;
    size_t done = e2e_log_count(s->d, "] reloaded ") - s->reloaded0;
    if ((int)done == s->hups && (s->hups == 0 || s->after_reload >= 300)) {
      s->after_reload = 0;
      e2e_signal(s->d, SIGHUP);
      s->hups++;
    }
  }
}

static void streamer_frame(void *arg, size_t i, const char *p, size_t n) {
  streamer_t *s = arg;
  unsigned long id = 0;
  for (size_t k = n; k-- > 5;)
    if (!memcmp(p + k - 5, "\"id\":", 5)) {
      id = strtoul(p + k, NULL, 10);
      break;
    }
  if (id >= s->sent || s->seen[id]) {
    fprintf(stderr, "reply: %.*s\n", (int)n, p);
    fail_msg("unexpected or repeated reply");
  }
  char want[128];
  if (is_deferred((unsigned)id)) {
    snprintf(want, sizeof(want), RES("%u", "%lu"), 10 + (unsigned)id % 20, id);
  } else {
    snprintf(want, sizeof(want), RES("%lu", "%lu"), id + 1000, id);
    if (id < s->next_sync)
      fail_msg("reply %lu after %u: out of order", id, s->next_sync);
    s->next_sync = (unsigned)id;
  }
  if (!e2e_same(p, n, want))
    fail_msg("wrong reply during reloads");
  s->seen[id] = 1;
  s->got++;
  s->after_reload++;
}

static int streamer_done(void *arg) {
  streamer_t *s = arg;
  if (s->got == s->sent && s->sent == s->cap)
    return 1;
  if (s->hups < 3 || s->after_reload < 300)
    return 0;
  /* Three reloads done, 300 replies after the last: stop sending. */
  if (e2e_log_count(s->d, "] reloaded ") - s->reloaded0 < 3)
    return 0;
  s->cap = s->sent;
  return s->got == s->sent;
}

static void test_sighup_while_streaming(void **state) {
  e2e_daemon_t *d = *state;
  e2e_start(d, NULL);
  e2e_conn_t *c = e2e_connect(d, E2E_UNIX_NL);
  streamer_t s;
  memset(&s, 0, sizeof(s));
  s.d = d;
  s.cap = 2000000;
  s.seen = e2e_calloc(s.cap, 1);
  s.reloaded0 = e2e_log_count(d, "] reloaded ");
  e2e_pump_ops_t ops = {streamer_frame, streamer_refill, streamer_done};
  e2e_pump(&c, 1, &ops, &s, E2E_REPLY_MS);
  print_message("%u calls answered across 3 reloads\n", s.got);
  e2e_free(s.seen);
  assert_int_equal(e2e_log_count(d, "] reloaded "), 3);
  assert_int_equal(e2e_log_count(d, "reload failed"), 0);
  e2e_roundtrip(c, 7);
  e2e_close(c);
  e2e_stop(d);
}

/* A failed reload keeps the old plugins; a good one without a plugin
 * drops its methods for new calls. */
static void test_sighup_failures_and_changes(void **state) {
  e2e_daemon_t *d = *state;
  e2e_start(d, NULL);
  e2e_conn_t *c = e2e_connect(d, E2E_TCP_LEN);
  e2e_roundtrip(c, 1);

  /* An unknown key: the config is refused as a whole. */
  e2e_opts_t bad = {.server = "no_such_key = 1\n"};
  e2e_rewrite(d, &bad, NULL);
  e2e_signal(d, SIGHUP);
  e2e_wait_log(d, "reload failed", 1, E2E_REPLY_MS);
  assert_true(e2e_log_count(d, "no_such_key") > 0);
  e2e_roundtrip(c, 2);
  e2e_send(c, REQ("echo", "[\"still\"]", "3"));
  e2e_expect(c, RES("[\"still\"]", "3"));

  /* A plugin that does not load (strict_plugins): refused too. */
  char plugins[1024];
  snprintf(plugins, sizeof(plugins), "%s[plugin broken]\npath = %s/%s\n",
           e2e_plugins_default, JRPC_FIXTURE_DIR, "fx_init_fail.so");
  e2e_opts_t broken = {.plugins = plugins};
  e2e_rewrite(d, &broken, NULL);
  e2e_signal(d, SIGHUP);
  e2e_wait_log(d, "reload failed", 2, E2E_REPLY_MS);
  e2e_roundtrip(c, 4);

  /* Without echo: echo is gone for new calls, math stays. */
  e2e_opts_t noecho = {.plugins = "[plugin math]\npath = math.so\n"
                                  "[plugin sleep]\npath = sleep.so\n"};
  e2e_rewrite(d, &noecho, NULL);
  e2e_signal(d, SIGHUP);
  e2e_wait_log(d, "] reloaded ", 1, E2E_REPLY_MS);
  int id = 100;
  await_echo(c, 0, &id, NULL);
  e2e_roundtrip(c, 6);
  e2e_send(c, REQ("echo", "[1]", "7"));
  e2e_expect(c, ERR("-32601", "Method not found", "7"));

  /* And back. */
  e2e_rewrite(d, NULL, NULL);
  e2e_signal(d, SIGHUP);
  e2e_wait_log(d, "] reloaded ", 2, E2E_REPLY_MS);
  await_echo(c, 1, &id, NULL);
  e2e_send(c, REQ("echo", "[2]", "8"));
  e2e_expect(c, RES("[2]", "8"));
  e2e_close(c);
  e2e_stop(d);
}

/* jrpcd(8), SIGHUP: "calls already running finish with the plugins they started
 * with" -- also when the reload drops the plugin that is running them. */
static void test_sighup_drops_plugin_with_calls_in_flight(void **state) {
  e2e_daemon_t *d = *state;
  char plugins[1024];
  snprintf(plugins, sizeof(plugins), "%s[plugin late]\npath = %s/%s\n",
           e2e_plugins_default, E2E_PLUGIN_DIR, "e2e_fx_late.so");
  e2e_opts_t o = {.plugins = plugins};
  e2e_start(d, &o);
  e2e_conn_t *c = e2e_connect(d, E2E_UNIX_LEN);
  /* late.ms ends last: the old plugins go when it finishes. */
  e2e_send(c, REQ("late.ms", "[500]", "1"));
  e2e_send(c, REQ("sleep.ms", "[200]", "2"));
  e2e_send(c, REQ("sleep.work_ms", "[300]", "3"));
  /* Its answer comes first and proves the three were dispatched (one
   * connection's frames are taken in order) before the reload. */
  e2e_send(c, REQ("math.add", "[1,2]", "99"));
  e2e_expect(c, RES("3", "99"));
  e2e_opts_t only_math = {.plugins = "[plugin math]\npath = math.so\n"};
  e2e_rewrite(d, &only_math, NULL);
  e2e_signal(d, SIGHUP);
  e2e_wait_log(d, "] reloaded ", 1, E2E_REPLY_MS);
  static const char *const due[] = {RES("500", "1"), RES("200", "2"),
                                    RES("300", "3")};
  inflight_t f = {due, 3, {0}};
  int id = 100;
  await_echo(c, 0, &id, &f);
  /* New calls get the new registry (this connection's worker has it). */
  e2e_send(c, REQ("sleep.ms", "[1]", "4"));
  expect_among(c, &f, ERR("-32601", "Method not found", "4"));
  e2e_send(c, REQ("late.ms", "[1]", "5"));
  expect_among(c, &f, ERR("-32601", "Method not found", "5"));
  /* The calls started before the reload still answer, and the daemon
   * lives on once the old plugins are let go. */
  expect_inflight(c, &f);
  e2e_roundtrip(c, 6);
  e2e_close(c);
  e2e_stop(d);
}

/* The same promise for a deferred call that neither posts nor queues work
 * (those hold the plugins on their own): late.park only keeps its handle,
 * and late.unpark, from the reloaded plugins on the same worker, finishes
 * it after the reload. Until then the instance that started it must not
 * have ended; once it is finished, that instance goes. */
static void test_sighup_keeps_plugins_of_parked_call(void **state) {
  e2e_daemon_t *d = *state;
  char plugins[1024], kept[512];
  snprintf(plugins, sizeof(plugins), "%s[plugin late]\npath = %s/%s\n",
           e2e_plugins_default, E2E_PLUGIN_DIR, "e2e_fx_late.so");
  snprintf(kept, sizeof(kept),
           "[plugin math]\npath = math.so\n[plugin late]\npath = %s/%s\n",
           E2E_PLUGIN_DIR, "e2e_fx_late.so");
  e2e_opts_t o = {.workers = 1, .plugins = plugins};
  e2e_start(d, &o);
  e2e_conn_t *c = e2e_connect(d, E2E_UNIX_LEN);
  e2e_send(c, REQ("late.park", "[]", "1"));
  e2e_roundtrip(c, 2); /* late.park has run: frames are taken in order */
  e2e_send(c, REQ("late.ended", "[]", "3"));
  e2e_expect(c, RES("0", "3"));
  /* Reload without echo and sleep; late comes back as a new instance. */
  e2e_opts_t o2 = {.workers = 1, .plugins = kept};
  e2e_rewrite(d, &o2, NULL);
  e2e_signal(d, SIGHUP);
  e2e_wait_log(d, "] reloaded ", 1, E2E_REPLY_MS);
  int id = 100;
  await_echo(c, 0, &id, NULL); /* the one worker has switched */
  e2e_send(c, REQ("late.ended", "[]", "4"));
  e2e_expect(c, RES("0", "4"));
  static const char *const due[] = {RES("\"alive\"", "1")};
  inflight_t f = {due, 1, {0}};
  e2e_send(c, REQ("late.unpark", "[]", "5"));
  expect_among(c, &f, RES("true", "5"));
  expect_inflight(c, &f);
  /* Finished: the old generation is let go (at the end of that loop
   * turn), and with it the instance that parked the call. */
  uint64_t end = e2e_now_ms() + E2E_REPLY_MS;
  for (int k = 6;; k++) {
    char req[96], one[96];
    snprintf(req, sizeof(req), REQ("late.ended", "[]", "%d"), k);
    snprintf(one, sizeof(one), RES("1", "%d"), k);
    e2e_send(c, req);
    const char *p;
    size_t n;
    assert_int_equal(e2e_recv(c, &p, &n, E2E_REPLY_MS), 1);
    if (e2e_is(p, n, one))
      break;
    if (e2e_now_ms() > end)
      fail_msg("the old plugins stayed loaded after their last call ended");
    e2e_sleep_ms(10);
  }
  e2e_roundtrip(c, 7);
  e2e_close(c);
  e2e_stop(d);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test_setup_teardown(test_max_connections, e2e_setup,
                                      e2e_teardown),
      cmocka_unit_test_setup_teardown(test_idle_timeout, e2e_setup,
                                      e2e_teardown),
      cmocka_unit_test_setup_teardown(test_idle_timeout_not_early, e2e_setup,
                                      e2e_teardown),
      cmocka_unit_test_setup_teardown(test_sigterm_drains, e2e_setup,
                                      e2e_teardown),
      cmocka_unit_test_setup_teardown(test_stop_deadline, e2e_setup,
                                      e2e_teardown),
      cmocka_unit_test_setup_teardown(test_second_signal_kills, e2e_setup,
                                      e2e_teardown),
      cmocka_unit_test_setup_teardown(test_sighup_while_streaming, e2e_setup,
                                      e2e_teardown),
      cmocka_unit_test_setup_teardown(test_sighup_failures_and_changes,
                                      e2e_setup, e2e_teardown),
      cmocka_unit_test_setup_teardown(
          test_sighup_drops_plugin_with_calls_in_flight, e2e_setup,
          e2e_teardown),
      cmocka_unit_test_setup_teardown(test_sighup_keeps_plugins_of_parked_call,
                                      e2e_setup, e2e_teardown),
  };
  return cmocka_run_group_tests_name("e2e_life", tests, NULL, NULL);
}
