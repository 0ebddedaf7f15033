/* e2e_fx_late.c - fixture plugin for the reload tests.
 *
 * "late.ms" [N] answers N after N milliseconds slept on libuv's thread pool.
 * Its completion goes on running plugin code after jrpc_finish() (it counts
 * the calls it finished), as a real handler may: log, free its state. The
 * sample sleep plugin ends its completion with jrpc_finish(), which an
 * optimising compiler turns into a tail call, so that no plugin code runs
 * after it. */
#include <jrpc/jrpc.h>

#include <errno.h>
#include <stdint.h>
#include <time.h>

static volatile unsigned long finished;

static void work(void *arg) {
  int64_t ms = (int64_t)(intptr_t)arg;
  struct timespec ts = {(time_t)(ms / 1000), (long)(ms % 1000) * 1000000L};
  while (nanosleep(&ts, &ts) != 0 && errno == EINTR)
    ;
}

static void done(jrpc_call_t *d, void *arg) {
  jrpc_w_i64(d, (int64_t)(intptr_t)arg);
  jrpc_finish(d);
  finished++;
}

static int late_ms(jrpc_call_t *c, jrpc_val_t params, void *udata) {
  int64_t ms;
  if (jrpc_as_i64(c, jrpc_at(c, params, 0), &ms) != 0 || ms < 0 || ms > 10000)
    return jrpc_error(c, JRPC_INVALID_PARAMS, "expected [ms], 0 to 10000");
  jrpc_call_t *d = jrpc_defer(c);
  if (!d)
    return jrpc_error(c, JRPC_INTERNAL_ERROR, "no asynchronous calls here");
  /* On failure the host has ended the call itself. */
  (void)jrpc_queue_work(d, work, done, (void *)(intptr_t)ms);
  return JRPC_ASYNC;
}

static int init(jrpc_reg_t *r, void **mod_data) {
  return jrpc_register(r, "late.ms", late_ms, NULL);
}

JRPC_MODULE("e2e_late", "1.0", init, NULL)
