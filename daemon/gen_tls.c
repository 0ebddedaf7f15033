/* gen_tls.c - the TLS contexts of a plugin generation; see gen_tls.h. */
#include "gen_tls.h"

#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "log.h"

static long policy_index(const jrpcd_gen_t *g, const char *listener) {
  for (size_t i = 0; i < g->npolicies; i++)
    if (strcmp(g->policies[i].listener, listener) == 0)
      return (long)i;
  return -1;
}

jrpcd_tls_ctx_t *jrpcd_gen_tls(const jrpcd_gen_t *g, const char *listener) {
  long i = g->tls ? policy_index(g, listener) : -1;
  return i < 0 ? NULL : g->tls[i];
}

#ifndef JRPC_HAVE_TLS

int jrpcd_gen_tls_load(jrpcd_gen_t *g, const jrpcd_config_t *c,
                       const jrpcd_gen_t *prev, char *err, size_t errlen) {
  (void)g, (void)c, (void)prev, (void)err, (void)errlen;
  return 0; /* the config reader refuses every tls_ key */
}

void jrpcd_gen_tls_free(jrpcd_gen_t *g) {
  free(g->tls);
  g->tls = NULL;
}

void jrpcd_gen_tls_describe(const jrpcd_gen_t *g, const char *listener,
                            char *out, size_t cap) {
  (void)g, (void)listener;
  if (cap)
    out[0] = '\0';
}

#else

int jrpcd_gen_tls_load(jrpcd_gen_t *g, const jrpcd_config_t *c,
                       const jrpcd_gen_t *prev, char *err, size_t errlen) {
  g->tls = calloc(g->npolicies ? g->npolicies : 1, sizeof(*g->tls));
  if (!g->tls) {
    snprintf(err, errlen, "out of memory");
    return -1;
  }
  for (size_t i = 0; i < g->npolicies && i < c->nlistens; i++) {
    const jrpcd_listen_conf_t *l = &c->listens[i];
    jrpcd_tls_ctx_t *old = prev ? jrpcd_gen_tls(prev, l->name) : NULL;
    if (!l->tls_cert) {
      if (old) {
        /* The socket's protocol is fixed at start, like its address. */
        jrpcd_warn("[listen %s]: tls_cert is gone, but TLS changes only on "
                   "a restart: keeping the certificate in use",
                   l->name);
        jrpcd_tls_ctx_hold(old);
        g->tls[i] = old;
      }
      continue;
    }
    jrpcd_tls_conf_t tc = {l->tls_cert,        l->tls_key,     l->tls_client_ca,
                           l->tls_min_version, l->tls_ciphers, l->verify_depth};
    char why[512];
    g->tls[i] = jrpcd_tls_ctx_new(&tc, why, sizeof(why));
    if (g->tls[i])
      continue;
    if (!prev) {
      snprintf(err, errlen, "%s: [listen %s] %s", c->file, l->name, why);
      return -1;
    }
    if (old) {
      jrpcd_error("[listen %s] %s; new connections keep the previous "
                  "certificate and key",
                  l->name, why);
      jrpcd_tls_ctx_hold(old);
      g->tls[i] = old;
    } else {
      jrpcd_error("[listen %s] %s", l->name, why);
    }
  }
  return 0;
}

void jrpcd_gen_tls_free(jrpcd_gen_t *g) {
  for (size_t i = 0; g->tls && i < g->npolicies; i++)
    jrpcd_tls_ctx_release(g->tls[i]);
  free(g->tls);
  g->tls = NULL;
}

void jrpcd_gen_tls_describe(const jrpcd_gen_t *g, const char *listener,
                            char *out, size_t cap) {
  jrpcd_tls_ctx_t *x = jrpcd_gen_tls(g, listener);
  if (!x) {
    if (cap)
      out[0] = '\0';
    return;
  }
  time_t t = (time_t)jrpcd_tls_ctx_not_after(x);
  struct tm tm;
  char when[64] = "unknown";
  if (t && gmtime_r(&t, &tm))
    strftime(when, sizeof(when), "%Y-%m-%d %H:%M:%S UTC", &tm);
  snprintf(out, cap, ", TLS (certificate valid until %s)", when);
}

#endif /* JRPC_HAVE_TLS */
