/* push.c - subscriptions, fan-out and the bound on queued notifications;
 * see push.h. Nothing here runs for a connection that never subscribed
 * or was never sent a notification. */
#include "push.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#ifdef __SSE2__
#include <emmintrin.h>
#endif

#include "common.h"
#include "dispatch.h"
#include "module.h"
#include "view.h"

#define CONTAINER(p, type, member)                                             \
  ((type *)((char *)(p)-offsetof(type, member)))

#define ID_BYTES 16
#define ID_HEX (2 * ID_BYTES)

/* What subscriptions of one subscription method share: the names it
 * sends and is ended by, and its module's name (its topics' namespace). */
typedef struct jrpc__subkind {
  struct jrpc__subkind *next;
  uint32_t refs;
  char *ns;
  char *method;  /* the subscription method */
  char *names;   /* notification, NUL, unsubscribe method (jrpc__method_t) */
  size_t note_n; /* strlen of the notification's name: once, not per note */
} jrpc__subkind_t;

/* Chained tables: each node starts with its next pointer. */
typedef struct chain {
  struct chain *next;
} chain_t;

typedef struct jrpc__topic {
  struct jrpc__topic *next;
  uint32_t hash, key_n;
  jrpc__link_t subs; /* jrpc__sub_t.at_topic */
  char key[];        /* module name, NUL, topic */
} jrpc__topic_t;

typedef struct jrpc__sub {
  struct jrpc__sub *next; /* in its id chain */
  jrpc__link_t at_topic, at_conn;
  jrpc__topic_t *topic;
  jrpc__push_conn_t *conn;
  jrpc__subkind_t *kind;
  uint64_t dropped; /* notifications lost since its last notice */
  uint8_t id[ID_BYTES];
} jrpc__sub_t;

static uint32_t id_hash(const uint8_t *id) {
  uint32_t h;
  memcpy(&h, id, sizeof(h)); /* random already */
  return h;
}
static uint32_t topic_hash_of(const chain_t *n) {
  return ((const jrpc__topic_t *)n)->hash;
}
static uint32_t sub_hash_of(const chain_t *n) {
  return id_hash(((const jrpc__sub_t *)n)->id);
}

/* Doubles a chained table when it holds as many nodes as buckets. */
static int table_room(chain_t ***tab, uint32_t *mask, uint32_t count,
                      uint32_t (*hash_of)(const chain_t *)) {
  if (*tab && count < *mask + 1)
    return 0;
  uint32_t n = *tab ? 2 * (*mask + 1) : 16;
  chain_t **fresh = calloc(n, sizeof(*fresh));
  if (!fresh)
    return *tab ? 0 : JRPC_ENOMEM; /* longer chains, still correct */
  for (uint32_t i = 0; *tab && i <= *mask; i++) {
    for (chain_t *c = (*tab)[i], *next; c; c = next) {
      next = c->next;
      chain_t **b = &fresh[hash_of(c) & (n - 1)];
      c->next = *b;
      *b = c;
    }
  }
  free(*tab);
  *tab = fresh;
  *mask = n - 1;
  return 0;
}

static void table_unlink(chain_t **tab, uint32_t mask, chain_t *node,
                         uint32_t hash) {
  for (chain_t **at = &tab[hash & mask]; *at; at = &(*at)->next) {
    if (*at == node) {
      *at = node->next;
      return;
    }
  }
}

int jrpc__push_init(jrpc__push_t *p, struct jrpc__engine *e,
                    const jrpc__push_limits_t *lim) {
  memset(p, 0, sizeof(*p));
  p->e = e;
  p->lim = *lim;
  jrpc__out_init(&p->scratch, &e->pool);
  jrpc__out_small_segments(&p->scratch);
  if (table_room((chain_t ***)&p->topics, &p->topic_mask, 0, topic_hash_of) ||
      table_room((chain_t ***)&p->ids, &p->id_mask, 0, sub_hash_of)) {
    free(p->topics);
    return JRPC_ENOMEM;
  }
  return 0;
}

/* ---- kinds, topics ---- */

