/* jrpc_bench_run.c - see jrpc_bench_run.h. */
#include "jrpc_bench_run.h"

#include <errno.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <time.h>
#include <unistd.h>

#include "jrpc_bench_http.h"
#include "jrpc_bench_reply.h"

#define NS 1000000000ull
#define MAX_ERROR_LINES 10
#define MAX_OUT_BYTES ((size_t)4 << 20)

typedef struct slot {
  uint64_t r;      /* request number: (seq << cap_bits) | slot index */
  uint64_t t_sent; /* ns */
  uint8_t busy;
  uint8_t measured;
} slot_t;

typedef struct conn {
  int fd;
  unsigned index;
  uint8_t dead;
  uint8_t want_out; /* EPOLLOUT is in the set: out has unsent bytes */
  char *in;
  size_t in_len, in_cap, in_scan;
  char *out;
  size_t out_len, out_off, out_cap;
  slot_t *slots;
  uint32_t *free_slots;
  uint32_t nfree;
  uint64_t seq;
  uint64_t sent_since, replies_since; /* since (re)connecting */
} conn_t;

struct bench_run {
  const bench_opts_t *o;
  const bench_workload_t *wl;
  const bench_addr_t *addr;
  bench_result_t *res;
  conn_t *conns;
  unsigned nconns, alive;
  int ep;
  unsigned cap_bits;
  uint64_t r_limit; /* request numbers stay below this */
  uint64_t *batch_ids;
  uint8_t *batch_seen;
  size_t max_in; /* read buffers grow up to this */
  uint64_t inflight;
  uint64_t budget; /* measured requests still to send (-n) */
  uint8_t measuring, sending;
  uint64_t t_measure, t_last_reply;
  uint64_t sec_replies; /* replies since the last progress line */
  unsigned error_lines;
  double cpu0;
  int cpu0_ok;
};

static volatile sig_atomic_t interrupted;

static void on_sigint(int sig) {
  (void)sig;
  interrupted = 1;
}

static uint64_t now_ns(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (uint64_t)ts.tv_sec * NS + (uint64_t)ts.tv_nsec;
}

/* utime + stime of the whole process (all its threads), in seconds. */
static int proc_cpu(long pid, double *out) {
  char path[64], buf[1024];
  snprintf(path, sizeof(path), "/proc/%ld/stat", pid);
  FILE *f = fopen(path, "r");
  if (!f)
    return -1;
  size_t n = fread(buf, 1, sizeof(buf) - 1, f);
  fclose(f);
  buf[n] = '\0';
  /* The name in parentheses may hold anything: fields follow the last ')'. */
  char *p = strrchr(buf, ')');
  unsigned long long ut, st;
  if (!p ||
      sscanf(p + 1, " %*c %*d %*d %*d %*d %*d %*u %*u %*u %*u %*u %llu %llu",
             &ut, &st) != 2)
    return -1;
  *out = (double)(ut + st) / (double)sysconf(_SC_CLK_TCK);
  return 0;
}

static void report_error(bench_run_t *run, const char *fmt, ...) {
  run->res->errors++;
  if (run->error_lines >= MAX_ERROR_LINES)
    return;
  va_list ap;
  va_start(ap, fmt);
  fputs("jrpc-bench: ", stderr);
  vfprintf(stderr, fmt, ap);
  fputc('\n', stderr);
  va_end(ap);
  if (++run->error_lines == MAX_ERROR_LINES)
    fprintf(stderr, "jrpc-bench: (further errors are counted, not shown)\n");
}

static uint64_t in_flight(const bench_run_t *run, const conn_t *c) {
  return run->o->window - c->nfree;
}

/* Abandons the connection and whatever it has in flight. */
static void conn_kill(bench_run_t *run, conn_t *c) {
  if (c->dead)
    return;
  run->inflight -= in_flight(run, c);
  if (c->fd >= 0)
    close(c->fd);
  c->fd = -1;
  c->dead = 1;
  run->alive--;
}

/* A frame that breaks the protocol: the stream cannot be trusted after it. */
static void bad_frame(bench_run_t *run, conn_t *c, const char *why,
                      const char *f, size_t n) {
  report_error(run, "connection %u: %s: %.*s%s", c->index, why,
               (int)(n > 200 ? 200 : n), f, n > 200 ? "..." : "");
  conn_kill(run, c);
}

