/* async.c - deferred calls and the batches that wait for them; see
 * async.h. This is the slow path: a deferred call has its own heap
 * object, output chain and arena, so that nothing of the frame it came
 * from (reset after every read) has to live on. */
#include "async.h"

#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common.h"
#include "dispatch.h"
#include "framing.h"
#include "request.h"
#include "view.h"

#define DEFERRED_ARENA_FIRST 1024
#define CONTAINER(p, type, member)                                             \
  ((type *)((char *)(p)-offsetof(type, member)))

typedef struct jrpc__batch {
  jrpc__link_t at_sink;   /* in sink->waiting */
  jrpc__link_t at_engine; /* in e->batches */
  jrpc__sink_t *sink;     /* NULL once the connection is gone */
  uint8_t is_batch;       /* 1: tells it from a call on sink->waiting */
  jrpc__link_t calls;     /* its deferred calls not finished (at_sink) */
  jrpc__engine_t *e;
  jrpc__outbuf_t out; /* '[' and the replies so far, when any */
  uint32_t waiting;   /* deferred calls not finished */
  uint8_t taken;      /* the synchronous part has been moved in */
  uint8_t oom;        /* a reply could not be kept: answer with -32603 */
} jrpc__batch_t;

typedef struct jrpc__deferred {
  jrpc__link_t at_sink;   /* in sink->waiting, or its batch's calls */
  jrpc__link_t at_engine; /* in e->live, e->done, e->ended or e->tombs */
  jrpc__sink_t *sink;
  uint8_t is_batch; /* 0 */
  jrpc__batch_t *batch;
  jrpc__link_t at_deadline; /* in e->timed, by due, while it has one */
  uint64_t due;             /* host clock (ms) of its deadline */
  uint32_t timeout_ms;      /* 0: none */
  jrpc_cancel_fn on_cancel;
  void *cancel_arg;
  atomic_uchar cancelled; /* jrpc_cancelled, read from any thread */
  uint8_t tomb;           /* cancelled: freed by the handler's jrpc_finish */
  /* Cancelled during its connection's frame, answered at the frame's end
   * (1); 2: its handler finished it meanwhile, so it is freed then. */
  uint8_t cancel_pending;
  const jrpc__registry_t *reg; /* held while the call is unfinished */
  jrpc__call_t call;
  jrpc__outbuf_t out;
  jrpc__arena_t arena;
  jrpc_peer_t peer;
  const void *origin;     /* its sink's, for the access log */
  jrpc__post_node_t post; /* for jrpc_post; in use while `posted` */
  atomic_flag posted;
  uint8_t ended;    /* answered by shutdown; finish does nothing */
  uint8_t finished; /* jrpc_finish ran during dispatch; answer pending */
  size_t id_n;
  char id[];
} jrpc__deferred_t;

void jrpc__sink_init(jrpc__sink_t *s, jrpc__outbuf_t *out,
                     jrpc__framing_t framing) {
  s->out = out;
  s->framing = framing;
  s->deliver = jrpc__framings[framing].deliver;
  s->notify = jrpc__framings[framing].notify;
  s->push = NULL;
  s->calls = 0;
  s->max_calls = 0;
  s->origin = NULL;
  jrpc__link_init(&s->waiting);
}

/* Both kinds of waiter start with their at_sink link and sink pointer
 * aligned alike, so one walk detaches them. */
typedef struct waiter {
  jrpc__link_t at_sink;
  jrpc__link_t at_engine;
  jrpc__sink_t *sink;
  uint8_t is_batch;
} waiter_t;

/* Tells the host that the sink changed: output was appended, or its
 * count of calls in flight went down. Either may let a connection that
 * was paused (frames held behind max_pending_calls) read again, or one
 * that was finishing close; so every path that lowers `calls` ends here,
 * not only those with bytes to send. */
static void sink_changed(jrpc__engine_t *e, jrpc__sink_t *sink) {
  if (sink && e->host && e->host->output)
    e->host->output(e->host_arg, sink);
}

/* One reply frame with src's bytes onto the sink, and tell the host. */
static void deliver(jrpc__engine_t *e, jrpc__sink_t *sink,
                    jrpc__outbuf_t *src) {
  sink->deliver(sink, src);
  sink_changed(e, sink);
}

