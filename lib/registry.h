/* registry.h - method name -> handler, open addressing, O(1) lookup.
 * Built before serving starts and read-only while serving. */
#ifndef JRPC_REGISTRY_H
#define JRPC_REGISTRY_H

#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "jrpc/jrpc.h"

typedef struct jrpc__method {
  char *name; /* owned, NUL-terminated; NULL marks an empty slot */
  uint32_t len;
  uint32_t hash;
  jrpc_handler_fn fn;
  void *udata;
  const void *owner; /* the module that registered it: a jrpc__module_t when
                        it came through a registration context; NULL for
                        the daemon's own methods */
  uint32_t slot;     /* its index in slots[] (per-method counters' row) */
  char *desc;        /* owned: its OpenRPC Method Object without "name" (checked
                        JSON), or NULL (jrpc_describe) */
  struct jrpc__vplan *vplan; /* owned: its params' checks, which dispatch
                                runs before fn (validate.h), or NULL; they
                                hold no handler: fn is what runs */
  /* Deferred calls answered -32004 after this long (0: never): the
   * description's "x-jrpcd-timeout-ms" (timeout_own), else what the host
   * sets from its config. */
  uint32_t timeout_ms;
  uint8_t timeout_own;
  /* A subscription method (jrpc_subscription, push.h): its notification
   * method's name, a NUL, its unsubscribe method's name (owned, copied:
   * nothing of the module's memory). NULL for any other method. */
  char *push;
} jrpc__method_t;

typedef struct jrpc__registry {
  jrpc__method_t *slots;
  uint32_t mask; /* slot count - 1 (power of two) */
  uint32_t count;
} jrpc__registry_t;

int jrpc__registry_init(jrpc__registry_t *r);
void jrpc__registry_free(jrpc__registry_t *r);

/* JRPC_EINVAL for an empty name or a reserved "rpc." name; JRPC_EEXIST
 * when taken (*existing, if given, receives the entry). */
int jrpc__registry_add(jrpc__registry_t *r, const char *name,
                       jrpc_handler_fn fn, void *udata, const void *owner,
                       const jrpc__method_t **existing);

/* The daemon's own "rpc." methods (owner NULL); JRPC_EINVAL for any other
 * name. */
int jrpc__registry_add_builtin(jrpc__registry_t *r, const char *name,
                               jrpc_handler_fn fn, void *udata);

/* Removes every method registered by `owner` (rollback of a failed init). */
void jrpc__registry_remove_owner(jrpc__registry_t *r, const void *owner);

/* Method names are short: hash the first and last eight bytes as words
 * (two multiplies; four-byte words below eight bytes) and only walk the
 * middle of names longer than 16. A parser that wants to hand over the
 * hash with the method name must compute exactly this. */
static inline uint32_t jrpc__name_hash(const char *s, size_t n) {
  uint64_t a = 0, b = 0;
  if (n >= 8) {
    memcpy(&a, s, 8);
    memcpy(&b, s + n - 8, 8);
  } else if (n >= 4) {
    uint32_t x, y;
    memcpy(&x, s, 4);
    memcpy(&y, s + n - 4, 4);
    a = x;
    b = y;
  } else {
    for (size_t i = 0; i < n; i++)
      a |= (uint64_t)(unsigned char)s[i] << (8 * i);
  }
  uint64_t h = a * 0x9E3779B97F4A7C15ull ^ b * 0xC2B2AE3D27D4EB4Full ^ n;
  for (size_t i = 8; i + 8 < n; i++)
    h = (h ^ (unsigned char)s[i]) * 0x100000001B3ull;
  return (uint32_t)(h >> 32) ^ (uint32_t)h;
}

/* Names of 8 to 16 bytes compare as two overlapping words: no call. */
static inline int jrpc__same_name(const char *a, const char *b, size_t n) {
  if (n >= 8 && n <= 16) {
    uint64_t a0, a1, b0, b1;
    memcpy(&a0, a, 8);
    memcpy(&b0, b, 8);
    memcpy(&a1, a + n - 8, 8);
    memcpy(&b1, b + n - 8, 8);
    return a0 == b0 && a1 == b1;
  }
  return memcmp(a, b, n) == 0;
}

/* The lookup with the name's jrpc__name_hash already known (for a parser
 * that computes it while it scans the method string). Inline: once per
 * request. */
static inline const jrpc__method_t *
jrpc__registry_find_hashed(const jrpc__registry_t *r, const char *name,
                           size_t len, uint32_t h) {
  for (uint32_t i = h & r->mask;; i = (i + 1) & r->mask) {
    const jrpc__method_t *m = &r->slots[i];
    if (!m->name)
      return NULL;
    if (m->hash == h && m->len == len && jrpc__same_name(m->name, name, len))
      return m->fn ? m : NULL;
  }
}

static inline const jrpc__method_t *
jrpc__registry_find(const jrpc__registry_t *r, const char *name, size_t len) {
  return jrpc__registry_find_hashed(r, name, len, jrpc__name_hash(name, len));
}

/* A view: base's table copied (names shared, not owned), for a host to
 * withhold methods from, per connection, at no cost per lookup. Slots keep
 * their index. Valid while base is. */
int jrpc__registry_view_init(jrpc__registry_t *view,
                             const jrpc__registry_t *base);
void jrpc__registry_view_free(jrpc__registry_t *view);

/* The one way a view's slot stops serving its method. With deny NULL the
 * method is hidden: lookups find nothing ("Method not found", as if
 * absent). Otherwise every call of it runs deny(udata) instead, and only
 * that: the slot loses all else of the method that could run the
 * module's code or tell of it (its handler and udata, its params plan,
 * which would otherwise be checked first and answer -32602 with the
 * schema's names, its description, its module, its timeout). Dispatch
 * calls nothing but the slot's fn, so whatever path a call takes (fast or
 * full params check, notification, batch element, any parser or framing)
 * it meets the same decision. */
void jrpc__registry_view_withhold(jrpc__registry_t *view, uint32_t slot,
                                  jrpc_handler_fn deny, void *udata);

/* Whether view serves slot's method as base does (neither hidden nor
 * denied): for listings that must show only what the caller may call. */
static inline int jrpc__registry_view_serves(const jrpc__registry_t *base,
                                             const jrpc__registry_t *view,
                                             uint32_t slot) {
  const jrpc__method_t *m = &base->slots[slot];
  /* No view yet (admission has not decided): nothing is served. */
  return view && m->name && m->fn && view->slots[slot].fn == m->fn &&
         view->slots[slot].udata == m->udata;
}

/* The registration context behind a module's jrpc_reg_t. */
typedef struct jrpc__regctx {
  jrpc_reg_t pub;
  jrpc__registry_t *reg;
  const void *owner;
  const char *const *conf; /* key, value, key, value, ..., NULL */
  char err[256];           /* why the last register_method failed */
  int failed;              /* some register_method call failed */
  /* jrpc_conf_keys refused the conf pair at this index + 1 (0: none),
   * for the host to say where in its file that key is. */
  size_t bad_key;
  const void *dup_owner; /* with EEXIST: who has the name */
  /* jrpc_on_worker (ABI 1.3): what the module's init asked for. */
  jrpc_worker_init_fn winit;
  jrpc_worker_fini_fn wfini;
  int sealed; /* init has returned: per-worker inits run, nothing registers */
} jrpc__regctx_t;

void jrpc__regctx_init(jrpc__regctx_t *ctx, jrpc__registry_t *reg,
                       const void *owner, const char *const *conf);

/* jrpc_describe (describe.c). */
int jrpc__describe(jrpc__regctx_t *ctx, const char *method, const char *json);
#endif
