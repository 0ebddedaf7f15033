/* access.c - principals, method globs and the [access] rules; see
 * access.h. */
#include "access.h"

#include <arpa/inet.h>
#include <fnmatch.h>
#include <grp.h>
#include <pwd.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>

#define WORD_MAX 256 /* longest principal or glob word */

/* A decimal id that fits 32 bits (uid_t, gid_t), nothing else. */
static int parse_id(const char *s, uint32_t *out) {
  if (*s < '0' || *s > '9')
    return -1;
  uint64_t v = 0;
  for (; *s; s++) {
    if (*s < '0' || *s > '9')
      return -1;
    v = v * 10 + (uint64_t)(*s - '0');
    if (v > UINT32_MAX - 1) /* (uid_t)-1 means "no change" to the kernel */
      return -1;
  }
  *out = (uint32_t)v;
  return 0;
}

static int resolve_user(const char *name, uint32_t *uid) {
  struct passwd pw, *res = NULL;
  char buf[4096];
  if (getpwnam_r(name, &pw, buf, sizeof(buf), &res) != 0 || !res)
    return -1;
  *uid = (uint32_t)pw.pw_uid;
  return 0;
}

static int resolve_group(const char *name, uint32_t *gid) {
  struct group gr, *res = NULL;
  char buf[16384]; /* a group entry lists its members */
  if (getgrnam_r(name, &gr, buf, sizeof(buf), &res) != 0 || !res)
    return -1;
  *gid = (uint32_t)gr.gr_gid;
  return 0;
}

/* "10.0.0.0/8", "192.168.1.7", "::1", "fd00::/8". The bits past the
 * prefix must be zero: "10.0.0.1/8" is more likely a typo than a wish. */
static int parse_net(const char *word, jrpcd_principal_t *p, char *err,
                     size_t errlen) {
  char addr[64];
  const char *slash = strchr(word, '/');
  size_t n = slash ? (size_t)(slash - word) : strlen(word);
  if (n == 0 || n >= sizeof(addr))
    goto bad;
  memcpy(addr, word, n);
  addr[n] = '\0';
  memset(p->addr, 0, sizeof(p->addr));
  if (inet_pton(AF_INET, addr, p->addr) == 1)
    p->family = AF_INET;
  else if (inet_pton(AF_INET6, addr, p->addr) == 1)
    p->family = AF_INET6;
  else
    goto bad;
  unsigned bits = p->family == AF_INET ? 32 : 128;
  p->prefix = bits;
  if (slash) {
    uint32_t v;
    if (parse_id(slash + 1, &v) != 0 || v > bits) {
      snprintf(err, errlen, "\"%s\": the prefix length must be 0 to %u", word,
               bits);
      return -1;
    }
    p->prefix = (unsigned)v;
  }
  int stray = 0;
  uint8_t net[16];
  memcpy(net, p->addr, sizeof(net));
  for (unsigned b = p->prefix; b < bits; b++)
    if (net[b / 8] & (0x80u >> (b % 8))) {
      net[b / 8] &= (uint8_t) ~(0x80u >> (b % 8));
      stray = 1;
    }
  if (stray) {
    char text[INET6_ADDRSTRLEN];
    inet_ntop(p->family, net, text, sizeof(text));
    snprintf(err, errlen,
             "\"%s\": bits are set past the /%u prefix (did you mean "
             "%s/%u?)",
             word, p->prefix, text, p->prefix);
    return -1;
  }
  p->kind = JRPCD_PRIN_NET;
  return 0;
bad:
  snprintf(err, errlen,
           "\"%s\": not a principal (an IPv4 or IPv6 address or CIDR range, "
           "uid:N, gid:N, user:NAME, group:NAME, cert:CN, san:NAME or "
           "token:NAME)",
           word);
  return -1;
}

