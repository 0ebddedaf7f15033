/* dispatch.c - one frame in, its framed reply out; see dispatch.h. */
#include "dispatch.h"

#include <stdio.h>
#include <string.h>

#include "common.h"
#include "request.h"
#include "validate.h"
#include "writer.h"

#define ARENA_FIRST (64 * 1024)
#define ARENA_RETAIN (16 * 1024 * 1024)
#define POOL_RETAIN (64 * 1024 * 1024)
#define CANCEL_REQUEST "$/cancelRequest"

static void log_stderr(void *arg, int level, const char *msg) {
  static const char *const names[] = {"error", "warn", "info", "debug"};
  fprintf(stderr, "jrpcd: [%s] %s\n",
          level >= 0 && level <= 3 ? names[level] : "?", msg);
}

int jrpc__engine_init(jrpc__engine_t *e, const jrpc__registry_t *reg,
                      const jrpc__limits_t *lim, jrpc__parser_t *parser) {
  static const jrpc__limits_t defaults = JRPC__LIMITS_DEFAULT;
  memset(e, 0, sizeof(*e));
  if (!parser)
    return JRPC_EINVAL;
  jrpc__bufpool_init(&e->pool, POOL_RETAIN);
  jrpc__arena_init(&e->arena, ARENA_FIRST, ARENA_RETAIN);
  e->parser = parser;
  e->reg = reg;
  e->gen_reg = reg;
  e->lim = lim ? *lim : defaults;
  e->call.pub.api = &jrpc__api;
  e->call.e = e;
  e->call.arena = &e->arena;
  e->live.prev = e->live.next = &e->live;
  e->ended.prev = e->ended.next = &e->ended;
  e->batches.prev = e->batches.next = &e->batches;
  e->done.prev = e->done.next = &e->done;
  e->timed.prev = e->timed.next = &e->timed;
  e->tombs.prev = e->tombs.next = &e->tombs;
  e->no_peer.uid = e->no_peer.gid = e->no_peer.pid = -1;
  e->log = log_stderr;
  return 0;
}

void jrpc__engine_free(jrpc__engine_t *e) {
  jrpc__async_free_all(e);
  jrpc__parser_destroy(e->parser);
  e->parser = NULL;
  jrpc__arena_free(&e->arena);
  jrpc__bufpool_free(&e->pool);
}

/* An error response is being written for call (NULL: not a method's). */
static void count_error(jrpc__engine_t *e, const jrpc__call_t *call) {
  JRPC__STAT_INC(e->stats.errors);
  jrpc__mstat_t *ms = call ? jrpc__call_mstat(call) : NULL;
  if (ms) {
    JRPC__STAT_INC(ms->errors);
    if (!call->is_deferred)
      ms->pend_err++; /* its outcome, for a slow-call line */
  }
}

/* The hook for n calls of ns, of which `failed` were errors. */
static void report_slow(jrpc__engine_t *e, const char *method, uint64_t ns,
                        const jrpc_peer_t *peer, uint32_t n, uint32_t failed) {
  jrpc__slow_call_t s = {method, ns, peer, JRPC__OUT_OK, n - failed};
  if (s.calls)
    e->slow(e->slow_arg, &s);
  s.outcome = JRPC__OUT_ERROR;
  s.calls = failed;
  if (s.calls)
    e->slow(e->slow_arg, &s);
}

void jrpc__lat_report_slow(jrpc__engine_t *e, uint64_t ns,
                           const jrpc_peer_t *peer) {
  for (uint32_t i = 0; i < e->ntouched; i++) {
    const jrpc__mstat_t *ms = e->touched[i];
    if (ms->pend)
      report_slow(e, e->gen_reg->slots[ms - e->mstats].name, ns,
                  peer ? peer : &e->no_peer, ms->pend, ms->pend_err);
  }
}

