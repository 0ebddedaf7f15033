/* async_fx.c - the fixture of the deferred-call tests; see async_fx.h. */
#include "async_fx.h"

/* ---- the fake host ---- */

static int host_post(void *arg, jrpc_call_t *d, jrpc__post_node_t *node,
                     const jrpc__registry_t *reg, jrpc_post_fn fn,
                     void *fnarg) {
  fake_host_t *h = arg;
  if (reg != h->reg)
    h->hold_bad++;
  job_t *j = calloc(1, sizeof(*j));
  if (!j)
    return JRPC_ENOMEM;
  j->d = d;
  j->node = node;
  j->fn = fn;
  j->arg = fnarg;
  pthread_mutex_lock(&h->mu);
  if (h->tail)
    h->tail->next = j;
  else
    h->head = j;
  h->tail = j;
  h->posts++;
  pthread_mutex_unlock(&h->mu);
  return 0;
}

/* The "thread pool" runs the work at once; the completion is queued like
 * a post, so that it runs on the loop (the test's drain). */
static int host_queue_work(void *arg, jrpc_call_t *d,
                           const jrpc__registry_t *reg, jrpc_work_fn work,
                           jrpc_post_fn done, void *fnarg) {
  fake_host_t *h = arg;
  work(fnarg);
  pthread_mutex_lock(&h->mu);
  h->works++;
  h->posts--; /* counted as a work, not a post */
  pthread_mutex_unlock(&h->mu);
  return host_post(arg, d, NULL, reg, done, fnarg);
}

static void host_output(void *arg, jrpc__sink_t *sink) {
  fake_host_t *h = arg;
  /* The tests take every reply as it comes, so bytes pending here are
   * what this call brought. */
  if (jrpc__out_pending(sink->out) > 0)
    h->outputs++;
  else
    h->wakes++;
  h->last_sink = sink;
}

static void host_hold(void *arg, const jrpc__registry_t *reg, int delta) {
  fake_host_t *h = arg;
  if (reg != h->reg)
    h->hold_bad++;
  else if (delta == 1)
    h->hold_plus++;
  else if (delta == -1)
    h->hold_minus++;
  else
    h->hold_bad++;
}

static uint64_t host_now(void *arg) {
  fake_host_t *h = arg;
  return h->now;
}

static void host_arm(void *arg, uint64_t due) {
  fake_host_t *h = arg;
  h->armed = due;
  h->arms++;
}

void tick(fx_t *f, uint64_t ms) {
  f->h.now += ms;
  if (f->h.armed && f->h.armed <= f->h.now) {
    f->h.armed = 0;
    jrpc__async_expire(&f->e);
  }
}

/* Runs what was posted, in order, on this thread. Returns how many. */
int drain(fx_t *f) {
  int n = 0;
  for (;;) {
    pthread_mutex_lock(&f->h.mu);
    job_t *j = f->h.head;
    if (j) {
      f->h.head = j->next;
      if (!f->h.head)
        f->h.tail = NULL;
    }
    pthread_mutex_unlock(&f->h.mu);
    if (!j)
      return n;
    if (j->node)
      jrpc__post_node_done(j->node);
    j->fn(j->d, j->arg);
    free(j);
    n++;
  }
}

/* ---- handlers ---- */

/* Defers and stashes the handle, with a copy of params (raw JSON) in the
 * deferred call's own memory. */
int h_later(jrpc_call_t *c, jrpc_val_t params, void *udata) {
  fx_t *f = udata;
  jrpc_call_t *d = jrpc_defer(c);
  if (!d)
    return jrpc_error(c, JRPC_INTERNAL_ERROR, "cannot defer");
  const char *s = "null";
  size_t n = 4;
  if (jrpc_raw(c, params, &s, &n) != 0) {
    s = "null";
    n = 4;
  }
  char *copy = jrpc_alloc(d, n + 1);
  if (!copy || f->nst == MAX_STASH)
    return jrpc_error(c, JRPC_INTERNAL_ERROR, "cannot stash");
  memcpy(copy, s, n);
  copy[n] = '\0';
  f->st[f->nst].d = d;
  f->st[f->nst].params = copy;
  f->st[f->nst].params_n = n;
  f->nst++;
  return JRPC_ASYNC;
}

/* Defers, writes params back as the result and finishes, all inside the
 * handler. */
