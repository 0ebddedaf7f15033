/* adv.c - see adv.h. */
#include "adv.h"

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>

#include <cmocka.h>

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include "testutil.h"

/* How long the daemon gets to come back to its baseline after a scenario
 * (liveness bounds, not speed), and the quiet window over which it must
 * not burn CPU: a spinning loop uses all of it, an idle one nothing. */
#define SETTLE_MS 15000
#define FRESH_REPLY_MS 1000
#define QUIET_MS 300
#define QUIET_CPU_PERCENT 25

/* A cut log keeps its head: where a runaway daemon started. */
#define LOG_KEEP_BYTES (64u << 10)

#define RAW_MAX 4096
static int raw_fds[RAW_MAX];
static size_t raw_n;

uint32_t adv_rand(uint32_t *seed) {
  /* xorshift32: fixed seeds give the same garbage on every run. */
  uint32_t x = *seed ? *seed : 1;
  x ^= x << 13;
  x ^= x >> 17;
  x ^= x << 5;
  return *seed = x;
}

static void raise_own_nofile(void) {
  struct rlimit rl;
  if (getrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_cur < rl.rlim_max) {
    rl.rlim_cur = rl.rlim_max;
    setrlimit(RLIMIT_NOFILE, &rl);
  }
}

/* ---- replies ---- */

int adv_reply_code(const char *p, size_t n) {
  tu_json_t *j = tu_json_parse(p, n);
  if (!j)
    fail_msg("reply is not JSON: %.*s", (int)(n > 300 ? 300 : n), p);
  int code = 0;
  const tu_json_t *e = tu_json_get(j, "error");
  if (e) {
    const tu_json_t *c = tu_json_get(e, "code");
    code = c && c->type == TU_J_NUMBER ? atoi(c->s) : -1;
  }
  tu_json_free(j);
  return code;
}

long long adv_reply_id(const char *p, size_t n) {
  tu_json_t *j = tu_json_parse(p, n);
  if (!j)
    fail_msg("reply is not JSON: %.*s", (int)(n > 300 ? 300 : n), p);
  const tu_json_t *id = tu_json_get(j, "id");
  long long v = -2;
  if (id && id->type == TU_J_NULL)
    v = -1;
  else if (id && id->type == TU_J_NUMBER && !strpbrk(id->s, ".eE-"))
    v = atoll(id->s);
  tu_json_free(j);
  return v;
}

/* ---- raw sockets ---- */

int adv_dial(const e2e_daemon_t *d, e2e_ep_t ep) {
  int fd;
  if (e2e_dial(d, ep, SOCK_NONBLOCK, &fd) != 0 && errno != EINPROGRESS) {
    int e = errno;
    close(fd);
    if (e == EAGAIN)
      return -1;
    fail_msg("connect %s: %s", e2e_ep_name(ep), strerror(e));
  }
  if (raw_n == RAW_MAX) {
    close(fd);
    fail_msg("more than %d raw sockets", RAW_MAX);
  }
  raw_fds[raw_n++] = fd;
  return fd;
}

void adv_hangup(int fd, int rst) {
  for (size_t i = 0; i < raw_n; i++)
    if (raw_fds[i] == fd) {
      raw_fds[i] = raw_fds[--raw_n];
      break;
    }
  if (rst) {
    struct linger lg = {1, 0};
    setsockopt(fd, SOL_SOCKET, SO_LINGER, &lg, sizeof(lg));
  }
  close(fd);
}

/* ---- the log ---- */

int adv_log_has_line(const e2e_daemon_t *d, const char *a, const char *b) {
  FILE *f = fopen(d->log, "r");
  if (!f)
    return 0;
  char line[4096];
  int found = 0;
  while (!found && fgets(line, sizeof(line), f))
    found = strstr(line, a) && strstr(line, b);
  fclose(f);
  return found;
}

/* ---- the check after every scenario ---- */

static int call_add(e2e_daemon_t *d, e2e_ep_t ep, int ms, char *why,
                    size_t whylen) {
  e2e_conn_t *c = e2e_connect(d, ep);
  e2e_send(c, REQ("math.add", "[20,22]", "\"fresh\""));
  const char *p;
  size_t n;
  int r = e2e_recv(c, &p, &n, ms);
  int ok = r == 1 && e2e_is(p, n, RES("42", "\"fresh\""));
  if (!ok)
    snprintf(why, whylen, "%s", r == 1 ? p : r == 0 ? "closed" : "no reply");
  e2e_close(c);
  return ok;
}

uint64_t adv_stats_conns(e2e_daemon_t *d) {
  e2e_conn_t *c = e2e_connect(d, E2E_UNIX_NL);
  e2e_send(c, "{\"jsonrpc\":\"2.0\",\"method\":\"rpc.stats\",\"id\":0}");
  const char *p;
  size_t n;
  if (e2e_recv(c, &p, &n, E2E_REPLY_MS) != 1)
    fail_msg("rpc.stats: no reply");
  tu_json_t *j = tu_json_parse(p, n);
  const tu_json_t *res = j ? tu_json_get(j, "result") : NULL;
  const tu_json_t *k = res ? tu_json_get(res, "connections") : NULL;
  if (!k || k->type != TU_J_NUMBER)
    fail_msg("rpc.stats: no connections in %s", p);
  uint64_t v = strtoull(k->s, NULL, 10);
  tu_json_free(j);
  e2e_close(c);
  return v;
}

