/*
 * jrpc.h - the handler ABI of jrpcd.
 *
 * A handler module includes this header and nothing else of ours, links
 * against nothing of ours, and exports one function through JRPC_MODULE().
 * The inline wrappers call through the function table every handle starts
 * with, so a module needs no symbol from the daemon. Each function has one
 * line here; its whole contract (lifetimes, threads, compatibility rules,
 * errors) is in docs/handlers.md.
 */
#ifndef JRPC_JRPC_H
#define JRPC_JRPC_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#define JRPC_ABI_MAJOR 1
#define JRPC_ABI_MINOR 5
#define JRPC_MODULE_MAGIC 0x4A525043u /* "JRPC" */

/* Return values of API functions and handlers: 0, JRPC_ASYNC, or a negative
 * JRPC_E* (negated errno values where one fits). */
enum {
  JRPC_OK = 0,
  JRPC_ASYNC = 1,        /* handler deferred its reply (see jrpc_defer) */
  JRPC_EFAIL = -1,       /* the call failed; the error object is already set */
  JRPC_ENOENT = -2,      /* no such member / element */
  JRPC_E2BIG = -7,       /* a limit was exceeded */
  JRPC_ENOMEM = -12,     /* out of memory */
  JRPC_EEXIST = -17,     /* already registered */
  JRPC_EINVAL = -22,     /* invalid argument (or misuse of the writer) */
  JRPC_ERANGE = -34,     /* number out of range for the requested C type */
  JRPC_ENOSYS = -38,     /* not provided by this host */
  JRPC_ECANCELED = -125, /* the host is shutting down */
  JRPC_ETYPE = -4001,    /* value has another JSON type */
};

/* JSON-RPC 2.0 error codes on the wire. */
enum {
  JRPC_PARSE_ERROR = -32700,
  JRPC_INVALID_REQUEST = -32600,
  JRPC_METHOD_NOT_FOUND = -32601,
  JRPC_INVALID_PARAMS = -32602,
  JRPC_INTERNAL_ERROR = -32603,
  /* jrpcd's own server errors */
  JRPC_HANDLER_FAILED = -32000,
  JRPC_FRAME_TOO_LARGE = -32001,
  JRPC_BATCH_TOO_LARGE = -32002,
  JRPC_RESPONSE_TOO_LARGE = -32003,
  JRPC_TIMED_OUT = -32004,
  JRPC_BUSY = -32005,
  JRPC_ACCESS_DENIED = -32006,
  JRPC_SHUTTING_DOWN = -32007,
  JRPC_CANCELLED = -32008,
  JRPC_FRAME_TIMEOUT = -32009,
  /* ABI 1.5: a subscription over a framing that cannot carry a
   * notification of the server's (HTTP POST) */
  JRPC_PUSH_UNSUPPORTED = -32010,
  /* ABI 1.5: max_subscriptions_per_connection or max_subscriptions */
  JRPC_TOO_MANY_SUBSCRIPTIONS = -32011,
  /* LSP's RequestCancelled: the client's $/cancelRequest ended the call */
  JRPC_REQUEST_CANCELLED = -32800,
};

/* The JSON type of a value. JRPC_T_NONE means "absent" (missing member,
 * index past the end, params omitted). */
typedef enum jrpc_type {
  JRPC_T_NONE = 0,
  JRPC_T_NULL,
  JRPC_T_FALSE,
  JRPC_T_TRUE,
  JRPC_T_NUMBER,
  JRPC_T_STRING,
  JRPC_T_ARRAY,
  JRPC_T_OBJECT,
} jrpc_type_t;

/* A by-value view of one JSON value inside the parsed request. Opaque:
 * only the API reads its fields. Cheap to copy; never allocates. */
typedef struct jrpc_val {
  const void *doc_;
  uint32_t idx_;
  uint32_t aux_;
} jrpc_val_t;

struct jrpc_api;

/* One call in progress. Only the first member is public. */
typedef struct jrpc_call {
  const struct jrpc_api *api;
} jrpc_call_t;

/* The registration context handed to a module's init. */
typedef struct jrpc_reg {
  const struct jrpc_api *api;
} jrpc_reg_t;

/* A module's publisher (ABI 1.5, jrpc_publisher): valid until its fini
 * has returned, usable from any thread. */
