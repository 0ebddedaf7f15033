/* generation.h - one generation of the configuration: the handler plugins
 * of a config, started, the registry their methods fill, and the policies,
 * access rules, views, TLS contexts, tokens and per-method counters made
 * from the same reading. Workers use
 * one generation at a time; a reload builds the next one beside it. A
 * generation is unloaded when its last holder lets go: the workers, and
 * every deferred call it still has to answer. */
#ifndef JRPCD_GENERATION_H
#define JRPCD_GENERATION_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>

#include "access.h"
#include "config.h"
#include "plugin_load.h"
#include "registry.h"
#include "stats.h"
#include "tokens.h"

typedef struct jrpcd_gen {
  jrpc__registry_t reg;
  jrpcd_plugin_t *plugins;
  size_t nplugins;
  unsigned serial; /* 1 for the first load, +1 per reload */
  size_t failed;   /* plugins skipped (strict_plugins = no) */
  atomic_uint refs;
  /* Per-method counters since this generation was loaded: one row per
   * worker, mstride entries each, indexed like reg's slots. */
  jrpc__mstat_t *mstats;
  size_t mstride;
  unsigned nworkers;
  /* Who each [listen] section lets in, as this generation's config says. */
  jrpcd_policy_t *policies;
  size_t npolicies;
  /* [access] (has_access: the section is there), and the views of reg
   * that connections' decisions made (admit.c), under views_mu. */
  jrpcd_access_t access;
  int has_access;
  pthread_mutex_t views_mu;
  struct jrpcd_view *views;
  size_t nviews;
  /* Each [listen] section's TLS context, indexed like policies; NULL for
   * a plain listener (gen_tls.h fills it). */
  struct jrpcd_tls_ctx **tls;
  /* Each [listen] section's bearer tokens (tokens_file), read when the
   * generation loads, indexed like policies; n == 0: none asked for. */
  jrpcd_tokens_t *tokens;
  /* Holds per worker (as many as workers), within refs: while worker k
   * has one, its thread may run this generation's code with its own
   * per-worker slots; at 0 those slots are finalised (jrpc_on_worker). */
  atomic_uint *wrefs;
} jrpcd_gen_t;

/* Loads every plugin of c. With c->strict_plugins, the first failure
 * unloads the rest and returns -1 with the reason in err; otherwise each
 * failure is logged and skipped. The generation starts with one ref. */
int jrpcd_gen_load(jrpcd_gen_t **out, const jrpcd_config_t *c, unsigned serial,
                   char *err, size_t errlen);

void jrpcd_gen_hold(jrpcd_gen_t *g);
/* The last release runs every fini (in reverse load order) and dlcloses. */
void jrpcd_gen_release(jrpcd_gen_t *g);
/* A hold on behalf of worker k (from any thread), and its release: the
 * release that ends worker k's last one runs the fini of worker k's slot
 * of every plugin, on the calling thread (the worker's own, except for
 * what is let go after its thread has ended), before the release. */
void jrpcd_gen_worker_hold(jrpcd_gen_t *g, unsigned k);
void jrpcd_gen_worker_release(jrpcd_gen_t *g, unsigned k);

static inline jrpcd_gen_t *jrpcd_gen_of(const jrpc__registry_t *r) {
  return (jrpcd_gen_t *)(void *)r; /* reg is the first member */
}

/* The policy of the listener named `listener`, or NULL if this
 * generation's config has no such section. */
const jrpcd_policy_t *jrpcd_gen_policy(const jrpcd_gen_t *g,
                                       const char *listener);

/* The tokens of the listener named `listener`, or NULL when it has no
 * tokens_file. */
const jrpcd_tokens_t *jrpcd_gen_tokens(const jrpcd_gen_t *g,
                                       const char *listener);

/* "plugin math (math.so 1.0): math.add math.divide ..." per plugin. */
void jrpcd_gen_describe(const jrpcd_gen_t *g, FILE *f);

#endif
