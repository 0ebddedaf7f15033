/* generation.c - one generation of the configuration: its plugins, registry,
 * policies, access rules, tokens and counters; see generation.h. */
#include "generation.h"

#include <stdlib.h>
#include <string.h>

#include "admit.h"
#include "discover.h"
#include "gen_tls.h"
#include "log.h"
#include "plugin_load.h"
#include "rpcstats.h"

/* Each method's call timeout: its description's own, else its plugin's
 * timeout_ms, else [server] call_timeout_ms. */
static void set_timeouts(jrpcd_gen_t *g, const jrpcd_config_t *c,
                         const jrpcd_plugin_conf_t *const *confs) {
  for (uint32_t k = 0; k <= g->reg.mask; k++) {
    jrpc__method_t *m = &g->reg.slots[k];
    if (!m->name || m->timeout_own)
      continue;
    m->timeout_ms = c->call_timeout_ms;
    for (size_t i = 0; i < g->nplugins; i++)
      if (m->owner == &g->plugins[i].mod &&
          confs[i]->timeout_ms != JRPCD_TIMEOUT_SERVER)
        m->timeout_ms = (uint32_t)confs[i]->timeout_ms;
  }
}

int jrpcd_gen_load(jrpcd_gen_t **out, const jrpcd_config_t *c, unsigned serial,
                   char *err, size_t errlen) {
  *out = NULL;
  jrpcd_gen_t *g = calloc(1, sizeof(*g));
  if (!g || jrpc__registry_init(&g->reg) != 0) {
    free(g);
    snprintf(err, errlen, "out of memory");
    return -1;
  }
  g->serial = serial;
  atomic_init(&g->refs, 1);
  pthread_mutex_init(&g->views_mu, NULL);
  unsigned nworkers = c->workers ? c->workers : 1;
  g->plugins = calloc(c->nplugins ? c->nplugins : 1, sizeof(*g->plugins));
  g->wrefs = calloc(nworkers, sizeof(*g->wrefs));
  /* Each loaded plugin's section (failed ones are skipped). */
  const jrpcd_plugin_conf_t **confs =
      calloc(c->nplugins ? c->nplugins : 1, sizeof(*confs));
  if (!g->plugins || !g->wrefs || !confs) {
    free(confs);
    snprintf(err, errlen, "out of memory");
    goto fail;
  }
  for (size_t i = 0; i < c->nplugins; i++) {
    jrpcd_plugin_t *p = &g->plugins[g->nplugins];
    char why[768];
    if (jrpcd_plugin_load(p, &c->plugins[i], c->file, c->validate_params,
                          &g->reg, nworkers, why, sizeof(why)) == 0) {
      confs[g->nplugins++] = &c->plugins[i];
      continue;
    }
    jrpcd_plugin_unload(p);
    if (c->strict_plugins) {
      snprintf(err, errlen, "%s", why);
      free(confs);
      goto fail;
    }
    jrpcd_error("%s (plugin skipped)", why);
    g->failed++;
  }
  set_timeouts(g, c, confs);
  free(confs);
  if (jrpcd_discover_attach(g) != 0 || jrpcd_stats_attach(g, nworkers) != 0) {
    snprintf(err, errlen, "out of memory");
    goto fail;
  }
  g->policies = calloc(c->nlistens ? c->nlistens : 1, sizeof(*g->policies));
  if (!g->policies) {
    snprintf(err, errlen, "out of memory");
    goto fail;
  }
  g->tokens = calloc(c->nlistens ? c->nlistens : 1, sizeof(*g->tokens));
  if (!g->tokens) {
    snprintf(err, errlen, "out of memory");
    goto fail;
  }
  for (; g->npolicies < c->nlistens; g->npolicies++) {
    const jrpcd_listen_conf_t *l = &c->listens[g->npolicies];
    char why[512];
    if (jrpcd_policy_init(&g->policies[g->npolicies], l->name, l->peers,
                          l->methods, why, sizeof(why)) != 0) {
      snprintf(err, errlen, "%s: [listen %s]: %s", c->file, l->name, why);
      goto fail;
    }
    g->policies[g->npolicies].discover = l->discover;
    /* Read with the generation, so that a SIGHUP reads it again; a file
     * that does not load fails the start or the reload (the previous
     * generation, tokens included, then serves on). */
    if (l->tokens_file &&
        jrpcd_tokens_load(&g->tokens[g->npolicies], l->tokens_file, why,
                          sizeof(why)) != 0) {
      snprintf(err, errlen, "%s: [listen %s] tokens_file: %s", c->file, l->name,
               why);
      g->npolicies++; /* its policy is made: freed with the others */
      goto fail;
    }
  }
  g->has_access = c->has_access;
  if (jrpcd_access_copy(&g->access, &c->access) != 0) {
    snprintf(err, errlen, "out of memory");
    goto fail;
  }
  *out = g;
  return 0;
fail:
  jrpcd_gen_release(g);
  return -1;
}

