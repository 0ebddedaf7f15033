/* kv.c - sample handler module: a key-value table shared by every worker,
 * and counters kept per worker.
 *
 *   kv.set  {"key": K, "value": V} or [K, V]  -> {"created": true|false}
 *   kv.get  {"key": K} or [K]                 -> V
 *   kv.del  {"key": K} or [K]                 -> {"deleted": true|false}
 *   kv.stats                                  -> this worker's counts and
 *                                                everyone's, the table size
 *   kv.watch {"prefix": P} or [P]             -> a subscription id (ABI 1.5)
 *   kv.unwatch [id]                           -> true, or false (jrpcd's)
 *
 * A watch receives every later set and delete of a key starting with P,
 * from any connection, worker or transport, as {"jsonrpc":"2.0","method":
 * "kv.changed","params":{"subscription":ID,"result":{"key":K,"value":V,
 * "op":"set"}}} ("op":"del" and "value":null for a delete). The prefixes
 * ever watched are kept (at most 1024 distinct ones, error 1003 beyond):
 * a change is published once for each that the key starts with, under
 * the table's lock, so that watchers see changes of a key in the order
 * the table took them. A table nobody ever watched costs nothing more.
 *
 * K is a string of 1 to 256 characters (as JSON Schema's maxLength counts
 * them: code points); V any JSON value, kept as its exact
 * text, at most max_value_bytes of it (config key, default 65536). The
 * table holds at most max_keys keys (config key, default 10000): a new key
 * beyond that is refused with error 1001 "Table full" ({"max_keys": N} as
 * data); kv.get of a missing key is error 1002 "No such key".
 *
 * It shows the two kinds of state a handler has besides its call (see
 * "Threads" in jrpc.h):
 *  - the table is shared: every worker's thread runs these handlers at
 *    once, so it sits behind a mutex, held only to copy bytes in or out;
 *  - the counters are per worker (jrpc_on_worker): each worker bumps its
 *    own without a lock. kv.stats adds them up across workers, so they are
 *    relaxed atomics (one writer each, read by any), and the list of
 *    slots is under the mutex, since a worker that is done with this
 *    instance (after a reload) finalises its slot while others serve. */
#ifndef _POSIX_C_SOURCE
#define _POSIX_C_SOURCE 200809L
#endif
#include <jrpc/jrpc.h>

#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define KV_MAX_KEY 256
#define STR_(x) #x
#define STR(x) STR_(x)
#define KV_DEFAULT_MAX_KEYS 10000
#define KV_LIMIT_MAX_KEYS 10000000
#define KV_DEFAULT_MAX_VALUE 65536
#define KV_LIMIT_MAX_VALUE 16777216
#define KV_MAX_BUCKETS 65536

/* Error codes of this module (outside JSON-RPC's reserved range). */
#define KV_TABLE_FULL 1001
#define KV_NO_SUCH_KEY 1002
#define KV_TOO_MANY_WATCHED 1003
#define KV_MAX_WATCHED 1024

typedef struct entry {
  struct entry *next;
  uint32_t hash;
  uint32_t klen;
  size_t vlen;
  char data[]; /* key bytes, then value text */
} entry_t;

/* One worker's counts: written by that worker only. */
enum { C_SET, C_GET, C_HIT, C_DEL, C_N };
static const char *const counter_names[C_N] = {"set", "get", "get_hits", "del"};

typedef struct worker_slot {
  unsigned index;
  _Atomic uint64_t n[C_N];
} worker_slot_t;

typedef struct kv {
  uint32_t max_keys;
  size_t max_value;
  pthread_mutex_t mu; /* everything below */
  entry_t **buckets;
  uint32_t mask;
  uint32_t count;
  /* The slots of workers still using this instance, by worker index,
   * and the counts of those that have finalised theirs. */
  worker_slot_t **slots;
  unsigned nslots;
  uint64_t retired[C_N];
  jrpc_pub_t *pub;
  char **watched; /* prefixes ever watched (NUL-terminated), to publish on */
  size_t nwatched;
} kv_t;

