/* e2e.c - see e2e.h. */
#include "e2e.h"

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>

#include <cmocka.h>

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "testutil.h"

#ifndef JRPCD_BIN
#error "JRPCD_BIN must name the daemon binary"
#endif
#ifndef JRPC_HANDLERS_DIR
#error "JRPC_HANDLERS_DIR must name the sample plugins' folder"
#endif

#define READ_CHUNK 65536

const char e2e_plugins_default[] = "[plugin math]\npath = math.so\n"
                                   "[plugin echo]\npath = echo.so\n"
                                   "[plugin sleep]\npath = sleep.so\n";

const char *e2e_ep_name(e2e_ep_t ep) {
  static const char *const names[] = {"unix/newline", "unix/length",
                                      "tcp/newline", "tcp/length"};
  return ep < E2E_NEP ? names[ep] : "?";
}

uint64_t e2e_now_ms(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (uint64_t)ts.tv_sec * 1000u + (uint64_t)ts.tv_nsec / 1000000u;
}

void e2e_sleep_ms(int ms) {
  struct timespec ts = {ms / 1000, (long)(ms % 1000) * 1000000L};
  while (nanosleep(&ts, &ts) != 0 && errno == EINTR)
    ;
}

/* ---- files ---- */

static char *slurp(const char *path, size_t *n) {
  FILE *f = fopen(path, "rb");
  *n = 0;
  if (!f)
    return NULL;
  size_t cap = 4096, len = 0;
  char *buf = malloc(cap + 1);
  assert_non_null(buf);
  for (;;) {
    if (len == cap) {
      cap *= 2;
      buf = realloc(buf, cap + 1);
      assert_non_null(buf);
    }
    size_t k = fread(buf + len, 1, cap - len, f);
    if (k == 0)
      break;
    len += k;
  }
  fclose(f);
  buf[len] = '\0';
  *n = len;
  return buf;
}

size_t e2e_log_count(const e2e_daemon_t *d, const char *needle) {
  size_t n, count = 0;
  char *text = slurp(d->log, &n);
  if (!text)
    return 0;
  for (const char *p = text; (p = strstr(p, needle)) != NULL;
       p += strlen(needle))
    count++;
  free(text);
  return count;
}

void e2e_print_log(const e2e_daemon_t *d) {
  size_t n;
  char *text = slurp(d->log, &n);
  fprintf(stderr, "---- jrpcd log (%s) ----\n%s---- end of log ----\n", d->log,
          text ? text : "(unreadable)\n");
  free(text);
}

void e2e_wait_log(const e2e_daemon_t *d, const char *needle, size_t count,
                  int ms) {
  uint64_t end = e2e_now_ms() + (uint64_t)ms;
  while (e2e_log_count(d, needle) < count) {
    if (e2e_now_ms() > end) /* the log is printed by e2e_teardown */
      fail_msg("\"%s\" not logged %zu times within %d ms", needle, count, ms);
    e2e_sleep_ms(5);
  }
}

/* /proc/PID/name of the daemon, NUL-terminated (asserts). */
static char *proc_file(const e2e_daemon_t *d, const char *name) {
  char path[64];
  snprintf(path, sizeof(path), "/proc/%d/%s", (int)d->pid, name);
  size_t n;
  char *text = slurp(path, &n);
  if (!text)
    fail_msg("cannot read %s", path);
  return text;
}

uint64_t e2e_rss_kib(const e2e_daemon_t *d) {
  char *text = proc_file(d, "status");
  const char *p = strstr(text, "VmRSS:");
  assert_non_null(p);
  uint64_t kib = strtoull(p + 6, NULL, 10);
  free(text);
  return kib;
}

int e2e_fd_count(const e2e_daemon_t *d) {
  char path[64];
  snprintf(path, sizeof(path), "/proc/%d/fd", (int)d->pid);
  DIR *dp = opendir(path);
  assert_non_null(dp);
  int n = 0;
  for (struct dirent *de; (de = readdir(dp)) != NULL;)
    n += de->d_name[0] != '.';
  closedir(dp);
  return n;
}

