/* push_bench.c - push-bench: server push under load, over a Unix socket
 * (newline framing).
 *
 * Against jrpcd (with the pubsub plugin): C subscriber connections each
 * make S pubsub.subscribe("bench") calls, so one pubsub.publish on a
 * separate publisher connection fans out to C x S subscriptions; then N
 * publishes, each carrying its sequence number and the monotonic clock at
 * its sending. Every notification is checked: its subscription must be one
 * of its connection's, and each subscription must receive each publish
 * exactly once (per connection and publish: the count, and the sum of a
 * hash of the subscription ids, against those of the subscribe replies).
 * An rpc.lagged notice (a dropped notification), an error reply or a
 * notification too many fails the run (exit 1).
 *
 * Against echo-server (--echo BYTES): the same connections, and each
 * "publish" sends "!fan S BYTES" to every connection, which echo-server
 * answers with S frames of BYTES bytes: the raw transport writing the same
 * bytes to the same connections, the baseline of the fan-out.
 *
 * Across a fleet (--publish-socket PATH): the publisher connects to
 * another jrpcd than the subscribers (-u), one that reaches them through
 * the broker of [cluster], or to the same one (local delivery, the same
 * steps). Across the broker a publish is delivered at most once and only
 * once the subscribers' instance holds the topic at the broker, which it
 * asks for after the subscribe calls have been answered; so before the
 * measured phase the publisher sends probes ({"sync":K}, every 20 ms)
 * until one has reached every subscription, then waits for the last
 * probe sent to reach them all too (publish order per publisher: none is
 * left in flight). The exactly-once check then holds as it does on one
 * instance, for as long as the broker stays up; rpc.lagged still fails
 * the run.
 *
 * Pacing: -w W keeps at most W publishes unfinished (not yet received by
 * every subscription), so the queues do not fill; -r RATE sends RATE
 * publishes a second instead, on a clock (the latency mode).
 *
 * With -p PID (the server's pid), the server's CPU time (utime + stime
 * from /proc/PID/stat) over the publish phase and its RSS (VmRSS) before
 * the connections, after them (each has made one call) and after the
 * subscriptions are reported. -p may be given up to 4 times (a fleet:
 * both jrpcd and the broker): cpu_s and user_s are then their sum, each
 * one's CPU seconds is cpu_pK_s (K from 1, in the order given) and the
 * RSS is the first's. The last line is
 *   RESULT conns=C subs=S publishes=N notifications=... notif_bytes=...
 *          secs=... cpu_s=... user_s=... notif_per_cpu_s=... p50_us=...
 * p99_us=... max_us=... rss_before_kib=... rss_conns_kib=... rss_subs_kib=...
 *          bytes_per_sub=... [cpu_p1_s=... ...]
 * (notif_bytes: the subscribers' bytes per notification; latency from
 * jrpcd only; -1 where not measured). -T: give up (exit 1) after that
 * many seconds (60), as when a notification was lost.
 *
 * usage: push-bench -u PATH [--publish-socket PATH] [-c CONNS] [-s SUBS]
 *                   [-n PUBLISHES] [-w WINDOW] [-r RATE] [-b PAD]
 *                   [-p PID]... [-T SECONDS] [--echo BYTES] [-q] */
#include "jrpc_bench_hist.h"
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <inttypes.h>
#include <poll.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#define SUB_CHUNK 256 /* subscribe calls in flight on one connection */
#define MAX_PIDS 4    /* -p: the servers whose CPU time is counted */
#define MAX_SYNC 4096 /* probes before the publish phase, at most */
#define SYNC_EVERY_MS 20

typedef struct peer {
  int fd;
  char *buf;
  size_t len, cap;
  uint64_t got;   /* frames received in the publish phase */
  uint64_t idsum; /* sum of hash(id) over this connection's subscriptions */
} peer_t;

