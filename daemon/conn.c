/* conn.c - one client connection: reads into the stream's pooled buffer,
 * answers every complete frame, and writes all replies of a read together
 * (uv_try_write first, uv_write for the rest). Output above the high-water
 * mark pauses reading until the client catches up, so a client that does
 * not read cannot make jrpcd hold more than about that much for it. */
#include "conn.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "admit.h"
#include "conn_auth.h"
#include "hub.h"
#include "log.h"
#include "metrics.h"
#include "peer.h"
#include "server.h"
#include "transport.h"

static void list_push(jrpcd_conn_t *head, jrpcd_conn_t *c) {
  c->prev = head->prev;
  c->next = head;
  head->prev->next = c;
  head->prev = c;
}

static void list_drop(jrpcd_conn_t *c) {
  c->prev->next = c->next;
  c->next->prev = c->prev;
  c->prev = c->next = c;
}

static void on_closed(uv_handle_t *h) {
  jrpcd_conn_t *c = h->data;
  if (c->tr->free)
    c->tr->free(c);
  free(c);
}

static void on_bare_closed(uv_handle_t *h) {
  free(h);
}

static void peer_of(jrpcd_conn_t *c) {
  jrpc_peer_t *p = &c->st.peer;
  int fd = -1;
  uv_fileno(&c->h.h, &fd);
  memset(p, 0, sizeof(*p));
  p->uid = p->gid = p->pid = -1;
  if (c->l->is_unix) {
    p->family = AF_UNIX;
    p->transport = JRPC_TRANSPORT_UNIX;
    struct ucred uc;
    socklen_t n = sizeof(uc);
    if (getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &uc, &n) == 0) {
      p->uid = (int32_t)uc.uid;
      p->gid = (int32_t)uc.gid;
      p->pid = (int32_t)uc.pid;
    }
    return;
  }
  p->transport = JRPC_TRANSPORT_TCP;
  struct sockaddr_storage ss;
  int n = sizeof(ss);
  if (uv_tcp_getpeername(&c->h.tcp, (struct sockaddr *)&ss, &n) != 0)
    return;
  p->family = ss.ss_family;
  if (ss.ss_family == AF_INET) {
    const struct sockaddr_in *s4 = (const struct sockaddr_in *)&ss;
    uv_ip4_name(s4, p->addr, sizeof(p->addr));
    p->port = ntohs(s4->sin_port);
  } else if (ss.ss_family == AF_INET6) {
    const struct sockaddr_in6 *s6 = (const struct sockaddr_in6 *)&ss;
    uv_ip6_name(s6, p->addr, sizeof(p->addr));
    p->port = ntohs(s6->sin6_port);
  }
}

const char *jrpcd_conn_peer_text(const jrpcd_conn_t *c, char *buf, size_t n) {
  return jrpcd_peer_text(&c->st.peer, buf, n);
}

uint64_t jrpcd_conn_log_due(const jrpcd_conn_t *c, jrpcd_ratelog_t *r,
                            char *buf, size_t n) {
  uint64_t due = jrpcd_ratelog_due(r, uv_now(&c->w->loop));
  if (due)
    jrpcd_conn_peer_text(c, buf, n);
  return due;
}

static void on_alloc(uv_handle_t *h, size_t hint, uv_buf_t *buf) {
  jrpcd_conn_t *c = h->data;
  size_t room = 0;
  char *p = jrpc__stream_rbuf(&c->st, &room);
  *buf =
      uv_buf_init(p, p ? (unsigned)(room > UINT32_MAX ? UINT32_MAX : room) : 0);
}

static int pending_calls(const jrpcd_conn_t *c) {
  return c->st.sink.waiting.next != &c->st.sink.waiting;
}

/* Closes a finishing connection once nothing is left to send; when the
 * worker stops, after the framing's last word (a WebSocket's close). */