uint64_t e2e_cpu_ms(const e2e_daemon_t *d) {
  char *text = proc_file(d, "stat");
  /* The command name may hold spaces: fields count from its closing ')'.
   * utime and stime are fields 14 and 15, the 12th and 13th after it. */
  const char *p = strrchr(text, ')');
  assert_non_null(p);
  unsigned long long ut = 0, st = 0;
  int got = sscanf(
      p + 2, "%*c %*d %*d %*d %*d %*d %*u %*u %*u %*u %*u %llu %llu", &ut, &st);
  free(text);
  assert_int_equal(got, 2);
  long hz = sysconf(_SC_CLK_TCK);
  return (ut + st) * 1000u / (uint64_t)(hz > 0 ? hz : 100);
}

uint64_t e2e_log_bytes(const e2e_daemon_t *d) {
  struct stat st;
  return stat(d->log, &st) == 0 ? (uint64_t)st.st_size : 0;
}

static void write_file(const char *path, const char *text) {
  char tmp[256];
  snprintf(tmp, sizeof(tmp), "%s.tmp", path);
  FILE *f = fopen(tmp, "w");
  assert_non_null(f);
  assert_int_equal(fputs(text, f) >= 0, 1);
  assert_int_equal(fclose(f), 0);
  assert_int_equal(rename(tmp, path), 0);
}

static void remove_dir(const char *dir) {
  DIR *dp = opendir(dir);
  if (!dp)
    return;
  struct dirent *de;
  while ((de = readdir(dp)) != NULL) {
    if (!strcmp(de->d_name, ".") || !strcmp(de->d_name, ".."))
      continue;
    char path[512];
    snprintf(path, sizeof(path), "%s/%s", dir, de->d_name);
    unlink(path);
  }
  closedir(dp);
  rmdir(dir);
}

/* ---- the daemon ---- */

/* Two distinct free TCP ports: bound together, read, closed. Another
 * process may take one before jrpcd binds it; e2e_start retries then. */
static void free_ports(uint16_t port[2]) {
  int fds[2];
  for (int i = 0; i < 2; i++) {
    fds[i] = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    assert_true(fds[i] >= 0);
    struct sockaddr_in sa;
    memset(&sa, 0, sizeof(sa));
    sa.sin_family = AF_INET;
    sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    assert_int_equal(bind(fds[i], (struct sockaddr *)&sa, sizeof(sa)), 0);
    socklen_t sl = sizeof(sa);
    assert_int_equal(getsockname(fds[i], (struct sockaddr *)&sa, &sl), 0);
    port[i] = ntohs(sa.sin_port);
  }
  close(fds[0]);
  close(fds[1]);
}

static void config_text(const e2e_daemon_t *d, const e2e_opts_t *o, char *out,
                        size_t cap) {
  int n =
      snprintf(out, cap,
               "[server]\n"
               "workers = %u\n"
               "plugin_dir = %s\n"
               "log_level = info\n"
               "%s"
               "[listen unl]\n"
               "unix = %s\n"
               "mode = 0600\n"
               "framing = newline\n"
               "[listen ulen]\n"
               "unix = %s\n"
               "mode = 0600\n"
               "framing = length\n"
               "[listen tnl]\n"
               "tcp = 127.0.0.1:%u\n"
               "framing = newline\n"
               "[listen tlen]\n"
               "tcp = 127.0.0.1:%u\n"
               "framing = length\n"
               "%s",
               d->workers, JRPC_HANDLERS_DIR, o && o->server ? o->server : "",
               d->sock[0], d->sock[1], d->port[0], d->port[1],
               o && o->plugins ? o->plugins : e2e_plugins_default);
  assert_true(n > 0 && (size_t)n < cap);
}

void e2e_rewrite(e2e_daemon_t *d, const e2e_opts_t *o, const char *raw) {
  char text[8192];
  if (!raw)
    config_text(d, o, text, sizeof(text));
  write_file(d->conf, raw ? raw : text);
}