typedef struct jrpc_pub {
  const struct jrpc_api *api;
} jrpc_pub_t;

typedef int (*jrpc_handler_fn)(jrpc_call_t *c, jrpc_val_t params, void *udata);

/* Who sent the call. family is 0 for in-process calls, else AF_UNIX,
 * AF_INET or AF_INET6. uid/gid/pid are set for AF_UNIX (-1 if unknown);
 * addr/port for TCP. */
/* How a peer reached jrpcd (jrpc_peer_t.transport, ABI 1.2). */
enum {
  JRPC_TRANSPORT_UNKNOWN = 0, /* a host that does not say */
  JRPC_TRANSPORT_UNIX = 1,
  JRPC_TRANSPORT_TCP = 2,
  JRPC_TRANSPORT_TLS = 3, /* TCP with TLS */
};

typedef struct jrpc_peer {
  int family;  /* AF_UNIX, AF_INET or AF_INET6 */
  int32_t uid; /* Unix peers: their credentials at connect; else -1 */
  int32_t gid;
  int32_t pid;
  uint16_t port; /* TCP: the peer's port and address (text) */
  char addr[46];
  /* ---- ABI 1.2 (a module built for it loads only into a 1.2 host) ---- */
  int transport; /* JRPC_TRANSPORT_* */
  /* TLS with a verified client certificate: its subject CN (at most 64
   * characters, as X.509 allows); otherwise empty. */
  char cert_cn[65];
} jrpc_peer_t;

/* One number read by jrpc_params_num(). */
typedef struct jrpc_num {
  int status; /* 0; JRPC_ENOENT: absent; JRPC_ETYPE: not a number;
                 JRPC_ERANGE: beyond a double's range */
  int is_int; /* an integer that fits int64_t (no fraction, no exponent) */
  int64_t i;  /* the integer, when is_int */
  double d;   /* the value as a double (integers too) */
} jrpc_num_t;

typedef void (*jrpc_post_fn)(jrpc_call_t *c, void *arg);
typedef void (*jrpc_work_fn)(void *arg);
typedef void (*jrpc_cancel_fn)(jrpc_call_t *c, void *arg);

/* Per-worker module state (ABI 1.3, see jrpc_on_worker). */
typedef int (*jrpc_worker_init_fn)(jrpc_reg_t *r, void *mod_data,
                                   unsigned worker, void **slot);
typedef void (*jrpc_worker_fini_fn)(void *mod_data, unsigned worker,
                                    void *slot);

/* The function table. Append-only: never reorder, never remove. */
struct jrpc_api {
  uint32_t abi_major;
  uint32_t abi_minor;
  uint32_t size; /* sizeof(struct jrpc_api) as the host built it */
  uint32_t reserved;

  /* ---- 1.0: registration (valid inside init only) ---- */
  int (*register_method)(jrpc_reg_t *r, const char *name, jrpc_handler_fn fn,
                         void *udata);
  const char *(*conf_get)(jrpc_reg_t *r, const char *key);

  /* ---- 1.0: parameter views ---- */
  jrpc_type_t (*type)(jrpc_call_t *c, jrpc_val_t v);
  uint32_t (*len)(jrpc_call_t *c, jrpc_val_t v);
  jrpc_val_t (*at)(jrpc_call_t *c, jrpc_val_t v, uint32_t i);
  jrpc_val_t (*get)(jrpc_call_t *c, jrpc_val_t obj, const char *key,
                    size_t key_len);
  jrpc_val_t (*first)(jrpc_call_t *c, jrpc_val_t container);
  jrpc_val_t (*next)(jrpc_call_t *c, jrpc_val_t elem);
  int (*key)(jrpc_call_t *c, jrpc_val_t member, const char **s, size_t *n);
  int (*as_i64)(jrpc_call_t *c, jrpc_val_t v, int64_t *out);
  int (*as_f64)(jrpc_call_t *c, jrpc_val_t v, double *out);
  int (*as_bool)(jrpc_call_t *c, jrpc_val_t v, int *out);
  int (*as_str)(jrpc_call_t *c, jrpc_val_t v, const char **s, size_t *n);
  int (*raw)(jrpc_call_t *c, jrpc_val_t v, const char **s, size_t *n);

