/* conn.h - one client connection (conn.c): its state, and what the worker
 * does with it (accept, flush, finish, close, the idle and frame sweep).
 * How its bytes move is its transport (transport.h), how they are cut
 * into frames its stream's framing (lib/framing.h). */
#ifndef JRPCD_CONN_H
#define JRPCD_CONN_H

#include <stddef.h>
#include <stdint.h>
#include <uv.h>

#include "listener.h"
#include "peercount.h"
#include "registry.h"
#include "stream.h"
#include "tokens.h"

struct jrpcd_worker;

typedef union jrpcd_handle {
  uv_handle_t h;
  uv_stream_t s;
  uv_pipe_t pipe;
  uv_tcp_t tcp;
} jrpcd_handle_t;

typedef struct jrpcd_conn {
  jrpcd_handle_t h;
  struct jrpcd_worker *w;
  /* How its bytes move (transport.h), chosen at accept, and what the
   * transport tells it. */
  const struct jrpcd_transport *tr;
  const struct jrpcd_conn_events *ev;
  uv_alloc_cb alloc_cb; /* uv_read_start's, chosen at accept */
  uv_read_cb read_cb;
  struct jrpcd_conn *prev, *next;
  const jrpcd_listener_t *l;
  jrpc__stream_t st;
  uv_write_t wreq;
  size_t wbytes;        /* bytes in the uv_write in flight */
  char *wcopy;          /* ... when they are a copy of its own (conn_write.c) */
  uint64_t last_active; /* uv_now of the last read or write progress */
  uint64_t frame_start; /* uv_now of the first byte of an incomplete frame
                           being read, or 0 */
  uint64_t id;          /* for log lines */
  uint8_t writing;      /* a uv_write is in flight */
  uint8_t reading;      /* uv_read_start is in effect */
  uint8_t paused;       /* reading stopped: too much unsent output */
  uint8_t finishing;    /* no more input: close once everything is sent */
  uint8_t eof;          /* the peer has sent everything */
  uint8_t feeding;      /* inside jrpc__stream_feed: no flush, no close */
  uint8_t closed;       /* uv_close called */
  uint8_t peer_counted; /* counted in max_connections_per_peer (pkey) */
  uint8_t wfrom_out;    /* the write in flight is st.out's bytes */
  /* Where its requests are looked up: the generation's registry, or a
   * view of it for its listener's methods and the [access] rules. */
  const jrpc__registry_t *reg;
  jrpcd_peerkey_t pkey;
  struct jrpcd_conn_tls *tls; /* the TLS transport's state, or NULL */
  /* tokens_file: the SHA-256 of the bearer token its first request
   * brought (conn_auth.c), which every later one must bring too. */
  uint8_t token_set;
  uint8_t token_digest[JRPCD_TOKEN_DIGEST];
} jrpcd_conn_t;

/* "pid 12 uid 1000", "127.0.0.1:5123", "[::1]:5123", for log lines. */
const char *jrpcd_conn_peer_text(const jrpcd_conn_t *c, char *buf, size_t n);
/* A warning about c's peer, at most one a second per log r: counts the
 * event; returns how many the line due now reports, with the peer's text
 * in buf, or 0 (buf untouched) when a line went out less than a second
 * ago. */
struct jrpcd_ratelog;
uint64_t jrpcd_conn_log_due(const jrpcd_conn_t *c, struct jrpcd_ratelog *r,
                            char *buf, size_t n);
void jrpcd_conn_accept(struct jrpcd_worker *w, uv_stream_t *server,
                       const jrpcd_listener_t *l);
/* On w's loop: a connection handed over by jrpcd_worker_adopt. */
void jrpcd_conn_adopted(struct jrpcd_worker *w, int fd,
                        const jrpcd_listener_t *l);
void jrpcd_conn_flush(jrpcd_conn_t *c);
/* Shutdown: read what the peer already sent, answer it, then close when
 * everything is sent. */
void jrpcd_conn_finish(jrpcd_conn_t *c);
void jrpcd_conn_close(jrpcd_conn_t *c, const char *why);
/* The sweep: closes c if it has been quiet for idle_ms, or answers -32009
 * and closes it if a frame has taken longer than frame_ms to arrive (0:
 * no limit). */
void jrpcd_conn_sweep(jrpcd_conn_t *c, uint64_t now, uint64_t idle_ms,
                      uint64_t frame_ms);

static inline jrpcd_conn_t *jrpcd_conn_of_sink(jrpc__sink_t *s) {
  return (jrpcd_conn_t *)(void *)((char *)s - offsetof(jrpcd_conn_t, st) -
                                  offsetof(jrpc__stream_t, sink));
}

#endif
