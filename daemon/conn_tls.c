/* conn_tls.c - the TLS transport (transport.h): ciphertext is read into
 * a per-thread buffer and fed to the session (tls.h), plaintext is taken
 * into the stream's read buffer as a plain read's would be and handed to
 * the connection's input event, and the replies are encrypted on their
 * way out, the ciphertext sent by the same write-then-queue as plain
 * output (jrpcd_conn_write). */
#include "transport.h"

#include <stdlib.h>
#include <string.h>

#include "gen_tls.h"
#include "log.h"
#include "peer.h"
#include "server.h"

#ifdef JRPC_HAVE_TLS

#include <openssl/bio.h>
#include <openssl/ssl.h>

typedef struct jrpcd_conn_tls {
  jrpcd_tls_t s;
  uint64_t started; /* uv_now at accept: the handshake's clock */
  uint8_t admitted; /* `peers` was checked once the handshake was done */
  uint8_t pumping;  /* inside tls_pump */
  uint8_t shaking;  /* counted in the listener's handshakes in progress */
} jrpcd_conn_tls_t;

/* libuv reads into it and calls back at once, before any other read of
 * this thread's loop: one buffer per worker thread serves every
 * connection, and the session copies what it keeps. */
static _Thread_local char cipher_in[65536];

static void tls_failed(jrpcd_conn_t *c, const char *what) {
  if (!c->tls->s.handshaken)
    JRPC__STAT_INC(c->w->refused[JRPCD_REFUSED_TLS_HANDSHAKE]);
  char pt[96];
  jrpcd_info("connection %llu from %s on %s: TLS: %s; closing it",
             (unsigned long long)c->id,
             jrpcd_peer_text(&c->st.peer, pt, sizeof(pt)), c->l->desc, what);
  c->ev->close(c, NULL);
}

/* The listener's count of handshakes in progress, over all workers: the
 * server's own copy of c->l, which is const to connections. */
static atomic_uint *handshakes_of(jrpcd_conn_t *c) {
  jrpcd_server_t *srv = c->w->srv;
  return &srv->listeners[c->l - srv->listeners].handshakes;
}

/* A handshake is done or abandoned: its place is free for the next. */
static void handshake_over(jrpcd_conn_t *c) {
  jrpcd_conn_tls_t *x = c->tls;
  if (x->shaking) {
    x->shaking = 0;
    atomic_fetch_sub(handshakes_of(c), 1);
  }
}

/* max_handshakes: 1 if c may start one (and is counted), else 0 (logged
 * at most once a second). Each handshake in progress holds a connection
 * slot for up to frame_timeout_ms whoever the peer turns out to be, so
 * their number is what bounds what strangers can hold on a listener that
 * cannot judge them before it (cert: and san: peers). */
static int handshake_begins(jrpcd_conn_t *c) {
  jrpcd_server_t *srv = c->w->srv;
  uint32_t max = srv->conf.listens[c->l - srv->listeners].max_handshakes;
  atomic_uint *n = handshakes_of(c);
  unsigned now = atomic_fetch_add(n, 1);
  if (now < max)
    return 1;
  atomic_fetch_sub(n, 1);
  JRPC__STAT_INC(c->w->refused[JRPCD_REFUSED_MAX_HANDSHAKES]);
  uint64_t k = jrpcd_ratelog_due(&c->w->handshake_log, uv_now(&c->w->loop));
  if (k)
    jrpcd_warn("%s: %u TLS handshakes in progress, max_handshakes: closed "
               "%llu new connection%s at once",
               c->l->desc, now, (unsigned long long)k, k == 1 ? "" : "s");
  return 0;
}