static void maybe_done(jrpcd_conn_t *c) {
  if (c->closed || !c->finishing || c->writing || c->st.held ||
      jrpc__out_pending(&c->st.out) > 0 || pending_calls(c))
    return;
  if (c->w->stopping && c->st.fx->goodbye && c->st.fx->goodbye(&c->st)) {
    jrpcd_conn_flush(c);
    return;
  }
  jrpcd_conn_close(c, NULL);
}

static void stop_reading(jrpcd_conn_t *c) {
  if (c->reading)
    uv_read_stop(&c->h.s);
  c->reading = 0;
}

/* The callbacks were chosen at accept (choose_reader), so that on_read,
 * the plain path, tests nothing for the transport. */
static void start_reading(jrpcd_conn_t *c) {
  if (c->reading || c->finishing || c->closed)
    return;
  if (uv_read_start(&c->h.s, c->alloc_cb, c->read_cb) == 0)
    c->reading = 1;
}

static void feed(jrpcd_conn_t *c, size_t n, int eof);

/* Stops reading a client that has too much waiting for it: unsent output
 * above the high-water mark, or max_pending_calls deferred calls
 * unfinished (then its further frames wait, unparsed, in its buffer).
 * Goes on once both are down to half. */
static void update_flow(jrpcd_conn_t *c) {
  const jrpcd_config_t *conf = &c->w->srv->conf;
  uint64_t high = conf->output_high_water;
  if (c->st.held && !c->w->deadline_passed &&
      c->st.sink.calls <= conf->max_pending_calls / 2 &&
      (!c->st.fx->in_order || c->st.sink.waiting.next == &c->st.sink.waiting) &&
      jrpc__out_pending(&c->st.out) <= high / 2) {
    feed(c, 0, c->eof); /* comes back here */
    return;
  }
  uint64_t pending = jrpc__out_pending(&c->st.out);
  int full = pending > high || c->st.held;
  if (c->reading && full) {
    stop_reading(c);
    c->paused = 1;
  } else if (c->paused && !full && pending <= high / 2) {
    c->paused = 0;
    start_reading(c);
    if (c->tr->resume)
      c->tr->resume(c); /* what the transport kept back */
  }
}

void jrpcd_conn_flush(jrpcd_conn_t *c) {
  if (c->closed || c->feeding)
    return;
  if (c->tr->send(c) != 0)
    return;
  if (c->st.sink.push && c->st.sink.push->nlagging && !c->writing &&
      jrpc__out_pending(&c->st.out) == 0) {
    /* A subscriber that lost notifications has caught up: it is told
     * what it lost (push.h). */
    jrpc__push_drained(c->st.e->push, &c->st.sink);
    if (c->tr->send(c) != 0)
      return;
  }
  /* Everything sent and nothing half-read: the output segment goes back
   * to the pool too, so an idle connection costs only its own struct. A
   * ping-pong client pays one pool get and put per request for this. */
  if (!c->writing && !c->st.buf)
    jrpc__out_release_idle(&c->st.out);
  update_flow(c);
  maybe_done(c);
}

/* A frame's clock starts with its first byte: after a read that leaves an
 * incomplete frame buffered (or a long line being skipped), started anew
 * when the read completed frames before it. */
static void note_frame_start(jrpcd_conn_t *c, uint64_t frames_before) {
  if (!jrpc__stream_partial(&c->st) && !c->st.fr.skipping)
    c->frame_start = 0;
  else if (!c->frame_start || c->st.nframes != frames_before)
    c->frame_start = uv_now(&c->w->loop);
}

typedef int (*feed_fn)(jrpc__stream_t *s, size_t n, int eof);

/* Inlined into each read callback with its framing's feed, so that the
 * newline and length path calls jrpc__stream_feed without a test. */