  /* ---- 1.0: result writer ---- */
  int (*w_obj)(jrpc_call_t *c);
  int (*w_obj_end)(jrpc_call_t *c);
  int (*w_arr)(jrpc_call_t *c);
  int (*w_arr_end)(jrpc_call_t *c);
  int (*w_key)(jrpc_call_t *c, const char *s, size_t n);
  int (*w_str)(jrpc_call_t *c, const char *s, size_t n);
  int (*w_i64)(jrpc_call_t *c, int64_t v);
  int (*w_u64)(jrpc_call_t *c, uint64_t v);
  int (*w_f64)(jrpc_call_t *c, double v);
  int (*w_bool)(jrpc_call_t *c, int v);
  int (*w_null)(jrpc_call_t *c);
  int (*w_raw)(jrpc_call_t *c, const char *json, size_t n);

  /* ---- 1.0: errors ---- */
  int (*error)(jrpc_call_t *c, int code, const char *msg);
  int (*error_begin)(jrpc_call_t *c, int code, const char *msg);

  /* ---- 1.0: memory, peer, logging ---- */
  void *(*alloc)(jrpc_call_t *c, size_t n);
  const jrpc_peer_t *(*peer)(jrpc_call_t *c);
  void (*log)(jrpc_call_t *c, int level, const char *msg);

  /* ---- 1.0: asynchronous calls (hosts without an event loop return
   * JRPC_ENOSYS) ---- */
  jrpc_call_t *(*defer)(jrpc_call_t *c);
  int (*finish)(jrpc_call_t *c);
  int (*post)(jrpc_call_t *c, jrpc_post_fn fn, void *arg);
  int (*queue_work)(jrpc_call_t *c, jrpc_work_fn work, jrpc_post_fn done,
                    void *arg);

  /* ---- 1.0: registration, continued ---- */
  int (*init_error)(jrpc_reg_t *r, const char *msg);

  /* ---- 1.1: numeric params in one call ---- */
  int (*params_num)(jrpc_call_t *c, jrpc_val_t params, const char *const *names,
                    uint32_t n, jrpc_num_t *out);

  /* ---- 1.2: describing a method ---- */
  int (*describe)(jrpc_reg_t *r, const char *method, const char *json);

  /* ---- 1.3: per-worker module state ---- */
  int (*on_worker)(jrpc_reg_t *r, jrpc_worker_init_fn init,
                   jrpc_worker_fini_fn fini);
  void *(*worker_data)(jrpc_call_t *c);

  /* ---- 1.3: cancellation ---- */
  int (*on_cancel)(jrpc_call_t *c, jrpc_cancel_fn fn, void *arg);
  int (*cancelled)(jrpc_call_t *c);

  /* ---- 1.4: the module's config keys ---- */
  int (*conf_keys)(jrpc_reg_t *r, const char *const *keys);

  /* ---- 1.5: server push ---- */
  int (*subscription)(jrpc_reg_t *r, const char *method,
                      const char *unsubscribe, const char *notification,
                      jrpc_handler_fn fn, void *udata);
  int (*subscribe_accept)(jrpc_call_t *c, const char *topic, size_t n);
  jrpc_pub_t *(*publisher)(jrpc_reg_t *r);
  int (*publish)(jrpc_pub_t *p, const char *topic, size_t topic_n,
                 const char *json, size_t n);
  int (*notify)(jrpc_call_t *c, const char *method, const char *json, size_t n);
};

/* Log levels for jrpc_log(). */
enum { JRPC_LOG_ERROR = 0, JRPC_LOG_WARN, JRPC_LOG_INFO, JRPC_LOG_DEBUG };

/* ------------------------------------------------------------------ */
/* Inline wrappers: what handler code calls.                           */
/* ------------------------------------------------------------------ */

#define JRPC__API(h) ((h)->api)

/* Register method `name` to call fn(call, params, udata). */
static inline int jrpc_register(jrpc_reg_t *r, const char *name,
                                jrpc_handler_fn fn, void *udata) {
  return JRPC__API(r)->register_method(r, name, fn, udata);
}
/* In init: the method's OpenRPC description for rpc.discover (ABI 1.2). */
static inline int jrpc_describe(jrpc_reg_t *r, const char *method,
                                const char *json) {
  return JRPC__API(r)->describe(r, method, json);
}