void jrpc__stats_call_end(jrpc__call_t *call, jrpc__outcome_t outcome,
                          uint64_t ns) {
  jrpc__mstat_t *ms = jrpc__call_mstat(call);
  if (!ms)
    return;
  jrpc__lat_add(ms, ns, 1);
  if (outcome == JRPC__OUT_TIMED_OUT)
    JRPC__STAT_INC(ms->timeouts);
  else if (outcome == JRPC__OUT_CANCELLED)
    JRPC__STAT_INC(ms->cancelled);
  jrpc__engine_t *e = call->e;
  if (e->slow && e->slow_ns && ns >= e->slow_ns) {
    jrpc__slow_call_t s = {call->method ? call->method->name : "?", ns,
                           call->peer, outcome, 1};
    e->slow(e->slow_arg, &s);
  }
}

/* A method's row gets a synchronous call: listed once per read. */
JRPC__INLINE void lat_touch(jrpc__engine_t *e, jrpc__mstat_t *ms,
                            const jrpc_peer_t *peer) {
  if (JRPC__UNLIKELY(e->ntouched == JRPC__TOUCHED_MAX))
    jrpc__lat_flush(e, jrpc__clock_ns(), peer);
  e->touched[e->ntouched++] = ms;
}

/* {"limit":L,"got":G} as error data. */
static int limit_error(jrpc__outbuf_t *o, int code, uint64_t limit,
                       uint64_t got, const char *id, size_t id_n) {
  char data[64];
  int n = snprintf(data, sizeof(data), "{\"limit\":%llu,\"got\":%llu}",
                   (unsigned long long)limit, (unsigned long long)got);
  return jrpc__reply_error(o, code, NULL, data, (size_t)n, id, id_n);
}

int jrpc__call_set_error(jrpc__call_t *call, int code, const char *msg,
                         int data) {
  jrpc__outbuf_t *o = call->w.out;
  jrpc__out_truncate(o, call->mark);
  /* Code 0 is no JSON-RPC error: it stands for "failed, no code given". */
  call->err_code = code ? code : JRPC_HANDLER_FAILED;
  int rc = jrpc__reply_error_open(o, call->err_code, msg);
  call->err_mark = jrpc__out_mark(o);
  call->err_data = (uint8_t)data;
  call->too_large = 0;
  jrpc__writer_init(&call->w, o);
  if (data)
    rc |= jrpc__out_put(o, ",\"data\":", 8);
  return rc ? JRPC_ENOMEM : 0;
}

/* The handler has returned: complete the response object. */
int jrpc__call_complete(jrpc__call_t *call, int rc, const char *id,
                        size_t id_n) {
  jrpc__outbuf_t *o = call->w.out;
  jrpc__engine_t *e = call->e;
  int empty = 0;
  if (JRPC__UNLIKELY(call->busy)) {
    count_error(e, call);
    call->busy = 0;
    jrpc__out_truncate(o, call->mark);
    limit_error(o, JRPC_BUSY, call->busy_limit, call->busy_limit, id, id_n);
    return JRPC_BUSY;
  }
  if (call->too_large) {
    count_error(e, call);
    uint64_t got = jrpc__out_pos(o) - call->mark.pos;
    jrpc__out_truncate(o, call->mark);
    limit_error(o, JRPC_RESPONSE_TOO_LARGE, e->lim.max_response_bytes, got, id,
                id_n);
    return JRPC_RESPONSE_TOO_LARGE;
  }
  if (call->err_code) {
    count_error(e, call);
    if (call->err_data && (jrpc__writer_finish(&call->w, &empty) != 0 || empty))
      jrpc__out_truncate(o, call->err_mark); /* no usable data: drop it */
    jrpc__reply_error_close(o);
    jrpc__reply_close(o, id, id_n);
    return call->err_code;
  }
  if (rc < 0 || rc == JRPC_ASYNC) {
    count_error(e, call);
    char data[64];
    int n = rc == JRPC_ASYNC
                ? snprintf(data, sizeof(data),
                           "\"returned JRPC_ASYNC without jrpc_defer\"")
                : snprintf(data, sizeof(data), "{\"status\":%d}", rc);
    jrpc__out_truncate(o, call->mark);
    jrpc__reply_error(o, JRPC_HANDLER_FAILED, NULL, data, (size_t)n, id, id_n);
    return JRPC_HANDLER_FAILED;
  }
  if (jrpc__writer_finish(&call->w, &empty) != 0) {
    count_error(e, call);
    const char *why = call->w.why ? call->w.why : "invalid result";
    jrpc__out_truncate(o, call->mark);
    jrpc__reply_error_open(o, JRPC_HANDLER_FAILED, NULL);
    jrpc__out_put(o, ",\"data\":", 8);
    jrpc__json_str(o, why, strlen(why));
    jrpc__reply_error_close(o);
    jrpc__reply_close(o, id, id_n);
    return JRPC_HANDLER_FAILED;
  }
  if (empty)
    jrpc__out_put(o, "null", 4);
  jrpc__reply_close(o, id, id_n);
  return 0;
}

