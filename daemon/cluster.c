/* cluster.c - push across a fleet through NATS; see cluster.h. */
#include "cluster.h"

#include <errno.h>
#include <inttypes.h>
#include <limits.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <sched.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <uv.h>

#include "arena.h"
#include "common.h"
#include "config_keys.h"
#include "hub.h"
#include "interest.h"
#include "parser.h"
#include "log.h"
#include "nats_dl.h"
#include "server.h"
#include "subject.h"

/* Messages waiting for the broker's thread; beyond, or beyond
 * cluster_buffer_bytes of them, a publish is dropped and counted. */
#define OUTBOX_SIZE 8192
/* The origin id: 16 random bytes in hex, then a space, before the JSON. */
#define ORIGIN_HEX 32
#define ORIGIN_N (ORIGIN_HEX + 1)
/* How long the end of a connection waits for the client's last calls. */
#define END_WAIT_S 5

typedef struct cluster {
  jrpcd_server_t *srv;
  /* Its own copy of the [cluster] keys (and nothing else): a reload
   * compares the file's with them, and frees the file's. */
  jrpcd_config_t conf;
  unsigned epoch; /* which connection of this run: workers count for one */
  size_t prefix_n;
  jrpcd_interest_t interest;
  jrpc__inbox_t outbox;
  _Atomic uint64_t outbox_bytes;
  natsConnection *nc;
  uv_loop_t loop;
  uv_async_t wake;
  pthread_t thread;
  /* What other instances send is checked to be one JSON text before a
   * subscriber sees it: whoever may publish on the broker must not forge
   * replies or break a connection's framing. One parser, for the NATS
   * client's delivery threads in turn. */
  pthread_mutex_t check_lock;
  jrpc__parser_t *check;
  jrpc__arena_t check_arena;
  atomic_int stopping;
  atomic_int connected;
  /* Publishes the client took while the broker was away: they are lost
   * if the connection closes before it is back. */
  _Atomic uint64_t held_away;
  atomic_uint synced; /* workers counting into interest */
  atomic_int forget;  /* all of them are: carried leftovers go */
  /* The client calls back from its own threads until the connection's
   * closed callback and each subscription's completion: c is freed only
   * after those (cluster_end). */
  pthread_mutex_t end_lock;
  pthread_cond_t end_cond;
  int closed;
  unsigned subs_live;
} cluster_t;

/* The counters of the run, kept across the connections a reload makes. */
static struct {
  _Atomic uint64_t published, received, dropped, reconnects, invalid;
} totals;

/* This run's origin id, the same on every connection it makes. */
static char origin[ORIGIN_N + 1];
static unsigned last_epoch;

/* Set while [cluster] runs; read by publishers and workers on any thread,
 * each between enter() and leave(): a reload that replaces it waits for
 * them to leave before the old one goes. */
_Atomic(void *) jrpcd_cluster_active;
static atomic_uint users;

/* The NATS client, loaded by the first jrpcd_cluster_check. */
static const jrpcd_nats_t *nats;

static cluster_t *enter(void) {
  atomic_fetch_add(&users, 1);
  return atomic_load(&jrpcd_cluster_active);
}

static void leave(void) {
  atomic_fetch_sub(&users, 1);
}

static void drop(jrpc__pubmsg_t *m) {
  atomic_fetch_add(&totals.dropped, 1);
  jrpc__pubmsg_unref(m);
}

void jrpcd_cluster_forward(jrpc__pubmsg_t *m) {
  cluster_t *c = enter();
  uint64_t size = (uint64_t)m->key_n + m->json_n;
  /* No connection: [cluster] went at a reload after m's publisher looked. */
  if (!c) {
    drop(m);
  } else if (atomic_fetch_add(&c->outbox_bytes, size) + size >
                 c->conf.cluster_buffer_bytes ||
             jrpc__inbox_push(&c->outbox, m) != 0) {
    atomic_fetch_sub(&c->outbox_bytes, size);
    drop(m);
  } else {
    uv_async_send(&c->wake);
  }
  leave();
}

