/* fx_worker.c - fixture: per-worker slots (jrpc_on_worker) that write their
 * life to a file, for tests/e2e/e2e_workers.c. Config keys:
 *   log = PATH         lines appended: "init PID I W TID", "fini PID I W
 *                      TID SERVED" (SERVED: the thread that ran the slot's
 *                      calls, 0 if none), "modfini PID I TID" (PID: jrpcd
 *                      -t writes its own lines too); I counts the
 *                      instances this .so has started (reloads run init
 *                      again on the same object), W is the worker
 *   fail_worker = W    that worker's init fails ("no connection for W")
 * Methods:
 *   fx_worker.where        -> [I, W] of the calling worker's slot
 *   fx_worker.later [ms]   -> deferred; after ms on the thread pool,
 *                             [I, W] of the slot seen through the
 *                             deferred handle, on its loop */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <jrpc/jrpc.h>

#include <fcntl.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

static atomic_int instances;

typedef struct inst {
  int id;
  int fd; /* the log, O_APPEND: each line one write */
  long fail_worker;
} inst_t;

typedef struct slot {
  inst_t *in;
  unsigned worker;
  _Atomic long served; /* the thread of its calls */
} slot_t;

static void line(inst_t *in, const char *fmt, long a, long b, long c) {
  char buf[128];
  int n = snprintf(buf, sizeof(buf), fmt, (long)getpid(), in->id, a, b, c);
  if (in->fd >= 0 && n > 0)
    (void)!write(in->fd, buf, (size_t)n);
}

static slot_t *mine(jrpc_call_t *c) {
  slot_t *s = jrpc_worker_data(c);
  if (s)
    atomic_store(&s->served, (long)gettid());
  return s;
}

static int w_where(jrpc_call_t *c, slot_t *s) {
  if (!s)
    return jrpc_w_null(c);
  jrpc_w_arr(c);
  jrpc_w_i64(c, s->in->id);
  jrpc_w_u64(c, s->worker);
  return jrpc_w_arr_end(c);
}

static int where(jrpc_call_t *c, jrpc_val_t params, void *udata) {
  return w_where(c, mine(c));
}

static void nap(void *arg) {
  int64_t ms = (int64_t)(intptr_t)arg;
  struct timespec ts = {(time_t)(ms / 1000), (long)(ms % 1000) * 1000000L};
  nanosleep(&ts, NULL);
}

static void later_done(jrpc_call_t *d, void *arg) {
  w_where(d, mine(d));
  jrpc_finish(d);
}

static int later(jrpc_call_t *c, jrpc_val_t params, void *udata) {
  int64_t ms = 0;
  if (jrpc_as_i64(c, jrpc_at(c, params, 0), &ms) != 0 || ms < 0 || ms > 10000)
    return jrpc_error(c, JRPC_INVALID_PARAMS, "expected [ms]");
  mine(c);
  jrpc_call_t *d = jrpc_defer(c);
  if (!d)
    return jrpc_error(c, JRPC_INTERNAL_ERROR, "cannot defer");
  if (jrpc_queue_work(d, nap, later_done, (void *)(intptr_t)ms) != 0) {
    jrpc_error(d, JRPC_INTERNAL_ERROR, "cannot queue");
    jrpc_finish(d);
  }
  return JRPC_ASYNC;
}

static int w_init(jrpc_reg_t *r, void *mod_data, unsigned worker, void **slot) {
  inst_t *in = mod_data;
  if ((long)worker == in->fail_worker) {
    char why[64];
    snprintf(why, sizeof(why), "no connection for %u", worker);
    return jrpc_init_error(r, why);
  }
  slot_t *s = calloc(1, sizeof(*s));
  if (!s)
    return JRPC_ENOMEM;
  s->in = in;
  s->worker = worker;
  *slot = s;
  line(in, "init %ld %d %ld %ld\n", (long)worker, (long)gettid(), 0);
  return 0;
}

static void w_fini(void *mod_data, unsigned worker, void *slot) {
  inst_t *in = mod_data;
  slot_t *s = slot;
  line(in, "fini %ld %d %ld %ld %ld\n", (long)worker, (long)gettid(),
       atomic_load(&s->served));
  free(s);
}

static void fini(void *mod_data) {
  inst_t *in = mod_data;
  line(in, "modfini %ld %d %ld\n", (long)gettid(), 0, 0);
  if (in->fd >= 0)
    close(in->fd);
  free(in);
}

static int init(jrpc_reg_t *r, void **mod_data) {
  inst_t *in = calloc(1, sizeof(*in));
  if (!in)
    return JRPC_ENOMEM;
  in->id = atomic_fetch_add(&instances, 1) + 1;
  const char *path = jrpc_conf_get(r, "log");
  in->fd =
      path ? open(path, O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC, 0644) : -1;
  const char *fw = jrpc_conf_get(r, "fail_worker");
  in->fail_worker = fw ? atol(fw) : -1;
  int rc = jrpc_register(r, "fx_worker.where", where, NULL);
  if (!rc)
    rc = jrpc_register(r, "fx_worker.later", later, NULL);
  if (!rc)
    rc = jrpc_on_worker(r, w_init, w_fini);
  if (rc) {
    fini(in);
    return rc;
  }
  *mod_data = in;
  return 0;
}

JRPC_MODULE("fx_worker", "1.0", init, fini)