/* One request object: check it, run its handler, write its response (none
 * for a notification). Its method is looked up in e->reg, the caller's
 * view, and what runs is that slot's fn alone (a plan's full check calls
 * the same): a view's decision holds on every path. In a batch, `last`
 * holds the method the previous element found in the same view (the
 * batch's own, on this stack: a dispatch nested in a handler cannot
 * change it), so a run of calls to one method skips the lookup; NULL for
 * a single request. `done`, for the access log, gets the call's method and
 * outcome; it is NULL (a constant: its code compiles away) when the log is
 * off. */
JRPC__INLINE int handle_one(jrpc__engine_t *e, jrpc__outbuf_t *o,
                            const jrpc__envelope_t *env,
                            const jrpc_peer_t *peer,
                            const jrpc__method_t **last,
                            jrpc__call_done_t *done) {
  jrpc__request_t req;
  JRPC__STAT_INC(e->stats.calls);
  int rc = jrpc__request_check_fast(env, &e->arena, &req);
  if (JRPC__UNLIKELY(rc))
    return rc;
  if (done) {
    done->method = req.method;
    done->method_n = req.method_n;
    done->notify = req.kind == JRPC__REQ_NOTIFY;
  }
  if (JRPC__UNLIKELY(req.kind == JRPC__REQ_INVALID)) {
    if (done)
      done->code = JRPC_INVALID_REQUEST;
    count_error(e, NULL);
    return jrpc__reply_error(o, JRPC_INVALID_REQUEST, NULL, NULL, 0, req.id,
                             req.id_n);
  }
  const jrpc__method_t *m = last ? *last : NULL;
  if (!m || m->len != req.method_n ||
      !jrpc__same_name(m->name, req.method, req.method_n)) {
    m = e->reg ? jrpc__registry_find(e->reg, req.method, req.method_n) : NULL;
    if (last)
      *last = m;
  }
  if (JRPC__UNLIKELY(!m)) {
    if (req.kind == JRPC__REQ_NOTIFY) {
      /* LSP's cancellation, for every connection whatever its methods
       * (it reaches only the caller's own calls): no cost to a call
       * that finds its method. */
      if (req.method_n == sizeof(CANCEL_REQUEST) - 1 &&
          memcmp(req.method, CANCEL_REQUEST, req.method_n) == 0)
        jrpc__async_cancel_request(e, req.params);
      else if (done)
        done->code = JRPC_METHOD_NOT_FOUND;
      return 0;
    }
    if (done)
      done->code = JRPC_METHOD_NOT_FOUND;
    count_error(e, NULL);
    return jrpc__reply_error(o, JRPC_METHOD_NOT_FOUND, NULL, NULL, 0, req.id,
                             req.id_n);
  }

  jrpc__call_t *call = &e->call;
  call->method = m; /* one store: the counters' row follows from it */
  jrpc__mstat_t *ms = e->mstats ? &e->mstats[m->slot] : NULL;
  if (ms) {
    JRPC__STAT_INC(ms->calls);
    if (!ms->pend++) /* its latency comes with the read's end */
      lat_touch(e, ms, peer);
  }
  jrpc__arena_mark_t am = jrpc__arena_mark(&e->arena);
  call->peer = peer ? peer : &e->no_peer;
  call->err_code = 0;
  call->err_data = 0;
  call->too_large = 0;
  call->mark = jrpc__out_mark(o);
  call->id = req.id;
  call->id_n = req.id_n;
  call->notify = req.kind == JRPC__REQ_NOTIFY;
  call->deferred = NULL;
  call->busy = 0;
  if (!call->notify) /* its result is dropped: no envelope to write */
    jrpc__reply_result_open(o);
  jrpc__writer_init(&call->w, o);

  /* A method with a plan (validate_params) has its params checked first:
   * the fast path, then the full check and any refusal only when that
   * cannot say yes. Both are calls, not inlined, so that this function's
   * registers stay as they were for a method without a plan, which pays
   * one test of a field beside fn. */
  if (JRPC__UNLIKELY(m->vplan != NULL) &&
      !jrpc__vplan_fast(m->vplan, req.params))
    rc = jrpc__validated_method(&call->pub, req.params, m);
  else
    rc = m->fn(&call->pub, req.params, m->udata);

  if (JRPC__LIKELY((unsigned)rc < (unsigned)JRPC_ASYNC && !call->deferred &&
                   !call->notify && !call->err_code &&
                   !(call->busy | call->too_large | call->w.bad) &&
                   call->w.done)) {
    /* The common ending: one complete result value, nothing else to say
     * (jrpc__call_complete's checks, all passed). */
    jrpc__reply_close(o, req.id, req.id_n);
  } else if (call->deferred) {
    /* The reply comes from jrpc_finish; a batch waits for it. */
    jrpc__out_truncate(o, call->mark);
    if (last && !call->notify) {
      if (!e->batch)
        e->batch = jrpc__batch_new(e, e->sink);
      jrpc__batch_attach(e->batch, call->deferred);
    }
    call->deferred = NULL;
    if (done)
      done->deferred = 1;
  } else if (call->notify) {
    jrpc__out_truncate(o, call->mark); /* ran it; never answer it */
    if (done)
      done->code = call->err_code               ? call->err_code
                   : rc < 0 || rc == JRPC_ASYNC ? JRPC_HANDLER_FAILED
                                                : 0;
  } else {
    int code = jrpc__call_complete(call, rc, req.id, req.id_n);
    if (done)
      done->code = code;
  }
  /* Scratch of this call is done with; a batch's next call reuses it. */
  jrpc__arena_rewind(&e->arena, am);
  return 0;
}

