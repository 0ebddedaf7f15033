/* sleep.c - sample asynchronous handler module.
 *
 * "sleep.ms" answers N after N milliseconds without holding a worker: the
 * call is deferred and a timer thread owned by the module instance posts it
 * back to its loop when it is due. "sleep.work_ms" answers the same way but
 * sleeps on the host's thread pool (jrpc_queue_work), which costs a pool
 * thread per call; it exists to exercise that path. A cancelled call
 * (timeout, $/cancelRequest, the client gone) ends at once: sleep.ms drops
 * it from the timer's heap in its cancel callback (jrpc_on_cancel), and
 * sleep.work_ms's pool thread sees jrpc_cancelled and stops. Params: [N] or
 * {"ms": N}, N an integer from 0 to max_ms (config key max_ms, default
 * 60000).
 *
 * sleep.work_ms with {"ms": N, "progress": T} sleeps in ten steps and after
 * each sends its caller LSP's progress notification (ABI 1.5,
 * jrpc_notify): {"jsonrpc":"2.0","method":"$/progress","params":{"token":
 * T,"value":{"kind":"report","percentage":P}}}, P from 10 to 100, all
 * before the reply. Each step's end runs on the call's loop, so the
 * notifications and the reply go out in that order.
 *
 * All state lives in the instance (mod_data): during a config reload two
 * instances of this shared object are live at once, each with its own timer
 * thread. */
#ifndef _POSIX_C_SOURCE
#define _POSIX_C_SOURCE 200809L
#endif
#include <jrpc/jrpc.h>

#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define DEFAULT_MAX_MS 60000
/* Keeps deadlines in nanoseconds far from overflow and N small enough to
 * travel as the pointer-sized argument of jrpc_post on any platform. */
#define LIMIT_MAX_MS INT32_MAX
#define NS_PER_S 1000000000u
#define NS_PER_MS 1000000u
/* A cancelled sleep.work_ms gives its pool thread back within this. */
#define WORK_SLICE_MS 10u

typedef struct entry {
  uint64_t due; /* CLOCK_MONOTONIC, in ns */
  uint64_t seq; /* equal deadlines fire in arrival order */
  jrpc_call_t *d;
  int64_t ms;
} entry_t;

typedef struct sleeper {
  int64_t max_ms;
  pthread_mutex_t mu;
  pthread_cond_t cv; /* timed on CLOCK_MONOTONIC: wall clock steps must not
                        shorten or stretch a sleep */
  pthread_t thread;
  int stop;
  /* A binary min-heap on (due, seq). `reserved` slots are promised to
   * handlers that are between jrpc_defer and the push, so that a push never
   * has to allocate after the call was deferred. */
  entry_t *heap;
  size_t count, reserved, cap;
  uint64_t seq;
} sleeper_t;

static uint64_t now_ns(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (uint64_t)ts.tv_sec * NS_PER_S + (uint64_t)ts.tv_nsec;
}

static struct timespec to_timespec(uint64_t ns) {
  struct timespec ts = {(time_t)(ns / NS_PER_S), (long)(ns % NS_PER_S)};
  return ts;
}

/* ---- the deadline heap (callers hold mu) ---- */

static int before(const entry_t *a, const entry_t *b) {
  return a->due != b->due ? a->due < b->due : a->seq < b->seq;
}

static int heap_reserve(sleeper_t *s) {
  if (s->count + s->reserved == s->cap) {
    if (s->cap > SIZE_MAX / 2 / sizeof(entry_t))
      return JRPC_ENOMEM;
    size_t cap = s->cap ? s->cap * 2 : 64;
    entry_t *h = realloc(s->heap, cap * sizeof(*h));
    if (!h)
      return JRPC_ENOMEM;
    s->heap = h;
    s->cap = cap;
  }
  s->reserved++;
  return 0;
}