static inline void bump(worker_slot_t *w, int which) {
  if (!w) /* a host with fewer slots than workers: not counted */
    return;
  /* One writer: a relaxed load and store, no locked instruction. */
  atomic_store_explicit(
      &w->n[which],
      atomic_load_explicit(&w->n[which], memory_order_relaxed) + 1,
      memory_order_relaxed);
}

static uint32_t hash_of(const char *s, size_t n) {
  uint32_t h = 2166136261u; /* FNV-1a */
  for (size_t i = 0; i < n; i++)
    h = (h ^ (unsigned char)s[i]) * 16777619u;
  return h;
}

/* The link that points at key's entry, or at the NULL ending its chain.
 * Callers hold mu. */
static entry_t **find(kv_t *kv, const char *key, size_t klen, uint32_t h) {
  entry_t **p = &kv->buckets[h & kv->mask];
  while (*p && !((*p)->hash == h && (*p)->klen == klen &&
                 memcmp((*p)->data, key, klen) == 0))
    p = &(*p)->next;
  return p;
}

/* ---- params ---- */

static int bad_param(jrpc_call_t *c, const char *name, const char *why) {
  jrpc_error_begin(c, JRPC_INVALID_PARAMS, "Invalid params");
  jrpc_w_obj(c);
  jrpc_w_key(c, "param", 5);
  jrpc_w_str(c, name, strlen(name));
  jrpc_w_key(c, "reason", 6);
  jrpc_w_str(c, why, strlen(why));
  jrpc_w_obj_end(c);
  return JRPC_EFAIL;
}

/* Code points of valid UTF-8 (every byte but continuation bytes), which
 * is what the description's maxLength counts. */
static size_t characters(const char *s, size_t n) {
  size_t count = 0;
  for (size_t i = 0; i < n; i++)
    count += ((unsigned char)s[i] & 0xC0) != 0x80;
  return count;
}

/* The key (and, with want_value, the value) from [K] / [K, V] or
 * {"key": K, "value": V}. */
static int read_params(jrpc_call_t *c, jrpc_val_t params, int want_value,
                       const char **key, size_t *klen, jrpc_val_t *value,
                       jrpc_val_t *key_view) {
  jrpc_val_t k, v;
  switch (jrpc_type(c, params)) {
  case JRPC_T_ARRAY:
    if (jrpc_len(c, params) != (uint32_t)(want_value ? 2 : 1))
      return bad_param(c, "params",
                       want_value ? "expected [key, value]" : "expected [key]");
    k = jrpc_at(c, params, 0);
    v = jrpc_at(c, params, 1);
    break;
  case JRPC_T_OBJECT:
    k = jrpc_get(c, params, "key");
    v = jrpc_get(c, params, "value");
    break;
  default:
    return bad_param(c, "params",
                     want_value ? "expected [key, value] or {\"key\": key, "
                                  "\"value\": value}"
                                : "expected [key] or {\"key\": key}");
  }
  int rc = jrpc_as_str(c, k, key, klen);
  if (rc == JRPC_ENOENT)
    return bad_param(c, "key", "missing");
  if (rc)
    return bad_param(c, "key", "not a string");
  if (*klen == 0 || characters(*key, *klen) > KV_MAX_KEY)
    return bad_param(c, "key", "must be 1 to 256 characters long");
  if (want_value && jrpc_is_none(v))
    return bad_param(c, "value", "missing");
  *value = v;
  *key_view = k;
  return 0;
}

/* ---- handlers ---- */

/* kv.get and kv.del: the key alone. */
static int key_only(jrpc_call_t *c, jrpc_val_t params, const char **key,
                    size_t *klen) {
  jrpc_val_t unused, key_view;
  return read_params(c, params, 0, key, klen, &unused, &key_view);
}

/* The change of key (whose JSON text is key_json) as watchers get it, to
 * each watched prefix the key starts with. Callers hold mu, so that
 * changes of a key reach watchers in the table's order (jrpc_publish never
 * waits). value NULL: a delete. */