static inline __attribute__((always_inline)) void
feed_by(jrpcd_conn_t *c, size_t n, int eof, feed_fn fn) {
  uint64_t frames_before = c->st.nframes;
  /* The connection's own view of the methods (admit.c), for its frames
   * only: a feed can run inside another's (a reply it completes). */
  jrpc__engine_t *e = &c->w->engine;
  const jrpc__registry_t *outer = e->reg;
  e->reg = c->reg;
  /* Latency: calls of this read start now (a feed inside another's keeps
   * the outer read's start for after). */
  uint64_t outer_t = e->t_read;
  e->t_read = jrpc__clock_ns();
  /* While the stream works through its frames, replies finished inside
   * them (a handler ending another deferred call) must not flush, and
   * so perhaps close, this connection under it: the flush below does. */
  c->feeding = 1;
  int rc = fn(&c->st, n, eof);
  while (rc == 0 && c->st.more) {
    /* Between two groups of frames of one read: what can go out at once
     * does (no uv_write, no flow change, no close: the flush after the
     * read does all that), so the client gets its first replies while
     * later frames are still being worked on. */
    if (c->tr->send_early)
      c->tr->send_early(c);
    /* Through the row: an upgrade may have switched the framing. */
    rc = c->st.fx->feed(&c->st, 0, eof);
  }
  c->feeding = 0;
  e->reg = outer;
  if (e->ntouched) /* its synchronous calls end with the read */
    jrpc__lat_flush(e, jrpc__clock_ns(), &c->st.peer);
  e->t_read = outer_t;
  note_frame_start(c, frames_before);
  if (rc == JRPC__ECLOSE) {
    /* Framing is lost (a length prefix over the limit): the -32001
     * reply goes out, then the connection closes. */
    stop_reading(c);
    c->finishing = 1;
  } else if (rc == JRPC_ENOMEM) {
    jrpcd_error("connection %llu: out of memory; closing it",
                (unsigned long long)c->id);
    jrpcd_conn_close(c, NULL);
    return;
  }
  jrpcd_conn_flush(c);
}

static void feed(jrpcd_conn_t *c, size_t n, int eof) {
  feed_by(c, n, eof, c->st.fx->feed);
}

static void conn_input(jrpcd_conn_t *c, size_t n, int eof) {
  feed(c, n, eof);
}

/* The peer has closed its socket for good, not only its writing side:
 * nothing it is owed can reach it. A Unix socket tells at once (hang-up
 * once both directions are shut); over TCP a close looks like a half-close
 * until a reply meets the peer's reset, and then the write error closes
 * the connection. */
static int peer_gone(const jrpcd_conn_t *c) {
  uv_os_fd_t fd;
  if (uv_fileno(&c->h.h, &fd) != 0)
    return 0;
  struct pollfd p = {.fd = fd, .events = 0};
  return poll(&p, 1, 0) == 1 && (p.revents & (POLLHUP | POLLERR));
}

static void conn_eof(jrpcd_conn_t *c) {
  /* Half-closed (socat at the end of its input): a last unterminated
   * line is still a frame, and every reply is still sent. */
  stop_reading(c);
  c->finishing = 1;
  c->eof = 1;
  feed(c, 0, 1);
  /* Gone altogether: its deferred calls are cancelled now (their cancel
   * callbacks run, their memory goes), not left to run to their end. */
  if (!c->closed && pending_calls(c) && peer_gone(c))
    jrpcd_conn_close(c, "peer gone with calls in flight");
}

/* The first bytes on a plain TCP listener are a TLS record header
 * (0x16 0x03: a handshake, TLS 1.x): neither a JSON text nor a length
 * prefix within max_frame_bytes can start so. Said once, then closed. */
static int tls_client_on_plain(jrpcd_conn_t *c, const char *p, size_t n) {
  if (p[0] != 0x16 || (n > 1 && p[1] != 0x03) ||
      (c->l->framing == JRPC_FRAMING_LENGTH &&
       c->w->srv->conf.max_frame_bytes >= 0x16030000u))
    return 0;
  char pt[96];
  jrpcd_info("connection %llu from %s on %s: a TLS handshake on a listener "
             "without TLS (no tls_cert); closing it",
             (unsigned long long)c->id, jrpcd_conn_peer_text(c, pt, sizeof(pt)),
             c->l->desc);
  jrpcd_conn_close(c, NULL);
  return 1;
}