static int h_now(jrpc_call_t *c, jrpc_val_t params, void *udata) {
  fx_t *f = udata;
  jrpc_call_t *d = jrpc_defer(c);
  if (!d)
    return jrpc_error(c, JRPC_INTERNAL_ERROR, "cannot defer");
  const char *s;
  size_t n;
  if (jrpc_raw(c, params, &s, &n) == 0)
    jrpc_w_raw(d, s, n);
  f->now_rc = jrpc_finish(d);
  return JRPC_ASYNC;
}

static int h_no_defer_async(jrpc_call_t *c, jrpc_val_t params, void *udata) {
  return JRPC_ASYNC;
}

/* Synchronous: [a, b] -> a + b. */
static int h_add(jrpc_call_t *c, jrpc_val_t params, void *udata) {
  int64_t a, b;
  if (jrpc_as_i64(c, jrpc_at(c, params, 0), &a) ||
      jrpc_as_i64(c, jrpc_at(c, params, 1), &b))
    return jrpc_error(c, JRPC_INVALID_PARAMS, "Invalid params");
  return jrpc_w_i64(c, a + b);
}

/* Synchronous: clobbers the frame's scratch memory, answers true. */
static int h_fill(jrpc_call_t *c, jrpc_val_t params, void *udata) {
  char *p = jrpc_alloc(c, 8192);
  if (!p)
    return jrpc_error(c, JRPC_INTERNAL_ERROR, "out of memory");
  memset(p, 'Z', 8192);
  return jrpc_w_bool(c, 1);
}

/* Synchronous: finishes every stashed call (params as result) from inside
 * this handler, and answers how many. */
static int h_kick(jrpc_call_t *c, jrpc_val_t params, void *udata) {
  fx_t *f = udata;
  int64_t k = 0;
  for (size_t i = 0; i < f->nst; i++) {
    stashed_t *st = &f->st[i];
    if (!st->d)
      continue;
    jrpc_w_raw(st->d, st->params, st->params_n);
    if (jrpc_finish(st->d) != 0)
      return jrpc_error(c, JRPC_INTERNAL_ERROR, "finish failed");
    st->d = NULL;
    k++;
  }
  return jrpc_w_i64(c, k);
}

/* Synchronous: the deferred-only calls on a call that is not deferred. */
void never_run(jrpc_call_t *c, void *arg) {
  fail_msg("a post on a synchronous call ran");
}
void never_work(void *arg) {
  fail_msg("work on a synchronous call ran");
}
static int h_probe(jrpc_call_t *c, jrpc_val_t params, void *udata) {
  int post = jrpc_post(c, never_run, NULL);
  int work = jrpc_queue_work(c, never_work, never_run, NULL);
  int fin = jrpc_finish(c);
  jrpc_w_arr(c);
  jrpc_w_i64(c, post);
  jrpc_w_i64(c, work);
  jrpc_w_i64(c, fin);
  return jrpc_w_arr_end(c);
}

/* Runs on the loop after the handler returned: scratch memory of the
 * deferred call, then the answer. */
static void post_cb(jrpc_call_t *d, void *arg) {
  fx_t *f = arg;
  char *a = jrpc_alloc(d, 16);
  char *b = jrpc_alloc(d, 3000); /* more than the first arena block */
  if (!a || !b || a == b) {
    jrpc_error(d, JRPC_INTERNAL_ERROR, "alloc failed");
  } else {
    memset(b, 'b', 3000);
    snprintf(a, 16, "posted %d", f->post_rc);
    jrpc_w_arr(d);
    jrpc_w_str(d, a, strlen(a));
    jrpc_w_u64(d, (uint64_t)(strspn(b, "b") >= 3000 ? 3000 : 0));
    jrpc_w_arr_end(d);
  }
  f->cb_rc[0] = jrpc_finish(d);
}

/* Defers and posts its own completion. */
static int h_post_self(jrpc_call_t *c, jrpc_val_t params, void *udata) {
  fx_t *f = udata;
  jrpc_call_t *d = jrpc_defer(c);
  if (!d)
    return jrpc_error(c, JRPC_INTERNAL_ERROR, "cannot defer");
  f->post_rc = jrpc_post(d, post_cb, f);
  if (f->post_rc != 0) {
    jrpc_error(d, JRPC_INTERNAL_ERROR, "post failed");
    jrpc_finish(d);
  }
  return JRPC_ASYNC;
}

