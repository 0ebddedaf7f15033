/* accesslog.c - [server] access_log; see accesslog.h.
 *
 * A text line, fields in this order, space-separated:
 *   TIME LISTENER KIND CODE MICROSECONDS BYTES "PEER" "METHOD"
 * so that awk '{print $4}' is the outcome code and awk -F'"' '{print $4}'
 * the method: nothing inside the quotes is a quote (see text_escape). A
 * JSON line is one object with the same fields by name. */
#include "accesslog.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "jsontext.h"
#include "listener.h"
#include "log.h"
#include "peer.h"

#define WRITER_PERIOD_MS 100 /* how often the writer looks at the buffers */
#define STOP_WAIT_MS 1000    /* at the stop, for a file that takes nothing */
#define LISTENER_MAX 64      /* bytes of its name kept in a line */
/* A line at its longest: method and listener escaped at 6 bytes a byte
 * (JSON's \u00XX), the peer (under 96) and the rest (under 200). */
#define LINE_MAX_BYTES 2048

static int open_log(const char *path) {
  /* Non-blocking: a FIFO whose reader stops reading must not hold the
   * writer in write() past a stop (regular files ignore the flag). */
  return open(path, O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC | O_NONBLOCK,
              0640);
}

/* ---- formatting ---- */

typedef struct line {
  char *p, *end;
} line_t;

static inline void put(line_t *l, const char *s, size_t n) {
  if ((size_t)(l->end - l->p) < n)
    n = (size_t)(l->end - l->p);
  memcpy(l->p, s, n);
  l->p += n;
}

static void put_str(line_t *l, const char *s) {
  put(l, s, strlen(s));
}

static void put_u64(line_t *l, uint64_t v) {
  char tmp[24];
  size_t i = sizeof(tmp);
  do
    tmp[--i] = (char)('0' + v % 10);
  while (v /= 10);
  put(l, tmp + i, sizeof(tmp) - i);
}

static void put_i64(line_t *l, int64_t v) {
  if (v < 0) {
    put(l, "-", 1);
    put_u64(l, (uint64_t)0 - (uint64_t)v);
  } else {
    put_u64(l, (uint64_t)v);
  }
}

static void put_hex(line_t *l, const char *prefix, unsigned char c) {
  static const char hex[] = "0123456789abcdef";
  put_str(l, prefix);
  char h[2] = {hex[c >> 4], hex[c & 15]};
  put(l, h, 2);
}

/* Text: printable ASCII as it is, every other byte, the quote and the
 * backslash as \xHH, and (unquoted fields) the space too; so a line holds
 * exactly one newline, at its end, and no quote a field did not put. */
/* Bytes written as they are, by where (a byte's bits): filled once by
 * the first jrpcd_accesslog_open, before any worker runs. */
enum { PLAIN_QUOTED = 1, PLAIN_UNQUOTED = 2, PLAIN_JSON = 4 };
static uint8_t plain[256];

static void plain_init(void) {
  for (unsigned c = 0; c < 256; c++) {
    int printable = c > 0x20 && c < 0x7f && c != '"' && c != '\\';
    plain[c] = (uint8_t)((printable || c == ' ' ? PLAIN_QUOTED : 0) |
                         (printable ? PLAIN_UNQUOTED : 0) |
                         (printable || c == ' ' ? PLAIN_JSON : 0));
  }
}

static void text_escape(line_t *l, const char *s, size_t n, int space) {
  uint8_t want = space ? PLAIN_UNQUOTED : PLAIN_QUOTED;
  size_t i = 0;
  while (i < n) {
    size_t run = i; /* plain bytes go in one copy */
    while (run < n && (plain[(unsigned char)s[run]] & want))
      run++;
    put(l, s + i, run - i);
    if (run < n)
      put_hex(l, "\\x", (unsigned char)s[run++]);
    i = run;
  }
}

/* JSON: a string's content; well-formed UTF-8 as it is, anything else
 * (a lone surrogate a \u escape decoded to, a sequence cut short) as
 * U+FFFD. */
static void json_escape(line_t *l, const char *s, size_t n, int space) {
  (void)space; /* inside quotes always */
  const unsigned char *p = (const unsigned char *)s, *end = p + n;
  while (p < end) {
    const unsigned char *run = p; /* plain ASCII goes in one copy */
    while (run < end && (plain[*run] & PLAIN_JSON))
      run++;
    put(l, (const char *)p, (size_t)(run - p));
    if ((p = run) == end)
      break;
    unsigned char c = *p;
    if (c == '"' || c == '\\') {
      char e[2] = {'\\', (char)c};
      put(l, e, 2);
      p++;
    } else if (c < 0x20) {
      put_hex(l, "\\u00", c);
      p++;
    } else {
      size_t k = jrpc__utf8_seq(p, end);
      if (k) {
        put(l, (const char *)p, k);
        p += k;
      } else {
        put_str(l, "\\ufffd");
        p++;
      }
    }
  }
}