int jrpcd_principal_parse(const char *word, int any_ok, jrpcd_principal_t *p,
                          char *err, size_t errlen) {
  memset(p, 0, sizeof(*p));
  if (strcmp(word, "*") == 0) {
    if (!any_ok) {
      snprintf(err, errlen,
               "\"*\" is for [access] rules; a listener that takes anyone "
               "needs no peers list");
      return -1;
    }
    p->kind = JRPCD_PRIN_ANY;
    return 0;
  }
  const char *colon = strchr(word, ':');
  /* IPv6 addresses have colons too: a prefix is only one of ours. */
  static const struct {
    const char *tag;
    jrpcd_prin_kind_t kind;
    int by_name;
  } tags[] = {{"uid", JRPCD_PRIN_UID, 0},    {"gid", JRPCD_PRIN_GID, 0},
              {"user", JRPCD_PRIN_UID, 1},   {"group", JRPCD_PRIN_GID, 1},
              {"cert", JRPCD_PRIN_CERT, 0},  {"san", JRPCD_PRIN_SAN, 0},
              {"token", JRPCD_PRIN_TOKEN, 0}};
  for (size_t i = 0; colon && i < sizeof(tags) / sizeof(tags[0]); i++) {
    size_t tl = strlen(tags[i].tag);
    if ((size_t)(colon - word) != tl || strncmp(word, tags[i].tag, tl) != 0)
      continue;
    const char *v = colon + 1;
    if (!*v) {
      snprintf(err, errlen, "\"%s\": nothing after \"%s:\"", word, tags[i].tag);
      return -1;
    }
    p->kind = tags[i].kind;
    if (p->kind == JRPCD_PRIN_CERT || p->kind == JRPCD_PRIN_SAN ||
        p->kind == JRPCD_PRIN_TOKEN) {
      p->name = strdup(v);
      if (!p->name) {
        snprintf(err, errlen, "out of memory");
        return -1;
      }
      return 0;
    }
    int rc = tags[i].by_name
                 ? (p->kind == JRPCD_PRIN_UID ? resolve_user(v, &p->id)
                                              : resolve_group(v, &p->id))
                 : parse_id(v, &p->id);
    if (rc != 0) {
      if (tags[i].by_name)
        snprintf(err, errlen, "\"%s\": no such %s", word, tags[i].tag);
      else
        snprintf(err, errlen, "\"%s\": a %s is a number from 0 to %u", word,
                 tags[i].tag, UINT32_MAX - 1);
      return -1;
    }
    return 0;
  }
  return parse_net(word, p, err, errlen);
}

void jrpcd_principal_free(jrpcd_principal_t *p) {
  free(p->name);
  p->name = NULL;
}

void jrpcd_identity_set_addr(jrpcd_identity_t *id, const struct sockaddr *sa) {
  memset(id->addr, 0, sizeof(id->addr));
  id->family = sa->sa_family;
  if (sa->sa_family == AF_INET) {
    const struct sockaddr_in *s4 = (const struct sockaddr_in *)(const void *)sa;
    memcpy(id->addr, &s4->sin_addr, 4);
  } else if (sa->sa_family == AF_INET6) {
    const struct sockaddr_in6 *s6 =
        (const struct sockaddr_in6 *)(const void *)sa;
    static const uint8_t v4mapped[12] = {0, 0, 0, 0, 0,    0,
                                         0, 0, 0, 0, 0xFF, 0xFF};
    if (memcmp(&s6->sin6_addr, v4mapped, 12) == 0) {
      id->family = AF_INET;
      memcpy(id->addr, (const uint8_t *)&s6->sin6_addr + 12, 4);
    } else {
      memcpy(id->addr, &s6->sin6_addr, 16);
    }
  }
}

static int net_match(const jrpcd_principal_t *p, const jrpcd_identity_t *id) {
  if (id->family != p->family)
    return 0;
  unsigned full = p->prefix / 8, rest = p->prefix % 8;
  if (memcmp(p->addr, id->addr, full) != 0)
    return 0;
  if (!rest)
    return 1;
  uint8_t mask = (uint8_t)(0xFFu << (8 - rest));
  return (p->addr[full] & mask) == (id->addr[full] & mask);
}

int jrpcd_principal_match(const jrpcd_principal_t *p,
                          const jrpcd_identity_t *id) {
  switch (p->kind) {
  case JRPCD_PRIN_ANY:
    return 1;
  case JRPCD_PRIN_NET:
    return net_match(p, id);
  case JRPCD_PRIN_UID:
    return id->family == AF_UNIX && id->has_cred && id->uid == p->id;
  case JRPCD_PRIN_GID:
    if (id->family != AF_UNIX || !id->has_cred)
      return 0;
    if (id->gid == p->id)
      return 1;
    for (size_t i = 0; i < id->ngroups; i++)
      if (id->groups[i] == p->id)
        return 1;
    return 0;
  case JRPCD_PRIN_CERT:
    return id->cert_cn && strcmp(id->cert_cn, p->name) == 0;
  case JRPCD_PRIN_SAN:
    for (size_t i = 0; i < id->nsans; i++)
      if (strcasecmp(id->sans[i], p->name) == 0) /* DNS names: any case */
        return 1;
    return 0;
  case JRPCD_PRIN_TOKEN:
    return id->token && strcmp(id->token, p->name) == 0;
  }
  return 0;
}