static int tls_start(jrpcd_conn_t *c) {
  if (!handshake_begins(c))
    return -1;
  jrpcd_tls_ctx_t *ctx = jrpcd_gen_tls(c->w->gen, c->l->name);
  jrpcd_conn_tls_t *x = ctx ? calloc(1, sizeof(*x)) : NULL;
  if (!x) {
    atomic_fetch_sub(handshakes_of(c), 1);
    jrpcd_error("%s: %s for a new TLS connection", c->l->desc,
                ctx ? "out of memory" : "no TLS context");
    return -1;
  }
  if (jrpcd_tls_start(&x->s, ctx) != JRPCD_TLS_OK) {
    atomic_fetch_sub(handshakes_of(c), 1);
    jrpcd_error("%s: TLS: %s", c->l->desc, x->s.reason);
    free(x);
    return -1;
  }
  x->started = uv_now(&c->w->loop);
  x->shaking = 1;
  c->tls = x;
  return 0;
}

static void tls_alloc(uv_handle_t *h, size_t hint, uv_buf_t *buf) {
  (void)h, (void)hint;
  *buf = uv_buf_init(cipher_in, sizeof(cipher_in));
}

static void tls_pump(jrpcd_conn_t *c) {
  jrpcd_conn_tls_t *x = c->tls;
  if (x->pumping)
    return; /* a flush inside the loop below resumed reading */
  x->pumping = 1;
  while (!c->closed && !c->paused && !c->finishing && !c->st.held) {
    size_t room = 0;
    char *p = jrpc__stream_rbuf(&c->st, &room);
    if (!p) {
      jrpcd_error("connection %llu: no memory for input; closing it",
                  (unsigned long long)c->id);
      c->ev->close(c, NULL);
      break;
    }
    int eof = 0;
    long n = jrpcd_tls_read(&x->s, p, room, &eof);
    if (x->s.handshaken && !x->admitted) {
      x->admitted = 1;
      handshake_over(c);
      /* What handlers see of the caller (jrpc_peer, ABI 1.2): a CN
       * longer than X.509 allows is left out rather than cut. */
      c->st.peer.transport = JRPC_TRANSPORT_TLS;
      if (strlen(x->s.cn) < sizeof(c->st.peer.cert_cn))
        memcpy(c->st.peer.cert_cn, x->s.cn, strlen(x->s.cn) + 1);
      if (!c->ev->verified(c)) {
        c->ev->close(c, NULL); /* the log said why */
        break;
      }
    }
    if (n > 0) {
      c->ev->input(c, (size_t)n, 0);
      continue;
    }
    if (n < 0)
      tls_failed(c, x->s.reason);
    else if (eof)
      c->ev->eof(c); /* close_notify: the client is done */
    break;
  }
  x->pumping = 0;
  if (!c->closed)
    c->ev->flush(c); /* handshake records, replies */
}

static void tls_read(uv_stream_t *s, ssize_t nread, const uv_buf_t *buf) {
  jrpcd_conn_t *c = s->data;
  jrpcd_conn_tls_t *x = c->tls;
  if (nread > 0) {
    c->last_active = uv_now(&c->w->loop);
    JRPC__STAT_ADD(c->w->bytes_in, (uint64_t)nread);
    if (jrpcd_tls_feed(&x->s, buf->base, (size_t)nread) != JRPCD_TLS_OK) {
      tls_failed(c, x->s.reason);
      return;
    }
    tls_pump(c);
    return;
  }
  if (nread == 0)
    return;
  if (nread == UV_EOF) {
    SSL *ssl = x->s.ssl;
    if (!x->s.handshaken)
      tls_failed(c, "the peer closed the connection during the handshake");
    else if (SSL_has_pending(ssl) || BIO_ctrl_pending((BIO *)x->s.in) > 0)
      tls_failed(c, "the peer closed the connection in the middle of a "
                    "record");
    else
      c->ev->eof(c); /* whole records, then a bare FIN: done */
    return;
  }
  tls_failed(c, uv_strerror((int)nread));
}

/* Sends the session's ciphertext: what the socket takes now, the rest
 * from a copy in a uv_write (the memory BIO's bytes move as it grows). 0,
 * or -1 when closed. */
