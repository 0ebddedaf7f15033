/* echo_server.c - echo-server, the raw-transport baseline for jrpc-bench:
 * jrpcd's transport (libuv, N worker threads each with its own loop and
 * its own handle on a dup() of the listening socket, framing, batched
 * writes) with no JSON-RPC behind it.
 *
 * It parses no JSON. For each frame it takes the bytes after the LAST
 * `"id":` up to the next ',' or '}' (blanks trimmed) and answers
 *   {"jsonrpc":"2.0","result":3,"id":<those bytes>}
 * A frame with no `"id":` that names a "method" is taken for a
 * notification and gets no reply; any other frame without one gets the
 * reply with id null. A batch (a frame starting with '[') gets an array
 * with one such reply per `"id":` in it, in order, or nothing when it has
 * none: good enough for a baseline, not JSON-RPC (an "id" key inside
 * params counts too).
 *
 * Each connection keeps its own input buffer (grown for a long frame, then
 * reused) and two output buffers: the replies of one read are appended to
 * one, sent with uv_try_write, and whatever the socket does not take goes
 * out with uv_write from there while the next replies gather in the
 * other. In steady state nothing is allocated per request.
 *
 * A frame "!fan N BYTES" (push-bench's baseline for server push) is
 * answered with N frames of BYTES bytes each, the newline included, all
 * 'x': the bytes a fan-out of N notifications writes to one connection.
 *
 * usage: echo-server (-u PATH | -t HOST:PORT) [-f newline|length]
 *                    [-j WORKERS]
 * SIGTERM or SIGINT: close everything, remove the socket file, exit 0. */
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <netinet/in.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>
#include <uv.h>

#define IN_MIN ((size_t)64 << 10)
#define FRAME_MAX ((size_t)256 << 20)
#define OUT_HIGH ((size_t)4 << 20) /* stop reading while this much waits */

static const char reply_head[] = "{\"jsonrpc\":\"2.0\",\"result\":3,\"id\":";

typedef struct buf {
  char *p;
  size_t len, cap;
} buf_t;

typedef union handle {
  uv_handle_t h;
  uv_stream_t s;
  uv_pipe_t pipe;
  uv_tcp_t tcp;
} handle_t;

struct worker;

typedef struct conn {
  handle_t h;
  struct worker *w;
  struct conn *prev, *next;
  buf_t in;
  size_t scan; /* newline framing: where the search for '\n' resumes */
  buf_t out;   /* replies gathering */
  buf_t wbuf;  /* replies in the uv_write in flight */
  uv_write_t wreq;
  int oom;
  uint8_t writing, paused, eof, closing;
} conn_t;

typedef struct worker {
  uv_thread_t thread;
  uv_loop_t loop;
  uv_async_t stop;
  handle_t server;
  conn_t conns; /* list head */
  uint8_t started;
} worker_t;

static struct {
  int is_unix;
  int length_framing;
  const char *path;
  int fd;
} srv = {.fd = -1};

/* ---- buffers ---- */

static int buf_reserve(buf_t *b, size_t extra) {
  if (b->len + extra <= b->cap)
    return 0;
  size_t cap = b->cap ? b->cap : 4096;
  while (cap < b->len + extra)
    cap *= 2;
  char *p = realloc(b->p, cap);
  if (!p)
    return -1;
  b->p = p;
  b->cap = cap;
  return 0;
}

static void buf_put(conn_t *c, buf_t *b, const void *s, size_t n) {
  if (buf_reserve(b, n)) {
    c->oom = 1;
    return;
  }
  memcpy(b->p + b->len, s, n);
  b->len += n;
}

/* ---- replies ---- */

static int blank(char ch) {
  return ch == ' ' || ch == '\t' || ch == '\r' || ch == '\n';
}

/* The id value after `"id":` at f[at..], blanks trimmed. */
static void id_value(const char *f, size_t n, size_t at, const char **v,
                     size_t *vn) {
  size_t e = at;
  while (e < n && f[e] != ',' && f[e] != '}')
    e++;
  while (at < e && blank(f[at]))
    at++;
  while (e > at && blank(f[e - 1]))
    e--;
  *v = f + at;
  *vn = e - at;
}

static void put_reply(conn_t *c, const char *id, size_t idn) {
  if (!idn) {
    id = "null";
    idn = 4;
  }
  buf_put(c, &c->out, reply_head, sizeof(reply_head) - 1);
  buf_put(c, &c->out, id, idn);
  buf_put(c, &c->out, "}", 1);
}