/* The bytes of a jrpc__method_t.push: both names and their NULs. */
static size_t names_len(const char *names) {
  size_t n = strlen(names) + 1;
  return n + strlen(names + n) + 1;
}

static jrpc__subkind_t *kind_get(jrpc__push_t *p, const char *ns,
                                 const jrpc__method_t *m) {
  size_t names_n = names_len(m->push);
  for (jrpc__subkind_t *k = p->kinds; k; k = k->next) {
    if (strcmp(k->ns, ns) == 0 && strcmp(k->method, m->name) == 0 &&
        memcmp(k->names, m->push, names_n) == 0) {
      k->refs++;
      return k;
    }
  }
  jrpc__subkind_t *k = calloc(1, sizeof(*k));
  char *ns_copy = strdup(ns);
  char *method_copy = strdup(m->name);
  char *names_copy = malloc(names_n);
  if (!k || !ns_copy || !method_copy || !names_copy) {
    free(k);
    free(ns_copy);
    free(method_copy);
    free(names_copy);
    return NULL;
  }
  memcpy(names_copy, m->push, names_n);
  k->ns = ns_copy;
  k->method = method_copy;
  k->names = names_copy;
  k->note_n = strlen(names_copy);
  k->refs = 1;
  k->next = p->kinds;
  p->kinds = k;
  return k;
}

static void kind_unref(jrpc__push_t *p, jrpc__subkind_t *k) {
  if (--k->refs)
    return;
  for (jrpc__subkind_t **at = &p->kinds; *at; at = &(*at)->next) {
    if (*at == k) {
      *at = k->next;
      break;
    }
  }
  free(k->ns);
  free(k->method);
  free(k->names);
  free(k);
}

static jrpc__topic_t *topic_find(const jrpc__push_t *p, const char *key,
                                 uint32_t key_n, uint32_t hash) {
  for (jrpc__topic_t *t = p->topics[hash & p->topic_mask]; t; t = t->next)
    if (t->hash == hash && t->key_n == key_n && memcmp(t->key, key, key_n) == 0)
      return t;
  return NULL;
}

static jrpc__topic_t *topic_get(jrpc__push_t *p, const char *key,
                                uint32_t key_n) {
  uint32_t hash = jrpc__name_hash(key, key_n);
  jrpc__topic_t *t = topic_find(p, key, key_n, hash);
  if (t)
    return t;
  if (table_room((chain_t ***)&p->topics, &p->topic_mask, p->ntopics,
                 topic_hash_of))
    return NULL;
  t = malloc(sizeof(*t) + key_n);
  if (!t)
    return NULL;
  t->hash = hash;
  t->key_n = key_n;
  memcpy(t->key, key, key_n);
  jrpc__link_init(&t->subs);
  t->next = p->topics[hash & p->topic_mask];
  p->topics[hash & p->topic_mask] = t;
  p->ntopics++;
  if (p->lim.interest)
    p->lim.interest(p->lim.interest_arg, key, key_n, 1);
  return t;
}

static void topic_maybe_free(jrpc__push_t *p, jrpc__topic_t *t) {
  if (t->subs.next != &t->subs)
    return;
  table_unlink((chain_t **)p->topics, p->topic_mask, (chain_t *)t, t->hash);
  p->ntopics--;
  if (p->lim.interest)
    p->lim.interest(p->lim.interest_arg, t->key, t->key_n, -1);
  free(t);
}

void jrpc__push_set_interest(jrpc__push_t *p,
                             void (*interest)(void *arg, const char *key,
                                              size_t key_n, int delta),
                             void *arg) {
  p->lim.interest = interest;
  p->lim.interest_arg = arg;
  for (uint32_t i = 0; interest && i <= p->topic_mask; i++)
    for (jrpc__topic_t *t = p->topics[i]; t; t = t->next)
      interest(arg, t->key, t->key_n, 1);
}

/* ---- subscriptions ---- */