static struct {
  const char *path, *pub_path;
  long conns, subs, pubs, window, pad, echo_bytes;
  double rate, timeout_s;
  long pids[MAX_PIDS];
  int npids, quiet;
} opt = {.conns = 100, .subs = 100, .pubs = 100, .window = 2, .timeout_s = 60};

static peer_t *peers, publisher;
static uint32_t *cnt;      /* [conn * pubs + seq]: notifications received */
static uint64_t *sums;     /* [conn * pubs + seq]: sum of hash(id) */
static uint64_t *per_seq;  /* [seq]: notifications received, all conns */
static uint64_t completed; /* publishes every subscription received */
static uint64_t bytes_in, pub_replies;
static uint64_t *sync_got;  /* [probe]: notifications received */
static long sync_full = -1; /* the first probe every subscription received */
static bench_hist_t hist;

_Noreturn static void die(const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  fputs("push-bench: ", stderr);
  vfprintf(stderr, fmt, ap);
  fputc('\n', stderr);
  va_end(ap);
  exit(1);
}

static uint64_t now_ns(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static uint64_t id_hash(const char *s, size_t n) {
  uint64_t h = 1469598103934665603u;
  for (size_t i = 0; i < n; i++)
    h = (h ^ (unsigned char)s[i]) * 1099511628211u;
  return h ^ (h >> 29);
}

/* ---- the server's figures from /proc ---- */

/* Process pid's CPU seconds (user + system); its user part in *user. */
static double cpu_s_of(long pid, double *user) {
  char path[64], line[1024];
  snprintf(path, sizeof path, "/proc/%ld/stat", pid);
  FILE *f = fopen(path, "r");
  if (!f || !fgets(line, sizeof line, f))
    die("cannot read %s", path);
  fclose(f);
  /* Fields 14 and 15 (utime, stime) count from the ')' closing comm. */
  const char *p = strrchr(line, ')');
  unsigned long long ut, st;
  if (!p ||
      sscanf(p + 2, "%*c %*d %*d %*d %*d %*d %*u %*u %*u %*u %*u %llu %llu",
             &ut, &st) != 2)
    die("cannot parse %s", path);
  *user = (double)ut / (double)sysconf(_SC_CLK_TCK);
  return (double)(ut + st) / (double)sysconf(_SC_CLK_TCK);
}

/* The servers' CPU seconds: each one's in each[], their sum returned,
 * the sum of their user parts in *user; -1 without -p. */
static double server_cpu_s(double *user, double each[MAX_PIDS]) {
  double sum = 0, sum_user = 0, u;
  for (int i = 0; i < opt.npids; i++) {
    each[i] = cpu_s_of(opt.pids[i], &u);
    sum += each[i];
    sum_user += u;
  }
  *user = opt.npids ? sum_user : -1;
  return opt.npids ? sum : -1;
}

static long server_rss_kib(void) {
  if (opt.npids == 0)
    return -1;
  char path[64], line[256];
  long kib = -1;
  snprintf(path, sizeof path, "/proc/%ld/status", opt.pids[0]);
  FILE *f = fopen(path, "r");
  if (!f)
    die("cannot read %s", path);
  while (fgets(line, sizeof line, f))
    if (sscanf(line, "VmRSS: %ld", &kib) == 1)
      break;
  fclose(f);
  return kib;
}

/* ---- connections ---- */

static int connect_unix(const char *path) {
  struct sockaddr_un sa = {.sun_family = AF_UNIX};
  if (strlen(path) >= sizeof sa.sun_path)
    die("socket path too long: %s", path);
  strcpy(sa.sun_path, path);
  int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0 || connect(fd, (struct sockaddr *)&sa, sizeof sa) != 0)
    die("connect %s: %s", path, strerror(errno));
  return fd;
}

static void send_all(int fd, const char *s, size_t n) {
  while (n) {
    ssize_t w = send(fd, s, n, MSG_NOSIGNAL);
    if (w < 0 && errno == EINTR)
      continue;
    if (w < 0 && errno == EAGAIN) {
      struct pollfd pf = {.fd = fd, .events = POLLOUT};
      poll(&pf, 1, 1000);
      continue;
    }
    if (w <= 0)
      die("send: %s", w < 0 ? strerror(errno) : "closed");
    s += w;
    n -= (size_t)w;
  }
}