static void work_fn(void *arg) {
  fx_t *f = arg;
  f->work_ran++;
}
static void work_done(jrpc_call_t *d, void *arg) {
  fx_t *f = arg;
  jrpc_w_i64(d, f->work_ran);
  f->cb_rc[1] = jrpc_finish(d);
}

/* Defers and answers from the thread pool's completion. */
static int h_work_self(jrpc_call_t *c, jrpc_val_t params, void *udata) {
  fx_t *f = udata;
  jrpc_call_t *d = jrpc_defer(c);
  if (!d)
    return jrpc_error(c, JRPC_INTERNAL_ERROR, "cannot defer");
  f->work_rc = jrpc_queue_work(d, work_fn, work_done, f);
  if (f->work_rc != 0) {
    jrpc_error(d, JRPC_INTERNAL_ERROR, "queue_work failed");
    jrpc_finish(d);
  }
  return JRPC_ASYNC;
}

/* ---- setup ---- */

void add(fx_t *f, const char *name, jrpc_handler_fn fn) {
  assert_int_equal(jrpc__registry_add(&f->reg, name, fn, f, NULL, NULL), 0);
}

int setup(void **state) {
  fx_t *f = calloc(1, sizeof(*f));
  assert_non_null(f);
  f->out = malloc(OUT_CAP);
  assert_non_null(f->out);
  pthread_mutex_init(&f->h.mu, NULL);
  f->h.reg = &f->reg;
  assert_int_equal(jrpc__registry_init(&f->reg), 0);
  add(f, "later", h_later);
  add(f, "later_err", h_later);
  add(f, "now", h_now);
  add(f, "no_defer_async", h_no_defer_async);
  add(f, "add", h_add);
  add(f, "fill", h_fill);
  add(f, "kick", h_kick);
  add(f, "probe", h_probe);
  add(f, "post_self", h_post_self);
  add(f, "work_self", h_work_self);
  *state = f;
  return 0;
}

int teardown(void **state) {
  fx_t *f = *state;
  if (f->s_live)
    jrpc__stream_free(&f->s);
  if (f->e_live)
    jrpc__engine_free(&f->e);
  for (job_t *j = f->h.head, *next; j; j = next) {
    next = j->next;
    free(j);
  }
  pthread_mutex_destroy(&f->h.mu);
  jrpc__registry_free(&f->reg);
  free(f->out);
  free(f);
  return 0;
}

/* Starts the engine (host: HOST_NONE, HOST_FULL, or HOST_NO_LOOP, a host
 * without post and queue_work) and one stream with `framing`. */
void start(fx_t *f, const jrpc__limits_t *lim, int host,
           jrpc__framing_t framing) {
  assert_int_equal(jrpc__engine_init(&f->e, &f->reg, lim, tu_parser_new()), 0);
  f->e_live = 1;
  f->ops.post = host_post;
  f->ops.queue_work = host_queue_work;
  f->ops.output = host_output;
  f->ops.hold = host_hold;
  f->ops.now = host_now;
  f->ops.arm = host_arm;
  f->h.now = 1000; /* a loop's clock does not start at 0 */
  if (host == HOST_NO_LOOP)
    f->ops.post = NULL, f->ops.queue_work = NULL, f->ops.now = NULL,
    f->ops.arm = NULL;
  if (host != HOST_NONE) {
    f->e.host = &f->ops;
    f->e.host_arg = &f->h;
  }
  jrpc__stream_init(&f->s, &f->e, framing);
  f->s_live = 1;
}

void stream_gone(fx_t *f) {
  assert_true(f->s_live);
  jrpc__stream_free(&f->s);
  f->s_live = 0;
}

/* Ends the test: nothing left posted or unfinished, stream and engine
 * freed (ASan checks that nothing leaks), hold balanced. */
void finish_test(fx_t *f) {
  assert_null(f->h.head);
  if (f->e_live)
    assert_int_equal(jrpc__async_live(&f->e), 0);
  if (f->s_live)
    stream_gone(f);
  if (f->e_live) {
    jrpc__engine_free(&f->e);
    f->e_live = 0;
  }
  assert_int_equal(f->h.hold_bad, 0);
  assert_int_equal(f->h.hold_plus, f->h.hold_minus);
}