/* Puts d on the engine's deadline list, kept in order of due (a scan from
 * the back: calls of one timeout arrive in order, so it stops at once),
 * and arms the host's timer when d is now the first due. */
static void deadline_set(jrpc__engine_t *e, jrpc__deferred_t *d,
                         uint32_t timeout_ms) {
  if (!e->host->now || !e->host->arm)
    return;
  d->timeout_ms = timeout_ms;
  d->due = e->host->now(e->host_arg) + timeout_ms;
  jrpc__link_t *at = e->timed.prev;
  while (at != &e->timed &&
         CONTAINER(at, jrpc__deferred_t, at_deadline)->due > d->due)
    at = at->prev;
  /* after `at` */
  d->at_deadline.prev = at;
  d->at_deadline.next = at->next;
  at->next->prev = &d->at_deadline;
  at->next = &d->at_deadline;
  if (at == &e->timed && (!e->armed || d->due < e->armed)) {
    e->armed = d->due;
    e->host->arm(e->host_arg, d->due);
  }
}

jrpc_call_t *jrpc__defer(jrpc_call_t *c) {
  jrpc__call_t *call = (jrpc__call_t *)c;
  jrpc__engine_t *e = call->e;
  if (call->is_deferred || !e->host)
    return NULL;
  if (call->deferred)
    return call->deferred;
  jrpc__sink_t *sink = e->sink;
  if (e->in_batch && sink && sink->max_calls &&
      e->batch_defers >= sink->max_calls) {
    /* The stream reads no frame while the connection is at its limit,
     * but one batch may hold many calls: no more of them than that limit
     * may defer. (Calls of earlier frames do not count here, so a batch
     * read just before the connection's others finish is not refused.) */
    call->busy = 1;
    call->busy_limit = sink->max_calls;
    return NULL;
  }
  if (e->live_total &&
      atomic_fetch_add(e->live_total, 1) >= e->max_live_total) {
    /* The daemon has as many calls in flight as it allows: this one is
     * answered -32005 whatever the handler writes next. */
    atomic_fetch_sub(e->live_total, 1);
    call->busy = 1;
    call->busy_limit = e->max_live_total;
    return NULL;
  }
  size_t id_n = call->notify ? 0 : call->id_n;
  jrpc__deferred_t *d = calloc(1, sizeof(*d) + id_n);
  if (!d) {
    if (e->live_total)
      atomic_fetch_sub(e->live_total, 1);
    return NULL;
  }
  atomic_flag_clear(&d->posted);
  memcpy(d->id, call->id, id_n);
  d->id_n = id_n;
  d->peer = *call->peer;
  jrpc__arena_init(&d->arena, DEFERRED_ARENA_FIRST, 0);
  jrpc__out_init(&d->out, &e->pool);
  jrpc__out_small_segments(&d->out);
  jrpc__call_t *dc = &d->call;
  dc->pub.api = call->pub.api;
  dc->e = e;
  dc->arena = &d->arena;
  dc->peer = &d->peer;
  dc->notify = call->notify;
  dc->is_deferred = 1;
  dc->method = call->method; /* in gen_reg's generation, which d holds */
  dc->ms = jrpc__call_mstat(call);
  /* Not one of the read's synchronous calls after all: it ends when it
   * ends, timed from the read that brought it. */
  if (dc->ms)
    dc->ms->pend--;
  dc->start_ns = e->t_read;
  dc->mark = jrpc__out_mark(&d->out);
  jrpc__reply_result_open(&d->out);
  jrpc__writer_init(&dc->w, &d->out);
  d->reg = e->gen_reg;
  if (e->host->hold && d->reg)
    e->host->hold(e->host_arg, d->reg, +1);
  /* A notification is never answered, but it counts among its
   * connection's calls in flight all the same. */
  d->sink = e->sink;
  d->origin = e->sink ? e->sink->origin : NULL;
  jrpc__link_init(&d->at_sink);
  if (d->sink) {
    jrpc__link_push(&d->sink->waiting, &d->at_sink);
    d->sink->calls++;
  }
  jrpc__link_push(&e->live, &d->at_engine);
  e->n_live++;
  e->batch_defers += e->in_batch;
  jrpc__link_init(&d->at_deadline);
  if (call->method && call->method->timeout_ms)
    deadline_set(e, d, call->method->timeout_ms);
  call->deferred = &dc->pub;
  return &dc->pub;
}

