/* async.c - deferred calls and the batches that wait for them; see
 * async.h. This is the slow path: a deferred call has its own heap
 * object, output chain and arena, so that nothing of the frame it came
 * from (reset after every read) has to live on. */
#include "async.h"

#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

#include "common.h"
#include "dispatch.h"
#include "request.h"

#define DEFERRED_ARENA_FIRST 1024
#define CONTAINER(p, type, member)                                             \
  ((type *)((char *)(p)-offsetof(type, member)))

typedef struct jrpc__batch {
  jrpc__link_t at_sink;   /* in sink->waiting */
  jrpc__link_t at_engine; /* in e->batches */
  jrpc__sink_t *sink;     /* NULL once the connection is gone */
  jrpc__engine_t *e;
  jrpc__outbuf_t out; /* '[' and the replies so far, when any */
  uint32_t waiting;   /* deferred calls not finished */
  uint8_t taken;      /* the synchronous part has been moved in */
  uint8_t oom;        /* a reply could not be kept: answer with -32603 */
} jrpc__batch_t;

typedef struct jrpc__deferred {
  jrpc__link_t at_sink;
  jrpc__link_t at_engine; /* in e->live, or e->ended */
  jrpc__sink_t *sink;
  jrpc__batch_t *batch;
  const jrpc__registry_t *reg; /* held while the call is unfinished */
  jrpc__call_t call;
  jrpc__outbuf_t out;
  jrpc__arena_t arena;
  jrpc_peer_t peer;
  jrpc__post_node_t post; /* for jrpc_post; in use while `posted` */
  atomic_flag posted;
  uint8_t ended;    /* answered by shutdown; finish does nothing */
  uint8_t finished; /* jrpc_finish ran during dispatch; answer pending */
  size_t id_n;
  char id[];
} jrpc__deferred_t;

static void link_init(jrpc__link_t *l) {
  l->prev = l->next = l;
}
static void link_push(jrpc__link_t *head, jrpc__link_t *l) {
  l->prev = head->prev;
  l->next = head;
  head->prev->next = l;
  head->prev = l;
}
static void link_drop(jrpc__link_t *l) {
  l->prev->next = l->next;
  l->next->prev = l->prev;
  link_init(l);
}

void jrpc__sink_init(jrpc__sink_t *s, jrpc__outbuf_t *out,
                     jrpc__framing_t framing) {
  s->out = out;
  s->framing = framing;
  s->calls = 0;
  s->max_calls = 0;
  link_init(&s->waiting);
}

/* Both kinds of waiter start with their at_sink link and sink pointer
 * aligned alike, so one walk detaches them. */
typedef struct waiter {
  jrpc__link_t at_sink;
  jrpc__link_t at_engine;
  jrpc__sink_t *sink;
} waiter_t;

void jrpc__sink_detach(jrpc__sink_t *s) {
  while (s->waiting.next != &s->waiting) {
    waiter_t *w = CONTAINER(s->waiting.next, waiter_t, at_sink);
    w->sink = NULL;
    link_drop(&w->at_sink);
  }
  s->calls = 0;
}

/* Appends src's pending bytes to dst. */
static int out_append(jrpc__outbuf_t *dst, jrpc__outbuf_t *src) {
  const char *ptrs[16];
  size_t lens[16];
  int rc = 0;
  for (;;) {
    size_t k = jrpc__out_iov(src, ptrs, lens, 16), total = 0;
    if (k == 0)
      break;
    for (size_t i = 0; i < k; i++) {
      rc |= jrpc__out_put(dst, ptrs[i], lens[i]);
      total += lens[i];
    }
    jrpc__out_consume(src, total);
  }
  return rc ? JRPC_ENOMEM : 0;
}

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
  jrpc__frame_enc_t enc;
  jrpc__outbuf_t *o = sink->out;
  if (jrpc__frame_begin(sink->framing, o, &enc) == 0) {
    out_append(o, src);
    if (o->oom || jrpc__frame_end(sink->framing, o, &enc) != 0 || o->oom) {
      jrpc__out_truncate(o, enc.start);
      o->oom = 0;
    }
  }
  sink_changed(e, sink);
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
  dc->ms = call->ms;
  if (dc->ms) {
    /* Not one of the read's synchronous calls after all: it ends when it
     * finishes, timed from the read that brought it. */
    dc->ms->pend--;
    dc->start_ns = e->t_read;
    dc->method = e->gen_reg->slots[dc->ms - e->mstats].name;
  }
  dc->mark = jrpc__out_mark(&d->out);
  jrpc__reply_result_open(&d->out);
  jrpc__writer_init(&dc->w, &d->out);
  d->reg = e->gen_reg;
  if (e->host->hold && d->reg)
    e->host->hold(e->host_arg, d->reg, +1);
  /* A notification is never answered, but it counts among its
   * connection's calls in flight all the same. */
  d->sink = e->sink;
  link_init(&d->at_sink);
  if (d->sink) {
    link_push(&d->sink->waiting, &d->at_sink);
    d->sink->calls++;
  }
  link_push(&e->live, &d->at_engine);
  e->n_live++;
  e->batch_defers += e->in_batch;
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
  link_drop(&b->at_sink);
  link_drop(&b->at_engine);
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
    link_drop(&b->at_sink); /* as in deferred_answer */
    deliver(b->e, b->sink, &b->out);
  } else if (b->sink) {
    link_drop(&b->at_sink);
    sink_changed(b->e, b->sink);
  }
  batch_free(b);
}

