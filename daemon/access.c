/* access.c - principals, method globs and the [access] rules; see
 * access.h. */
#include "access.h"

#include <arpa/inet.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>

#include "userdb.h"

/* The longest principal word (a glob has no limit of its own). */
#define PRINCIPAL_MAX 256

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

/* A user's or group's id by name, as userdb.h answers. */
static int resolve_name(jrpcd_prin_kind_t kind, const char *name,
                        uint32_t *id) {
  if (kind != JRPCD_PRIN_UID)
    return jrpcd_group_by_name(name, id);
  jrpcd_user_t u;
  int rc = jrpcd_user_by_name(name, &u);
  if (rc == 0)
    *id = u.uid;
  return rc;
}

/* ::ffff:a.b.c.d: how an IPv6 socket shows an IPv4 peer. */
static const uint8_t v4mapped[12] = {0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xFF, 0xFF};

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
  /* Peers at ::ffff:a.b.c.d are matched as the IPv4 peers they are
   * (jrpcd_identity_set_addr), so such a principal is taken as the IPv4
   * range it stands for: ::ffff:10.0.0.0/104 is 10.0.0.0/8. A shorter
   * IPv6 prefix (::/0) names IPv6 peers only. */
  if (p->family == AF_INET6 && p->prefix >= 96 &&
      memcmp(p->addr, v4mapped, sizeof(v4mapped)) == 0) {
    memmove(p->addr, p->addr + 12, 4);
    memset(p->addr + 4, 0, 12);
    p->family = AF_INET;
    p->prefix -= 96;
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
    int rc = tags[i].by_name ? resolve_name(p->kind, v, &p->id)
                             : parse_id(v, &p->id);
    if (rc != 0) {
      if (tags[i].by_name && rc > 0)
        snprintf(err, errlen, "\"%s\": cannot be looked up: %s", word,
                 strerror(rc));
      else if (tags[i].by_name)
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
 * copies), words of max bytes or more refused (max 0: any length); stops
 * at the first non-zero return. */
/* One word of a list: 0, or -1 with the reason in err. */
typedef int (*word_fn)(void *arg, const char *word, char *err, size_t errlen);

static int each_word(const char *text, size_t max, word_fn fn, void *arg,
                     char *err, size_t errlen) {
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
    size_t n = (size_t)(e - s);
    if (max && n >= max) {
      snprintf(err, errlen, "\"%.40s...\": longer than %zu bytes", s, max - 1);
      return -1;
    }
    char *w = strndup(s, n);
    if (!w) {
      snprintf(err, errlen, "out of memory");
      return -1;
    }
    int rc = fn(arg, w, err, errlen);
    free(w);
    if (rc != 0)
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

/* The array v of n elements of size bytes with room for one more, or NULL
 * (v unchanged) with the reason in err. */
static void *room_for_one(void *v, size_t n, size_t size, char *err,
                          size_t errlen) {
  void *grown = realloc(v, (n + 1) * size);
  if (!grown)
    snprintf(err, errlen, "out of memory");
  return grown;
}

typedef struct plist_ctx {
  jrpcd_plist_t *l;
  int any_ok;
} plist_ctx_t;

static int plist_add(void *arg, const char *word, char *err, size_t errlen) {
  plist_ctx_t *x = arg;
  jrpcd_plist_t *l = x->l;
  jrpcd_principal_t p;
  if (jrpcd_principal_parse(word, x->any_ok, &p, err, errlen) != 0)
    return -1;
  jrpcd_principal_t *v = room_for_one(l->v, l->n, sizeof(*v), err, errlen);
  if (!v) {
    jrpcd_principal_free(&p);
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
  plist_ctx_t x = {l, any_ok};
  if (each_word(text, PRINCIPAL_MAX, plist_add, &x, err, errlen) != 0) {
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

/* Method globs. The matcher is our own rather than fnmatch(3): fnmatch
 * takes a NUL-terminated copy (so a name had to fit a buffer, and a longer
 * one matched nothing, which let `admin.` + 300 bytes past `admin.* =
 * uid:0`), and it promises nothing of its run time on globs with many
 * stars ("*a*a*a...b"). Here a name of
 * any length is matched in place, in at most (name bytes + 1) x (glob
 * bytes + 1) steps: on a mismatch only the last '*' seen takes one more
 * byte, which is enough for globs, since what precedes that star is matched
 * already and any longer run an earlier star could take, the last one can
 * take as well.
 *
 * Syntax: '*' any run of bytes (dots included), '?' one byte, '[...]' one
 * byte of a set ("[!...]" or "[^...]" one byte outside it; a ']' first in
 * it, or a '-' first or last, stands for itself; "a-z" a range in byte
 * order), '\x' the byte x itself; every other byte itself. */

enum glob_tok { TOK_BYTE, TOK_ANY, TOK_STAR, TOK_SET };

/* The glob token at g: its kind, its length in glob bytes, and for TOK_BYTE
 * the byte. -1 (err filled when given) when g is not a valid token. */
static int glob_token(const char *g, enum glob_tok *kind, unsigned char *byte,
                      char *err, size_t errlen) {
  switch (*g) {
  case '*':
    *kind = TOK_STAR;
    return 1;
  case '?':
    *kind = TOK_ANY;
    return 1;
  case '\\':
    if (!g[1]) {
      if (err)
        snprintf(err, errlen,
                 "a '\\' at the end escapes nothing (\\\\ "
                 "stands for a backslash)");
      return -1;
    }
    *kind = TOK_BYTE;
    *byte = (unsigned char)g[1];
    return 2;
  case '[':
    break;
  default:
    *kind = TOK_BYTE;
    *byte = (unsigned char)*g;
    return 1;
  }
  *kind = TOK_SET;
  const char *s = g + 1;
  if (*s == '!' || *s == '^')
    s++;
  const char *first = s;
  for (;;) {
    if (!*s) {
      if (err)
        snprintf(err, errlen,
                 "an unclosed '[' (a set ends with ']'; \\[ "
                 "stands for a '[')");
      return -1;
    }
    if (*s == ']' && s > first)
      return (int)(s + 1 - g);
    if (*s == '[' && (s[1] == ':' || s[1] == '.' || s[1] == '=')) {
      if (err)
        snprintf(err, errlen,
                 "\"[%c\" in a set: named classes such as [:alpha:] are not "
                 "supported (list the bytes, or a range)",
                 s[1]);
      return -1;
    }
    if (*s == '\\' && !*++s)
      continue; /* unclosed, said above */
    unsigned char lo = (unsigned char)*s++;
    if (*s == '-' && s[1] && s[1] != ']') {
      if (*++s == '\\' && !*++s)
        continue;
      unsigned char hi = (unsigned char)*s++;
      if (hi < lo) {
        if (err)
          snprintf(err, errlen, "the range \"%c-%c\" is backwards", lo, hi);
        return -1;
      }
    }
  }
}

/* Whether byte c is in the set "[...]" at g (found well formed by
 * glob_token: the same walk without the checks). */
static int set_has(const char *g, unsigned char c) {
  const char *s = g + 1;
  int negate = *s == '!' || *s == '^';
  if (negate)
    s++;
  const char *first = s;
  int in = 0;
  while (!(*s == ']' && s > first)) {
    if (*s == '\\')
      s++;
    unsigned char lo = (unsigned char)*s++, hi = lo;
    if (*s == '-' && s[1] && s[1] != ']') {
      if (*++s == '\\')
        s++;
      hi = (unsigned char)*s++;
    }
    if (c >= lo && c <= hi)
      in = 1;
  }
  return in != negate;
}

int jrpcd_glob_check(const char *glob, char *err, size_t errlen) {
  if (!*glob) {
    snprintf(err, errlen, "an empty glob");
    return -1;
  }
  for (const char *g = glob; *g;) {
    enum glob_tok kind;
    unsigned char byte;
    char why[160];
    int len = glob_token(g, &kind, &byte, why, sizeof(why));
    if (len < 0) {
      snprintf(err, errlen, "\"%s\": %s", glob, why);
      return -1;
    }
    g += len;
  }
  return 0;
}

int jrpcd_glob_match(const char *glob, const char *name, size_t n) {
  const char *g = glob, *star = NULL; /* the glob just past the last '*' */
  size_t i = 0, star_i = 0; /* the name bytes that star has taken up to */
  if (!*glob)
    return -1; /* as jrpcd_glob_check says: not a glob */
  for (;;) {
    if (*g == '*') {
      while (*g == '*')
        g++;
      if (!*g)
        return 1; /* a trailing star takes the rest */
      star = g;
      star_i = i;
      continue;
    }
    if (!*g && i == n)
      return 1;
    if (*g && i < n) {
      enum glob_tok kind;
      unsigned char byte;
      int len = glob_token(g, &kind, &byte, NULL, 0);
      if (len < 0)
        return -1; /* not a glob: the caller denies */
      unsigned char c = (unsigned char)name[i];
      if (kind == TOK_ANY || (kind == TOK_BYTE && byte == c) ||
          (kind == TOK_SET && set_has(g, c))) {
        g += len;
        i++;
        continue;
      }
    }
    if (!star || star_i >= n)
      return 0;
    g = star;
    i = ++star_i;
  }
}

/* The literal bytes glob stands for when it has no '*', '?' or set, into
 * out (NUL-terminated); 0, or -1 when it has one or is longer than cap - 1. */
static int glob_literal(const char *glob, char *out, size_t cap) {
  size_t k = 0;
  for (const char *g = glob; *g;) {
    enum glob_tok kind;
    unsigned char byte;
    int len = glob_token(g, &kind, &byte, NULL, 0);
    if (len < 0 || kind != TOK_BYTE || k + 1 >= cap)
      return -1;
    out[k++] = (char)byte;
    g += len;
  }
  out[k] = '\0';
  return 0;
}

/* Only when sure: 1 if every name `later` matches, `earlier` matches too.
 * Sure cases: earlier is all stars; the two are the same; later stands for
 * one name only and earlier matches it; or earlier is a literal prefix
 * then only stars ("a.*") and later starts with that literal ("a.b*"). */
int jrpcd_glob_covers(const char *earlier, const char *later) {
  if (strcmp(earlier, later) == 0)
    return 1;
  char lit[1024];
  if (glob_literal(later, lit, sizeof(lit)) == 0)
    return jrpcd_glob_match(earlier, lit, strlen(lit)) == 1;
  const char *e = earlier, *l = later;
  for (;;) {
    if (*e == '*') {
      while (*e == '*')
        e++;
      return !*e; /* earlier's literal prefix, then stars only */
    }
    if (!*e || !*l)
      return 0;
    enum glob_tok ek, lk;
    unsigned char eb, lb;
    int elen = glob_token(e, &ek, &eb, NULL, 0);
    int llen = glob_token(l, &lk, &lb, NULL, 0);
    if (elen < 0 || llen < 0 || ek != TOK_BYTE || lk != TOK_BYTE || eb != lb)
      return 0;
    e += elen;
    l += llen;
  }
}

static int globs_add(void *arg, const char *word, char *err, size_t errlen) {
  jrpcd_globs_t *g = arg;
  if (jrpcd_glob_check(word, err, errlen) != 0)
    return -1;
  char **v = room_for_one(g->v, g->n, sizeof(*v), err, errlen);
  if (!v)
    return -1;
  g->v = v; /* the count says what is in it */
  if (!(v[g->n] = strdup(word))) {
    snprintf(err, errlen, "out of memory");
    return -1;
  }
  g->n++;
  return 0;
}

int jrpcd_globs_parse(const char *text, jrpcd_globs_t *g, char *err,
                      size_t errlen) {
  g->v = NULL;
  g->n = 0;
  if (each_word(text, 0, globs_add, g, err, errlen) != 0) {
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
    if (jrpcd_glob_match(g->v[i], name, n) == 1) /* -1: not served */
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
    plist_ctx_t x = {&pol->peers, 0};
    if (plist_add(&x, *w, err, errlen) != 0) {
      jrpcd_policy_free(pol);
      return -1;
    }
    if (pol->peers.v[pol->peers.n - 1].kind == JRPCD_PRIN_GID)
      pol->want_groups = 1;
  }
  for (char *const *w = methods; w && *w; w++) {
    if (globs_add(&pol->methods, *w, err, errlen) != 0) {
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
  if (jrpcd_glob_check(glob, err, errlen) != 0)
    return -1;
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

int jrpcd_access_shadowed(const jrpcd_access_t *a, size_t j, char *out,
                          size_t outlen) {
  for (size_t i = 0; i < j && j < a->n; i++)
    if (jrpcd_glob_covers(a->rules[i].glob, a->rules[j].glob)) {
      snprintf(out, outlen,
               "[access] %s: never decides: every method it matches, "
               "\"%s\" at line %d matches first",
               a->rules[j].glob, a->rules[i].glob, a->rules[i].line);
      return 1;
    }
  return 0;
}

int jrpcd_access_allows(const jrpcd_access_t *a, const char *method, size_t n,
                        const jrpcd_identity_t *id) {
  for (size_t i = 0; i < a->n; i++) {
    int m = jrpcd_glob_match(a->rules[i].glob, method, n);
    if (m < 0)
      return 0; /* a glob that cannot be read decides nothing but no */
    if (m)
      return jrpcd_plist_match(&a->rules[i].who, id);
  }
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