static jrpc__deferred_t *deferred_of(jrpc_call_t *c) {
  jrpc__call_t *call = (jrpc__call_t *)c;
  if (!call || !call->is_deferred)
    return NULL;
  return CONTAINER(call, jrpc__deferred_t, call);
}

static void batch_free(jrpc__batch_t *b) {
  while (b->calls.next != &b->calls) /* engine teardown only */
    jrpc__link_drop(b->calls.next);
  jrpc__link_drop(&b->at_sink);
  jrpc__link_drop(&b->at_engine);
  jrpc__out_free(&b->out);
  free(b);
}

/* The batch's last call has finished: frame the whole array. */
static void batch_close(jrpc__batch_t *b) {
  if (b->sink && jrpc__out_pending(&b->out) > 0) {
    if (b->oom) {
      jrpc__out_free(&b->out);
      jrpc__out_init(&b->out, &b->e->pool);
      static const char oom[] = "\"out of memory\"";
      jrpc__reply_error(&b->out, JRPC_INTERNAL_ERROR, NULL, oom,
                        sizeof(oom) - 1, NULL, 0);
    } else {
      jrpc__out_byte(&b->out, ']');
    }
    jrpc__link_drop(&b->at_sink); /* as in deferred_answer */
    deliver(b->e, b->sink, &b->out);
  } else if (b->sink) {
    jrpc__link_drop(&b->at_sink);
    sink_changed(b->e, b->sink);
  }
  batch_free(b);
}

/* A finished call's response joins its batch. */
static void batch_add(jrpc__batch_t *b, jrpc__outbuf_t *reply) {
  if (b->sink)
    b->sink->calls--; /* counted for the batch in jrpc__batch_attach */
  int rc = jrpc__out_byte(&b->out, jrpc__out_pending(&b->out) ? ',' : '[');
  rc |= jrpc__out_append(&b->out, reply);
  if (rc || b->out.oom)
    b->oom = 1;
  if (--b->waiting == 0 && b->taken)
    batch_close(b); /* tells the host */
  else
    sink_changed(b->e, b->sink); /* one call fewer in flight */
}

/* A deferred call has ended, `how`: the one place every ending passes,
 * before its reply (if any) goes out. It no longer counts as in flight, so
 * that a client reacting to the reply finds the room free, and its
 * deadline is dropped. Per-method counts of outcomes belong here. */
static void call_ended(jrpc__engine_t *e, jrpc__deferred_t *d,
                       jrpc__call_end_t how) {
  jrpc__call_t *dc = &d->call;
  if (dc->ms) {
    /* Its latency and outcome (rpc.stats, slow_call_ms). */
    static const jrpc__outcome_t outcome[] = {
        [JRPC__END_FINISHED] = JRPC__OUT_OK,
        [JRPC__END_TIMED_OUT] = JRPC__OUT_TIMED_OUT,
        [JRPC__END_CANCELLED] = JRPC__OUT_CANCELLED,
        [JRPC__END_GONE] = JRPC__OUT_CANCELLED,
        [JRPC__END_SHUTDOWN] = JRPC__OUT_ERROR,
    };
    jrpc__outcome_t o = outcome[how];
    if (how == JRPC__END_FINISHED &&
        (dc->err_code || dc->too_large || dc->w.bad))
      o = JRPC__OUT_ERROR;
    jrpc__stats_call_end(dc, o, jrpc__clock_ns() - dc->start_ns);
  }
  e->n_live--;
  if (e->live_total)
    atomic_fetch_sub(e->live_total, 1);
  jrpc__link_drop(&d->at_deadline);
}

static void deferred_release(jrpc__engine_t *e, jrpc__deferred_t *d) {
  jrpc__link_drop(&d->at_sink);
  jrpc__link_drop(&d->at_engine);
  if (e->host && e->host->hold && d->reg)
    e->host->hold(e->host_arg, d->reg, -1);
  d->reg = NULL;
}