static jrpc__sub_t *sub_find(const jrpc__push_t *p, const uint8_t *id) {
  for (jrpc__sub_t *s = p->ids[id_hash(id) & p->id_mask]; s; s = s->next)
    if (memcmp(s->id, id, ID_BYTES) == 0)
      return s;
  return NULL;
}

static void sub_end(jrpc__push_t *p, jrpc__sub_t *s) {
  jrpc__link_drop(&s->at_topic);
  topic_maybe_free(p, s->topic);
  jrpc__link_drop(&s->at_conn);
  s->conn->nsubs--;
  if (s->dropped)
    s->conn->nlagging--;
  table_unlink((chain_t **)p->ids, p->id_mask, (chain_t *)s, id_hash(s->id));
  p->nids--;
  kind_unref(p, s->kind);
  if (p->lim.total)
    atomic_fetch_sub(p->lim.total, 1);
  JRPC__STAT_ADD(p->stats.live, (uint64_t)-1);
  free(s);
}

static void untouch(jrpc__push_t *p, jrpc__push_conn_t *pc) {
  for (jrpc__push_conn_t **at = &p->touched; pc->touched && *at;
       at = &(*at)->next_touch) {
    if (*at == pc) {
      *at = pc->next_touch;
      pc->touched = 0;
    }
  }
}

void jrpc__push_detach(jrpc__push_t *p, jrpc__sink_t *sink) {
  jrpc__push_conn_t *pc = sink->push;
  if (!pc)
    return;
  while (pc->subs.next != &pc->subs)
    sub_end(p, CONTAINER(pc->subs.next, jrpc__sub_t, at_conn));
  untouch(p, pc);
  free(pc);
  sink->push = NULL;
}

void jrpc__push_free(jrpc__push_t *p) {
  for (uint32_t i = 0; p->ids && i <= p->id_mask; i++) {
    while (p->ids[i]) {
      jrpc__push_conn_t *pc = p->ids[i]->conn;
      jrpc__push_detach(p, pc->sink);
    }
  }
  free(p->ids);
  free(p->topics);
  p->ids = NULL;
  p->topics = NULL;
  jrpc__out_free(&p->scratch);
}

static jrpc__push_conn_t *conn_of(jrpc__sink_t *sink) {
  if (sink->push)
    return sink->push;
  jrpc__push_conn_t *pc = calloc(1, sizeof(*pc));
  if (!pc)
    return NULL;
  jrpc__link_init(&pc->subs);
  pc->sink = sink;
  sink->push = pc;
  return pc;
}

/* Every notification writes its subscription's id: with SSE2 (every
 * x86-64) all 16 bytes at once, each byte's nibbles spread to a byte each,
 * then '0'..'9' or 'a'..'f' (39 more where a nibble is above 9): about 20
 * instructions where the byte loop takes about 200. */
static void to_hex(char *out, const uint8_t *id) {
#ifdef __SSE2__
  _Static_assert(ID_BYTES == 16, "one SSE2 register of id");
  const __m128i low4 = _mm_set1_epi8(15), nine = _mm_set1_epi8(9);
  const __m128i zero = _mm_set1_epi8('0'), af = _mm_set1_epi8('a' - '0' - 10);
  __m128i v = _mm_loadu_si128((const __m128i *)(const void *)id);
  __m128i hi = _mm_and_si128(_mm_srli_epi16(v, 4), low4);
  __m128i lo = _mm_and_si128(v, low4);
  __m128i n[2] = {_mm_unpacklo_epi8(hi, lo), _mm_unpackhi_epi8(hi, lo)};
  for (int i = 0; i < 2; i++) {
    __m128i c = _mm_add_epi8(n[i], zero);
    c = _mm_add_epi8(c, _mm_and_si128(_mm_cmpgt_epi8(n[i], nine), af));
    _mm_storeu_si128((__m128i *)(void *)(out + 16 * i), c);
  }
#else
  static const char digits[] = "0123456789abcdef";
  for (int i = 0; i < ID_BYTES; i++) {
    out[2 * i] = digits[id[i] >> 4];
    out[2 * i + 1] = digits[id[i] & 15];
  }
#endif
}