/* The hook's arg is the worker's epoch (jrpcd_cluster_worker_sync): a
 * worker that has not yet counted its topics into the current
 * connection's table does not count changes into it either. */
void jrpcd_cluster_interest(void *arg, const char *key, size_t key_n,
                            int delta) {
  cluster_t *c = enter();
  int rc = c && *(const unsigned *)arg == c->epoch
               ? jrpcd_interest_change(&c->interest, key, key_n, delta)
               : 0;
  if (rc > 0)
    uv_async_send(&c->wake);
  else if (rc < 0)
    jrpcd_warn("[cluster]: out of memory: a topic's broker interest was not "
               "counted; its remote messages do not reach this instance");
  leave();
}

void jrpcd_cluster_worker_sync(jrpc__push_t *p, unsigned *epoch) {
  cluster_t *c = enter();
  unsigned now = c ? c->epoch : 0;
  if (*epoch != now) {
    *epoch = now;
    jrpc__push_set_interest(p, c ? jrpcd_cluster_interest : NULL, epoch);
    if (c && atomic_fetch_add(&c->synced, 1) + 1 ==
                 __atomic_load_n(&c->srv->nworkers, __ATOMIC_ACQUIRE)) {
      atomic_store(&c->forget, 1);
      uv_async_send(&c->wake);
    }
  }
  leave();
}

void jrpcd_cluster_stats(jrpcd_cluster_stats_t *out) {
  cluster_t *c = enter();
  *out = (jrpcd_cluster_stats_t){0};
  if (c) {
    out->on = 1;
    out->connected = atomic_load(&c->connected);
    out->published = atomic_load(&totals.published);
    out->received = atomic_load(&totals.received);
    out->dropped = atomic_load(&totals.dropped);
    out->reconnects = atomic_load(&totals.reconnects);
    out->invalid = atomic_load(&totals.invalid);
  }
  leave();
}

/* ---- the broker's side, on its threads ---- */

/* The key (module, NUL, topic) as a subject; -1 if too long. */
static int subject_of(const cluster_t *c, const char *key, size_t key_n,
                      char *out, size_t cap) {
  size_t ns_n = strnlen(key, key_n);
  if (ns_n == key_n)
    return -1;
  return jrpcd_subject(c->conf.cluster_subject_prefix, key, ns_n,
                       key + ns_n + 1, key_n - ns_n - 1, out, cap);
}

/* Whether json[0..n) is one JSON text (any value). */
static int json_valid(cluster_t *c, const char *json, size_t n) {
  char *buf = malloc(n + JRPC__PAD);
  if (!buf)
    return 0;
  memcpy(buf, json, n);
  memset(buf + n, 0, JRPC__PAD); /* the parsers read ahead in blocks */
  jrpc__parsed_t out;
  pthread_mutex_lock(&c->check_lock);
  int rc =
      c->check->ops->parse(c->check, buf, n, &c->check_arena, UINT32_MAX, &out);
  jrpc__arena_reset(&c->check_arena);
  pthread_mutex_unlock(&c->check_lock);
  free(buf);
  return rc == 0 && out.status != JRPC__PARSE_INVALID;
}