/* handle_one for the access log: the call's line once it is answered (a
 * deferred call's comes when it ends, from async.c). */
JRPC__INLINE int handle_logged(jrpc__engine_t *e, jrpc__outbuf_t *o,
                               const jrpc__envelope_t *env,
                               const jrpc_peer_t *peer,
                               const jrpc__method_t **last) {
  jrpc__call_done_t d = {0};
  d.peer = peer ? peer : &e->no_peer;
  d.origin = e->sink ? e->sink->origin : NULL;
  uint64_t pos = jrpc__out_pos(o);
  /* A call starts with its read, or when the read's call before it was
   * answered: one clock read per call. */
  d.start_ns = e->t_read > e->log_last_ns ? e->t_read : e->log_last_ns;
  int rc = handle_one(e, o, env, peer, last, &d);
  if (rc || d.deferred)
    return rc;
  d.end_ns = e->log_last_ns = jrpc__clock_ns();
  d.reply_bytes = jrpc__out_pos(o) - pos;
  e->on_call(e->on_call_arg, &d);
  return 0;
}

/* A frame answered with one error and no call (not JSON, an empty batch,
 * a batch over max_batch) still gets its line, without a method. */
static JRPC__NOINLINE void frame_logged(jrpc__engine_t *e,
                                        const jrpc_peer_t *peer, int code,
                                        uint64_t bytes) {
  jrpc__call_done_t d = {0};
  d.peer = peer ? peer : &e->no_peer;
  d.origin = e->sink ? e->sink->origin : NULL;
  d.start_ns = e->t_read;
  d.end_ns = jrpc__clock_ns();
  d.reply_bytes = bytes;
  d.code = code;
  e->on_call(e->on_call_arg, &d);
}