static void publish_change(jrpc_call_t *c, kv_t *kv, const char *key,
                           size_t klen, jrpc_val_t key_view, const char *value,
                           size_t vlen) {
  const char *kj;
  size_t kjn;
  char *json = NULL;
  size_t n = 0;
  for (size_t i = 0; i < kv->nwatched; i++) {
    size_t pn = strlen(kv->watched[i]);
    if (pn > klen || memcmp(kv->watched[i], key, pn) != 0)
      continue;
    if (!json) { /* made once, for the first watcher's prefix */
      if (jrpc_raw(c, key_view, &kj, &kjn) != 0 ||
          !(json = jrpc_alloc(c, kjn + vlen + 40)))
        return;
      n = (size_t)sprintf(json, "{\"key\":%.*s,\"value\":", (int)kjn, kj);
      memcpy(json + n, value ? value : "null", value ? vlen : 4);
      n += value ? vlen : 4;
      n += (size_t)sprintf(json + n, ",\"op\":\"%s\"}", value ? "set" : "del");
    }
    (void)jrpc_publish(kv->pub, kv->watched[i], json, n);
  }
}

/* {"NAME": flag} */
static int w_flag(jrpc_call_t *c, const char *name, int flag) {
  jrpc_w_obj(c);
  jrpc_w_key(c, name, strlen(name));
  jrpc_w_bool(c, flag);
  return jrpc_w_obj_end(c);
}

static int kv_set(jrpc_call_t *c, jrpc_val_t params, void *udata) {
  kv_t *kv = udata;
  const char *key, *text;
  size_t klen, vlen;
  jrpc_val_t v, key_view;
  if (read_params(c, params, 1, &key, &klen, &v, &key_view))
    return JRPC_EFAIL;
  jrpc_raw(c, v, &text, &vlen);
  if (vlen > kv->max_value) {
    char why[80];
    snprintf(why, sizeof(why), "longer than max_value_bytes (%zu) as JSON",
             kv->max_value);
    return bad_param(c, "value", why);
  }
  bump(jrpc_worker_data(c), C_SET);
  /* Allocated before the lock: the critical section only links. */
  entry_t *e = malloc(sizeof(*e) + klen + vlen);
  if (!e)
    return jrpc_error(c, JRPC_INTERNAL_ERROR, "out of memory");
  e->hash = hash_of(key, klen);
  e->klen = (uint32_t)klen;
  e->vlen = vlen;
  memcpy(e->data, key, klen);
  memcpy(e->data + klen, text, vlen);
  pthread_mutex_lock(&kv->mu);
  entry_t **p = find(kv, key, klen, e->hash);
  entry_t *old = *p;
  int full = !old && kv->count >= kv->max_keys;
  if (!full) {
    e->next = old ? old->next : NULL;
    *p = e;
    kv->count += !old;
    publish_change(c, kv, key, klen, key_view, text, vlen);
  }
  pthread_mutex_unlock(&kv->mu);
  free(full ? e : old);
  if (full) {
    jrpc_error_begin(c, KV_TABLE_FULL, "Table full");
    jrpc_w_obj(c);
    jrpc_w_key(c, "max_keys", 8);
    jrpc_w_u64(c, kv->max_keys);
    jrpc_w_obj_end(c);
    return JRPC_EFAIL;
  }
  return w_flag(c, "created", !old);
}

static int kv_get(jrpc_call_t *c, jrpc_val_t params, void *udata) {
  kv_t *kv = udata;
  const char *key;
  size_t klen;
  if (key_only(c, params, &key, &klen))
    return JRPC_EFAIL;
  worker_slot_t *w = jrpc_worker_data(c);
  bump(w, C_GET);
  /* Copied out under the lock into call memory: another worker may
   * replace or delete the entry as soon as the lock is let go. */
  char *copy = NULL;
  size_t vlen = 0;
  int found;
  pthread_mutex_lock(&kv->mu);
  entry_t *e = *find(kv, key, klen, hash_of(key, klen));
  found = e != NULL;
  if (e && (copy = jrpc_alloc(c, e->vlen ? e->vlen : 1)) != NULL) {
    memcpy(copy, e->data + e->klen, e->vlen);
    vlen = e->vlen;
  }
  pthread_mutex_unlock(&kv->mu);
  if (!found) {
    jrpc_error_begin(c, KV_NO_SUCH_KEY, "No such key");
    jrpc_w_obj(c);
    jrpc_w_key(c, "key", 3);
    jrpc_w_str(c, key, klen);
    jrpc_w_obj_end(c);
    return JRPC_EFAIL;
  }
  if (!copy)
    return jrpc_error(c, JRPC_INTERNAL_ERROR, "out of memory");
  bump(w, C_HIT);
  return jrpc_w_raw(c, copy, vlen);
}

