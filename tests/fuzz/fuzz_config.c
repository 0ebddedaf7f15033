/* fuzz_config.c - the config reader (daemon/config.c, on inih).
 *
 * The input is the config text. It is read three ways:
 *  - jrpcd_config_load_string() on the text up to its first NUL byte;
 *  - jrpcd_config_load() on a file holding every byte (an in-memory file,
 *    /proc/self/fd/N), named the same way in messages, so that without a
 *    NUL byte both must agree exactly: result, message and struct;
 *  - jrpcd_config_load_string() again with a small error buffer (0..23
 *    bytes, NULL for 0): same result, the message a prefix of the full one.
 *
 * Checked on failure: the struct is all zeros and the message names the
 * file. On success, the struct is consistent: every value in its
 * documented range (and every key of the table, daemon/config_keys.c,
 * prints as a value its own parser takes back unchanged), at least one
 * listener, each unix listener with a path
 * of at most 107 bytes and no address, each tcp listener with a literal
 * address, a port and none of the unix-only keys, unique section names,
 * plugins with an absolute path that exists and a NULL-terminated list of
 * distinct, non-empty extra keys. Leaks are LeakSanitizer's to find. */
#include <arpa/inet.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "config.h"
#include "config_keys.h"
#include "fuzz.h"
#include "jrpc/jrpc.h"

static int fd = -1;
static char path[64];

static void setup(void) {
  fd = memfd_create("fuzz_config", 0);
  if (fd >= 0) {
    snprintf(path, sizeof path, "/proc/self/fd/%d", fd);
    return;
  }
  char tmpl[] = "/tmp/fuzz_config.XXXXXX";
  fd = mkstemp(tmpl);
  FZ_CHECK(fd >= 0, "no temporary file");
  unlink(tmpl);
  snprintf(path, sizeof path, "/proc/self/fd/%d", fd);
}

static int streq(const char *a, const char *b) {
  return (!a && !b) || (a && b && strcmp(a, b) == 0);
}

/* The struct of a key of section s: the config, listener i or plugin i. */
static const void *key_base(const jrpcd_config_t *c, jrpcd_section_t s,
                            size_t i) {
  return s == JRPCD_SEC_SERVER || s == JRPCD_SEC_CLUSTER ? (const void *)c
         : s == JRPCD_SEC_LISTEN ? (const void *)&c->listens[i]
                                 : (const void *)&c->plugins[i];
}

static size_t key_bases(const jrpcd_config_t *c, jrpcd_section_t s) {
  return s == JRPCD_SEC_SERVER    ? 1
         : s == JRPCD_SEC_CLUSTER ? (size_t)(c->has_cluster != 0)
         : s == JRPCD_SEC_LISTEN  ? c->nlistens
                                  : c->nplugins;
}

/* Each key's value, printed, reads back through its own parser (so it is
 * of its type and in its range) and prints the same. */
static void check_keys(const jrpcd_config_t *c) {
  for (size_t k = 0; k < jrpcd_nkeys; k++) {
    const jrpcd_key_t *key = &jrpcd_keys[k];
    for (size_t i = 0; i < key_bases(c, key->section); i++) {
      char text[1024], again[1024], why[512];
      if (!jrpcd_key_format(key, key_base(c, key->section, i), text,
                            sizeof text))
        continue;
      union {
        jrpcd_config_t s;
        jrpcd_listen_conf_t l;
        jrpcd_plugin_conf_t p;
      } blank;
      memset(&blank, 0, sizeof blank);
      int rc = jrpcd_key_parse(key, text, &blank, why, sizeof why);
      FZ_CHECK(rc == 0, "%s = %s does not read back: %s", key->name, text, why);
      jrpcd_key_format(key, &blank, again, sizeof again);
      jrpcd_key_free(key, &blank);
      FZ_CHECK(strcmp(text, again) == 0, "%s = %s reads back as %s", key->name,
               text, again);
    }
  }
}

/* The same values for every key of the table, in a and b. */
static void same_keys(const jrpcd_config_t *a, const jrpcd_config_t *b) {
  for (size_t k = 0; k < jrpcd_nkeys; k++) {
    const jrpcd_key_t *key = &jrpcd_keys[k];
    for (size_t i = 0; i < key_bases(a, key->section); i++) {
      char x[1024], y[1024];
      int xs = jrpcd_key_format(key, key_base(a, key->section, i), x, sizeof x);
      int ys = jrpcd_key_format(key, key_base(b, key->section, i), y, sizeof y);
      FZ_CHECK(xs == ys && strcmp(x, y) == 0,
               "file and string differ in %s: %s / %s", key->name, x, y);
    }
  }
}

