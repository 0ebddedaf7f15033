/* dispatch.h - the per-worker engine: one frame in, its framed reply out.
 * Parses the frame with the worker's backend, applies the JSON-RPC rules
 * to each request, calls handlers, and writes replies (a batch as one
 * array) into the output chain. */
#ifndef JRPC_DISPATCH_H
#define JRPC_DISPATCH_H

#include <stddef.h>
#include <stdint.h>

#include "arena.h"
#include "async.h"
#include "bufpool.h"
#include "frame.h"
#include "outbuf.h"
#include "parser.h"
#include "registry.h"
#include "stats.h"
#include "writer.h"

typedef struct jrpc__limits {
  uint32_t max_frame_bytes;    /* -32001 above this */
  uint32_t max_batch;          /* -32002 above this */
  uint64_t max_response_bytes; /* -32003 above this (per call) */
} jrpc__limits_t;

#define JRPC__LIMITS_DEFAULT                                                   \
  { 1048576u, 1000u, 16777216u }

struct jrpc__engine;

/* What stands behind a jrpc_call_t during a synchronous call. */
typedef struct jrpc__call {
  jrpc_call_t pub;
  struct jrpc__engine *e;
  jrpc__writer_t w;
  jrpc__arena_t *arena; /* what jrpc_alloc draws from */
  const jrpc_peer_t *peer;
  const char *id; /* the request's id bytes, for jrpc_defer */
  size_t id_n;
  jrpc_call_t *deferred;    /* what jrpc_defer returned during this call */
  jrpc__outmark_t mark;     /* start of this call's response */
  uint64_t body_pos;        /* out position where the result value starts */
  jrpc__outmark_t err_mark; /* after the error's message, before data */
  int err_code;             /* 0, or the code jrpc_error set */
  uint8_t err_data;         /* error_begin: the next value is "data" */
  uint8_t too_large;        /* the result passed max_response_bytes */
  uint8_t notify;           /* a notification: nothing is ever sent */
  uint8_t is_deferred;      /* this is a deferred call's handle */
  uint8_t busy;             /* jrpc_defer refused: too many in flight */
  uint32_t busy_limit;      /* the limit that refused it, for the reply */
  /* The method called: its timeout, its module (jrpc_worker_data) and,
   * for a synchronous call, its row of counters. A deferred call keeps the
   * method of the generation it holds, and its counters in ms. */
  const jrpc__method_t *method;
  jrpc__mstat_t *ms; /* a deferred call's counters, or NULL */
  uint64_t start_ns; /* a deferred call's: when its read began (its
                        latency's start) */
} jrpc__call_t;

/* A call slower than the engine's slow_ns, for the host to log and keep:
 * `calls` synchronous calls of one read share a duration (see
 * jrpc__lat_flush), a deferred call is one. */
typedef struct jrpc__slow_call {
  const char *method;
  uint64_t ns;
  const jrpc_peer_t *peer;
  jrpc__outcome_t outcome;
  uint32_t calls;
} jrpc__slow_call_t;
typedef void (*jrpc__slow_fn)(void *arg, const jrpc__slow_call_t *s);

/* One call answered (a notification: run), for the host's access log:
 * every request object of a frame, and a deferred call when it ends. */
typedef struct jrpc__call_done {
  const char *method; /* decoded, not terminated; NULL: the request had none */
  size_t method_n;
  const jrpc_peer_t *peer;
  const void *origin;        /* the sink's (jrpc__sink_t.origin) */
  uint64_t start_ns, end_ns; /* jrpc__clock_ns */
  uint64_t reply_bytes;      /* of the response object; 0: none sent */
  int code;                  /* 0: a result; else the error code */
  uint8_t notify;
  uint8_t deferred; /* answered later: its line comes when it ends */
} jrpc__call_done_t;
typedef void (*jrpc__call_done_fn)(void *arg, const jrpc__call_done_t *d);

/* Methods whose synchronous calls one read can hold before their
 * latencies are added up early (jrpc__lat_flush). */
#define JRPC__TOUCHED_MAX 16

typedef void (*jrpc__log_fn)(void *arg, int level, const char *msg);

