/* cluster.c - push across a fleet through NATS; see cluster.h. */
#include "cluster.h"

#include <inttypes.h>
#include <limits.h>
#include <nats/nats.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <uv.h>

#include "arena.h"
#include "common.h"
#include "hub.h"
#include "interest.h"
#include "parser.h"
#include "log.h"
#include "server.h"
#include "subject.h"

/* Messages waiting for the broker's thread; beyond, or beyond
 * cluster_buffer_bytes of them, a publish is dropped and counted. */
#define OUTBOX_SIZE 8192
/* The origin id: 16 random bytes in hex, then a space, before the JSON. */
#define ORIGIN_HEX 32
#define ORIGIN_N (ORIGIN_HEX + 1)

typedef struct cluster {
  jrpcd_server_t *srv;
  const jrpcd_config_t *conf;
  char origin[ORIGIN_N + 1];
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
  _Atomic uint64_t published, received, dropped, reconnects, invalid;
} cluster_t;

/* Set while [cluster] runs; read by publishers on any thread. */
static _Atomic(cluster_t *) active;

int jrpcd_cluster_on(void) {
  return atomic_load(&active) != NULL;
}

static void drop(cluster_t *c, jrpc__pubmsg_t *m) {
  atomic_fetch_add(&c->dropped, 1);
  jrpc__pubmsg_unref(m);
}

void jrpcd_cluster_forward(jrpc__pubmsg_t *m) {
  cluster_t *c = atomic_load(&active);
  if (!c) {
    jrpc__pubmsg_unref(m);
    return;
  }
  uint64_t size = (uint64_t)m->key_n + m->json_n;
  uint64_t was = atomic_fetch_add(&c->outbox_bytes, size);
  if (was + size > c->conf->cluster_buffer_bytes ||
      jrpc__inbox_push(&c->outbox, m) != 0) {
    atomic_fetch_sub(&c->outbox_bytes, size);
    drop(c, m);
    return;
  }
  uv_async_send(&c->wake);
}

void jrpcd_cluster_interest(void *arg, const char *key, size_t key_n,
                            int delta) {
  (void)arg;
  cluster_t *c = atomic_load(&active);
  if (!c)
    return;
  int rc = jrpcd_interest_change(&c->interest, key, key_n, delta);
  if (rc > 0)
    uv_async_send(&c->wake);
  else if (rc < 0)
    jrpcd_warn("[cluster]: out of memory: a topic's broker interest was not "
               "counted; its remote messages do not reach this instance");
}

void jrpcd_cluster_stats(jrpcd_cluster_stats_t *out) {
  cluster_t *c = atomic_load(&active);
  *out = (jrpcd_cluster_stats_t){0};
  if (!c)
    return;
  out->on = 1;
  out->connected = atomic_load(&c->connected);
  out->published = atomic_load(&c->published);
  out->received = atomic_load(&c->received);
  out->dropped = atomic_load(&c->dropped);
  out->reconnects = atomic_load(&c->reconnects);
  out->invalid = atomic_load(&c->invalid);
}

/* ---- the broker's side, on its threads ---- */