/* NATS's delivery thread: a message of some instance of the fleet. */
static void on_message(natsConnection *nc, natsSubscription *sub, natsMsg *msg,
                       void *closure) {
  (void)nc;
  (void)sub;
  cluster_t *c = closure;
  const char *subj = nats->natsMsg_GetSubject(msg);
  const char *data = nats->natsMsg_GetData(msg);
  int n = nats->natsMsg_GetDataLength(msg);
  size_t subj_n = strlen(subj);
  /* Names are at most as long as their subject. */
  char ns[JRPCD_SUBJECT_MAX], topic[JRPCD_SUBJECT_MAX];
  size_t ns_n, topic_n;
  if (n < ORIGIN_N || data[ORIGIN_HEX] != ' ' ||
      memcmp(data, origin, ORIGIN_HEX) == 0 || subj_n <= c->prefix_n + 1 ||
      jrpcd_subject_parse(subj + c->prefix_n + 1, subj_n - c->prefix_n - 1, ns,
                          sizeof ns, &ns_n, topic, sizeof topic,
                          &topic_n) != 0) {
    nats->natsMsg_Destroy(
        msg); /* our own (delivered here already), or not ours */
    return;
  }
  if (!json_valid(c, data + ORIGIN_N, (size_t)n - ORIGIN_N)) {
    atomic_fetch_add(&totals.invalid, 1);
    nats->natsMsg_Destroy(msg);
    return;
  }
  if (jrpcd_hub_deliver(c->srv, ns, ns_n, topic, topic_n, data + ORIGIN_N,
                        (size_t)n - ORIGIN_N) == 0)
    atomic_fetch_add(&totals.received, 1);
  nats->natsMsg_Destroy(msg);
}

/* The client's last calls for c: the connection closed, and each
 * subscription's handler returned for good. */
static void end_step(cluster_t *c, int closed, int subs) {
  pthread_mutex_lock(&c->end_lock);
  c->closed |= closed;
  c->subs_live += (unsigned)subs;
  pthread_cond_broadcast(&c->end_cond);
  pthread_mutex_unlock(&c->end_lock);
}

static void on_closed(natsConnection *nc, void *closure) {
  (void)nc;
  end_step(closure, 1, 0);
}

static void on_sub_done(void *closure) {
  end_step(closure, 0, -1);
}

/* A subscription at the broker, ended. */
static void let_go(void *arg, void *handle) {
  (void)arg;
  if (handle) {
    nats->natsSubscription_Unsubscribe(handle);
    nats->natsSubscription_Destroy(handle);
  }
}

/* jrpcd_interest_take's apply: one topic's subscription at the broker. */
static int apply_interest(void *arg, const char *key, size_t key_n,
                          int subscribe, void **handle) {
  cluster_t *c = arg;
  if (!subscribe) {
    let_go(c, *handle);
    *handle = NULL;
    return 0;
  }
  char subj[JRPCD_SUBJECT_MAX + 1];
  if (subject_of(c, key, key_n, subj, sizeof subj) < 0)
    return 0; /* too long for a subject: local only, as when published */
  natsSubscription *sub = NULL;
  end_step(c, 0, 1);
  natsStatus s =
      nats->natsConnection_Subscribe(&sub, c->nc, subj, on_message, c);
  if (s == NATS_OK)
    s = nats->natsSubscription_SetOnCompleteCB(sub, on_sub_done, c);
  if (s != NATS_OK) {
    let_go(c, sub);
    end_step(c, 0, -1);
    jrpcd_warn("[cluster]: cannot subscribe to %s: %s", subj,
               nats->natsStatus_GetText(s));
    return -1;
  }
  *handle = sub;
  /* The connection this one replaced held it: what came between the two
   * is lost, as at a broker loss. */
  if (subscribe == JRPCD_INTEREST_AGAIN)
    jrpcd_hub_lag(c->srv, key, key_n);
  return 0;
}

static jrpc__pubmsg_t *outbox_pop(cluster_t *c) {
  jrpc__pubmsg_t *m = jrpc__inbox_pop(&c->outbox);
  if (m)
    atomic_fetch_sub(&c->outbox_bytes, (uint64_t)m->key_n + m->json_n);
  return m;
}

