/* config.c - reads jrpcd.conf (see conf/jrpcd.conf for the format).
 *
 * Debian's inih calls the key handler without a line number (it is built
 * without INI_HANDLER_LINENO, and that changes the handler's ABI, so it
 * cannot be switched on here) and says nothing when a section starts. Both
 * are needed: every message names a line, and an empty [listen x] must still
 * be seen to be empty. So the text reaches inih through our own line reader
 * (ini_parse_stream). inih handles each line before it asks for the next, so
 * when the handler runs, the reader's count is the handler's line; and the
 * reader sees the section headers go by and opens the sections itself.
 *
 * The reader also drops each line's indentation: inih takes an indented line
 * after a key as a continuation of that key's value, which would turn an
 * indented "mode = 0600" silently into part of the line above.
 *
 * What each key takes, its default and its field are config_keys.c's
 * table; this file reads the lines and sections and applies the table. */
#include "config.h"

#include <ctype.h>
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <ini.h>

#include "access.h"
#include "config_keys.h"

/* A config file is a few kilobytes; a bigger one is a mistaken -c. */
#define MAX_FILE_BYTES (1u << 20)
/* For the defaults that hold whatever a listener's kind. */
#define NO_KIND ((jrpcd_listen_kind_t)JRPCD_LISTEN_KINDS)

enum section_kind {
  SEC_NONE,
  SEC_SERVER,
  SEC_LISTEN,
  SEC_PLUGIN,
  SEC_ACCESS,
  SEC_CLUSTER
};

typedef struct parse {
  jrpcd_config_t *c;
  const char *name; /* the file, for messages */
  const char *text;
  size_t len, pos;
  size_t start; /* past a byte order mark */
  int line;     /* lines handed to inih so far */

  int failed;
  int err_line; /* line of the error in err; 0 for whole-file errors */
  char *err;
  size_t errlen;

  enum section_kind sec;
  char label[256];  /* "[listen tcp]": the section, for messages */
  int server_line;  /* header of [server], 0 = not seen */
  int access_line;  /* header of [access], 0 = not seen */
  int cluster_line; /* header of [cluster], 0 = not seen */
  int default_line; /* its default key, 0 = not seen */
  int *seen;        /* per row of jrpcd_keys: its line in this section */
  int *path_lines;  /* per plugin: line of its path key */
} parse_t;

static void vfail(parse_t *p, int line, int with_label, const char *key,
                  const char *fmt, va_list ap) {
  if (p->failed)
    return;
  p->failed = 1;
  p->err_line = line;
  if (!p->err || !p->errlen)
    return;
  size_t off = 0;
  int n = line > 0 ? snprintf(p->err, p->errlen, "%s:%d: ", p->name, line)
                   : snprintf(p->err, p->errlen, "%s: ", p->name);
  if (n > 0)
    off += (size_t)n;
  if (off < p->errlen && with_label && p->label[0]) {
    n = snprintf(p->err + off, p->errlen - off, "%s%s", p->label,
                 key ? " " : ": ");
    if (n > 0)
      off += (size_t)n;
  }
  if (off < p->errlen && key) {
    n = snprintf(p->err + off, p->errlen - off, "%s: ", key);
    if (n > 0)
      off += (size_t)n;
  }
  if (off < p->errlen)
    vsnprintf(p->err + off, p->errlen - off, fmt, ap);
}

/* "FILE:LINE: [section] key: why"; key may be NULL for the whole section. */
__attribute__((format(printf, 4, 5))) static void
fail_key(parse_t *p, int line, const char *key, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  vfail(p, line, 1, key, fmt, ap);
  va_end(ap);
}

/* "FILE:LINE: why", or "FILE: why" with line 0. */
__attribute__((format(printf, 3, 4))) static void
fail_line(parse_t *p, int line, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  vfail(p, line, 0, NULL, fmt, ap);
  va_end(ap);
}

static void out_of_memory(parse_t *p) {
  fail_line(p, 0, "out of memory");
}

static char *copy_n(parse_t *p, const char *s, size_t n) {
  char *d = strndup(s, n);
  if (!d)
    out_of_memory(p);
  return d;
}

static char *copy(parse_t *p, const char *s) {
  return copy_n(p, s, strlen(s));
}

/* ------------------------------------------------------------------ */
/* Keys                                                                */
/* ------------------------------------------------------------------ */

