/* e2e_fx_late.c - fixture plugin for the reload tests.
 *
 * "late.ms" [N] answers N after N milliseconds slept on libuv's thread pool.
 * Its completion goes on running plugin code after jrpc_finish() (it counts
 * the calls it finished), as a real handler may: log, free its state. The
 * sample sleep plugin ends its completion with jrpc_finish(), which an
 * optimising compiler turns into a tail call, so that no plugin code runs
 * after it.
 *
 * "late.block_until" ["PATH"] blocks its worker, synchronously, until PATH
 * exists (at most 10 s), then answers true (false on timeout): it shows
 * which replies of the same read went out while it was blocked.
 *
 * "late.park" defers its call and keeps the handle, nothing more: no post,
 * no thread-pool work (which hold the plugins on their own). "late.unpark"
 * finishes the parked call, from the same worker, and the parked call's
 * result says whether the module instance that started it is still loaded
 * ("alive") or its fini has already run ("ended"). A reload that keeps
 * this plugin makes a new instance of it in the same mapping (statics
 * shared), so the two can be told apart: each init takes a serial. For one
 * worker only (the handle is not shared safely between loops).
 * "late.ended" answers how many instances have ended. */
#include <jrpc/jrpc.h>

#include <errno.h>
#include <stdint.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

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

static int block_until(jrpc_call_t *c, jrpc_val_t params, void *udata) {
  const char *s;
  size_t n;
  char path[256];
  (void)udata;
  if (jrpc_as_str(c, jrpc_at(c, params, 0), &s, &n) != 0 || n == 0 ||
      n >= sizeof(path))
    return jrpc_error(c, JRPC_INVALID_PARAMS, "expected [path]");
  memcpy(path, s, n);
  path[n] = '\0';
  for (int i = 0; i < 1000; i++) {
    if (access(path, F_OK) == 0)
      return jrpc_w_bool(c, 1);
    struct timespec ts = {0, 10 * 1000000L};
    nanosleep(&ts, NULL);
  }
  return jrpc_w_bool(c, 0);
}

enum { MAX_INSTANCES = 64 };
static unsigned started;
static volatile unsigned char ended[MAX_INSTANCES];
static jrpc_call_t *parked;
static unsigned parked_by;

static int park(jrpc_call_t *c, jrpc_val_t params, void *udata) {
  (void)params;
  if (parked)
    return jrpc_error(c, JRPC_INVALID_PARAMS, "a call is parked already");
  jrpc_call_t *d = jrpc_defer(c);
  if (!d)
    return jrpc_error(c, JRPC_INTERNAL_ERROR, "no asynchronous calls here");
  parked = d;
  parked_by = (unsigned)(uintptr_t)udata;
  return JRPC_ASYNC;
}

static int unpark(jrpc_call_t *c, jrpc_val_t params, void *udata) {
  (void)params;
  (void)udata;
  if (!parked)
    return jrpc_error(c, JRPC_INVALID_PARAMS, "no call is parked");
  jrpc_call_t *d = parked;
  parked = NULL;
  if (ended[parked_by])
    jrpc_w_str(d, "ended", 5);
  else
    jrpc_w_str(d, "alive", 5);
  jrpc_finish(d);
  return jrpc_w_bool(c, 1);
}

static int count_ended(jrpc_call_t *c, jrpc_val_t params, void *udata) {
  (void)params;
  (void)udata;
  uint64_t n = 0;
  for (unsigned i = 0; i < MAX_INSTANCES; i++)
    n += ended[i];
  return jrpc_w_u64(c, n);
}

static int init(jrpc_reg_t *r, void **mod_data) {
  if (started == MAX_INSTANCES)
    return -1;
  void *me = (void *)(uintptr_t)started++;
  *mod_data = me;
  if (jrpc_register(r, "late.ms", late_ms, NULL) != 0 ||
      jrpc_register(r, "late.park", park, me) != 0 ||
      jrpc_register(r, "late.unpark", unpark, NULL) != 0 ||
      jrpc_register(r, "late.ended", count_ended, NULL) != 0)
    return -1;
  return jrpc_register(r, "late.block_until", block_until, NULL);
}

static void fini(void *mod_data) {
  ended[(uintptr_t)mod_data] = 1;
}

JRPC_MODULE("e2e_late", "1.0", init, fini)