static void publish_one(cluster_t *c, jrpc__pubmsg_t *m) {
  char subj[JRPCD_SUBJECT_MAX + 1];
  if (subject_of(c, m->data, m->key_n, subj, sizeof subj) < 0 ||
      (uint64_t)m->json_n + ORIGIN_N > INT32_MAX) {
    drop(m);
    return;
  }
  /* The origin id, then the JSON: one buffer for one Publish. */
  size_t len = ORIGIN_N + m->json_n;
  char *buf = malloc(len);
  if (!buf) {
    drop(m);
    return;
  }
  memcpy(buf, origin, ORIGIN_N);
  memcpy(buf + ORIGIN_N, jrpc__pubmsg_json(m), m->json_n);
  natsStatus s = nats->natsConnection_Publish(c->nc, subj, buf, (int)len);
  free(buf);
  if (s == NATS_OK) {
    atomic_fetch_add(&totals.published, 1);
    if (!atomic_load(&c->connected))
      atomic_fetch_add(&c->held_away, 1);
  } else {
    atomic_fetch_add(&totals.dropped, 1); /* the reconnect buffer is full */
  }
  jrpc__pubmsg_unref(m);
}

/* The connection is ending (a stop, or a reload that replaced it): what
 * its outbox still holds goes out through it if its broker is there,
 * else to the connection that replaced it (or is dropped and counted). */
static void last_out(cluster_t *c) {
  jrpc__pubmsg_t *m;
  while ((m = outbox_pop(c)) != NULL) {
    if (atomic_load(&c->connected))
      publish_one(c, m);
    else
      jrpcd_cluster_forward(m);
  }
}

static void on_wake(uv_async_t *h) {
  cluster_t *c = h->data;
  if (atomic_load(&c->stopping)) {
    last_out(c);
    uv_close((uv_handle_t *)&c->wake, NULL);
    return;
  }
  jrpc__pubmsg_t *m;
  unsigned budget = 4096;
  while (budget-- && (m = outbox_pop(c)) != NULL)
    publish_one(c, m);
  if (budget == UINT_MAX)
    uv_async_send(&c->wake); /* more may wait */
  jrpcd_interest_take(&c->interest, apply_interest, c);
  if (atomic_exchange(&c->forget, 0))
    jrpcd_interest_forget_carried(&c->interest);
}

static void *run(void *arg) {
  cluster_t *c = arg;
  uv_run(&c->loop, UV_RUN_DEFAULT);
  return NULL;
}

static void lag_held(void *arg, const char *key, size_t key_n) {
  cluster_t *c = arg;
  jrpcd_hub_lag(c->srv, key, key_n);
}

static void on_connected(natsConnection *nc, void *closure) {
  (void)nc;
  cluster_t *c = closure;
  atomic_store(&c->connected, 1);
  atomic_store(&c->held_away, 0);
  jrpcd_info("[cluster]: connected to the broker");
}

static void on_disconnected(natsConnection *nc, void *closure) {
  (void)nc;
  cluster_t *c = closure;
  if (atomic_load(&c->stopping))
    return;
  /* Messages of other instances are lost from now on: the subscribers of
   * every topic held at the broker are told at once, and again when it is
   * back (on_reconnected). */
  jrpcd_interest_each_held(&c->interest, lag_held, c);
  if (atomic_exchange(&c->connected, 0))
    jrpcd_warn("[cluster]: lost the broker: serving, delivering locally, "
               "holding up to %" PRIu64 " bytes for it, retrying",
               c->conf.cluster_buffer_bytes);
}

/* Back: messages of other instances published meanwhile are gone, so the
 * subscribers of every topic this instance holds at the broker are told
 * (rpc.lagged). */
static void on_reconnected(natsConnection *nc, void *closure) {
  (void)nc;
  cluster_t *c = closure;
  atomic_store(&c->connected, 1);
  atomic_store(&c->held_away, 0);
  atomic_fetch_add(&totals.reconnects, 1);
  jrpcd_info("[cluster]: the broker is back");
  jrpcd_interest_each_held(&c->interest, lag_held, c);
}

