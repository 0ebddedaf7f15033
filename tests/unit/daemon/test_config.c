/* test_config.c - daemon/config.h: defaults, every key, section order,
 * plugin keys and paths, each kind of error with its line and key, files,
 * and the sample conf/jrpcd.conf. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cmocka.h>

#include "config.h"
#include "config_keys.h"
#include "jrpc/jrpc.h"

/* A directory holding empty math.so, echo.so, sleep.so and kv.so: the loader
 * only checks that a plugin file exists, so empty files stand in for modules.
 */
static char plugdir[64];
static char err[1024];

static const char *const fake_plugins[] = {"math.so", "echo.so", "sleep.so",
                                           "kv.so"};
#define NFAKE (sizeof(fake_plugins) / sizeof(fake_plugins[0]))

static int make_plugdir(void **state) {
  (void)state;
  strcpy(plugdir, "/tmp/jrpcd-test-config-XXXXXX");
  if (!mkdtemp(plugdir))
    return -1;
  for (size_t i = 0; i < NFAKE; i++) {
    char path[128];
    snprintf(path, sizeof path, "%s/%s", plugdir, fake_plugins[i]);
    FILE *f = fopen(path, "w");
    if (!f)
      return -1;
    fclose(f);
  }
  return 0;
}

static int remove_plugdir(void **state) {
  (void)state;
  for (size_t i = 0; i < NFAKE; i++) {
    char path[128];
    snprintf(path, sizeof path, "%s/%s", plugdir, fake_plugins[i]);
    unlink(path);
  }
  rmdir(plugdir);
  return 0;
}

static int load(jrpcd_config_t *c, const char *text) {
  err[0] = '\0';
  return jrpcd_config_load_string(c, text, "t.conf", err, sizeof err);
}

/* text with every "@DIR@" replaced by the fake plugin directory. */
static char *with_plugdir(const char *text) {
  size_t n = strlen(text) + 1;
  for (const char *s = strstr(text, "@DIR@"); s; s = strstr(s + 5, "@DIR@"))
    n += strlen(plugdir);
  char *out = malloc(n);
  assert_non_null(out);
  char *o = out;
  for (const char *s = text; *s;) {
    if (strncmp(s, "@DIR@", 5) == 0) {
      o += sprintf(o, "%s", plugdir);
      s += 5;
    } else {
      *o++ = *s++;
    }
  }
  *o = '\0';
  return out;
}

static void assert_zeroed(const jrpcd_config_t *c) {
  jrpcd_config_t zero;
  memset(&zero, 0, sizeof zero);
  assert_memory_equal(c, &zero, sizeof zero);
}

static void load_ok(jrpcd_config_t *c, const char *text) {
  char *t = with_plugdir(text);
  int rc = load(c, t);
  if (rc != 0)
    fail_msg("unexpected error: %s\nfor:\n%s", err, t);
  free(t);
}

/* The load fails, the message starts "t.conf:LINE: " and holds `want`
 * (and `want2` unless NULL), and the struct is left zeroed. */
static void expect_error_(const char *text, int line, const char *want,
                          const char *want2, const char *file, int at) {
  char *t = with_plugdir(text);
  jrpcd_config_t c;
  memset(&c, 0xA5, sizeof c);
  int rc = load(&c, t);
  if (rc != -1)
    fail_msg("%s:%d: expected an error, got %d for:\n%s", file, at, rc, t);
  char prefix[32];
  if (line > 0)
    snprintf(prefix, sizeof prefix, "t.conf:%d: ", line);
  else
    snprintf(prefix, sizeof prefix, "t.conf: ");
  if (strncmp(err, prefix, strlen(prefix)) != 0 || !strstr(err, want) ||
      (want2 && !strstr(err, want2)))
    fail_msg("%s:%d: message \"%s\" lacks \"%s\" / \"%s\" / \"%s\"", file, at,
             err, prefix, want, want2 ? want2 : "");
  assert_zeroed(&c);
  free(t);
}
#define expect_error(text, line, want, want2)                                  \
  expect_error_((text), (line), (want), (want2), __FILE__, __LINE__)

static unsigned cpu_workers(void) {
  long n = sysconf(_SC_NPROCESSORS_ONLN);
  if (n < 1)
    return 1;
  return n > 256 ? 256 : (unsigned)n;
}

static void write_file(const char *path, const char *data, size_t n) {
  FILE *f = fopen(path, "wb");
  assert_non_null(f);
  assert_int_equal(fwrite(data, 1, n, f), n);
  assert_int_equal(fclose(f), 0);
}

/* A new temporary file holding data[0..n); its path goes to path. */
static void temp_file(char *path, size_t cap, const char *data, size_t n) {
  assert_true(cap > 32);
  strcpy(path, "/tmp/jrpcd-test-conf-XXXXXX");
  int fd = mkstemp(path);
  assert_true(fd >= 0);
  close(fd);
  write_file(path, data, n);
}

static char *read_all(const char *path) {
  FILE *f = fopen(path, "rb");
  if (!f)
    fail_msg("cannot open %s", path);
  assert_int_equal(fseek(f, 0, SEEK_END), 0);
  long n = ftell(f);
  assert_true(n >= 0);
  rewind(f);
  char *buf = malloc((size_t)n + 1);
  assert_non_null(buf);
  assert_int_equal(fread(buf, 1, (size_t)n, f), (size_t)n);
  buf[n] = '\0';
  fclose(f);
  return buf;
}

static const char minimal[] = "[listen a]\nunix = /tmp/a.sock\n";

/* ------------------------------------------------------------------ */

static void test_defaults(void **state) {
  (void)state;
  jrpcd_config_t c;
  load_ok(&c, minimal);
  assert_string_equal(c.file, "t.conf");
  assert_int_equal(c.workers, cpu_workers());
  assert_string_equal(c.parser, "auto");
  /* JRPCD_PLUGIN_DIR depends on the install prefix. */
  assert_int_equal(c.plugin_dir[0], '/');
  size_t dn = strlen(c.plugin_dir);
  assert_true(dn > 15);
  assert_string_equal(c.plugin_dir + dn - 15, "/jrpcd/handlers");
  assert_int_equal(c.log_level, JRPC_LOG_INFO);
  assert_int_equal(c.strict_plugins, 1);
  assert_int_equal(c.max_frame_bytes, 1048576);
  assert_int_equal(c.max_batch, 1000);
  assert_int_equal(c.max_response_bytes, 16777216);
  assert_int_equal(c.max_connections, 4096);
  assert_int_equal(c.idle_timeout_ms, 60000);
  assert_int_equal(c.frame_timeout_ms, 10000);
  assert_int_equal(c.shutdown_timeout_ms, 5000);
  assert_int_equal(c.output_high_water, 1048576);
  assert_int_equal(c.max_pending_calls, 1024);
  assert_int_equal(c.max_pending_calls_total, 65536);
  assert_int_equal(c.early_reply_frames, 32);
  assert_int_equal(c.parser_auto_threshold, JRPCD_AUTO_MEASURED);

  assert_int_equal(c.nlistens, 1);
  const jrpcd_listen_conf_t *l = &c.listens[0];
  assert_string_equal(l->name, "a");
  assert_int_equal(l->line, 1);
  assert_int_equal(l->kind, JRPCD_LISTEN_UNIX);
  assert_string_equal(l->path, "/tmp/a.sock");
  assert_int_equal(l->mode, 0660);
  assert_null(l->owner);
  assert_null(l->group);
  assert_null(l->host);
  assert_int_equal(l->port, 0);
  assert_int_equal(l->framing, JRPC_FRAMING_NEWLINE);
  assert_int_equal(c.nplugins, 0);
  assert_null(c.plugins);
  jrpcd_config_free(&c);
  assert_zeroed(&c);
}