static void deferred_free(jrpc__deferred_t *d) {
  jrpc__out_free(&d->out);
  jrpc__arena_free(&d->arena);
  free(d);
}

/* The access log's line of a deferred call that ended with code. */
static void deferred_logged(jrpc__engine_t *e, const jrpc__deferred_t *d,
                            int code, uint64_t bytes) {
  const jrpc__call_t *dc = &d->call;
  jrpc__call_done_t done = {0};
  done.method = dc->method ? dc->method->name : NULL;
  done.method_n = dc->method ? dc->method->len : 0;
  done.peer = dc->peer;
  done.origin = d->origin;
  done.start_ns = dc->start_ns;
  done.end_ns = jrpc__clock_ns();
  done.reply_bytes = bytes;
  done.code = code;
  done.notify = dc->notify;
  e->on_call(e->on_call_arg, &done);
}

/* Writes the response and sends it where it belongs. */
static void deferred_answer(jrpc__engine_t *e, jrpc__deferred_t *d) {
  int code = jrpc__call_complete(&d->call, 0, d->id, d->id_n);
  if (e->on_call)
    deferred_logged(e, d, code,
                    d->call.notify ? 0 : jrpc__out_pending(&d->out));
  /* Off the sink's list first: the host may close a connection that has
   * nothing left to wait for as soon as it is told of this output. */
  jrpc__link_drop(&d->at_sink);
  if (d->call.notify) {
    if (d->sink) {
      d->sink->calls--;
      sink_changed(e, d->sink); /* nothing to send, but room to read */
    }
    return;
  }
  if (d->batch) {
    batch_add(d->batch, &d->out);
  } else if (d->sink) {
    d->sink->calls--;
    deliver(e, d->sink, &d->out);
  }
}

static void deferred_done(jrpc__engine_t *e, jrpc__deferred_t *d) {
  deferred_answer(e, d);
  deferred_release(e, d);
  deferred_free(d);
}

int jrpc__finish(jrpc_call_t *c) {
  jrpc__deferred_t *d = deferred_of(c);
  if (!d)
    return JRPC_EINVAL;
  jrpc__engine_t *e = d->call.e;
  if (d->tomb) {
    /* Cancelled and answered already: the handler is done with it. */
    deferred_release(e, d);
    deferred_free(d);
    return JRPC_ECANCELED;
  }
  if (d->cancel_pending) {
    d->cancel_pending = 2; /* answered at the frame's end, then freed */
    return JRPC_ECANCELED;
  }
  if (d->ended || d->finished)
    return JRPC_ECANCELED; /* shutdown answered it; freed with the engine */
  call_ended(e, d, JRPC__END_FINISHED);
  if (e->dispatching) {
    /* Finished inside a handler of the frame being answered: that frame's
     * reply is half written, and a batch may still adopt the call. Answer
     * once the frame is complete. */
    d->finished = 1;
    jrpc__link_drop(&d->at_engine);
    jrpc__link_push(&e->done, &d->at_engine);
    return 0;
  }
  deferred_done(e, d);
  return 0;
}

/* ---- cancellation ---- */

/* The error a call ended early is answered with; SHUTDOWN keeps its data-
 * less form. */
static void cancel_reply(jrpc__deferred_t *d, jrpc__call_end_t how) {
  jrpc__call_t *call = &d->call;
  if (how == JRPC__END_TIMED_OUT) {
    jrpc__call_set_error(call, JRPC_TIMED_OUT, NULL, 1);
    char data[32];
    int n = snprintf(data, sizeof(data), "{\"timeout_ms\":%u}", d->timeout_ms);
    jrpc__out_put(&d->out, data, (size_t)n);
    call->err_data = 0; /* the data is written: complete it as it is */
  } else {
    jrpc__call_set_error(call,
                         how == JRPC__END_CANCELLED ? JRPC_REQUEST_CANCELLED
                                                    : JRPC_SHUTTING_DOWN,
                         NULL, 0);
  }
}

/* d's reply (if any) is out: its reply buffer goes, jrpc_alloc memory
 * stays until finish (the handler's work may still use it), and the
 * cancel callback runs last (it may finish d: nothing touches d after
 * it). A fresh empty chain keeps jrpc_error on the handle harmless; writes
 * are refused (an error without data is set). */