/* One error for the whole frame, and its line when logged. */
JRPC__INLINE int frame_error(jrpc__engine_t *e, jrpc__outbuf_t *o,
                             const jrpc_peer_t *peer, int logged, int code,
                             uint64_t limit, uint64_t got) {
  uint64_t pos = jrpc__out_pos(o);
  count_error(e, NULL);
  int rc = limit ? limit_error(o, code, limit, got, NULL, 0)
                 : jrpc__reply_error(o, code, NULL, NULL, 0, NULL, 0);
  if (logged)
    frame_logged(e, peer, code, jrpc__out_pos(o) - pos);
  return rc;
}

/* `logged` is a constant in each of the two uses (jrpc__dispatch_frame):
 * without the access log, no call pays for it. */
JRPC__INLINE int dispatch_parsed(jrpc__engine_t *e, jrpc__outbuf_t *o,
                                 const jrpc__parsed_t *ps,
                                 const jrpc_peer_t *peer, int logged) {
  switch (ps->status) {
  case JRPC__PARSE_INVALID:
    return frame_error(e, o, peer, logged, JRPC_PARSE_ERROR, 0, 0);
  case JRPC__PARSE_BATCH_TOO_LARGE:
    return frame_error(e, o, peer, logged, JRPC_BATCH_TOO_LARGE,
                       e->lim.max_batch, ps->count);
  default:
    break;
  }
  if (!ps->is_batch)
    return logged ? handle_logged(e, o, &ps->env[0], peer, NULL)
                  : handle_one(e, o, &ps->env[0], peer, NULL, NULL);
  if (ps->count == 0) /* "[]": one error, not an empty array */
    return frame_error(e, o, peer, logged, JRPC_INVALID_REQUEST, 0, 0);
  /* The array opens with the first response; a batch of notifications
   * yields no output at all. */
  int opened = 0;
  e->in_batch = 1; /* for the bound on its deferred calls (async.c) */
  e->batch_defers = 0;
  const jrpc__method_t *last = NULL;
  for (uint32_t k = 0; k < ps->count; k++) {
    jrpc__outmark_t before = jrpc__out_mark(o);
    jrpc__out_byte(o, opened ? ',' : '[');
    uint64_t start = jrpc__out_pos(o);
    int rc = logged ? handle_logged(e, o, &ps->env[k], peer, &last)
                    : handle_one(e, o, &ps->env[k], peer, &last, NULL);
    if (rc)
      return rc;
    if (jrpc__out_pos(o) == start)
      jrpc__out_truncate(o, before);
    else
      opened = 1;
  }
  /* A batch with deferred calls is closed when the last one ends. */
  if (opened && !e->batch)
    jrpc__out_byte(o, ']');
  return 0;
}

static JRPC__NOINLINE int dispatch_logged(jrpc__engine_t *e, jrpc__outbuf_t *o,
                                          const jrpc__parsed_t *ps,
                                          const jrpc_peer_t *peer) {
  return dispatch_parsed(e, o, ps, peer, 1);
}

/* Closes the reply frame; when any part of it could not be written, the
 * whole frame goes, so that no partial reply ever reaches the client. */
JRPC__INLINE int frame_finish(jrpc__framing_t framing, jrpc__outbuf_t *o,
                              jrpc__frame_enc_t *enc) {
  if (o->oom || jrpc__frame_end(framing, o, enc) != 0 || o->oom) {
    jrpc__out_truncate(o, enc->start);
    o->oom = 0;
    return JRPC_ENOMEM;
  }
  return 0;
}

