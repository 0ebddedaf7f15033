/* worker.h - a worker thread: one libuv loop, one engine (buffer pool,
 * arena, parser), a handle on every listener, and the connections it
 * accepted. Other threads reach it only through wake (stop, a new plugin
 * generation, calls posted by handlers), under mu. */
#ifndef JRPCD_WORKER_H
#define JRPCD_WORKER_H

#include <pthread.h>
#include <stdatomic.h>
#include <uv.h>

#include "dispatch.h"
#include "listener.h"
#include "plugins.h"
#include "slowcalls.h"
#include "stream.h"

struct jrpcd_server;
struct jrpcd_worker;

typedef union jrpcd_handle {
  uv_handle_t h;
  uv_stream_t s;
  uv_pipe_t pipe;
  uv_tcp_t tcp;
} jrpcd_handle_t;

/* Events logged at most once a second: how many since the last line. */
typedef struct jrpcd_ratelog {
  uint64_t n;      /* events not logged yet */
  uint64_t logged; /* uv_now of the last line, 0: none yet */
} jrpcd_ratelog_t;

/* Counts one event; returns how many the line due now should report, or
 * 0 when a line was written less than a second ago. */
static inline uint64_t jrpcd_ratelog_due(jrpcd_ratelog_t *r, uint64_t now) {
  r->n++;
  if (r->logged && now - r->logged < 1000)
    return 0;
  uint64_t n = r->n;
  r->n = 0;
  r->logged = now ? now : 1;
  return n;
}

/* A worker's handle on one listener. */
typedef enum {
  JRPCD_ACC_OFF = 0,   /* no handle */
  JRPCD_ACC_LISTENING, /* accepting */
  JRPCD_ACC_CLOSING,   /* paused: uv_close called, callback due */
  JRPCD_ACC_PAUSED     /* paused: closed, to listen again from a timer */
} jrpcd_acc_state_t;

typedef struct jrpcd_acceptor {
  jrpcd_handle_t h; /* first: the callbacks' stream is the acceptor */
  const jrpcd_listener_t *l;
  jrpcd_acc_state_t state;
} jrpcd_acceptor_t;

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

/* A connection accepted by a busier worker, handed over. */
typedef struct jrpcd_handoff {
  struct jrpcd_handoff *next;
  int fd;
  const jrpcd_listener_t *l;
} jrpcd_handoff_t;

typedef struct jrpcd_worker {
  struct jrpcd_server *srv;
  unsigned index;
  uv_thread_t thread;
  uv_loop_t loop;
  uv_async_t wake;
  uv_timer_t tick;     /* idle sweep; during shutdown, progress checks */
  uv_timer_t deadline; /* shutdown_timeout_ms */
  uv_check_t after;    /* after the loop turn's callbacks: drops */
  jrpcd_gen_t **drops; /* generations deferred calls let go of */
  size_t ndrops, capdrops;
  jrpc__engine_t engine;
  jrpcd_gen_t *gen;          /* held */
  jrpcd_acceptor_t *servers; /* one per listener (accept.c) */
  size_t nservers;
  uv_timer_t accept_retry;    /* listens again after accept failed */
  uv_timer_t call_timer;      /* the earliest deferred call's deadline */
  uint32_t accept_backoff_ms; /* the current wait before listening again */
  uint64_t accept_resumed;    /* uv_now when it last listened again */
  jrpcd_ratelog_t accept_log; /* failed accepts */
  jrpcd_conn_t conns;         /* list head */
  /* The id of the connection of the last read and the loop's millisecond
   * it came in: early replies are for a client that has its worker to
   * itself (conn.c). */
  uint64_t last_read_id;
  uint64_t last_read_ms;
  char *tls_in; /* ciphertext read by its TLS connections (conn_tls.c), made
                   at the first; NULL until then */
  uint32_t nconns;
  atomic_uint load;             /* connections, as other workers see it */
  uint32_t nwork;               /* queue_work tasks not done */
  jrpcd_ratelog_t refused_log;  /* connections over max_connections */
  jrpcd_ratelog_t peers_log;    /* peers not in a listener's `peers` */
  jrpcd_ratelog_t per_peer_log; /* over max_connections_per_peer */
  jrpcd_ratelog_t denied_log;   /* calls [access] denied */
  jrpcd_ratelog_t auth_log;     /* HTTP requests without a valid token */
  /* Connections over a listener's max_handshakes. */
  jrpcd_ratelog_t handshake_log;
  /* For rpc.stats; written by this worker only (calls and errors are in
   * engine.stats). */
  jrpc__counter_t accepted;  /* connections served since start */
  jrpc__counter_t bytes_in;  /* read from clients */
  jrpc__counter_t bytes_out; /* written to clients */
  jrpc__counter_t auth_fail; /* HTTP requests answered 401 (tokens_file) */
  jrpcd_slowcalls_t slow;    /* slow_call_ms: the last few, the log's limit */
  uint8_t stopping;          /* shutdown began */
  uint8_t stopped;           /* handles closed; the loop is ending */
  uint8_t engine_ready;      /* jrpcd_worker_free has an engine to free */
  uint8_t abandoned;         /* stopped with thread-pool tasks still out */
  uint8_t deadline_passed;   /* shutdown_timeout_ms is over */
  /* Shared with other threads, under mu. */
  pthread_mutex_t mu;
  jrpc__post_node_t *posts, *posts_tail;
  jrpcd_handoff_t *handoffs;
  jrpcd_gen_t *next_gen;
  uint8_t stop_req;
  uint8_t posts_closed;
} jrpcd_worker_t;

