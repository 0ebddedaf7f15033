/* worker.h - a worker thread: one libuv loop, one engine (buffer pool,
 * arena, parser), a handle on every listener, and the connections it
 * accepted. Other threads reach it only through wake (stop, a new plugin
 * generation, calls posted by handlers), under mu. */
#ifndef JRPCD_WORKER_H
#define JRPCD_WORKER_H

#include <pthread.h>
#include <stdatomic.h>
#include <uv.h>

#include "conn.h"
#include "dispatch.h"
#include "listener.h"
#include "generation.h"
#include "hub.h"
#include "slowcalls.h"

struct jrpcd_server;

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

/* Why a connection was closed as it came, before anything of it was
 * served: counted per worker for rpc.stats and /metrics (rpcstats.h has
 * their names). */
typedef enum jrpcd_refusal {
  JRPCD_REFUSED_PEERS = 0,       /* not among its listener's `peers` */
  JRPCD_REFUSED_PER_PEER,        /* max_connections_per_peer */
  JRPCD_REFUSED_MAX_CONNECTIONS, /* max_connections */
  JRPCD_REFUSED_MAX_HANDSHAKES,  /* a TLS listener's max_handshakes */
  JRPCD_REFUSED_TLS_HANDSHAKE,   /* a TLS handshake failed or timed out, or
                                    its client left it half way */
  JRPCD_REFUSALS
} jrpcd_refusal_t;

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
  jrpc__push_t push;         /* its connections' subscriptions (engine.push) */
  jrpcd_inbox_t inbox;       /* published messages for them (hub.h) */
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
  jrpc__counter_t refused[JRPCD_REFUSALS]; /* connections, by reason */
  jrpcd_slowcalls_t slow;  /* slow_call_ms: the last few, the log's limit */
  uint8_t stopping;        /* shutdown began */
  uint8_t stopped;         /* handles closed; the loop is ending */
  uint8_t engine_ready;    /* jrpcd_worker_free has an engine to free */
  uint8_t abandoned;       /* stopped with thread-pool tasks still out */
  uint8_t deadline_passed; /* shutdown_timeout_ms is over */
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

#endif