static inline __attribute__((always_inline)) void
read_by(uv_stream_t *s, ssize_t nread, feed_fn fn) {
  jrpcd_conn_t *c = s->data;
  if (nread > 0) {
    jrpcd_worker_t *w = c->w;
    uint64_t now = uv_now(&w->loop);
    /* Early replies let one pipelining client work on its first answers
     * while the worker goes on with the rest of its read. When another
     * connection was read in the same millisecond, the worker is taking
     * turns between clients: each already works while the others are
     * served, and an early write would only add a syscall (over TCP
     * loopback, the receiving side's work too). */
    int alone = w->last_read_id == c->id || w->last_read_ms != now;
    c->st.frame_budget = alone ? w->srv->conf.early_reply_frames : 0;
    w->last_read_id = c->id;
    w->last_read_ms = now;
    c->last_active = now;
    JRPC__STAT_ADD(w->bytes_in, (uint64_t)nread);
    feed_by(c, (size_t)nread, 0, fn);
    return;
  }
  if (nread == 0)
    return; /* EAGAIN */
  if (nread == UV_EOF) {
    conn_eof(c);
    return;
  }
  if (nread == UV_ENOBUFS) {
    jrpcd_error("connection %llu: no memory for input; closing it",
                (unsigned long long)c->id);
    jrpcd_conn_close(c, NULL);
    return;
  }
  jrpcd_conn_close(c, uv_strerror((int)nread));
}

static void on_read(uv_stream_t *s, ssize_t nread, const uv_buf_t *buf) {
  read_by(s, nread, jrpc__stream_feed);
}

/* Any other framing's: through its row. */
static void on_read_framed(uv_stream_t *s, ssize_t nread, const uv_buf_t *buf) {
  jrpcd_conn_t *c = s->data;
  read_by(s, nread, c->st.fx->feed);
}

/* After the first read of a plain TCP connection, or from the first. */
static uv_read_cb plain_reader(const jrpcd_conn_t *c) {
  return c->st.fx->feed == jrpc__stream_feed ? on_read : on_read_framed;
}

/* The first read of a plain TCP connection: looked at once, then reads go
 * straight to on_read. */
static void on_first_read(uv_stream_t *s, ssize_t nread, const uv_buf_t *buf) {
  jrpcd_conn_t *c = s->data;
  if (nread == 0)
    return; /* EAGAIN */
  if (nread > 0 && tls_client_on_plain(c, buf->base, (size_t)nread))
    return;
  stop_reading(c);
  c->read_cb = plain_reader(c);
  start_reading(c); /* on_read (or on_read_framed) from now on */
  c->read_cb(s, nread, buf);
}

/* The read callbacks, once: the transport's own, else reads straight into
 * the stream, the first of a plain TCP connection looked at. */
static void choose_reader(jrpcd_conn_t *c) {
  if (c->tr->read) {
    c->alloc_cb = c->tr->alloc;
    c->read_cb = c->tr->read;
    return;
  }
  c->alloc_cb = on_alloc;
  c->read_cb = c->l->is_unix ? plain_reader(c) : on_first_read;
}

static const jrpcd_conn_events_t events = {
    .input = conn_input,
    .eof = conn_eof,
    .flush = jrpcd_conn_flush,
    .close = jrpcd_conn_close,
    .verified = jrpcd_conn_admit_verified,
};

static jrpcd_conn_t *conn_new(jrpcd_worker_t *w, const jrpcd_listener_t *l) {
  jrpcd_conn_t *c = calloc(1, sizeof(*c));
  if (!c) {
    jrpcd_error("%s: out of memory for a new connection", l->desc);
    return NULL;
  }
  c->w = w;
  c->l = l;
  c->prev = c->next = c;
  c->tr = &jrpcd_transport_plain; /* until conn_start chooses */
  c->ev = &events;
  int rc = l->is_unix ? uv_pipe_init(&w->loop, &c->h.pipe, 0)
                      : uv_tcp_init(&w->loop, &c->h.tcp);
  if (rc) {
    free(c);
    return NULL;
  }
  c->h.h.data = c;
  return c;
}