/* "2026-12-02T03:28:43.123Z": the second's text is made once a second. */
static void put_time(line_t *l, jrpcd_alog_worker_t *w) {
  struct timespec ts;
  clock_gettime(CLOCK_REALTIME, &ts);
  if (ts.tv_sec != w->sec) {
    struct tm tm;
    time_t t = ts.tv_sec;
    gmtime_r(&t, &tm);
    strftime(w->sec_text, sizeof(w->sec_text), "%Y-%m-%dT%H:%M:%S", &tm);
    w->sec = ts.tv_sec;
  }
  put_str(l, w->sec_text);
  unsigned ms = (unsigned)(ts.tv_nsec / 1000000);
  char frac[6] = {'.',
                  (char)('0' + ms / 100),
                  (char)('0' + ms / 10 % 10),
                  (char)('0' + ms % 10),
                  'Z',
                  0};
  put(l, frac, 5);
}

/* What a line says of a call, in either format; the peer already escaped
 * for it. */
typedef struct fields {
  const char *listener, *peer, *kind, *method; /* method NULL: none */
  size_t listener_n, method_n;
  int cut; /* method_n is the first JRPCD_ALOG_METHOD_MAX bytes */
  int code;
  uint64_t us, bytes;
} fields_t;

/* access_log_format: a row each (JRPCD_ALOG_*): how a string is escaped,
 * and what stands before each field and at the line's end (write_fields). */
static const struct format {
  /* A string inside the line's quotes (space: outside them). */
  void (*escape)(line_t *l, const char *s, size_t n, int space);
  /* Before time, listener, kind, code, us, bytes, peer and method. */
  const char *lead[8];
  /* After a method cut short, after a whole one, instead of none. */
  const char *cut_end, *end, *no_method;
} formats[] = {
    [JRPCD_ALOG_TEXT] = {text_escape,
                         {"", " ", " ", " ", " ", " ", " \"", "\" \""},
                         /* A backslash is never written bare otherwise:
                          * unambiguous. */
                         "\\...\"",
                         "\"",
                         "\" -"},
    [JRPCD_ALOG_JSON] = {json_escape,
                         {"{\"time\":\"", "\",\"listener\":\"",
                          "\",\"kind\":\"", "\",\"code\":", ",\"us\":",
                          ",\"bytes\":", ",\"peer\":\"", "\",\"method\":\""},
                         "\",\"method_cut\":true}",
                         "\"}",
                         "\",\"method\":null}"},
};

static void fields_of(jrpcd_alog_worker_t *w, const jrpc__call_done_t *d,
                      fields_t *f) {
  const jrpcd_listener_t *lis = d->origin;
  f->listener = lis ? lis->name : "-";
  f->listener_n = strnlen(f->listener, LISTENER_MAX);
  /* Compared whole, not by address: a new connection may take the place
   * of one that closed. */
  if (memcmp(d->peer, &w->peer, sizeof(w->peer)) != 0) {
    char raw[96];
    jrpcd_peer_text(d->peer, raw, sizeof(raw));
    line_t pl = {w->peer_text, w->peer_text + sizeof(w->peer_text) - 1};
    formats[w->log->format].escape(&pl, raw, strlen(raw), 0);
    *pl.p = 0;
    w->peer = *d->peer;
  }
  f->peer = w->peer_text;
  f->kind = d->notify ? "notification" : "call";
  f->method = d->method;
  f->method_n = d->method_n;
  f->cut = f->method_n > JRPCD_ALOG_METHOD_MAX;
  if (f->cut)
    f->method_n = JRPCD_ALOG_METHOD_MAX;
  f->code = d->code;
  f->us = d->end_ns > d->start_ns ? (d->end_ns - d->start_ns) / 1000u : 0;
  f->bytes = d->reply_bytes;
}

/* TIME LISTENER KIND CODE US BYTES "PEER" "METHOD" in text (see the
 * top), the same fields as one object in JSON. */
static void write_fields(line_t *l, jrpcd_alog_worker_t *w,
                         const struct format *fm, const fields_t *f) {
  put_str(l, fm->lead[0]);
  put_time(l, w);
  put_str(l, fm->lead[1]);
  fm->escape(l, f->listener, f->listener_n, 1);
  put_str(l, fm->lead[2]);
  put_str(l, f->kind);
  put_str(l, fm->lead[3]);
  put_i64(l, f->code);
  put_str(l, fm->lead[4]);
  put_u64(l, f->us);
  put_str(l, fm->lead[5]);
  put_u64(l, f->bytes);
  put_str(l, fm->lead[6]);
  put_str(l, f->peer);
  if (!f->method) {
    put_str(l, fm->no_method);
    return;
  }
  put_str(l, fm->lead[7]);
  fm->escape(l, f->method, f->method_n, 0);
  put_str(l, f->cut ? fm->cut_end : fm->end);
}