static natsStatus make_options(cluster_t *c, natsOptions **out) {
  const jrpcd_config_t *conf = &c->conf;
  natsOptions *o = NULL;
  int nservers = 0;
  while (conf->cluster_nats[nservers])
    nservers++;
  natsStatus s = nats->natsOptions_Create(&o);
  if (s == NATS_OK)
    s = nats->natsOptions_SetServers(o, (const char **)conf->cluster_nats,
                                     nservers);
  if (s == NATS_OK)
    s = nats->natsOptions_SetName(o, "jrpcd");
  /* Retried for ever, with backoff and jitter; a first connection that
   * fails is retried too, with the connection usable (buffering) meanwhile. */
  if (s == NATS_OK)
    s = nats->natsOptions_SetMaxReconnect(o, -1);
  if (s == NATS_OK)
    s = nats->natsOptions_SetReconnectWait(o, 500);
  if (s == NATS_OK)
    s = nats->natsOptions_SetReconnectJitter(o, 250, 1000);
  if (s == NATS_OK)
    s = nats->natsOptions_SetReconnectBufSize(
        o, conf->cluster_buffer_bytes > INT32_MAX
               ? INT32_MAX
               : (int)conf->cluster_buffer_bytes);
  if (s == NATS_OK)
    s = nats->natsOptions_SetRetryOnFailedConnect(o, true, on_connected, c);
  if (s == NATS_OK)
    s = nats->natsOptions_SetDisconnectedCB(o, on_disconnected, c);
  if (s == NATS_OK)
    s = nats->natsOptions_SetReconnectedCB(o, on_reconnected, c);
  if (s == NATS_OK)
    s = nats->natsOptions_SetClosedCB(o, on_closed, c);
  /* One delivery pool, not a thread per topic subscribed to. */
  if (s == NATS_OK)
    s = nats->natsOptions_UseGlobalMessageDelivery(o, true);
  /* The broker does not send this connection's publishes back: they were
   * delivered here already, and reading and dropping each one again cost
   * the publishing instance about as much as the publish. The origin id
   * still catches the rest (a reload's old connection publishing while
   * the new one listens). */
  if (s == NATS_OK)
    s = nats->natsOptions_SetNoEcho(o, true);
  if (s == NATS_OK && conf->cluster_nats_creds)
    s = nats->natsOptions_SetUserCredentialsFromFiles(
        o, conf->cluster_nats_creds, NULL);
  if (s == NATS_OK && conf->cluster_nats_tls_ca) {
    s = nats->natsOptions_SetSecure(o, true);
    if (s == NATS_OK)
      s = nats->natsOptions_LoadCATrustedCertificates(
          o, conf->cluster_nats_tls_ca);
  }
  if (s != NATS_OK)
    nats->natsOptions_Destroy(o);
  else
    *out = o;
  return s;
}

/* ---- making, replacing and ending a connection ---- */

/* dst: the [cluster] keys of src, copied through the key table (dst's
 * other fields zero). 0; -1 out of memory. */
static int copy_keys(jrpcd_config_t *dst, const jrpcd_config_t *src) {
  memset(dst, 0, sizeof *dst);
  dst->has_cluster = 1;
  dst->file = strdup(src->file ? src->file : "");
  if (!dst->file)
    return -1;
  for (size_t i = 0; i < jrpcd_nkeys; i++) {
    const jrpcd_key_t *k = &jrpcd_keys[i];
    char text[8192], why[256];
    if (k->section == JRPCD_SEC_CLUSTER &&
        jrpcd_key_format(k, src, text, sizeof text) &&
        jrpcd_key_parse(k, text, dst, why, sizeof why) != 0)
      return -1;
  }
  return 0;
}

static void free_keys(jrpcd_config_t *conf) {
  for (size_t i = 0; i < jrpcd_nkeys; i++)
    if (jrpcd_keys[i].section == JRPCD_SEC_CLUSTER)
      jrpcd_key_free(&jrpcd_keys[i], conf);
  free(conf->file);
  conf->file = NULL;
}

/* The [cluster] keys that differ between a and b, "nats, subject_prefix",
 * into out; 0 when none does. */