static void entomb(jrpc__engine_t *e, jrpc__deferred_t *d,
                   jrpc__call_end_t how) {
  d->sink = NULL;
  d->batch = NULL;
  jrpc__out_free(&d->out);
  jrpc__out_init(&d->out, &e->pool);
  jrpc__out_small_segments(&d->out);
  d->call.mark = jrpc__out_mark(&d->out);
  jrpc__writer_init(&d->call.w, &d->out);
  d->call.err_code = JRPC_CANCELLED;
  d->call.err_data = 0;
  jrpc__link_drop(&d->at_engine);
  if (how == JRPC__END_SHUTDOWN) {
    deferred_release(e, d); /* everything goes now */
    d->ended = 1;
    jrpc__link_push(&e->ended, &d->at_engine);
  } else {
    d->tomb = 1; /* its modules stay held: the handler still runs */
    jrpc__link_push(&e->tombs, &d->at_engine);
  }
  jrpc_cancel_fn fn = d->on_cancel;
  d->on_cancel = NULL;
  if (fn)
    fn(&d->call.pub, d->cancel_arg);
}

/* Ends d before its handler did: answers it (unless its connection is
 * gone), then makes it a tomb until the handler's jrpc_finish (after a
 * shutdown, until the engine goes). */
static void call_cancel(jrpc__engine_t *e, jrpc__deferred_t *d,
                        jrpc__call_end_t how) {
  call_ended(e, d, how);
  atomic_store_explicit(&d->cancelled, 1, memory_order_release);
  if (how == JRPC__END_GONE) {
    jrpc__link_drop(
        &d->at_sink); /* its connection's list is being taken apart */
    if (e->on_call)   /* nobody to answer: logged as cancelled, nothing sent */
      deferred_logged(e, d, JRPC_REQUEST_CANCELLED, 0);
  } else if (e->dispatching) {
    /* $/cancelRequest in the middle of a frame whose reply is half
     * written (and a batch that may not have taken its replies yet): the
     * answer waits for the frame's end, like a call finished there. */
    cancel_reply(d, how);
    d->finished = 1;
    d->cancel_pending = 1;
    jrpc__link_drop(&d->at_engine);
    jrpc__link_push(&e->done, &d->at_engine);
    return;
  } else {
    cancel_reply(d, how);
    deferred_answer(e, d);
  }
  entomb(e, d, how);
}

void jrpc__sink_detach(jrpc__sink_t *s) {
  /* First take everything off the connection (its batches freed, their
   * calls gathered), then cancel: a cancel callback may finish any other
   * call, which must then find nothing of the connection left. */
  jrpc__link_t gone;
  jrpc__link_init(&gone);
  while (s->waiting.next != &s->waiting) {
    waiter_t *w = CONTAINER(s->waiting.next, waiter_t, at_sink);
    w->sink = NULL;
    jrpc__link_drop(&w->at_sink);
    if (!w->is_batch) {
      jrpc__link_push(&gone, &w->at_sink);
      continue;
    }
    jrpc__batch_t *b = (jrpc__batch_t *)w;
    while (b->calls.next != &b->calls) {
      jrpc__link_t *l = b->calls.next;
      CONTAINER(l, jrpc__deferred_t, at_sink)->batch = NULL;
      jrpc__link_drop(l);
      jrpc__link_push(&gone, l);
    }
    batch_free(b);
  }
  s->calls = 0;
  while (gone.next != &gone) {
    jrpc__deferred_t *d = CONTAINER(gone.next, jrpc__deferred_t, at_sink);
    jrpc__engine_t *e = d->call.e;
    if (d->finished) { /* answered at its frame's end, to nobody */
      jrpc__link_drop(&d->at_sink);
      continue;
    }
    call_cancel(e, d, JRPC__END_GONE);
  }
}

/* The unfinished, answerable call d has this id. */
static int id_is(const jrpc__deferred_t *d, const char *id, size_t n) {
  return !d->finished && !d->call.notify && d->id_n == n &&
         memcmp(d->id, id, n) == 0;
}

