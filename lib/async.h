/* async.h - deferred calls: replies a handler completes after it returned.
 *
 * A deferred call writes its response into its own output chain; when it
 * finishes, the response is framed onto its connection's output (or added
 * to its batch, which is framed once its last call finishes). A connection
 * that goes away detaches its sink: replies due to it are then dropped.
 * The event loop, the thread pool and the cross-thread queue belong to the
 * host (the daemon), reached through jrpc__host_t. */
#ifndef JRPC_ASYNC_H
#define JRPC_ASYNC_H

#include <stdint.h>

#include "frame.h"
#include "jrpc/jrpc.h"
#include "outbuf.h"
#include "registry.h"

struct jrpc__engine;
struct jrpc__sink;

/* Intrusive list links of what a sink (or the engine) is waiting for. */
typedef struct jrpc__link {
  struct jrpc__link *prev, *next;
} jrpc__link_t;

static inline void jrpc__link_init(jrpc__link_t *l) {
  l->prev = l->next = l;
}
/* l at the end of the list head. */
static inline void jrpc__link_push(jrpc__link_t *head, jrpc__link_t *l) {
  l->prev = head->prev;
  l->next = head;
  head->prev->next = l;
  head->prev = l;
}
/* l out of its list (and a list of its own). */
static inline void jrpc__link_drop(jrpc__link_t *l) {
  l->prev->next = l->next;
  l->next->prev = l->prev;
  jrpc__link_init(l);
}

/* Where a connection's replies go. The host embeds one per connection and
 * recognises it again in host->output(). */
typedef struct jrpc__sink {
  jrpc__outbuf_t *out;
  jrpc__framing_t framing;
  /* Puts a deferred reply onto out in the framing's way (framing.h). */
  void (*deliver)(struct jrpc__sink *sink, jrpc__outbuf_t *src);
  /* Puts a notification onto out (framing.h); NULL: no push here. */
  void (*notify)(struct jrpc__sink *sink, jrpc__outbuf_t *src);
  /* Its subscriptions and their losses (push.h), once it has any. */
  struct jrpc__push_conn *push;
  jrpc__link_t waiting; /* deferred calls and batches that answer here */
  uint32_t calls;       /* deferred calls not yet answered here */
  /* At most this many may be (0: no limit): the stream holds further
   * frames unread, and a batch's calls beyond it are answered -32005. */
  uint32_t max_calls;
  /* The host's mark of where the connection came from, handed back with
   * each of its calls to the access log (jrpc__call_done_t). */
  const void *origin;
} jrpc__sink_t;

/* A posted call waiting in the host's queue. Every deferred call carries
 * one, so that a post never needs memory; a second post for the same call
 * while the first still waits gets node NULL and the host allocates. The
 * host must copy what it needs out of the node before running fn: fn may
 * finish the call, and the node goes with it. */
typedef struct jrpc__post_node {
  struct jrpc__post_node *next;
  jrpc_call_t *call;
  jrpc_post_fn fn;
  void *arg;
  const jrpc__registry_t *reg; /* fn is code of these modules */
  uint8_t embedded;            /* lives in the call; not to be freed */
} jrpc__post_node_t;

typedef struct jrpc__host {
  /* Thread-safe: run fn(d, fnarg) on the engine's loop; node is free for
   * the host to use, or NULL. 0, or JRPC_ECANCELED once the host is
   * shutting down (it then ends the call itself), or JRPC_ENOMEM. */
  int (*post)(void *arg, jrpc_call_t *d, jrpc__post_node_t *node,
              const jrpc__registry_t *reg, jrpc_post_fn fn, void *fnarg);
  /* On the loop: work(fnarg) on a thread pool, then done(d, fnarg). The
   * host keeps reg's modules loaded until done has returned. */
  int (*queue_work)(void *arg, jrpc_call_t *d, const jrpc__registry_t *reg,
                    jrpc_work_fn work, jrpc_post_fn done, void *fnarg);
  /* Deferred reply bytes were appended to sink->out, or sink->calls went
   * down (a notification or a batch's call finished): write what there is
   * and look again at whether the connection may read (or close). */
  void (*output)(void *arg, jrpc__sink_t *sink);
  /* Keeps the modules behind reg loaded (+1) or lets them go (-1). */
  void (*hold)(void *arg, const jrpc__registry_t *reg, int delta);
  /* Call timeouts (both NULL: none). now: the loop's clock in ms. arm:
   * call jrpc__async_expire once the clock reaches `due` (replacing any
   * earlier arming; firing early is harmless). Used only by calls that
   * defer with a timeout: a synchronous call never reads the clock. */
  uint64_t (*now)(void *arg);
  void (*arm)(void *arg, uint64_t due);
  /* Server push (push.h; all NULL: none). queued: the sink's bytes not
   * yet taken by the socket, its output and the transport's alike.
   * overflow: push_overflow = close: the connection is to go (not from
   * inside this call: after it). random: n unpredictable bytes; 0 or -1. */
  uint64_t (*queued)(void *arg, jrpc__sink_t *sink);
  void (*overflow)(void *arg, jrpc__sink_t *sink);
  int (*random)(void *arg, void *buf, size_t n);
} jrpc__host_t;