static size_t format_line(jrpcd_alog_worker_t *w, const jrpc__call_done_t *d,
                          char *buf, size_t cap) {
  line_t l = {buf, buf + cap - 1}; /* room kept for the newline */
  fields_t f;
  fields_of(w, d, &f);
  write_fields(&l, w, &formats[w->log->format], &f);
  *l.p++ = '\n';
  return (size_t)(l.p - buf);
}

/* ---- the workers' side ---- */

static void wake_writer(jrpcd_accesslog_t *l) {
  pthread_mutex_lock(&l->mu);
  l->wake = 1;
  pthread_cond_signal(&l->cv);
  pthread_mutex_unlock(&l->mu);
}

void jrpcd_accesslog_note(void *arg, const jrpc__call_done_t *d) {
  jrpcd_alog_worker_t *w = arg;
  char line[LINE_MAX_BYTES];
  size_t n = format_line(w, d, line, sizeof(line));
  pthread_mutex_lock(&w->mu);
  if (w->len + n > JRPCD_ALOG_BUF) {
    pthread_mutex_unlock(&w->mu);
    atomic_fetch_add_explicit(&w->log->dropped, 1, memory_order_relaxed);
    return;
  }
  memcpy(w->buf + w->len, line, n);
  w->len += n;
  /* Half full: the writer comes now rather than at its next period (once
   * per fill, so the worker seldom takes the writer's lock). */
  int kick = !w->kicked && w->len >= JRPCD_ALOG_BUF / 2;
  w->kicked |= (uint8_t)kick;
  pthread_mutex_unlock(&w->mu);
  if (kick)
    wake_writer(w->log);
}

/* ---- the writer ---- */

static uint64_t lines_in(const char *p, size_t n) {
  uint64_t k = 0;
  for (const char *e = p + n; (p = memchr(p, '\n', (size_t)(e - p))); p++)
    k++;
  return k;
}

static uint64_t now_ms(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (uint64_t)ts.tv_sec * 1000u + (uint64_t)ts.tv_nsec / 1000000u;
}

/* Writes p whole; on a file that takes nothing (a FIFO nobody reads),
 * waits, which only fills the workers' buffers (their lines are then
 * dropped), until the stop, after which it waits STOP_WAIT_MS at most.
 * What is not written is counted dropped. */
static void write_all(jrpcd_accesslog_t *l, int fd, const char *p, size_t n) {
  uint64_t give_up = 0;
  while (n > 0) {
    ssize_t k = write(fd, p, n);
    if (k > 0) {
      p += k;
      n -= (size_t)k;
      l->write_errno = 0;
      continue;
    }
    if (k < 0 && errno == EINTR)
      continue;
    if (k < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
      if (atomic_load(&l->stop)) {
        uint64_t now = now_ms();
        if (!give_up)
          give_up = now + STOP_WAIT_MS;
        else if (now >= give_up)
          break;
      }
      struct pollfd pfd = {fd, POLLOUT, 0};
      poll(&pfd, 1, WRITER_PERIOD_MS);
      continue;
    }
    /* A full disk fails every round: a line a minute says so, and the
     * dropped counter has every line. */
    int err = k < 0 ? errno : EIO;
    uint64_t now = now_ms();
    if (err != l->write_errno || now - l->write_err_ms >= 60000) {
      jrpcd_error("access_log %s: cannot write: %s; lines are dropped (and "
                  "counted) until it can",
                  l->path, strerror(err));
      l->write_errno = err;
      l->write_err_ms = now;
    }
    break;
  }
  if (n > 0)
    atomic_fetch_add_explicit(&l->dropped, lines_in(p, n),
                              memory_order_relaxed);
}

static void flush_workers(jrpcd_accesslog_t *l, int fd) {
  for (unsigned i = 0; i < l->nworkers; i++) {
    jrpcd_alog_worker_t *w = &l->workers[i];
    pthread_mutex_lock(&w->mu);
    char *full = w->buf;
    size_t n = w->len;
    w->buf = l->spare;
    w->len = 0;
    w->kicked = 0;
    pthread_mutex_unlock(&w->mu);
    l->spare = full;
    if (n)
      write_all(l, fd, full, n);
  }
}