/* Finds the first unfinished call with this id among the sink's waiters. */
static jrpc__deferred_t *find_id(jrpc__sink_t *s, const char *id, size_t n) {
  for (jrpc__link_t *l = s->waiting.next; l != &s->waiting; l = l->next) {
    waiter_t *w = CONTAINER(l, waiter_t, at_sink);
    if (!w->is_batch) {
      jrpc__deferred_t *d = (jrpc__deferred_t *)w;
      if (id_is(d, id, n))
        return d;
      continue;
    }
    jrpc__batch_t *b = (jrpc__batch_t *)w;
    for (jrpc__link_t *k = b->calls.next; k != &b->calls; k = k->next) {
      jrpc__deferred_t *d = CONTAINER(k, jrpc__deferred_t, at_sink);
      if (id_is(d, id, n))
        return d;
    }
  }
  return NULL;
}

void jrpc__async_cancel_request(jrpc__engine_t *e, jrpc_val_t params) {
  const char *id;
  size_t n;
  jrpc__sink_t *s = e->sink;
  if (!s || jrpc__view_type(params) != JRPC_T_OBJECT ||
      jrpc__view_raw(jrpc__view_get(params, "id", 2), &id, &n) != 0)
    return;
  /* Every call with that id (one, with a client that keeps ids unique);
   * the walk starts over after each, since a callback may end others. */
  jrpc__deferred_t *d;
  while ((d = find_id(s, id, n)) != NULL)
    call_cancel(e, d, JRPC__END_CANCELLED);
}

void jrpc__async_expire(jrpc__engine_t *e) {
  if (!e->host || !e->host->now || !e->host->arm)
    return;
  e->armed = 0;
  uint64_t now = e->host->now(e->host_arg);
  while (e->timed.next != &e->timed) {
    jrpc__deferred_t *d =
        CONTAINER(e->timed.next, jrpc__deferred_t, at_deadline);
    if (d->due > now) {
      e->armed = d->due;
      e->host->arm(e->host_arg, d->due);
      return;
    }
    call_cancel(e, d, JRPC__END_TIMED_OUT);
  }
}

int jrpc__on_cancel(jrpc_call_t *c, jrpc_cancel_fn fn, void *arg) {
  jrpc__deferred_t *d = deferred_of(c);
  if (!d)
    return JRPC_EINVAL;
  if (d->tomb || d->ended)
    return JRPC_ECANCELED;
  d->on_cancel = fn;
  d->cancel_arg = arg;
  return 0;
}

int jrpc__cancelled(jrpc_call_t *c) {
  jrpc__deferred_t *d = deferred_of(c);
  return d ? atomic_load_explicit(&d->cancelled, memory_order_acquire) : 0;
}

jrpc__sink_t *jrpc__deferred_sink(jrpc_call_t *c) {
  jrpc__deferred_t *d = deferred_of(c);
  if (!d || d->tomb || d->ended || d->finished || d->call.notify)
    return NULL;
  return d->batch ? d->batch->sink : d->sink;
}

void jrpc__post_node_done(jrpc__post_node_t *node) {
  jrpc__deferred_t *d = CONTAINER(node, jrpc__deferred_t, post);
  atomic_flag_clear(&d->posted);
}

void jrpc__async_frame_end(jrpc__engine_t *e) {
  e->dispatching = 0;
  while (e->done.next != &e->done) {
    jrpc__deferred_t *d = CONTAINER(e->done.next, jrpc__deferred_t, at_engine);
    if (!d->cancel_pending) {
      deferred_done(e, d);
      continue;
    }
    deferred_answer(e, d);        /* the -32800 written at the cancel */
    if (d->cancel_pending == 2) { /* its handler has finished it since */
      deferred_release(e, d);
      deferred_free(d);
    } else {
      d->cancel_pending = 0;
      entomb(e, d, JRPC__END_CANCELLED);
    }
  }
}

int jrpc__post(jrpc_call_t *c, jrpc_post_fn fn, void *arg) {
  jrpc__deferred_t *d = deferred_of(c);
  if (!d || !fn)
    return JRPC_EINVAL;
  jrpc__engine_t *e = d->call.e;
  if (!e->host || !e->host->post)
    return JRPC_ENOSYS;
  jrpc__post_node_t *node = NULL;
  if (!atomic_flag_test_and_set(&d->posted)) {
    node = &d->post;
    node->embedded = 1;
  }
  int rc = e->host->post(e->host_arg, c, node, d->reg, fn, arg);
  if (rc && node)
    atomic_flag_clear(&d->posted);
  return rc;
}