static int from_hex(uint8_t *id, const char *s, size_t n) {
  if (n != ID_HEX)
    return -1;
  for (size_t i = 0; i < n; i++) {
    char ch = s[i];
    int v = ch >= '0' && ch <= '9'   ? ch - '0'
            : ch >= 'a' && ch <= 'f' ? ch - 'a' + 10
                                     : -1;
    if (v < 0)
      return -1;
    if (i % 2 == 0)
      id[i / 2] = (uint8_t)(v << 4);
    else
      id[i / 2] |= (uint8_t)v;
  }
  return 0;
}

/* The call's error, and what the handler is to return. */
static int refuse(jrpc__call_t *call, int code, const char *msg) {
  jrpc__call_set_error(call, code, msg, 0);
  return JRPC_EFAIL;
}

/* The module a method came from names its topics' space. */
static const char *module_name(const jrpc__method_t *m) {
  const jrpc__module_t *mod = m ? m->owner : NULL;
  return mod && mod->info && mod->info->name ? mod->info->name : "";
}

/* A new id, unique on this engine; unguessable with the host's random. */
static int new_id(jrpc__push_t *p, uint8_t *id) {
  const jrpc__host_t *h = p->e->host;
  for (int tries = 0; tries < 4; tries++) {
    if (!h->random || h->random(p->e->host_arg, id, ID_BYTES) != 0)
      return -1;
    if (!sub_find(p, id))
      return 0;
  }
  return -1;
}

/* Below the limits: 0; else the call's error is set. */
static int within_limits(jrpc__push_t *p, jrpc__call_t *call,
                         const jrpc__push_conn_t *pc) {
  char msg[128];
  if (pc->nsubs >= p->lim.max_per_conn) {
    snprintf(msg, sizeof(msg),
             "too many subscriptions on this connection "
             "(max_subscriptions_per_connection = %u)",
             p->lim.max_per_conn);
  } else if (p->lim.total &&
             atomic_fetch_add(p->lim.total, 1) >= p->lim.max_total) {
    atomic_fetch_sub(p->lim.total, 1);
    snprintf(msg, sizeof(msg),
             "too many subscriptions (max_subscriptions = %llu)",
             (unsigned long long)p->lim.max_total);
  } else {
    return 0;
  }
  JRPC__STAT_INC(p->stats.refused);
  return refuse(call, JRPC_TOO_MANY_SUBSCRIPTIONS, msg);
}

int jrpc__push_accept(jrpc_call_t *c, const char *topic, size_t n) {
  jrpc__call_t *call = (jrpc__call_t *)c;
  jrpc__engine_t *e = call->e;
  const jrpc__method_t *m = call->method;
  jrpc__sink_t *sink = e->sink;
  if (call->is_deferred || call->notify || !m || !m->push || !sink ||
      (!topic && n))
    return JRPC_EINVAL; /* no id could reach anyone */
  jrpc__push_t *p = e->push;
  if (!p || !sink->notify)
    return refuse(call, JRPC_PUSH_UNSUPPORTED,
                  "subscriptions need a streaming transport (a newline, "
                  "length or content-length framing, or a WebSocket): an "
                  "HTTP POST cannot carry the server's notifications");
  jrpc__push_conn_t *pc = conn_of(sink);
  if (!pc)
    return refuse(call, JRPC_INTERNAL_ERROR, "out of memory");
  if (within_limits(p, call, pc) != 0)
    return JRPC_EFAIL;
  const char *ns = module_name(m);
  size_t ns_n = strlen(ns);
  size_t key_n = ns_n + 1 + n;
  char *key =
      key_n <= UINT32_MAX ? jrpc__arena_alloc(call->arena, key_n) : NULL;
  jrpc__sub_t *s = calloc(1, sizeof(*s));
  int ok =
      key && s && new_id(p, s->id) == 0 &&
      table_room((chain_t ***)&p->ids, &p->id_mask, p->nids, sub_hash_of) == 0;
  if (ok) {
    memcpy(key, ns, ns_n + 1);
    if (n)
      memcpy(key + ns_n + 1, topic, n);
    s->kind = kind_get(p, ns, m);
  }
  if (ok && s->kind)
    s->topic = topic_get(p, key, (uint32_t)key_n);
  if (!ok || !s->kind || !s->topic) {
    if (s && s->kind)
      kind_unref(p, s->kind);
    free(s);
    if (p->lim.total)
      atomic_fetch_sub(p->lim.total, 1);
    return refuse(call, JRPC_INTERNAL_ERROR,
                  ok ? "out of memory" : "no subscription id could be made");
  }
  s->conn = pc;
  jrpc__link_push(&s->topic->subs, &s->at_topic);
  jrpc__link_push(&pc->subs, &s->at_conn);
  pc->nsubs++;
  chain_t **b = (chain_t **)&p->ids[id_hash(s->id) & p->id_mask];
  s->next = (jrpc__sub_t *)*b;
  *b = (chain_t *)s;
  p->nids++;
  JRPC__STAT_INC(p->stats.live);
  char hex[ID_HEX];
  to_hex(hex, s->id);
  return jrpc__writer_str(&call->w, hex, ID_HEX);
}