static void set_events(bench_run_t *run, conn_t *c, int want_out) {
  struct epoll_event ev;
  ev.events = EPOLLIN | (want_out ? EPOLLOUT : 0);
  ev.data.ptr = c;
  if (epoll_ctl(run->ep, EPOLL_CTL_MOD, c->fd, &ev) == 0)
    c->want_out = (uint8_t)want_out;
}

/* One write of what out holds; what the socket does not take waits for
 * EPOLLOUT. */
static void flush(bench_run_t *run, conn_t *c) {
  size_t left = c->out_len - c->out_off;
  ssize_t w = write(c->fd, c->out + c->out_off, left);
  if (w < 0) {
    if ((errno == EPIPE || errno == ECONNRESET) && run->o->allow_lost) {
      /* The server closed: the read side sees it too, and on_eof counts
       * what was in flight and reconnects. Nothing more to write here. */
      if (c->want_out)
        set_events(run, c, 0);
      return;
    }
    if (errno != EAGAIN && errno != EINTR) {
      report_error(run, "connection %u: write: %s", c->index, strerror(errno));
      conn_kill(run, c);
      return;
    }
    w = 0;
  }
  if (run->measuring)
    run->res->bytes_out += (uint64_t)w;
  c->out_off += (size_t)w;
  if (c->out_off == c->out_len) {
    c->out_off = c->out_len = 0;
    if (c->want_out)
      set_events(run, c, 0);
  } else if (!c->want_out) {
    set_events(run, c, 1);
  }
}

/* Fills every free slot that may be used and writes the requests. */
static void send_some(bench_run_t *run, conn_t *c, uint64_t now) {
  if (c->dead || !run->sending || c->out_len)
    return;
  const bench_workload_t *wl = run->wl;
  uint64_t n = c->nfree;
  if (run->measuring && n > run->budget)
    n = run->budget;
  if (run->o->reconnect && n > run->o->reconnect - c->sent_since)
    n = run->o->reconnect - c->sent_since;
  if (n > c->out_cap / wl->len)
    n = c->out_cap / wl->len;
  if (n == 0)
    return;
  char *p = c->out;
  for (uint64_t i = 0; i < n; i++) {
    uint32_t k = c->free_slots[--c->nfree];
    slot_t *s = &c->slots[k];
    uint64_t r = c->seq++ << run->cap_bits | k;
    if (r >= run->r_limit) {
      c->seq = 1;
      r = k;
    }
    s->r = r;
    s->t_sent = now;
    s->busy = 1;
    s->measured = run->measuring;
    bench_workload_render(wl, p, r);
    p += wl->len;
  }
  c->out_len = (size_t)(p - c->out);
  c->out_off = 0;
  if (run->measuring)
    run->budget -= n;
  run->inflight += n;
  c->sent_since += n;
  flush(run, c);
}

/* The busy slot of request number r, or NULL. */
static slot_t *slot_of(bench_run_t *run, conn_t *c, uint64_t r) {
  uint64_t k = r & (((uint64_t)1 << run->cap_bits) - 1);
  if (k >= run->o->window)
    return NULL;
  slot_t *s = &c->slots[k];
  return s->busy && s->r == r ? s : NULL;
}

static inline void complete(bench_run_t *run, conn_t *c, slot_t *s,
                            uint64_t now, uint64_t err_calls) {
  s->busy = 0;
  c->free_slots[c->nfree++] = (uint32_t)(s - c->slots);
  c->replies_since++;
  run->inflight--;
  run->sec_replies++;
  run->t_last_reply = now;
  if (s->measured) {
    bench_result_t *res = run->res;
    res->requests++;
    res->err_replies += err_calls;
    hist_record(&res->hist, now - s->t_sent);
  }
}

static void on_single(bench_run_t *run, conn_t *c, const char *f, size_t n,
                      uint64_t now) {
  const bench_workload_t *wl = run->wl;
  uint64_t id;
  int is_error = 0;
  int rc = reply_fast(f, n, wl->id_digits, &id)
               ? REPLY_OK
               : reply_single(f, n, &id, &is_error);
  if (rc == REPLY_NOT_REPLY) {
    bad_frame(run, c, "not a reply (expected an object with an id)", f, n);
    return;
  }
  slot_t *s = NULL;
  if (rc == REPLY_OK && id >= wl->id_base && id - wl->id_base < wl->id_span)
    s = slot_of(run, c, (id - wl->id_base) / wl->n_ids);
  if (!s) {
    bad_frame(run, c, "the reply's id matches no request in flight", f, n);
    return;
  }
  complete(run, c, s, now, (uint64_t)is_error);
}