int jrpc__queue_work(jrpc_call_t *c, jrpc_work_fn work, jrpc_post_fn done,
                     void *arg) {
  jrpc__deferred_t *d = deferred_of(c);
  if (!d || !work || !done)
    return JRPC_EINVAL;
  jrpc__engine_t *e = d->call.e;
  if (!e->host || !e->host->queue_work)
    return JRPC_ENOSYS;
  if (d->ended)
    return JRPC_ECANCELED;
  return e->host->queue_work(e->host_arg, c, d->reg, work, done, arg);
}

jrpc__batch_t *jrpc__batch_new(jrpc__engine_t *e, jrpc__sink_t *sink) {
  jrpc__batch_t *b = calloc(1, sizeof(*b));
  if (!b)
    return NULL;
  b->e = e;
  b->sink = sink;
  b->is_batch = 1;
  jrpc__link_init(&b->calls);
  jrpc__out_init(&b->out, &e->pool);
  jrpc__link_init(&b->at_sink);
  if (sink)
    jrpc__link_push(&sink->waiting, &b->at_sink);
  jrpc__link_push(&e->batches, &b->at_engine);
  return b;
}

void jrpc__batch_attach(jrpc__batch_t *b, jrpc_call_t *c) {
  jrpc__deferred_t *d = deferred_of(c);
  if (!d)
    return;
  if (!b) {
    /* No memory for the batch: this call's reply is lost, so say so in
     * its place rather than leave the client waiting for an array. */
    jrpc__call_set_error(&d->call, JRPC_INTERNAL_ERROR, "out of memory", 0);
    return;
  }
  /* The batch answers for it now, not the connection directly; the
   * connection's count of calls it waits for stays as it is. */
  jrpc__link_drop(&d->at_sink);
  if (d->sink && !b->sink)
    d->sink->calls--;
  d->sink = NULL;
  d->batch = b;
  jrpc__link_push(&b->calls, &d->at_sink);
  b->waiting++;
}

int jrpc__batch_take(jrpc__batch_t *b, jrpc__outbuf_t *o, jrpc__outmark_t m) {
  if (!b)
    return JRPC_ENOMEM;
  /* Bytes after m: the segment chain from m.seg on. */
  int rc = 0;
  /* A mark taken on an empty chain has no segment: start at the head. */
  for (jrpc__seg_t *s = m.seg ? m.seg : o->head; s; s = s->next) {
    const char *from = s == m.seg ? m.p : s->data + s->off;
    const char *to = s == o->tail ? o->p : s->data + s->len;
    if (to > from)
      rc |= jrpc__out_put(&b->out, from, (size_t)(to - from));
    if (s == o->tail)
      break;
  }
  if (rc || o->oom)
    b->oom = 1;
  b->taken = 1;
  if (b->waiting == 0)
    batch_close(b);
  return rc ? JRPC_ENOMEM : 0;
}

uint32_t jrpc__async_live(const jrpc__engine_t *e) {
  return e->n_live;
}

void jrpc__async_cancel_all(jrpc__engine_t *e) {
  while (e->live.next != &e->live)
    call_cancel(e, CONTAINER(e->live.next, jrpc__deferred_t, at_engine),
                JRPC__END_SHUTDOWN);
}

void jrpc__async_free_all(jrpc__engine_t *e) {
  if (!e->live.next)
    return; /* engine never initialised */
  jrpc__async_frame_end(e);
  jrpc__async_cancel_all(e);
  for (int k = 0; k < 2; k++) {
    jrpc__link_t *head = k ? &e->tombs : &e->ended;
    while (head->next != head) {
      jrpc__deferred_t *d = CONTAINER(head->next, jrpc__deferred_t, at_engine);
      deferred_release(e, d); /* a tomb still holds its modules */
      deferred_free(d);
    }
  }
  while (e->batches.next != &e->batches)
    batch_free(CONTAINER(e->batches.next, jrpc__batch_t, at_engine));
}
