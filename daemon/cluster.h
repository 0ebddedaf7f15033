/* cluster.h - push across a fleet through a NATS broker ([cluster],
 * cluster.c). Every publish is also handed to the broker's thread, which
 * sends it on PREFIX.MODULE.TOPIC (subject.h) with this run's random
 * origin id; each instance subscribes at the broker only to the topics its
 * own workers count (interest.h), and hands what it receives from other
 * instances to its workers' inboxes like a local publish (hub.h). Its own
 * messages coming back are ignored: they were delivered locally.
 *
 * One broker connection per daemon, driven by a thread of its own (a libuv
 * loop woken by publishers and by interest changes) and by the NATS
 * client's threads (reading, reconnecting, delivering). A worker never
 * calls the client: it puts the message into a bounded queue without a
 * lock, so a slow or absent broker never holds up a worker. Without
 * [cluster] nothing here runs and the hooks are NULL. */
#ifndef JRPCD_CLUSTER_H
#define JRPCD_CLUSTER_H

#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>

#include "config.h"
#include "push.h"
#include "pushq.h"

struct jrpcd_server;

/* The broker connection as rpc.stats and /metrics show it. */
typedef struct jrpcd_cluster_stats {
  int on;              /* [cluster] is set */
  int connected;       /* the broker is there now */
  uint64_t published;  /* messages handed to the broker */
  uint64_t received;   /* messages from other instances delivered here */
  uint64_t dropped;    /* broker-bound messages dropped: buffer full */
  uint64_t reconnects; /* connections made again after a loss */
  uint64_t invalid;    /* received, but not one JSON text: not delivered */
} jrpcd_cluster_stats_t;

#ifdef JRPC_HAVE_NATS
/* Whether conf's [cluster] can be used: the NATS client loads (the first
 * call loads it: nats_dl.h) and nats_creds and nats_tls_ca read. For -t,
 * and before every connection is made. 0; -1 with err. */
int jrpcd_cluster_check(const jrpcd_config_t *conf, char *err, size_t errlen);
/* Before the workers start, after the hub: with [cluster], its thread and
 * the connection (made in the background: a broker that is away delays
 * nothing). 0; -1 with err. */
int jrpcd_cluster_start(struct jrpcd_server *srv, char *err, size_t errlen);
/* SIGHUP, on the main thread, after everything else of the reload that
 * can fail, before the workers take the new generation: the one place
 * that decides about the broker connection. [cluster] as now has it
 * unchanged: the connection is kept as it is. Changed, added or removed:
 * a new connection is made (the old one stays if it cannot be: -1 with
 * err), publishes go to it from then on, the old one sends what it holds
 * and closes, and the workers count their topics into the new one as
 * they take the new generation (jrpcd_cluster_worker_sync); the
 * subscribers of topics the old one held are told of the gap (rpc.lagged)
 * when the new one subscribes to them, or at once when [cluster] is
 * gone. Logged either way. */
int jrpcd_cluster_reload(struct jrpcd_server *srv, const jrpcd_config_t *now,
                         char *err, size_t errlen);
/* After the last publisher (jrpcd_hub_stop), before the workers' inboxes
 * go: what the broker's thread holds goes out (or, the broker away, is
 * dropped and counted), then the connection closes. */
void jrpcd_cluster_stop(void);
/* On a worker's thread, at its start and as it takes a new generation:
 * p's interest hook follows the connection there is now, and p's topics
 * are counted into it if they are not yet (*epoch: the worker's, which
 * connection it counts for). */
void jrpcd_cluster_worker_sync(jrpc__push_t *p, unsigned *epoch);
/* cluster.c's connection while [cluster] runs, else NULL: read only
 * through jrpcd_cluster_on. */
extern _Atomic(void *) jrpcd_cluster_active;
/* Whether publishes go to a broker (then hub.c hands each one over).
 * Inline: every publish asks, with [cluster] or without. */
static inline int jrpcd_cluster_on(void) {
  return atomic_load_explicit(&jrpcd_cluster_active, memory_order_relaxed) !=
         NULL;
}
/* Any thread: m (one reference, the cluster's) to the broker. */
void jrpcd_cluster_forward(jrpc__pubmsg_t *m);
/* jrpc__push_limits_t.interest: a worker's first or last subscription on
 * a topic. */
void jrpcd_cluster_interest(void *arg, const char *key, size_t key_n,
                            int delta);
void jrpcd_cluster_stats(jrpcd_cluster_stats_t *out);
#else
static inline int jrpcd_cluster_start(struct jrpcd_server *srv, char *err,
                                      size_t errlen) {
  (void)srv;
  (void)err;
  (void)errlen;
  return 0;
}
static inline int jrpcd_cluster_reload(struct jrpcd_server *srv,
                                       const jrpcd_config_t *now, char *err,
                                       size_t errlen) {
  (void)srv;
  (void)now;
  (void)err;
  (void)errlen;
  return 0;
}
static inline int jrpcd_cluster_check(const jrpcd_config_t *conf, char *err,
                                      size_t errlen) {
  (void)conf;
  (void)err;
  (void)errlen;
  return 0;
}
static inline void jrpcd_cluster_stop(void) {}
static inline void jrpcd_cluster_worker_sync(jrpc__push_t *p, unsigned *epoch) {
  (void)p;
  (void)epoch;
}
static inline int jrpcd_cluster_on(void) {
  return 0;
}
static inline void jrpcd_cluster_forward(jrpc__pubmsg_t *m) {
  jrpc__pubmsg_unref(m);
}
#define jrpcd_cluster_interest NULL
static inline void jrpcd_cluster_stats(jrpcd_cluster_stats_t *out) {
  *out = (jrpcd_cluster_stats_t){0};
}
#endif

#endif