static void test_every_key(void **state) {
  (void)state;
  jrpcd_config_t c;
  load_ok(&c, "[server]\n"
              "workers = 7\n"
              "parser = simdjson\n"
              "plugin_dir = @DIR@\n"
              "log_level = debug\n"
              "strict_plugins = no\n"
              "max_frame_bytes = 2147483647\n"
              "max_batch = 1000000\n"
              "max_response_bytes = 4294967295\n"
              "max_connections = 12\n"
              "idle_timeout_ms = 0\n"
              "shutdown_timeout_ms = 4294967295\n"
              "output_high_water = 1099511627776\n"
              "max_pending_calls = 1000000\n"
              "max_pending_calls_total = 100000000\n"
              "early_reply_frames = 0\n"
              "parser_auto_threshold = 300\n"
              "\n"
              "[listen sock]\n"
              "unix = /run/x/y.sock\n"
              "mode = 0600\n"
              "owner = www-data\n"
              "group = 33\n"
              "framing = length\n"
              "\n"
              "[listen net]\n"
              "tcp = 0.0.0.0:65535\n"
              "framing = newline\n"
              "\n"
              "[plugin m]\n"
              "path = math.so\n");
  assert_int_equal(c.workers, 7);
  assert_string_equal(c.parser, "simdjson");
  assert_string_equal(c.plugin_dir, plugdir);
  assert_int_equal(c.log_level, JRPC_LOG_DEBUG);
  assert_int_equal(c.strict_plugins, 0);
  assert_int_equal(c.max_frame_bytes, 2147483647u);
  assert_int_equal(c.max_batch, 1000000);
  assert_int_equal(c.max_response_bytes, UINT64_C(4294967295));
  assert_int_equal(c.max_connections, 12);
  assert_int_equal(c.idle_timeout_ms, 0);
  assert_int_equal(c.shutdown_timeout_ms, 4294967295u);
  assert_int_equal(c.output_high_water, UINT64_C(1) << 40);
  assert_int_equal(c.max_pending_calls, 1000000);
  assert_int_equal(c.early_reply_frames, 0);
  assert_int_equal(c.max_pending_calls_total, 100000000);
  assert_int_equal(c.parser_auto_threshold, 300);

  assert_int_equal(c.nlistens, 2);
  const jrpcd_listen_conf_t *u = &c.listens[0], *t = &c.listens[1];
  assert_string_equal(u->name, "sock");
  assert_int_equal(u->line, 19);
  assert_int_equal(u->kind, JRPCD_LISTEN_UNIX);
  assert_string_equal(u->path, "/run/x/y.sock");
  assert_int_equal(u->mode, 0600);
  assert_string_equal(u->owner, "www-data");
  assert_string_equal(u->group, "33");
  assert_int_equal(u->framing, JRPC_FRAMING_LENGTH);
  assert_null(u->host);

  assert_string_equal(t->name, "net");
  assert_int_equal(t->line, 26);
  assert_int_equal(t->kind, JRPCD_LISTEN_TCP);
  assert_string_equal(t->host, "0.0.0.0");
  assert_int_equal(t->port, 65535);
  assert_int_equal(t->framing, JRPC_FRAMING_NEWLINE);
  assert_null(t->path);
  assert_null(t->owner);
  assert_null(t->group);

  assert_int_equal(c.nplugins, 1);
  assert_string_equal(c.plugins[0].name, "m");
  assert_int_equal(c.plugins[0].line, 30);
  jrpcd_config_free(&c);

  /* The other spellings of the words. */
  load_ok(&c, "[server]\nparser = JSMN\nlog_level = Error\n"
              "[listen a]\nunix = /a\nframing = LENGTH\n");
  assert_string_equal(c.parser, "jsmn");
  assert_int_equal(c.log_level, JRPC_LOG_ERROR);
  assert_int_equal(c.listens[0].framing, JRPC_FRAMING_LENGTH);
  jrpcd_config_free(&c);
  load_ok(&c, "[server]\nlog_level = warn\nparser = auto\n[listen a]\n"
              "unix = /a\nmode = 0\n");
  assert_int_equal(c.log_level, JRPC_LOG_WARN);
  assert_int_equal(c.listens[0].mode, 0);
  jrpcd_config_free(&c);
  load_ok(&c, "[listen a]\nunix = /a\nmode = 777\n");
  assert_int_equal(c.listens[0].mode, 0777);
  jrpcd_config_free(&c);
}

static void test_booleans(void **state) {
  (void)state;
  static const struct {
    const char *word;
    int value;
  } words[] = {
      {"yes", 1}, {"no", 0}, {"true", 1}, {"false", 0}, {"on", 1},
      {"off", 0}, {"1", 1},  {"0", 0},    {"YES", 1},   {"False", 0},
  };
  for (size_t i = 0; i < sizeof words / sizeof words[0]; i++) {
    char text[128];
    snprintf(text, sizeof text, "[server]\nstrict_plugins = %s\n%s",
             words[i].word, minimal);
    jrpcd_config_t c;
    load_ok(&c, text);
    if (c.strict_plugins != words[i].value)
      fail_msg("strict_plugins = %s gave %d", words[i].word, c.strict_plugins);
    jrpcd_config_free(&c);
  }
}

/* rpc.stats per listener: on for unix and off for tcp unless set; the
 * yes/no it took as a boolean still read, full only where written. */
static void test_listener_stats(void **state) {
  (void)state;
  jrpcd_config_t c;
  load_ok(&c, "[listen u]\nunix = /a\n[listen t]\ntcp = 127.0.0.1:1\n");
  assert_int_equal(c.listens[0].stats, 1);
  assert_int_equal(c.listens[1].stats, 0);
  jrpcd_config_free(&c);
  load_ok(&c, "[listen u]\nstats = no\nunix = /a\n"
              "[listen t]\ntcp = 127.0.0.1:1\nstats = on\n");
  assert_int_equal(c.listens[0].stats, JRPCD_STATS_OFF);
  assert_int_equal(c.listens[1].stats, JRPCD_STATS_LISTENER);
  jrpcd_config_free(&c);
  load_ok(&c, "[listen u]\nstats = full\nunix = /a\n"
              "[listen t]\ntcp = 127.0.0.1:1\nstats = listener\n");
  assert_int_equal(c.listens[0].stats, JRPCD_STATS_FULL);
  assert_int_equal(c.listens[1].stats, JRPCD_STATS_LISTENER);
  jrpcd_config_free(&c);
  expect_error("[listen u]\nunix = /a\nstats = sometimes\n", 3,
               "[listen u] stats: ",
               "\"sometimes\" is not a stats level (off, listener, full");
  expect_error("[listen u]\nunix = /a\nstats = yes\nstats = no\n", 4,
               "[listen u] stats: ", "twice");
}

static void test_workers(void **state) {
  (void)state;
  jrpcd_config_t c;
  load_ok(&c, "[server]\nworkers = 0\n[listen a]\nunix = /a\n");
  assert_int_equal(c.workers, cpu_workers());
  assert_true(c.workers >= 1);
  jrpcd_config_free(&c);
  load_ok(&c, "[server]\nworkers = 256\n[listen a]\nunix = /a\n");
  assert_int_equal(c.workers, 256);
  jrpcd_config_free(&c);
  load_ok(&c, "[server]\nworkers = 1\n[listen a]\nunix = /a\n");
  assert_int_equal(c.workers, 1);
  jrpcd_config_free(&c);
  expect_error("[server]\nworkers = 257\n[listen a]\nunix = /a\n", 2,
               "[server] workers: \"257\" is out of range (0 .. 256)", NULL);
}