/* The connection is this worker's from now on. */
static void conn_start(jrpcd_conn_t *c) {
  jrpcd_worker_t *w = c->w;
  const jrpcd_listener_t *l = c->l;
  c->id = atomic_fetch_add(&w->srv->conn_ids, 1) + 1;
  jrpc__stream_init(&c->st, &w->engine, l->framing);
  c->st.sink.max_calls = w->srv->conf.max_pending_calls;
  c->st.sink.origin = l; /* the access log's listener */
  /* st.frame_budget is set by each read (read_by). */
  peer_of(c);
  if (!l->is_unix)
    uv_tcp_nodelay(&c->h.tcp, 1);
  c->last_active = uv_now(&w->loop);
  list_push(&w->conns, c);
  w->nconns++;
  atomic_fetch_add(&w->load, 1);
  /* The framing's own state (the header framings': the host is the
   * connection), then whether its requests must bring a token. */
  jrpc__framing_conf_t fc = {.max_head = w->srv->conf.max_header_bytes,
                             .routes = l->http_routes,
                             .websocket = l->websocket,
                             .host = &jrpcd_http_host,
                             .host_arg = c};
  if (c->st.fx->init && c->st.fx->init(&c->st, &fc) != 0) {
    jrpcd_error("connection %llu on %s: out of memory for its %s framing; "
                "closing it",
                (unsigned long long)c->id, l->desc, c->st.fx->name);
    jrpcd_conn_close(c, NULL);
    return;
  }
  jrpcd_conn_auth_update(c); /* tokens_file: a token on every request */
  /* Every peer is judged by what the socket says before a byte is read,
   * a TLS one before its handshake starts; what a client certificate
   * decides comes after it (jrpcd_conn_admit_verified, conn_tls.c).
   * Until admission sets what it may call, its lookups find nothing. */
  c->reg = NULL;
  if (!jrpcd_conn_admit(c)) {
    jrpcd_conn_close(c, NULL);
    return;
  }
  const jrpcd_transport_t *tr = jrpcd_transport_for(l);
  if (tr->start && tr->start(c) != 0) {
    jrpcd_conn_close(c, NULL);
    return;
  }
  c->tr = tr;
  choose_reader(c);
  JRPC__STAT_INC(w->accepted);
  if (jrpcd_log_enabled(JRPC_LOG_DEBUG)) {
    char pt[96];
    jrpcd_debug("connection %llu on %s from %s (worker %u)",
                (unsigned long long)c->id, l->desc,
                jrpcd_conn_peer_text(c, pt, sizeof(pt)), w->index);
  }
  start_reading(c);
}

/* The worker with the fewest connections, preferring w on a tie. */
static jrpcd_worker_t *least_loaded(jrpcd_worker_t *w) {
  jrpcd_server_t *srv = w->srv;
  jrpcd_worker_t *best = w;
  unsigned best_load = atomic_load(&w->load);
  /* Workers still starting (at start-up) are not counted yet. */
  unsigned n = __atomic_load_n(&srv->nworkers, __ATOMIC_ACQUIRE);
  for (unsigned i = 0; i < n; i++) {
    unsigned ld = atomic_load(&srv->workers[i].load);
    if (ld < best_load) {
      best = &srv->workers[i];
      best_load = ld;
    }
  }
  return best;
}

/* One log line per second at most, however fast clients knock. */
static void refused(jrpcd_worker_t *w, const jrpcd_listener_t *l) {
  JRPC__STAT_INC(w->refused[JRPCD_REFUSED_MAX_CONNECTIONS]);
  uint64_t n = jrpcd_ratelog_due(&w->refused_log, uv_now(&w->loop));
  if (!n)
    return;
  jrpcd_warn("%s: max_connections (%u) reached: closed %llu new "
             "connection%s at once",
             l->desc, w->srv->conf.max_connections, (unsigned long long)n,
             n == 1 ? "" : "s");
}