static void heap_push(sleeper_t *s, entry_t e) {
  size_t i = s->count++;
  while (i > 0) {
    size_t parent = (i - 1) / 2;
    if (!before(&e, &s->heap[parent]))
      break;
    s->heap[i] = s->heap[parent];
    i = parent;
  }
  s->heap[i] = e;
}

/* Takes out entry i: the last one fills its place and moves up or down. */
static entry_t heap_take(sleeper_t *s, size_t i) {
  entry_t top = s->heap[i];
  entry_t last = s->heap[--s->count];
  if (i == s->count)
    return top;
  while (i > 0 && before(&last, &s->heap[(i - 1) / 2])) {
    s->heap[i] = s->heap[(i - 1) / 2];
    i = (i - 1) / 2;
  }
  for (;;) {
    size_t child = 2 * i + 1;
    if (child >= s->count)
      break;
    if (child + 1 < s->count && before(&s->heap[child + 1], &s->heap[child]))
      child++;
    if (!before(&s->heap[child], &last))
      break;
    s->heap[i] = s->heap[child];
    i = child;
  }
  s->heap[i] = last;
  return top;
}

static entry_t heap_pop(sleeper_t *s) {
  return heap_take(s, 0);
}

/* ---- completion, on the call's loop ---- */

static void reply(jrpc_call_t *d, void *arg) {
  jrpc_w_i64(d, (int64_t)(intptr_t)arg);
  jrpc_finish(d);
}

/* The call was cancelled (timed out, cancelled by its client, its
 * connection gone): if its entry still waits, it goes now and the call is
 * finished at once; if the timer thread has taken it already, the reply
 * it posted finishes it. */
static void on_cancel(jrpc_call_t *d, void *arg) {
  sleeper_t *s = arg;
  int found = 0;
  pthread_mutex_lock(&s->mu);
  for (size_t i = 0; i < s->count; i++)
    if (s->heap[i].d == d) {
      heap_take(s, i);
      found = 1;
      break;
    }
  pthread_mutex_unlock(&s->mu);
  if (found)
    jrpc_finish(d);
}

static void *timer_main(void *arg) {
  sleeper_t *s = arg;
  pthread_mutex_lock(&s->mu);
  while (!s->stop) {
    if (s->count == 0) {
      pthread_cond_wait(&s->cv, &s->mu);
      continue;
    }
    uint64_t due = s->heap[0].due;
    if (due > now_ns()) {
      struct timespec ts = to_timespec(due);
      pthread_cond_timedwait(&s->cv, &s->mu, &ts);
      continue;
    }
    entry_t e = heap_pop(s);
    /* Post without the lock: reply() may run on the loop before jrpc_post
     * returns, and handlers on that loop take the lock. A non-zero return
     * means the host has ended the call itself; there is nothing of ours to
     * release since the entry was copied out of the heap. */
    pthread_mutex_unlock(&s->mu);
    (void)jrpc_post(e.d, reply, (void *)(intptr_t)e.ms);
    pthread_mutex_lock(&s->mu);
  }
  pthread_mutex_unlock(&s->mu);
  return NULL;
}

/* ---- handlers ---- */

static int bad_param(jrpc_call_t *c, const char *name, const char *why) {
  jrpc_error_begin(c, JRPC_INVALID_PARAMS, "Invalid params");
  jrpc_w_obj(c);
  jrpc_w_key(c, "param", 5);
  jrpc_w_str(c, name, strlen(name));
  jrpc_w_key(c, "reason", 6);
  jrpc_w_str(c, why, strlen(why));
  jrpc_w_obj_end(c);
  return JRPC_EFAIL;
}