/* A finished call's response joins its batch. */
static void batch_add(jrpc__batch_t *b, jrpc__outbuf_t *reply) {
  if (b->sink)
    b->sink->calls--; /* counted for the batch in jrpc__batch_attach */
  int rc = jrpc__out_byte(&b->out, jrpc__out_pending(&b->out) ? ',' : '[');
  rc |= out_append(&b->out, reply);
  if (rc || b->out.oom)
    b->oom = 1;
  if (--b->waiting == 0 && b->taken)
    batch_close(b); /* tells the host */
  else
    sink_changed(b->e, b->sink); /* one call fewer in flight */
}

/* The call no longer counts as in flight: before its reply goes out, so
 * that a client reacting to the reply finds the room free. */
static void live_done(jrpc__engine_t *e) {
  e->n_live--;
  if (e->live_total)
    atomic_fetch_sub(e->live_total, 1);
}

static void deferred_release(jrpc__engine_t *e, jrpc__deferred_t *d) {
  link_drop(&d->at_sink);
  link_drop(&d->at_engine);
  if (e->host && e->host->hold && d->reg)
    e->host->hold(e->host_arg, d->reg, -1);
  d->reg = NULL;
}

static void deferred_free(jrpc__deferred_t *d) {
  jrpc__out_free(&d->out);
  jrpc__arena_free(&d->arena);
  free(d);
}

/* Writes the response and sends it where it belongs. */
static void deferred_answer(jrpc__engine_t *e, jrpc__deferred_t *d) {
  jrpc__call_complete(&d->call, 0, d->id, d->id_n);
  /* Off the sink's list first: the host may close a connection that has
   * nothing left to wait for as soon as it is told of this output. */
  link_drop(&d->at_sink);
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
  if (d->ended || d->finished)
    return JRPC_ECANCELED; /* shutdown answered it; freed with the engine */
  jrpc__engine_t *e = d->call.e;
  jrpc__call_t *dc = &d->call;
  if (dc->ms)
    jrpc__call_end(dc,
                   dc->err_code || dc->too_large || dc->w.bad ? JRPC__OUT_ERROR
                                                              : JRPC__OUT_OK,
                   jrpc__clock_ns() - dc->start_ns);
  live_done(e);
  if (e->dispatching) {
    /* Finished inside a handler of the frame being answered: that frame's
     * reply is half written, and a batch may still adopt the call. Answer
     * once the frame is complete. */
    d->finished = 1;
    link_drop(&d->at_engine);
    link_push(&e->done, &d->at_engine);
    return 0;
  }
  deferred_done(e, d);
  return 0;
}

void jrpc__post_node_done(jrpc__post_node_t *node) {
  jrpc__deferred_t *d = CONTAINER(node, jrpc__deferred_t, post);
  atomic_flag_clear(&d->posted);
}

void jrpc__async_frame_end(jrpc__engine_t *e) {
  e->dispatching = 0;
  while (e->done.next != &e->done)
    deferred_done(e, CONTAINER(e->done.next, jrpc__deferred_t, at_engine));
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
  jrpc__out_init(&b->out, &e->pool);
  link_init(&b->at_sink);
  if (sink)
    link_push(&sink->waiting, &b->at_sink);
  link_push(&e->batches, &b->at_engine);
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
  link_drop(&d->at_sink);
  if (d->sink && !b->sink)
    d->sink->calls--;
  d->sink = NULL;
  d->batch = b;
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
  while (e->live.next != &e->live) {
    jrpc__deferred_t *d = CONTAINER(e->live.next, jrpc__deferred_t, at_engine);
    live_done(e);
    jrpc__call_set_error(&d->call, JRPC_SHUTTING_DOWN, NULL, 0);
    deferred_answer(e, d);
    deferred_release(e, d);
    d->ended = 1;
    link_push(&e->ended, &d->at_engine);
  }
}

void jrpc__async_free_all(jrpc__engine_t *e) {
  if (!e->live.next)
    return; /* engine never initialised */
  jrpc__async_frame_end(e);
  jrpc__async_cancel_all(e);
  while (e->ended.next != &e->ended) {
    jrpc__deferred_t *d = CONTAINER(e->ended.next, jrpc__deferred_t, at_engine);
    link_drop(&d->at_engine);
    deferred_free(d);
  }
  while (e->batches.next != &e->batches)
    batch_free(CONTAINER(e->batches.next, jrpc__batch_t, at_engine));
}
