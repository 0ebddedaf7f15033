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
 * indented "mode = 0600" silently into part of the line above. */
#include "config.h"

#include <arpa/inet.h>
#include <ctype.h>
#include <errno.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/un.h>
#include <unistd.h>

#include <ini.h>

#include "jrpc/jrpc.h"

#ifndef JRPCD_PLUGIN_DIR
#error "JRPCD_PLUGIN_DIR must be defined by the build"
#endif

/* A config file is a few kilobytes; a bigger one is a mistaken -c. */
#define MAX_FILE_BYTES (1u << 20)
#define MAX_WORKERS 256u
#define UNIX_PATH_MAX (sizeof(((struct sockaddr_un *)0)->sun_path) - 1)

enum section_kind { SEC_NONE, SEC_SERVER, SEC_LISTEN, SEC_PLUGIN };

enum server_key {
  S_WORKERS,
  S_PARSER,
  S_PLUGIN_DIR,
  S_LOG_LEVEL,
  S_STRICT_PLUGINS,
  S_MAX_FRAME_BYTES,
  S_MAX_BATCH,
  S_MAX_RESPONSE_BYTES,
  S_MAX_CONNECTIONS,
  S_IDLE_TIMEOUT_MS,
  S_SHUTDOWN_TIMEOUT_MS,
  S_OUTPUT_HIGH_WATER,
  S_MAX_PENDING_CALLS,
  S_MAX_PENDING_CALLS_TOTAL,
  S_PARSER_AUTO_THRESHOLD,
  S_EARLY_REPLY_FRAMES,
  S_FRAME_TIMEOUT_MS,
  S_COUNT
};

static const char *const server_keys[S_COUNT] = {
    "workers",
    "parser",
    "plugin_dir",
    "log_level",
    "strict_plugins",
    "max_frame_bytes",
    "max_batch",
    "max_response_bytes",
    "max_connections",
    "idle_timeout_ms",
    "shutdown_timeout_ms",
    "output_high_water",
    "max_pending_calls",
    "max_pending_calls_total",
    "parser_auto_threshold",
    "early_reply_frames",
    "frame_timeout_ms",
};

enum listen_key {
  L_UNIX,
  L_TCP,
  L_MODE,
  L_OWNER,
  L_GROUP,
  L_FRAMING,
  L_STATS,
  L_COUNT
};