static int keys_changed(const jrpcd_config_t *a, const jrpcd_config_t *b,
                        char *out, size_t cap) {
  size_t off = 0;
  int n = 0;
  out[0] = '\0';
  for (size_t i = 0; i < jrpcd_nkeys; i++) {
    const jrpcd_key_t *k = &jrpcd_keys[i];
    if (k->section != JRPCD_SEC_CLUSTER || jrpcd_key_same(k, a, b))
      continue;
    int w = snprintf(out + off, cap - off, "%s%s", n++ ? ", " : "", k->name);
    if (w > 0 && (size_t)w < cap - off)
      off += (size_t)w;
  }
  return n;
}

static void cluster_free(cluster_t *c) {
  jrpc__pubmsg_t *m;
  while (c->outbox.cells && (m = jrpc__inbox_pop(&c->outbox)) != NULL)
    drop(m);
  jrpc__inbox_free(&c->outbox);
  jrpcd_interest_let_go(&c->interest, let_go, c);
  jrpcd_interest_free(&c->interest);
  if (c->check) {
    c->check->ops->destroy(c->check);
    jrpc__arena_free(&c->check_arena);
    pthread_mutex_destroy(&c->check_lock);
  }
  free_keys(&c->conf);
  pthread_cond_destroy(&c->end_cond);
  pthread_mutex_destroy(&c->end_lock);
  free(c);
}

/* Waits (up to END_WAIT_S) for the client's last callbacks for c: 1 when
 * they came. */
static int ended(cluster_t *c) {
  struct timespec until;
  clock_gettime(CLOCK_REALTIME, &until);
  until.tv_sec += END_WAIT_S;
  int rc = 0;
  pthread_mutex_lock(&c->end_lock);
  while (rc == 0 && !(c->closed && c->subs_live == 0))
    rc = pthread_cond_timedwait(&c->end_cond, &c->end_lock, &until);
  int done = c->closed && c->subs_live == 0;
  pthread_mutex_unlock(&c->end_lock);
  return done;
}

/* c's connection closed and c freed once the client has done with it. */
static void close_and_free(cluster_t *c) {
  if (!c->nc) {
    cluster_free(c);
    return;
  }
  atomic_store(&c->stopping, 1);
  /* Its subscriptions end first, each calling on_sub_done once its
   * handler has returned; then the connection, whose closed callback is
   * the client's last (a disconnected one before it finds stopping set). */
  jrpcd_interest_let_go(&c->interest, let_go, c);
  nats->natsConnection_Close(c->nc);
  if (!ended(c)) {
    /* Never seen; freeing c under the client's threads would be worse
     * than keeping it. */
    jrpcd_warn("[cluster]: the NATS client did not finish with a "
               "connection in %d s: its memory is kept",
               END_WAIT_S);
    return;
  }
  nats->natsConnection_Destroy(c->nc);
  cluster_free(c);
}

/* The client reads nats_creds and nats_tls_ca at each connection attempt,
 * and retries for ever when they fail: one it cannot read is said now
 * (at start, or as a reload's reason to keep the connection it has). */
static int files_unreadable(const jrpcd_config_t *conf, char *err,
                            size_t errlen) {
  const char *keys[2] = {"nats_creds", "nats_tls_ca"};
  const char *paths[2] = {conf->cluster_nats_creds, conf->cluster_nats_tls_ca};
  for (int i = 0; i < 2; i++) {
    FILE *f = paths[i] ? fopen(paths[i], "r") : NULL;
    if (paths[i] && (!f || fgetc(f) == EOF)) {
      snprintf(err, errlen, "%s: [cluster] %s: cannot read %s: %s", conf->file,
               keys[i], paths[i], f ? "it is empty" : strerror(errno));
      if (f)
        fclose(f);
      return -1;
    }
    if (f)
      fclose(f);
  }
  return 0;
}

int jrpcd_cluster_check(const jrpcd_config_t *conf, char *err, size_t errlen) {
  if (!nats) {
    char why[512];
    if (!(nats = jrpcd_nats_load(why, sizeof why))) {
      snprintf(err, errlen, "%s: %s", conf->file, why);
      return -1;
    }
  }
  return files_unreadable(conf, err, errlen);
}