/* Reads more of p's input; 0 at the server's close. */
static size_t fill(peer_t *p) {
  if (p->cap - p->len < 65536) {
    p->cap = p->cap ? p->cap * 2 : 131072;
    p->buf = realloc(p->buf, p->cap);
    if (!p->buf)
      die("out of memory");
  }
  for (;;) {
    ssize_t r = recv(p->fd, p->buf + p->len, p->cap - p->len, 0);
    if (r < 0 && errno == EINTR)
      continue;
    if (r < 0 && errno == EAGAIN)
      return SIZE_MAX;
    if (r < 0)
      die("recv: %s", strerror(errno));
    p->len += (size_t)r;
    if (p != &publisher) /* what the subscribers receive */
      bytes_in += (uint64_t)r;
    return (size_t)r;
  }
}

/* Hands each complete line of p's input to fn, keeps the rest; returns
 * the number of lines. */
static long lines(peer_t *p, void (*fn)(peer_t *, const char *, size_t)) {
  size_t at = 0;
  long k = 0;
  char *nl;
  while ((nl = memchr(p->buf + at, '\n', p->len - at)) != NULL) {
    size_t n = (size_t)(nl - (p->buf + at));
    fn(p, p->buf + at, n);
    at += n + 1;
    k++;
  }
  memmove(p->buf, p->buf + at, p->len - at);
  p->len -= at;
  return k;
}

/* The JSON string value after KEY (e.g. "\"result\":\""), or NULL. */
static const char *str_after(const char *l, size_t n, const char *key,
                             size_t *vn) {
  const char *k = memmem(l, n, key, strlen(key));
  if (!k)
    return NULL;
  const char *v = k + strlen(key), *e = memchr(v, '"', (size_t)(l + n - v));
  if (!e)
    return NULL;
  *vn = (size_t)(e - v);
  return v;
}

static int num_after(const char *l, size_t n, const char *key, uint64_t *v) {
  const char *k = memmem(l, n, key, strlen(key));
  if (!k)
    return -1;
  char *end;
  *v = strtoull(k + strlen(key), &end, 10);
  return end == k + strlen(key) ? -1 : 0;
}

/* ---- setup: one round trip, then the subscriptions ---- */

static void read_lines_blocking(peer_t *p, long want,
                                void (*fn)(peer_t *, const char *, size_t)) {
  for (long seen = 0; seen < want; seen += lines(p, fn))
    if (fill(p) == 0)
      die("the server closed a connection during the setup");
}

static void on_ping_reply(peer_t *p, const char *l, size_t n) {
  (void)p;
  if (!memmem(l, n, "\"result\"", 8))
    die("warm-up call failed: %.*s", (int)n, l);
}

static void on_sub_reply(peer_t *p, const char *l, size_t n) {
  size_t vn;
  const char *id = str_after(l, n, "\"result\":\"", &vn);
  if (!id)
    die("pubsub.subscribe failed: %.*s", (int)n, l);
  p->idsum += id_hash(id, vn);
}

/* A call on every connection, so the server has accepted them all. */
static void warm_up(peer_t *p) {
  static const char echo_ping[] = "{\"id\":0}\n";
  static const char jrpcd_ping[] = "{\"jsonrpc\":\"2.0\",\"method\":"
                                   "\"pubsub.publish\",\"params\":[\"warm\","
                                   "0],\"id\":0}\n";
  if (opt.echo_bytes)
    send_all(p->fd, echo_ping, sizeof echo_ping - 1);
  else
    send_all(p->fd, jrpcd_ping, sizeof jrpcd_ping - 1);
  read_lines_blocking(p, 1, on_ping_reply);
}