/* A batch's reply must hold each of its ids once, in any order. */
static void on_batch(bench_run_t *run, conn_t *c, const char *f, size_t n,
                     uint64_t now) {
  const bench_workload_t *wl = run->wl;
  size_t nids, nerr;
  if (reply_batch(f, n, run->batch_ids, wl->n_ids, &nids, &nerr) != REPLY_OK) {
    bad_frame(run, c, "not a batch reply with our ids", f, n);
    return;
  }
  if (nids != wl->n_ids) {
    char why[96];
    snprintf(why, sizeof(why), "a batch reply with %zu ids, expected %u", nids,
             wl->n_ids);
    bad_frame(run, c, why, f, n);
    return;
  }
  uint64_t r = 0;
  size_t i;
  for (i = 0; i < nids; i++) {
    uint64_t id = run->batch_ids[i];
    if (id < wl->id_base || id - wl->id_base >= wl->id_span)
      break;
    uint64_t u = id - wl->id_base, k = u % wl->n_ids;
    if (i == 0)
      r = u / wl->n_ids;
    if (u / wl->n_ids != r || run->batch_seen[k])
      break;
    run->batch_seen[k] = 1;
  }
  for (size_t j = 0; j < i; j++)
    run->batch_seen[(run->batch_ids[j] - wl->id_base) % wl->n_ids] = 0;
  slot_t *s = i == nids ? slot_of(run, c, r) : NULL;
  if (!s) {
    bad_frame(run, c,
              "a batch reply whose ids are not those of one request in flight",
              f, n);
    return;
  }
  complete(run, c, s, now, nerr);
}

/* With --reconnect, after K replies or a close by the server. Once the
 * run has stopped sending, the connection is simply retired. */
static void reconnect(bench_run_t *run, conn_t *c) {
  if (!run->sending) {
    conn_kill(run, c);
    return;
  }
  close(c->fd);
  c->fd = bench_connect(run->addr);
  if (c->fd < 0) {
    report_error(run, "connection %u: reconnect %s: %s", c->index,
                 run->addr->desc, strerror(errno));
    conn_kill(run, c);
    return;
  }
  struct epoll_event ev = {.events = EPOLLIN, .data.ptr = c};
  if (epoll_ctl(run->ep, EPOLL_CTL_ADD, c->fd, &ev) != 0) {
    report_error(run, "connection %u: epoll: %s", c->index, strerror(errno));
    conn_kill(run, c);
    return;
  }
  c->want_out = 0;
  c->in_len = c->in_scan = 0;
  c->out_len = c->out_off = 0;
  c->sent_since = c->replies_since = 0;
  run->res->reconnects++;
}

/* --allow-lost: the requests in flight on c will never be answered;
 * free their slots. */
static void lose_in_flight(bench_run_t *run, conn_t *c) {
  uint64_t n = in_flight(run, c);
  for (uint32_t k = 0; k < run->o->window; k++) {
    slot_t *s = &c->slots[k];
    if (s->busy) {
      s->busy = 0;
      c->free_slots[c->nfree++] = k;
    }
  }
  run->inflight -= n;
  run->res->lost += n;
}

static void on_eof(bench_run_t *run, conn_t *c) {
  uint64_t n = in_flight(run, c);
  if (run->o->allow_lost && c->in_len == 0) {
    lose_in_flight(run, c);
    c->out_len = c->out_off = 0; /* requests not sent whole are lost too */
    reconnect(run, c);
    send_some(run, c, now_ns());
    return;
  }
  if (run->o->reconnect && n == 0 && c->in_len == 0 && c->out_len == 0) {
    reconnect(run, c);
    send_some(run, c, now_ns());
    return;
  }
  if (c->in_len)
    report_error(run,
                 "connection %u: the server closed it in the middle of a "
                 "reply (%llu requests in flight)",
                 c->index, (unsigned long long)n);
  else
    report_error(run,
                 "connection %u: the server closed it (%llu requests in "
                 "flight)%s",
                 c->index, (unsigned long long)n,
                 run->o->reconnect ? "" : "; see --reconnect");
  conn_kill(run, c);
}