static pid_t spawn(e2e_daemon_t *d) {
  int logfd = open(d->log, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
  assert_true(logfd >= 0);
  int nullfd = open("/dev/null", O_RDONLY | O_CLOEXEC);
  assert_true(nullfd >= 0);
  pid_t parent = getpid();
  pid_t pid = fork();
  assert_true(pid >= 0);
  if (pid == 0) {
    /* The daemon dies with the test (a ctest timeout kills the test). */
    prctl(PR_SET_PDEATHSIG, SIGKILL);
    if (getppid() != parent)
      _exit(127);
    sigset_t none;
    sigemptyset(&none);
    sigprocmask(SIG_SETMASK, &none, NULL);
    signal(SIGPIPE, SIG_DFL);
    if (d->nofile) {
      struct rlimit rl = {d->nofile, d->nofile};
      if (setrlimit(RLIMIT_NOFILE, &rl) != 0)
        _exit(126);
    }
    dup2(nullfd, 0);
    dup2(logfd, 1);
    dup2(logfd, 2);
    execl(JRPCD_BIN, "jrpcd", "-c", d->conf, (char *)NULL);
    _exit(127);
  }
  close(logfd);
  close(nullfd);
  return pid;
}

int e2e_wait_exit(e2e_daemon_t *d, int ms) {
  if (!d->pid)
    return 1;
  uint64_t end = e2e_now_ms() + (uint64_t)ms;
  for (;;) {
    int st;
    pid_t r = waitpid(d->pid, &st, WNOHANG);
    if (r == d->pid) {
      d->status = st;
      d->pid = 0;
      return 1;
    }
    assert_int_equal(r, 0);
    if (e2e_now_ms() > end)
      return 0;
    e2e_sleep_ms(2);
  }
}

void e2e_start(e2e_daemon_t *d, const e2e_opts_t *o) {
  memset(d, 0, sizeof(*d));
  snprintf(d->dir, sizeof(d->dir), "/tmp/jrpcd-e2e-XXXXXX");
  assert_non_null(mkdtemp(d->dir));
  snprintf(d->conf, sizeof(d->conf), "%s/jrpcd.conf", d->dir);
  snprintf(d->log, sizeof(d->log), "%s/jrpcd.log", d->dir);
  snprintf(d->sock[0], sizeof(d->sock[0]), "%s/nl.sock", d->dir);
  snprintf(d->sock[1], sizeof(d->sock[1]), "%s/len.sock", d->dir);
  d->workers = o && o->workers ? o->workers : 2;
  d->nofile = o ? o->nofile : 0;
  for (int attempt = 0;; attempt++) {
    free_ports(d->port);
    e2e_rewrite(d, o, NULL);
    d->pid = spawn(d);
    uint64_t end = e2e_now_ms() + E2E_START_MS;
    /* "serving" is logged after every listener is open and every worker
     * accepts on it. Probing with connect() instead would open
     * connections that count against max_connections until the daemon
     * has seen them close. */
    while (e2e_log_count(d, "] serving ") == 0) {
      if (e2e_wait_exit(d, 0) || e2e_now_ms() > end)
        break;
      e2e_sleep_ms(2);
    }
    if (d->pid && e2e_log_count(d, "] serving ") > 0)
      return;
    int raced = !d->pid && e2e_log_count(d, "Address already in use") > 0;
    if (raced && attempt < 5)
      continue; /* a port was taken between free_ports and the bind */
    e2e_print_log(d);
    fail_msg("jrpcd did not start (%s)", d->pid ? "timeout" : "exited");
  }
}

void e2e_signal(e2e_daemon_t *d, int sig) {
  assert_true(d->pid > 0);
  assert_int_equal(kill(d->pid, sig), 0);
}

void e2e_assert_clean_exit(e2e_daemon_t *d) {
  assert_int_equal(d->pid, 0);
  int bad = 0;
  if (!WIFEXITED(d->status)) {
    fprintf(stderr, "jrpcd died of signal %d\n", WTERMSIG(d->status));
    bad = 1;
  } else if (WEXITSTATUS(d->status) != 0) {
    fprintf(stderr, "jrpcd exited with %d\n", WEXITSTATUS(d->status));
    bad = 1;
  }
  static const char *const reports[] = {
      "ERROR: AddressSanitizer", "ERROR: LeakSanitizer",
      "runtime error:", "WARNING: ThreadSanitizer"};
  for (size_t i = 0; i < sizeof(reports) / sizeof(reports[0]); i++)
    if (e2e_log_count(d, reports[i]) > 0) {
      fprintf(stderr, "jrpcd's log has a sanitizer report (%s)\n", reports[i]);
      bad = 1;
    }
  for (int i = 0; i < 2; i++) {
    struct stat st;
    if (lstat(d->sock[i], &st) == 0) {
      fprintf(stderr, "jrpcd left its socket file %s behind\n", d->sock[i]);
      bad = 1;
    }
  }
  if (bad) {
    e2e_print_log(d);
    fail_msg("jrpcd did not exit cleanly");
  }
}

void e2e_stop(e2e_daemon_t *d) {
  if (e2e_wait_exit(d, 0)) {
    fprintf(stderr, "jrpcd had exited before it was asked to stop\n");
    e2e_assert_clean_exit(d);
    fail_msg("jrpcd exited on its own");
  }
  e2e_signal(d, SIGTERM);
  if (!e2e_wait_exit(d, E2E_STOP_MS)) {
    kill(d->pid, SIGKILL);
    waitpid(d->pid, NULL, 0);
    d->pid = 0;
    e2e_print_log(d);
    fail_msg("jrpcd did not exit within %d ms of SIGTERM", E2E_STOP_MS);
  }
  e2e_assert_clean_exit(d);
}

void e2e_cleanup(e2e_daemon_t *d) {
  if (d->pid > 0) {
    /* The test stopped half-way: show why, and whether jrpcd was alive. */
    int st;
    if (waitpid(d->pid, &st, WNOHANG) == d->pid) {
      if (WIFSIGNALED(st))
        fprintf(stderr, "jrpcd had died of signal %d (%s)\n", WTERMSIG(st),
                strsignal(WTERMSIG(st)));
      else
        fprintf(stderr, "jrpcd had exited with status %d\n", WEXITSTATUS(st));
    } else {
      kill(d->pid, SIGKILL);
      waitpid(d->pid, NULL, 0);
    }
    d->pid = 0;
    e2e_print_log(d);
  }
  if (d->dir[0])
    remove_dir(d->dir);
  d->dir[0] = '\0';
}

/* What a test holds that its teardown must free if an assertion ends it
 * early: connections and e2e_calloc blocks. */
#define OWNED_MAX 1024
static void *owned[OWNED_MAX];
static e2e_conn_t *conns[OWNED_MAX];

static void own(void **set, void *p) {
  for (size_t i = 0; i < OWNED_MAX; i++)
    if (!set[i]) {
      set[i] = p;
      return;
    }
  fail_msg("more than %d test objects at once", OWNED_MAX);
}

static void disown(void **set, void *p) {
  for (size_t i = 0; i < OWNED_MAX; i++)
    if (set[i] == p) {
      set[i] = NULL;
      return;
    }
}

void *e2e_calloc(size_t n, size_t size) {
  void *p = calloc(n ? n : 1, size ? size : 1);
  assert_non_null(p);
  own(owned, p);
  return p;
}

void e2e_free(void *p) {
  if (!p)
    return;
  disown(owned, p);
  free(p);
}

int e2e_setup(void **state) {
  e2e_daemon_t *d = calloc(1, sizeof(*d));
  if (!d)
    return -1;
  *state = d;
  return 0;
}

int e2e_teardown(void **state) {
  e2e_daemon_t *d = *state;
  for (size_t i = 0; i < OWNED_MAX; i++) {
    if (conns[i])
      e2e_close(conns[i]);
    free(owned[i]);
    owned[i] = NULL;
  }
  e2e_cleanup(d);
  free(d);
  return 0;
}

/* ---- client ---- */

int e2e_dial(const e2e_daemon_t *d, e2e_ep_t ep, int flags, int *fd) {
  int unix_ep = ep == E2E_UNIX_NL || ep == E2E_UNIX_LEN;
  *fd = socket(unix_ep ? AF_UNIX : AF_INET, SOCK_STREAM | SOCK_CLOEXEC | flags,
               0);
  if (*fd < 0)
    fail_msg("socket: %s", strerror(errno));
  if (unix_ep) {
    struct sockaddr_un sa;
    memset(&sa, 0, sizeof(sa));
    sa.sun_family = AF_UNIX;
    memcpy(sa.sun_path, d->sock[ep == E2E_UNIX_LEN],
           strlen(d->sock[ep == E2E_UNIX_LEN]));
    return connect(*fd, (struct sockaddr *)&sa, sizeof(sa));
  }
  struct sockaddr_in sa;
  memset(&sa, 0, sizeof(sa));
  sa.sin_family = AF_INET;
  sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  sa.sin_port = htons(d->port[ep == E2E_TCP_LEN]);
  return connect(*fd, (struct sockaddr *)&sa, sizeof(sa));
}

e2e_conn_t *e2e_connect(e2e_daemon_t *d, e2e_ep_t ep) {
  e2e_conn_t *c = calloc(1, sizeof(*c));
  assert_non_null(c);
  c->fd = -1;
  c->framing = e2e_ep_framing(ep);
  own((void **)conns, c);
  /* Blocking connect: a listener's backlog answers at once, so it cannot
   * hang. */
  if (e2e_dial(d, ep, 0, &c->fd) != 0)
    fail_msg("connect %s: %s", e2e_ep_name(ep), strerror(errno));
  if (ep == E2E_TCP_NL || ep == E2E_TCP_LEN) {
    int one = 1;
    setsockopt(c->fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
  }
  fcntl(c->fd, F_SETFL, fcntl(c->fd, F_GETFL) | O_NONBLOCK);
  return c;
}

void e2e_close(e2e_conn_t *c) {
  if (!c)
    return;
  disown((void **)conns, c);
  if (c->fd >= 0)
    close(c->fd);
  free(c->in);
  free(c->out);
  free(c->frame);
  free(c);
}

void e2e_close_rst(e2e_conn_t *c) {
  struct linger lg = {1, 0};
  setsockopt(c->fd, SOL_SOCKET, SO_LINGER, &lg, sizeof(lg));
  e2e_close(c);
}

static int wait_fd(int fd, short events, int ms) {
  struct pollfd p = {fd, events, 0};
  int rc;
  while ((rc = poll(&p, 1, ms)) < 0 && errno == EINTR)
    ;
  return rc;
}

void e2e_send_raw(e2e_conn_t *c, const void *p, size_t n) {
  const char *s = p;
  uint64_t end = e2e_now_ms() + E2E_REPLY_MS;
  while (n > 0) {
    ssize_t k = send(c->fd, s, n, MSG_NOSIGNAL);
    if (k > 0) {
      s += k;
      n -= (size_t)k;
      continue;
    }
    if (k < 0 && errno == EINTR)
      continue;
    if (k < 0 && errno != EAGAIN)
      fail_msg("send: %s", strerror(errno));
    if (e2e_now_ms() > end)
      fail_msg("send: no room for %zu bytes within %d ms", n, E2E_REPLY_MS);
    wait_fd(c->fd, POLLOUT, 50);
  }
}

static void grow(char **buf, size_t *cap, size_t need) {
  if (need <= *cap)
    return;
  size_t nc = *cap ? *cap : 4096;
  while (nc < need)
    nc *= 2;
  *buf = realloc(*buf, nc);
  assert_non_null(*buf);
  *cap = nc;
}

void e2e_queue(e2e_conn_t *c, const char *p, size_t n) {
  if (c->out_off > 0 && c->out_off == c->out_len)
    c->out_off = c->out_len = 0;
  grow(&c->out, &c->out_cap, c->out_len + n + 5);
  if (c->framing == E2E_LENGTH) {
    unsigned char h[4] = {(unsigned char)(n >> 24), (unsigned char)(n >> 16),
                          (unsigned char)(n >> 8), (unsigned char)n};
    memcpy(c->out + c->out_len, h, 4);
    c->out_len += 4;
  }
  memcpy(c->out + c->out_len, p, n);
  c->out_len += n;
  if (c->framing == E2E_NEWLINE)
    c->out[c->out_len++] = '\n';
}

void e2e_queuef(e2e_conn_t *c, const char *fmt, ...) {
  char buf[4096];
  va_list ap;
  va_start(ap, fmt);
  int n = vsnprintf(buf, sizeof(buf), fmt, ap);
  va_end(ap);
  assert_true(n >= 0 && (size_t)n < sizeof(buf));
  e2e_queue(c, buf, (size_t)n);
}

void e2e_send_frame(e2e_conn_t *c, const char *p, size_t n) {
  char *f = malloc(n + 5);
  assert_non_null(f);
  size_t k = 0;
  if (c->framing == E2E_LENGTH) {
    f[0] = (char)(n >> 24);
    f[1] = (char)(n >> 16);
    f[2] = (char)(n >> 8);
    f[3] = (char)n;
    k = 4;
  }
  memcpy(f + k, p, n);
  k += n;
  if (c->framing == E2E_NEWLINE)
    f[k++] = '\n';
  e2e_send_raw(c, f, k);
  free(f);
}

void e2e_flush(e2e_conn_t *c) {
  e2e_send_raw(c, c->out + c->out_off, c->out_len - c->out_off);
  c->out_off = c->out_len = 0;
}

void e2e_send(e2e_conn_t *c, const char *payload) {
  e2e_send_frame(c, payload, strlen(payload));
}

/* One complete frame at the front of the input: 1 (payload at *p, *n
 * bytes, `used` bytes to drop), 0 if incomplete, -1 if malformed. */
static int take_frame(e2e_conn_t *c, const char **p, size_t *n, size_t *used) {
  const char *b = c->in + c->in_off;
  size_t avail = c->in_len - c->in_off;
  if (c->framing == E2E_NEWLINE) {
    const char *nl = memchr(b, '\n', avail);
    if (!nl)
      return 0;
    *p = b;
    *n = (size_t)(nl - b);
    *used = *n + 1;
    return *n > 0 ? 1 : -1; /* replies are never blank lines */
  }
  if (avail < 4)
    return 0;
  const unsigned char *h = (const unsigned char *)b;
  size_t len = ((size_t)h[0] << 24) | ((size_t)h[1] << 16) |
               ((size_t)h[2] << 8) | (size_t)h[3];
  if (avail - 4 < len)
    return 0;
  *p = b + 4;
  *n = len;
  *used = len + 4;
  return len > 0 ? 1 : -1;
}

/* One read(2) of at most rchunk bytes: >0 bytes, 0 would block, -1 EOF or
 * error (c->eof / c->err set). */
static ssize_t read_some(e2e_conn_t *c) {
  size_t chunk = c->rchunk ? c->rchunk : READ_CHUNK;
  if (c->in_off > 0 && c->in_off == c->in_len)
    c->in_off = c->in_len = 0;
  else if (c->in_off > (1u << 20) && c->in_off > c->in_len / 2) {
    memmove(c->in, c->in + c->in_off, c->in_len - c->in_off);
    c->in_len -= c->in_off;
    c->in_off = 0;
  }
  grow(&c->in, &c->in_cap, c->in_len + chunk + 1);
  ssize_t k;
  while ((k = recv(c->fd, c->in + c->in_len, chunk, 0)) < 0 && errno == EINTR)
    ;
  if (k > 0) {
    c->in_len += (size_t)k;
    return k;
  }
  if (k == 0) {
    c->eof = 1;
    return -1;
  }
  if (errno == EAGAIN)
    return 0;
  c->err = errno;
  return -1;
}

int e2e_recv(e2e_conn_t *c, const char **out, size_t *n, int ms) {
  uint64_t end = e2e_now_ms() + (uint64_t)ms;
  for (;;) {
    const char *p;
    size_t len, used;
    int r = c->in ? take_frame(c, &p, &len, &used) : 0;
    if (r < 0)
      return -1;
    if (r > 0) {
      grow(&c->frame, &c->frame_cap, len + 1);
      memcpy(c->frame, p, len);
      c->frame[len] = '\0';
      *out = c->frame;
      *n = len;
      c->in_off += used;
      return 1;
    }
    if (c->eof || c->err)
      return 0;
    ssize_t k = read_some(c);
    if (k > 0)
      continue;
    if (k < 0)
      continue; /* EOF: frames still buffered come first */
    uint64_t now = e2e_now_ms();
    if (now >= end)
      return -1;
    wait_fd(c->fd, POLLIN, (int)(end - now));
  }
}

int e2e_same(const char *got, size_t n, const char *expected) {
  if (n == strlen(expected) && memcmp(got, expected, n) == 0)
    return 1;
  int json = tu_json_valid(got, n);
  fprintf(stderr,
          "reply differs\n  expected: %s\n  got (%zu bytes%s): %.*s%s\n",
          expected, n, json ? "" : ", NOT valid JSON",
          (int)(n > 2000 ? 2000 : n), got, n > 2000 ? "..." : "");
  return 0;
}

void e2e_expect_(e2e_conn_t *c, const char *expected, const char *file,
                 int line) {
  const char *p = NULL;
  size_t n = 0;
  int r = e2e_recv(c, &p, &n, E2E_REPLY_MS);
  if (r != 1) {
    fprintf(stderr, "%s:%d: expected %s\n", file, line, expected);
    fail_msg("%s:%d: no reply (%s)", file, line,
             r == 0 ? (c->err ? strerror(c->err) : "connection closed")
                    : "timeout or bad framing");
  }
  if (!e2e_same(p, n, expected))
    fail_msg("%s:%d: unexpected reply", file, line);
}

void e2e_expect_eof_(e2e_conn_t *c, int ms, int reset_ok, const char *file,
                     int line) {
  const char *p = NULL;
  size_t n = 0;
  int r = e2e_recv(c, &p, &n, ms);
  if (r == 1) {
    fprintf(stderr, "unexpected reply: %s\n", p);
    fail_msg("%s:%d: a reply instead of the connection's end", file, line);
  }
  if (r < 0)
    fail_msg("%s:%d: the connection was not closed within %d ms (%zu stray "
             "bytes)",
             file, line, ms, c->in_len - c->in_off);
  if (c->in_len != c->in_off)
    fail_msg("%s:%d: %zu bytes of an incomplete frame before the end", file,
             line, c->in_len - c->in_off);
  if (c->err && !(reset_ok && c->err == ECONNRESET))
    fail_msg("%s:%d: connection ended with %s, not EOF", file, line,
             strerror(c->err));
}

/* ---- pump ---- */

void e2e_pump(e2e_conn_t **cs, size_t n, const e2e_pump_ops_t *ops, void *arg,
              int stall_ms) {
  struct pollfd pfd[256];
  assert_true(n <= sizeof(pfd) / sizeof(pfd[0]));
  uint64_t last = e2e_now_ms();
  while (!ops->done(arg)) {
    for (size_t i = 0; i < n; i++) {
      if (ops->refill)
        ops->refill(arg, i, cs[i]);
      pfd[i].fd = cs[i]->fd;
      pfd[i].events = POLLIN;
      if (cs[i]->out_off < cs[i]->out_len)
        pfd[i].events |= POLLOUT;
      pfd[i].revents = 0;
    }
    int rc = poll(pfd, (nfds_t)n, 100);
    if (rc < 0 && errno != EINTR)
      fail_msg("poll: %s", strerror(errno));
    int moved = 0;
    for (size_t i = 0; rc > 0 && i < n; i++) {
      e2e_conn_t *c = cs[i];
      if (pfd[i].revents & POLLOUT) {
        ssize_t k = send(c->fd, c->out + c->out_off, c->out_len - c->out_off,
                         MSG_NOSIGNAL);
        if (k > 0) {
          c->out_off += (size_t)k;
          moved = 1;
        } else if (k < 0 && errno != EAGAIN && errno != EINTR) {
          fail_msg("connection %zu: send: %s", i, strerror(errno));
        }
      }
      if (pfd[i].revents & (POLLIN | POLLHUP | POLLERR)) {
        ssize_t k = read_some(c);
        if (k > 0)
          moved = 1;
        const char *p;
        size_t len, used;
        int r;
        while ((r = take_frame(c, &p, &len, &used)) > 0) {
          ops->frame(arg, i, p, len);
          c->in_off += used;
        }
        if (r < 0)
          fail_msg("connection %zu: bad reply framing", i);
        if (k < 0 && !ops->done(arg))
          fail_msg("connection %zu: closed by the daemon (%s)", i,
                   c->err ? strerror(c->err) : "EOF");
      }
    }
    uint64_t now = e2e_now_ms();
    if (moved)
      last = now;
    else if (now - last > (uint64_t)stall_ms)
      fail_msg("no progress for %d ms", stall_ms);
  }
}

void e2e_roundtrip(e2e_conn_t *c, int id) {
  char req[128], want[128];
  snprintf(req, sizeof(req), REQ("math.add", "[%d,%d]", "%d"), id, id, id);
  snprintf(want, sizeof(want), RES("%d", "%d"), 2 * id, id);
  e2e_send(c, req);
  e2e_expect(c, want);
}

char *e2e_call_copy(e2e_conn_t *c, const char *payload) {
  e2e_send(c, payload);
  const char *p;
  size_t n;
  assert_int_equal(e2e_recv(c, &p, &n, E2E_REPLY_MS), 1);
  char *copy = e2e_calloc(n + 1, 1);
  memcpy(copy, p, n);
  return copy;
}

long long e2e_num_after(const char *json, const char *scope, const char *key) {
  const char *s = strstr(json, scope);
  if (!s)
    fail_msg("no %s in %s", scope, json);
  char pat[64];
  snprintf(pat, sizeof(pat), "\"%s\":", key);
  const char *k = strstr(s, pat);
  if (!k)
    fail_msg("no %s after %s in %s", key, scope, json);
  return strtoll(k + strlen(pat), NULL, 10);
}