/* A connection for conf's [cluster], its thread running, not yet the
 * active one. NULL with err. */
static cluster_t *cluster_make(jrpcd_server_t *srv, const jrpcd_config_t *conf,
                               char *err, size_t errlen) {
  if (jrpcd_cluster_check(conf, err, errlen))
    return NULL;
  cluster_t *c = calloc(1, sizeof *c);
  if (!c) {
    snprintf(err, errlen, "[cluster]: out of memory");
    return NULL;
  }
  c->srv = srv;
  c->epoch = ++last_epoch;
  unsigned char id[ORIGIN_HEX / 2];
  if (!origin[0]) { /* the first connection of this run */
    if (jrpcd_hub_random(NULL, id, sizeof id) != 0) {
      free(c);
      snprintf(err, errlen, "[cluster]: no random origin id");
      return NULL;
    }
    for (size_t i = 0; i < sizeof id; i++)
      snprintf(origin + 2 * i, 3, "%02x", id[i]);
    origin[ORIGIN_HEX] = ' ';
  }
  jrpc__arena_init(&c->check_arena, 4096, 65536);
  pthread_mutex_init(&c->check_lock, NULL);
  pthread_mutex_init(&c->end_lock, NULL);
  pthread_cond_init(&c->end_cond, NULL);
  if (copy_keys(&c->conf, conf) != 0 ||
      jrpcd_interest_init(&c->interest) != 0 ||
      jrpc__inbox_init(&c->outbox, OUTBOX_SIZE) != 0 ||
      !(c->check = jrpc__parser_native_new())) {
    cluster_free(c);
    snprintf(err, errlen, "[cluster]: out of memory");
    return NULL;
  }
  c->prefix_n = strlen(c->conf.cluster_subject_prefix);
  natsOptions *o = NULL;
  natsStatus s = make_options(c, &o);
  if (s == NATS_OK) {
    s = nats->natsConnection_Connect(&c->nc, o);
    nats->natsOptions_Destroy(o);
    if (s == NATS_NOT_YET_CONNECTED) {
      jrpcd_warn("[cluster]: the broker is not there yet: serving, "
                 "delivering locally, retrying");
      s = NATS_OK;
    } else if (s == NATS_OK) {
      atomic_store(&c->connected, 1);
    }
  }
  if (s != NATS_OK) {
    snprintf(err, errlen, "%s: [cluster]: %s: %s", conf->file,
             nats->natsStatus_GetText(s), nats->nats_GetLastError(NULL));
    close_and_free(c);
    return NULL;
  }
  if (uv_loop_init(&c->loop) != 0 ||
      uv_async_init(&c->loop, &c->wake, on_wake) != 0) {
    close_and_free(c);
    snprintf(err, errlen, "[cluster]: cannot make its loop");
    return NULL;
  }
  c->wake.data = c;
  if (pthread_create(&c->thread, NULL, run, c) != 0) {
    uv_close((uv_handle_t *)&c->wake, NULL);
    uv_run(&c->loop, UV_RUN_DEFAULT);
    uv_loop_close(&c->loop);
    close_and_free(c);
    snprintf(err, errlen, "[cluster]: cannot start its thread");
    return NULL;
  }
  return c;
}

/* Makes c the connection publishes and interest go to (NULL: none), and
 * returns the one it replaces once no thread uses that any more. */
static cluster_t *swap_active(cluster_t *c) {
  cluster_t *was = atomic_exchange(&jrpcd_cluster_active, c);
  /* Whoever loaded `was` is a few instructions from leaving: it never
   * blocks in between. */
  while (atomic_load(&users) != 0)
    sched_yield();
  return was;
}

/* Ends c (no longer active): its thread sends what it still holds and
 * stops, then the connection closes. Publishes the client held for a
 * broker that is away are lost with it: counted as dropped. */