/* In init: why the module cannot start; returns JRPC_EINVAL. */
static inline int jrpc_init_error(jrpc_reg_t *r, const char *msg) {
  return JRPC__API(r)->init_error(r, msg);
}
/* In init: a key of the module's [plugin NAME] section, or NULL. */
static inline const char *jrpc_conf_get(jrpc_reg_t *r, const char *key) {
  return JRPC__API(r)->conf_get(r, key);
}

/* In init: the keys its [plugin NAME] section may hold (NULL-ended); any
 * other is an error, with "did you mean" (ABI 1.4). */
static inline int jrpc_conf_keys(jrpc_reg_t *r, const char *const *keys) {
  return JRPC__API(r)->conf_keys(r, keys);
}

/* In init: one slot per worker, made by init and ended by fini (ABI 1.3). */
static inline int jrpc_on_worker(jrpc_reg_t *r, jrpc_worker_init_fn init,
                                 jrpc_worker_fini_fn fini) {
  return JRPC__API(r)->on_worker(r, init, fini);
}
/* The calling worker's slot of the module (ABI 1.3). */
static inline void *jrpc_worker_data(jrpc_call_t *c) {
  return JRPC__API(c)->worker_data(c);
}

/* In init: method fn subscribes; the daemon answers `unsubscribe` and
 * sends `notification`s (ABI 1.5). */
static inline int jrpc_subscription(jrpc_reg_t *r, const char *method,
                                    const char *unsubscribe,
                                    const char *notification,
                                    jrpc_handler_fn fn, void *udata) {
  return JRPC__API(r)->subscription(r, method, unsubscribe, notification, fn,
                                    udata);
}
/* In the subscribe handler: accept on topic; the result is the
 * subscription's id (ABI 1.5). Return what it returns. */
static inline int jrpc_subscribe_accept(jrpc_call_t *c, const char *topic,
                                        size_t n) {
  return JRPC__API(c)->subscribe_accept(c, topic, n);
}
/* In init: the module's publisher, for any thread (ABI 1.5). */
static inline jrpc_pub_t *jrpc_publisher(jrpc_reg_t *r) {
  return JRPC__API(r)->publisher(r);
}
/* Any thread, never blocks: json (valid JSON, not checked) as the result
 * of a notification to every subscription on topic (ABI 1.5). */
static inline int jrpc_publish(jrpc_pub_t *p, const char *topic,
                               const char *json, size_t n) {
  size_t k = 0;
  while (topic[k])
    k++;
  return JRPC__API(p)->publish(p, topic, k, json, n);
}
/* On a deferred call, on its loop: a notification to its caller before
 * the reply (progress), params json (ABI 1.5). */
static inline int jrpc_notify(jrpc_call_t *c, const char *method,
                              const char *json, size_t n) {
  return JRPC__API(c)->notify(c, method, json, n);
}