/* How a deferred call ended: the one place that learns it is
 * call_ended() in async.c (where per-method counts belong). */
typedef enum jrpc__call_end {
  JRPC__END_FINISHED = 0, /* the handler finished it: its own reply */
  JRPC__END_TIMED_OUT,    /* its deadline passed: -32004 */
  JRPC__END_CANCELLED,    /* $/cancelRequest: -32800 */
  JRPC__END_GONE,         /* its connection closed: no reply */
  JRPC__END_SHUTDOWN,     /* the shutdown deadline passed: -32007 */
} jrpc__call_end_t;

void jrpc__sink_init(jrpc__sink_t *s, jrpc__outbuf_t *out,
                     jrpc__framing_t framing);
/* The connection is going: each of its unfinished deferred calls is
 * cancelled (JRPC__END_GONE: its cancel callback runs, its reply buffer is
 * freed, nothing is sent), and its batches are freed. */
void jrpc__sink_detach(jrpc__sink_t *s);

/* jrpc_defer on a running synchronous call; NULL without a host. */
jrpc_call_t *jrpc__defer(jrpc_call_t *c);
int jrpc__finish(jrpc_call_t *c);
int jrpc__post(jrpc_call_t *c, jrpc_post_fn fn, void *arg);
int jrpc__queue_work(jrpc_call_t *c, jrpc_work_fn work, jrpc_post_fn done,
                     void *arg);
int jrpc__on_cancel(jrpc_call_t *c, jrpc_cancel_fn fn, void *arg);
/* Any thread: 1 once the call was cancelled (timed out, cancelled by
 * request, its connection gone, shutdown). Readable while the handle is
 * valid, i.e. until the handler's jrpc_finish. */
int jrpc__cancelled(jrpc_call_t *c);

/* "$/cancelRequest" (a notification) with params {"id": X} on the sink
 * being dispatched: cancels its unfinished calls whose id is X, byte for
 * byte (-32800). Unknown ids are ignored. */
void jrpc__async_cancel_request(struct jrpc__engine *e, jrpc_val_t params);
/* The host's timer (jrpc__host_t.arm) fired: answers -32004 to every call
 * whose deadline has passed, then arms the timer for the next. */
void jrpc__async_expire(struct jrpc__engine *e);

/* Dispatch's side: the handler that just returned deferred its call;
 * `batch_body` is the batch being answered (NULL for a single request). */
struct jrpc__batch;
struct jrpc__batch *jrpc__batch_new(struct jrpc__engine *e, jrpc__sink_t *sink);
void jrpc__batch_attach(struct jrpc__batch *b, jrpc_call_t *d);
/* The batch's synchronous replies so far (bytes after m in o, starting
 * with '[' if any) move into the batch, which now waits for its calls. */
int jrpc__batch_take(struct jrpc__batch *b, jrpc__outbuf_t *o,
                     jrpc__outmark_t m);

/* The connection a deferred call answers on (directly or through its
 * batch), for jrpc_notify: NULL when it has none any more, or the call is
 * answered or not a deferred one. */
jrpc__sink_t *jrpc__deferred_sink(jrpc_call_t *c);

/* The host has copied an embedded post node out and is about to run its
 * fn: the call may post again. */
void jrpc__post_node_done(jrpc__post_node_t *node);

/* End of a frame's dispatch: answers calls finished during it. */
void jrpc__async_frame_end(struct jrpc__engine *e);

/* Deferred calls not finished yet. */
uint32_t jrpc__async_live(const struct jrpc__engine *e);
/* Shutdown: ends every unfinished call with -32007 (cancel callbacks
 * run). Their handles stay valid (finish then does nothing) until
 * jrpc__engine_free. */
void jrpc__async_cancel_all(struct jrpc__engine *e);
/* Engine teardown: frees every deferred call and batch. */
void jrpc__async_free_all(struct jrpc__engine *e);

#endif
