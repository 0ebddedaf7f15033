/* adv_life.c - the daemon's life under load: reload storms while clients
 * pipeline calls (some of them deferred), and stopping with calls in
 * flight, within and past shutdown_timeout_ms.
 *
 * Reload storms end with adv_check (see adv.h); a stop ends with a clean
 * exit (status 0, no sanitizer report, no socket file left). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "adversarial/adv.h"

/* ---- reload storms under load ---- */

#define STORM_CONNS 4
#define STORM_HUPS 60
#define STORM_EVERY_MS 15
#define STORM_WINDOW 200 /* calls awaiting a reply, per connection */
#define STORM_MAX_IDS 200000

/* Three configs the storm cycles through: the sample plugins, the same
 * with another sleep setting (a new generation either way), and one that
 * does not load (the old registry must stay). */
static const char plugins_b[] = "[plugin sleep]\npath = sleep.so\n"
                                "max_ms = 50000\n"
                                "[plugin math]\npath = math.so\n";

typedef struct storm {
  e2e_daemon_t *d;
  e2e_conn_t *c[STORM_CONNS];
  unsigned waiting[STORM_CONNS];
  unsigned next_id, replies;
  uint8_t *seen; /* per id */
  int hups;
  uint64_t last_hup;
} storm_t;

static void storm_hup(storm_t *s) {
  uint64_t now = e2e_now_ms();
  if (s->hups >= STORM_HUPS || now - s->last_hup < STORM_EVERY_MS)
    return;
  int kind = s->hups % 3;
  if (kind == 2) {
    e2e_rewrite(s->d, NULL, "[server]\nno_such_key = 1\n");
  } else {
    e2e_opts_t o = {.plugins = kind ? plugins_b : NULL};
    e2e_rewrite(s->d, &o, NULL);
  }
  e2e_signal(s->d, SIGHUP);
  s->hups++;
  s->last_hup = now;
}

static void storm_refill(void *arg, size_t i, e2e_conn_t *c) {
  storm_t *s = arg;
  if (i == 0)
    storm_hup(s);
  /* Calls go on for as long as the storm lasts. */
  while (s->hups < STORM_HUPS && s->waiting[i] < STORM_WINDOW &&
         s->next_id + 1 < STORM_MAX_IDS) {
    unsigned id = ++s->next_id;
    if (id % 4 == 0)
      e2e_queuef(c, REQ("sleep.ms", "[%u]", "%u"), id % 7, id);
    else
      e2e_queuef(c, REQ("math.add", "[%u,%u]", "%u"), id, id, id);
    s->waiting[i]++;
  }
}

static void storm_frame(void *arg, size_t i, const char *p, size_t n) {
  storm_t *s = arg;
  long long id = adv_reply_id(p, n);
  if (id < 1 || id > s->next_id || s->seen[id]++)
    fail_msg("connection %zu: unexpected or repeated reply %s", i, p);
  char want[96];
  if (id % 4 == 0)
    snprintf(want, sizeof(want), RES("%lld", "%lld"), id % 7, id);
  else
    snprintf(want, sizeof(want), RES("%lld", "%lld"), 2 * id, id);
  if (!e2e_same(p, n, want))
    fail_msg("connection %zu: wrong reply during a reload storm", i);
  s->waiting[i]--;
  s->replies++;
}

static int storm_done(void *arg) {
  storm_t *s = arg;
  if (s->hups < STORM_HUPS)
    return 0;
  for (int i = 0; i < STORM_CONNS; i++)
    if (s->waiting[i])
      return 0;
  return 1;
}

static void reload_storm(e2e_daemon_t *d) {
  storm_t *s = e2e_calloc(1, sizeof(*s));
  s->d = d;
  s->seen = e2e_calloc(STORM_MAX_IDS, 1);
  for (int i = 0; i < STORM_CONNS; i++)
    s->c[i] = e2e_connect(d, (e2e_ep_t)(i % E2E_NEP));
  size_t reloaded = e2e_log_count(d, "] reloaded ");
  e2e_pump_ops_t ops = {storm_frame, storm_refill, storm_done};
  e2e_pump(s->c, STORM_CONNS, &ops, s, E2E_REPLY_MS);
  /* Back to the sample config; its reload must succeed. */
  e2e_rewrite(d, NULL, NULL);
  size_t before = e2e_log_count(d, "] reloaded ");
  e2e_signal(d, SIGHUP);
  e2e_wait_log(d, "] reloaded ", before + 1, E2E_REPLY_MS);
  print_message("reload storm: %d SIGHUPs, %zu reloads, %u calls answered "
                "exactly once\n",
                STORM_HUPS, e2e_log_count(d, "] reloaded ") - reloaded,
                s->replies);
  assert_true(e2e_log_count(d, "] reloaded ") > reloaded + 1);
  for (int i = 0; i < STORM_CONNS; i++)
    e2e_close(s->c[i]);
  e2e_free(s->seen);
  e2e_free(s);
}

/* ---- stopping with calls in flight ---- */

/* One connection's calls in flight: `calls` deferred calls of ms each
 * (ids base+1..), a batch mixing a deferred and an immediate call, a probe
 * call whose reply shows the daemon has read everything before it, and
 * half of a frame that never completes. */
typedef struct inflight {
  e2e_conn_t *c;
  int base, calls, ms, deadline;
  uint8_t seen[256];
  int got, probed;
} inflight_t;

