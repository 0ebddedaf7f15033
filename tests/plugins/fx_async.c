/* fx_async.c - edge cases of the asynchronous API for host tests.
 *
 *  fx.post_self          defers, then posts the completion to its own loop
 *                        from inside the handler: answers true.
 *  fx.defer_error        defers and completes later with error -32000 and
 *                        data "late": errors travel the deferred path too.
 *  fx.defer_finish_now   defers and finishes before the handler returns;
 *                        the header does not forbid it, so the host must
 *                        cope: answers "now".
 *  fx.async_no_defer     returns JRPC_ASYNC without deferring, which the
 *                        host must turn into an error reply, not a hang.
 */
#include <jrpc/jrpc.h>

static int no_async(jrpc_call_t *c) {
  return jrpc_error(c, JRPC_INTERNAL_ERROR,
                    "asynchronous calls are not available in this host");
}

static void answer_true(jrpc_call_t *d, void *arg) {
  jrpc_w_bool(d, 1);
  jrpc_finish(d);
}

static void answer_error(jrpc_call_t *d, void *arg) {
  jrpc_error_begin(d, JRPC_HANDLER_FAILED, "deferred failure");
  jrpc_w_str(d, "late", 4);
  jrpc_finish(d);
}

static int post_with(jrpc_call_t *c, jrpc_post_fn fn) {
  jrpc_call_t *d = jrpc_defer(c);
  if (!d)
    return no_async(c);
  /* On failure the host has ended the call itself. */
  (void)jrpc_post(d, fn, NULL);
  return JRPC_ASYNC;
}

static int post_self(jrpc_call_t *c, jrpc_val_t params, void *udata) {
  return post_with(c, answer_true);
}

static int defer_error(jrpc_call_t *c, jrpc_val_t params, void *udata) {
  return post_with(c, answer_error);
}

static int finish_now(jrpc_call_t *c, jrpc_val_t params, void *udata) {
  jrpc_call_t *d = jrpc_defer(c);
  if (!d)
    return no_async(c);
  jrpc_w_str(d, "now", 3);
  jrpc_finish(d);
  return JRPC_ASYNC;
}

static int async_no_defer(jrpc_call_t *c, jrpc_val_t params, void *udata) {
  return JRPC_ASYNC;
}

static int init(jrpc_reg_t *r, void **mod_data) {
  static const struct {
    const char *name;
    jrpc_handler_fn fn;
  } methods[] = {{"fx.post_self", post_self},
                 {"fx.defer_error", defer_error},
                 {"fx.defer_finish_now", finish_now},
                 {"fx.async_no_defer", async_no_defer}};
  for (unsigned i = 0; i < sizeof(methods) / sizeof(methods[0]); i++) {
    int rc = jrpc_register(r, methods[i].name, methods[i].fn, NULL);
    if (rc)
      return rc;
  }
  return 0;
}

JRPC_MODULE("fx_async", "1.0", init, NULL)