typedef struct jrpc__engine {
  jrpc__bufpool_t pool;
  jrpc__arena_t arena;
  jrpc__parser_t *parser; /* owned */
  /* Where methods are looked up: the registry, or a view of it that a
   * host sets per connection (jrpc__registry_view_init) for the frames of
   * that connection; every call of a handler goes through it, so a host
   * with views sets it to NULL (nothing found) outside them. Deferred
   * calls hold the modules of gen_reg, the registry itself. */
  const jrpc__registry_t *reg;
  const jrpc__registry_t *gen_reg;
  jrpc__limits_t lim;
  jrpc__call_t call; /* reused by every synchronous call */
  jrpc_peer_t no_peer;
  jrpc__log_fn log; /* where jrpc_log() goes; stderr by default */
  void *log_arg;
  /* Deferred calls: only with a host that runs an event loop. */
  const jrpc__host_t *host;
  void *host_arg;
  jrpc__sink_t *sink;        /* of the frame being dispatched */
  struct jrpc__batch *batch; /* of the batch being dispatched, if async */
  jrpc__link_t live;         /* deferred calls not finished */
  jrpc__link_t ended;        /* ended by shutdown, freed with the engine */
  jrpc__link_t batches;      /* batches waiting for deferred calls */
  jrpc__link_t done;         /* finished while their frame was running */
  jrpc__link_t timed;        /* unfinished calls with a deadline, by due */
  jrpc__link_t tombs;        /* cancelled, not finished by their handler */
  uint64_t armed;            /* due the host's timer is armed for; 0: none */
  uint8_t dispatching;       /* a frame's reply is being written */
  uint8_t in_batch;          /* the frame being dispatched is a batch */
  uint32_t batch_defers;     /* calls of that batch deferred so far */
  uint32_t n_live;
  /* Shared by every engine of a daemon: deferred calls in flight, and the
   * most allowed (answered -32005 beyond). NULL: no limit. */
  _Atomic uint32_t *live_total;
  uint32_t max_live_total;
  /* Counters: always kept for the engine; per method only when the host
   * gives a row indexed like reg's slots (NULL: not counted). */
  jrpc__estat_t stats;
  jrpc__mstat_t *mstats;
  /* Which worker this engine serves, for jrpc_worker_data: the slot of
   * each module's per-worker state. 0 in a host with one thread. */
  uint32_t worker;
  /* Latency, with mstats: when the read being handled began (the host
   * sets it from jrpc__clock_ns), the rows its synchronous calls reached
   * so far (their mstat.pend), and the host's hook for calls of slow_ns or
   * longer (0: none). */
  uint64_t t_read;
  uint32_t ntouched;
  jrpc__mstat_t *touched[JRPC__TOUCHED_MAX];
  uint64_t slow_ns; /* nonzero only with `slow` set */
  jrpc__slow_fn slow;
  void *slow_arg;
  /* Server push (push.h): the subscriptions of this engine's connections,
   * made by a host with an event loop; NULL: none, and subscribing answers
   * an error. */
  struct jrpc__push *push;
  /* The host's access log: NULL when off, and then no call pays more than
   * one test of it per frame (dispatch.c). A host that sets it sets t_read
   * for every read: a call is timed from its read's start, or from the
   * answer of the call before it in that read (log_last_ns). */
  jrpc__call_done_fn on_call;
  void *on_call_arg;
  uint64_t log_last_ns;
} jrpc__engine_t;

/* The counters of call's method, or NULL when not counted. */
static inline jrpc__mstat_t *jrpc__call_mstat(const jrpc__call_t *call) {
  if (call->is_deferred)
    return call->ms;
  return call->method && call->e->mstats ? &call->e->mstats[call->method->slot]
                                         : NULL;
}

/* Takes ownership of `parser`. The registry must outlive the engine. */
int jrpc__engine_init(jrpc__engine_t *e, const jrpc__registry_t *reg,
                      const jrpc__limits_t *lim, jrpc__parser_t *parser);
void jrpc__engine_free(jrpc__engine_t *e);

/* Runs one frame's payload and appends its framed reply, if any, to
 * sink->out (deferred calls answer there later). Allocations go to
 * e->arena; the caller resets it after. */
int jrpc__dispatch_frame(jrpc__engine_t *e, jrpc__sink_t *sink, const char *p,
                         size_t n, const jrpc_peer_t *peer);

/* Completes the response object of a call whose handler returned rc;
 * returns the error code it answered with, 0 for a result. */
int jrpc__call_complete(jrpc__call_t *call, int rc, const char *id,
                        size_t id_n);

/* jrpc_error / jrpc_error_begin: discard the partial result and open the
 * error object. With `data`, the writer is re-armed for the data value. */
int jrpc__call_set_error(jrpc__call_t *call, int code, const char *msg,
                         int data);

/* The slow-call hook for each method of e->touched with calls pending. */
void jrpc__lat_report_slow(jrpc__engine_t *e, uint64_t ns,
                           const jrpc_peer_t *peer);

/* Latency of the synchronous calls since the read began (e->t_read):
 * each ends when the read's frames are all answered, at `now`, so calls
 * pipelined in one read share one duration and two clock reads; peer is
 * the read's connection. The host calls it after each read; dispatch
 * calls it early when more than JRPC__TOUCHED_MAX methods were reached.
 * Inline: once per read, with the bucket found once for all. */
static inline void jrpc__lat_flush(jrpc__engine_t *e, uint64_t now,
                                   const jrpc_peer_t *peer) {
  uint64_t ns = now > e->t_read ? now - e->t_read : 0;
  if (__builtin_expect(e->slow_ns && ns >= e->slow_ns, 0))
    jrpc__lat_report_slow(e, ns, peer);
  unsigned k = jrpc__lat_bucket(ns);
  for (uint32_t i = 0; i < e->ntouched; i++) {
    jrpc__mstat_t *ms = e->touched[i];
    if (ms->pend) {
      JRPC__STAT_ADD(ms->lat[k], ms->pend);
      JRPC__STAT_ADD(ms->sum_ns, ns * ms->pend);
      if (ns > JRPC__STAT_GET(ms->max_ns))
        atomic_store_explicit(&ms->max_ns, ns, memory_order_relaxed);
    }
    ms->pend = ms->pend_err = 0;
  }
  e->ntouched = 0;
}

/* A deferred call has ended after ns: its latency, its outcome's counter
 * and, if slow, the host's hook. async.c's call_ended calls it for every
 * ending (finished, timed out, cancelled, gone, shutdown). Nothing
 * without counters. */
void jrpc__stats_call_end(jrpc__call_t *call, jrpc__outcome_t outcome,
                          uint64_t ns);

/* Appends the framed -32001 reply for a frame of `got` bytes. */
int jrpc__dispatch_too_large(jrpc__engine_t *e, jrpc__framing_t framing,
                             jrpc__outbuf_t *out, uint64_t got);

/* Appends the framed -32009 reply for a frame still incomplete, `got`
 * bytes in, after timeout_ms. */
int jrpc__dispatch_frame_timeout(jrpc__engine_t *e, jrpc__framing_t framing,
                                 jrpc__outbuf_t *out, uint32_t timeout_ms,
                                 uint64_t got);

#endif
