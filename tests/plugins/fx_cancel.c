/* fx_cancel.c - a fixture for call timeouts and cancellation (ABI 1.3).
 *
 *  fx.forever      defers and never finishes on its own: only a timeout,
 *                  $/cancelRequest, its connection closing or shutdown end
 *                  it; its cancel callback then finishes it. No timeout of
 *                  its own, so [server] or [plugin] ones apply.
 *  fx.timed_work   described with "x-jrpcd-timeout-ms": 300; queues a 10 ms
 *                  job on the host's thread pool and answers true. The job
 *                  counts whether its call was already cancelled when a
 *                  pool thread took it (it timed out while queued).
 *  fx.counts       {"started_cancelled": N} of fx.timed_work so far.
 */
#ifndef _POSIX_C_SOURCE
#define _POSIX_C_SOURCE 200809L
#endif
#include <jrpc/jrpc.h>

#include <stdatomic.h>
#include <time.h>

static atomic_int started_cancelled;

static int no_async(jrpc_call_t *c) {
  return jrpc_error(c, JRPC_INTERNAL_ERROR, "cannot defer");
}

static void finish_cancelled(jrpc_call_t *d, void *arg) {
  jrpc_finish(d);
}

static int forever(jrpc_call_t *c, jrpc_val_t params, void *udata) {
  jrpc_call_t *d = jrpc_defer(c);
  if (!d)
    return no_async(c);
  jrpc_on_cancel(d, finish_cancelled, NULL);
  return JRPC_ASYNC;
}

static void job(void *arg) {
  jrpc_call_t *d = arg;
  if (jrpc_cancelled(d)) {
    atomic_fetch_add(&started_cancelled, 1);
    return;
  }
  struct timespec ts = {0, 10 * 1000 * 1000};
  nanosleep(&ts, NULL);
}

static void job_done(jrpc_call_t *d, void *arg) {
  jrpc_w_bool(d, 1);
  jrpc_finish(d);
}

static int timed_work(jrpc_call_t *c, jrpc_val_t params, void *udata) {
  jrpc_call_t *d = jrpc_defer(c);
  if (!d)
    return no_async(c);
  if (jrpc_queue_work(d, job, job_done, d) != 0) {
    jrpc_error(d, JRPC_INTERNAL_ERROR, "cannot queue");
    jrpc_finish(d);
  }
  return JRPC_ASYNC;
}

static int counts(jrpc_call_t *c, jrpc_val_t params, void *udata) {
  jrpc_w_obj(c);
  jrpc_w_key(c, "started_cancelled", 17);
  jrpc_w_i64(c, atomic_load(&started_cancelled));
  return jrpc_w_obj_end(c);
}

static int init(jrpc_reg_t *r, void **mod_data) {
  int rc = jrpc_register(r, "fx.forever", forever, NULL);
  if (!rc)
    rc = jrpc_register(r, "fx.timed_work", timed_work, NULL);
  if (!rc)
    rc = jrpc_describe(r, "fx.timed_work",
                       "{\"params\":[],\"x-jrpcd-timeout-ms\":300}");
  if (!rc)
    rc = jrpc_register(r, "fx.counts", counts, NULL);
  return rc;
}

JRPC_MODULE("fx_cancel", "1.0", init, NULL)