/* N from [N] or {"ms": N}; with `more`, [N, X] too (X is the caller's). */
static int read_ms(jrpc_call_t *c, jrpc_val_t params, int64_t max_ms, int more,
                   int64_t *ms) {
  jrpc_val_t v;
  switch (jrpc_type(c, params)) {
  case JRPC_T_ARRAY:
    if (jrpc_len(c, params) != 1 && (!more || jrpc_len(c, params) != 2))
      return bad_param(c, "params",
                       more ? "expected [ms] or [ms, progress]"
                            : "expected exactly one number");
    v = jrpc_first(c, params);
    break;
  case JRPC_T_OBJECT:
    v = jrpc_get(c, params, "ms");
    break;
  default:
    return bad_param(c, "params", "expected [ms] or {\"ms\": ms}");
  }
  int rc = jrpc_as_i64(c, v, ms);
  if (rc == JRPC_ENOENT)
    return bad_param(c, "ms", "missing");
  if (rc == JRPC_ETYPE)
    return bad_param(c, "ms", "not a number");
  if (rc != 0 || *ms < 0 || *ms > max_ms) {
    char why[64];
    snprintf(why, sizeof(why), "must be an integer from 0 to %lld",
             (long long)max_ms);
    return bad_param(c, "ms", why);
  }
  return 0;
}

static int no_async(jrpc_call_t *c) {
  return jrpc_error(c, JRPC_INTERNAL_ERROR,
                    "asynchronous calls are not available in this host");
}

static int sleep_ms(jrpc_call_t *c, jrpc_val_t params, void *udata) {
  sleeper_t *s = udata;
  int64_t ms;
  if (read_ms(c, params, s->max_ms, 0, &ms))
    return JRPC_EFAIL;
  uint64_t due = now_ns() + (uint64_t)ms * NS_PER_MS;

  /* Room first: once deferred, the call must reach the heap. */
  pthread_mutex_lock(&s->mu);
  int rc = heap_reserve(s);
  pthread_mutex_unlock(&s->mu);
  if (rc)
    return jrpc_error(c, JRPC_INTERNAL_ERROR, "out of memory");

  jrpc_call_t *d = jrpc_defer(c);
  /* Nothing can cancel d before this handler returns (cancellation runs
   * on this loop), so the callback may come before the push. */
  if (d)
    jrpc_on_cancel(d, on_cancel, s);
  pthread_mutex_lock(&s->mu);
  s->reserved--;
  if (d) {
    entry_t e = {due, s->seq++, d, ms};
    heap_push(s, e);
    /* Only a new earliest deadline shortens the timer thread's wait. */
    if (s->heap[0].seq == e.seq)
      pthread_cond_signal(&s->cv);
  }
  pthread_mutex_unlock(&s->mu);
  return d ? JRPC_ASYNC : no_async(c);
}

/* What a pool thread sleeps for: the call, to see whether it was
 * cancelled, and how long. In the call's jrpc_alloc memory, which lives
 * until the call is finished (after the work is done). */
typedef struct work {
  jrpc_call_t *d;
  int64_t ms;
} work_t;

static void work_sleep(void *arg) {
  work_t *w = arg;
  /* An absolute deadline, so that interruptions do not add up; slices of
   * at most WORK_SLICE_MS, so that a cancelled call frees its pool thread
   * soon after. */
  uint64_t until = now_ns() + (uint64_t)w->ms * NS_PER_MS;
  while (!jrpc_cancelled(w->d)) {
    uint64_t now = now_ns();
    if (now >= until)
      return;
    uint64_t step = until - now < WORK_SLICE_MS * NS_PER_MS
                        ? until
                        : now + WORK_SLICE_MS * NS_PER_MS;
    struct timespec ts = to_timespec(step);
    while (clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &ts, NULL) == EINTR)
      ;
  }
}

/* sleep.work_ms: the sleep in `steps` parts on the pool, each part's end
 * back on the loop (its progress notification, with a token), then the
 * next part or the reply. */
typedef struct progress {
  work_t w; /* this part's sleep */
  int64_t total_ms;
  uint32_t step, steps;
  const char *token; /* raw JSON, in the call's memory; NULL: no progress */
  size_t token_n;
} progress_t;

