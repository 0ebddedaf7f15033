/* hub.h - server push across the workers (hub.c): jrpc_publish hands a
 * message to every worker's inbox (lib/pushq.h) and wakes it; each worker
 * fans it out to its own connections' subscriptions (lib/push.h). Also
 * the host's side of push: queued bytes, push_overflow, random ids. */
#ifndef JRPCD_HUB_H
#define JRPCD_HUB_H

#include <stdatomic.h>

#include "push.h"
#include "pushq.h"

struct jrpcd_server;
struct jrpcd_worker;

/* Messages a worker's inbox holds before a publish to it is dropped (and
 * counted, and its subscribers told). */
#define JRPCD_INBOX_SIZE 4096

typedef struct jrpcd_inbox {
  jrpc__inbox_t q;
  /* Messages dropped because q was full, by bucket of topic hash;
   * `losing` says whether any is set, so that a drain looks only then. */
  _Atomic uint32_t lost[JRPC__PUSH_LOST_BUCKETS];
  atomic_int losing;
  /* Losses before this instance (jrpcd_hub_lag), by bucket; `lagging`
   * says whether any is set, so that a drain looks only then. */
  _Atomic uint32_t lag[JRPC__PUSH_LOST_BUCKETS];
  atomic_int lagging;
  atomic_int closed;      /* the worker's wake-up handle is going */
  atomic_uint publishing; /* publishers between their check and wake-up */
  /* [cluster]: the broker connection this worker counts its topics for
   * (jrpcd_cluster_worker_sync); 0: none. The worker's own. */
  unsigned cluster_epoch;
} jrpcd_inbox_t;

/* Before the first plugin loads: jrpc_publish reaches srv's workers. */
void jrpcd_hub_start(struct jrpcd_server *srv);
/* After the last plugin's fini: publishing ends, publishers are freed. */
void jrpcd_hub_stop(void);

/* In jrpcd_worker_start: w's inbox and subscriptions. -1 with err. */
int jrpcd_hub_worker_init(struct jrpcd_worker *w, char *err, size_t errlen);
/* On w's loop, when woken: the inbox's messages to their subscribers. */
void jrpcd_hub_worker_drain(struct jrpcd_worker *w);
/* On w's loop, as it stops: what the inbox holds now, to the subscribers
 * (as much as it can hold: bounded while publishers go on). */
void jrpcd_hub_worker_drain_all(struct jrpcd_worker *w);
/* On w's loop, before its wake-up handle closes: no publisher touches it
 * after this returns. */
void jrpcd_hub_worker_close(struct jrpcd_worker *w);
/* With the worker's engine, before it goes. */
void jrpcd_hub_worker_free(struct jrpcd_worker *w);

/* Any thread ([cluster]'s, with a message from another instance): to
 * every worker's subscribers, like a local publish, but not to the broker
 * again. 0, JRPC_ENOMEM, JRPC_ECANCELED (stopping). */
int jrpcd_hub_deliver(struct jrpcd_server *srv, const char *ns, size_t ns_n,
                      const char *topic, size_t topic_n, const char *json,
                      size_t json_n);
/* Any thread: the subscribers of the topic KEY (module, NUL, topic) may
 * have lost messages before they reached this instance: each worker tells
 * them (rpc.lagged, one more lost) at its next drain, and delivers the
 * messages it has as before (jrpc__push_lag). Also the other topics of
 * its bucket of hashes. */
void jrpcd_hub_lag(struct jrpcd_server *srv, const char *key, size_t key_n);

/* Server push's counters, as rpc.stats ("push": {key: n}, summed over
 * workers) and /metrics (per worker) show them: one row each. */
typedef struct jrpcd_push_fig {
  const char *key;    /* rpc.stats */
  const char *metric; /* /metrics */
  const char *type;   /* counter or gauge */
  const char *help;
  size_t offset; /* in jrpc__push_stats_t */
} jrpcd_push_fig_t;
extern const jrpcd_push_fig_t jrpcd_push_figs[];
extern const size_t jrpcd_push_nfigs;
/* Figure f of worker w. */
uint64_t jrpcd_push_fig_get(const struct jrpcd_worker *w,
                            const jrpcd_push_fig_t *f);

/* The host's push callbacks (jrpc__host_t). */
uint64_t jrpcd_hub_queued(void *arg, jrpc__sink_t *sink);
void jrpcd_hub_overflow(void *arg, jrpc__sink_t *sink);
int jrpcd_hub_random(void *arg, void *buf, size_t n);

#endif