static jrpcd_section_t table_section(enum section_kind sec) {
  return sec == SEC_SERVER    ? JRPCD_SEC_SERVER
         : sec == SEC_LISTEN  ? JRPCD_SEC_LISTEN
         : sec == SEC_CLUSTER ? JRPCD_SEC_CLUSTER
                              : JRPCD_SEC_PLUGIN;
}

/* The struct the current section's keys go to. */
static void *section_base(parse_t *p) {
  jrpcd_config_t *c = p->c;
  switch (p->sec) {
  case SEC_SERVER:
  case SEC_CLUSTER:
    return c;
  case SEC_LISTEN:
    return &c->listens[c->nlistens - 1];
  case SEC_PLUGIN:
    return &c->plugins[c->nplugins - 1];
  case SEC_ACCESS: /* its keys are rules, read by access_key */
  case SEC_NONE:
    break;
  }
  return NULL;
}

static int seen_line(const parse_t *p, const jrpcd_key_t *k) {
  return p->seen[k - jrpcd_keys];
}

/* Keys of section s that have a default for a listener of this kind:
 * all of them (every_key), or only those whose default depends on the kind
 * and that the section did not set. */
static int apply_defaults(parse_t *p, jrpcd_section_t s, void *base,
                          jrpcd_listen_kind_t kind, int every_key) {
  for (size_t i = 0; i < jrpcd_nkeys; i++) {
    const jrpcd_key_t *k = &jrpcd_keys[i];
    const char *def = jrpcd_key_default(k, kind);
    if (k->section != s || !def)
      continue;
    if (!every_key && (p->seen[i] || def == k->def))
      continue;
    char why[512];
    int rc = jrpcd_key_parse(k, def, base, why, sizeof why);
    if (rc == -2) {
      out_of_memory(p);
      return -1;
    }
    if (rc) { /* a bug of the table, which test_config_keys looks for */
      fail_line(p, 0, "[%s] %s: the built-in default \"%s\": %s",
                jrpcd_section_name(s), k->name, def, why);
      return -1;
    }
  }
  return 0;
}

/* A key of [server] or [listen NAME], or [plugin NAME]'s path. */
static int table_key(parse_t *p, const jrpcd_key_t *k, const char *value) {
  size_t i = (size_t)(k - jrpcd_keys);
  if (p->seen[i]) {
    fail_key(p, p->line, k->name, "set twice (first at line %d)", p->seen[i]);
    return -1;
  }
  p->seen[i] = p->line;
  char why[512];
  int rc = jrpcd_key_parse(k, value, section_base(p), why, sizeof why);
  if (rc == -2)
    out_of_memory(p);
  else if (rc)
    fail_key(p, p->line, k->name, "%s", why);
  return rc ? -1 : 0;
}

static int unknown_key(parse_t *p, const char *key) {
  char known[1024];
  jrpcd_key_names(table_section(p->sec), known, sizeof known);
  const jrpcd_key_t *near = jrpcd_key_nearest(table_section(p->sec), key);
  if (near)
    fail_key(p, p->line, key, "unknown key; did you mean %s? (%s)", near->name,
             known);
  else
    fail_key(p, p->line, key, "unknown key (%s)", known);
  return -1;
}

static int plugin_key(parse_t *p, const char *key, const char *value) {
  const jrpcd_key_t *own = jrpcd_key_find(JRPCD_SEC_PLUGIN, key);
  if (own)
    return table_key(p, own, value);
  jrpcd_plugin_conf_t *pl = &p->c->plugins[p->c->nplugins - 1];
  if (!*key) {
    fail_key(p, p->line, "(empty)", "a key needs a name");
    return -1;
  }
  for (size_t i = 0; i < pl->nkv; i++)
    if (strcmp(pl->kv[2 * i], key) == 0) {
      fail_key(p, p->line, key, "set twice (first at line %d)",
               pl->kv_lines[i]);
      return -1;
    }

  int *lines = realloc(pl->kv_lines, (pl->nkv + 1) * sizeof *lines);
  if (!lines)
    goto oom;
  pl->kv_lines = lines;
  char **kv = realloc(pl->kv, (2 * pl->nkv + 3) * sizeof *kv);
  if (!kv)
    goto oom;
  pl->kv = kv;
  kv[2 * pl->nkv] = NULL; /* stays NULL-terminated if a copy fails */
  char *k = strdup(key), *v = strdup(value);
  if (!k || !v) {
    free(k);
    free(v);
    goto oom;
  }
  kv[2 * pl->nkv] = k;
  kv[2 * pl->nkv + 1] = v;
  kv[2 * pl->nkv + 2] = NULL;
  lines[pl->nkv] = p->line;
  pl->nkv++;
  return 0;
oom:
  out_of_memory(p);
  return -1;
}

