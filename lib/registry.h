/* registry.h - method name -> handler, open addressing, O(1) lookup.
 * Built before serving starts and read-only while serving. */
#ifndef JRPC_REGISTRY_H
#define JRPC_REGISTRY_H

#include <stddef.h>
#include <stdint.h>

#include "jrpc/jrpc.h"

typedef struct jrpc__method {
  char *name; /* owned, NUL-terminated; NULL marks an empty slot */
  uint32_t len;
  uint32_t hash;
  jrpc_handler_fn fn;
  void *udata;
  const void *owner; /* the module that registered it (opaque here) */
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

const jrpc__method_t *jrpc__registry_find(const jrpc__registry_t *r,
                                          const char *name, size_t len);

/* The registration context behind a module's jrpc_reg_t. */
typedef struct jrpc__regctx {
  jrpc_reg_t pub;
  jrpc__registry_t *reg;
  const void *owner;
  const char *const *conf; /* key, value, key, value, ..., NULL */
  char err[256];           /* why the last register_method failed */
  int failed;              /* some register_method call failed */
  const void *dup_owner;   /* with EEXIST: who has the name */
} jrpc__regctx_t;

void jrpc__regctx_init(jrpc__regctx_t *ctx, jrpc__registry_t *reg,
                       const void *owner, const char *const *conf);
#endif