static int kv_del(jrpc_call_t *c, jrpc_val_t params, void *udata) {
  kv_t *kv = udata;
  const char *key;
  size_t klen;
  jrpc_val_t unused, key_view;
  if (read_params(c, params, 0, &key, &klen, &unused, &key_view))
    return JRPC_EFAIL;
  bump(jrpc_worker_data(c), C_DEL);
  pthread_mutex_lock(&kv->mu);
  entry_t **p = find(kv, key, klen, hash_of(key, klen));
  entry_t *e = *p;
  if (e) {
    *p = e->next;
    kv->count--;
    publish_change(c, kv, key, klen, key_view, NULL, 0);
  }
  pthread_mutex_unlock(&kv->mu);
  free(e);
  return w_flag(c, "deleted", e != NULL);
}

/* kv.watch: P joins the prefixes changes are published on, once. */
static int kv_watch(jrpc_call_t *c, jrpc_val_t params, void *udata) {
  kv_t *kv = udata;
  jrpc_val_t p = jrpc_type(c, params) == JRPC_T_ARRAY
                     ? jrpc_at(c, params, 0)
                     : jrpc_get(c, params, "prefix");
  const char *prefix;
  size_t n;
  if (jrpc_as_str(c, p, &prefix, &n) != 0 || memchr(prefix, '\0', n) ||
      characters(prefix, n) > KV_MAX_KEY)
    return bad_param(c, "prefix", "a string of at most 256 characters");
  pthread_mutex_lock(&kv->mu);
  size_t i = 0;
  while (i < kv->nwatched && strcmp(kv->watched[i], prefix) != 0)
    i++;
  int rc = 0;
  if (i == kv->nwatched) {
    char **w = kv->nwatched < KV_MAX_WATCHED
                   ? realloc(kv->watched, (i + 1) * sizeof(*w))
                   : NULL;
    char *copy = w ? strdup(prefix) : NULL;
    if (w)
      kv->watched = w;
    if (copy)
      kv->watched[kv->nwatched++] = copy;
    else
      rc = kv->nwatched < KV_MAX_WATCHED ? JRPC_ENOMEM : KV_TOO_MANY_WATCHED;
  }
  pthread_mutex_unlock(&kv->mu);
  if (rc == KV_TOO_MANY_WATCHED)
    return jrpc_error(c, KV_TOO_MANY_WATCHED, "Too many watched prefixes");
  if (rc)
    return jrpc_error(c, JRPC_INTERNAL_ERROR, "out of memory");
  return jrpc_subscribe_accept(c, prefix, n);
}

static void w_counts(jrpc_call_t *c, const char *name, const uint64_t n[C_N]) {
  jrpc_w_key(c, name, strlen(name));
  jrpc_w_obj(c);
  for (int i = 0; i < C_N; i++) {
    jrpc_w_key(c, counter_names[i], strlen(counter_names[i]));
    jrpc_w_u64(c, n[i]);
  }
  jrpc_w_obj_end(c);
}

static int kv_stats(jrpc_call_t *c, jrpc_val_t params, void *udata) {
  kv_t *kv = udata;
  if (!jrpc_is_none(params) && jrpc_len(c, params) != 0)
    return bad_param(c, "params", "takes none");
  const worker_slot_t *me = jrpc_worker_data(c);
  uint64_t mine[C_N] = {0}, all[C_N];
  uint32_t keys;
  for (int i = 0; me && i < C_N; i++)
    mine[i] = atomic_load_explicit(&me->n[i], memory_order_relaxed);
  pthread_mutex_lock(&kv->mu);
  keys = kv->count;
  memcpy(all, kv->retired, sizeof(all));
  for (unsigned k = 0; k < kv->nslots; k++)
    for (int i = 0; kv->slots[k] && i < C_N; i++)
      all[i] += atomic_load_explicit(&kv->slots[k]->n[i], memory_order_relaxed);
  pthread_mutex_unlock(&kv->mu);
  jrpc_w_obj(c);
  jrpc_w_key(c, "worker", 6);
  if (me)
    jrpc_w_u64(c, me->index);
  else
    jrpc_w_null(c);
  w_counts(c, "this_worker", mine);
  w_counts(c, "all_workers", all);
  jrpc_w_key(c, "keys", 4);
  jrpc_w_u64(c, keys);
  jrpc_w_key(c, "max_keys", 8);
  jrpc_w_u64(c, kv->max_keys);
  return jrpc_w_obj_end(c);
}