/* [access]: "GLOB = PRINCIPAL..." in the order they decide, and
 * "default = allow|deny". */
static int access_key(parse_t *p, const char *key, const char *value) {
  jrpcd_access_t *a = &p->c->access;
  if (strcmp(key, "default") == 0) {
    if (p->default_line) {
      fail_key(p, p->line, key, "set twice (first at line %d)",
               p->default_line);
      return -1;
    }
    p->default_line = p->line;
    if (strcasecmp(value, "allow") == 0 || strcasecmp(value, "deny") == 0) {
      a->default_deny = strcasecmp(value, "deny") == 0;
      return 0;
    }
    fail_key(p, p->line, key, "\"%s\" is not allow or deny", value);
    return -1;
  }
  for (size_t i = 0; i < a->n; i++)
    if (strcmp(a->rules[i].glob, key) == 0) {
      fail_key(p, p->line, key,
               "a rule for these methods is at line %d already (the first "
               "rule whose glob matches decides)",
               a->rules[i].line);
      return -1;
    }
  char why[512];
  if (jrpcd_access_add(a, key, value, p->line, why, sizeof why) != 0) {
    fail_key(p, p->line, key, "%s", why);
    return -1;
  }
  return 0;
}

/* A value in quotes keeps them (inih strips none), so a quoted path or
 * word would silently name something else: refused, with the form meant.
 * A plugin's own keys are the plugin's to read, quotes and all. */
static int quoted(parse_t *p, const char *key, const char *value) {
  size_t n = strlen(value);
  if (n < 2 || (value[0] != '"' && value[0] != '\'') ||
      value[n - 1] != value[0])
    return 0;
  fail_key(p, p->line, key,
           "%s is quoted, and quotes would be part of the value: write "
           "%s = %.*s",
           value, key, (int)(n - 2), value + 1);
  return 1;
}

static int on_key(void *user, const char *section, const char *key,
                  const char *value) {
  (void)section; /* ours is more exact: inih cuts names at 50 bytes */
  parse_t *p = user;
  if (p->failed)
    return 0;
  int rc = -1;
  if ((p->sec != SEC_PLUGIN || jrpcd_key_find(JRPCD_SEC_PLUGIN, key)) &&
      quoted(p, key, value))
    return 0;
  switch (p->sec) {
  case SEC_NONE:
    fail_line(p, p->line,
              "%s: outside any section (keys go under [server], "
              "[listen NAME], [plugin NAME], [access] or [cluster])",
              key);
    break;
  case SEC_SERVER:
  case SEC_LISTEN:
  case SEC_CLUSTER: {
    const jrpcd_key_t *k = jrpcd_key_find(table_section(p->sec), key);
    rc = k ? table_key(p, k, value) : unknown_key(p, key);
    break;
  }
  case SEC_PLUGIN:
    rc = plugin_key(p, key, value);
    break;
  case SEC_ACCESS:
    rc = access_key(p, key, value);
    break;
  }
  return rc == 0;
}

/* ------------------------------------------------------------------ */
/* Sections                                                            */
/* ------------------------------------------------------------------ */

/* The kinds of a key's mask, for messages: "unix sockets". */
static void kind_list(unsigned kinds, char *out, size_t cap) {
  size_t off = 0;
  out[0] = '\0';
  for (int k = 0; k < JRPCD_LISTEN_KINDS && off < cap; k++)
    if (kinds & JRPCD_KIND_BIT(k)) {
      int w = snprintf(out + off, cap - off, "%s%s", off ? " or " : "",
                       jrpcd_kind_plurals[k]);
      if (w > 0)
        off += (size_t)w;
    }
}

/* Every principal of `peers` must be one this listener can tell: uids and
 * groups come with Unix peers, addresses with TCP ones, certificate names
 * only with TLS. */
