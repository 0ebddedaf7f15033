/* worker.c - a worker thread's loop: the idle sweep, the
 * cross-thread wake-ups (stop, reload, posted calls), the host side of
 * deferred calls, and the graceful stop. */
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "accept.h"
#include "admit.h"
#include "cluster.h"
#include "log.h"
#include "rpcstats.h"
#include "server.h"

#define TICK_STOPPING_MS 10

typedef struct work_req {
  uv_work_t req;
  jrpcd_worker_t *w;
  jrpc_call_t *call;
  const jrpc__registry_t *reg; /* held until done has returned */
  jrpc_work_fn work;
  jrpc_post_fn done;
  void *arg;
} work_req_t;

static void host_hold(void *arg, const jrpc__registry_t *reg, int delta);

/* What other threads hand a worker (posted calls, adopted connections)
 * is linked under its lock: 0 with the lock held, or -1 (not held) once
 * the worker takes no more posts, or, with or_stopping, is stopping. */
static int lock_if_open(jrpcd_worker_t *w, int or_stopping) {
  pthread_mutex_lock(&w->mu);
  if (w->posts_closed || (or_stopping && w->stop_req)) {
    pthread_mutex_unlock(&w->mu);
    return -1;
  }
  return 0;
}

/* Wakes the worker's loop and lets the lock go. uv_async_send under the
 * lock: once posts_closed is set, wake may be closed, and no send may race
 * with that. */
static void wake_and_unlock(jrpcd_worker_t *w) {
  uv_async_send(&w->wake);
  pthread_mutex_unlock(&w->mu);
}

/* ---- the host side of deferred calls (async.h) ---- */

static int host_post(void *arg, jrpc_call_t *d, jrpc__post_node_t *node,
                     const jrpc__registry_t *reg, jrpc_post_fn fn,
                     void *fnarg) {
  jrpcd_worker_t *w = arg;
  if (!node) {
    node = malloc(sizeof(*node));
    if (!node)
      return JRPC_ENOMEM;
    node->embedded = 0;
  }
  node->next = NULL;
  node->call = d;
  node->fn = fn;
  node->arg = fnarg;
  node->reg = reg;
  if (lock_if_open(w, 0) != 0) {
    if (!node->embedded)
      free(node);
    return JRPC_ECANCELED;
  }
  /* fn is plugin code: its generation stays loaded until fn returns. */
  if (reg)
    jrpcd_gen_worker_hold(jrpcd_gen_of(reg), w->index);
  if (w->posts_tail)
    w->posts_tail->next = node;
  else
    w->posts = node;
  w->posts_tail = node;
  wake_and_unlock(w);
  return 0;
}

static void work_run(uv_work_t *req) {
  work_req_t *wr = req->data;
  wr->work(wr->arg);
}

static void work_done(uv_work_t *req, int status) {
  work_req_t *wr = req->data;
  jrpcd_worker_t *w = wr->w;
  w->nwork--;
  wr->done(wr->call, wr->arg);
  if (wr->reg)
    host_hold(w, wr->reg, -1);
  free(wr);
}

static int host_queue_work(void *arg, jrpc_call_t *d,
                           const jrpc__registry_t *reg, jrpc_work_fn work,
                           jrpc_post_fn done, void *fnarg) {
  jrpcd_worker_t *w = arg;
  if (w->stopped)
    return JRPC_ECANCELED;
  work_req_t *wr = malloc(sizeof(*wr));
  if (!wr)
    return JRPC_ENOMEM;
  *wr = (work_req_t){.w = w,
                     .call = d,
                     .reg = reg,
                     .work = work,
                     .done = done,
                     .arg = fnarg,
                     .req.data = wr};
  int rc = uv_queue_work(&w->loop, &wr->req, work_run, work_done);
  if (rc) {
    free(wr);
    return rc == UV_ENOMEM ? JRPC_ENOMEM : JRPC_EINVAL;
  }
  /* work and done are plugin code: keep it loaded until done returns,
   * even if the call itself is ended by a shutdown meanwhile. */
  if (reg)
    jrpcd_gen_worker_hold(jrpcd_gen_of(reg), w->index);
  w->nwork++;
  return 0;
}

static void host_output(void *arg, jrpc__sink_t *sink) {
  jrpcd_conn_flush(jrpcd_conn_of_sink(sink));
}

static void drop_gens(jrpcd_worker_t *w) {
  for (size_t i = 0; i < w->ndrops; i++)
    jrpcd_gen_worker_release(w->drops[i], w->index);
  w->ndrops = 0;
}

