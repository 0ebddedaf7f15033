/* slowcalls.c - slow_call_ms; see slowcalls.h. */
#include "slowcalls.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "introspect.h"
#include "log.h"
#include "peer.h"

static const char *const outcomes[] = {"ok", "error", "timed out", "cancelled"};

static const char *outcome_name(unsigned o) {
  return o < sizeof(outcomes) / sizeof(outcomes[0]) ? outcomes[o] : "?";
}

void jrpcd_slowcalls_init(jrpcd_slowcalls_t *s) {
  memset(s, 0, sizeof(*s));
  pthread_mutex_init(&s->mu, NULL);
}

void jrpcd_slowcalls_free(jrpcd_slowcalls_t *s) {
  pthread_mutex_destroy(&s->mu);
}

static uint64_t clock_ms(clockid_t id) {
  struct timespec ts;
  clock_gettime(id, &ts);
  return (uint64_t)ts.tv_sec * 1000u + (uint64_t)ts.tv_nsec / 1000000u;
}

void jrpcd_slowcalls_note(void *arg, const jrpc__slow_call_t *call) {
  jrpcd_slowcalls_t *s = arg;
  jrpcd_slow_entry_t e;
  memset(&e, 0, sizeof(e));
  e.at_ms = clock_ms(CLOCK_REALTIME);
  e.ns = call->ns;
  e.calls = call->calls;
  e.outcome = (uint8_t)call->outcome;
  e.cut = snprintf(e.method, sizeof(e.method), "%s", call->method) >=
          (int)sizeof(e.method);
  jrpcd_peer_text(call->peer, e.peer, sizeof(e.peer));
  pthread_mutex_lock(&s->mu);
  s->ring[s->total % JRPCD_SLOW_KEEP] = e;
  s->total++;
  pthread_mutex_unlock(&s->mu);
  /* A line a second at most per worker: a method that turns slow under
   * load must not turn the log into the next bottleneck. */
  uint64_t now = clock_ms(CLOCK_MONOTONIC);
  if (s->logged_ms && now - s->logged_ms < 1000) {
    s->unlogged++;
    return;
  }
  uint64_t skipped = s->unlogged;
  s->unlogged = 0;
  s->logged_ms = now ? now : 1;
  char more[80] = "";
  if (e.calls > 1)
    snprintf(more, sizeof(more), ", %u calls of one read", e.calls);
  char since[96] = "";
  if (skipped)
    snprintf(since, sizeof(since), " (%llu more slow calls not logged)",
             (unsigned long long)skipped);
  jrpcd_warn("slow call: %s took %.3f ms (%s, peer %s%s)%s", e.method,
             (double)e.ns / 1e6, outcome_name(e.outcome), e.peer, more, since);
}

static int by_time(const void *a, const void *b) {
  const jrpcd_slow_entry_t *x = a, *y = b;
  return x->at_ms < y->at_ms ? -1 : x->at_ms > y->at_ms;
}

static void w_str(jrpc_call_t *c, const char *key, const char *s) {
  jrpc_w_key(c, key, strlen(key));
  jrpc_w_str(c, s, strlen(s));
}

static void w_u64(jrpc_call_t *c, const char *key, uint64_t v) {
  jrpc_w_key(c, key, strlen(key));
  jrpc_w_u64(c, v);
}

int jrpcd_slowcalls_write(jrpc_call_t *c, jrpcd_slowcalls_t *const *rings,
                          unsigned n, const jrpcd_scope_t *scope) {
  jrpcd_slow_entry_t *all = jrpc_alloc(
      c, (size_t)n * JRPCD_SLOW_KEEP * sizeof(jrpcd_slow_entry_t) + 1);
  if (!all)
    return JRPC_ENOMEM;
  size_t k = 0;
  for (unsigned w = 0; w < n; w++) {
    jrpcd_slowcalls_t *s = rings[w];
    pthread_mutex_lock(&s->mu);
    uint64_t have = s->total < JRPCD_SLOW_KEEP ? s->total : JRPCD_SLOW_KEEP;
    for (uint64_t i = 0; i < have; i++) {
      const jrpcd_slow_entry_t *e =
          &s->ring[(s->total - have + i) % JRPCD_SLOW_KEEP];
      if (jrpcd_scope_named(scope, e->method, strlen(e->method), e->cut))
        all[k++] = *e;
    }
    pthread_mutex_unlock(&s->mu);
  }
  qsort(all, k, sizeof(*all), by_time);
  size_t from = k > JRPCD_SLOW_KEEP ? k - JRPCD_SLOW_KEEP : 0;
  jrpc_w_key(c, "slow_calls", 10);
  jrpc_w_arr(c);
  for (size_t i = from; i < k; i++) {
    const jrpcd_slow_entry_t *e = &all[i];
    jrpc_w_obj(c);
    w_str(c, "method", e->method);
    w_u64(c, "duration_us", e->ns / 1000 + (e->ns % 1000 != 0));
    w_str(c, "outcome", outcome_name(e->outcome));
    if (jrpcd_scope_peer(scope, e->peer))
      w_str(c, "peer", e->peer);
    w_u64(c, "calls", e->calls);
    w_u64(c, "at_ms", e->at_ms);
    jrpc_w_obj_end(c);
  }
  jrpc_w_arr_end(c);
  return 0;
}