static inline jrpc_type_t jrpc_type(jrpc_call_t *c, jrpc_val_t v) {
  return JRPC__API(c)->type(c, v);
}
static inline int jrpc_is_none(jrpc_val_t v) {
  return v.doc_ == NULL;
}
/* Elements of an array, members of an object, 0 for anything else. */
static inline uint32_t jrpc_len(jrpc_call_t *c, jrpc_val_t v) {
  return JRPC__API(c)->len(c, v);
}
/* The i-th element (or member value); JRPC_T_NONE past the end. */
static inline jrpc_val_t jrpc_at(jrpc_call_t *c, jrpc_val_t v, uint32_t i) {
  return JRPC__API(c)->at(c, v, i);
}
/* Member `key`'s value (the first of duplicates); JRPC_T_NONE if absent. */
static inline jrpc_val_t jrpc_get(jrpc_call_t *c, jrpc_val_t obj,
                                  const char *key) {
  size_t n = 0;
  while (key[n])
    n++;
  return JRPC__API(c)->get(c, obj, key, n);
}
/* Iteration, O(1) a step: first, then next until jrpc_is_none(). */
static inline jrpc_val_t jrpc_first(jrpc_call_t *c, jrpc_val_t v) {
  return JRPC__API(c)->first(c, v);
}
static inline jrpc_val_t jrpc_next(jrpc_call_t *c, jrpc_val_t v) {
  return JRPC__API(c)->next(c, v);
}
/* The key of an object member, given the member's value view. */
static inline int jrpc_key(jrpc_call_t *c, jrpc_val_t member, const char **s,
                           size_t *n) {
  return JRPC__API(c)->key(c, member, s, n);
}
/* Scalars: JRPC_ETYPE for another type, JRPC_ERANGE when it does not fit. */
static inline int jrpc_as_i64(jrpc_call_t *c, jrpc_val_t v, int64_t *out) {
  return JRPC__API(c)->as_i64(c, v, out);
}
static inline int jrpc_as_f64(jrpc_call_t *c, jrpc_val_t v, double *out) {
  return JRPC__API(c)->as_f64(c, v, out);
}
static inline int jrpc_as_bool(jrpc_call_t *c, jrpc_val_t v, int *out) {
  return JRPC__API(c)->as_bool(c, v, out);
}
/* A string, unescaped and NUL-terminated, copied into call memory. */
static inline int jrpc_as_str(jrpc_call_t *c, jrpc_val_t v, const char **s,
                              size_t *n) {
  return JRPC__API(c)->as_str(c, v, s, n);
}
/* n numbers at once, by position or by name (ABI 1.1). */
static inline int jrpc_params_num(jrpc_call_t *c, jrpc_val_t params,
                                  const char *const *names, uint32_t n,
                                  jrpc_num_t *out) {
  return JRPC__API(c)->params_num(c, params, names, n, out);
}
/* The exact JSON bytes of any value, zero-copy, not NUL-terminated. */
static inline int jrpc_raw(jrpc_call_t *c, jrpc_val_t v, const char **s,
                           size_t *n) {
  return JRPC__API(c)->raw(c, v, s, n);
}

/* The result writer: exactly one value; misuse becomes a -32000 error. */
static inline int jrpc_w_obj(jrpc_call_t *c) {
  return JRPC__API(c)->w_obj(c);
}
static inline int jrpc_w_obj_end(jrpc_call_t *c) {
  return JRPC__API(c)->w_obj_end(c);
}
static inline int jrpc_w_arr(jrpc_call_t *c) {
  return JRPC__API(c)->w_arr(c);
}
static inline int jrpc_w_arr_end(jrpc_call_t *c) {
  return JRPC__API(c)->w_arr_end(c);
}
static inline int jrpc_w_key(jrpc_call_t *c, const char *s, size_t n) {
  return JRPC__API(c)->w_key(c, s, n);
}
/* Escaped as JSON requires; invalid UTF-8 becomes U+FFFD. */
static inline int jrpc_w_str(jrpc_call_t *c, const char *s, size_t n) {
  return JRPC__API(c)->w_str(c, s, n);
}
static inline int jrpc_w_i64(jrpc_call_t *c, int64_t v) {
  return JRPC__API(c)->w_i64(c, v);
}
static inline int jrpc_w_u64(jrpc_call_t *c, uint64_t v) {
  return JRPC__API(c)->w_u64(c, v);
}
/* Shortest text that reads back exactly; NaN, infinities: JRPC_EINVAL. */
static inline int jrpc_w_f64(jrpc_call_t *c, double v) {
  return JRPC__API(c)->w_f64(c, v);
}
static inline int jrpc_w_bool(jrpc_call_t *c, int v) {
  return JRPC__API(c)->w_bool(c, v);
}
static inline int jrpc_w_null(jrpc_call_t *c) {
  return JRPC__API(c)->w_null(c);
}
/* Copy `json`, valid JSON (not checked), verbatim as one value. */
static inline int jrpc_w_raw(jrpc_call_t *c, const char *json, size_t n) {
  return JRPC__API(c)->w_raw(c, json, n);
}

/* Fail the call; returns JRPC_EFAIL. */
static inline int jrpc_error(jrpc_call_t *c, int code, const char *msg) {
  return JRPC__API(c)->error(c, code, msg);
}
/* Fail the call; the next value written becomes the error's data. */
static inline int jrpc_error_begin(jrpc_call_t *c, int code, const char *msg) {
  return JRPC__API(c)->error_begin(c, code, msg);
}

/* Call-scoped scratch memory, freed when the reply is sent. */
static inline void *jrpc_alloc(jrpc_call_t *c, size_t n) {
  return JRPC__API(c)->alloc(c, n);
}
static inline const jrpc_peer_t *jrpc_peer(jrpc_call_t *c) {
  return JRPC__API(c)->peer(c);
}
static inline void jrpc_log(jrpc_call_t *c, int level, const char *msg) {
  JRPC__API(c)->log(c, level, msg);
}