static void on_after(uv_check_t *h) {
  jrpcd_worker_t *w = h->data;
  drop_gens(w);
  uv_check_stop(h);
}

/* A deferred call lets go of its plugins when it finishes, but it finishes
 * from inside that plugin's code (a posted callback, a work's done): if
 * this were the last hold, fini and dlclose would pull the code out from
 * under the running callback. The release waits for the end of the loop
 * turn instead. */
static void host_hold(void *arg, const jrpc__registry_t *reg, int delta) {
  jrpcd_worker_t *w = arg;
  jrpcd_gen_t *g = jrpcd_gen_of(reg);
  if (delta > 0) {
    jrpcd_gen_worker_hold(g, w->index);
    return;
  }
  if (w->ndrops == w->capdrops) {
    size_t cap = w->capdrops ? 2 * w->capdrops : 16;
    jrpcd_gen_t **v = realloc(w->drops, cap * sizeof(*v));
    if (!v) {
      /* Without memory, keep the generation loaded for good rather than
       * risk unloading it under a caller. */
      jrpcd_error("worker %u: out of memory; plugin generation %u stays "
                  "loaded",
                  w->index, g->serial);
      return;
    }
    w->drops = v;
    w->capdrops = cap;
  }
  w->drops[w->ndrops++] = g;
  if (!w->stopped)
    uv_check_start(&w->after, on_after);
}

static uint64_t host_now(void *arg) {
  jrpcd_worker_t *w = arg;
  return uv_now(&w->loop);
}

static void on_call_timer(uv_timer_t *t) {
  jrpcd_worker_t *w = t->data;
  jrpc__async_expire(&w->engine);
}

/* One timer per worker, for the earliest deadline of its deferred calls
 * (async.c keeps them in order): nothing per call. */
static void host_arm(void *arg, uint64_t due) {
  jrpcd_worker_t *w = arg;
  if (w->stopped)
    return;
  uint64_t now = uv_now(&w->loop);
  uv_timer_start(&w->call_timer, on_call_timer, due > now ? due - now : 0, 0);
}

static const jrpc__host_t host_ops = {
    .post = host_post,
    .queue_work = host_queue_work,
    .output = host_output,
    .hold = host_hold,
    .now = host_now,
    .arm = host_arm,
    .queued = jrpcd_hub_queued,
    .overflow = jrpcd_hub_overflow,
    .random = jrpcd_hub_random,
};

/* ---- stopping ---- */

static void on_handle_closed(uv_handle_t *h) {}

/* The loop's own handles, which keep uv_run going until closed. */
static void close_own_handles(jrpcd_worker_t *w) {
  uv_close((uv_handle_t *)&w->wake, on_handle_closed);
  uv_close((uv_handle_t *)&w->tick, on_handle_closed);
  uv_close((uv_handle_t *)&w->deadline, on_handle_closed);
  uv_close((uv_handle_t *)&w->after, on_handle_closed);
  uv_close((uv_handle_t *)&w->accept_retry, on_handle_closed);
  uv_close((uv_handle_t *)&w->call_timer, on_handle_closed);
}

/* Everything answered and sent (or the deadline passed): close the
 * loop's own handles so that uv_run returns. */
static void close_loop(jrpcd_worker_t *w) {
  w->stopped = 1;
  pthread_mutex_lock(&w->mu);
  w->posts_closed = 1;
  jrpcd_handoff_t *hand = w->handoffs;
  w->handoffs = NULL;
  pthread_mutex_unlock(&w->mu);
  while (hand) { /* handed over while this worker was stopping */
    jrpcd_handoff_t *next = hand->next;
    close(hand->fd);
    atomic_fetch_sub(&w->srv->nconns, 1);
    free(hand);
    hand = next;
  }
  jrpcd_hub_worker_close(w); /* no publish wakes it from now on */
  close_own_handles(w);
}

static void check_stopped(jrpcd_worker_t *w) {
  if (!w->stopping || w->stopped || w->nconns > 0 ||
      jrpc__async_live(&w->engine) > 0 || w->nwork > 0)
    return;
  close_loop(w);
}

static void run_posts(jrpcd_worker_t *w) {
  pthread_mutex_lock(&w->mu);
  jrpc__post_node_t *p = w->posts;
  w->posts = w->posts_tail = NULL;
  pthread_mutex_unlock(&w->mu);
  while (p) {
    /* Copy out first: fn may finish the call, and an embedded node goes
     * with it. */
    jrpc__post_node_t n = *p;
    if (p->embedded)
      jrpc__post_node_done(p);
    else
      free(p);
    n.fn(n.call, n.arg);
    if (n.reg)
      host_hold(w, n.reg, -1);
    p = n.next;
  }
}