void jrpcd_gen_hold(jrpcd_gen_t *g) {
  atomic_fetch_add_explicit(&g->refs, 1, memory_order_relaxed);
}

void jrpcd_gen_release(jrpcd_gen_t *g) {
  if (!g || atomic_fetch_sub_explicit(&g->refs, 1, memory_order_acq_rel) != 1)
    return;
  for (size_t i = g->nplugins; i-- > 0;)
    jrpcd_plugin_unload(&g->plugins[i]);
  free(g->plugins);
  free(g->wrefs);
  jrpc__registry_free(&g->reg);
  free(g->mstats);
  for (size_t i = 0; i < g->npolicies; i++) {
    jrpcd_policy_free(&g->policies[i]);
    if (g->tokens)
      jrpcd_tokens_free(&g->tokens[i]);
  }
  free(g->policies);
  free(g->tokens);
  jrpcd_views_free(g);
  jrpcd_access_free(&g->access);
  pthread_mutex_destroy(&g->views_mu);
  jrpcd_gen_tls_free(g);
  free(g);
}

void jrpcd_gen_worker_hold(jrpcd_gen_t *g, unsigned k) {
  atomic_fetch_add_explicit(&g->wrefs[k], 1, memory_order_relaxed);
  jrpcd_gen_hold(g);
}

void jrpcd_gen_worker_release(jrpcd_gen_t *g, unsigned k) {
  /* Worker k's thread runs nothing of g any more: its slots go now, on
   * its thread, rather than wherever g's last holder happens to be. */
  if (atomic_fetch_sub_explicit(&g->wrefs[k], 1, memory_order_acq_rel) == 1)
    for (size_t i = g->nplugins; i-- > 0;)
      jrpc__module_worker_stop(&g->plugins[i].mod, k);
  jrpcd_gen_release(g);
}

const jrpcd_policy_t *jrpcd_gen_policy(const jrpcd_gen_t *g,
                                       const char *listener) {
  for (size_t i = 0; i < g->npolicies; i++)
    if (strcmp(g->policies[i].listener, listener) == 0)
      return &g->policies[i];
  return NULL;
}

const jrpcd_tokens_t *jrpcd_gen_tokens(const jrpcd_gen_t *g,
                                       const char *listener) {
  for (size_t i = 0; g->tokens && i < g->npolicies; i++)
    if (strcmp(g->policies[i].listener, listener) == 0)
      return g->tokens[i].n ? &g->tokens[i] : NULL;
  return NULL;
}

static int by_name(const void *a, const void *b) {
  return strcmp(*(const char *const *)a, *(const char *const *)b);
}

void jrpcd_gen_describe(const jrpcd_gen_t *g, FILE *f) {
  const char **names = calloc(g->reg.count ? g->reg.count : 1, sizeof(*names));
  for (size_t i = 0; i < g->nplugins; i++) {
    const jrpcd_plugin_t *p = &g->plugins[i];
    fprintf(f, "plugin %s (%s, module %s %s):", p->name, p->path,
            p->mod.info->name ? p->mod.info->name : "?",
            p->mod.info->version ? p->mod.info->version : "?");
    size_t n = 0;
    for (uint32_t k = 0; names && k <= g->reg.mask; k++) {
      const jrpc__method_t *m = &g->reg.slots[k];
      if (m->name && m->owner == &p->mod)
        names[n++] = m->name;
    }
    qsort(names, n, sizeof(*names), by_name); /* the table's order is noise */
    for (size_t k = 0; k < n; k++)
      fprintf(f, " %s", names[k]);
    fputc('\n', f);
  }
  free(names);
}