static void notify_progress(jrpc_call_t *d, const progress_t *p) {
  char *json = jrpc_alloc(d, p->token_n + 80);
  if (!json || jrpc_cancelled(d))
    return;
  int n = snprintf(json, p->token_n + 80,
                   "{\"token\":%.*s,\"value\":{\"kind\":\"report\","
                   "\"percentage\":%u}}",
                   (int)p->token_n, p->token, 100u * p->step / p->steps);
  /* Dropped (and counted) when the caller does not read its output; the
   * reply is not. */
  (void)jrpc_notify(d, "$/progress", json, (size_t)n);
}

static void step_done(jrpc_call_t *d, void *arg) {
  progress_t *p = arg;
  p->step++;
  if (p->token)
    notify_progress(d, p);
  if (p->step < p->steps && !jrpc_cancelled(d)) {
    int64_t part = p->total_ms / p->steps;
    p->w.ms = p->step + 1 < p->steps ? part : p->total_ms - part * p->step;
    if (jrpc_queue_work(d, work_sleep, step_done, p) == 0)
      return;
  }
  jrpc_w_i64(d, p->total_ms); /* refused, and nothing sent, if cancelled */
  jrpc_finish(d);
}

static int sleep_work_ms(jrpc_call_t *c, jrpc_val_t params, void *udata) {
  sleeper_t *s = udata;
  int64_t ms;
  if (read_ms(c, params, s->max_ms, 1, &ms))
    return JRPC_EFAIL;
  const char *token = NULL;
  size_t token_n = 0;
  jrpc_val_t t = jrpc_type(c, params) == JRPC_T_OBJECT
                     ? jrpc_get(c, params, "progress")
                     : jrpc_at(c, params, 1);
  jrpc_type_t tt = jrpc_type(c, t);
  if (!jrpc_is_none(t) && ((tt != JRPC_T_STRING && tt != JRPC_T_NUMBER) ||
                           jrpc_raw(c, t, &token, &token_n) != 0))
    return bad_param(c, "progress",
                     "a string or a number (LSP's ProgressToken)");
  jrpc_call_t *d = jrpc_defer(c);
  if (!d)
    return no_async(c);
  progress_t *p = jrpc_alloc(d, sizeof(*p));
  char *tok = jrpc_alloc(d, token_n ? token_n : 1);
  if (!p || !tok) {
    jrpc_error(d, JRPC_INTERNAL_ERROR, "out of memory");
    jrpc_finish(d);
    return JRPC_ASYNC;
  }
  if (token_n)
    memcpy(tok, token, token_n); /* params go when this handler returns */
  uint32_t steps = token ? 10 : 1;
  *p = (progress_t){.w = {d, ms / steps},
                    .total_ms = ms,
                    .steps = steps,
                    .token = token ? tok : NULL,
                    .token_n = token_n};
  if (steps == 1)
    p->w.ms = ms;
  /* Nothing was scheduled on failure, and the call is still ours. */
  if (jrpc_queue_work(d, work_sleep, step_done, p) != 0) {
    jrpc_error(d, JRPC_INTERNAL_ERROR, "cannot queue the work");
    jrpc_finish(d);
  }
  return JRPC_ASYNC;
}

/* ---- module ---- */

static int parse_max_ms(const char *text, int64_t *out) {
  if (!text) {
    *out = DEFAULT_MAX_MS;
    return 0;
  }
  /* Digits only: strtoll alone would take leading blanks and a sign. */
  if (*text < '0' || *text > '9')
    return JRPC_EINVAL;
  char *end;
  errno = 0;
  long long v = strtoll(text, &end, 10);
  if (errno != 0 || *end != '\0' || v > LIMIT_MAX_MS)
    return JRPC_EINVAL;
  *out = v;
  return 0;
}