static void test_bounds(void **state) {
  (void)state;
  static const struct {
    const char *key, *value;
    int ok;
  } cases[] = {
      {"max_frame_bytes", "64", 1},
      {"max_frame_bytes", "63", 0},
      {"max_frame_bytes", "2147483648", 0},
      {"max_batch", "1", 1},
      {"max_batch", "0", 0},
      {"max_batch", "1000001", 0},
      {"max_response_bytes", "64", 1},
      {"max_response_bytes", "63", 0},
      {"max_response_bytes", "4294967296", 0},
      {"max_connections", "1", 1},
      {"max_connections", "1000000", 1},
      {"max_connections", "0", 0},
      {"max_connections", "1000001", 0},
      {"idle_timeout_ms", "4294967295", 1},
      {"idle_timeout_ms", "4294967296", 0},
      {"frame_timeout_ms", "0", 1},
      {"frame_timeout_ms", "4294967295", 1},
      {"frame_timeout_ms", "4294967296", 0},
      {"shutdown_timeout_ms", "0", 1},
      {"shutdown_timeout_ms", "4294967296", 0},
      {"max_pending_calls", "1", 1},
      {"max_pending_calls_total", "0", 0},
      {"parser_auto_threshold", "0", 1},
      {"parser_auto_threshold", "2147483647", 1},
      {"parser_auto_threshold", "2147483648", 0},
      {"parser_auto_threshold", "-1", 0},
      {"max_pending_calls_total", "100000001", 0},
      {"max_pending_calls", "0", 0},
      {"max_pending_calls", "1000001", 0},
      {"output_high_water", "4096", 1},
      {"output_high_water", "4095", 0},
      {"output_high_water", "1099511627777", 0},
      {"output_high_water", "18446744073709551615", 0},
      {"output_high_water", "18446744073709551616", 0},
      {"output_high_water", "99999999999999999999999999", 0},
      {"max_batch", "007", 1},
  };
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
    char text[256];
    snprintf(text, sizeof text, "[listen a]\nunix = /a\n[server]\n%s = %s\n",
             cases[i].key, cases[i].value);
    jrpcd_config_t c;
    err[0] = '\0';
    int rc = load(&c, text);
    if (cases[i].ok) {
      if (rc != 0)
        fail_msg("%s = %s: %s", cases[i].key, cases[i].value, err);
      jrpcd_config_free(&c);
      continue;
    }
    char want[128];
    snprintf(want, sizeof want, "t.conf:4: [server] %s: \"%s\" is out of range",
             cases[i].key, cases[i].value);
    if (rc != -1 || strncmp(err, want, strlen(want)) != 0)
      fail_msg("%s = %s: rc %d, \"%s\"", cases[i].key, cases[i].value, rc, err);
    assert_zeroed(&c);
  }
}

static void test_section_order(void **state) {
  (void)state;
  jrpcd_config_t c;
  load_ok(&c, "[plugin p1]\n"          /* 1 */
              "path = math.so\n"       /* 2 */
              "[listen l1]\n"          /* 3 */
              "unix = /l1\n"           /* 4 */
              "[plugin p2]\n"          /* 5 */
              "path = echo.so\n"       /* 6 */
              "[listen l2]\n"          /* 7 */
              "tcp = 127.0.0.1:1\n"    /* 8 */
              "[listen l3]\n"          /* 9 */
              "unix = /l3\n"           /* 10 */
              "[plugin p3]\n"          /* 11 */
              "path = sleep.so\n"      /* 12 */
              "[server]\n"             /* 13 */
              "plugin_dir = @DIR@\n"); /* 14 */
  assert_int_equal(c.nlistens, 3);
  assert_string_equal(c.listens[0].name, "l1");
  assert_int_equal(c.listens[0].line, 3);
  assert_string_equal(c.listens[0].path, "/l1");
  assert_string_equal(c.listens[1].name, "l2");
  assert_int_equal(c.listens[1].line, 7);
  assert_int_equal(c.listens[1].kind, JRPCD_LISTEN_TCP);
  assert_int_equal(c.listens[1].port, 1);
  assert_string_equal(c.listens[2].name, "l3");
  assert_int_equal(c.listens[2].line, 9);
  assert_int_equal(c.nplugins, 3);
  const char *names[] = {"p1", "p2", "p3"};
  const int lines[] = {1, 5, 11};
  for (size_t i = 0; i < 3; i++) {
    char want[128];
    snprintf(want, sizeof want, "%s/%s", plugdir, fake_plugins[i]);
    assert_string_equal(c.plugins[i].name, names[i]);
    assert_int_equal(c.plugins[i].line, lines[i]);
    assert_string_equal(c.plugins[i].path, want);
  }
  jrpcd_config_free(&c);
}

static void test_plugin_kv(void **state) {
  (void)state;
  jrpcd_config_t c;
  load_ok(&c, "[server]\nplugin_dir = @DIR@\n"
              "[listen a]\nunix = /a\n"
              "[plugin m]\n"
              "zeta = 1\n"
              "path = math.so\n"
              "alpha = two words here  ; a comment\n"
              "empty =\n"
              "Path = not the path: keys are case-sensitive\n"
              "[plugin e]\n"
              "path = echo.so\n");
  assert_int_equal(c.nplugins, 2);
  const jrpcd_plugin_conf_t *m = &c.plugins[0];
  assert_int_equal(m->nkv, 4);
  assert_non_null(m->kv);
  assert_string_equal(m->kv[0], "zeta");
  assert_string_equal(m->kv[1], "1");
  assert_string_equal(m->kv[2], "alpha");
  assert_string_equal(m->kv[3], "two words here");
  assert_string_equal(m->kv[4], "empty");
  assert_string_equal(m->kv[5], "");
  assert_string_equal(m->kv[6], "Path");
  assert_string_equal(m->kv[7], "not the path: keys are case-sensitive");
  assert_null(m->kv[8]);
  /* No keys: still a list, empty. */
  const jrpcd_plugin_conf_t *e = &c.plugins[1];
  assert_int_equal(e->nkv, 0);
  assert_non_null(e->kv);
  assert_null(e->kv[0]);
  jrpcd_config_free(&c);
}