int jrpc__push_unsubscribe(jrpc_call_t *c, jrpc_val_t params, void *udata) {
  (void)udata;
  jrpc__call_t *call = (jrpc__call_t *)c;
  jrpc__engine_t *e = call->e;
  jrpc_val_t v = jrpc__view_type(params) == JRPC_T_ARRAY
                     ? jrpc__view_at(params, 0)
                     : jrpc__view_get(params, "subscription", 12);
  const char *raw;
  size_t n;
  if (jrpc__view_type(v) != JRPC_T_STRING || jrpc__view_raw(v, &raw, &n) != 0)
    return refuse(call, JRPC_INVALID_PARAMS,
                  "expected the subscription's id: [\"ID\"] or "
                  "{\"subscription\": \"ID\"}");
  uint8_t id[ID_BYTES];
  jrpc__push_t *p = e->push;
  jrpc__sub_t *s = NULL;
  if (p && e->sink && e->sink->push && from_hex(id, raw + 1, n - 2) == 0)
    s = sub_find(p, id);
  /* Only the connection that made it may end it, and only through its
   * own kind's unsubscribe method. */
  const char *unsub = s ? s->kind->names + strlen(s->kind->names) + 1 : NULL;
  int mine = s && s->conn == e->sink->push && call->method &&
             strcmp(unsub, call->method->name) == 0;
  if (mine)
    sub_end(p, s);
  return jrpc__writer_bool(&call->w, mine);
}

/* ---- notifications ---- */

#define NOTE_HEAD "{\"jsonrpc\":\"2.0\",\"method\":\""
#define PUT_LIT(o, s) jrpc__out_put((o), (s), sizeof(s) - 1)

/* The sink's queued bytes, and what one more message of n would make. */
static int has_room(jrpc__push_t *p, jrpc__sink_t *sink, size_t n) {
  const jrpc__host_t *h = p->e->host;
  uint64_t queued = h->queued ? h->queued(p->e->host_arg, sink)
                              : jrpc__out_pending(sink->out);
  return queued + n <= p->lim.max_bytes;
}

/* scratch's message onto the sink, framed; nothing of it stays. */
static void send_scratch(jrpc__push_t *p, jrpc__sink_t *sink) {
  if (!p->scratch.oom)
    sink->notify(sink, &p->scratch);
  uint64_t left = jrpc__out_pending(&p->scratch);
  if (left)
    jrpc__out_consume(&p->scratch, (size_t)left);
  p->scratch.oom = 0;
}

static void touch(jrpc__push_t *p, jrpc__push_conn_t *pc) {
  if (pc->touched)
    return;
  pc->touched = 1;
  pc->next_touch = p->touched;
  p->touched = pc;
}

/* The connection is touched too: with nothing queued for it (a full
 * inbox lost the messages, not its output), its host learns only so that
 * it has drained, and sends the notice. */