/* Calls fn on each space- or tab-separated word of text (NUL-terminated
 * copies); stops at the first non-zero return. */
static int each_word(const char *text, int (*fn)(void *, const char *),
                     void *arg, char *err, size_t errlen) {
  const char *s = text;
  int words = 0;
  for (;;) {
    while (*s == ' ' || *s == '\t')
      s++;
    if (!*s)
      break;
    const char *e = s;
    while (*e && *e != ' ' && *e != '\t')
      e++;
    char w[WORD_MAX];
    size_t n = (size_t)(e - s);
    if (n >= sizeof(w)) {
      snprintf(err, errlen, "\"%.40s...\": longer than %d bytes", s,
               WORD_MAX - 1);
      return -1;
    }
    memcpy(w, s, n);
    w[n] = '\0';
    if (fn(arg, w) != 0)
      return -1;
    words++;
    s = e;
  }
  if (!words) {
    snprintf(err, errlen, "empty: name at least one");
    return -1;
  }
  return 0;
}

typedef struct plist_ctx {
  jrpcd_plist_t *l;
  int any_ok;
  char *err;
  size_t errlen;
} plist_ctx_t;

static int plist_add(void *arg, const char *word) {
  plist_ctx_t *x = arg;
  jrpcd_plist_t *l = x->l;
  jrpcd_principal_t p;
  if (jrpcd_principal_parse(word, x->any_ok, &p, x->err, x->errlen) != 0)
    return -1;
  jrpcd_principal_t *v = realloc(l->v, (l->n + 1) * sizeof(*v));
  if (!v) {
    jrpcd_principal_free(&p);
    snprintf(x->err, x->errlen, "out of memory");
    return -1;
  }
  v[l->n++] = p;
  l->v = v;
  return 0;
}

int jrpcd_plist_parse(const char *text, int any_ok, jrpcd_plist_t *l, char *err,
                      size_t errlen) {
  l->v = NULL;
  l->n = 0;
  plist_ctx_t x = {l, any_ok, err, errlen};
  if (each_word(text, plist_add, &x, err, errlen) != 0) {
    jrpcd_plist_free(l);
    return -1;
  }
  return 0;
}

void jrpcd_plist_free(jrpcd_plist_t *l) {
  for (size_t i = 0; i < l->n; i++)
    jrpcd_principal_free(&l->v[i]);
  free(l->v);
  l->v = NULL;
  l->n = 0;
}

int jrpcd_plist_match(const jrpcd_plist_t *l, const jrpcd_identity_t *id) {
  for (size_t i = 0; i < l->n; i++)
    if (jrpcd_principal_match(&l->v[i], id))
      return 1;
  return 0;
}

int jrpcd_glob_match(const char *glob, const char *name, size_t n) {
  char buf[WORD_MAX];
  if (n >= sizeof(buf))
    return 0; /* no method name is that long (registry.h) */
  memcpy(buf, name, n);
  buf[n] = '\0';
  /* No FNM_PATHNAME or FNM_PERIOD: '*' crosses the dots of "math.add". */
  return fnmatch(glob, buf, 0) == 0;
}

typedef struct globs_ctx {
  jrpcd_globs_t *g;
  char *err;
  size_t errlen;
} globs_ctx_t;

static int globs_add(void *arg, const char *word) {
  globs_ctx_t *x = arg;
  jrpcd_globs_t *g = x->g;
  char *w = strdup(word);
  char **v = w ? realloc(g->v, (g->n + 1) * sizeof(*v)) : NULL;
  if (!v) {
    free(w);
    snprintf(x->err, x->errlen, "out of memory");
    return -1;
  }
  v[g->n++] = w;
  g->v = v;
  return 0;
}

int jrpcd_globs_parse(const char *text, jrpcd_globs_t *g, char *err,
                      size_t errlen) {
  g->v = NULL;
  g->n = 0;
  globs_ctx_t x = {g, err, errlen};
  if (each_word(text, globs_add, &x, err, errlen) != 0) {
    jrpcd_globs_free(g);
    return -1;
  }
  return 0;
}