static void test_plugin_paths(void **state) {
  (void)state;
  char abs[128], want[128];
  snprintf(abs, sizeof abs, "%s/echo.so", plugdir);
  jrpcd_config_t c;
  /* plugin_dir with a trailing slash gets no second one; an absolute path
   * ignores plugin_dir, which here does not even exist. */
  load_ok(&c, "[listen a]\nunix = /a\n"
              "[plugin rel]\npath = math.so\n"
              "[plugin abs]\npath = @DIR@/echo.so\n"
              "[server]\nplugin_dir = @DIR@/\n");
  snprintf(want, sizeof want, "%s/math.so", plugdir);
  assert_string_equal(c.plugins[0].path, want);
  assert_string_equal(c.plugins[1].path, abs);
  jrpcd_config_free(&c);

  load_ok(&c, "[server]\nplugin_dir = /nonexistent/dir\n"
              "[listen a]\nunix = /a\n"
              "[plugin abs]\npath = @DIR@/echo.so\n");
  assert_string_equal(c.plugins[0].path, abs);
  jrpcd_config_free(&c);

  /* Resolved against the right directory, then checked. */
  char text[256], expected[256];
  snprintf(text, sizeof text,
           "[listen a]\nunix = /a\n[plugin math]\npath = nope.so\n"
           "[server]\nplugin_dir = %s\n",
           plugdir);
  snprintf(expected, sizeof expected,
           "t.conf:4: [plugin math] path: %s/nope.so: No such file or "
           "directory",
           plugdir);
  memset(&c, 0x5A, sizeof c);
  assert_int_equal(load(&c, text), -1);
  assert_string_equal(err, expected);
  assert_zeroed(&c);

  /* A relative path under the default directory, which has no such file. */
  memset(&c, 0x5A, sizeof c);
  assert_int_equal(
      load(&c, "[listen a]\nunix = /a\n[plugin m]\npath = nope-xyz.so\n"), -1);
  assert_non_null(strstr(err, "t.conf:4: [plugin m] path: /"));
  assert_non_null(strstr(err, "/jrpcd/handlers/nope-xyz.so: No such file"));
  assert_zeroed(&c);

  expect_error("[listen a]\nunix = /a\n[plugin m]\n\npath = /no/such.so\n", 5,
               "[plugin m] path: /no/such.so: No such file or directory", NULL);
  /* The first missing plugin in file order is reported. */
  expect_error("[server]\nplugin_dir = @DIR@\n[listen a]\nunix = /a\n"
               "[plugin ok]\npath = math.so\n"
               "[plugin bad1]\npath = x.so\n"
               "[plugin bad2]\npath = y.so\n",
               8, "[plugin bad1] path: ", "/x.so");
}

static void test_tcp(void **state) {
  (void)state;
  static const struct {
    const char *value, *host;
    unsigned port;
  } good[] = {
      {"127.0.0.1:7400", "127.0.0.1", 7400},
      {"[::1]:7400", "::1", 7400},
      {"[::]:1", "::", 1},
      {"0.0.0.0:65535", "0.0.0.0", 65535},
      {"[2001:db8::17]:443", "2001:db8::17", 443},
      {"[::ffff:10.0.0.1]:80", "::ffff:10.0.0.1", 80},
  };
  for (size_t i = 0; i < sizeof good / sizeof good[0]; i++) {
    char text[128];
    snprintf(text, sizeof text, "[listen t]\ntcp = %s\n", good[i].value);
    jrpcd_config_t c;
    load_ok(&c, text);
    assert_int_equal(c.listens[0].kind, JRPCD_LISTEN_TCP);
    assert_string_equal(c.listens[0].host, good[i].host);
    assert_int_equal(c.listens[0].port, good[i].port);
    assert_null(c.listens[0].path);
    jrpcd_config_free(&c);
  }

  static const struct {
    const char *value, *why;
  } bad[] = {
      {"::1:7400", "\"::1\" is not an IPv4 address"},
      {"[::1]7400", "is not ADDRESS:PORT"},
      {"[::1:7400", "is not ADDRESS:PORT"},
      {"7400", "is not ADDRESS:PORT"},
      {"localhost:7400", "\"localhost\" is not an IPv4 address"},
      {"[1.2.3.4]:80", "\"1.2.3.4\" is not an IPv6 address"},
      {"1.2.3:80", "\"1.2.3\" is not an IPv4 address"},
      {":80", "\"\" is not an IPv4 address"},
      {"1.2.3.4:0", "port \"0\""},
      {"1.2.3.4:65536", "port \"65536\""},
      {"1.2.3.4:", "port \"\""},
      {"1.2.3.4:80x", "port \"80x\""},
      {"1.2.3.4:-1", "port \"-1\""},
      {"1.2.3.4:99999999999999999999", "port \"99999999999999999999\""},
      {"", "is not ADDRESS:PORT"},
  };
  for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
    char text[128];
    snprintf(text, sizeof text, "[listen t]\n\ntcp = %s\n", bad[i].value);
    expect_error(text, 3, "[listen t] tcp: ", bad[i].why);
  }
}

static void test_unix_path_length(void **state) {
  (void)state;
  char path[120], text[200];
  memset(path, 'p', sizeof path);
  path[0] = '/';
  path[107] = '\0';
  snprintf(text, sizeof text, "[listen a]\nunix = %s\n", path);
  jrpcd_config_t c;
  load_ok(&c, text);
  assert_int_equal(strlen(c.listens[0].path), 107);
  jrpcd_config_free(&c);

  path[107] = 'p';
  path[108] = '\0';
  snprintf(text, sizeof text, "[listen a]\nunix = %s\n", path);
  expect_error(text, 2, "[listen a] unix: ",
               "is 108 bytes long (a unix socket path holds at most 107)");
}