static void on_deadline(uv_timer_t *t) {
  jrpcd_worker_t *w = t->data;
  w->deadline_passed = 1; /* held frames stay unread from now on */
  /* Time is up: nothing more may be posted; what was posted runs; calls
   * still out get -32007; what can be sent without waiting is sent. */
  pthread_mutex_lock(&w->mu);
  w->posts_closed = 1;
  pthread_mutex_unlock(&w->mu);
  run_posts(w);
  uint32_t live = jrpc__async_live(&w->engine);
  if (live)
    jrpcd_warn("worker %u: shutdown_timeout_ms passed with %u calls "
               "unfinished: answering them with -32007",
               w->index, live);
  jrpc__async_cancel_all(&w->engine);
  while (w->conns.next != &w->conns) {
    jrpcd_conn_t *c = w->conns.next;
    jrpcd_conn_flush(c);
    if (!c->closed)
      jrpcd_conn_close(c, "shutdown deadline");
  }
  /* Anything the last flushes started ends too. */
  jrpc__async_cancel_all(&w->engine);
  if (w->nwork && !w->stopped) {
    /* Handler code still runs on libuv's thread pool, and nothing can
     * stop it. The deadline holds: this loop ends now, and the process
     * exits without unloading plugins or freeing what those tasks use. */
    jrpcd_warn("worker %u: %u thread-pool tasks of handlers still running "
               "at the deadline: not waiting for them",
               w->index, w->nwork);
    w->abandoned = 1;
    close_loop(w);
    uv_stop(&w->loop);
    return;
  }
  check_stopped(w);
}

static void on_tick(uv_timer_t *t);

static uint64_t sweep_every(uint64_t idle_ms, uint64_t frame_ms,
                            uint64_t ping_ms) {
  uint64_t every = 0;
  for (int i = 0; i < 3; i++) {
    uint64_t ms = i == 2 ? ping_ms : i ? frame_ms : idle_ms;
    uint64_t e = ms ? (ms / 4 < 1000 ? ms / 4 + 1 : 1000) : 0;
    if (e && (!every || e < every))
      every = e;
  }
  return every;
}

/* Finishes the connections that have subscriptions (subscribers 1) or
 * those that have none (0). */
static void finish_conns(jrpcd_worker_t *w, int subscribers) {
  for (jrpcd_conn_t *c = w->conns.next; c != &w->conns;) {
    jrpcd_conn_t *next = c->next;
    if ((c->st.sink.push && c->st.sink.push->nsubs) == subscribers)
      jrpcd_conn_finish(c);
    /* Replies c completes may close another connection, next among them
     * (its memory stays until the loop's close phase): then start over;
     * finishing twice is harmless. */
    c = next->closed ? w->conns.next : next;
  }
}

static void begin_stop(jrpcd_worker_t *w) {
  if (w->stopping)
    return;
  w->stopping = 1;
  jrpcd_accept_stop(w);
  /* A finished connection with nothing left to send closes at once: so
   * the publishes of what the others sent before the stop, and what the
   * inbox holds, are put into subscribers' output first, to be written
   * before they close. */
  finish_conns(w, 0);
  jrpcd_hub_worker_drain_all(w);
  finish_conns(w, 1);
  uint64_t ms = w->srv->conf.shutdown_timeout_ms;
  /* Leave the main thread a little of the allowance for its cleanup. */
  uv_timer_start(&w->deadline, on_deadline, ms > 100 ? ms - ms / 10 : ms, 0);
  uv_timer_stop(&w->tick);
  uv_timer_start(&w->tick, on_tick, TICK_STOPPING_MS, TICK_STOPPING_MS);
  check_stopped(w);
}

/* ---- loop callbacks ---- */

static void on_tick(uv_timer_t *t) {
  jrpcd_worker_t *w = t->data;
  if (w->stopping) {
    check_stopped(w);
    return;
  }
  uint64_t idle = w->srv->conf.idle_timeout_ms;
  uint64_t frame = w->srv->conf.frame_timeout_ms;
  uint64_t now = uv_now(&w->loop);
  for (jrpcd_conn_t *c = w->conns.next, *next; c != &w->conns; c = next) {
    next = c->next;
    jrpcd_conn_sweep(c, now, idle, frame);
  }
}

int jrpcd_worker_adopt(jrpcd_worker_t *w, int fd, const jrpcd_listener_t *l) {
  jrpcd_handoff_t *h = malloc(sizeof(*h));
  if (!h)
    return -1;
  h->fd = fd;
  h->l = l;
  if (lock_if_open(w, 1) != 0) {
    free(h);
    return -1;
  }
  h->next = w->handoffs;
  w->handoffs = h;
  wake_and_unlock(w);
  return 0;
}