/* Room for at least one more byte; 0, or -1 once at max_in. */
static int grow_in(bench_run_t *run, conn_t *c) {
  if (c->in_cap >= run->max_in)
    return -1;
  size_t cap = c->in_cap * 2;
  if (cap > run->max_in)
    cap = run->max_in;
  char *p = realloc(c->in, cap);
  if (!p)
    return -1;
  c->in = p;
  c->in_cap = cap;
  return 0;
}

/* The next reply's JSON text in c->in from *pos: REPLY_FRAME,
 * REPLY_NEED_MORE or REPLY_TOO_BIG; over HTTP, a response that is not a
 * 200 with a body (a 204 is the answer to a notification: skipped) kills
 * the connection, and the result is REPLY_NEED_MORE. */
static int next_frame(bench_run_t *run, conn_t *c, size_t *pos, const char **f,
                      size_t *n) {
  const bench_opts_t *o = run->o;
  if (o->framing != FRAMING_HTTP)
    return reply_next_frame(o->framing, c->in, c->in_len, pos, &c->in_scan,
                            o->max_frame, f, n);
  for (;;) {
    http_response_t r;
    const char *why = "";
    int rc = http_next_response(c->in, c->in_len, pos, &c->in_scan,
                                o->max_frame, &r, &why);
    if (rc == HTTP_TOO_BIG)
      return REPLY_TOO_BIG;
    if (rc == HTTP_BAD) {
      bad_frame(run, c, why, c->in + *pos, c->in_len - *pos);
      return REPLY_NEED_MORE;
    }
    if (rc == HTTP_NEED_MORE)
      return REPLY_NEED_MORE;
    if (r.status == 204)
      continue;
    if (r.status != 200 || r.body_len == 0) {
      char msg[64];
      snprintf(msg, sizeof(msg), "HTTP status %u%s", r.status,
               r.body_len ? "" : " with no body");
      bad_frame(run, c, msg, r.body, r.body_len);
      return REPLY_NEED_MORE;
    }
    *f = r.body;
    *n = r.body_len;
    return REPLY_FRAME;
  }
}

static void on_readable(bench_run_t *run, conn_t *c) {
  if (c->in_len == c->in_cap && grow_in(run, c)) {
    report_error(run, "connection %u: a reply frame over --max-frame %zu",
                 c->index, run->o->max_frame);
    conn_kill(run, c);
    return;
  }
  ssize_t got = read(c->fd, c->in + c->in_len, c->in_cap - c->in_len);
  if (got <= 0) {
    if (got == 0)
      on_eof(run, c);
    else if (errno == ECONNRESET)
      on_eof(run, c);
    else if (errno != EAGAIN && errno != EINTR) {
      report_error(run, "connection %u: read: %s", c->index, strerror(errno));
      conn_kill(run, c);
    }
    return;
  }
  uint64_t now = now_ns();
  if (run->measuring)
    run->res->bytes_in += (uint64_t)got;
  c->in_len += (size_t)got;
  size_t pos = 0;
  const char *f;
  size_t n;
  int rc;
  while ((rc = next_frame(run, c, &pos, &f, &n)) == REPLY_FRAME) {
    if (run->wl->batch)
      on_batch(run, c, f, n, now);
    else
      on_single(run, c, f, n, now);
    if (c->dead)
      return;
  }
  if (c->dead)
    return;
  if (rc == REPLY_TOO_BIG) {
    report_error(run, "connection %u: a reply frame over --max-frame %zu",
                 c->index, run->o->max_frame);
    conn_kill(run, c);
    return;
  }
  if (pos == c->in_len) {
    c->in_len = c->in_scan = 0;
  } else if (pos) {
    memmove(c->in, c->in + pos, c->in_len - pos);
    c->in_len -= pos;
    c->in_scan -= pos;
  }
  if (run->o->reconnect && c->replies_since >= run->o->reconnect &&
      in_flight(run, c) == 0 && c->in_len == 0)
    reconnect(run, c);
  send_some(run, c, now);
}