/* The key (module, NUL, topic) as a subject; -1 if too long. */
static int subject_of(const cluster_t *c, const char *key, size_t key_n,
                      char *out, size_t cap) {
  size_t ns_n = strnlen(key, key_n);
  if (ns_n == key_n)
    return -1;
  return jrpcd_subject(c->conf->cluster_subject_prefix, key, ns_n,
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
  const char *subj = natsMsg_GetSubject(msg);
  const char *data = natsMsg_GetData(msg);
  int n = natsMsg_GetDataLength(msg);
  size_t subj_n = strlen(subj);
  /* Names are at most as long as their subject. */
  char ns[JRPCD_SUBJECT_MAX], topic[JRPCD_SUBJECT_MAX];
  size_t ns_n, topic_n;
  if (n < ORIGIN_N || data[ORIGIN_HEX] != ' ' ||
      memcmp(data, c->origin, ORIGIN_HEX) == 0 || subj_n <= c->prefix_n + 1 ||
      jrpcd_subject_parse(subj + c->prefix_n + 1, subj_n - c->prefix_n - 1, ns,
                          sizeof ns, &ns_n, topic, sizeof topic,
                          &topic_n) != 0) {
    natsMsg_Destroy(msg); /* our own (delivered here already), or not ours */
    return;
  }
  if (!json_valid(c, data + ORIGIN_N, (size_t)n - ORIGIN_N)) {
    atomic_fetch_add(&c->invalid, 1);
    natsMsg_Destroy(msg);
    return;
  }
  if (jrpcd_hub_deliver(c->srv, ns, ns_n, topic, topic_n, data + ORIGIN_N,
                        (size_t)n - ORIGIN_N) == 0)
    atomic_fetch_add(&c->received, 1);
  natsMsg_Destroy(msg);
}

/* jrpcd_interest_take's apply: one topic's subscription at the broker. */
static int apply_interest(void *arg, const char *key, size_t key_n,
                          int subscribe, void **handle) {
  cluster_t *c = arg;
  if (!subscribe) {
    natsSubscription *sub = *handle;
    if (sub) {
      natsSubscription_Unsubscribe(sub);
      natsSubscription_Destroy(sub);
    }
    *handle = NULL;
    return 0;
  }
  char subj[JRPCD_SUBJECT_MAX + 1];
  if (subject_of(c, key, key_n, subj, sizeof subj) < 0)
    return 0; /* too long for a subject: local only, as when published */
  natsSubscription *sub = NULL;
  natsStatus s = natsConnection_Subscribe(&sub, c->nc, subj, on_message, c);
  if (s != NATS_OK) {
    jrpcd_warn("[cluster]: cannot subscribe to %s: %s", subj,
               natsStatus_GetText(s));
    return -1;
  }
  *handle = sub;
  return 0;
}

static void publish_one(cluster_t *c, jrpc__pubmsg_t *m) {
  char subj[JRPCD_SUBJECT_MAX + 1];
  atomic_fetch_sub(&c->outbox_bytes, (uint64_t)m->key_n + m->json_n);
  if (subject_of(c, m->data, m->key_n, subj, sizeof subj) < 0 ||
      (uint64_t)m->json_n + ORIGIN_N > INT32_MAX) {
    drop(c, m);
    return;
  }
  /* The origin id, then the JSON: one buffer for one Publish. */
  size_t len = ORIGIN_N + m->json_n;
  char *buf = malloc(len);
  if (!buf) {
    drop(c, m);
    return;
  }
  memcpy(buf, c->origin, ORIGIN_N);
  memcpy(buf + ORIGIN_N, jrpc__pubmsg_json(m), m->json_n);
  natsStatus s = natsConnection_Publish(c->nc, subj, buf, (int)len);
  free(buf);
  if (s == NATS_OK)
    atomic_fetch_add(&c->published, 1);
  else
    atomic_fetch_add(&c->dropped, 1); /* the reconnect buffer is full */
  jrpc__pubmsg_unref(m);
}

static void on_wake(uv_async_t *h) {
  cluster_t *c = h->data;
  if (atomic_load(&c->stopping)) {
    uv_close((uv_handle_t *)&c->wake, NULL);
    return;
  }
  jrpc__pubmsg_t *m;
  unsigned budget = 4096;
  while (budget-- && (m = jrpc__inbox_pop(&c->outbox)) != NULL)
    publish_one(c, m);
  if (budget == UINT_MAX)
    uv_async_send(&c->wake); /* more may wait */
  jrpcd_interest_take(&c->interest, apply_interest, c);
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
               c->conf->cluster_buffer_bytes);
}

/* Back: messages of other instances published meanwhile are gone, so the
 * subscribers of every topic this instance holds at the broker are told
 * (rpc.lagged). */
static void on_reconnected(natsConnection *nc, void *closure) {
  (void)nc;
  cluster_t *c = closure;
  atomic_store(&c->connected, 1);
  atomic_fetch_add(&c->reconnects, 1);
  jrpcd_info("[cluster]: the broker is back");
  jrpcd_interest_each_held(&c->interest, lag_held, c);
}

static natsStatus make_options(cluster_t *c, natsOptions **out) {
  const jrpcd_config_t *conf = c->conf;
  natsOptions *o = NULL;
  int nservers = 0;
  while (conf->cluster_nats[nservers])
    nservers++;
  natsStatus s = natsOptions_Create(&o);
  if (s == NATS_OK)
    s = natsOptions_SetServers(o, (const char **)conf->cluster_nats, nservers);
  if (s == NATS_OK)
    s = natsOptions_SetName(o, "jrpcd");
  /* Retried for ever, with backoff and jitter; a first connection that
   * fails is retried too, with the connection usable (buffering) meanwhile. */
  if (s == NATS_OK)
    s = natsOptions_SetMaxReconnect(o, -1);
  if (s == NATS_OK)
    s = natsOptions_SetReconnectWait(o, 500);
  if (s == NATS_OK)
    s = natsOptions_SetReconnectJitter(o, 250, 1000);
  if (s == NATS_OK)
    s = natsOptions_SetReconnectBufSize(o,
                                        conf->cluster_buffer_bytes > INT32_MAX
                                            ? INT32_MAX
                                            : (int)conf->cluster_buffer_bytes);
  if (s == NATS_OK)
    s = natsOptions_SetRetryOnFailedConnect(o, true, on_connected, c);
  if (s == NATS_OK)
    s = natsOptions_SetDisconnectedCB(o, on_disconnected, c);
  if (s == NATS_OK)
    s = natsOptions_SetReconnectedCB(o, on_reconnected, c);
  /* One delivery pool, not a thread per topic subscribed to. */
  if (s == NATS_OK)
    s = natsOptions_UseGlobalMessageDelivery(o, true);
  if (s == NATS_OK && conf->cluster_nats_creds)
    s = natsOptions_SetUserCredentialsFromFiles(o, conf->cluster_nats_creds,
                                                NULL);
  if (s == NATS_OK && conf->cluster_nats_tls_ca) {
    s = natsOptions_SetSecure(o, true);
    if (s == NATS_OK)
      s = natsOptions_LoadCATrustedCertificates(o, conf->cluster_nats_tls_ca);
  }
  if (s != NATS_OK)
    natsOptions_Destroy(o);
  else
    *out = o;
  return s;
}