static void cluster_end(cluster_t *c) {
  atomic_store(&c->stopping, 1);
  uv_async_send(&c->wake);
  pthread_join(c->thread, NULL);
  uv_loop_close(&c->loop);
  natsStatus s = atomic_load(&c->connected)
                     ? nats->natsConnection_FlushTimeout(c->nc, 1000)
                     : NATS_OK;
  if (s != NATS_OK) /* how many is the client's to know, not ours */
    jrpcd_warn("[cluster]: the broker did not confirm the last messages "
               "in 1 s (%s): some may be lost as its connection closes",
               nats->natsStatus_GetText(s));
  uint64_t lost = atomic_load(&c->connected) ? 0 : atomic_load(&c->held_away);
  if (lost) {
    atomic_fetch_add(&totals.dropped, lost);
    jrpcd_warn("[cluster]: %" PRIu64 " messages held for a broker that was "
               "away are dropped with its connection",
               lost);
  }
  close_and_free(c);
}

static void lag_all(cluster_t *c) {
  jrpcd_interest_each_held(&c->interest, lag_held, c);
}

static void log_started(const cluster_t *c) {
  const jrpcd_config_t *conf = &c->conf;
  jrpcd_info("[cluster]: publishing through %s%s as %.8s, subjects %s.*",
             conf->cluster_nats[0], conf->cluster_nats[1] ? " and others" : "",
             origin, conf->cluster_subject_prefix);
}

/* The servers of conf, as the file has them ("nats://a nats://b"). */
static void urls_of(const jrpcd_config_t *conf, char *out, size_t cap) {
  if (!jrpcd_key_format(jrpcd_key_find(JRPCD_SEC_CLUSTER, "nats"), conf, out,
                        cap))
    snprintf(out, cap, "none");
}

int jrpcd_cluster_start(jrpcd_server_t *srv, char *err, size_t errlen) {
  if (!srv->conf.has_cluster)
    return 0;
  cluster_t *c = cluster_make(srv, &srv->conf, err, errlen);
  if (!c)
    return -1;
  atomic_store(&jrpcd_cluster_active, c);
  log_started(c);
  return 0;
}

int jrpcd_cluster_reload(jrpcd_server_t *srv, const jrpcd_config_t *now,
                         char *err, size_t errlen) {
  cluster_t *was =
      atomic_load(&jrpcd_cluster_active); /* only this thread changes it */
  char keys[256] = "", from[512] = "", to[512] = "";
  if (!was && !now->has_cluster)
    return 0;
  if (was && now->has_cluster &&
      keys_changed(&was->conf, now, keys, sizeof keys) == 0) {
    jrpcd_info("[cluster] unchanged: broker connection kept");
    return 0;
  }
  cluster_t *c = NULL;
  if (now->has_cluster) {
    char why[768];
    if (!(c = cluster_make(srv, now, why, sizeof why))) {
      snprintf(err, errlen, "%s; %s", why,
               was ? "the broker connection is kept as it was"
                   : "no broker connection is made");
      return -1;
    }
    urls_of(&c->conf, to, sizeof to);
    /* Its first subscription to each topic the old one held tells that
     * topic's subscribers of the gap between the two; short of memory,
     * they hear now. */
    if (was && jrpcd_interest_carry(&c->interest, &was->interest) != 0)
      lag_all(was);
  }
  if (was)
    urls_of(&was->conf, from, sizeof from);
  /* From here publishes go to c; the workers count their topics into it
   * as they take the new generation (jrpcd_cluster_worker_sync). */
  swap_active(c);
  if (was) {
    if (!c)
      lag_all(was); /* remote messages end here */
    cluster_end(was);
  }
  if (c && was)
    jrpcd_info("[cluster] replaced (%s changed): %s -> %s", keys, from, to);
  else if (c)
    jrpcd_info("[cluster] added: %s", to);
  else
    jrpcd_info("[cluster] removed: the connection to %s is closed, "
               "delivering locally only",
               from);
  if (c)
    log_started(c);
  return 0;
}

void jrpcd_cluster_stop(void) {
  cluster_t *c = swap_active(NULL);
  if (c)
    cluster_end(c);
}