static void *writer_main(void *arg) {
  jrpcd_accesslog_t *l = arg;
  for (;;) {
    pthread_mutex_lock(&l->mu);
    if (!l->wake && !atomic_load(&l->stop)) {
      struct timespec until;
      clock_gettime(CLOCK_MONOTONIC, &until);
      until.tv_nsec += WRITER_PERIOD_MS * 1000000L;
      if (until.tv_nsec >= 1000000000L) {
        until.tv_sec++;
        until.tv_nsec -= 1000000000L;
      }
      pthread_cond_timedwait(&l->cv, &l->mu, &until);
    }
    l->wake = 0;
    int old = -1;
    if (l->next_fd >= 0) {
      old = l->fd;
      l->fd = l->next_fd;
      l->next_fd = -1;
    }
    int stop = atomic_load(&l->stop);
    pthread_mutex_unlock(&l->mu);
    if (old >= 0)
      close(old);
    flush_workers(l, l->fd);
    if (stop)
      return NULL;
  }
}

/* ---- the main thread's ---- */

static void free_log(jrpcd_accesslog_t *l) {
  for (unsigned i = 0; l->workers && i < l->nworkers; i++) {
    pthread_mutex_destroy(&l->workers[i].mu);
    free(l->workers[i].buf);
  }
  free(l->workers);
  free(l->spare);
  free(l->path);
  if (l->fd >= 0)
    close(l->fd);
  if (l->next_fd >= 0)
    close(l->next_fd);
  memset(l, 0, sizeof(*l));
  l->fd = l->next_fd = -1;
}

int jrpcd_accesslog_open(jrpcd_accesslog_t *l, const char *path, int format,
                         unsigned nworkers, char *err, size_t errlen) {
  plain_init();
  memset(l, 0, sizeof(*l));
  l->fd = l->next_fd = -1;
  l->format = format;
  l->nworkers = nworkers;
  l->path = strdup(path);
  l->workers = calloc(nworkers, sizeof(*l->workers));
  l->spare = malloc(JRPCD_ALOG_BUF);
  if (!l->path || !l->workers || !l->spare) {
    snprintf(err, errlen, "out of memory");
    free_log(l);
    return -1;
  }
  for (unsigned i = 0; i < nworkers; i++) {
    jrpcd_alog_worker_t *w = &l->workers[i];
    w->log = l;
    w->sec = -1;
    w->peer.family = -1; /* no peer has it: the first call fills the text */
    pthread_mutex_init(&w->mu, NULL);
    if (!(w->buf = malloc(JRPCD_ALOG_BUF))) {
      snprintf(err, errlen, "out of memory");
      free_log(l);
      return -1;
    }
  }
  l->fd = open_log(path);
  if (l->fd < 0) {
    snprintf(err, errlen, "cannot open %s: %s", path,
             errno == ENXIO ? "a FIFO with no reader" : strerror(errno));
    free_log(l);
    return -1;
  }
  pthread_mutex_init(&l->mu, NULL);
  pthread_condattr_t ca;
  pthread_condattr_init(&ca);
  pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
  pthread_cond_init(&l->cv, &ca);
  pthread_condattr_destroy(&ca);
  int rc = pthread_create(&l->thread, NULL, writer_main, l);
  if (rc) {
    snprintf(err, errlen, "cannot start the access log's thread: %s",
             strerror(rc));
    pthread_cond_destroy(&l->cv);
    pthread_mutex_destroy(&l->mu);
    free_log(l);
    return -1;
  }
  l->started = 1;
  return 0;
}

jrpcd_alog_worker_t *jrpcd_accesslog_worker(jrpcd_accesslog_t *l, unsigned i) {
  return &l->workers[i];
}

void jrpcd_accesslog_reopen(jrpcd_accesslog_t *l) {
  int fd = open_log(l->path);
  if (fd < 0) {
    jrpcd_error("access_log: cannot reopen %s: %s; still writing to the "
                "file opened before",
                l->path, strerror(errno));
    return;
  }
  pthread_mutex_lock(&l->mu);
  int older = l->next_fd; /* two signals before the writer came round */
  l->next_fd = fd;
  l->wake = 1;
  pthread_cond_signal(&l->cv);
  pthread_mutex_unlock(&l->mu);
  if (older >= 0)
    close(older);
  jrpcd_info("access_log: reopened %s", l->path);
}

uint64_t jrpcd_accesslog_dropped(const jrpcd_accesslog_t *l) {
  return atomic_load_explicit(&((jrpcd_accesslog_t *)l)->dropped,
                              memory_order_relaxed);
}

void jrpcd_accesslog_close(jrpcd_accesslog_t *l) {
  if (!l->started)
    return;
  atomic_store(&l->stop, 1);
  wake_writer(l);
  pthread_join(l->thread, NULL);
  uint64_t dropped = jrpcd_accesslog_dropped(l);
  if (dropped)
    jrpcd_warn("access_log %s: %llu lines dropped since the start (the file "
               "did not keep up)",
               l->path, (unsigned long long)dropped);
  pthread_cond_destroy(&l->cv);
  pthread_mutex_destroy(&l->mu);
  free_log(l);
}
