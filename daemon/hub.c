/* hub.c - server push across the workers; see hub.h. */
#include "hub.h"

#include <errno.h>
#include <sched.h>
#include <stdio.h>
#include <sys/random.h>

#include "cluster.h"
#include "conn.h"
#include "registry.h"
#include "server.h"
#include "worker.h"

/* Messages fanned out per wake-up before the loop takes its turn with
 * other work (the rest wakes it again). */
#define DRAIN_BUDGET 1024

/* A publisher announces itself before it looks at `closed`: the worker
 * closing sets `closed` first, then waits for `publishing` to drop, so a
 * wake-up never meets a closed handle. 0: open (leave() after); -1:
 * closing (already left). */
static inline int inbox_enter(jrpcd_inbox_t *ib) {
  atomic_fetch_add(&ib->publishing, 1);
  if (!atomic_load(&ib->closed))
    return 0;
  atomic_fetch_sub(&ib->publishing, 1);
  return -1;
}

static inline void inbox_leave(jrpcd_inbox_t *ib) {
  atomic_fetch_sub(&ib->publishing, 1);
}

/* Any thread: m, holding a reference for each of the n workers, into
 * every worker's inbox. Inlined: it is every publish's path. */
static inline __attribute__((always_inline)) int
fan_out(jrpcd_server_t *srv, jrpc__pubmsg_t *m, unsigned n) {
  int stopping = 0;
  uint32_t bucket = m->hash % JRPC__PUSH_LOST_BUCKETS;
  for (unsigned i = 0; i < n; i++) {
    jrpcd_worker_t *w = &srv->workers[i];
    jrpcd_inbox_t *ib = &w->inbox;
    if (inbox_enter(ib) != 0) {
      stopping = 1;
      jrpc__pubmsg_unref(m);
      continue;
    }
    if (jrpc__inbox_push(&ib->q, m) != 0) {
      /* The worker tells the subscribers when it drains. */
      atomic_fetch_add(&ib->lost[bucket], 1);
      atomic_store(&ib->losing, 1);
      jrpc__pubmsg_unref(m);
    }
    uv_async_send(&w->wake);
    inbox_leave(ib);
  }
  return stopping ? JRPC_ECANCELED : 0;
}

/* Any thread: the message once, shared by reference by every worker, and
 * by the broker's thread with [cluster]. */
static int hub_publish(void *arg, const char *ns, size_t ns_n,
                       const char *topic, size_t topic_n, const char *json,
                       size_t json_n) {
  jrpcd_server_t *srv = arg;
  unsigned n = __atomic_load_n(&srv->nworkers, __ATOMIC_ACQUIRE);
  if (n == 0)
    return 0; /* no worker yet: no subscription either */
  int fleet = jrpcd_cluster_on();
  jrpc__pubmsg_t *m = jrpc__pubmsg_new(ns, ns_n, topic, topic_n, json, json_n,
                                       n + (fleet ? 1u : 0u));
  if (!m)
    return JRPC_ENOMEM;
  /* The n references go to the workers, the last (with [cluster]) to
   * the broker's thread. */
  int rc = fan_out(srv, m, n);
  if (fleet)
    jrpcd_cluster_forward(m);
  return rc;
}

int jrpcd_hub_deliver(jrpcd_server_t *srv, const char *ns, size_t ns_n,
                      const char *topic, size_t topic_n, const char *json,
                      size_t json_n) {
  unsigned n = __atomic_load_n(&srv->nworkers, __ATOMIC_ACQUIRE);
  if (n == 0)
    return 0;
  jrpc__pubmsg_t *m =
      jrpc__pubmsg_new(ns, ns_n, topic, topic_n, json, json_n, n);
  if (!m)
    return JRPC_ENOMEM;
  return fan_out(srv, m, n);
}

void jrpcd_hub_lag(jrpcd_server_t *srv, const char *key, size_t key_n) {
  unsigned n = __atomic_load_n(&srv->nworkers, __ATOMIC_ACQUIRE);
  uint32_t bucket = jrpc__name_hash(key, key_n) % JRPC__PUSH_LOST_BUCKETS;
  for (unsigned i = 0; i < n; i++) {
    jrpcd_worker_t *w = &srv->workers[i];
    jrpcd_inbox_t *ib = &w->inbox;
    if (inbox_enter(ib) != 0)
      continue;
    atomic_fetch_add(&ib->lag[bucket], 1);
    atomic_store(&ib->lagging, 1);
    uv_async_send(&w->wake);
    inbox_leave(ib);
  }
}

static jrpc__pub_host_t pub_host;

void jrpcd_hub_start(jrpcd_server_t *srv) {
  pub_host.publish = hub_publish;
  pub_host.arg = srv;
  jrpc__push_set_pub_host(&pub_host);
}

void jrpcd_hub_stop(void) {
  jrpc__push_set_pub_host(NULL);
  jrpc__push_publishers_free();
}

int jrpcd_hub_worker_init(jrpcd_worker_t *w, char *err, size_t errlen) {
  const jrpcd_config_t *conf = &w->srv->conf;
  jrpc__push_limits_t lim = {
      .max_bytes = conf->max_push_bytes,
      .max_per_conn = conf->max_subscriptions_per_connection,
      .overflow_close = conf->push_overflow_close,
      .total = &w->srv->subscriptions,
      .max_total = conf->max_subscriptions,
  };
  if (jrpc__inbox_init(&w->inbox.q, JRPCD_INBOX_SIZE) != 0 ||
      jrpc__push_init(&w->push, &w->engine, &lim) != 0) {
    jrpc__inbox_free(&w->inbox.q);
    snprintf(err, errlen, "worker %u: out of memory", w->index);
    return -1;
  }
  w->engine.push = &w->push;
  /* With [cluster], its topics are counted for the broker from here. */
  jrpcd_cluster_worker_sync(&w->push, &w->inbox.cluster_epoch);
  return 0;
}