static void subscribe_all(peer_t *p) {
  static const char req[] = "{\"jsonrpc\":\"2.0\",\"method\":"
                            "\"pubsub.subscribe\",\"params\":[\"bench\"],"
                            "\"id\":1}\n";
  char *batch = malloc(SUB_CHUNK * sizeof req);
  if (!batch)
    die("out of memory");
  for (long done = 0; done < opt.subs;) {
    long k = opt.subs - done < SUB_CHUNK ? opt.subs - done : SUB_CHUNK;
    for (long i = 0; i < k; i++)
      memcpy(batch + i * (long)(sizeof req - 1), req, sizeof req - 1);
    send_all(p->fd, batch, (size_t)k * (sizeof req - 1));
    read_lines_blocking(p, k, on_sub_reply);
    done += k;
  }
  free(batch);
}

/* ---- the publish phase ---- */

static uint64_t all_subs(void) {
  return (uint64_t)opt.conns * (uint64_t)opt.subs;
}

static void count_done(uint64_t seq) {
  if (++per_seq[seq] == all_subs())
    completed++;
}

static void on_notification(peer_t *p, const char *l, size_t n) {
  if (memmem(l, n, "rpc.lagged", 10))
    die("notifications dropped: %.*s", (int)n, l);
  size_t idn;
  uint64_t seq, t;
  if (sync_got && num_after(l, n, "\"sync\":", &seq) == 0) {
    if (seq >= MAX_SYNC)
      die("not a probe of this run: %.*s", (int)n, l);
    if (++sync_got[seq] == all_subs() && sync_full < 0)
      sync_full = (long)seq;
    return;
  }
  const char *id = str_after(l, n, "\"subscription\":\"", &idn);
  if (!id || num_after(l, n, "\"seq\":", &seq) != 0 ||
      num_after(l, n, "\"t\":", &t) != 0 || seq >= (uint64_t)opt.pubs)
    die("not a bench notification: %.*s", (int)n, l);
  size_t at = (size_t)(p - peers) * (size_t)opt.pubs + seq;
  if (++cnt[at] > (uint32_t)opt.subs)
    die("connection %ld: publish %" PRIu64 " received more than %ld times",
        (long)(p - peers), seq, opt.subs);
  sums[at] += id_hash(id, idn);
  uint64_t now = now_ns();
  hist_record(&hist, now > t ? (now - t) / 1000 : 0);
  p->got++;
  count_done(seq);
}

static void on_fan_frame(peer_t *p, const char *l, size_t n) {
  if ((long)n + 1 != opt.echo_bytes)
    die("echo-server sent a frame of %zu bytes, not %ld", n + 1,
        opt.echo_bytes);
  p->got++;
}

static void on_publish_reply(peer_t *p, const char *l, size_t n) {
  (void)p;
  if (!memmem(l, n, "\"result\":true", 13))
    die("pubsub.publish failed: %.*s", (int)n, l);
  pub_replies++;
}

/* echo: a publish is complete when every connection has its frames. */
static void echo_completed(void) {
  uint64_t least = UINT64_MAX;
  for (long i = 0; i < opt.conns; i++)
    if (peers[i].got < least)
      least = peers[i].got;
  completed = least / (uint64_t)opt.subs;
}

static void publish(uint64_t seq, const char *pad) {
  char msg[256];
  if (opt.echo_bytes) {
    int n =
        snprintf(msg, sizeof msg, "!fan %ld %ld\n", opt.subs, opt.echo_bytes);
    for (long i = 0; i < opt.conns; i++)
      send_all(peers[i].fd, msg, (size_t)n);
    return;
  }
  char *buf = malloc(strlen(pad) + sizeof msg);
  if (!buf)
    die("out of memory");
  int n = sprintf(buf,
                  "{\"jsonrpc\":\"2.0\",\"method\":\"pubsub.publish\","
                  "\"params\":[\"bench\",{\"seq\":%" PRIu64 ",\"t\":%" PRIu64
                  ",\"pad\":\"%s\"}],\"id\":%" PRIu64 "}\n",
                  seq, now_ns(), pad, seq + 1);
  send_all(publisher.fd, buf, (size_t)n);
  free(buf);
}