static void drop(jrpc__push_t *p, jrpc__sub_t *s, uint64_t n) {
  if (!s->dropped)
    s->conn->nlagging++;
  s->dropped += n;
  JRPC__STAT_ADD(p->stats.dropped, n);
  touch(p, s->conn);
}

/* {"jsonrpc":"2.0","method":M,"params":{"subscription":ID,X}} where X is
 * "result":json or "dropped":N (member is "result" or "dropped", with its
 * quotes). The value has no CR or LF: a published message lost them in
 * jrpc__pubmsg_new, once for all its subscriptions. */
#define NOTE_MEMBER(name) "\"" name "\":"
static void write_note(jrpc__outbuf_t *o, const jrpc__subkind_t *kind,
                       const char *id, const char *member, size_t member_n,
                       const char *value, size_t n) {
  PUT_LIT(o, NOTE_HEAD);
  jrpc__out_put(o, kind ? kind->names : "rpc.lagged",
                kind ? kind->note_n : sizeof("rpc.lagged") - 1);
  PUT_LIT(o, "\",\"params\":{\"subscription\":\"");
  jrpc__out_put(o, id, ID_HEX);
  PUT_LIT(o, "\",");
  jrpc__out_put(o, member, member_n);
  jrpc__out_put(o, value, n);
  PUT_LIT(o, "}}");
}

static void sub_deliver(jrpc__push_t *p, jrpc__sub_t *s, const char *json,
                        size_t n) {
  jrpc__push_conn_t *pc = s->conn;
  if (pc->overflowed)
    return; /* closing */
  if (s->dropped) {
    /* Behind already: nothing more until its notice has gone out, so
     * that what arrives after a gap always follows the notice of it. */
    drop(p, s, 1);
    return;
  }
  size_t size = sizeof(NOTE_HEAD) + s->kind->note_n + ID_HEX + 48 + n;
  if (!has_room(p, pc->sink, size)) {
    if (p->lim.overflow_close) {
      pc->overflowed = 1;
      touch(p, pc);
    } else {
      drop(p, s, 1);
    }
    return;
  }
  char hex[ID_HEX];
  to_hex(hex, s->id);
  write_note(&p->scratch, s->kind, hex, NOTE_MEMBER("result"),
             sizeof(NOTE_MEMBER("result")) - 1, json, n);
  send_scratch(p, pc->sink);
  JRPC__STAT_INC(p->stats.delivered);
  touch(p, pc);
}

void jrpc__push_fanout(jrpc__push_t *p, const jrpc__pubmsg_t *m) {
  jrpc__topic_t *t = topic_find(p, m->data, m->key_n, m->hash);
  if (!t)
    return;
  const char *json = jrpc__pubmsg_json(m);
  for (jrpc__link_t *l = t->subs.next; l != &t->subs; l = l->next)
    sub_deliver(p, CONTAINER(l, jrpc__sub_t, at_topic), json, m->json_n);
}

void jrpc__push_lost(jrpc__push_t *p, const uint32_t *lost) {
  for (uint32_t i = 0; i <= p->topic_mask; i++) {
    for (jrpc__topic_t *t = p->topics[i]; t; t = t->next) {
      uint32_t n = lost[t->hash % JRPC__PUSH_LOST_BUCKETS];
      for (jrpc__link_t *l = t->subs.next; n && l != &t->subs; l = l->next)
        drop(p, CONTAINER(l, jrpc__sub_t, at_topic), n);
    }
  }
  for (uint32_t k = 0; k < JRPC__PUSH_LOST_BUCKETS; k++)
    JRPC__STAT_ADD(p->stats.lost, lost[k]);
}

void jrpc__push_flush(jrpc__push_t *p) {
  const jrpc__host_t *h = p->e->host;
  jrpc__push_conn_t *pc;
  while ((pc = p->touched) != NULL) {
    p->touched = pc->next_touch;
    pc->touched = 0;
    if (pc->overflowed) {
      JRPC__STAT_INC(p->stats.closed);
      if (h->overflow)
        h->overflow(p->e->host_arg, pc->sink); /* pc goes with it */
    } else if (h->output) {
      h->output(p->e->host_arg, pc->sink);
    }
  }
}