/* Each error: the line, the section and key, and what is wrong. */
static void test_errors(void **state) {
  (void)state;
  /* Sections. */
  expect_error("[listen a]\nunix = /a\n[bogus]\n", 3,
               "[bogus]: unknown section", NULL);
  expect_error("[listen a]\nunix = /a\n[Server]\n", 3,
               "[Server]: unknown section", NULL);
  expect_error("[server x]\n[listen a]\nunix = /a\n", 1,
               "[server x]: [server] takes no name", NULL);
  expect_error("[listen]\nunix = /a\n", 1, "[listen]: needs a name", NULL);
  expect_error("[listen a]\nunix = /a\n[plugin  ]\n", 3,
               "[plugin]: needs a name", NULL);
  expect_error("[server]\n[listen a]\nunix = /a\n[server]\n", 4,
               "[server]: defined twice (first at line 1)", NULL);
  expect_error("[listen a]\nunix = /a\n[listen b]\nunix = /b\n[listen a]\n", 5,
               "[listen a]: defined twice (first at line 1)", NULL);
  expect_error("[listen a]\nunix = /a\n[plugin p]\npath = math.so\n"
               "[plugin p]\npath = echo.so\n",
               5, "[plugin p]: defined twice (first at line 3)", NULL);
  expect_error("workers = 1\n[listen a]\nunix = /a\n", 1,
               "workers: outside any section", NULL);

  /* Unknown and repeated keys. */
  expect_error("[server]\nworkers = 1\nworker = 2\n", 3,
               "[server] worker: unknown key; did you mean workers? (workers, "
               "parser, plugin_dir, ",
               "output_high_water, max_pending_calls, "
               "max_pending_calls_total, max_push_bytes, push_overflow, "
               "max_subscriptions_per_connection, max_subscriptions, "
               "parser_auto_threshold, "
               "early_reply_frames, frame_timeout_ms, ws_ping_ms, "
               "call_timeout_ms, "
               "thread_pool, max_header_bytes, drain_ms, validate_params, "
               "slow_call_ms, access_log, access_log_format)");
  expect_error("[server]\nWorkers = 2\n", 2, "[server] Workers: unknown key",
               NULL);
  expect_error(
      "[listen a]\nunix = /a\nport = 1\n", 3,
      "[listen a] port: unknown key (unix, tcp, mode, owner, group, "
      "framing, stats, methods, discover, peers, tls_cert, tls_key, "
      "tls_client_ca, tls_min_version, tls_ciphers, verify_depth, "
      "max_handshakes, health, metrics, tokens_file, websocket, origins)",
      NULL);
  expect_error("[server]\nmax_batch = 1\n\nmax_batch = 2\n", 4,
               "[server] max_batch: set twice (first at line 2)", NULL);
  expect_error("[listen a]\nunix = /a\nframing = length\nframing = length\n", 4,
               "[listen a] framing: set twice (first at line 3)", NULL);
  expect_error("[listen a]\nunix = /a\nunix = /b\n", 3,
               "[listen a] unix: set twice (first at line 2)", NULL);
  expect_error("[listen a]\nunix = /a\n[plugin p]\nx = 1\npath = math.so\n"
               "x = 2\n",
               6, "[plugin p] x: set twice (first at line 4)", NULL);
  expect_error("[listen a]\nunix = /a\n[plugin p]\npath = math.so\n"
               "path = echo.so\n",
               5, "[plugin p] path: set twice (first at line 4)", NULL);

  /* Values. */
  expect_error("[server]\nworkers = four\n", 2,
               "[server] workers: \"four\" is not a number (0 .. 256)", NULL);
  expect_error("[server]\nmax_frame_bytes = 100k\n", 2,
               "[server] max_frame_bytes: \"100k\" is not a number "
               "(64 .. 2147483647)",
               NULL);
  expect_error("[server]\nmax_batch = +5\n", 2,
               "max_batch: \"+5\" is not a number", NULL);
  expect_error("[server]\nmax_batch = 1 000\n", 2,
               "max_batch: \"1 000\" is not a number", NULL);
  expect_error("[server]\nmax_batch = 0x10\n", 2,
               "max_batch: \"0x10\" is not a number", NULL);
  expect_error("[server]\nmax_batch =\n", 2, "max_batch: \"\" is not a number",
               NULL);
  expect_error("[server]\nidle_timeout_ms = -1\n", 2,
               "[server] idle_timeout_ms: \"-1\" is out of range "
               "(0 .. 4294967295)",
               NULL);
  expect_error("[server]\nshutdown_timeout_ms = -0\n", 2,
               "shutdown_timeout_ms: \"-0\" is out of range", NULL);
  expect_error("[server]\nmax_batch = -\n", 2,
               "max_batch: \"-\" is not a number", NULL);
  expect_error("[server]\nworkers = 3 # three\n", 2,
               "workers: \"3 # three\" is not a number", NULL);
  expect_error(
      "[server]\nparser = fast\n", 2,
      "[server] parser: \"fast\" is not a parser (native, jsmn, simdjson or "
      "auto)",
      NULL);
  expect_error("[server]\nlog_level = verbose\n", 2,
               "[server] log_level: \"verbose\" is not a log level (error, "
               "warn, info or debug)",
               NULL);
  expect_error("[server]\nstrict_plugins = maybe\n", 2,
               "[server] strict_plugins: \"maybe\" is not yes or no", NULL);
  expect_error("[server]\nplugin_dir =\n", 2, "[server] plugin_dir: is empty",
               NULL);
  expect_error("[listen a]\nunix = /a\nmode = 0999\n", 3,
               "[listen a] mode: \"0999\" is not an octal mode (0 .. 0777)",
               NULL);
  expect_error("[listen a]\nunix = /a\nmode = 01000\n", 3,
               "mode: \"01000\" is not an octal mode", NULL);
  expect_error("[listen a]\nunix = /a\nmode = rw\n", 3,
               "mode: \"rw\" is not an octal mode", NULL);
  expect_error("[listen a]\nunix = /a\nmode =\n", 3,
               "mode: \"\" is not an octal mode", NULL);
  expect_error("[listen a]\nunix =\n", 2, "[listen a] unix: is empty", NULL);
  expect_error("[listen a]\nunix = /a\nowner =\n", 3,
               "[listen a] owner: is empty", NULL);
  expect_error("[listen a]\nunix = /a\ngroup =\n", 3,
               "[listen a] group: is empty", NULL);

  /* The example of the brief, word for word. */
  jrpcd_config_t c;
  memset(&c, 0x11, sizeof c);
  assert_int_equal(load(&c, "[listen tcp]\ntcp = 127.0.0.1:7400\n"
                            "framing = lenght\n"),
                   -1);
  assert_string_equal(
      err, "t.conf:3: [listen tcp] framing: \"lenght\" is not a framing "
           "(newline, length, http or content-length)");
  assert_zeroed(&c);

  /* Whole sections. */
  expect_error("[listen t]\ntcp = 127.0.0.1:1\nmode = 0600\n", 3,
               "[listen t] mode: only for unix sockets (this listener is tcp)",
               NULL);
  expect_error("[listen t]\ngroup = g\nowner = o\ntcp = 127.0.0.1:1\n", 2,
               "[listen t] group: only for unix sockets", NULL);
  expect_error("[listen t]\ntcp = 127.0.0.1:1\nowner = o\n[listen u]\n"
               "unix = /u\n",
               3, "[listen t] owner: only for unix sockets", NULL);
  expect_error("[listen a]\nframing = length\n[listen b]\nunix = /b\n", 1,
               "[listen a]: no unix or tcp key", NULL);
  expect_error("[listen b]\nunix = /b\n[listen a]\n", 3,
               "[listen a]: no unix or tcp key", NULL);
  expect_error("[listen a]\nunix = /a\ntcp = 127.0.0.1:1\n", 3,
               "[listen a] tcp: a listener is unix or tcp, not both (unix is "
               "at line 2)",
               NULL);
  expect_error("[listen a]\ntcp = 127.0.0.1:1\n\nunix = /a\n[server]\n", 4,
               "[listen a] unix: a listener is unix or tcp, not both (tcp is "
               "at line 2)",
               NULL);
  expect_error("[listen a]\nunix = /a\n[plugin m]\nx = 1\n", 3,
               "[plugin m] path: missing (every plugin needs path = FILE.so)",
               NULL);
  expect_error("[plugin m]\n[listen a]\nunix = /a\n", 1,
               "[plugin m] path: missing", NULL);
  expect_error("[listen a]\nunix = /a\n[plugin m]\npath =\n", 4,
               "[plugin m] path: is empty", NULL);

  /* Whole file. */
  expect_error("[server]\nworkers = 1\n", 0,
               "t.conf: no [listen] section: jrpcd would serve nothing", NULL);
  expect_error("", 0, "t.conf: no [listen] section", NULL);
  expect_error("; nothing\n", 0, "t.conf: no [listen] section", NULL);
}

/* Lines inih itself cannot read, and which error wins when several. */
/* Issue 25: a typo gets the key meant; quotes are refused with the value
 * meant; keys of HTTP alone are refused on other framings. */
static void test_operator_traps(void **state) {
  (void)state;
  expect_error("[server]\nmax_bach = 2\n", 2,
               "[server] max_bach: unknown key; did you mean max_batch?", NULL);
  expect_error("[listen a]\nunix = /a\nMetrics = yes\n", 3,
               "did you mean metrics?", NULL);
  expect_error("[listen a]\nunix = /a\ntls_crt = /c\n", 3,
               "did you mean tls_cert?", NULL);
  expect_error("[listen a]\nunix = /a\nbogus = 1\n", 3,
               "[listen a] bogus: unknown key (unix, ", NULL);

  expect_error("[listen a]\nunix = \"/run/x.sock\"\n", 2,
               "[listen a] unix: \"/run/x.sock\" is quoted",
               "write unix = /run/x.sock");
  expect_error("[server]\nlog_level = 'debug'\n", 2,
               "[server] log_level: 'debug' is quoted",
               "write log_level = debug");
  jrpcd_config_t c;
  load_ok(&c, "[server]\nplugin_dir = @DIR@\n[listen a]\nunix = /a\n"
              "[plugin p]\npath = math.so\n"
              "greeting = \"hi\"\n");
  assert_string_equal(c.plugins[0].kv[1], "\"hi\"");
  jrpcd_config_free(&c);

  expect_error("[listen a]\nunix = /a\nmetrics = yes\n", 3,
               "[listen a] metrics: needs framing = http", NULL);
  expect_error("[listen a]\ntcp = 127.0.0.1:1\nframing = length\n"
               "health = on\n",
               4, "[listen a] health: needs framing = http", NULL);
  expect_error("[listen a]\nunix = /a\ntokens_file = /t\n", 3,
               "tokens_file: needs framing = http", NULL);
  /* Off, or the default, is no error. */
  load_ok(&c, "[listen a]\nunix = /a\nmetrics = no\nhealth = off\n"
              "[listen h]\ntcp = 127.0.0.1:1\nframing = http\n"
              "metrics = yes\n");
  assert_int_equal(c.listens[0].metrics, 0);
  assert_int_equal(c.listens[1].metrics, 1);
  jrpcd_config_free(&c);
}