/* ---- per worker ---- */

static int worker_init(jrpc_reg_t *r, void *mod_data, unsigned worker,
                       void **slot) {
  kv_t *kv = mod_data;
  worker_slot_t *w = calloc(1, sizeof(*w));
  if (!w)
    return jrpc_init_error(r, "out of memory");
  w->index = worker;
  pthread_mutex_lock(&kv->mu);
  if (worker >= kv->nslots) {
    worker_slot_t **v = realloc(kv->slots, (worker + 1) * sizeof(*v));
    if (!v) {
      pthread_mutex_unlock(&kv->mu);
      free(w);
      return jrpc_init_error(r, "out of memory");
    }
    memset(v + kv->nslots, 0, (worker + 1 - kv->nslots) * sizeof(*v));
    kv->slots = v;
    kv->nslots = worker + 1;
  }
  kv->slots[worker] = w;
  pthread_mutex_unlock(&kv->mu);
  *slot = w;
  return 0;
}

/* Runs on the worker's thread while other workers may still serve this
 * instance and read the slot list: out of it under the lock first. */
static void worker_fini(void *mod_data, unsigned worker, void *slot) {
  kv_t *kv = mod_data;
  worker_slot_t *w = slot;
  pthread_mutex_lock(&kv->mu);
  kv->slots[worker] = NULL;
  for (int i = 0; i < C_N; i++)
    kv->retired[i] += atomic_load_explicit(&w->n[i], memory_order_relaxed);
  pthread_mutex_unlock(&kv->mu);
  free(w);
}

/* ---- module ---- */

/* A whole number from lo to hi, or the default when absent. */
static int conf_num(jrpc_reg_t *r, const char *key, uint64_t def, uint64_t lo,
                    uint64_t hi, uint64_t *out) {
  const char *text = jrpc_conf_get(r, key);
  if (!text) {
    *out = def;
    return 0;
  }
  char *end;
  errno = 0;
  unsigned long long v = strtoull(text, &end, 10);
  if (*text < '0' || *text > '9' || errno || *end || v < lo || v > hi) {
    char why[128];
    snprintf(why, sizeof(why), "%s: expected a whole number from %llu to %llu",
             key, (unsigned long long)lo, (unsigned long long)hi);
    return jrpc_init_error(r, why);
  }
  *out = v;
  return 0;
}

static void fini(void *mod_data) {
  kv_t *kv = mod_data;
  if (!kv)
    return;
  for (uint32_t b = 0; kv->buckets && b <= kv->mask; b++)
    for (entry_t *e = kv->buckets[b], *next; e; e = next) {
      next = e->next;
      free(e);
    }
  free(kv->buckets);
  free(kv->slots);
  for (size_t i = 0; i < kv->nwatched; i++)
    free(kv->watched[i]);
  free(kv->watched);
  pthread_mutex_destroy(&kv->mu);
  free(kv);
}

#define KEY_PARAM                                                              \
  "{\"name\":\"key\",\"required\":true,\"schema\":{\"type\":\"string\","       \
  "\"minLength\":1,\"maxLength\":" STR(KV_MAX_KEY) "}}"
#define NO_KEY_ERROR "{\"code\":1002,\"message\":\"No such key\"}"
#define PARAMS_ERROR "{\"code\":-32602,\"message\":\"Invalid params\"}"