/* Reads what the servers sent within wait_ms and hands each line on. */
static void pump(int ep, int wait_ms) {
  struct epoll_event evs[64];
  int k = epoll_wait(ep, evs, 64, wait_ms);
  if (k < 0 && errno != EINTR)
    die("epoll_wait: %s", strerror(errno));
  for (int i = 0; i < k; i++) {
    peer_t *p = evs[i].data.ptr;
    size_t r = fill(p);
    if (r == 0)
      die("the server closed %s", p == &publisher
                                      ? "the publisher's connection"
                                      : "a subscriber's connection");
    if (p == &publisher)
      lines(p, on_publish_reply);
    else
      lines(p, opt.echo_bytes ? on_fan_frame : on_notification);
  }
  if (opt.echo_bytes && k > 0)
    echo_completed();
}

/* --publish-socket: probes until the subscribers' instance delivers the
 * publisher's messages to every subscription, and none is left in flight
 * (see the top). */
static void sync_phase(int ep) {
  static const char probe[] = "{\"jsonrpc\":\"2.0\",\"method\":"
                              "\"pubsub.publish\",\"params\":[\"bench\","
                              "{\"sync\":%ld}],\"id\":0}\n";
  uint64_t start = now_ns(), next = start;
  uint64_t deadline = start + (uint64_t)(opt.timeout_s * 1e9);
  long sent = 0;
  while (sync_full < 0 || sync_got[sent - 1] < all_subs() ||
         pub_replies < (uint64_t)sent) {
    uint64_t now = now_ns();
    if (now > deadline || (sync_full < 0 && sent == MAX_SYNC))
      die("no probe published on %s reached every subscription on %s "
          "within %.0f s (%ld sent): is it one fleet, its broker up?",
          opt.pub_path, opt.path, opt.timeout_s, sent);
    if (sync_full < 0 && now >= next) {
      char msg[sizeof probe + 24];
      int n = snprintf(msg, sizeof msg, probe, sent++);
      send_all(publisher.fd, msg, (size_t)n);
      next = now + SYNC_EVERY_MS * 1000000u;
      continue;
    }
    pump(ep, sync_full < 0 ? (int)((next - now) / 1000000) + 1 : 100);
  }
  pub_replies = 0;
}

static void run_phase(int ep) {
  char *pad = malloc((size_t)opt.pad + 1);
  if (!pad)
    die("out of memory");
  memset(pad, 'x', (size_t)opt.pad);
  pad[opt.pad] = '\0';
  uint64_t sent = 0, start = now_ns();
  uint64_t deadline = start + (uint64_t)(opt.timeout_s * 1e9);
  uint64_t all = (uint64_t)opt.pubs;
  while (completed < all ||
         (!opt.echo_bytes && pub_replies < (uint64_t)opt.pubs)) {
    uint64_t now = now_ns();
    if (now > deadline)
      die("timed out after %.0f s: %" PRIu64 " of %" PRIu64
          " publishes received by every subscription",
          opt.timeout_s, completed, all);
    int wait_ms = 100;
    if (sent < all) {
      if (opt.rate > 0) {
        uint64_t due = start + (uint64_t)((double)sent * 1e9 / opt.rate);
        if (now >= due) {
          publish(sent++, pad);
          continue;
        }
        wait_ms = (int)((due - now) / 1000000);
      } else if (sent - completed < (uint64_t)opt.window) {
        publish(sent++, pad);
        continue;
      }
    }
    pump(ep, wait_ms);
  }
  free(pad);
}