/* Opens a frame in out; returns where its length prefix goes. */
static size_t frame_begin(conn_t *c) {
  size_t at = c->out.len;
  if (srv.length_framing)
    buf_put(c, &c->out, "\0\0\0\0", 4);
  return at;
}

static void frame_end(conn_t *c, size_t at) {
  if (c->oom)
    return;
  if (!srv.length_framing) {
    buf_put(c, &c->out, "\n", 1);
    return;
  }
  size_t n = c->out.len - at - 4;
  unsigned char *h = (unsigned char *)c->out.p + at;
  h[0] = (unsigned char)(n >> 24);
  h[1] = (unsigned char)(n >> 16);
  h[2] = (unsigned char)(n >> 8);
  h[3] = (unsigned char)n;
}

static const char *find(const char *f, size_t n, const char *s, size_t sn) {
  return n >= sn ? memmem(f, n, s, sn) : NULL;
}

/* "!fan N BYTES": N frames of BYTES bytes (1 <= N, 2 <= BYTES, both at
 * most 2^20); 0 for any other frame. */
static int fan(conn_t *c, const char *f, size_t n) {
  char spec[64];
  unsigned long count, bytes;
  if (n < 5 || n >= sizeof spec || memcmp(f, "!fan ", 5) != 0)
    return 0;
  memcpy(spec, f + 5, n - 5);
  spec[n - 5] = '\0';
  if (sscanf(spec, "%lu %lu", &count, &bytes) != 2 || count < 1 ||
      count > 1u << 20 || bytes < 2 || bytes > 1u << 20)
    return 0;
  for (unsigned long k = 0; k < count && !c->oom; k++) {
    size_t at = frame_begin(c);
    if (buf_reserve(&c->out, bytes - 1)) {
      c->oom = 1;
      break;
    }
    memset(c->out.p + c->out.len, 'x', bytes - 1);
    c->out.len += bytes - 1;
    frame_end(c, at);
  }
  return 1;
}

static void on_frame(conn_t *c, const char *f, size_t n) {
  if (n && f[0] == '!' && fan(c, f, n))
    return;
  size_t i = 0;
  while (i < n && blank(f[i]))
    i++;
  if (i < n && f[i] == '[') {
    size_t at = 0;
    int any = 0;
    const char *p = f, *end = f + n;
    while ((p = find(p, (size_t)(end - p), "\"id\":", 5)) != NULL) {
      const char *v;
      size_t vn;
      p += 5;
      id_value(f, n, (size_t)(p - f), &v, &vn);
      if (!any)
        at = frame_begin(c);
      buf_put(c, &c->out, any ? "," : "[", 1);
      put_reply(c, v, vn);
      any = 1;
    }
    if (any) {
      buf_put(c, &c->out, "]", 1);
      frame_end(c, at);
    }
    return;
  }
  /* The last "id": from the end: JSON-RPC clients tend to write it last. */
  const char *v = NULL;
  size_t vn = 0;
  for (size_t k = n >= 5 ? n - 4 : 0; k-- > 0;)
    if (f[k] == '"' && memcmp(f + k, "\"id\":", 5) == 0) {
      id_value(f, n, k + 5, &v, &vn);
      break;
    }
  if (!v && find(f, n, "\"method\"", 8))
    return; /* a notification */
  size_t at = frame_begin(c);
  put_reply(c, v, vn);
  frame_end(c, at);
}

/* ---- connections ---- */

static void on_closed(uv_handle_t *h) {
  conn_t *c = h->data;
  free(c->in.p);
  free(c->out.p);
  free(c->wbuf.p);
  free(c);
}

static void conn_close(conn_t *c) {
  if (c->closing)
    return;
  c->closing = 1;
  c->prev->next = c->next;
  c->next->prev = c->prev;
  uv_close(&c->h.h, on_closed);
}

/* The free tail of the connection's input buffer, at least 4 KiB: a frame
 * that fills the buffer doubles it. No room (UV_ENOBUFS) closes. */
static void on_alloc(uv_handle_t *h, size_t suggested, uv_buf_t *b) {
  conn_t *c = h->data;
  (void)suggested;
  if (c->in.cap - c->in.len < 4096) {
    size_t extra = c->in.cap < IN_MIN ? IN_MIN - c->in.len : c->in.cap;
    if (c->in.len > FRAME_MAX + 4 || buf_reserve(&c->in, extra)) {
      b->base = NULL;
      b->len = 0;
      return;
    }
  }
  b->base = c->in.p + c->in.len;
  b->len = c->in.cap - c->in.len;
}