static void check_consistent(const jrpcd_config_t *c) {
  FZ_CHECK(c->file && streq(c->file, path), "file is %s", c->file);
  FZ_CHECK(streq(c->parser, "native") || streq(c->parser, "jsmn") ||
               streq(c->parser, "simdjson") || streq(c->parser, "auto"),
           "parser %s", c->parser ? c->parser : "(null)");
  FZ_CHECK(c->plugin_dir && c->plugin_dir[0], "empty plugin_dir");
  FZ_CHECK(c->workers >= 1 && c->workers <= 256, "workers %u", c->workers);
  FZ_CHECK(c->log_level >= JRPC_LOG_ERROR && c->log_level <= JRPC_LOG_DEBUG,
           "log_level %d", c->log_level);
  FZ_CHECK(c->strict_plugins == 0 || c->strict_plugins == 1,
           "strict_plugins %d", c->strict_plugins);
  FZ_CHECK(c->max_frame_bytes >= 64 && c->max_frame_bytes <= INT32_MAX,
           "max_frame_bytes %u", c->max_frame_bytes);
  FZ_CHECK(c->max_batch >= 1 && c->max_batch <= 1000000, "max_batch %u",
           c->max_batch);
  FZ_CHECK(c->max_response_bytes >= 64 && c->max_response_bytes <= UINT32_MAX,
           "max_response_bytes");
  FZ_CHECK(c->max_connections >= 1 && c->max_connections <= 1000000,
           "max_connections %u", c->max_connections);
  FZ_CHECK(c->output_high_water >= 4096 &&
               c->output_high_water <= (UINT64_C(1) << 40),
           "output_high_water");
  FZ_CHECK(c->max_pending_calls >= 1 && c->max_pending_calls <= 1000000,
           "max_pending_calls %u", c->max_pending_calls);
  FZ_CHECK(c->max_pending_calls_total >= 1 &&
               c->max_pending_calls_total <= 100000000,
           "max_pending_calls_total %u", c->max_pending_calls_total);
  check_keys(c);

  FZ_CHECK(c->nlistens >= 1 && c->listens, "no listener");
  for (size_t i = 0; i < c->nlistens; i++) {
    const jrpcd_listen_conf_t *l = &c->listens[i];
    FZ_CHECK(l->name && l->name[0], "listener %zu without a name", i);
    FZ_CHECK(l->line >= 1 && (i == 0 || l->line > c->listens[i - 1].line),
             "listener %s at line %d", l->name, l->line);
    for (size_t j = 0; j < i; j++)
      FZ_CHECK(strcmp(l->name, c->listens[j].name) != 0, "listener %s twice",
               l->name);
    FZ_CHECK(l->framing == JRPC_FRAMING_NEWLINE ||
                 l->framing == JRPC_FRAMING_LENGTH,
             "framing %d", (int)l->framing);
    FZ_CHECK(l->mode >= 0 && l->mode <= 0777, "mode %o", (unsigned)l->mode);
    if (l->kind == JRPCD_LISTEN_UNIX) {
      FZ_CHECK(l->path && l->path[0] && strlen(l->path) <= 107,
               "unix listener %s: path", l->name);
      FZ_CHECK(!l->host && l->port == 0, "unix listener %s has an address",
               l->name);
      FZ_CHECK(!l->owner || l->owner[0], "empty owner");
      FZ_CHECK(!l->group || l->group[0], "empty group");
    } else {
      FZ_CHECK(l->kind == JRPCD_LISTEN_TCP, "listener kind %d", (int)l->kind);
      unsigned char addr[16];
      FZ_CHECK(l->host && (inet_pton(AF_INET, l->host, addr) == 1 ||
                           inet_pton(AF_INET6, l->host, addr) == 1),
               "tcp listener %s: address %s", l->name,
               l->host ? l->host : "(null)");
      FZ_CHECK(l->port >= 1, "tcp listener %s: port 0", l->name);
      FZ_CHECK(!l->path && !l->owner && !l->group && l->mode == 0660,
               "tcp listener %s has unix settings", l->name);
    }
  }

  FZ_CHECK(c->nplugins == 0 || c->plugins, "plugins missing");
  for (size_t i = 0; i < c->nplugins; i++) {
    const jrpcd_plugin_conf_t *pl = &c->plugins[i];
    FZ_CHECK(pl->name && pl->name[0], "plugin %zu without a name", i);
    FZ_CHECK(pl->line >= 1 && (i == 0 || pl->line > c->plugins[i - 1].line),
             "plugin %s at line %d", pl->name, pl->line);
    for (size_t j = 0; j < i; j++)
      FZ_CHECK(strcmp(pl->name, c->plugins[j].name) != 0, "plugin %s twice",
               pl->name);
    FZ_CHECK(pl->path && pl->path[0] == '/' && access(pl->path, F_OK) == 0,
             "plugin %s: path %s", pl->name, pl->path ? pl->path : "(null)");
    FZ_CHECK(pl->kv && pl->kv[2 * pl->nkv] == NULL,
             "plugin %s: kv not NULL-terminated", pl->name);
    for (size_t k = 0; k < pl->nkv; k++) {
      const char *key = pl->kv[2 * k], *val = pl->kv[2 * k + 1];
      FZ_CHECK(key && val && key[0] && strcmp(key, "path") != 0,
               "plugin %s: key %zu", pl->name, k);
      for (size_t j = 0; j < k; j++)
        FZ_CHECK(strcmp(key, pl->kv[2 * j]) != 0, "plugin %s: key %s twice",
                 pl->name, key);
    }
  }
}