/* Every subscription received every publish exactly once. */
static void verify(void) {
  uint64_t want = (uint64_t)opt.conns * (uint64_t)opt.subs * (uint64_t)opt.pubs;
  uint64_t total = 0;
  for (long i = 0; i < opt.conns; i++) {
    total += peers[i].got;
    if (opt.echo_bytes)
      continue;
    for (long s = 0; s < opt.pubs; s++) {
      size_t at = (size_t)i * (size_t)opt.pubs + (size_t)s;
      if (cnt[at] != (uint32_t)opt.subs || sums[at] != peers[i].idsum)
        die("connection %ld, publish %ld: %u notifications, not one for "
            "each of its %ld subscriptions",
            i, s, cnt[at], opt.subs);
    }
  }
  if (total != want)
    die("%" PRIu64 " notifications received, %" PRIu64 " expected", total,
        want);
}

static void usage(FILE *to, int rc) {
  fputs("usage: push-bench -u PATH [--publish-socket PATH] [-c CONNS] "
        "[-s SUBS]\n"
        "                  [-n PUBLISHES] [-w WINDOW] [-r RATE] [-b PAD] "
        "[-p PID]...\n"
        "                  [-T SECONDS] [--echo BYTES] [-q]\n",
        to);
  exit(rc);
}

static long num_opt(const char *s, long lo, long hi, const char *what) {
  char *end;
  errno = 0;
  long v = strtol(s, &end, 10);
  if (errno || *end || v < lo || v > hi) {
    fprintf(stderr, "push-bench: %s: a number from %ld to %ld\n", what, lo, hi);
    exit(2);
  }
  return v;
}

static void parse(int argc, char **argv) {
  static const struct option lo[] = {
      {"echo", required_argument, 0, 'E'},
      {"publish-socket", required_argument, 0, 'P'},
      {"help", no_argument, 0, 'h'},
      {0, 0, 0, 0}};
  int ch;
  while ((ch = getopt_long(argc, argv, "u:c:s:n:w:r:b:p:T:qh", lo, 0)) != -1)
    switch (ch) {
    case 'u':
      opt.path = optarg;
      break;
    case 'c':
      opt.conns = num_opt(optarg, 1, 100000, "-c");
      break;
    case 's':
      opt.subs = num_opt(optarg, 1, 1000000, "-s");
      break;
    case 'n':
      opt.pubs = num_opt(optarg, 1, 10000000, "-n");
      break;
    case 'w':
      opt.window = num_opt(optarg, 1, 1000000, "-w");
      break;
    case 'r':
      opt.rate = (double)num_opt(optarg, 1, 1000000, "-r");
      break;
    case 'b':
      opt.pad = num_opt(optarg, 0, 65536, "-b");
      break;
    case 'p':
      if (opt.npids == MAX_PIDS) {
        fprintf(stderr, "push-bench: -p: at most %d\n", MAX_PIDS);
        exit(2);
      }
      opt.pids[opt.npids++] = num_opt(optarg, 1, 1L << 30, "-p");
      break;
    case 'P':
      opt.pub_path = optarg;
      break;
    case 'T':
      opt.timeout_s = (double)num_opt(optarg, 1, 86400, "-T");
      break;
    case 'E':
      opt.echo_bytes = num_opt(optarg, 2, 1 << 20, "--echo");
      break;
    case 'q':
      opt.quiet = 1;
      break;
    case 'h':
      usage(stdout, 0);
      break;
    default:
      usage(stderr, 2);
    }
  if (!opt.path || optind != argc)
    usage(stderr, 2);
  if (opt.pub_path && opt.echo_bytes) {
    fputs("push-bench: --publish-socket is for jrpcd, not --echo\n", stderr);
    exit(2);
  }
}

