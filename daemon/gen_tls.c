/* gen_tls.c - the TLS contexts of a plugin generation; see gen_tls.h. */
#include "gen_tls.h"

#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "config_keys.h"
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

/* "FILE:LINE: [listen NAME] KEY: ...": WHY as tls.c forms it ("tls_key:
 * PATH: reason"), placed at the line of the key it starts with. */
static void tls_message(const jrpcd_config_t *c, const jrpcd_listen_conf_t *l,
                        const char *why, char *out, size_t cap) {
  char key[32];
  size_t n = strcspn(why, ":");
  int line = 0;
  if (n < sizeof key) {
    memcpy(key, why, n);
    key[n] = '\0';
    line = jrpcd_listen_key_line(l, key);
  }
  if (line > 0)
    snprintf(out, cap, "%s:%d: [listen %s] %s", c->file, line, l->name, why);
  else
    snprintf(out, cap, "%s: [listen %s] %s", c->file, l->name, why);
}

/* Each PEM file of L opens as a regular file, or why not in the OS's
 * words (OpenSSL's own say only "system lib" or "no such file"). 0, or -1
 * with why ("tls_key: PATH: Permission denied"). */
static int tls_files_open(const jrpcd_listen_conf_t *l, char *why,
                          size_t whylen) {
  const struct {
    const char *key, *path;
  } files[] = {{"tls_cert", l->tls_cert},
               {"tls_key", l->tls_key},
               {"tls_client_ca", l->tls_client_ca}};
  for (size_t i = 0; i < sizeof files / sizeof files[0]; i++) {
    if (!files[i].path)
      continue;
    int fd = open(files[i].path, O_RDONLY | O_CLOEXEC | O_NOCTTY);
    struct stat st;
    const char *bad = NULL;
    if (fd < 0)
      bad = strerror(errno);
    else if (fstat(fd, &st) != 0)
      bad = strerror(errno);
    else if (!S_ISREG(st.st_mode))
      bad = "not a regular file";
    if (fd >= 0)
      close(fd);
    if (bad) {
      snprintf(why, whylen, "%s: %s: %s", files[i].key, files[i].path, bad);
      return -1;
    }
  }
  return 0;
}

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
    char why[512], msg[1024];
    if (tls_files_open(l, why, sizeof(why)) == 0) {
      g->tls[i] = jrpcd_tls_ctx_new(&tc, why, sizeof(why));
      if (g->tls[i])
        continue;
    }
    tls_message(c, l, why, msg, sizeof(msg));
    if (!prev) {
      snprintf(err, errlen, "%s", msg);
      return -1;
    }
    if (old) {
      jrpcd_error("%s; new connections keep the previous certificate and key",
                  msg);
      jrpcd_tls_ctx_hold(old);
      g->tls[i] = old;
    } else {
      jrpcd_error("%s", msg);
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