static void check_result(const jrpcd_config_t *c, int rc, const char *err) {
  if (rc == 0) {
    check_consistent(c);
    return;
  }
  static const jrpcd_config_t zero;
  FZ_CHECK(rc == -1, "load returned %d", rc);
  FZ_CHECK(memcmp(c, &zero, sizeof zero) == 0,
           "a failed load left the struct set (%s)", err);
  size_t pn = strlen(path);
  FZ_CHECK(strncmp(err, path, pn) == 0 && err[pn] == ':',
           "message does not name the file: %s", err);
}

static void same_config(const jrpcd_config_t *a, const jrpcd_config_t *b) {
  FZ_CHECK(streq(a->parser, b->parser) && streq(a->plugin_dir, b->plugin_dir) &&
               a->workers == b->workers && a->log_level == b->log_level &&
               a->strict_plugins == b->strict_plugins &&
               a->max_frame_bytes == b->max_frame_bytes &&
               a->max_batch == b->max_batch &&
               a->max_response_bytes == b->max_response_bytes &&
               a->max_connections == b->max_connections &&
               a->idle_timeout_ms == b->idle_timeout_ms &&
               a->shutdown_timeout_ms == b->shutdown_timeout_ms &&
               a->output_high_water == b->output_high_water &&
               a->max_pending_calls == b->max_pending_calls &&
               a->max_pending_calls_total == b->max_pending_calls_total &&
               a->nlistens == b->nlistens && a->nplugins == b->nplugins,
           "file and string give different [server] settings or counts");
  same_keys(a, b);
  for (size_t i = 0; i < a->nlistens; i++) {
    const jrpcd_listen_conf_t *x = &a->listens[i], *y = &b->listens[i];
    FZ_CHECK(streq(x->name, y->name) && x->line == y->line &&
                 x->kind == y->kind && streq(x->path, y->path) &&
                 x->mode == y->mode && streq(x->owner, y->owner) &&
                 streq(x->group, y->group) && streq(x->host, y->host) &&
                 x->port == y->port && x->framing == y->framing,
             "file and string differ in listener %zu", i);
  }
  for (size_t i = 0; i < a->nplugins; i++) {
    const jrpcd_plugin_conf_t *x = &a->plugins[i], *y = &b->plugins[i];
    FZ_CHECK(streq(x->name, y->name) && x->line == y->line &&
                 streq(x->path, y->path) && x->nkv == y->nkv,
             "file and string differ in plugin %zu", i);
    for (size_t k = 0; k < 2 * x->nkv; k++)
      FZ_CHECK(streq(x->kv[k], y->kv[k]), "plugin %zu: kv %zu differs", i, k);
  }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  if (fd < 0)
    setup();
  char *text = malloc(size + 1);
  FZ_CHECK(text, "out of memory");
  if (size)
    memcpy(text, data, size);
  text[size] = '\0';

  jrpcd_config_t a, b, c;
  char ea[1024], eb[1024], es[24];
  int ra = jrpcd_config_load_string(&a, text, path, ea, sizeof ea);
  check_result(&a, ra, ea);

  FZ_CHECK(ftruncate(fd, 0) == 0, "ftruncate");
  FZ_CHECK(size == 0 || pwrite(fd, data, size, 0) == (ssize_t)size, "pwrite");
  int rb = jrpcd_config_load(&b, path, eb, sizeof eb);
  check_result(&b, rb, eb);
  if (!memchr(data, '\0', size)) {
    FZ_CHECK(ra == rb && strcmp(ea, eb) == 0,
             "string and file differ: %d \"%s\" / %d \"%s\"", ra, ea, rb, eb);
    if (ra == 0)
      same_config(&a, &b);
  }

  size_t small = size % sizeof es;
  memset(es, 'Z', sizeof es);
  int rc = jrpcd_config_load_string(&c, text, path, small ? es : NULL, small);
  FZ_CHECK(rc == ra, "the error buffer's size changed the result");
  if (small) {
    size_t n = strnlen(es, small);
    FZ_CHECK(n < small, "message not terminated in %zu bytes", small);
    FZ_CHECK(strncmp(es, ea, n) == 0 && (ra != 0 || n == 0) &&
                 (n == small - 1 || n == strlen(ea)),
             "short message \"%s\" is not a prefix of \"%s\"", es, ea);
  }

  jrpcd_config_free(&a);
  jrpcd_config_free(&b);
  jrpcd_config_free(&c);
  free(text);
  return 0;
}