static const char *const listen_keys[L_COUNT] = {
    "unix", "tcp", "mode", "owner", "group", "framing", "stats",
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
  char label[256]; /* "[listen tcp]": the section, for messages */
  int server_line; /* header of [server], 0 = not seen */
  int server_seen[S_COUNT];
  int listen_seen[L_COUNT];
  int *path_lines; /* per plugin: line of its path key */
  int *kv_lines;   /* current plugin: line of each kv pair */
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

static int find_key(const char *const *keys, int n, const char *key) {
  for (int i = 0; i < n; i++)
    if (strcmp(keys[i], key) == 0)
      return i;
  return -1;
}

static void join_keys(const char *const *keys, int n, char *out, size_t cap) {
  size_t off = 0;
  out[0] = '\0';
  for (int i = 0; i < n && off < cap; i++) {
    int w = snprintf(out + off, cap - off, "%s%s", i ? ", " : "", keys[i]);
    if (w < 0)
      break;
    off += (size_t)w;
  }
}

/* ------------------------------------------------------------------ */
/* Values                                                              */
/* ------------------------------------------------------------------ */

/* Plain decimal only: a sign, a space or a suffix is more likely a typo
 * than something to guess the meaning of. */
static int number(parse_t *p, const char *key, const char *value, uint64_t min,
                  uint64_t max, uint64_t *out) {
  const char *s = value;
  int negative = *s == '-';
  if (negative)
    s++;
  if (!isdigit((unsigned char)*s))
    goto not_a_number;
  uint64_t v = 0;
  int overflow = 0;
  for (; isdigit((unsigned char)*s); s++) {
    unsigned d = (unsigned)(*s - '0');
    if (v > (UINT64_MAX - d) / 10)
      overflow = 1;
    else
      v = v * 10 + d;
  }
  if (*s)
    goto not_a_number;
  if (overflow || negative || v < min || v > max) {
    fail_key(p, p->line, key,
             "\"%s\" is out of range (%" PRIu64 " .. %" PRIu64 ")", value, min,
             max);
    return -1;
  }
  *out = v;
  return 0;
not_a_number:
  fail_key(p, p->line, key,
           "\"%s\" is not a number (%" PRIu64 " .. %" PRIu64 ")", value, min,
           max);
  return -1;
}

static int number_u32(parse_t *p, const char *key, const char *value,
                      uint32_t min, uint32_t max, uint32_t *out) {
  uint64_t v;
  if (number(p, key, value, min, max, &v) != 0)
    return -1;
  *out = (uint32_t)v;
  return 0;
}

static int boolean(parse_t *p, const char *key, const char *value, int *out) {
  static const char *const yes[] = {"yes", "true", "on", "1"};
  static const char *const no[] = {"no", "false", "off", "0"};
  for (size_t i = 0; i < sizeof yes / sizeof yes[0]; i++) {
    if (strcasecmp(value, yes[i]) == 0) {
      *out = 1;
      return 0;
    }
    if (strcasecmp(value, no[i]) == 0) {
      *out = 0;
      return 0;
    }
  }
  fail_key(p, p->line, key,
           "\"%s\" is not yes or no (yes/no, true/false, on/off, 1/0)", value);
  return -1;
}

static int octal_mode(parse_t *p, const char *key, const char *value,
                      int *out) {
  unsigned v = 0;
  const char *s = value;
  if (!*s)
    goto bad;
  for (; *s; s++) {
    if (*s < '0' || *s > '7')
      goto bad;
    v = v * 8 + (unsigned)(*s - '0');
    if (v > 0777)
      goto bad;
  }
  *out = (int)v;
  return 0;
bad:
  fail_key(p, p->line, key, "\"%s\" is not an octal mode (0 .. 0777)", value);
  return -1;
}

static int not_empty(parse_t *p, const char *key, const char *value,
                     const char *allowed) {
  if (*value)
    return 0;
  fail_key(p, p->line, key, "is empty (%s)", allowed);
  return -1;
}

/* Replaces *slot (a default or NULL) with a copy of value. */
static int set_string(parse_t *p, char **slot, const char *value) {
  char *d = copy(p, value);
  if (!d)
    return -1;
  free(*slot);
  *slot = d;
  return 0;
}

/* "127.0.0.1:7400", "[::1]:7400": literal addresses only, so that what a
 * listener binds to never depends on name resolution at start-up. */
static int host_port(parse_t *p, const char *key, const char *value,
                     jrpcd_listen_conf_t *l) {
  const char *host, *host_end, *port;
  int family;
  if (value[0] == '[') {
    host = value + 1;
    host_end = strchr(host, ']');
    if (!host_end || host_end[1] != ':')
      goto bad_form;
    port = host_end + 2;
    family = AF_INET6;
  } else {
    host = value;
    host_end = strrchr(value, ':');
    if (!host_end)
      goto bad_form;
    port = host_end + 1;
    family = AF_INET;
  }
  char addr_text[INET6_ADDRSTRLEN];
  size_t hn = (size_t)(host_end - host);
  unsigned char addr[sizeof(struct in6_addr)];
  if (hn >= sizeof addr_text)
    goto bad_address;
  memcpy(addr_text, host, hn);
  addr_text[hn] = '\0';
  if (inet_pton(family, addr_text, addr) != 1)
    goto bad_address;

  uint64_t v = 0;
  const char *s = port;
  for (; isdigit((unsigned char)*s) && v <= 65535; s++)
    v = v * 10 + (uint64_t)(*s - '0');
  if (s == port || *s || v < 1 || v > 65535) {
    fail_key(p, p->line, key, "port \"%s\" is not a port number (1 .. 65535)",
             port);
    return -1;
  }
  char *h = copy(p, addr_text);
  if (!h)
    return -1;
  free(l->host);
  l->host = h;
  l->port = (uint16_t)v;
  return 0;

bad_form:
  fail_key(p, p->line, key,
           "\"%s\" is not ADDRESS:PORT (like 127.0.0.1:7400, 0.0.0.0:7400, "
           "[::1]:7400 or [::]:7400)",
           value);
  return -1;
bad_address:
  if (family == AF_INET6)
    fail_key(p, p->line, key, "\"%.*s\" is not an IPv6 address", (int)hn, host);
  else
    fail_key(p, p->line, key,
             "\"%.*s\" is not an IPv4 address (a.b.c.d; host names are not "
             "looked up; IPv6 goes in brackets: [::1]:7400)",
             (int)hn, host);
  return -1;
}

int jrpcd_log_level_parse(const char *s) {
  static const struct {
    const char *name;
    int level;
  } levels[] = {
      {"error", JRPC_LOG_ERROR},
      {"warn", JRPC_LOG_WARN},
      {"info", JRPC_LOG_INFO},
      {"debug", JRPC_LOG_DEBUG},
  };
  if (!s)
    return -1;
  for (size_t i = 0; i < sizeof levels / sizeof levels[0]; i++)
    if (strcasecmp(s, levels[i].name) == 0)
      return levels[i].level;
  return -1;
}

/* ------------------------------------------------------------------ */
/* Keys                                                                */
/* ------------------------------------------------------------------ */

static int server_key(parse_t *p, const char *key, const char *value) {
  jrpcd_config_t *c = p->c;
  int k = find_key(server_keys, S_COUNT, key);
  if (k < 0) {
    char known[512];
    join_keys(server_keys, S_COUNT, known, sizeof known);
    fail_key(p, p->line, key, "unknown key (%s)", known);
    return -1;
  }
  if (p->server_seen[k]) {
    fail_key(p, p->line, key, "set twice (first at line %d)",
             p->server_seen[k]);
    return -1;
  }
  p->server_seen[k] = p->line;

  uint64_t v;
  switch ((enum server_key)k) {
  case S_WORKERS:
    if (number(p, key, value, 0, MAX_WORKERS, &v) != 0)
      return -1;
    c->workers = (unsigned)v;
    return 0;
  case S_PARSER: {
    static const char *const parsers[] = {"native", "jsmn", "simdjson", "auto"};
    for (size_t i = 0; i < sizeof parsers / sizeof parsers[0]; i++)
      if (strcasecmp(value, parsers[i]) == 0)
        return set_string(p, &c->parser, parsers[i]);
    fail_key(p, p->line, key,
             "\"%s\" is not a parser (native, jsmn, simdjson or "
             "auto)",
             value);
    return -1;
  }
  case S_PLUGIN_DIR:
    if (not_empty(p, key, value, "a directory") != 0)
      return -1;
    return set_string(p, &c->plugin_dir, value);
  case S_LOG_LEVEL: {
    int level = jrpcd_log_level_parse(value);
    if (level < 0) {
      fail_key(p, p->line, key,
               "\"%s\" is not a log level (error, warn, info or debug)", value);
      return -1;
    }
    c->log_level = level;
    return 0;
  }
  case S_STRICT_PLUGINS:
    return boolean(p, key, value, &c->strict_plugins);
  case S_MAX_FRAME_BYTES:
    return number_u32(p, key, value, 64, INT32_MAX, &c->max_frame_bytes);
  case S_MAX_BATCH:
    return number_u32(p, key, value, 1, 1000000, &c->max_batch);
  case S_MAX_RESPONSE_BYTES:
    return number(p, key, value, 64, UINT32_MAX, &c->max_response_bytes);
  case S_MAX_CONNECTIONS:
    return number_u32(p, key, value, 1, 1000000, &c->max_connections);
  case S_IDLE_TIMEOUT_MS:
    return number_u32(p, key, value, 0, UINT32_MAX, &c->idle_timeout_ms);
  case S_FRAME_TIMEOUT_MS:
    return number_u32(p, key, value, 0, UINT32_MAX, &c->frame_timeout_ms);
  case S_SHUTDOWN_TIMEOUT_MS:
    return number_u32(p, key, value, 0, UINT32_MAX, &c->shutdown_timeout_ms);
  case S_OUTPUT_HIGH_WATER:
    return number(p, key, value, 4096, UINT64_C(1) << 40,
                  &c->output_high_water);
  case S_MAX_PENDING_CALLS:
    return number_u32(p, key, value, 1, 1000000, &c->max_pending_calls);
  case S_PARSER_AUTO_THRESHOLD:
    if (strcasecmp(value, "measured") == 0) {
      c->parser_auto_threshold = JRPCD_AUTO_MEASURED;
      return 0;
    }
    return number_u32(p, key, value, 0, INT32_MAX, &c->parser_auto_threshold);
  case S_MAX_PENDING_CALLS_TOTAL:
    return number_u32(p, key, value, 1, 100000000, &c->max_pending_calls_total);
  case S_EARLY_REPLY_FRAMES:
    return number_u32(p, key, value, 0, 1000000, &c->early_reply_frames);
  case S_COUNT:
    break;
  }
  return -1;
}

static int listen_key(parse_t *p, const char *key, const char *value) {
  jrpcd_listen_conf_t *l = &p->c->listens[p->c->nlistens - 1];
  int k = find_key(listen_keys, L_COUNT, key);
  if (k < 0) {
    char known[128];
    join_keys(listen_keys, L_COUNT, known, sizeof known);
    fail_key(p, p->line, key, "unknown key (%s)", known);
    return -1;
  }
  if (p->listen_seen[k]) {
    fail_key(p, p->line, key, "set twice (first at line %d)",
             p->listen_seen[k]);
    return -1;
  }
  p->listen_seen[k] = p->line;

  switch ((enum listen_key)k) {
  case L_UNIX: {
    if (not_empty(p, key, value, "the socket's path") != 0)
      return -1;
    size_t n = strlen(value);
    if (n > UNIX_PATH_MAX) {
      fail_key(p, p->line, key,
               "\"%s\" is %zu bytes long (a unix socket path holds at most "
               "%zu)",
               value, n, UNIX_PATH_MAX);
      return -1;
    }
    l->kind = JRPCD_LISTEN_UNIX;
    return set_string(p, &l->path, value);
  }
  case L_TCP:
    l->kind = JRPCD_LISTEN_TCP;
    return host_port(p, key, value, l);
  case L_MODE:
    return octal_mode(p, key, value, &l->mode);
  case L_OWNER:
    if (not_empty(p, key, value, "a user name or uid") != 0)
      return -1;
    return set_string(p, &l->owner, value);
  case L_GROUP:
    if (not_empty(p, key, value, "a group name or gid") != 0)
      return -1;
    return set_string(p, &l->group, value);
  case L_FRAMING:
    if (strcasecmp(value, "newline") == 0) {
      l->framing = JRPC_FRAMING_NEWLINE;
      return 0;
    }
    if (strcasecmp(value, "length") == 0) {
      l->framing = JRPC_FRAMING_LENGTH;
      return 0;
    }
    fail_key(p, p->line, key, "\"%s\" is not a framing (newline or length)",
             value);
    return -1;
  case L_STATS:
    return boolean(p, key, value, &l->stats);
  case L_COUNT:
    break;
  }
  return -1;
}

static int plugin_key(parse_t *p, const char *key, const char *value) {
  size_t idx = p->c->nplugins - 1;
  jrpcd_plugin_conf_t *pl = &p->c->plugins[idx];
  if (strcmp(key, "path") == 0) {
    if (p->path_lines[idx]) {
      fail_key(p, p->line, key, "set twice (first at line %d)",
               p->path_lines[idx]);
      return -1;
    }
    p->path_lines[idx] = p->line;
    if (not_empty(p, key, value, "the plugin's .so file") != 0)
      return -1;
    /* Resolved against plugin_dir once the whole file is read: [server]
     * may come after this section. */
    return set_string(p, &pl->path, value);
  }
  if (!*key) {
    fail_key(p, p->line, "(empty)", "a key needs a name");
    return -1;
  }
  for (size_t i = 0; i < pl->nkv; i++)
    if (strcmp(pl->kv[2 * i], key) == 0) {
      fail_key(p, p->line, key, "set twice (first at line %d)", p->kv_lines[i]);
      return -1;
    }

  int *lines = realloc(p->kv_lines, (pl->nkv + 1) * sizeof *lines);
  if (!lines)
    goto oom;
  p->kv_lines = lines;
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

static int on_key(void *user, const char *section, const char *key,
                  const char *value) {
  (void)section; /* ours is more exact: inih cuts names at 50 bytes */
  parse_t *p = user;
  if (p->failed)
    return 0;
  int rc = -1;
  switch (p->sec) {
  case SEC_NONE:
    fail_line(p, p->line,
              "%s: outside any section (keys go under [server], "
              "[listen NAME] or [plugin NAME])",
              key);
    break;
  case SEC_SERVER:
    rc = server_key(p, key, value);
    break;
  case SEC_LISTEN:
    rc = listen_key(p, key, value);
    break;
  case SEC_PLUGIN:
    rc = plugin_key(p, key, value);
    break;
  }
  return rc == 0;
}

/* ------------------------------------------------------------------ */
/* Sections                                                            */
/* ------------------------------------------------------------------ */

/* Checks that need the whole section, run when the next one starts. */
static void end_section(parse_t *p) {
  if (p->failed)
    return;
  if (p->sec == SEC_LISTEN) {
    const jrpcd_listen_conf_t *l = &p->c->listens[p->c->nlistens - 1];
    int u = p->listen_seen[L_UNIX], t = p->listen_seen[L_TCP];
    if (!u && !t) {
      fail_key(p, l->line, NULL,
               "no unix or tcp key (a listener needs one: unix = PATH or "
               "tcp = ADDRESS:PORT)");
      return;
    }
    if (u && t) {
      fail_key(p, u > t ? u : t, u > t ? "unix" : "tcp",
               "a listener is unix or tcp, not both (%s is at line %d)",
               u > t ? "tcp" : "unix", u > t ? t : u);
      return;
    }
    if (!p->listen_seen[L_STATS]) /* rpc.stats: local callers only */
      p->c->listens[p->c->nlistens - 1].stats = u ? 1 : 0;
    if (t) {
      int first = 0, which = 0;
      for (int k = L_MODE; k <= L_GROUP; k++)
        if (p->listen_seen[k] && (!first || p->listen_seen[k] < first)) {
          first = p->listen_seen[k];
          which = k;
        }
      if (first)
        fail_key(p, first, listen_keys[which],
                 "only for unix sockets (this listener is tcp)");
    }
  } else if (p->sec == SEC_PLUGIN) {
    size_t idx = p->c->nplugins - 1;
    if (!p->path_lines[idx])
      fail_key(p, p->c->plugins[idx].line, "path",
               "missing (every plugin needs path = FILE.so)");
  }
}

static int word_is(const char *s, size_t n, const char *word) {
  return strlen(word) == n && memcmp(s, word, n) == 0;
}

static int open_listen(parse_t *p, const char *name, size_t n) {
  jrpcd_config_t *c = p->c;
  for (size_t i = 0; i < c->nlistens; i++)
    if (word_is(name, n, c->listens[i].name)) {
      fail_key(p, p->line, NULL, "defined twice (first at line %d)",
               c->listens[i].line);
      return -1;
    }
  jrpcd_listen_conf_t *grown =
      realloc(c->listens, (c->nlistens + 1) * sizeof *grown);
  if (!grown)
    goto oom;
  c->listens = grown;
  jrpcd_listen_conf_t *l = &grown[c->nlistens];
  memset(l, 0, sizeof *l);
  if (!(l->name = strndup(name, n)))
    goto oom;
  c->nlistens++;
  l->line = p->line;
  l->mode = 0660;
  l->framing = JRPC_FRAMING_NEWLINE;
  memset(p->listen_seen, 0, sizeof p->listen_seen);
  p->sec = SEC_LISTEN;
  return 0;
oom:
  out_of_memory(p);
  return -1;
}

static int open_plugin(parse_t *p, const char *name, size_t n) {
  jrpcd_config_t *c = p->c;
  for (size_t i = 0; i < c->nplugins; i++)
    if (word_is(name, n, c->plugins[i].name)) {
      fail_key(p, p->line, NULL, "defined twice (first at line %d)",
               c->plugins[i].line);
      return -1;
    }
  int *lines = realloc(p->path_lines, (c->nplugins + 1) * sizeof *lines);
  if (!lines)
    goto oom;
  p->path_lines = lines;
  lines[c->nplugins] = 0;
  jrpcd_plugin_conf_t *grown =
      realloc(c->plugins, (c->nplugins + 1) * sizeof *grown);
  if (!grown)
    goto oom;
  c->plugins = grown;
  jrpcd_plugin_conf_t *pl = &grown[c->nplugins];
  memset(pl, 0, sizeof *pl);
  pl->name = strndup(name, n);
  /* Never NULL, so that the daemon can hand it to the plugin as is. */
  pl->kv = calloc(1, sizeof *pl->kv);
  if (!pl->name || !pl->kv) {
    free(pl->name);
    free(pl->kv);
    goto oom;
  }
  c->nplugins++;
  pl->line = p->line;
  p->sec = SEC_PLUGIN;
  return 0;
oom:
  out_of_memory(p);
  return -1;
}

/* The text between '[' and ']' of a header line: "listen  tcp " and the
 * like. The first word says what the section is, the rest names it. */
static void open_section(parse_t *p, const char *raw, size_t n) {
  end_section(p);
  if (p->failed)
    return;
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
    if (nn) {
      fail_key(p, p->line, NULL, "[server] takes no name");
      return;
    }
    if (p->server_line) {
      fail_key(p, p->line, NULL, "defined twice (first at line %d)",
               p->server_line);
      return;
    }
    p->server_line = p->line;
    p->sec = SEC_SERVER;
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
             "unknown section ([server], [listen NAME] or [plugin NAME])");
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
    c->workers = cpus > (long)MAX_WORKERS ? MAX_WORKERS : (unsigned)cpus;
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
  c->log_level = JRPC_LOG_INFO;
  c->strict_plugins = 1;
  c->max_frame_bytes = 1048576;
  c->max_batch = 1000;
  c->max_response_bytes = 16777216;
  c->max_connections = 4096;
  c->idle_timeout_ms = 60000;
  c->frame_timeout_ms = 10000;
  c->shutdown_timeout_ms = 5000;
  c->output_high_water = 1048576;
  c->max_pending_calls = 1024;
  c->max_pending_calls_total = 65536;
  c->early_reply_frames = 32;
  c->parser_auto_threshold = JRPCD_AUTO_MEASURED;
  if (!(c->file = copy(&p, name)) || !(c->parser = copy(&p, "auto")) ||
      !(c->plugin_dir = copy(&p, JRPCD_PLUGIN_DIR)))
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
  free(p.path_lines);
  free(p.kv_lines);
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
  free(c->parser);
  free(c->plugin_dir);
  for (size_t i = 0; i < c->nlistens; i++) {
    jrpcd_listen_conf_t *l = &c->listens[i];
    free(l->name);
    free(l->path);
    free(l->owner);
    free(l->group);
    free(l->host);
  }
  free(c->listens);
  for (size_t i = 0; i < c->nplugins; i++) {
    jrpcd_plugin_conf_t *pl = &c->plugins[i];
    free(pl->name);
    free(pl->path);
    for (char **kv = pl->kv; kv && *kv; kv++)
      free(*kv);
    free(pl->kv);
  }
  free(c->plugins);
  memset(c, 0, sizeof *c);
}