static const struct {
  const char *name;
  jrpc_handler_fn fn;
  const char *desc;
} methods[] = {
    {"kv.set", kv_set,
     "{\"summary\":\"stores value under key, shared by every worker\","
     "\"paramStructure\":\"either\",\"params\":[" KEY_PARAM
     ",{\"name\":\"value\",\"required\":true,\"description\":\"any JSON "
     "value of at most max_value_bytes bytes of text (config key, default "
     "65536)\",\"schema\":{}}],"
     "\"result\":{\"name\":\"created\",\"schema\":{\"type\":\"object\","
     "\"properties\":{\"created\":{\"type\":\"boolean\"}}}},"
     "\"errors\":[" PARAMS_ERROR
     ",{\"code\":1001,\"message\":\"Table full\"}]}"},
    {"kv.get", kv_get,
     "{\"summary\":\"the value stored under key\",\"paramStructure\":"
     "\"either\",\"params\":[" KEY_PARAM "],\"result\":{\"name\":\"value\","
     "\"schema\":{}},\"errors\":[" PARAMS_ERROR "," NO_KEY_ERROR "]}"},
    {"kv.del", kv_del,
     "{\"summary\":\"removes key\",\"paramStructure\":\"either\",\"params\":"
     "[" KEY_PARAM "],\"result\":{\"name\":\"deleted\",\"schema\":{\"type\":"
     "\"object\",\"properties\":{\"deleted\":{\"type\":\"boolean\"}}}},"
     "\"errors\":[" PARAMS_ERROR "]}"},
    {"kv.stats", kv_stats,
     "{\"summary\":\"calls counted by the calling worker and by all, and "
     "the table's size\",\"params\":[],\"result\":{\"name\":\"stats\","
     "\"schema\":{\"type\":\"object\"}}}"},
};

static int init(jrpc_reg_t *r, void **mod_data) {
  static const char *const keys[] = {"max_keys", "max_value_bytes", NULL};
  uint64_t max_keys, max_value;
  if (jrpc_conf_keys(r, keys))
    return JRPC_EINVAL;
  if (conf_num(r, "max_keys", KV_DEFAULT_MAX_KEYS, 1, KV_LIMIT_MAX_KEYS,
               &max_keys) ||
      conf_num(r, "max_value_bytes", KV_DEFAULT_MAX_VALUE, 1,
               KV_LIMIT_MAX_VALUE, &max_value))
    return JRPC_EINVAL;
  kv_t *kv = calloc(1, sizeof(*kv));
  if (!kv)
    return JRPC_ENOMEM;
  kv->max_keys = (uint32_t)max_keys;
  kv->max_value = (size_t)max_value;
  uint32_t nb = 16;
  while (nb < max_keys && nb < KV_MAX_BUCKETS)
    nb *= 2;
  kv->mask = nb - 1;
  kv->buckets = calloc(nb, sizeof(*kv->buckets));
  if (!kv->buckets || pthread_mutex_init(&kv->mu, NULL) != 0) {
    free(kv->buckets);
    free(kv);
    return JRPC_ENOMEM;
  }
  int rc = jrpc_on_worker(r, worker_init, worker_fini);
  for (size_t i = 0; !rc && i < sizeof(methods) / sizeof(methods[0]); i++) {
    rc = jrpc_register(r, methods[i].name, methods[i].fn, kv);
    if (!rc)
      rc = jrpc_describe(r, methods[i].name, methods[i].desc);
  }
  kv->pub = jrpc_publisher(r);
  if (!rc && kv->pub) /* a host with server push */
    rc = jrpc_subscription(r, "kv.watch", "kv.unwatch", "kv.changed", kv_watch,
                           kv);
  if (!rc && kv->pub)
    rc = jrpc_describe(
        r, "kv.watch",
        "{\"summary\":\"kv.changed notifications for every later set and "
        "delete of a key starting with prefix\",\"paramStructure\":"
        "\"either\",\"params\":[{\"name\":\"prefix\",\"required\":true,"
        "\"schema\":{\"type\":\"string\",\"maxLength\":" STR(
            KV_MAX_KEY) "}}],"
                        "\"result\":{\"name\":\"subscription\",\"schema\":{"
                        "\"type\":"
                        "\"string\"}},\"errors\":[" PARAMS_ERROR
                        ",{\"code\":1003,"
                        "\"message\":\"Too many watched prefixes\"}]}");
  if (rc) { /* no fini follows a failed init */
    fini(kv);
    return rc;
  }
  *mod_data = kv;
  return 0;
}

JRPC_MODULE("kv", "1.0", init, fini)