static int send_cipher(jrpcd_conn_t *c) {
  jrpcd_conn_tls_t *x = c->tls;
  const char *p;
  size_t n = jrpcd_tls_out(&x->s, &p);
  if (n == 0)
    return 0;
  uv_buf_t b = uv_buf_init((char *)p, (unsigned)n);
  if (jrpcd_conn_write(c, &b, 1, n, 0) < 0)
    return -1;
  jrpcd_tls_out_consume(&x->s, n); /* sent, or copied into the write */
  return 0;
}

static int tls_send(jrpcd_conn_t *c) {
  jrpcd_conn_tls_t *x = c->tls;
  if (c->writing)
    return 0; /* the write's end comes back here */
  const char *ptrs[64];
  size_t lens[64];
  size_t k;
  while (x->s.handshaken &&
         (k = jrpc__out_iov(&c->st.out, ptrs, lens, 64)) > 0) {
    size_t total = 0;
    for (size_t i = 0; i < k; i++) {
      if (jrpcd_tls_write(&x->s, ptrs[i], lens[i]) != JRPCD_TLS_OK) {
        tls_failed(c, x->s.reason);
        return -1;
      }
      total += lens[i];
    }
    jrpc__out_consume(&c->st.out, total);
  }
  return send_cipher(c);
}

static int tls_expired(jrpcd_conn_t *c, uint64_t now, uint64_t frame_ms) {
  jrpcd_conn_tls_t *x = c->tls;
  uint64_t limit = frame_ms ? frame_ms : 10000;
  if (x->s.handshaken || now - x->started < limit)
    return 0;
  char why[96];
  snprintf(why, sizeof(why), "handshake not done after %llu ms",
           (unsigned long long)limit);
  tls_failed(c, why);
  return 1;
}

static void tls_shutdown(jrpcd_conn_t *c) {
  jrpcd_conn_tls_t *x = c->tls;
  handshake_over(c);
  jrpcd_tls_shutdown(&x->s); /* keeps the session resumable */
  if (c->writing)
    return; /* the close_notify would cut into the write in flight */
  const char *p;
  size_t n = jrpcd_tls_out(&x->s, &p);
  if (n > 0) {
    uv_buf_t b = uv_buf_init((char *)p, (unsigned)n);
    (void)uv_try_write(&c->h.s, &b, 1); /* best effort: closing anyway */
  }
}

static void tls_free(jrpcd_conn_t *c) {
  jrpcd_conn_tls_t *x = c->tls;
  handshake_over(c);
  jrpcd_tls_free(&x->s);
  free(x);
  c->tls = NULL;
}

int jrpcd_conn_tls_asks_cert(const jrpcd_conn_t *c) {
  jrpcd_tls_ctx_t *ctx = jrpcd_gen_tls(c->w->gen, c->l->name);
  return ctx && jrpcd_tls_ctx_asks_cert(ctx);
}

static void tls_identity(jrpcd_conn_t *c, jrpcd_identity_t *id,
                         const char **sans, size_t max, char *buf,
                         size_t buflen) {
  jrpcd_conn_tls_t *x = c->tls;
  if (!x->s.verified)
    return;
  id->cert_cn = x->s.cn[0] ? x->s.cn : NULL;
  id->nsans = jrpcd_tls_peer_sans(&x->s, sans, max, buf, buflen);
  id->sans = sans;
}

const jrpcd_transport_t jrpcd_transport_tls = {
    .name = "tls",
    .start = tls_start,
    .alloc = tls_alloc,
    .read = tls_read,
    .resume = tls_pump,
    .send = tls_send,
    .expired = tls_expired,
    .shutdown = tls_shutdown,
    .free = tls_free,
    .identity = tls_identity,
};

#else /* no TLS in this build: no listener has it, so none starts */

static int tls_start(jrpcd_conn_t *c) {
  (void)c;
  return -1;
}

const jrpcd_transport_t jrpcd_transport_tls = {.name = "tls",
                                               .start = tls_start};

int jrpcd_conn_tls_asks_cert(const jrpcd_conn_t *c) {
  (void)c;
  return 0;
}

#endif /* JRPC_HAVE_TLS */