/* The per-bucket counts of a set whose flag is up, moved into out (and
 * the flag lowered); 0 when the flag is down. A plain load first: a drain
 * with nothing lost, the common one, pays no locked op and no walk over
 * the buckets. */
static int take_flagged(atomic_int *flag, _Atomic uint32_t *counts,
                        uint32_t *out) {
  if (!atomic_load_explicit(flag, memory_order_relaxed) ||
      !atomic_exchange(flag, 0))
    return 0;
  for (unsigned k = 0; k < JRPC__PUSH_LOST_BUCKETS; k++)
    out[k] = atomic_exchange(&counts[k], 0);
  return 1;
}

void jrpcd_hub_worker_drain(jrpcd_worker_t *w) {
  jrpcd_inbox_t *ib = &w->inbox;
  if (!ib->q.cells)
    return;
  uint32_t counts[JRPC__PUSH_LOST_BUCKETS];
  if (take_flagged(&ib->losing, ib->lost, counts))
    jrpc__push_lost(&w->push, counts);
  if (take_flagged(&ib->lagging, ib->lag, counts))
    jrpc__push_lag(&w->push, counts);
  jrpc__pubmsg_t *m;
  unsigned n = 0;
  while (n < DRAIN_BUDGET && (m = jrpc__inbox_pop(&ib->q)) != NULL) {
    jrpc__push_fanout(&w->push, m);
    jrpc__pubmsg_unref(m);
    n++;
  }
  if (n == DRAIN_BUDGET)
    uv_async_send(&w->wake); /* more may wait: after the loop's turn */
  jrpc__push_flush(&w->push);
}

void jrpcd_hub_worker_drain_all(jrpcd_worker_t *w) {
  for (unsigned k = 0; k < JRPCD_INBOX_SIZE / DRAIN_BUDGET; k++)
    jrpcd_hub_worker_drain(w);
}

void jrpcd_hub_worker_close(jrpcd_worker_t *w) {
  jrpcd_inbox_t *ib = &w->inbox;
  atomic_store(&ib->closed, 1);
  /* A publisher that looked before `closed` was set is a few
   * instructions from done: never blocked, so this wait is short. */
  while (atomic_load(&ib->publishing) != 0)
    sched_yield();
}

void jrpcd_hub_worker_free(jrpcd_worker_t *w) {
  if (w->engine.push)
    jrpc__push_free(&w->push);
  w->engine.push = NULL;
  jrpc__inbox_free(&w->inbox.q);
}

#define FIG(key, metric, type, help, member)                                   \
  { key, metric, type, help, offsetof(jrpc__push_stats_t, member) }
const jrpcd_push_fig_t jrpcd_push_figs[] = {
    FIG("subscriptions", "jrpcd_worker_subscriptions", "gauge",
        "Subscriptions open.", live),
    FIG("notifications", "jrpcd_worker_notifications_total", "counter",
        "Notifications queued to subscribers and callers.", delivered),
    FIG("dropped", "jrpcd_worker_notifications_dropped_total", "counter",
        "Notifications dropped: the connection had max_push_bytes queued.",
        dropped),
    FIG("lost", "jrpcd_worker_publishes_lost_total", "counter",
        "Published messages lost: the worker's inbox was full.", lost),
    FIG("lagged", "jrpcd_worker_lag_notices_total", "counter",
        "rpc.lagged notices sent.", lagged),
    FIG("refused", "jrpcd_worker_subscriptions_refused_total", "counter",
        "Subscriptions refused by max_subscriptions_per_connection or "
        "max_subscriptions.",
        refused),
    FIG("overflow_closed", "jrpcd_worker_push_overflow_closed_total", "counter",
        "Connections closed by push_overflow = close.", closed),
};
const size_t jrpcd_push_nfigs =
    sizeof(jrpcd_push_figs) / sizeof(jrpcd_push_figs[0]);

uint64_t jrpcd_push_fig_get(const jrpcd_worker_t *w,
                            const jrpcd_push_fig_t *f) {
  const char *base = (const char *)&w->push.stats;
  return JRPC__STAT_GET(*(jrpc__counter_t *)(base + f->offset));
}

uint64_t jrpcd_hub_queued(void *arg, jrpc__sink_t *sink) {
  (void)arg;
  const jrpcd_conn_t *c = jrpcd_conn_of_sink(sink);
  /* A write in flight of st.out's own bytes is still in st.out; a copy
   * (the rest of a TLS record, or of bytes not st.out's) is not. */
  uint64_t copied = c->writing && !c->wfrom_out ? c->wbytes : 0;
  return jrpc__out_pending(&c->st.out) + copied;
}

void jrpcd_hub_overflow(void *arg, jrpc__sink_t *sink) {
  (void)arg;
  jrpcd_conn_close(jrpcd_conn_of_sink(sink),
                   "push_overflow = close: notifications beyond "
                   "max_push_bytes");
}

int jrpcd_hub_random(void *arg, void *buf, size_t n) {
  (void)arg;
  ssize_t got;
  do
    got = getrandom(buf, n, 0);
  while (got < 0 && errno == EINTR);
  return got == (ssize_t)n ? 0 : -1;
}