static void on_wake(uv_async_t *a) {
  jrpcd_worker_t *w = a->data;
  pthread_mutex_lock(&w->mu);
  jrpcd_gen_t *gen = w->next_gen;
  w->next_gen = NULL;
  jrpcd_handoff_t *hand = w->handoffs;
  w->handoffs = NULL;
  int stop = w->stop_req;
  pthread_mutex_unlock(&w->mu);
  if (gen) {
    /* New requests use the new generation; calls deferred under the old
     * one hold it until they finish. */
    jrpcd_gen_t *old = w->gen;
    w->gen = gen;
    w->engine.gen_reg = &gen->reg;
    /* Each connection's view of the methods, under the new config. */
    for (jrpcd_conn_t *c = w->conns.next, *next; c != &w->conns; c = next) {
      next = c->next;
      jrpcd_conn_regen(c);
      /* Its subscriptions whose method it may no longer call end. */
      if (!c->closed && c->st.sink.push)
        jrpc__push_review(&w->push, &c->st.sink, c->reg);
    }
    /* A reload may have added, replaced or removed [cluster]. */
    jrpcd_cluster_worker_sync(&w->push, &w->inbox.cluster_epoch);
    w->engine.mstats = jrpcd_stats_row(gen, w->index);
    jrpcd_gen_worker_release(old, w->index);
  }
  while (hand) {
    jrpcd_handoff_t *next = hand->next;
    jrpcd_conn_adopted(w, hand->fd, hand->l);
    free(hand);
    hand = next;
  }
  run_posts(w);
  jrpcd_hub_worker_drain(w);
  if (stop)
    begin_stop(w);
  check_stopped(w);
}

/* Lets go of every generation this worker still holds. */
static void drop_all_gens(jrpcd_worker_t *w) {
  pthread_mutex_lock(&w->mu);
  jrpcd_gen_t *stale = w->next_gen;
  w->next_gen = NULL;
  pthread_mutex_unlock(&w->mu);
  if (stale)
    jrpcd_gen_worker_release(stale, w->index);
  drop_gens(w);
  if (w->gen)
    jrpcd_gen_worker_release(w->gen, w->index);
  w->gen = NULL;
}

static void thread_main(void *arg) {
  jrpcd_worker_t *w = arg;
  uv_run(&w->loop, UV_RUN_DEFAULT);
  /* Its connections are closed and its calls answered: no code of any
   * plugin runs on this loop again, so the per-worker slots it used are
   * finalised here, on their own thread (see on_deadline for the one case
   * where they are not). */
  if (!w->abandoned)
    drop_all_gens(w);
}

/* ---- set-up ---- */

/* Undoes a start that failed before the thread ran. */
static void start_failed(jrpcd_worker_t *w) {
  jrpcd_accept_stop(w);
  close_own_handles(w);
  uv_run(&w->loop, UV_RUN_NOWAIT);
  uv_loop_close(&w->loop);
  jrpcd_gen_worker_release(w->gen, w->index);
  w->gen = NULL;
}