static void check_peers(parse_t *p, const jrpcd_listen_conf_t *l) {
  for (char **w = l->peers; w && *w; w++) {
    jrpcd_principal_t pr;
    char why[256];
    const char *bad = NULL;
    if (jrpcd_principal_parse(*w, 0, &pr, why, sizeof why) != 0)
      bad = why; /* a name that no longer resolves, say */
    else if (pr.kind == JRPCD_PRIN_NET && l->kind != JRPCD_LISTEN_TCP)
      bad = "an address names a TCP peer; this is a unix listener";
    else if ((pr.kind == JRPCD_PRIN_UID || pr.kind == JRPCD_PRIN_GID) &&
             l->kind != JRPCD_LISTEN_UNIX)
      bad = "a uid or group names a Unix peer; this is a tcp listener";
    else if ((pr.kind == JRPCD_PRIN_CERT || pr.kind == JRPCD_PRIN_SAN) &&
             !l->tls_cert)
      bad = "a certificate name needs a TLS listener (tls_cert)";
    else if (pr.kind == JRPCD_PRIN_TOKEN)
      bad = "peers are let in at connect, before any token is sent: name "
            "token: principals in [access]";
    jrpcd_principal_free(&pr);
    if (bad) {
      const jrpcd_key_t *k = jrpcd_key_find(JRPCD_SEC_LISTEN, "peers");
      fail_key(p, seen_line(p, k), "peers", "\"%s\": %s", *w, bad);
      return;
    }
  }
}

/* The tls_ keys: only in a build with TLS; tls_cert and tls_key come
 * together, and the others need them. Whether the files load is found out
 * when the plugin generation loads (and again on every SIGHUP). */
static int check_tls(parse_t *p, const jrpcd_listen_conf_t *l) {
  const jrpcd_key_t *first = NULL;
  for (size_t i = 0; i < jrpcd_nkeys; i++) {
    const jrpcd_key_t *k = &jrpcd_keys[i];
    if (k->section == JRPCD_SEC_LISTEN && p->seen[i] &&
        strncmp(k->name, "tls_", 4) == 0 &&
        (!first || p->seen[i] < seen_line(p, first)))
      first = k;
  }
  if (!first)
    return 0;
#ifndef JRPC_HAVE_TLS
  fail_key(p, seen_line(p, first), first->name,
           "needs a build with TLS (-DJRPC_TLS=ON)");
  return -1;
#else
  const char *missing = !l->tls_cert  ? "tls_cert"
                        : !l->tls_key ? "tls_key"
                                      : NULL;
  if (!missing)
    return 0;
  fail_key(p, seen_line(p, first), first->name,
           "TLS needs both tls_cert and tls_key (%s is not set)", missing);
  return -1;
#endif
}

/* tokens_file is read for HTTP requests' Authorization header, and
 * /health and /metrics are HTTP paths: other framings have neither, so
 * these keys would do nothing there. health and metrics default on, so
 * they are errors only where the file turns them on. Whether a tokens file
 * loads is found out when the plugin generation loads (and again on every
 * SIGHUP). */
static int check_http_only(parse_t *p, const jrpcd_listen_conf_t *l) {
  if (l->framing == JRPC_FRAMING_HTTP)
    return 0;
  const jrpcd_key_t *first = NULL;
  for (size_t i = 0; i < jrpcd_nkeys; i++) {
    const jrpcd_key_t *k = &jrpcd_keys[i];
    if (k->section == JRPCD_SEC_LISTEN && k->http_only && p->seen[i] &&
        jrpcd_key_in_use(k, l) && (!first || p->seen[i] < seen_line(p, first)))
      first = k;
  }
  if (!first)
    return 0;
  fail_key(p, seen_line(p, first), first->name,
           "needs framing = http (GET /health, GET /metrics and bearer "
           "tokens are HTTP; set it off or leave it out here)");
  return -1;
}

/* A listener is of the kind of its one kind key (unix, tcp); the keys of
 * other kinds are errors, and the defaults of its kind are filled in. */
static void end_listen(parse_t *p) {
  jrpcd_listen_conf_t *l = &p->c->listens[p->c->nlistens - 1];
  const jrpcd_key_t *first = NULL, *second = NULL;
  for (size_t i = 0; i < jrpcd_nkeys; i++) {
    const jrpcd_key_t *k = &jrpcd_keys[i];
    if (k->section != JRPCD_SEC_LISTEN || !k->makes_kind || !p->seen[i])
      continue;
    if (!first || p->seen[i] < seen_line(p, first)) {
      second = first;
      first = k;
    } else if (!second || p->seen[i] < seen_line(p, second)) {
      second = k;
    }
  }
  if (!first) {
    fail_key(p, l->line, NULL,
             "no unix or tcp key (a listener needs one: unix = PATH or "
             "tcp = ADDRESS:PORT)");
    return;
  }
  if (second) {
    fail_key(p, seen_line(p, second), second->name,
             "a listener is unix or tcp, not both (%s is at line %d)",
             first->name, seen_line(p, first));
    return;
  }
  l->kind = (jrpcd_listen_kind_t)(first->makes_kind - 1);
  for (size_t i = 0; i < jrpcd_nkeys && i < JRPCD_KEY_ROWS_MAX; i++)
    if (jrpcd_keys[i].section == JRPCD_SEC_LISTEN)
      l->key_lines[i] = p->seen[i];
  if (apply_defaults(p, JRPCD_SEC_LISTEN, l, l->kind, 0) != 0)
    return;
  const jrpcd_key_t *wrong = NULL;
  for (size_t i = 0; i < jrpcd_nkeys; i++) {
    const jrpcd_key_t *k = &jrpcd_keys[i];
    if (k->section == JRPCD_SEC_LISTEN && p->seen[i] && k->kinds &&
        !(k->kinds & JRPCD_KIND_BIT(l->kind)) &&
        (!wrong || p->seen[i] < seen_line(p, wrong)))
      wrong = k;
  }
  if (wrong) {
    char kinds[128];
    kind_list(wrong->kinds, kinds, sizeof kinds);
    fail_key(p, seen_line(p, wrong), wrong->name,
             "only for %s (this listener is %s)", kinds,
             jrpcd_kind_names[l->kind]);
    return;
  }
  if (check_tls(p, l) == 0 && check_http_only(p, l) == 0)
    check_peers(p, l);
}