/* ---- input ---- */

/* Hands in[0..n) to the stream as reads; 0 bytes: just feed again. */
int feed_raw(jrpc__stream_t *s, const char *in, size_t n, int eof) {
  if (n == 0)
    return jrpc__stream_feed(s, 0, eof);
  size_t off = 0;
  int rc = 0;
  while (off < n && rc == 0) {
    size_t room;
    char *dst = jrpc__stream_rbuf(s, &room);
    assert_non_null(dst);
    size_t k = n - off < room ? n - off : room;
    memcpy(dst, in + off, k);
    off += k;
    rc = jrpc__stream_feed(s, k, off == n ? eof : 0);
  }
  return rc;
}

/* Frames the NULL-terminated list of payloads and feeds them in one read
 * (as one feed call when they fit). */
void send_to(jrpc__stream_t *s, const char *const *payloads) {
  size_t cap = 1 << 16, n = 0;
  char *in = malloc(cap);
  assert_non_null(in);
  for (size_t i = 0; payloads[i]; i++)
    n +=
        tu_frame(s->fr.kind, payloads[i], strlen(payloads[i]), in + n, cap - n);
  assert_int_equal(feed_raw(s, in, n, 0), 0);
  free(in);
}

/* ---- output ---- */

/* The checks below report the caller's line. */

/* Takes everything s produced so far; returns the frame count (asserting
 * that the bytes are well framed). */
int take_from_(fx_t *f, jrpc__stream_t *s, AT) {
  uint64_t pending = jrpc__out_pending(&s->out);
  assert_true(pending < OUT_CAP);
  f->out_n = jrpc__out_copy(&s->out, f->out, OUT_CAP);
  assert_int_equal(f->out_n, pending);
  jrpc__out_consume(&s->out, f->out_n);
  int k = tu_unframe(s->fr.kind, f->out, f->out_n, f->fp, f->fn, MAX_FRAMES);
  if (k < 0) {
    print_error("badly framed output: %.*s\n", (int)f->out_n, f->out);
    _fail(file, line);
  }
  return k;
}

void expect_none_from(fx_t *f, jrpc__stream_t *s, AT) {
  int k = take_from_(f, s, file, line);
  if (f->out_n != 0) {
    print_error("expected no output, got %d frame(s): %.*s\n", k, (int)f->out_n,
                f->out);
    _fail(file, line);
  }
}

/* The output is exactly these frames, byte for byte (framing included). */
void expect_exact_from(fx_t *f, jrpc__stream_t *s, const char *const *want,
                       AT) {
  take_from_(f, s, file, line);
  char *exp = malloc(OUT_CAP);
  assert_non_null(exp);
  size_t n = 0;
  for (size_t i = 0; want[i]; i++)
    n += tu_frame(s->fr.kind, want[i], strlen(want[i]), exp + n, OUT_CAP - n);
  int same = n == f->out_n && memcmp(exp, f->out, n) == 0;
  if (!same)
    print_error("output differs\n  got:      %.*s\n  expected: %.*s\n",
                (int)f->out_n, f->out, (int)n, exp);
  free(exp);
  if (!same)
    _fail(file, line);
}

/* The output is one frame per expected text, each equal as JSON (a batch
 * array in any order). */
void expect_json_from(fx_t *f, jrpc__stream_t *s, const char *const *want, AT) {
  int k = take_from_(f, s, file, line);
  int n = 0;
  while (want[n])
    n++;
  if (k != n) {
    print_error("expected %d frame(s), got %d: %.*s\n", n, k, (int)f->out_n,
                f->out);
    _fail(file, line);
  }
  for (int i = 0; i < n; i++)
    tu_assert_json_(f->fp[i], f->fn[i], want[i], file, line);
}

/* ---- finishing stashed calls ---- */

/* Writes stashed call i's params back as its result and finishes it. */
void finish_echo(fx_t *f, size_t i) {
  assert_true(i < f->nst);
  stashed_t *st = &f->st[i];
  assert_non_null(st->d);
  assert_int_equal(jrpc_w_raw(st->d, st->params, st->params_n), 0);
  assert_int_equal(jrpc_finish(st->d), 0);
  st->d = NULL;
}