static void test_syntax_errors(void **state) {
  (void)state;
  expect_error("[listen a]\nunix = /a\nnovalue\n", 3,
               "\"novalue\": not a key = value line", NULL);
  expect_error("[listen a\nunix = /a\n", 1,
               "\"[listen a\": not a section header", NULL);
  expect_error("[listen a ;]\nunix = /a\n", 1,
               "\"[listen a ;]\": not a section header", NULL);
  expect_error("[listen a] extra\nunix = /a\n", 1,
               "\"[listen a] extra\": text after the section header", NULL);
  expect_error("[listen a]\nunix = /a\nkey ; = 1\n", 3,
               "\"key ; = 1\": not a key = value line", NULL);
  /* The first error in the file is the one reported, whoever finds it. */
  expect_error("[server]\nbroken\nworkers = x\n[listen a]\nunix = /a\n", 2,
               "\"broken\"", NULL);
  expect_error("[server]\nworkers = x\nbroken\n[listen a]\nunix = /a\n", 2,
               "workers: \"x\"", NULL);
  /* Found at the end of [listen a] (line 4), but about line 1. */
  expect_error("[listen a]\nframing = length\nbroken\n[listen b]\nunix = /b\n",
               1, "[listen a]: no unix or tcp key", NULL);
  expect_error("[listen a]\nunix = /a\n[plugin m]\npath = math.so\nbroken\n", 5,
               "\"broken\"", NULL);

  /* inih reads at most 199 bytes of a line; a longer one is refused rather
   * than cut in two. Indentation does not count. */
  char text[600];
  char value[400];
  memset(value, 'v', sizeof value);
  value[192] = '\0'; /* "k = " + 192 + ... = 196 bytes */
  snprintf(text, sizeof text,
           "[server]\nplugin_dir = @DIR@\n[listen a]\nunix = /a\n"
           "[plugin m]\npath = math.so\n        k = %s\n",
           value);
  jrpcd_config_t c;
  load_ok(&c, text);
  assert_int_equal(strlen(c.plugins[0].kv[1]), 192);
  jrpcd_config_free(&c);
  value[192] = 'v';
  value[300] = '\0';
  snprintf(text, sizeof text,
           "[listen a]\nunix = /a\n[plugin m]\npath = math.so\nk = %s\n"
           "after = 1\n",
           value);
  expect_error(text, 5, "line is too long (at most 199 bytes)", NULL);
}

static void test_layout(void **state) {
  (void)state;
  jrpcd_config_t c;
  /* Indentation, blank lines, comments, ':' for '=', CRLF, a BOM: none of
   * it changes what is read, and an indented key is a key of its own, not
   * a continuation of the value above. */
  load_ok(&c, "\xEF\xBB\xBF; comment\r\n"
              "# comment\r\n"
              "\r\n"
              "  [ server ]   ; trailing comment\r\n"
              "    workers = 3\r\n"
              "\tmax_batch : 7   ; seven\r\n"
              "    parser=jsmn\r\n"
              "   [listen   two words  ]\r\n"
              "      unix = /a;b.sock\r\n"
              "      mode = 0600\r\n");
  assert_int_equal(c.workers, 3);
  assert_int_equal(c.max_batch, 7);
  assert_string_equal(c.parser, "jsmn");
  assert_int_equal(c.nlistens, 1);
  assert_string_equal(c.listens[0].name, "two words");
  assert_int_equal(c.listens[0].line, 8);
  assert_string_equal(c.listens[0].path, "/a;b.sock");
  assert_int_equal(c.listens[0].mode, 0600);
  jrpcd_config_free(&c);

  /* A name longer than inih's 50-byte section buffer survives whole. */
  char text[256], name[80];
  memset(name, 'n', 70);
  name[70] = '\0';
  snprintf(text, sizeof text,
           "[listen %s]\nunix = /a\n[listen %.60s]\n"
           "unix = /b\n",
           name, name);
  load_ok(&c, text);
  assert_int_equal(c.nlistens, 2);
  assert_string_equal(c.listens[0].name, name);
  assert_int_equal(strlen(c.listens[1].name), 60);
  jrpcd_config_free(&c);

  /* Line numbers count after a BOM and CRLF too. */
  expect_error("\xEF\xBB\xBF[server]\r\n\r\nworkers = x\r\n", 3,
               "[server] workers: \"x\"", NULL);
}

static void test_files(void **state) {
  (void)state;
  jrpcd_config_t c;
  memset(&c, 0x77, sizeof c);
  assert_int_equal(
      jrpcd_config_load(&c, "/nonexistent/jrpcd.conf", err, sizeof err), -1);
  assert_string_equal(
      err, "/nonexistent/jrpcd.conf: cannot open: No such file or directory");
  assert_zeroed(&c);

  memset(&c, 0x77, sizeof c);
  assert_int_equal(jrpcd_config_load(&c, "/tmp", err, sizeof err), -1);
  assert_string_equal(err, "/tmp: cannot read: Is a directory");
  assert_zeroed(&c);

  char path[64], want[128];
  const char good[] = "[server]\nworkers = 2\n[listen a]\nunix = /a\n";
  temp_file(path, sizeof path, good, strlen(good));
  assert_int_equal(jrpcd_config_load(&c, path, err, sizeof err), 0);
  assert_string_equal(c.file, path);
  assert_int_equal(c.workers, 2);
  assert_string_equal(c.listens[0].path, "/a");
  jrpcd_config_free(&c);

  /* Messages name the file as given. */
  const char bad[] = "[server]\n\nworkers = 2\nmax_batch = x\n";
  write_file(path, bad, strlen(bad));
  assert_int_equal(jrpcd_config_load(&c, path, err, sizeof err), -1);
  snprintf(want, sizeof want, "%s:4: [server] max_batch: \"x\"", path);
  assert_non_null(strstr(err, want));
  assert_zeroed(&c);

  /* A NUL byte is not text. */
  const char nul[] = "[listen a]\nunix = /a\nmode = 06\00000\n";
  write_file(path, nul, sizeof nul - 1);
  assert_int_equal(jrpcd_config_load(&c, path, err, sizeof err), -1);
  snprintf(want, sizeof want, "%s:3: the line holds a NUL byte", path);
  assert_non_null(strstr(err, want));
  assert_zeroed(&c);

  /* Not a config at all. */
  size_t big = (1u << 20) + 1;
  char *junk = malloc(big);
  assert_non_null(junk);
  memset(junk, '\n', big);
  write_file(path, junk, big);
  free(junk);
  assert_int_equal(jrpcd_config_load(&c, path, err, sizeof err), -1);
  snprintf(want, sizeof want, "%s: larger than 1048576 bytes", path);
  assert_non_null(strstr(err, want));
  assert_zeroed(&c);
  unlink(path);

  /* The name given to load_string, or "(built-in)". */
  assert_int_equal(jrpcd_config_load_string(&c, minimal, NULL, err, sizeof err),
                   0);
  assert_string_equal(c.file, "(built-in)");
  jrpcd_config_free(&c);
  assert_int_equal(jrpcd_config_load_string(&c, "[x]\n", NULL, err, sizeof err),
                   -1);
  assert_string_equal(err, "(built-in):1: [x]: unknown section ([server], "
                           "[listen NAME], [plugin NAME], [access] or "
                           "[cluster])");
}