/* Checks that need the whole section, run when the next one starts. */
static void end_section(parse_t *p) {
  if (p->failed)
    return;
  if (p->sec == SEC_LISTEN) {
    end_listen(p);
  } else if (p->sec == SEC_PLUGIN) {
    size_t idx = p->c->nplugins - 1;
    const jrpcd_key_t *path = jrpcd_key_find(JRPCD_SEC_PLUGIN, "path");
    p->path_lines[idx] = seen_line(p, path);
    if (!p->path_lines[idx])
      fail_key(p, p->c->plugins[idx].line, "path",
               "missing (every plugin needs path = FILE.so)");
  } else if (p->sec == SEC_CLUSTER &&
             !seen_line(p, jrpcd_key_find(JRPCD_SEC_CLUSTER, "nats"))) {
    fail_key(p, p->cluster_line, "nats",
             "missing ([cluster] needs nats = nats://HOST:PORT ...)");
  }
}

static int word_is(const char *s, size_t n, const char *word) {
  return strlen(word) == n && memcmp(s, word, n) == 0;
}

static void defined_twice(parse_t *p, int first_line) {
  fail_key(p, p->line, NULL, "defined twice (first at line %d)", first_line);
}

/* [server] and [access]: once, without a name (nn is the name's length).
 * 0 once opened; -1, reported, if not. */
static int open_unnamed(parse_t *p, const char *header, size_t nn,
                        int *first_line, enum section_kind sec) {
  if (nn) {
    fail_key(p, p->line, NULL, "%s takes no name", header);
    return -1;
  }
  if (*first_line) {
    defined_twice(p, *first_line);
    return -1;
  }
  *first_line = p->line;
  p->sec = sec;
  return 0;
}

/* [listen NAME] and [plugin NAME]: 1, reported, if NAME is `used`, the
 * name of an earlier section of the kind (whose header is at `line`). */
static int named_before(parse_t *p, const char *name, size_t n,
                        const char *used, int line) {
  if (!word_is(name, n, used))
    return 0;
  defined_twice(p, line);
  return 1;
}

/* One more record, zeroed, after the n of `size` bytes in the array that
 * arrayp points to (the address of the array's pointer, of any object
 * type: it is read and written with memcpy). Returns the new record, or
 * NULL, reported, if out of memory (the array unchanged). */
static void *add_zeroed(parse_t *p, void *arrayp, size_t n, size_t size) {
  void *array;
  memcpy(&array, arrayp, sizeof array);
  char *grown = realloc(array, (n + 1) * size);
  if (!grown) {
    out_of_memory(p);
    return NULL;
  }
  memcpy(arrayp, &grown, sizeof grown);
  memset(grown + n * size, 0, size);
  return grown + n * size;
}

/* The named section's new record `rec` is in: counted, marked with its
 * header line, and given the defaults of every kind (those of its own kind
 * come with the kind's key). */
static int opened(parse_t *p, enum section_kind sec, size_t *count, int *line,
                  void *rec) {
  (*count)++;
  *line = p->line;
  p->sec = sec;
  return apply_defaults(p, table_section(sec), rec, NO_KIND, 1);
}