static void cluster_free(cluster_t *c) {
  jrpc__pubmsg_t *m;
  while (c->outbox.cells && (m = jrpc__inbox_pop(&c->outbox)) != NULL)
    jrpc__pubmsg_unref(m);
  jrpc__inbox_free(&c->outbox);
  jrpcd_interest_free(&c->interest);
  if (c->check) {
    c->check->ops->destroy(c->check);
    jrpc__arena_free(&c->check_arena);
    pthread_mutex_destroy(&c->check_lock);
  }
  free(c);
}

int jrpcd_cluster_start(jrpcd_server_t *srv, char *err, size_t errlen) {
  const jrpcd_config_t *conf = &srv->conf;
  if (!conf->has_cluster)
    return 0;
  cluster_t *c = calloc(1, sizeof *c);
  unsigned char id[ORIGIN_HEX / 2];
  if (!c || jrpcd_hub_random(NULL, id, sizeof id) != 0) {
    free(c);
    snprintf(err, errlen, "[cluster]: no memory or no random origin id");
    return -1;
  }
  c->srv = srv;
  c->conf = conf;
  for (size_t i = 0; i < sizeof id; i++)
    snprintf(c->origin + 2 * i, 3, "%02x", id[i]);
  c->origin[ORIGIN_HEX] = ' ';
  c->prefix_n = strlen(conf->cluster_subject_prefix);
  jrpc__arena_init(&c->check_arena, 4096, 65536);
  pthread_mutex_init(&c->check_lock, NULL);
  if (jrpcd_interest_init(&c->interest) != 0 ||
      jrpc__inbox_init(&c->outbox, OUTBOX_SIZE) != 0 ||
      !(c->check = jrpc__parser_native_new())) {
    cluster_free(c);
    snprintf(err, errlen, "[cluster]: out of memory");
    return -1;
  }
  natsOptions *o = NULL;
  natsStatus s = make_options(c, &o);
  if (s == NATS_OK) {
    s = natsConnection_Connect(&c->nc, o);
    natsOptions_Destroy(o);
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
             natsStatus_GetText(s), nats_GetLastError(NULL));
    if (c->nc)
      natsConnection_Destroy(c->nc);
    cluster_free(c);
    return -1;
  }
  if (uv_loop_init(&c->loop) != 0 ||
      uv_async_init(&c->loop, &c->wake, on_wake) != 0) {
    natsConnection_Destroy(c->nc);
    cluster_free(c);
    snprintf(err, errlen, "[cluster]: cannot make its loop");
    return -1;
  }
  c->wake.data = c;
  if (pthread_create(&c->thread, NULL, run, c) != 0) {
    uv_close((uv_handle_t *)&c->wake, NULL);
    uv_run(&c->loop, UV_RUN_DEFAULT);
    uv_loop_close(&c->loop);
    natsConnection_Destroy(c->nc);
    cluster_free(c);
    snprintf(err, errlen, "[cluster]: cannot start its thread");
    return -1;
  }
  atomic_store(&active, c);
  jrpcd_info("[cluster]: publishing through %s%s as %.8s, subjects %s.*",
             conf->cluster_nats[0], conf->cluster_nats[1] ? " and others" : "",
             c->origin, conf->cluster_subject_prefix);
  return 0;
}

void jrpcd_cluster_stop(void) {
  cluster_t *c = atomic_exchange(&active, NULL);
  if (!c)
    return;
  atomic_store(&c->stopping, 1);
  uv_async_send(&c->wake);
  pthread_join(c->thread, NULL);
  uv_loop_close(&c->loop);
  /* Its last messages out, then closed; no callback comes after. */
  natsConnection_FlushTimeout(c->nc, 1000);
  natsConnection_Close(c->nc);
  natsConnection_Destroy(c->nc);
  cluster_free(c);
}