void jrpcd_globs_free(jrpcd_globs_t *g) {
  for (size_t i = 0; i < g->n; i++)
    free(g->v[i]);
  free(g->v);
  g->v = NULL;
  g->n = 0;
}

int jrpcd_globs_match(const jrpcd_globs_t *g, const char *name, size_t n) {
  for (size_t i = 0; i < g->n; i++)
    if (jrpcd_glob_match(g->v[i], name, n))
      return 1;
  return 0;
}

int jrpcd_policy_init(jrpcd_policy_t *pol, const char *listener,
                      char *const *peers, char *const *methods, char *err,
                      size_t errlen) {
  memset(pol, 0, sizeof(*pol));
  pol->listener = strdup(listener);
  if (!pol->listener) {
    snprintf(err, errlen, "out of memory");
    return -1;
  }
  for (char *const *w = peers; w && *w; w++) {
    plist_ctx_t x = {&pol->peers, 0, err, errlen};
    if (plist_add(&x, *w) != 0) {
      jrpcd_policy_free(pol);
      return -1;
    }
    if (pol->peers.v[pol->peers.n - 1].kind == JRPCD_PRIN_GID)
      pol->want_groups = 1;
  }
  for (char *const *w = methods; w && *w; w++) {
    globs_ctx_t x = {&pol->methods, err, errlen};
    if (globs_add(&x, *w) != 0) {
      jrpcd_policy_free(pol);
      return -1;
    }
  }
  return 0;
}

void jrpcd_policy_free(jrpcd_policy_t *pol) {
  free(pol->listener);
  pol->listener = NULL;
  jrpcd_plist_free(&pol->peers);
  jrpcd_globs_free(&pol->methods);
}

int jrpcd_access_add(jrpcd_access_t *a, const char *glob, const char *who,
                     int line, char *err, size_t errlen) {
  if (!*glob || strlen(glob) >= WORD_MAX) {
    snprintf(err, errlen, "\"%s\": a method glob of 1 to %d bytes", glob,
             WORD_MAX - 1);
    return -1;
  }
  jrpcd_rule_t r = {.line = line};
  if (jrpcd_plist_parse(who, 1, &r.who, err, errlen) != 0)
    return -1;
  r.glob = strdup(glob);
  jrpcd_rule_t *v = r.glob ? realloc(a->rules, (a->n + 1) * sizeof(*v)) : NULL;
  if (!v) {
    free(r.glob);
    jrpcd_plist_free(&r.who);
    snprintf(err, errlen, "out of memory");
    return -1;
  }
  v[a->n++] = r;
  a->rules = v;
  return 0;
}

void jrpcd_access_free(jrpcd_access_t *a) {
  for (size_t i = 0; i < a->n; i++) {
    free(a->rules[i].glob);
    jrpcd_plist_free(&a->rules[i].who);
  }
  free(a->rules);
  a->rules = NULL;
  a->n = 0;
  a->default_deny = 0;
}

int jrpcd_access_allows(const jrpcd_access_t *a, const char *method, size_t n,
                        const jrpcd_identity_t *id) {
  for (size_t i = 0; i < a->n; i++)
    if (jrpcd_glob_match(a->rules[i].glob, method, n))
      return jrpcd_plist_match(&a->rules[i].who, id);
  return !a->default_deny;
}

int jrpcd_access_copy(jrpcd_access_t *dst, const jrpcd_access_t *src) {
  memset(dst, 0, sizeof(*dst));
  dst->default_deny = src->default_deny;
  if (!src->n)
    return 0;
  dst->rules = calloc(src->n, sizeof(*dst->rules));
  if (!dst->rules)
    return -1;
  for (size_t i = 0; i < src->n; i++) {
    const jrpcd_rule_t *r = &src->rules[i];
    jrpcd_rule_t *d = &dst->rules[dst->n++];
    d->line = r->line;
    d->glob = strdup(r->glob);
    d->who.v = calloc(r->who.n ? r->who.n : 1, sizeof(*d->who.v));
    if (!d->glob || !d->who.v) {
      jrpcd_access_free(dst);
      return -1;
    }
    for (size_t k = 0; k < r->who.n; k++) {
      jrpcd_principal_t p = r->who.v[k];
      if (p.name && !(p.name = strdup(p.name))) {
        jrpcd_access_free(dst);
        return -1;
      }
      d->who.v[d->who.n++] = p;
    }
  }
  return 0;
}