static void flush(conn_t *c);

static void on_written(uv_write_t *req, int status) {
  conn_t *c = req->data;
  c->writing = 0;
  c->wbuf.len = 0;
  if (status < 0) {
    conn_close(c);
    return;
  }
  flush(c);
}

static void on_read(uv_stream_t *s, ssize_t nread, const uv_buf_t *b);

/* Sends what out holds: uv_try_write, then uv_write of the rest. */
static void flush(conn_t *c) {
  if (c->closing || c->writing)
    return;
  if (c->out.len) {
    uv_buf_t b = uv_buf_init(c->out.p, (unsigned)c->out.len);
    int n = uv_try_write(&c->h.s, &b, 1);
    if (n < 0 && n != UV_EAGAIN) {
      conn_close(c);
      return;
    }
    size_t done = n > 0 ? (size_t)n : 0;
    if (done < c->out.len) {
      /* The rest leaves from wbuf; out takes the next replies. */
      buf_t t = c->wbuf;
      c->wbuf = c->out;
      c->out = t;
      c->out.len = 0;
      b = uv_buf_init(c->wbuf.p + done, (unsigned)(c->wbuf.len - done));
      c->wreq.data = c;
      if (uv_write(&c->wreq, &c->h.s, &b, 1, on_written) != 0) {
        conn_close(c);
        return;
      }
      c->writing = 1;
      return;
    }
    c->out.len = 0;
  }
  if (c->eof) {
    conn_close(c);
    return;
  }
  if (c->paused) {
    c->paused = 0;
    uv_read_start(&c->h.s, on_alloc, on_read);
  }
}

static void feed(conn_t *c) {
  char *p = c->in.p;
  size_t len = c->in.len, pos = 0;
  if (srv.length_framing) {
    while (len - pos >= 4) {
      const unsigned char *h = (const unsigned char *)p + pos;
      size_t n = (size_t)h[0] << 24 | (size_t)h[1] << 16 | (size_t)h[2] << 8 |
                 (size_t)h[3];
      if (n > FRAME_MAX) {
        c->oom = 1; /* the stream cannot be followed: drop the connection */
        return;
      }
      if (len - pos - 4 < n)
        break;
      on_frame(c, p + pos + 4, n);
      pos += 4 + n;
    }
  } else {
    for (;;) {
      size_t from = c->scan > pos ? c->scan : pos;
      char *nl = memchr(p + from, '\n', len - from);
      if (!nl) {
        c->scan = len;
        break;
      }
      size_t end = (size_t)(nl - p);
      size_t e = end > pos && p[end - 1] == '\r' ? end - 1 : end;
      if (e > pos)
        on_frame(c, p + pos, e - pos);
      pos = c->scan = end + 1;
    }
  }
  if (pos) {
    memmove(p, p + pos, len - pos);
    c->in.len = len - pos;
    c->scan = c->scan > pos ? c->scan - pos : 0;
  }
}

static void on_read(uv_stream_t *s, ssize_t nread, const uv_buf_t *b) {
  conn_t *c = s->data;
  (void)b;
  if (nread == 0)
    return;
  if (nread < 0) {
    if (nread != UV_EOF || c->oom) {
      conn_close(c);
      return;
    }
    /* A last unterminated line is still a frame. */
    if (!srv.length_framing && c->in.len) {
      buf_put(c, &c->in, "\n", 1);
      feed(c);
    }
    c->eof = 1;
    uv_read_stop(s);
    flush(c);
    return;
  }
  c->in.len += (size_t)nread;
  feed(c);
  if (c->oom) {
    conn_close(c);
    return;
  }
  if (c->out.len + c->wbuf.len > OUT_HIGH && !c->paused) {
    c->paused = 1;
    uv_read_stop(s);
  }
  flush(c);
}

static void on_connection(uv_stream_t *server, int status) {
  worker_t *w = server->loop->data;
  if (status < 0)
    return;
  conn_t *c = calloc(1, sizeof(*c));
  if (!c)
    return; /* libuv stops accepting until one is taken: the peer waits */
  c->w = w;
  c->h.h.data = c;
  int rc = srv.is_unix ? uv_pipe_init(&w->loop, &c->h.pipe, 0)
                       : uv_tcp_init(&w->loop, &c->h.tcp);
  if (rc) {
    free(c);
    return;
  }
  c->h.h.data = c;
  c->next = w->conns.next;
  c->prev = &w->conns;
  w->conns.next->prev = c;
  w->conns.next = c;
  /* Another loop may have taken it first (EAGAIN). */
  if (uv_accept(server, &c->h.s) != 0) {
    conn_close(c);
    return;
  }
  if (!srv.is_unix)
    uv_tcp_nodelay(&c->h.tcp, 1);
  if (uv_read_start(&c->h.s, on_alloc, on_read) != 0)
    conn_close(c);
}