/* s's rpc.lagged notice, for n messages, onto its connection's output. */
static void lag_note(jrpc__push_t *p, jrpc__sub_t *s, uint64_t n) {
  char hex[ID_HEX], num[24];
  to_hex(hex, s->id);
  int k = snprintf(num, sizeof(num), "%llu", (unsigned long long)n);
  write_note(&p->scratch, NULL, hex, NOTE_MEMBER("dropped"),
             sizeof(NOTE_MEMBER("dropped")) - 1, num, (size_t)k);
  send_scratch(p, s->conn->sink);
  JRPC__STAT_INC(p->stats.lagged);
}

void jrpc__push_lag(jrpc__push_t *p, const uint32_t *lag) {
  /* The notice's size: its head, the id and a count. */
  size_t size = sizeof(NOTE_HEAD) + ID_HEX + 80;
  for (uint32_t i = 0; i <= p->topic_mask; i++) {
    for (jrpc__topic_t *t = p->topics[i]; t; t = t->next) {
      uint32_t n = lag[t->hash % JRPC__PUSH_LOST_BUCKETS];
      for (jrpc__link_t *l = t->subs.next; n && l != &t->subs; l = l->next) {
        jrpc__sub_t *s = CONTAINER(l, jrpc__sub_t, at_topic);
        if (s->conn->overflowed)
          continue;
        /* Behind already, or no room: its notice, after the drain, says
         * this too. Else told now, in order with its notifications, and
         * nothing of this engine's own is held back for it. */
        if (s->dropped || !has_room(p, s->conn->sink, size)) {
          drop(p, s, n);
        } else {
          lag_note(p, s, n);
          touch(p, s->conn);
        }
      }
    }
  }
}

void jrpc__push_drained(jrpc__push_t *p, jrpc__sink_t *sink) {
  jrpc__push_conn_t *pc = sink->push;
  if (!pc || !pc->nlagging || pc->overflowed)
    return;
  for (jrpc__link_t *l = pc->subs.next; l != &pc->subs; l = l->next) {
    jrpc__sub_t *s = CONTAINER(l, jrpc__sub_t, at_conn);
    if (!s->dropped)
      continue;
    lag_note(p, s, s->dropped);
    s->dropped = 0;
  }
  pc->nlagging = 0;
}

/* Whether view (a connection's, made anew for a reload) still lets it
 * call k's subscription method, of a module of k's name with k's names: a
 * method hidden has no entry, one denied no push
 * (jrpc__registry_view_withhold), one gone with its module neither. */
static int kind_served(const jrpc__subkind_t *k, const jrpc__registry_t *view) {
  const jrpc__method_t *m =
      view ? jrpc__registry_find(view, k->method, strlen(k->method)) : NULL;
  return m && m->push && strcmp(module_name(m), k->ns) == 0 &&
         memcmp(m->push, k->names, names_len(k->names)) == 0;
}

void jrpc__push_review(jrpc__push_t *p, jrpc__sink_t *sink,
                       const jrpc__registry_t *view) {
  jrpc__push_conn_t *pc = sink->push;
  for (jrpc__link_t *l = pc ? pc->subs.next : NULL; l && l != &pc->subs;) {
    jrpc__sub_t *s = CONTAINER(l, jrpc__sub_t, at_conn);
    l = l->next;
    if (!kind_served(s->kind, view))
      sub_end(p, s);
  }
}

/* ---- progress: notifications of a deferred call ---- */

/* A name written into JSON as it is: nothing in it to escape. */
static int plain_name(const char *s) {
  if (!s || !*s)
    return 0;
  for (; *s; s++)
    if ((unsigned char)*s < 0x20 || *s == '"' || *s == '\\')
      return 0;
  return 1;
}

char *jrpc__push_names(const char *notification, const char *unsubscribe) {
  if (!plain_name(notification) || !unsubscribe)
    return NULL;
  size_t a = strlen(notification) + 1, b = strlen(unsubscribe) + 1;
  char *names = malloc(a + b);
  if (names) {
    memcpy(names, notification, a);
    memcpy(names + a, unsubscribe, b);
  }
  return names;
}