int jrpcd_worker_start(jrpcd_worker_t *w, jrpcd_server_t *srv, unsigned index,
                       char *err, size_t errlen) {
  memset(w, 0, sizeof(*w));
  w->srv = srv;
  w->index = index;
  w->conns.prev = w->conns.next = &w->conns;
  pthread_mutex_init(&w->mu, NULL);
  jrpc__parser_t *parser =
      strcmp(srv->conf.parser, "auto") != 0 ? jrpc__parser_new(srv->conf.parser)
      : srv->conf.parser_auto_threshold == JRPCD_AUTO_MEASURED
          ? jrpc__parser_auto_new(JRPC__AUTO_MEASURED)
          : jrpc__parser_auto_new(srv->conf.parser_auto_threshold);
  if (!parser) {
    snprintf(err, errlen,
             "%s: [server] parser: \"%s\" is not available in this build",
             srv->conf.file, srv->conf.parser);
    return -1;
  }
  jrpc__limits_t lim = {srv->conf.max_frame_bytes, srv->conf.max_batch,
                        srv->conf.max_response_bytes};
  jrpc__engine_init(&w->engine, NULL, &lim, parser);
  w->engine.worker = index;
  w->engine_ready = 1;
  jrpcd_slowcalls_init(&w->slow);
  w->engine.slow = jrpcd_slowcalls_note;
  w->engine.slow_arg = &w->slow;
  w->engine.slow_ns = (uint64_t)srv->conf.slow_call_ms * 1000000u;
  /* slow_ns is only ever set together with the hook (dispatch.h). */
  if (srv->alog_on) { /* off: no hook, and no call pays for the log */
    w->engine.on_call = jrpcd_accesslog_note;
    w->engine.on_call_arg = jrpcd_accesslog_worker(&srv->alog, index);
  }
  if (uv_loop_init(&w->loop) != 0) {
    snprintf(err, errlen, "worker %u: cannot create an event loop", index);
    return -1;
  }
  w->loop.data = w;
  jrpcd_gen_worker_hold(srv->gen, index);
  w->gen = srv->gen;
  /* Methods are looked up only in a connection's own view (its c->reg,
   * which conn.c's feed sets for its frames): outside one, nothing is
   * found, so no path can reach a handler past [access] or `methods`. */
  w->engine.reg = NULL;
  w->engine.gen_reg = &w->gen->reg;
  w->engine.mstats = jrpcd_stats_row(w->gen, index);
  w->engine.log = jrpcd_log_from_engine;
  w->engine.host = &host_ops;
  w->engine.host_arg = w;
  w->engine.live_total = &srv->live_calls;
  w->engine.max_live_total = srv->conf.max_pending_calls_total;
  if (jrpcd_hub_worker_init(w, err, errlen) != 0)
    return -1;
  uv_async_init(&w->loop, &w->wake, on_wake);
  w->wake.data = w;
  uv_timer_init(&w->loop, &w->tick);
  w->tick.data = w;
  uv_timer_init(&w->loop, &w->deadline);
  w->deadline.data = w;
  uv_check_init(&w->loop, &w->after);
  w->after.data = w;
  uv_timer_init(&w->loop, &w->accept_retry);
  w->accept_retry.data = w;
  uv_timer_init(&w->loop, &w->call_timer);
  w->call_timer.data = w;
  /* The sweep runs often enough to close a connection within a quarter
   * of its timeout (a second at most) after it passed. */
  uint64_t every =
      sweep_every(srv->conf.idle_timeout_ms, srv->conf.frame_timeout_ms,
                  srv->conf.ws_ping_ms);
  if (every)
    uv_timer_start(&w->tick, on_tick, every, every);
  if (jrpcd_accept_start(w, err, errlen) != 0) {
    start_failed(w);
    return -1;
  }
  if (uv_thread_create(&w->thread, thread_main, w) != 0) {
    snprintf(err, errlen, "worker %u: cannot start a thread", index);
    start_failed(w);
    return -1;
  }
  return 0;
}

void jrpcd_worker_stop(jrpcd_worker_t *w) {
  pthread_mutex_lock(&w->mu);
  w->stop_req = 1;
  if (!w->posts_closed)
    uv_async_send(&w->wake);
  pthread_mutex_unlock(&w->mu);
}

void jrpcd_worker_use(jrpcd_worker_t *w, jrpcd_gen_t *gen) {
  jrpcd_gen_worker_hold(gen, w->index);
  pthread_mutex_lock(&w->mu);
  jrpcd_gen_t *stale = w->next_gen; /* two reloads before one wake-up */
  w->next_gen = gen;
  if (!w->posts_closed)
    uv_async_send(&w->wake);
  pthread_mutex_unlock(&w->mu);
  if (stale)
    jrpcd_gen_worker_release(stale, w->index);
}

void jrpcd_worker_join(jrpcd_worker_t *w) {
  uv_thread_join(&w->thread);
  if (w->abandoned)
    return; /* see on_deadline: its loop and plugins stay as they are */
  /* Handles the loop still has (none after a clean stop) close here. */
  uv_run(&w->loop, UV_RUN_NOWAIT);
  if (uv_loop_close(&w->loop) != 0)
    jrpcd_warn("worker %u: event loop still busy at exit", w->index);
  drop_all_gens(w); /* what came after the thread let go (nothing, mostly) */
}

void jrpcd_worker_free(jrpcd_worker_t *w) {
  if (!w->engine_ready)
    return; /* its start failed before anything was made */
  /* Calls the engine ends now (never finished) let go of their plugins
   * here; the server releases its own hold first, so nothing of a plugin
   * runs any more. */
  jrpcd_hub_worker_free(w);
  jrpc__engine_free(&w->engine);
  drop_gens(w);
  free(w->drops);
  w->drops = NULL;
  free(w->servers);
  w->servers = NULL;
  jrpcd_slowcalls_free(&w->slow);
  pthread_mutex_destroy(&w->mu);
}