/* ---- workers ---- */

static void on_stop(uv_async_t *a) {
  worker_t *w = a->loop->data;
  while (w->conns.next != &w->conns)
    conn_close(w->conns.next);
  uv_close(&w->server.h, NULL);
  uv_close((uv_handle_t *)&w->stop, NULL);
}

static void worker_main(void *arg) {
  worker_t *w = arg;
  uv_run(&w->loop, UV_RUN_DEFAULT);
}

static void close_any(uv_handle_t *h, void *arg) {
  (void)arg;
  if (!uv_is_closing(h))
    uv_close(h, NULL);
}

static int worker_start(worker_t *w) {
  w->conns.next = w->conns.prev = &w->conns;
  int fd = fcntl(srv.fd, F_DUPFD_CLOEXEC, 0);
  if (fd < 0) {
    fprintf(stderr, "echo-server: dup: %s\n", strerror(errno));
    return -1;
  }
  int rc = uv_loop_init(&w->loop);
  if (rc) {
    close(fd);
    goto fail;
  }
  w->loop.data = w;
  rc = uv_async_init(&w->loop, &w->stop, on_stop);
  if (!rc)
    rc = srv.is_unix ? uv_pipe_init(&w->loop, &w->server.pipe, 0)
                     : uv_tcp_init(&w->loop, &w->server.tcp);
  if (!rc)
    rc = srv.is_unix ? uv_pipe_open(&w->server.pipe, fd)
                     : uv_tcp_open(&w->server.tcp, fd);
  if (rc)
    close(fd); /* on success the handle owns it */
  if (!rc)
    rc = uv_listen(&w->server.s, 1024, on_connection);
  if (!rc)
    rc = uv_thread_create(&w->thread, worker_main, w);
  if (!rc) {
    w->started = 1;
    return 0;
  }
  uv_walk(&w->loop, close_any, NULL);
  uv_run(&w->loop, UV_RUN_DEFAULT);
  uv_loop_close(&w->loop);
fail:
  fprintf(stderr, "echo-server: worker: %s\n", uv_strerror(rc));
  return -1;
}

static void worker_join(worker_t *w) {
  if (!w->started)
    return;
  uv_async_send(&w->stop);
  uv_thread_join(&w->thread);
  uv_loop_close(&w->loop);
}

/* ---- the listening socket ---- */

static int listen_unix(const char *path) {
  struct sockaddr_un sa;
  memset(&sa, 0, sizeof(sa));
  sa.sun_family = AF_UNIX;
  if (strlen(path) >= sizeof(sa.sun_path)) {
    fprintf(stderr, "echo-server: %s: path too long\n", path);
    return -1;
  }
  memcpy(sa.sun_path, path, strlen(path));
  struct stat st;
  if (lstat(path, &st) == 0) {
    /* Replace a socket nobody serves; anything else is not ours. */
    int probe = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
    int live = probe >= 0 && S_ISSOCK(st.st_mode) &&
               connect(probe, (struct sockaddr *)&sa, sizeof(sa)) == 0;
    if (probe >= 0)
      close(probe);
    if (!S_ISSOCK(st.st_mode) || live) {
      fprintf(stderr, "echo-server: %s: %s\n", path,
              live ? "another process serves this socket"
                   : "exists and is not a socket");
      return -1;
    }
    unlink(path);
  }
  int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
  if (fd < 0 || bind(fd, (struct sockaddr *)&sa, sizeof(sa)) != 0 ||
      listen(fd, 1024) != 0) {
    fprintf(stderr, "echo-server: %s: %s\n", path, strerror(errno));
    if (fd >= 0)
      close(fd);
    return -1;
  }
  srv.path = path;
  return fd;
}