/* Sets up the loop and engine and starts the thread. -1 with err. */
int jrpcd_worker_start(jrpcd_worker_t *w, struct jrpcd_server *srv,
                       unsigned index, char *err, size_t errlen);
/* From any thread: begin a graceful stop. */
void jrpcd_worker_stop(jrpcd_worker_t *w);
/* From any thread: use gen for new requests (takes one hold on it). */
void jrpcd_worker_use(jrpcd_worker_t *w, jrpcd_gen_t *gen);
/* From another worker: take over the accepted socket fd. 0, or -1 when
 * this worker is stopping (the caller keeps the connection). */
int jrpcd_worker_adopt(jrpcd_worker_t *w, int fd, const jrpcd_listener_t *l);
/* After the thread has ended: join it. */
void jrpcd_worker_join(jrpcd_worker_t *w);
/* After plugins are gone: free the engine and everything left. */
void jrpcd_worker_free(jrpcd_worker_t *w);

/* accept.c: listen on every listener (-1 with err; jrpcd_accept_stop
 * then closes what was opened), and stop listening for good. */
int jrpcd_accept_start(jrpcd_worker_t *w, char *err, size_t errlen);
void jrpcd_accept_stop(jrpcd_worker_t *w);

/* admit.c: reads the peer's identity when something needs it; 0 if the
 * connection may not stay (the log says why), else 1 with c->reg set. */
int jrpcd_conn_admit(jrpcd_conn_t *c);
/* The same once a TLS handshake is done: `peers` again with the client
 * certificate known, and the views that need it. */
int jrpcd_conn_admit_verified(jrpcd_conn_t *c);
/* After a reload: c->reg for the worker's new generation (closes c if
 * none can be had). */
void jrpcd_conn_regen(jrpcd_conn_t *c);
/* c->reg for what is known of the peer now (a bearer token, say): 0, or
 * -1 when no view can be had (logged; c->reg is left as it was). */
int jrpcd_conn_review(jrpcd_conn_t *c);

/* conn_auth.c: jrpcd_http_host's authorize (http.h), for listeners with a
 * tokens_file; and whether c's requests must bring a token, set at accept
 * and at each reload. */
int jrpcd_conn_authorize(void *arg, jrpc__stream_t *s, const char *cred,
                         size_t n, const char **why);
void jrpcd_conn_auth_update(jrpcd_conn_t *c);
/* The name of the token c's requests bring, or NULL. */
const char *jrpcd_conn_token(const jrpcd_conn_t *c);

/* conn.c */
/* "pid 12 uid 1000", "127.0.0.1:5123", "[::1]:5123", for log lines. */
const char *jrpcd_conn_peer_text(const jrpcd_conn_t *c, char *buf, size_t n);
void jrpcd_conn_accept(jrpcd_worker_t *w, uv_stream_t *server,
                       const jrpcd_listener_t *l);
/* On w's loop: a connection handed over by jrpcd_worker_adopt. */
void jrpcd_conn_adopted(jrpcd_worker_t *w, int fd, const jrpcd_listener_t *l);
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
