/* transport.h - how a connection's bytes reach the socket: a table of
 * operations chosen once per connection (plain, TLS), in the manner of
 * nginx's c->recv/c->send or redis's ConnectionType. conn.c calls through
 * the table and never asks which transport it has; a transport reaches
 * back into the connection only through the connection's events (c->ev),
 * never by name. The plain transport leaves reading to conn.c's own read
 * callbacks (read == NULL), which feed the stream without an indirection:
 * that is the fast path, chosen at accept. */
#ifndef JRPCD_TRANSPORT_H
#define JRPCD_TRANSPORT_H

#include "peercount.h"
#include "worker.h"

/* What a transport tells its connection (conn.c's, set at accept). */
typedef struct jrpcd_conn_events {
  /* n more bytes are in c->st's read buffer (jrpc__stream_rbuf); eof: the
   * peer will send nothing more. */
  void (*input)(jrpcd_conn_t *c, size_t n, int eof);
  /* The peer is done sending: answer what it sent, then close. */
  void (*eof)(jrpcd_conn_t *c);
  /* Send what is pending, and let reading and closing follow from it. */
  void (*flush)(jrpcd_conn_t *c);
  void (*close)(jrpcd_conn_t *c, const char *why);
  /* The transport knows more of the peer (a TLS client certificate):
   * admission again. 0: the connection may not stay (logged). */
  int (*verified)(jrpcd_conn_t *c);
} jrpcd_conn_events_t;

typedef struct jrpcd_transport {
  const char *name;
  /* After admission, before the first read: the handshake begins. -1
   * (logged): close. NULL: nothing to begin. */
  int (*start)(jrpcd_conn_t *c);
  /* uv_read_start's callbacks; NULL: conn.c's own, which read straight
   * into the stream. */
  uv_alloc_cb alloc;
  uv_read_cb read;
  /* Reading resumed after a pause: what the transport kept back goes in
   * now. NULL: nothing is ever kept back. */
  void (*resume)(jrpcd_conn_t *c);
  /* Sends the pending output (jrpcd_conn_write). 0, or -1 when the
   * connection was closed. */
  int (*send)(jrpcd_conn_t *c);
  /* Between groups of frames of one read: what the socket takes at once
   * goes out, nothing else happens (no queue, no close). NULL: not done. */
  void (*send_early)(jrpcd_conn_t *c);
  /* Shutdown: takes in, without waiting, what the peer sent already.
   * NULL: nothing can be taken so. */
  void (*drain)(jrpcd_conn_t *c);
  /* The handshake is past its time: logged and closed, 1; else 0. NULL:
   * no handshake. */
  int (*expired)(jrpcd_conn_t *c, uint64_t now, uint64_t frame_ms);
  /* Before uv_close: last words (a TLS close_notify), if the socket takes
   * them at once. NULL: none. */
  void (*shutdown)(jrpcd_conn_t *c);
  /* After uv_close: frees the transport's own state. NULL: none. */
  void (*free)(jrpcd_conn_t *c);
  /* What the transport knows of the peer beyond the socket's address: a
   * verified client certificate's CN and DNS SANs into id (sans and buf
   * are the caller's, for the pointers). NULL: nothing. */
  void (*identity)(jrpcd_conn_t *c, jrpcd_identity_t *id, const char **sans,
                   size_t max, char *buf, size_t buflen);
} jrpcd_transport_t;

/* conn_plain.c: Unix sockets and plain TCP. */
extern const jrpcd_transport_t jrpcd_transport_plain;
/* conn_tls.c: a TLS listener's connections (in a build without TLS, start
 * fails, and no listener has TLS anyway). */
extern const jrpcd_transport_t jrpcd_transport_tls;

/* The transport of a connection accepted on l. */
static inline const jrpcd_transport_t *
jrpcd_transport_for(const jrpcd_listener_t *l) {
  return l->tls ? &jrpcd_transport_tls : &jrpcd_transport_plain;
}

/* conn_tls.c: 1 if a client certificate can be verified on c's listener
 * (its context asks for one): only then can a cert: or san: principal
 * match, so admission asks before the handshake. */
int jrpcd_conn_tls_asks_cert(const jrpcd_conn_t *c);

/* conn_write.c: write-then-queue, for every transport. What the socket
 * takes of bufs (k of them, total bytes) goes out now; the rest goes in
 * one uv_write, after which c->ev->flush runs again. from_out: bufs are
 * c->st.out's own bytes, which stay put until the write is done and are
 * consumed then; otherwise the rest is copied first. Returns the bytes
 * the socket took at once (counted, and for the caller to consume), or -1
 * when the connection was closed. */
ssize_t jrpcd_conn_write(jrpcd_conn_t *c, uv_buf_t *bufs, unsigned k,
                         size_t total, int from_out);

#endif