int jrpc__dispatch_frame(jrpc__engine_t *e, jrpc__sink_t *sink, const char *p,
                         size_t n, const jrpc_peer_t *peer) {
  jrpc__framing_t framing = sink->framing;
  jrpc__outbuf_t *o = sink->out;
  jrpc__frame_enc_t enc;
  int rc = jrpc__frame_begin(framing, o, &enc);
  if (rc)
    return rc;
  jrpc__outmark_t body = jrpc__out_mark(o);
  e->sink = sink;
  e->batch = NULL;
  e->dispatching = 1;
  jrpc__parsed_t ps;
  rc = e->parser->ops->parse(e->parser, p, n, &e->arena, e->lim.max_batch, &ps);
  if (!rc)
    rc = JRPC__UNLIKELY(e->on_call != NULL)
             ? dispatch_logged(e, o, &ps, peer)
             : dispatch_parsed(e, o, &ps, peer, 0);
  if (e->batch) {
    /* Some calls of this batch answer later: its replies so far wait with
     * the batch, which frames the whole array when its last call ends. */
    jrpc__batch_take(e->batch, o, body);
    jrpc__out_truncate(o, enc.start);
    e->batch = NULL;
    e->sink = NULL;
    e->in_batch = 0;
    jrpc__async_frame_end(e);
    return rc == JRPC_ENOMEM ? 0 : rc;
  }
  if (rc == JRPC_ENOMEM && !o->oom) {
    /* Scratch memory ran out, not the output: say so to the client. */
    jrpc__out_truncate(o, enc.start);
    jrpc__frame_begin(framing, o, &enc);
    static const char oom[] = "\"out of memory\"";
    count_error(e, NULL);
    jrpc__reply_error(o, JRPC_INTERNAL_ERROR, NULL, oom, sizeof(oom) - 1, NULL,
                      0);
    rc = 0;
  }
  if (JRPC__UNLIKELY(jrpc__out_pos(o) - enc.start.pos > UINT32_MAX) &&
      !o->oom) {
    /* A length prefix cannot say more than 4 GiB; nobody wants that
     * much on one line either. The batch's replies are dropped for one
     * error. */
    uint64_t got = jrpc__out_pos(o) - enc.start.pos;
    jrpc__out_truncate(o, enc.start);
    jrpc__frame_begin(framing, o, &enc);
    count_error(e, NULL);
    limit_error(o, JRPC_RESPONSE_TOO_LARGE, UINT32_MAX, got, NULL, 0);
  }
  rc = frame_finish(framing, o, &enc);
  if (JRPC__UNLIKELY(e->done.next != &e->done))
    jrpc__async_frame_end(e);
  e->dispatching = 0;
  e->in_batch = 0;
  e->sink = NULL;
  return rc;
}

int jrpc__dispatch_too_large(jrpc__engine_t *e, jrpc__framing_t framing,
                             jrpc__outbuf_t *o, uint64_t got) {
  jrpc__frame_enc_t enc;
  int rc = jrpc__frame_begin(framing, o, &enc);
  if (rc)
    return rc;
  count_error(e, NULL);
  limit_error(o, JRPC_FRAME_TOO_LARGE, e->lim.max_frame_bytes, got, NULL, 0);
  return frame_finish(framing, o, &enc);
}

int jrpc__dispatch_frame_timeout(jrpc__engine_t *e, jrpc__framing_t framing,
                                 jrpc__outbuf_t *o, uint32_t timeout_ms,
                                 uint64_t got) {
  jrpc__frame_enc_t enc;
  int rc = jrpc__frame_begin(framing, o, &enc);
  if (rc)
    return rc;
  count_error(e, NULL);
  char data[64];
  int n = snprintf(data, sizeof(data), "{\"timeout_ms\":%u,\"got\":%llu}",
                   timeout_ms, (unsigned long long)got);
  jrpc__reply_error(o, JRPC_FRAME_TIMEOUT, NULL, data, (size_t)n, NULL, 0);
  return frame_finish(framing, o, &enc);
}