static int open_listen(parse_t *p, const char *name, size_t n) {
  jrpcd_config_t *c = p->c;
  for (size_t i = 0; i < c->nlistens; i++)
    if (named_before(p, name, n, c->listens[i].name, c->listens[i].line))
      return -1;
  jrpcd_listen_conf_t *l = add_zeroed(p, &c->listens, c->nlistens, sizeof *l);
  if (!l || !(l->name = copy_n(p, name, n)))
    return -1;
  return opened(p, SEC_LISTEN, &c->nlistens, &l->line, l);
}

static int open_plugin(parse_t *p, const char *name, size_t n) {
  jrpcd_config_t *c = p->c;
  for (size_t i = 0; i < c->nplugins; i++)
    if (named_before(p, name, n, c->plugins[i].name, c->plugins[i].line))
      return -1;
  /* Its path key's line, set when the section ends. */
  if (!add_zeroed(p, &p->path_lines, c->nplugins, sizeof *p->path_lines))
    return -1;
  jrpcd_plugin_conf_t *pl = add_zeroed(p, &c->plugins, c->nplugins, sizeof *pl);
  if (!pl)
    return -1;
  pl->name = strndup(name, n);
  /* Never NULL, so that the daemon can hand it to the plugin as is. */
  pl->kv = calloc(1, sizeof *pl->kv);
  if (!pl->name || !pl->kv) {
    free(pl->name);
    free(pl->kv);
    out_of_memory(p);
    return -1;
  }
  return opened(p, SEC_PLUGIN, &c->nplugins, &pl->line, pl);
}

/* [cluster]: once, without a name; its defaults as it opens. A build
 * without the NATS client refuses it rather than serve a fleet whose push
 * silently stays on each instance. */
static void open_cluster(parse_t *p, size_t nn) {
#ifdef JRPC_HAVE_NATS
  if (open_unnamed(p, "[cluster]", nn, &p->cluster_line, SEC_CLUSTER) == 0 &&
      apply_defaults(p, JRPCD_SEC_CLUSTER, p->c, NO_KIND, 1) == 0)
    p->c->has_cluster = 1;
#else
  (void)nn;
  fail_key(p, p->line, NULL,
           "this jrpcd was built without NATS (libnats-dev), so it cannot "
           "join a cluster");
#endif
}

/* The text between '[' and ']' of a header line: "listen  tcp " and the
 * like. The first word says what the section is, the rest names it. */
static void open_section(parse_t *p, const char *raw, size_t n) {
  end_section(p);
  if (p->failed)
    return;
  memset(p->seen, 0, jrpcd_nkeys * sizeof *p->seen);
  while (n && isspace((unsigned char)*raw)) {
    raw++;
    n--;
  }
  while (n && isspace((unsigned char)raw[n - 1]))
    n--;
  size_t kn = 0;
  while (kn < n && !isspace((unsigned char)raw[kn]))
    kn++;
  const char *name = raw + kn;
  size_t nn = n - kn;
  while (nn && isspace((unsigned char)*name)) {
    name++;
    nn--;
  }

  p->sec = SEC_NONE;
  if (nn)
    snprintf(p->label, sizeof p->label, "[%.*s %.*s]", (int)kn, raw, (int)nn,
             name);
  else
    snprintf(p->label, sizeof p->label, "[%.*s]", (int)kn, raw);

  if (word_is(raw, kn, "server")) {
    open_unnamed(p, "[server]", nn, &p->server_line, SEC_SERVER);
  } else if (word_is(raw, kn, "access")) {
    if (open_unnamed(p, "[access]", nn, &p->access_line, SEC_ACCESS) == 0)
      p->c->has_access = 1;
  } else if (word_is(raw, kn, "cluster")) {
    open_cluster(p, nn);
  } else if (word_is(raw, kn, "listen") || word_is(raw, kn, "plugin")) {
    if (!nn) {
      fail_key(p, p->line, NULL, "needs a name ([%.*s NAME])", (int)kn, raw);
      return;
    }
    if (word_is(raw, kn, "listen"))
      open_listen(p, name, nn);
    else
      open_plugin(p, name, nn);
  } else {
    fail_key(p, p->line, NULL,
             "unknown section ([server], [listen NAME], [plugin NAME], "
             "[access] or [cluster])");
  }
}

/* A header line as inih reads it: '[' up to the first ']', where a ';' after
 * whitespace would start a comment first (then inih reports the line). */
static void header_line(parse_t *p, const char *s, size_t n) {
  size_t i = 1;
  int was_space = 0;
  while (i < n && s[i] != ']' && !(was_space && s[i] == ';')) {
    was_space = isspace((unsigned char)s[i]);
    i++;
  }
  if (i >= n || s[i] != ']')
    return;
  size_t j = i + 1;
  while (j < n && isspace((unsigned char)s[j]))
    j++;
  if (j < n && s[j] != ';') {
    fail_line(p, p->line, "\"%.*s\": text after the section header", (int)n, s);
    return;
  }
  open_section(p, s + 1, i - 1);
}