static int timer_start(sleeper_t *s) {
  pthread_condattr_t ca;
  int rc = pthread_mutex_init(&s->mu, NULL);
  if (rc)
    return -rc;
  rc = pthread_condattr_init(&ca);
  if (rc)
    goto fail_mu;
  rc = pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
  if (!rc)
    rc = pthread_cond_init(&s->cv, &ca);
  pthread_condattr_destroy(&ca);
  if (rc)
    goto fail_mu;
  /* The thread starts with every signal blocked so that process-directed
   * signals keep going to the daemon's own threads. */
  sigset_t all, old;
  sigfillset(&all);
  pthread_sigmask(SIG_SETMASK, &all, &old);
  rc = pthread_create(&s->thread, NULL, timer_main, s);
  pthread_sigmask(SIG_SETMASK, &old, NULL);
  if (rc)
    goto fail_cv;
  return 0;
fail_cv:
  pthread_cond_destroy(&s->cv);
fail_mu:
  pthread_mutex_destroy(&s->mu);
  return -rc;
}

static void timer_stop(sleeper_t *s) {
  pthread_mutex_lock(&s->mu);
  s->stop = 1;
  pthread_cond_signal(&s->cv);
  pthread_mutex_unlock(&s->mu);
  pthread_join(s->thread, NULL);
  pthread_cond_destroy(&s->cv);
  pthread_mutex_destroy(&s->mu);
}

/* Entries still in the heap are calls the host has already finished or
 * abandoned (it runs fini only after that), so they are dropped unread. */
static void fini(void *mod_data) {
  sleeper_t *s = mod_data;
  if (!s)
    return;
  timer_stop(s);
  free(s->heap);
  free(s);
}

static int init(jrpc_reg_t *r, void **mod_data) {
  static const char *const keys[] = {"max_ms", NULL};
  if (jrpc_conf_keys(r, keys))
    return JRPC_EINVAL;
  int64_t max_ms;
  int rc = parse_max_ms(jrpc_conf_get(r, "max_ms"), &max_ms);
  if (rc)
    return jrpc_init_error(r, "max_ms: expected a whole number of "
                              "milliseconds from 0 to 2147483647");
  sleeper_t *s = calloc(1, sizeof(*s));
  if (!s)
    return JRPC_ENOMEM;
  s->max_ms = max_ms;
  rc = timer_start(s);
  if (rc) {
    free(s);
    return rc;
  }
  /* Both take N milliseconds, by position or as {"ms": N}, N from 0 to
   * this instance's max_ms (which the description states, so that calls
   * made from it are not refused). */
  char desc[2][768];
  static const char *const summaries[2] = {
      "answers ms after ms milliseconds",
      "the same, sleeping on a pool thread"};
  static const char *const more_params[2] = {
      "", ",{\"name\":\"progress\",\"description\":\"a token: $/progress "
          "notifications with it after each tenth of the sleep\","
          "\"schema\":{\"type\":[\"string\",\"integer\"]}}"};
  for (int i = 0; i < 2; i++)
    snprintf(desc[i], sizeof(desc[i]),
             "{\"summary\":\"%s\",\"paramStructure\":\"either\",\"params\":["
             "{\"name\":\"ms\",\"required\":true,\"schema\":{\"type\":"
             "\"integer\",\"minimum\":0,\"maximum\":%lld}}%s],\"result\":{"
             "\"name\":\"ms\",\"schema\":{\"type\":\"integer\"}},"
             "\"errors\":[{\"code\":-32602,\"message\":\"Invalid params\"}],"
             "\"x-jrpcd-async\":true}",
             summaries[i], (long long)max_ms, more_params[i]);
  rc = jrpc_register(r, "sleep.ms", sleep_ms, s);
  if (!rc)
    rc = jrpc_describe(r, "sleep.ms", desc[0]);
  if (!rc)
    rc = jrpc_register(r, "sleep.work_ms", sleep_work_ms, s);
  if (!rc)
    rc = jrpc_describe(r, "sleep.work_ms", desc[1]);
  if (rc) {
    fini(s);
    return rc;
  }
  *mod_data = s;
  return 0;
}

JRPC_MODULE("sleep", "1.0", init, fini)