/* Asynchronous replies: defer in the handler, finish later on its loop;
 * post is thread-safe, queue_work runs work on the pool and done on the
 * loop. Timeouts and cancellation: see docs/handlers.md. */
static inline jrpc_call_t *jrpc_defer(jrpc_call_t *c) {
  return JRPC__API(c)->defer(c);
}
static inline int jrpc_finish(jrpc_call_t *c) {
  return JRPC__API(c)->finish(c);
}
static inline int jrpc_post(jrpc_call_t *c, jrpc_post_fn fn, void *arg) {
  return JRPC__API(c)->post(c, fn, arg);
}
static inline int jrpc_queue_work(jrpc_call_t *c, jrpc_work_fn work,
                                  jrpc_post_fn done, void *arg) {
  return JRPC__API(c)->queue_work(c, work, done, arg);
}
/* fn(d, arg) runs once, on the loop, when d is cancelled (ABI 1.3). */
static inline int jrpc_on_cancel(jrpc_call_t *c, jrpc_cancel_fn fn, void *arg) {
  return JRPC__API(c)->on_cancel(c, fn, arg);
}
/* 1 once d has been cancelled, else 0; thread-safe (ABI 1.3). */
static inline int jrpc_cancelled(jrpc_call_t *c) {
  return JRPC__API(c)->cancelled(c);
}

/* ------------------------------------------------------------------ */
/* Module declaration.                                                 */
/* ------------------------------------------------------------------ */

/* Encodes the data model a module was built for, so that a module built
 * for another pointer size or byte order is refused rather than run. */
#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_BIG_ENDIAN__
#define JRPC__BIG_ENDIAN 1u
#else
#define JRPC__BIG_ENDIAN 0u
#endif
#define JRPC_BUILD_SIGNATURE                                                   \
  ((uint32_t)(sizeof(void *) | (sizeof(jrpc_val_t) << 8) |                     \
              (sizeof(long) << 16) | (JRPC__BIG_ENDIAN << 24)))

typedef struct jrpc_module_info {
  uint32_t magic;     /* JRPC_MODULE_MAGIC */
  uint16_t abi_major; /* JRPC_ABI_MAJOR the module was built with */
  uint16_t abi_minor; /* JRPC_ABI_MINOR the module was built with */
  uint32_t size;      /* sizeof(jrpc_module_info_t) */
  uint32_t build_signature;
  const char *name;
  const char *version;
  /* Register methods; *mod_data, shared by every worker, goes to fini. */
  int (*init)(jrpc_reg_t *r, void **mod_data);
  void (*fini)(void *mod_data);
} jrpc_module_info_t;

/* The entry point's name. A test that links several modules statically
 * defines JRPC_MODULE_ENTRY differently for each. */
#ifndef JRPC_MODULE_ENTRY
#define JRPC_MODULE_ENTRY jrpc_module_info
#endif
#define JRPC_MODULE_ENTRY_NAME "jrpc_module_info"

#if defined(__GNUC__)
#define JRPC_EXPORT __attribute__((visibility("default")))
#else
#define JRPC_EXPORT
#endif

/* Declares the module. A function rather than data: dlsym is specified for
 * functions. */
#define JRPC_MODULE(name_, version_, init_, fini_)                             \
  JRPC_EXPORT const jrpc_module_info_t *JRPC_MODULE_ENTRY(void);               \
  JRPC_EXPORT const jrpc_module_info_t *JRPC_MODULE_ENTRY(void) {              \
    static const jrpc_module_info_t info_ = {                                  \
        JRPC_MODULE_MAGIC,                                                     \
        JRPC_ABI_MAJOR,                                                        \
        JRPC_ABI_MINOR,                                                        \
        (uint32_t)sizeof(jrpc_module_info_t),                                  \
        JRPC_BUILD_SIGNATURE,                                                  \
        (name_),                                                               \
        (version_),                                                            \
        (init_),                                                               \
        (fini_)};                                                              \
    return &info_;                                                             \
  }

#ifdef __cplusplus
}
#endif

#endif /* JRPC_JRPC_H */