void jrpcd_conn_accept(jrpcd_worker_t *w, uv_stream_t *server,
                       const jrpcd_listener_t *l) {
  jrpcd_server_t *srv = w->srv;
  jrpcd_conn_t *c = conn_new(w, l);
  if (!c) {
    /* libuv has accepted the socket already and waits for uv_accept
     * before it accepts more: take it into a bare handle and close it. */
    jrpcd_handle_t *h = malloc(sizeof(*h));
    int ok = h && (l->is_unix ? uv_pipe_init(&w->loop, &h->pipe, 0)
                              : uv_tcp_init(&w->loop, &h->tcp)) == 0;
    if (ok) {
      h->h.data = h;
      uv_accept(server, &h->s);
      uv_close(&h->h, on_bare_closed);
    } else {
      free(h);
    }
    return;
  }
  int rc = uv_accept(server, &c->h.s);
  if (rc) {
    /* Another worker took it first (EAGAIN), or the peer is gone. */
    if (rc != UV_EAGAIN && rc != UV_ECONNABORTED)
      jrpcd_warn("%s: accept: %s", l->desc, uv_strerror(rc));
    uv_close(&c->h.h, on_closed);
    return;
  }
  unsigned n = atomic_fetch_add(&srv->nconns, 1);
  if (n >= srv->conf.max_connections || w->stopping) {
    atomic_fetch_sub(&srv->nconns, 1);
    if (!w->stopping)
      refused(w, l);
    uv_close(&c->h.h, on_closed);
    return;
  }
  /* Every worker accepts, and the one whose loop wakes first takes the
   * whole burst of pending connections. Spread them: a busier worker
   * hands the socket to the least loaded one. */
  jrpcd_worker_t *to = least_loaded(w);
  int fd = -1;
  if (to != w && uv_fileno(&c->h.h, &fd) == 0) {
    int copy = fcntl(fd, F_DUPFD_CLOEXEC, 0);
    if (copy >= 0 && jrpcd_worker_adopt(to, copy, l) == 0) {
      atomic_fetch_add(&to->load, 1); /* counted now, not when adopted */
      uv_close(&c->h.h, on_closed);
      return;
    }
    if (copy >= 0)
      close(copy);
  }
  conn_start(c);
}

void jrpcd_conn_adopted(jrpcd_worker_t *w, int fd, const jrpcd_listener_t *l) {
  atomic_fetch_sub(&w->load, 1); /* conn_start counts it again */
  jrpcd_conn_t *c = conn_new(w, l);
  int rc = c ? (l->is_unix ? uv_pipe_open(&c->h.pipe, fd)
                           : uv_tcp_open(&c->h.tcp, fd))
             : UV_ENOMEM;
  if (rc) {
    jrpcd_warn("%s: worker %u cannot take a connection: %s", l->desc, w->index,
               uv_strerror(rc));
    close(fd);
    if (c)
      uv_close(&c->h.h, on_closed);
    atomic_fetch_sub(&w->srv->nconns, 1);
    return;
  }
  if (w->stopping) {
    uv_close(&c->h.h, on_closed);
    atomic_fetch_sub(&w->srv->nconns, 1);
    return;
  }
  conn_start(c);
}

void jrpcd_conn_close(jrpcd_conn_t *c, const char *why) {
  if (c->closed)
    return;
  if (why && jrpcd_log_enabled(JRPC_LOG_DEBUG)) {
    char pt[96];
    jrpcd_debug("connection %llu from %s closed: %s", (unsigned long long)c->id,
                jrpcd_conn_peer_text(c, pt, sizeof(pt)), why);
  }
  if (c->tr->shutdown)
    c->tr->shutdown(c);
  c->closed = 1;
  if (c->peer_counted)
    jrpcd_peercount_give(&c->w->srv->peers_open, &c->pkey);
  stop_reading(c);
  /* uv_close closes the fd now, so no write in flight touches the output
   * after this; its callback comes back cancelled and sees `closed`. */
  uv_close(&c->h.h, on_closed);
  if (c->st.fx->free)
    c->st.fx->free(&c->st);
  jrpc__stream_free(&c->st);
  list_drop(c);
  c->w->nconns--;
  atomic_fetch_sub(&c->w->load, 1);
  atomic_fetch_sub(&c->w->srv->nconns, 1);
}

