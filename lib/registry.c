/* registry.c - method table with open addressing (linear probing). */
#include "registry.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common.h"

int jrpc__registry_init(jrpc__registry_t *r) {
  r->mask = 15;
  r->count = 0;
  r->slots = calloc(r->mask + 1, sizeof(*r->slots));
  return r->slots ? 0 : JRPC_ENOMEM;
}

void jrpc__registry_free(jrpc__registry_t *r) {
  if (!r->slots)
    return;
  for (uint32_t i = 0; i <= r->mask; i++) {
    free(r->slots[i].name);
    free(r->slots[i].desc);
    free(r->slots[i].vplan);
    free(r->slots[i].push);
  }
  free(r->slots);
  r->slots = NULL;
  r->count = 0;
}

/* The slot holding name, or the empty slot where it would go. */
static jrpc__method_t *probe(const jrpc__registry_t *r, const char *name,
                             size_t len, uint32_t h) {
  for (uint32_t i = h & r->mask;; i = (i + 1) & r->mask) {
    jrpc__method_t *m = &r->slots[i];
    if (!m->name ||
        (m->hash == h && m->len == len && jrpc__same_name(m->name, name, len)))
      return m;
  }
}

/* Copies m into its slot of r (a rebuilt table), remembering the slot. */
static void place(jrpc__registry_t *r, const jrpc__method_t *m) {
  jrpc__method_t *dst = probe(r, m->name, m->len, m->hash);
  *dst = *m;
  dst->slot = (uint32_t)(dst - r->slots);
}

static int grow(jrpc__registry_t *r) {
  jrpc__registry_t bigger = {NULL, r->mask * 2 + 1, r->count};
  bigger.slots = calloc(bigger.mask + 1, sizeof(*bigger.slots));
  if (!bigger.slots)
    return JRPC_ENOMEM;
  for (uint32_t i = 0; i <= r->mask; i++)
    if (r->slots[i].name)
      place(&bigger, &r->slots[i]);
  free(r->slots);
  *r = bigger;
  return 0;
}

static int is_reserved(const char *name, size_t len) {
  /* The specification reserves "rpc." names for the protocol itself. */
  return len >= 4 && memcmp(name, "rpc.", 4) == 0;
}

static int add_method(jrpc__registry_t *r, const char *name, size_t len,
                      jrpc_handler_fn fn, void *udata, const void *owner,
                      const jrpc__method_t **existing);

int jrpc__registry_add(jrpc__registry_t *r, const char *name,
                       jrpc_handler_fn fn, void *udata, const void *owner,
                       const jrpc__method_t **existing) {
  size_t len = name ? strlen(name) : 0;
  if (len == 0 || len > UINT32_MAX || !fn || is_reserved(name, len))
    return JRPC_EINVAL;
  return add_method(r, name, len, fn, udata, owner, existing);
}

int jrpc__registry_add_builtin(jrpc__registry_t *r, const char *name,
                               jrpc_handler_fn fn, void *udata) {
  size_t len = strlen(name);
  if (!fn || !is_reserved(name, len))
    return JRPC_EINVAL;
  return add_method(r, name, len, fn, udata, NULL, NULL);
}

static int add_method(jrpc__registry_t *r, const char *name, size_t len,
                      jrpc_handler_fn fn, void *udata, const void *owner,
                      const jrpc__method_t **existing) {
  uint32_t h = jrpc__name_hash(name, len);
  jrpc__method_t *m = probe(r, name, len, h);
  if (m->name) {
    if (existing)
      *existing = m;
    return JRPC_EEXIST;
  }
  /* Keep the load factor under 1/2 so probes stay short. */
  if ((r->count + 1) * 2 > r->mask + 1) {
    if (grow(r))
      return JRPC_ENOMEM;
    m = probe(r, name, len, h);
  }
  char *copy = malloc(len + 1);
  if (!copy)
    return JRPC_ENOMEM;
  memcpy(copy, name, len + 1);
  m->name = copy;
  m->len = (uint32_t)len;
  m->hash = h;
  m->fn = fn;
  m->udata = udata;
  m->owner = owner;
  m->slot = (uint32_t)(m - r->slots);
  r->count++;
  return 0;
}

void jrpc__registry_remove_owner(jrpc__registry_t *r, const void *owner) {
  /* Rebuild rather than delete in place: linear probing needs tombstones
   * otherwise, and this only runs when a module fails to load. */
  jrpc__registry_t fresh = {NULL, r->mask, 0};
  fresh.slots = calloc(fresh.mask + 1, sizeof(*fresh.slots));
  if (!fresh.slots) {
    /* Out of memory: unhook the handlers at least (never called again). */
    for (uint32_t i = 0; i <= r->mask; i++)
      if (r->slots[i].name && r->slots[i].owner == owner)
        r->slots[i].owner = NULL, r->slots[i].fn = NULL;
    return;
  }
  for (uint32_t i = 0; i <= r->mask; i++) {
    jrpc__method_t *m = &r->slots[i];
    if (!m->name)
      continue;
    if (m->owner == owner) {
      free(m->name);
      free(m->desc);
      free(m->vplan);
      free(m->push);
      continue;
    }
    place(&fresh, m);
    fresh.count++;
  }
  free(r->slots);
  *r = fresh;
}

void jrpc__regctx_init(jrpc__regctx_t *ctx, jrpc__registry_t *reg,
                       const void *owner, const char *const *conf) {
  ctx->pub.api = &jrpc__api;
  ctx->reg = reg;
  ctx->owner = owner;
  ctx->conf = conf;
  ctx->err[0] = '\0';
  ctx->failed = 0;
  ctx->bad_key = 0;
  ctx->dup_owner = NULL;
  ctx->winit = NULL;
  ctx->wfini = NULL;
  ctx->sealed = 0;
}

int jrpc__registry_view_init(jrpc__registry_t *view,
                             const jrpc__registry_t *base) {
  size_t n = (size_t)base->mask + 1;
  view->slots = malloc(n * sizeof(*view->slots));
  if (!view->slots)
    return JRPC_ENOMEM;
  memcpy(view->slots, base->slots, n * sizeof(*view->slots));
  view->mask = base->mask;
  view->count = base->count;
  return 0;
}

void jrpc__registry_view_free(jrpc__registry_t *view) {
  free(view->slots); /* the names are base's */
  view->slots = NULL;
  view->count = 0;
}

void jrpc__registry_view_withhold(jrpc__registry_t *view, uint32_t slot,
                                  jrpc_handler_fn deny, void *udata) {
  jrpc__method_t *m = &view->slots[slot];
  /* name, len, hash and slot stay: the lookup still finds the entry (to
   * deny it) and per-method counters keep their row. The rest belongs to
   * the method being withheld; the view owns none of it, so nothing is
   * freed. */
  m->fn = deny;
  m->udata = deny ? udata : NULL;
  m->owner = NULL;
  m->desc = NULL;
  m->vplan = NULL;
  m->push = NULL;
  m->timeout_ms = 0;
  m->timeout_own = 0;
}