/* inih's fgets: one line per call, without its indentation. */
static char *next_line(char *buf, int size, void *stream) {
  parse_t *p = stream;
  if (p->failed || p->pos >= p->len)
    return NULL;
  const char *s = p->text + p->pos;
  size_t rest = p->len - p->pos;
  const char *nl = memchr(s, '\n', rest);
  size_t n = nl ? (size_t)(nl - s) : rest;
  p->pos += nl ? n + 1 : n;
  p->line++;

  if (memchr(s, '\0', n)) {
    fail_line(p, p->line, "the line holds a NUL byte (not a text file?)");
    return NULL;
  }
  while (n && isspace((unsigned char)*s)) {
    s++;
    n--;
  }
  while (n && isspace((unsigned char)s[n - 1]))
    n--;
  /* inih would cut a longer line in two and read the tail as a line. */
  if (size < 1 || n > (size_t)size - 1) {
    fail_line(p, p->line, "line is too long (at most %d bytes)", size - 1);
    return NULL;
  }
  if (n && s[0] == '[') {
    header_line(p, s, n);
    if (p->failed)
      return NULL;
  }
  memcpy(buf, s, n);
  buf[n] = '\0';
  return buf;
}

/* inih found a line it cannot read (it only says which). */
static void syntax_error(parse_t *p, int line) {
  const char *s = p->text + p->start, *end = p->text + p->len;
  for (int l = 1; l < line && s < end; l++) {
    const char *nl = memchr(s, '\n', (size_t)(end - s));
    s = nl ? nl + 1 : end;
  }
  const char *e = memchr(s, '\n', (size_t)(end - s));
  if (!e)
    e = end;
  while (s < e && isspace((unsigned char)*s))
    s++;
  while (e > s && isspace((unsigned char)e[-1]))
    e--;
  int n = (int)(e - s);
  p->failed = 0;
  if (n && s[0] == '[')
    fail_line(p, line,
              "\"%.*s\": not a section header ([NAME], closed on the same "
              "line before any ';' comment)",
              n, s);
  else
    fail_line(p, line, "\"%.*s\": not a key = value line", n, s);
}

/* ------------------------------------------------------------------ */
/* After the whole file                                                */
/* ------------------------------------------------------------------ */

static char *join_path(const char *dir, const char *file) {
  size_t dn = strlen(dir), fn = strlen(file);
  int slash = dn && dir[dn - 1] != '/';
  char *out = malloc(dn + (size_t)slash + fn + 1);
  if (!out)
    return NULL;
  memcpy(out, dir, dn);
  if (slash)
    out[dn] = '/';
  memcpy(out + dn + (size_t)slash, file, fn + 1);
  return out;
}

static void finish(parse_t *p) {
  jrpcd_config_t *c = p->c;
  if (c->workers == 0) {
    long cpus = sysconf(_SC_NPROCESSORS_ONLN);
    if (cpus < 1)
      cpus = 1;
    /* Within the key's range, like a number of the file. */
    long most = (long)jrpcd_key_find(JRPCD_SEC_SERVER, "workers")->max;
    c->workers = (unsigned)(cpus > most ? most : cpus);
  }
  if (c->thread_pool == 0) {
    /* Work handlers put on the pool mostly waits (a database, a file, a
     * subprocess), so twice the workers keep the CPUs busy while half of
     * it waits; libuv's own 4 is the floor. */
    unsigned n = 2 * c->workers;
    c->thread_pool = n < 4                       ? 4
                     : n > JRPCD_THREAD_POOL_MAX ? JRPCD_THREAD_POOL_MAX
                                                 : n;
  }
  for (size_t i = 0; i < c->nplugins; i++) {
    jrpcd_plugin_conf_t *pl = &c->plugins[i];
    if (pl->path[0] != '/') {
      char *full = join_path(c->plugin_dir, pl->path);
      if (!full) {
        out_of_memory(p);
        return;
      }
      free(pl->path);
      pl->path = full;
    }
    if (access(pl->path, F_OK) != 0) {
      int e = errno;
      snprintf(p->label, sizeof p->label, "[plugin %s]", pl->name);
      fail_key(p, p->path_lines[i], "path", "%s: %s", pl->path, strerror(e));
      return;
    }
  }
  if (c->nlistens == 0)
    fail_line(p, 0, "no [listen] section: jrpcd would serve nothing");
}