void jrpcd_conn_finish(jrpcd_conn_t *c) {
  if (c->closed)
    return;
  stop_reading(c);
  /* What the peer sent before the stop is answered, where the transport
   * can take it without waiting. (Not for a client that was paused for
   * not reading its replies: what it sent since was never taken in.) */
  if (!c->finishing && !c->paused && c->tr->drain)
    c->tr->drain(c);
  c->finishing = 1;
  if (!c->closed)
    jrpcd_conn_flush(c);
}

/* Too slow a frame: the client is told, then the connection closes (on
 * newline framing it could go on at the next line, but a client this slow
 * holds a buffer for nothing). */
static void frame_expired(jrpcd_conn_t *c, uint64_t frame_ms) {
  uint64_t got = jrpc__stream_partial(&c->st) + c->st.fr.skipped;
  char pt[96];
  jrpcd_info("connection %llu from %s: frame incomplete after %llu ms (%llu "
             "bytes); closing it",
             (unsigned long long)c->id, jrpcd_conn_peer_text(c, pt, sizeof(pt)),
             (unsigned long long)frame_ms, (unsigned long long)got);
  stop_reading(c);
  c->finishing = 1;
  c->frame_start = 0;
  c->st.fx->timeout(&c->st, (uint32_t)frame_ms, got);
  jrpcd_conn_flush(c);
}

/* The framing's keepalive (websocket's ping): 1 when c was closed or is
 * closing. */
static int keepalive(jrpcd_conn_t *c, uint64_t now) {
  int rc = c->st.fx->keepalive(&c->st, now, c->w->srv->conf.ws_ping_ms);
  if (rc == 0)
    return 0;
  if (rc == JRPC__ECLOSE) {
    char pt[96];
    jrpcd_info("connection %llu from %s: no answer to a keepalive ping in "
               "%llu ms; closing it",
               (unsigned long long)c->id,
               jrpcd_conn_peer_text(c, pt, sizeof(pt)),
               (unsigned long long)c->w->srv->conf.ws_ping_ms);
    stop_reading(c);
    c->finishing = 1;
  } else if (rc != 1) {
    jrpcd_conn_close(c, NULL);
    return 1;
  }
  jrpcd_conn_flush(c);
  return rc != 1;
}

void jrpcd_conn_sweep(jrpcd_conn_t *c, uint64_t now, uint64_t idle_ms,
                      uint64_t frame_ms) {
  if (c->closed)
    return;
  if (c->tr->expired && c->tr->expired(c, now, frame_ms))
    return;
  if (c->frame_start) {
    /* Paused connections do not read, and held frames are complete:
     * neither is the client's slowness. */
    if (!c->reading || c->st.held)
      c->frame_start = now;
    else if (frame_ms && now - c->frame_start >= frame_ms) {
      frame_expired(c, frame_ms);
      return;
    }
  }
  if (c->st.fx->keepalive && keepalive(c, now))
    return;
  /* A subscriber waits for the server: it is not idle. */
  int subscribed = c->st.sink.push && c->st.sink.push->nsubs;
  if (!idle_ms || pending_calls(c) || subscribed ||
      now - c->last_active < idle_ms)
    return;
  char pt[96];
  jrpcd_info("connection %llu from %s: idle for %llu ms; closing it",
             (unsigned long long)c->id, jrpcd_conn_peer_text(c, pt, sizeof(pt)),
             (unsigned long long)idle_ms);
  jrpcd_conn_close(c, NULL);
}