static void sanitizer_clean(const e2e_daemon_t *d, const char *scenario) {
  static const char *const reports[] = {
      "ERROR: AddressSanitizer", "ERROR: LeakSanitizer", "runtime error:"};
  for (size_t i = 0; i < sizeof(reports) / sizeof(reports[0]); i++)
    if (e2e_log_count(d, reports[i]) > 0)
      fail_msg("%s: the log has a sanitizer report (%s)", scenario, reports[i]);
}

void adv_start(e2e_daemon_t *d, const e2e_opts_t *o, adv_base_t *b) {
  raise_own_nofile();
  e2e_start(d, o);
  b->conns = adv_stats_conns(d);
  /* The probe's own descriptor is gone once the daemon has seen it close:
   * take the smallest count over a short while. */
  b->fds = e2e_fd_count(d);
  for (int i = 0; i < 20; i++) {
    e2e_sleep_ms(10);
    int n = e2e_fd_count(d);
    if (n < b->fds)
      b->fds = n;
  }
  print_message("baseline: %d descriptors, %llu connection(s)\n", b->fds,
                (unsigned long long)b->conns);
}

void adv_start_with(e2e_daemon_t *d, const char *key, long value,
                    adv_base_t *b) {
  char server[128];
  snprintf(server, sizeof(server), "%s = %ld\n", key, value);
  e2e_opts_t o = {.server = server};
  adv_start(d, &o, b);
}

void adv_check(e2e_daemon_t *d, const adv_base_t *b, const char *scenario) {
  if (e2e_wait_exit(d, 0)) {
    e2e_print_log(d);
    fail_msg("%s: jrpcd is gone (status 0x%x)", scenario, d->status);
  }
  /* Descriptors first: a daemon still closing what a flood left (at its
   * descriptor limit, say) may drop a new client, as libuv does there. */
  uint64_t end = e2e_now_ms() + SETTLE_MS;
  int fds;
  while ((fds = e2e_fd_count(d)) != b->fds) {
    if (e2e_now_ms() > end)
      fail_msg("%s: %d descriptors open, %d at start (after %d ms)", scenario,
               fds, b->fds, SETTLE_MS);
    e2e_sleep_ms(20);
  }
  char why[256];
  for (e2e_ep_t ep = 0; ep < E2E_NEP; ep++)
    if (!call_add(d, ep, FRESH_REPLY_MS, why, sizeof(why)))
      fail_msg("%s: a fresh client on %s got no math.add reply within %d ms "
               "(%s)",
               scenario, e2e_ep_name(ep), FRESH_REPLY_MS, why);
  uint64_t conns;
  while ((conns = adv_stats_conns(d)) != b->conns) {
    if (e2e_now_ms() > end)
      fail_msg("%s: rpc.stats says %llu connections, %llu at start", scenario,
               (unsigned long long)conns, (unsigned long long)b->conns);
    e2e_sleep_ms(20);
  }
  uint64_t t0 = e2e_now_ms(), c0 = e2e_cpu_ms(d);
  e2e_sleep_ms(QUIET_MS);
  uint64_t cpu = e2e_cpu_ms(d) - c0, wall = e2e_now_ms() - t0;
  if (cpu * 100 > wall * QUIET_CPU_PERCENT)
    fail_msg("%s: jrpcd used %llu ms of CPU in %llu quiet ms (spinning)",
             scenario, (unsigned long long)cpu, (unsigned long long)wall);
  sanitizer_clean(d, scenario);
  print_message("%s: ok (%d descriptors, %llu ms CPU in %llu quiet ms)\n",
                scenario, fds, (unsigned long long)cpu,
                (unsigned long long)wall);
}

/* ---- setup and teardown ---- */

void adv_filter_from_env(void) {
  const char *only = getenv("ADV_TESTS"), *skip = getenv("ADV_SKIP");
  if (only && *only)
    cmocka_set_test_filter(only);
  if (skip && *skip)
    cmocka_set_skip_filter(skip);
}

int adv_setup(void **state) {
  return e2e_setup(state);
}

int adv_teardown(void **state) {
  e2e_daemon_t *d = *state;
  while (raw_n > 0)
    adv_hangup(raw_fds[raw_n - 1], 0);
  if (d->pid > 0 && e2e_log_bytes(d) > 4 * LOG_KEEP_BYTES) {
    kill(d->pid, SIGKILL); /* stop the writer before cutting its log */
    waitpid(d->pid, NULL, 0);
    d->pid = 0;
    fprintf(stderr,
            "jrpcd's log ran to %llu bytes; killed it, showing the first "
            "%u bytes\n",
            (unsigned long long)e2e_log_bytes(d), LOG_KEEP_BYTES);
    if (truncate(d->log, LOG_KEEP_BYTES) != 0)
      fprintf(stderr, "truncate %s: %s\n", d->log, strerror(errno));
    e2e_print_log(d);
  }
  return e2e_teardown(state);
}