static void start_measuring(bench_run_t *run, uint64_t now) {
  run->measuring = 1;
  run->t_measure = run->t_last_reply = now;
  if (run->o->pid)
    run->cpu0_ok = proc_cpu(run->o->pid, &run->cpu0) == 0;
}

static void progress(bench_run_t *run, uint64_t t_start, uint64_t now) {
  double secs = (double)(now - t_start) / 1e9;
  fprintf(stderr, "jrpc-bench: %5.1f s %10llu req/s %6llu errors%s\n", secs,
          (unsigned long long)run->sec_replies,
          (unsigned long long)run->res->errors,
          run->measuring ? "" : " (warm-up)");
  run->sec_replies = 0;
}

static int conn_init(bench_run_t *run, conn_t *c, unsigned index) {
  const bench_opts_t *o = run->o;
  c->index = index;
  c->fd = -1;
  size_t cap_slots = (size_t)1 << run->cap_bits;
  c->slots = calloc(cap_slots, sizeof(*c->slots));
  c->free_slots = malloc(o->window * sizeof(*c->free_slots));
  /* Room for a window of replies about as big as the requests; bigger
   * frames grow it. */
  size_t in = 2 * o->window * (run->wl->len + 64);
  c->in_cap = in < 16384 ? 16384 : in > 262144 ? 262144 : in;
  if (c->in_cap > run->max_in)
    c->in_cap = run->max_in;
  c->in = malloc(c->in_cap);
  size_t out = (size_t)o->window * run->wl->len;
  c->out_cap = out > MAX_OUT_BYTES ? MAX_OUT_BYTES : out;
  if (c->out_cap < run->wl->len)
    c->out_cap = run->wl->len;
  c->out = malloc(c->out_cap);
  if (!c->slots || !c->free_slots || !c->in || !c->out)
    return -1;
  /* Popped from the end: slot 0 goes first. */
  for (uint32_t i = 0; i < o->window; i++)
    c->free_slots[i] = o->window - 1 - i;
  c->nfree = o->window;
  c->seq = 1;
  return 0;
}

int bench_run_open(bench_run_t **out, const bench_opts_t *o,
                   const bench_workload_t *wl, const bench_addr_t *addr) {
  bench_run_t *run = calloc(1, sizeof(*run));
  *out = run;
  if (!run)
    goto oom;
  run->o = o;
  run->wl = wl;
  run->addr = addr;
  run->ep = -1;
  while (((uint64_t)1 << run->cap_bits) < o->window)
    run->cap_bits++;
  run->r_limit = wl->id_span / wl->n_ids;
  run->max_in = o->max_frame + 8;
  run->conns = calloc(o->connections, sizeof(*run->conns));
  if (!run->conns)
    goto oom;
  if (wl->batch) {
    run->batch_ids = malloc(wl->n_ids * sizeof(*run->batch_ids));
    run->batch_seen = calloc(wl->n_ids, 1);
    if (!run->batch_ids || !run->batch_seen)
      goto oom;
  }
  run->ep = epoll_create1(EPOLL_CLOEXEC);
  if (run->ep < 0) {
    fprintf(stderr, "jrpc-bench: epoll_create1: %s\n", strerror(errno));
    return 2;
  }
  for (unsigned i = 0; i < o->connections; i++) {
    conn_t *c = &run->conns[i];
    run->nconns = i + 1;
    if (conn_init(run, c, i))
      goto oom;
    c->fd = bench_connect(addr);
    if (c->fd < 0) {
      fprintf(stderr, "jrpc-bench: connect %s: %s", addr->desc,
              strerror(errno));
      if (i)
        fprintf(stderr, " (after %u connections)", i);
      fputc('\n', stderr);
      return 2;
    }
    struct epoll_event ev = {.events = EPOLLIN, .data.ptr = c};
    if (epoll_ctl(run->ep, EPOLL_CTL_ADD, c->fd, &ev) != 0) {
      fprintf(stderr, "jrpc-bench: epoll_ctl: %s\n", strerror(errno));
      return 2;
    }
    run->alive++;
  }
  return 0;
oom:
  fprintf(stderr, "jrpc-bench: out of memory\n");
  return 2;
}

/* Milliseconds until `at`, rounded up so that the wait does not end early. */
static int wait_ms(uint64_t now, uint64_t at) {
  if (at <= now)
    return 0;
  uint64_t ms = (at - now + 999999) / 1000000;
  return ms > 1000 ? 1000 : (int)ms;
}