/* [cluster] (issue 24): read with its defaults; each of its mistakes
 * named with its line; and a build without NATS refuses the section. */
static void test_cluster(void **state) {
  (void)state;
  jrpcd_config_t c;
#ifdef JRPC_HAVE_NATS
  load_ok(&c, "[listen a]\nunix = /a\n");
  assert_int_equal(c.has_cluster, 0);
  assert_null(c.cluster_nats);
  assert_null(c.cluster_subject_prefix);
  jrpcd_config_free(&c);
  load_ok(&c, "[listen a]\nunix = /a\n[cluster]\n"
              "nats = nats://127.0.0.1:4222 tls://b.example:4443\n");
  assert_int_equal(c.has_cluster, 1);
  assert_string_equal(c.cluster_nats[0], "nats://127.0.0.1:4222");
  assert_string_equal(c.cluster_nats[1], "tls://b.example:4443");
  assert_null(c.cluster_nats[2]);
  assert_string_equal(c.cluster_subject_prefix, "jrpcd");
  assert_int_equal(c.cluster_buffer_bytes, 8388608);
  assert_null(c.cluster_nats_creds);
  jrpcd_config_free(&c);
  expect_error("[listen a]\nunix = /a\n[cluster]\nsubject_prefix = x\n", 3,
               "[cluster] nats: missing", NULL);
  expect_error("[listen a]\nunix = /a\n[cluster]\nnats = 127.0.0.1:4222\n", 4,
               "[cluster] nats: \"127.0.0.1:4222\" is not a NATS server URL",
               NULL);
  const char *prefixes[] = {"a.>", "a.*", "a..b", ".a", "a.", "a b"};
  for (size_t i = 0; i < sizeof prefixes / sizeof *prefixes; i++) {
    char text[256];
    snprintf(text, sizeof text,
             "[listen a]\nunix = /a\n[cluster]\nnats = nats://h:1\n"
             "subject_prefix = %s\n",
             prefixes[i]);
    expect_error(text, 5,
                 "[cluster] subject_prefix: ", "is not a subject prefix");
  }
  expect_error("[listen a]\nunix = /a\n[cluster]\nnats = nats://h:1\n"
               "[cluster]\n",
               5, "[cluster]: defined twice (first at line 3)", NULL);
  expect_error("[listen a]\nunix = /a\n[cluster x]\nnats = nats://h:1\n", 3,
               "[cluster x]: [cluster] takes no name", NULL);
  expect_error("[listen a]\nunix = /a\n[cluster]\nnats = nats://h:1\n"
               "cluster_buffer_bytes = 10\n",
               5, "[cluster] cluster_buffer_bytes: ", "out of range");
#else
  (void)c;
  expect_error("[listen a]\nunix = /a\n[cluster]\nnats = nats://h:1\n", 3,
               "[cluster]: this jrpcd was built without NATS", NULL);
#endif
}

static void test_err_buffer(void **state) {
  (void)state;
  jrpcd_config_t c;
  /* No buffer at all. */
  assert_int_equal(jrpcd_config_load_string(&c, "[x]\n", "t.conf", NULL, 0),
                   -1);
  assert_zeroed(&c);
  assert_int_equal(jrpcd_config_load(&c, "/nonexistent", NULL, 0), -1);
  /* A short one: cut, still a string. */
  char small[10];
  memset(small, 'X', sizeof small);
  assert_int_equal(
      jrpcd_config_load_string(&c, "[x]\n", "t.conf", small, sizeof small), -1);
  assert_string_equal(small, "t.conf:1:");
  memset(small, 'X', sizeof small);
  assert_int_equal(jrpcd_config_load_string(&c, "[server]\nworkers = x\n",
                                            "t.conf", small, sizeof small),
                   -1);
  assert_string_equal(small, "t.conf:2:");
}

static void test_free_twice(void **state) {
  (void)state;
  jrpcd_config_t c;
  memset(&c, 0, sizeof c);
  jrpcd_config_free(&c);
  jrpcd_config_free(NULL);
  load_ok(&c, "[server]\nplugin_dir = @DIR@\n[listen a]\nunix = /a\n"
              "owner = o\ngroup = g\n[listen b]\ntcp = [::1]:7400\n"
              "[plugin m]\npath = math.so\nk = v\n");
  jrpcd_config_free(&c);
  assert_zeroed(&c);
  jrpcd_config_free(&c);
  assert_zeroed(&c);
}

static void test_log_level_parse(void **state) {
  (void)state;
  assert_int_equal(jrpcd_log_level_parse("error"), JRPC_LOG_ERROR);
  assert_int_equal(jrpcd_log_level_parse("warn"), JRPC_LOG_WARN);
  assert_int_equal(jrpcd_log_level_parse("info"), JRPC_LOG_INFO);
  assert_int_equal(jrpcd_log_level_parse("debug"), JRPC_LOG_DEBUG);
  assert_int_equal(jrpcd_log_level_parse("DEBUG"), JRPC_LOG_DEBUG);
  assert_int_equal(jrpcd_log_level_parse("trace"), -1);
  assert_int_equal(jrpcd_log_level_parse("inf"), -1);
  assert_int_equal(jrpcd_log_level_parse(""), -1);
  assert_int_equal(jrpcd_log_level_parse(NULL), -1);
}

/* conf/jrpcd.conf reads, and its values are the defaults. Its plugins are
 * pointed at the stand-ins by setting the plugin_dir it leaves commented
 * out. */