static void inflight_send(inflight_t *f) {
  e2e_conn_t *c = f->c;
  for (int k = 1; k <= f->calls; k++)
    e2e_queuef(c, REQ("sleep.ms", "[%d]", "%d"), f->ms, f->base + k);
  e2e_queuef(
      c,
      "[" REQ("sleep.ms", "[%d]", "%d") "," REQ("math.add", "[1,1]", "%d") "]",
      f->ms, f->base + f->calls + 1, f->base + f->calls + 2);
  e2e_queuef(c, REQ("math.add", "[2,2]", "%d"), f->base + f->calls + 3);
  e2e_flush(c);
}

static void inflight_half_frame(inflight_t *f) {
  static const char half[] = REQ("math.add", "[1,2]", "0");
  if (f->c->framing == E2E_LENGTH) {
    unsigned char h[4] = {0, 0, 0, sizeof(half) - 1};
    e2e_send_raw(f->c, h, 4);
  }
  e2e_send_raw(f->c, half, 10);
}

/* Takes one reply: the probe, the batch, or one deferred call (its
 * result, or -32007 past the deadline); each exactly once. */
static void inflight_take(inflight_t *f) {
  const char *p;
  size_t n;
  if (e2e_recv(f->c, &p, &n, E2E_STOP_MS) != 1)
    fail_msg("%s: reply %d of %d never came", e2e_ep_name(f->base / 1000),
             f->got + 1, f->calls + 2);
  char want[256];
  int batch = f->base + f->calls + 1;
  if (p[0] == '[') {
    if (f->deadline)
      snprintf(want, sizeof(want),
               "[" RES("2", "%d") "," ERR("-32007", "Shutting down", "%d") "]",
               batch + 1, batch);
    else
      snprintf(want, sizeof(want), "[" RES("2", "%d") "," RES("%d", "%d") "]",
               batch + 1, f->ms, batch);
    if (!e2e_same(p, n, want) || f->seen[f->calls + 1]++)
      fail_msg("the batch's reply, or twice");
    f->got++;
    return;
  }
  long long id = adv_reply_id(p, n);
  if (id == batch + 2) {
    snprintf(want, sizeof(want), RES("4", "%lld"), id);
    if (!e2e_same(p, n, want) || f->probed++)
      fail_msg("the probe's reply, or twice");
    f->got++;
    return;
  }
  if (id <= f->base || id > f->base + f->calls || f->seen[id - f->base]++)
    fail_msg("unexpected or repeated reply: %s", p);
  if (f->deadline)
    snprintf(want, sizeof(want), ERR("-32007", "Shutting down", "%lld"), id);
  else
    snprintf(want, sizeof(want), RES("%d", "%lld"), f->ms, id);
  if (!e2e_same(p, n, want))
    fail_msg("wrong reply to a call in flight");
  f->got++;
}

static void stop_in_flight(e2e_daemon_t *d, int calls, int ms, int deadline) {
  inflight_t *f = e2e_calloc(E2E_NEP, sizeof(*f));
  for (e2e_ep_t ep = 0; ep < E2E_NEP; ep++) {
    f[ep] = (inflight_t){.c = e2e_connect(d, ep),
                         .base = 1000 * (int)ep,
                         .calls = calls,
                         .ms = ms,
                         .deadline = deadline};
    inflight_send(&f[ep]);
  }
  for (e2e_ep_t ep = 0; ep < E2E_NEP; ep++) {
    while (!f[ep].probed)
      inflight_take(&f[ep]);
    inflight_half_frame(&f[ep]);
  }
  uint64_t t0 = e2e_now_ms();
  e2e_signal(d, SIGTERM);
  for (e2e_ep_t ep = 0; ep < E2E_NEP; ep++) {
    while (f[ep].got < calls + 2)
      inflight_take(&f[ep]);
    e2e_expect_eof(f[ep].c, E2E_STOP_MS, 1);
  }
  if (!e2e_wait_exit(d, E2E_STOP_MS))
    fail_msg("jrpcd still running %d ms after SIGTERM", E2E_STOP_MS);
  print_message("stopped with %d calls in flight in %llu ms\n",
                E2E_NEP * (calls + 1), (unsigned long long)(e2e_now_ms() - t0));
  e2e_assert_clean_exit(d);
  for (e2e_ep_t ep = 0; ep < E2E_NEP; ep++)
    e2e_close(f[ep].c);
  e2e_free(f);
}

static void test_reload_storm_then_stop(void **state) {
  e2e_daemon_t *d = *state;
  adv_base_t base;
  adv_start(d, NULL, &base);
  reload_storm(d);
  adv_check(d, &base, "reload storm under load");
  /* Calls of 300 ms in flight: SIGTERM answers every one and exits. */
  stop_in_flight(d, 100, 300, 0);
}

static void test_stop_past_deadline(void **state) {
  e2e_daemon_t *d = *state;
  adv_base_t base;
  e2e_opts_t o = {.server = "shutdown_timeout_ms = 300\n"};
  adv_start(d, &o, &base);
  /* Calls of 20 s in flight, a 300 ms deadline: each answered -32007. */
  stop_in_flight(d, 100, 20000, 1);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test_setup_teardown(test_reload_storm_then_stop, adv_setup,
                                      adv_teardown),
      cmocka_unit_test_setup_teardown(test_stop_past_deadline, adv_setup,
                                      adv_teardown),
  };
  adv_filter_from_env();
  return cmocka_run_group_tests(tests, NULL, NULL);
}