int jrpc__push_notify(jrpc_call_t *c, const char *method, const char *json,
                      size_t n) {
  jrpc__call_t *call = (jrpc__call_t *)c;
  if (!call || !call->is_deferred || !plain_name(method) || (!json && n))
    return JRPC_EINVAL;
  jrpc__engine_t *e = call->e;
  jrpc__sink_t *sink = jrpc__deferred_sink(c);
  if (!sink)
    return JRPC_ECANCELED; /* answered, or its connection is gone */
  jrpc__push_t *p = e->push;
  if (!p || !sink->notify)
    return JRPC_ENOSYS;
  /* While its connection's frame is being answered, that reply is half
   * written in the same output: a notification cannot go in between. */
  if (e->dispatching && sink == e->sink)
    return JRPC_EINVAL;
  size_t size = sizeof(NOTE_HEAD) + strlen(method) + 16 + n;
  if (!has_room(p, sink, size)) {
    JRPC__STAT_INC(p->stats.dropped);
    return JRPC_E2BIG;
  }
  jrpc__outbuf_t *o = &p->scratch;
  PUT_LIT(o, NOTE_HEAD);
  jrpc__out_put(o, method, strlen(method));
  PUT_LIT(o, "\",\"params\":");
  jrpc__out_put_oneline(o, n ? json : "null", n ? n : 4);
  jrpc__out_byte(o, '}');
  send_scratch(p, sink);
  JRPC__STAT_INC(p->stats.delivered);
  if (e->host->output)
    e->host->output(e->host_arg, sink);
  return 0;
}

/* ---- publishing, from any thread ---- */

typedef struct publisher {
  jrpc_pub_t pub;
  struct publisher *next;
  size_t ns_n;
  char ns[];
} publisher_t;

static pthread_mutex_t publishers_mu = PTHREAD_MUTEX_INITIALIZER;
static publisher_t *publishers;
static _Atomic(const jrpc__pub_host_t *) pub_host;

void jrpc__push_set_pub_host(const jrpc__pub_host_t *h) {
  atomic_store(&pub_host, h);
}

/* One per module name, kept until exit: a module reloaded publishes with
 * the same handle's space, and a handle never dangles. */
jrpc_pub_t *jrpc__push_publisher(jrpc__regctx_t *ctx) {
  const jrpc__module_t *mod = ctx->owner;
  const char *ns = mod && mod->info && mod->info->name ? mod->info->name : "";
  size_t ns_n = strlen(ns);
  pthread_mutex_lock(&publishers_mu);
  publisher_t *pb = publishers;
  while (pb && (pb->ns_n != ns_n || memcmp(pb->ns, ns, ns_n) != 0))
    pb = pb->next;
  if (!pb && (pb = malloc(sizeof(*pb) + ns_n + 1)) != NULL) {
    pb->pub.api = &jrpc__api;
    pb->ns_n = ns_n;
    memcpy(pb->ns, ns, ns_n + 1);
    pb->next = publishers;
    publishers = pb;
  }
  pthread_mutex_unlock(&publishers_mu);
  return pb ? &pb->pub : NULL;
}

int jrpc__push_publish(jrpc_pub_t *pub, const char *topic, size_t topic_n,
                       const char *json, size_t n) {
  if (!pub || (!topic && topic_n) || !json || !n)
    return JRPC_EINVAL;
  const jrpc__pub_host_t *h = atomic_load(&pub_host);
  if (!h)
    return JRPC_ENOSYS;
  publisher_t *pb = CONTAINER(pub, publisher_t, pub);
  return h->publish(h->arg, pb->ns, pb->ns_n, topic, topic_n, json, n);
}

void jrpc__push_publishers_free(void) {
  pthread_mutex_lock(&publishers_mu);
  while (publishers) {
    publisher_t *next = publishers->next;
    free(publishers);
    publishers = next;
  }
  pthread_mutex_unlock(&publishers_mu);
}