int main(int argc, char **argv) {
  parse(argc, argv);
  peers = calloc((size_t)opt.conns, sizeof *peers);
  per_seq = calloc((size_t)opt.pubs, sizeof *per_seq);
  if (!opt.echo_bytes) {
    cnt = calloc((size_t)opt.conns * (size_t)opt.pubs, sizeof *cnt);
    sums = calloc((size_t)opt.conns * (size_t)opt.pubs, sizeof *sums);
  }
  if (opt.pub_path)
    sync_got = calloc(MAX_SYNC, sizeof *sync_got);
  if (!peers || !per_seq || (!opt.echo_bytes && (!cnt || !sums)) ||
      (opt.pub_path && !sync_got))
    die("out of memory");

  long rss0 = server_rss_kib();
  for (long i = 0; i < opt.conns; i++) {
    peers[i].fd = connect_unix(opt.path);
    warm_up(&peers[i]);
  }
  long rss_conns = server_rss_kib();
  if (!opt.echo_bytes) {
    for (long i = 0; i < opt.conns; i++)
      subscribe_all(&peers[i]);
    publisher.fd = connect_unix(opt.pub_path ? opt.pub_path : opt.path);
  }
  long rss_subs = server_rss_kib();
  double bytes_per_sub = opt.npids == 0 || opt.echo_bytes
                             ? -1
                             : (double)(rss_subs - rss_conns) * 1024.0 /
                                   ((double)opt.conns * (double)opt.subs);

  int ep = epoll_create1(EPOLL_CLOEXEC);
  if (ep < 0)
    die("epoll_create1: %s", strerror(errno));
  for (long i = 0; i <= opt.conns; i++) {
    peer_t *p = i < opt.conns ? &peers[i] : &publisher;
    if (p == &publisher && opt.echo_bytes)
      break;
    struct epoll_event ev = {.events = EPOLLIN, .data.ptr = p};
    if (epoll_ctl(ep, EPOLL_CTL_ADD, p->fd, &ev) != 0)
      die("epoll_ctl: %s", strerror(errno));
    if (fcntl(p->fd, F_SETFL, O_NONBLOCK) != 0)
      die("fcntl: %s", strerror(errno));
  }

  if (opt.pub_path)
    sync_phase(ep);
  bytes_in = 0;
  double user0, user1, each0[MAX_PIDS], each1[MAX_PIDS];
  double cpu0 = server_cpu_s(&user0, each0);
  uint64_t t0 = now_ns();
  run_phase(ep);
  uint64_t t1 = now_ns();
  double cpu1 = server_cpu_s(&user1, each1);
  verify();

  uint64_t notes =
      (uint64_t)opt.conns * (uint64_t)opt.subs * (uint64_t)opt.pubs;
  double secs = (double)(t1 - t0) / 1e9, cpu = cpu1 - cpu0;
  int lat = !opt.echo_bytes;
  if (!opt.quiet)
    fprintf(stderr,
            "push-bench: %" PRIu64 " notifications (%ld conns x %ld subs x "
            "%ld publishes) in %.3f s, server CPU %.2f s; every one "
            "received exactly once\n",
            notes, opt.conns, opt.subs, opt.pubs, secs, cpu);
  printf("RESULT conns=%ld subs=%ld publishes=%ld notifications=%" PRIu64
         " notif_bytes=%.1f secs=%.3f cpu_s=%.2f user_s=%.2f "
         "notif_per_cpu_s=%.0f "
         "p50_us=%" PRId64 " p99_us=%" PRId64 " max_us=%" PRId64
         " rss_before_kib=%ld rss_conns_kib=%ld rss_subs_kib=%ld "
         "bytes_per_sub=%.1f",
         opt.conns, opt.subs, opt.pubs, notes, (double)bytes_in / (double)notes,
         secs, cpu, user1 - user0, cpu > 0 ? (double)notes / cpu : -1,
         lat ? (int64_t)hist_quantile(&hist, 0.50) : -1,
         lat ? (int64_t)hist_quantile(&hist, 0.99) : -1,
         lat ? (int64_t)hist.max : -1, rss0, rss_conns, rss_subs,
         bytes_per_sub);
  for (int i = 0; i < opt.npids; i++)
    printf(" cpu_p%d_s=%.2f", i + 1, each1[i] - each0[i]);
  putchar('\n');
  return 0;
}