static int load_text(jrpcd_config_t *c, const char *text, size_t len,
                     const char *name, char *err, size_t errlen) {
  parse_t p = {
      .c = c,
      .name = name,
      .text = text,
      .len = len,
      .err = err,
      .errlen = errlen,
  };
  if (err && errlen)
    err[0] = '\0';
  if (!(p.seen = calloc(jrpcd_nkeys, sizeof *p.seen))) {
    out_of_memory(&p);
    goto done;
  }
  if (!(c->file = copy(&p, name)) ||
      apply_defaults(&p, JRPCD_SEC_SERVER, c, NO_KIND, 1) != 0)
    goto done;

  /* A UTF-8 byte order mark is an editor's habit, not content. */
  if (len >= 3 && memcmp(text, "\xEF\xBB\xBF", 3) == 0)
    p.pos = p.start = 3;
  int rc = ini_parse_stream(next_line, &p, on_key, &p);
  end_section(&p);
  if (rc == -2)
    out_of_memory(&p);
  /* inih reports only the first line it could not read or that the handler
   * refused; an earlier line of its own beats a later one of ours. */
  if (rc > 0 && (!p.failed || (p.err_line > 0 && rc < p.err_line)))
    syntax_error(&p, rc);
  if (!p.failed)
    finish(&p);

done:
  free(p.seen);
  free(p.path_lines);
  if (p.failed) {
    jrpcd_config_free(c);
    return -1;
  }
  return 0;
}

int jrpcd_config_load_string(jrpcd_config_t *c, const char *text,
                             const char *name, char *err, size_t errlen) {
  memset(c, 0, sizeof *c);
  if (!text)
    text = "";
  return load_text(c, text, strlen(text), name ? name : "(built-in)", err,
                   errlen);
}

int jrpcd_config_load(jrpcd_config_t *c, const char *file, char *err,
                      size_t errlen) {
  memset(c, 0, sizeof *c);
  const char *why = NULL;
  char *buf = NULL;
  size_t len = 0;
  FILE *f = fopen(file, "rb");
  if (!f) {
    why = "cannot open";
    goto fail;
  }
  /* One byte more than allowed, to tell "exactly at the limit" from "over". */
  buf = malloc(MAX_FILE_BYTES + 1);
  if (!buf) {
    errno = ENOMEM;
    why = "cannot read";
    goto fail;
  }
  len = fread(buf, 1, MAX_FILE_BYTES + 1, f);
  if (ferror(f)) {
    why = "cannot read";
    goto fail;
  }
  fclose(f);
  f = NULL;
  if (len > MAX_FILE_BYTES) {
    if (err && errlen)
      snprintf(err, errlen, "%s: larger than %u bytes: not a jrpcd config",
               file, MAX_FILE_BYTES);
    free(buf);
    return -1;
  }
  int rc = load_text(c, buf, len, file, err, errlen);
  free(buf);
  return rc;

fail:;
  int e = errno;
  if (f)
    fclose(f);
  free(buf);
  if (err && errlen)
    snprintf(err, errlen, "%s: %s: %s", file, why, strerror(e));
  return -1;
}

void jrpcd_config_free(jrpcd_config_t *c) {
  if (!c)
    return;
  free(c->file);
  for (size_t k = 0; k < jrpcd_nkeys; k++) {
    const jrpcd_key_t *key = &jrpcd_keys[k];
    if (key->section == JRPCD_SEC_SERVER || key->section == JRPCD_SEC_CLUSTER)
      jrpcd_key_free(key, c);
    for (size_t i = 0; key->section == JRPCD_SEC_LISTEN && i < c->nlistens; i++)
      jrpcd_key_free(key, &c->listens[i]);
    for (size_t i = 0; key->section == JRPCD_SEC_PLUGIN && i < c->nplugins; i++)
      jrpcd_key_free(key, &c->plugins[i]);
  }
  for (size_t i = 0; i < c->nlistens; i++)
    free(c->listens[i].name);
  free(c->listens);
  for (size_t i = 0; i < c->nplugins; i++) {
    jrpcd_plugin_conf_t *pl = &c->plugins[i];
    free(pl->name);
    for (char **kv = pl->kv; kv && *kv; kv++)
      free(*kv);
    free(pl->kv);
    free(pl->kv_lines);
  }
  free(c->plugins);
  jrpcd_access_free(&c->access);
  memset(c, 0, sizeof *c);
}
