/* push.h - server push in the engine: the subscriptions of one engine's
 * connections, the fan-out of a published message to them, the bound on
 * what a connection may have queued, and the notice of what it lost.
 *
 * A subscription lives on the worker of its connection, in two tables:
 * by topic (a list per topic) and by id. It holds copies of its names and
 * no pointer to a module's code or memory, so a reload can never make it
 * call into an unloaded plugin. A connection's queued output above
 * max_bytes drops notifications (never replies): each subscription that
 * lost some drops all further ones until the connection's output has
 * drained, and then gets one rpc.lagged notice saying how many. */
#ifndef JRPC_PUSH_H
#define JRPC_PUSH_H

#include <stddef.h>
#include <stdint.h>

#include "async.h"
#include "outbuf.h"
#include "pushq.h"
#include "stats.h"

struct jrpc__engine;
struct jrpc__sub;
struct jrpc__topic;
struct jrpc__subkind;

typedef struct jrpc__push_limits {
  uint64_t max_bytes;     /* queued output above which notifications drop */
  uint32_t max_per_conn;  /* subscriptions per connection */
  uint8_t overflow_close; /* close the connection instead of dropping */
  /* Subscriptions of every engine of the daemon, and their limit. */
  _Atomic uint64_t *total;
  uint64_t max_total;
  /* A topic's first subscription on this engine (delta 1) and its last
   * gone (-1): a fleet's broker subscribes to what some engine counts
   * ([cluster]). NULL: nobody asks. */
  void (*interest)(void *arg, const char *key, size_t key_n, int delta);
  void *interest_arg;
} jrpc__push_limits_t;

/* One writer each (the engine's thread), any reader. */
typedef struct jrpc__push_stats {
  jrpc__counter_t delivered; /* notifications queued to a connection */
  jrpc__counter_t dropped;   /* notifications dropped: output full */
  jrpc__counter_t lost;      /* messages lost to a full inbox */
  jrpc__counter_t lagged;    /* rpc.lagged notices sent */
  jrpc__counter_t refused;   /* subscriptions refused by a limit */
  jrpc__counter_t closed;    /* connections closed by push_overflow */
  jrpc__counter_t live;      /* subscriptions now (a gauge) */
} jrpc__push_stats_t;

/* A connection's side: its subscriptions and what they lost. */
typedef struct jrpc__push_conn {
  jrpc__link_t subs; /* jrpc__sub_t.at_conn */
  jrpc__sink_t *sink;
  uint32_t nsubs;
  uint32_t nlagging;                  /* subscriptions with drops */
  struct jrpc__push_conn *next_touch; /* on the engine's touched list */
  uint8_t touched;
  uint8_t overflowed; /* push_overflow = close: to be closed */
} jrpc__push_conn_t;

/* Messages lost to a full inbox, per bucket of topic hashes. */
#define JRPC__PUSH_LOST_BUCKETS 256

typedef struct jrpc__push {
  struct jrpc__engine *e;
  jrpc__push_limits_t lim;
  jrpc__push_stats_t stats;
  struct jrpc__topic **topics; /* chained, by key hash */
  uint32_t topic_mask, ntopics;
  struct jrpc__sub **ids; /* chained, by the id's first word */
  uint32_t id_mask, nids;
  struct jrpc__subkind *kinds;
  jrpc__push_conn_t *touched; /* connections given output this turn */
  jrpc__outbuf_t scratch;     /* one notification being written */
} jrpc__push_t;

int jrpc__push_init(jrpc__push_t *p, struct jrpc__engine *e,
                    const jrpc__push_limits_t *lim);
/* Ends every subscription (their connections must be gone). */
void jrpc__push_free(jrpc__push_t *p);
/* On the engine's thread: lim.interest and its arg from now on (a fleet's
 * broker connection added or replaced at a reload); a hook set is told of
 * every topic the engine holds now (delta 1). */
void jrpc__push_set_interest(jrpc__push_t *p,
                             void (*interest)(void *arg, const char *key,
                                              size_t key_n, int delta),
                             void *arg);

/* jrpc_subscribe_accept: on the connection of the frame being answered,
 * in its subscription method's handler. */
int jrpc__push_accept(jrpc_call_t *c, const char *topic, size_t n);
/* The handler of every unsubscribe method (engine code, never a module's):
 * true when the caller's connection had this subscription of this kind. */
int jrpc__push_unsubscribe(jrpc_call_t *c, jrpc_val_t params, void *udata);
/* jrpc_notify on a deferred call. */
int jrpc__push_notify(jrpc_call_t *c, const char *method, const char *json,
                      size_t n);

/* A message for every subscription of its topic here; then
 * jrpc__push_flush once the messages at hand are all fanned out. */
void jrpc__push_fanout(jrpc__push_t *p, const jrpc__pubmsg_t *m);
/* lost[k] messages of topics in hash bucket k never reached this engine
 * (its inbox was full): each of their subscriptions counts them as
 * dropped. */
void jrpc__push_lost(jrpc__push_t *p, const uint32_t *lost);
/* The host says that lag[k] messages of topics in hash bucket k may have
 * been lost before they reached it (with [cluster], while the broker was
 * away): each of their subscriptions is told now (rpc.lagged with that
 * count), and goes on receiving what this engine has; one already behind,
 * or without room for the notice, counts them as dropped instead. */
void jrpc__push_lag(jrpc__push_t *p, const uint32_t *lag);
/* Tells the host of each connection given output since the last flush
 * (host->output), or, with push_overflow = close, to close it. */
void jrpc__push_flush(jrpc__push_t *p);
/* The host: sink's output has all gone out. Its subscriptions that lost
 * notifications get their rpc.lagged notice (onto sink's output). */
void jrpc__push_drained(jrpc__push_t *p, jrpc__sink_t *sink);
/* The connection is going: its subscriptions end. */
void jrpc__push_detach(jrpc__push_t *p, jrpc__sink_t *sink);
/* A new generation serves, and view is what sink's connection may call
 * now: its subscriptions whose method view no longer serves end (the
 * module gone, or the method hidden or denied to it now); those of a
 * module kept, still allowed, stay. */
void jrpc__push_review(jrpc__push_t *p, jrpc__sink_t *sink,
                       const jrpc__registry_t *view);

/* jrpc_subscription (api.c): a subscription method's names as
 * jrpc__method_t.push keeps them, or NULL (no memory, or a notification
 * name that would need escaping in JSON). */
char *jrpc__push_names(const char *notification, const char *unsubscribe);

/* Publishing from any thread reaches the host through this, set by a host
 * with workers before its modules load and cleared after they are gone. */
typedef struct jrpc__pub_host {
  /* 0, JRPC_ENOMEM, or JRPC_ECANCELED once the host is stopping. */
  int (*publish)(void *arg, const char *ns, size_t ns_n, const char *topic,
                 size_t topic_n, const char *json, size_t json_n);
  void *arg;
} jrpc__pub_host_t;
void jrpc__push_set_pub_host(const jrpc__pub_host_t *h);
/* jrpc_publisher and jrpc_publish (api.c). */
jrpc_pub_t *jrpc__push_publisher(jrpc__regctx_t *ctx);
int jrpc__push_publish(jrpc_pub_t *pub, const char *topic, size_t topic_n,
                       const char *json, size_t n);
/* At exit, after every module's fini: the publishers' memory. */
void jrpc__push_publishers_free(void);

#endif