static int listen_tcp(const char *spec) {
  char host[128];
  const char *port;
  if (spec[0] == '[') {
    const char *e = strchr(spec, ']');
    if (!e || e[1] != ':' || (size_t)(e - spec) >= sizeof(host))
      goto bad;
    memcpy(host, spec + 1, (size_t)(e - spec - 1));
    host[e - spec - 1] = '\0';
    port = e + 2;
  } else {
    const char *e = strrchr(spec, ':');
    if (!e || (size_t)(e - spec) >= sizeof(host))
      goto bad;
    memcpy(host, spec, (size_t)(e - spec));
    host[e - spec] = '\0';
    port = e + 1;
  }
  char *end;
  long p = strtol(port, &end, 10);
  if (!*port || *end || p < 0 || p > 65535)
    goto bad;
  struct sockaddr_storage ss;
  memset(&ss, 0, sizeof(ss));
  struct sockaddr_in *s4 = (struct sockaddr_in *)&ss;
  struct sockaddr_in6 *s6 = (struct sockaddr_in6 *)&ss;
  socklen_t sl;
  if (inet_pton(AF_INET, host, &s4->sin_addr) == 1) {
    s4->sin_family = AF_INET;
    s4->sin_port = htons((uint16_t)p);
    sl = sizeof(*s4);
  } else if (inet_pton(AF_INET6, host, &s6->sin6_addr) == 1) {
    s6->sin6_family = AF_INET6;
    s6->sin6_port = htons((uint16_t)p);
    sl = sizeof(*s6);
  } else {
    goto bad;
  }
  int fd = socket(ss.ss_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
  int one = 1;
  if (fd < 0 ||
      setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one)) != 0 ||
      bind(fd, (struct sockaddr *)&ss, sl) != 0 || listen(fd, 1024) != 0) {
    fprintf(stderr, "echo-server: %s: %s\n", spec, strerror(errno));
    if (fd >= 0)
      close(fd);
    return -1;
  }
  return fd;
bad:
  fprintf(stderr, "echo-server: -t %s: expected IPV4:PORT or [IPV6]:PORT\n",
          spec);
  return -1;
}

static void usage(FILE *to) {
  fprintf(to, "usage: echo-server (-u PATH | -t HOST:PORT) "
              "[-f newline|length] [-j WORKERS]\n");
}

int main(int argc, char **argv) {
  const char *unix_path = NULL, *tcp = NULL;
  long workers = 1;
  int ch;
  while ((ch = getopt(argc, argv, "u:t:f:j:h")) != -1) {
    switch (ch) {
    case 'u':
      unix_path = optarg;
      break;
    case 't':
      tcp = optarg;
      break;
    case 'f':
      if (strcmp(optarg, "newline") == 0)
        srv.length_framing = 0;
      else if (strcmp(optarg, "length") == 0)
        srv.length_framing = 1;
      else {
        usage(stderr);
        return 2;
      }
      break;
    case 'j': {
      char *end;
      workers = strtol(optarg, &end, 10);
      if (*end || workers < 1 || workers > 256) {
        fprintf(stderr, "echo-server: -j: expected 1 to 256 workers\n");
        return 2;
      }
      break;
    }
    case 'h':
      usage(stdout);
      return 0;
    default:
      usage(stderr);
      return 2;
    }
  }
  if (optind < argc || !unix_path == !tcp) {
    usage(stderr);
    return 2;
  }
  /* Only this thread takes the signals: the workers inherit the mask. */
  sigset_t sigs;
  sigemptyset(&sigs);
  sigaddset(&sigs, SIGINT);
  sigaddset(&sigs, SIGTERM);
  pthread_sigmask(SIG_BLOCK, &sigs, NULL);
  signal(SIGPIPE, SIG_IGN);

  srv.is_unix = unix_path != NULL;
  srv.fd = srv.is_unix ? listen_unix(unix_path) : listen_tcp(tcp);
  if (srv.fd < 0)
    return 1;
  worker_t *ws = calloc((size_t)workers, sizeof(*ws));
  int status = 1;
  if (!ws)
    goto out;
  for (long i = 0; i < workers; i++)
    if (worker_start(&ws[i]))
      goto out;
  fprintf(stderr,
          "echo-server: listening on %s:%s (%s framing, %ld worker%s)\n",
          srv.is_unix ? "unix" : "tcp", srv.is_unix ? unix_path : tcp,
          srv.length_framing ? "length" : "newline", workers,
          workers == 1 ? "" : "s");
  int sig;
  sigwait(&sigs, &sig);
  status = 0;
out:
  for (long i = 0; ws && i < workers; i++)
    worker_join(&ws[i]);
  free(ws);
  close(srv.fd);
  if (srv.path)
    unlink(srv.path);
  return status;
}