void bench_run_go(bench_run_t *run, bench_result_t *res) {
  const bench_opts_t *o = run->o;
  memset(res, 0, sizeof(*res));
  run->res = res;
  struct sigaction sa, old_int, old_term;
  memset(&sa, 0, sizeof(sa));
  sa.sa_handler = on_sigint;
  sigemptyset(&sa.sa_mask);
  sa.sa_flags = SA_RESETHAND; /* a second ^C ends it at once */
  sigaction(SIGINT, &sa, &old_int);
  sigaction(SIGTERM, &sa, &old_term);

  uint64_t t_start = now_ns();
  uint64_t t_warm_end = t_start + (uint64_t)(o->warmup * 1e9);
  uint64_t t_deadline = UINT64_MAX;
  uint64_t timeout_ns = (uint64_t)(o->timeout * 1e9);
  uint64_t t_tick = t_start + NS;
  run->budget = o->requests ? o->requests : UINT64_MAX;
  run->sending = 1;
  run->t_last_reply = t_start;
  if (o->warmup <= 0) {
    start_measuring(run, t_start);
    if (o->duration > 0)
      t_deadline = t_start + (uint64_t)(o->duration * 1e9);
  }
  for (unsigned i = 0; i < run->nconns; i++)
    send_some(run, &run->conns[i], t_start);

  struct epoll_event evs[256];
  int maxev = run->nconns < 256 ? (int)run->nconns : 256;
  uint64_t now = t_start;
  while (run->alive && (run->sending || run->inflight)) {
    uint64_t next = t_deadline;
    if (!run->measuring && t_warm_end < next)
      next = t_warm_end;
    if (!o->quiet && t_tick < next)
      next = t_tick;
    if (run->inflight && run->t_last_reply + timeout_ns < next)
      next = run->t_last_reply + timeout_ns;
    int nev = epoll_wait(run->ep, evs, maxev, wait_ms(now, next));
    for (int i = 0; i < nev; i++) {
      conn_t *c = evs[i].data.ptr;
      if (c->dead)
        continue;
      if (evs[i].events & (EPOLLIN | EPOLLHUP | EPOLLERR))
        on_readable(run, c);
      if (!c->dead && (evs[i].events & EPOLLOUT) && c->out_len)
        flush(run, c);
    }
    now = now_ns();
    if (!run->measuring && now >= t_warm_end) {
      start_measuring(run, now);
      if (o->duration > 0)
        t_deadline = now + (uint64_t)(o->duration * 1e9);
      for (unsigned i = 0; i < run->nconns; i++)
        send_some(run, &run->conns[i], now);
    }
    if (run->sending &&
        (interrupted || now >= t_deadline || (run->measuring && !run->budget)))
      run->sending = 0;
    if (interrupted)
      res->interrupted = 1;
    if (run->inflight && now - run->t_last_reply >= timeout_ns) {
      report_error(run, "no reply for %g s with %llu requests in flight",
                   o->timeout, (unsigned long long)run->inflight);
      break;
    }
    if (!o->quiet && now >= t_tick) {
      progress(run, t_start, now);
      while (t_tick <= now)
        t_tick += NS;
    }
  }
  if (run->inflight && !run->alive)
    run->inflight = 0;
  if (run->measuring) {
    res->elapsed = (double)(run->t_last_reply - run->t_measure) / 1e9;
    double cpu1;
    if (o->pid && run->cpu0_ok && proc_cpu(o->pid, &cpu1) == 0) {
      res->have_cpu = 1;
      res->cpu_s = cpu1 - run->cpu0;
    }
  }
  sigaction(SIGINT, &old_int, NULL);
  sigaction(SIGTERM, &old_term, NULL);
}

void bench_run_close(bench_run_t *run) {
  if (!run)
    return;
  for (unsigned i = 0; i < run->nconns; i++) {
    conn_t *c = &run->conns[i];
    if (c->fd >= 0)
      close(c->fd);
    free(c->slots);
    free(c->free_slots);
    free(c->in);
    free(c->out);
  }
  if (run->ep >= 0)
    close(run->ep);
  free(run->conns);
  free(run->batch_ids);
  free(run->batch_seen);
  free(run);
}