static void test_sample_conf(void **state) {
  (void)state;
  char *text = read_all(JRPC_TESTS_DIR "/../conf/jrpcd.conf");
  const char *knob = ";plugin_dir = /usr/lib/jrpcd/handlers\n";
  char *at = strstr(text, knob);
  if (!at)
    fail_msg("conf/jrpcd.conf has no \"%s\" line", ";plugin_dir = ...");
  char *edited = malloc(strlen(text) + strlen(plugdir) + 32);
  assert_non_null(edited);
  sprintf(edited, "%.*splugin_dir = %s\n%s", (int)(at - text), text, plugdir,
          at + strlen(knob));
  char path[64];
  temp_file(path, sizeof path, edited, strlen(edited));

  jrpcd_config_t c, d;
  if (jrpcd_config_load(&c, path, err, sizeof err) != 0)
    fail_msg("conf/jrpcd.conf: %s", err);
  unlink(path);
  load_ok(&d, minimal);
  assert_int_equal(c.workers, d.workers);
  assert_string_equal(c.parser, d.parser);
  assert_string_equal(c.plugin_dir, plugdir);
  assert_int_equal(c.log_level, d.log_level);
  assert_int_equal(c.strict_plugins, d.strict_plugins);
  assert_int_equal(c.max_frame_bytes, d.max_frame_bytes);
  assert_int_equal(c.max_batch, d.max_batch);
  assert_int_equal(c.max_response_bytes, d.max_response_bytes);
  assert_int_equal(c.max_connections, d.max_connections);
  assert_int_equal(c.idle_timeout_ms, d.idle_timeout_ms);
  assert_int_equal(c.frame_timeout_ms, d.frame_timeout_ms);
  assert_int_equal(c.shutdown_timeout_ms, d.shutdown_timeout_ms);
  assert_int_equal(c.output_high_water, d.output_high_water);
  assert_int_equal(c.max_pending_calls, d.max_pending_calls);
  assert_int_equal(c.max_pending_calls_total, d.max_pending_calls_total);
  assert_int_equal(c.parser_auto_threshold, d.parser_auto_threshold);
  /* And every other key of [server] the table has, as it grows. */
  for (size_t i = 0; i < jrpcd_nkeys; i++) {
    const jrpcd_key_t *k = &jrpcd_keys[i];
    char x[512], y[512];
    if (k->section != JRPCD_SEC_SERVER || strcmp(k->name, "plugin_dir") == 0)
      continue;
    jrpcd_key_format(k, &c, x, sizeof x);
    jrpcd_key_format(k, &d, y, sizeof y);
    if (strcmp(x, y) != 0)
      fail_msg("conf/jrpcd.conf: %s = %s, default %s", k->name, x, y);
  }
  jrpcd_config_free(&d);

  assert_int_equal(c.nlistens, 3);
  assert_string_equal(c.listens[0].name, "local");
  assert_int_equal(c.listens[0].kind, JRPCD_LISTEN_UNIX);
  assert_string_equal(c.listens[0].path, "/run/jrpcd/jrpcd.sock");
  assert_int_equal(c.listens[0].mode, 0660);
  assert_null(c.listens[0].owner);
  assert_null(c.listens[0].group);
  assert_int_equal(c.listens[0].framing, JRPC_FRAMING_NEWLINE);
  assert_string_equal(c.listens[1].name, "tcp");
  assert_int_equal(c.listens[1].kind, JRPCD_LISTEN_TCP);
  assert_string_equal(c.listens[1].host, "127.0.0.1");
  assert_int_equal(c.listens[1].port, 7400);
  /* 7400 speaks newline framing, as in the built-in config and the README;
   * the length-framed listener has 7401. */
  assert_int_equal(c.listens[1].framing, JRPC_FRAMING_NEWLINE);
  assert_string_equal(c.listens[2].name, "tcp-length");
  assert_int_equal(c.listens[2].port, 7401);
  assert_int_equal(c.listens[2].framing, JRPC_FRAMING_LENGTH);

  assert_int_equal(c.nplugins, 4);
  const char *names[] = {"math", "echo", "sleep", "kv"};
  for (size_t i = 0; i < 4; i++) {
    char want[128];
    snprintf(want, sizeof want, "%s/%s", plugdir, fake_plugins[i]);
    assert_string_equal(c.plugins[i].name, names[i]);
    assert_string_equal(c.plugins[i].path, want);
  }
  /* The sample shows a plugin key being passed on. */
  assert_int_equal(c.plugins[0].nkv, 0);
  assert_int_equal(c.plugins[1].nkv, 0);
  assert_int_equal(c.plugins[2].nkv, 1);
  assert_string_equal(c.plugins[2].kv[0], "max_ms");
  assert_string_equal(c.plugins[2].kv[1], "60000");
  assert_int_equal(c.plugins[3].nkv, 2);
  assert_string_equal(c.plugins[3].kv[0], "max_keys");
  assert_string_equal(c.plugins[3].kv[2], "max_value_bytes");
  assert_null(c.plugins[2].kv[2]);
  jrpcd_config_free(&c);
  free(edited);
  free(text);
}

/* The tls_ keys: tcp only, tls_cert and tls_key together, cert: and san:
 * peers only where TLS is; a build without TLS refuses every one. The
 * files themselves are read when the generation loads (tests/cli/tls.sh). */
static void test_tls_keys(void **state) {
  (void)state;
#ifdef JRPC_HAVE_TLS
  jrpcd_config_t c;
  load_ok(&c, "[listen s]\ntcp = 127.0.0.1:1\ntls_cert = /c.pem\n"
              "tls_key = /k.pem\ntls_client_ca = /ca.pem\n"
              "tls_ciphers = HIGH\npeers = cert:alice san:b.example\n"
              "[listen p]\ntcp = 127.0.0.1:2\n");
  assert_string_equal(c.listens[0].tls_cert, "/c.pem");
  assert_string_equal(c.listens[0].tls_key, "/k.pem");
  assert_string_equal(c.listens[0].tls_client_ca, "/ca.pem");
  assert_string_equal(c.listens[0].tls_ciphers, "HIGH");
  assert_null(c.listens[0].tls_min_version); /* 1.2 */
  assert_null(c.listens[1].tls_cert);
  jrpcd_config_free(&c);
  expect_error("[listen s]\ntcp = 127.0.0.1:1\ntls_cert = /c.pem\n", 3,
               "tls_cert: TLS needs both tls_cert and tls_key",
               "tls_key is not set");
  expect_error("[listen s]\ntcp = 127.0.0.1:1\ntls_key = /k.pem\n", 3,
               "tls_key: TLS needs both", "tls_cert is not set");
  expect_error("[listen s]\ntcp = 127.0.0.1:1\ntls_min_version = 1.3\n", 3,
               "TLS needs both", NULL);
  expect_error("[listen s]\ntcp = 127.0.0.1:1\ntls_cert = /c\ntls_key = "
               "/k\ntls_min_version = 1.1\n",
               5, "tls_min_version", "\"1.1\"");
  expect_error("[listen s]\nunix = /x.sock\ntls_cert = /c\ntls_key = /k\n", 3,
               "tls_cert: only for tcp listeners", NULL);
  expect_error("[listen s]\ntcp = 127.0.0.1:1\npeers = san:b.example\n", 3,
               "a certificate name needs a TLS listener", NULL);
#else
  expect_error("[listen s]\ntcp = 127.0.0.1:1\ntls_ciphers = HIGH\n"
               "tls_cert = /c.pem\n",
               3, "tls_ciphers: needs a build with TLS (-DJRPC_TLS=ON)", NULL);
#endif
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_defaults),
      cmocka_unit_test(test_every_key),
      cmocka_unit_test(test_booleans),
      cmocka_unit_test(test_workers),
      cmocka_unit_test(test_bounds),
      cmocka_unit_test(test_section_order),
      cmocka_unit_test(test_plugin_kv),
      cmocka_unit_test(test_plugin_paths),
      cmocka_unit_test(test_tcp),
      cmocka_unit_test(test_listener_stats),
      cmocka_unit_test(test_unix_path_length),
      cmocka_unit_test(test_errors),
      cmocka_unit_test(test_syntax_errors),
      cmocka_unit_test(test_operator_traps),
      cmocka_unit_test(test_layout),
      cmocka_unit_test(test_files),
      cmocka_unit_test(test_cluster),
      cmocka_unit_test(test_err_buffer),
      cmocka_unit_test(test_free_twice),
      cmocka_unit_test(test_log_level_parse),
      cmocka_unit_test(test_sample_conf),
      cmocka_unit_test(test_tls_keys),
  };
  return cmocka_run_group_tests(tests, make_plugdir, remove_plugdir);
}
