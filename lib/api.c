/* api.c - the function table behind jrpc.h: forwards each handler-facing
 * call to the view, writer, error and memory code of the current call. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common.h"
#include "dispatch.h"
#include "module.h"
#include "nearest.h"
#include "params.h"
#include "push.h"
#include "request.h"
#include "view.h"

#define CALL(c) ((jrpc__call_t *)(c))
#define REGCTX(r) ((jrpc__regctx_t *)(r))

/* ---- registration ---- */

static int api_register(jrpc_reg_t *r, const char *name, jrpc_handler_fn fn,
                        void *udata) {
  jrpc__regctx_t *ctx = REGCTX(r);
  if (ctx->sealed) /* a per-worker init: the methods are final */
    return JRPC_EINVAL;
  const jrpc__method_t *prev = NULL;
  int rc = jrpc__registry_add(ctx->reg, name, fn, udata, ctx->owner, &prev);
  if (rc)
    ctx->failed = 1;
  if (rc == JRPC_EEXIST) {
    snprintf(ctx->err, sizeof(ctx->err), "method \"%s\" is already registered",
             name);
    ctx->dup_owner = prev ? prev->owner : NULL;
  } else if (rc == JRPC_EINVAL && !fn)
    snprintf(ctx->err, sizeof(ctx->err), "no handler function for \"%s\"",
             name ? name : "(null)");
  else if (rc == JRPC_EINVAL)
    snprintf(ctx->err, sizeof(ctx->err),
             "invalid method name \"%s\" (empty, or \"rpc.\" is reserved)",
             name ? name : "(null)");
  else if (rc)
    snprintf(ctx->err, sizeof(ctx->err), "out of memory");
  return rc;
}

static int api_init_error(jrpc_reg_t *r, const char *msg) {
  jrpc__regctx_t *ctx = REGCTX(r);
  snprintf(ctx->err, sizeof(ctx->err), "%s", msg ? msg : "(no message)");
  return JRPC_EINVAL;
}

static int api_describe(jrpc_reg_t *r, const char *method, const char *json) {
  return REGCTX(r)->sealed ? JRPC_EINVAL
                           : jrpc__describe(REGCTX(r), method, json);
}

static int api_on_worker(jrpc_reg_t *r, jrpc_worker_init_fn init,
                         jrpc_worker_fini_fn fini) {
  jrpc__regctx_t *ctx = REGCTX(r);
  if (!init || ctx->sealed)
    return JRPC_EINVAL;
  ctx->winit = init;
  ctx->wfini = fini;
  return 0;
}

static const char *api_conf_get(jrpc_reg_t *r, const char *key) {
  const char *const *kv = REGCTX(r)->conf;
  for (; kv && kv[0]; kv += 2)
    if (strcmp(kv[0], key) == 0)
      return kv[1];
  return NULL;
}

/* The section's keys against the module's list: the first one not on it
 * fails the module's load (ctx->failed, like a method that did not
 * register), named with the listed key it is nearest to. */
static int api_conf_keys(jrpc_reg_t *r, const char *const *keys) {
  jrpc__regctx_t *ctx = REGCTX(r);
  if (!keys || ctx->sealed)
    return JRPC_EINVAL;
  for (const char *const *kv = ctx->conf; kv && kv[0]; kv += 2) {
    const char *near = NULL;
    int near_d = 0, listed = 0;
    for (const char *const *k = keys; *k && !listed; k++) {
      listed = strcmp(*k, kv[0]) == 0;
      int d = jrpc__name_typo(kv[0], *k);
      if (d >= 0 && (!near || d < near_d)) {
        near = *k;
        near_d = d;
      }
    }
    if (listed)
      continue;
    char list[160] = "";
    size_t n = 0;
    for (const char *const *k = keys; *k && n < sizeof(list); k++) {
      int w = snprintf(list + n, sizeof(list) - n, "%s%s", n ? ", " : "", *k);
      n += w > 0 ? (size_t)w : 0;
    }
    snprintf(ctx->err, sizeof(ctx->err), "%s: unknown key%s%s%s (its keys: %s)",
             kv[0], near ? "; did you mean " : "", near ? near : "",
             near ? "?" : "", n ? list : "none");
    ctx->failed = 1;
    ctx->bad_key = (size_t)(kv - ctx->conf) / 2 + 1;
    return JRPC_EINVAL;
  }
  return 0;
}

/* A subscription method and its unsubscribe method, which the engine
 * answers itself (push.c): neither holds more of the module than any
 * method does, and the notification's name is a copy. */
static int api_subscription(jrpc_reg_t *r, const char *method,
                            const char *unsubscribe, const char *notification,
                            jrpc_handler_fn fn, void *udata) {
  jrpc__regctx_t *ctx = REGCTX(r);
  if (ctx->sealed)
    return JRPC_EINVAL;
  char *names = jrpc__push_names(notification, unsubscribe);
  if (!names) {
    snprintf(ctx->err, sizeof(ctx->err),
             "subscription \"%s\": the notification's name \"%s\" is empty "
             "or needs escaping, or no unsubscribe method",
             method ? method : "(null)",
             notification ? notification : "(null)");
    ctx->failed = 1;
    return JRPC_EINVAL;
  }
  int rc = api_register(r, method, fn, udata);
  if (rc == 0)
    rc = api_register(r, unsubscribe, jrpc__push_unsubscribe, NULL);
  if (rc) {
    free(names);
    return rc;
  }
  jrpc__method_t *m =
      (jrpc__method_t *)jrpc__registry_find(ctx->reg, method, strlen(method));
  m->push = names;
  return 0;
}

static jrpc_pub_t *api_publisher(jrpc_reg_t *r) {
  return REGCTX(r)->sealed ? NULL : jrpc__push_publisher(REGCTX(r));
}

/* ---- views ---- */

static jrpc_type_t api_type(jrpc_call_t *c, jrpc_val_t v) {
  return jrpc__view_type(v);
}
static uint32_t api_len(jrpc_call_t *c, jrpc_val_t v) {
  return jrpc__view_len(v);
}
static jrpc_val_t api_at(jrpc_call_t *c, jrpc_val_t v, uint32_t i) {
  return jrpc__view_at(v, i);
}
static jrpc_val_t api_get(jrpc_call_t *c, jrpc_val_t v, const char *k,
                          size_t n) {
  return jrpc__view_get(v, k, n);
}
static jrpc_val_t api_first(jrpc_call_t *c, jrpc_val_t v) {
  return jrpc__view_first(v);
}
static jrpc_val_t api_next(jrpc_call_t *c, jrpc_val_t v) {
  return jrpc__view_next(v);
}
static int api_key(jrpc_call_t *c, jrpc_val_t v, const char **s, size_t *n) {
  return jrpc__view_key(v, &CALL(c)->e->arena, s, n);
}
static int api_as_i64(jrpc_call_t *c, jrpc_val_t v, int64_t *out) {
  return jrpc__view_i64(v, out);
}
static int api_as_f64(jrpc_call_t *c, jrpc_val_t v, double *out) {
  return jrpc__view_f64(v, out);
}
static int api_as_bool(jrpc_call_t *c, jrpc_val_t v, int *out) {
  return jrpc__view_bool(v, out);
}
static int api_as_str(jrpc_call_t *c, jrpc_val_t v, const char **s, size_t *n) {
  return jrpc__view_str(v, &CALL(c)->e->arena, s, n);
}
static int api_raw(jrpc_call_t *c, jrpc_val_t v, const char **s, size_t *n) {
  return jrpc__view_raw(v, s, n);
}

static int api_params_num(jrpc_call_t *c, jrpc_val_t params,
                          const char *const *names, uint32_t n,
                          jrpc_num_t *out) {
  return jrpc__params_num(params, names, n, out);
}

/* ---- writer ---- */

/* After jrpc_error (without data) the reply is decided: writes are refused
 * without marking the call as misbehaving. */
#define WRITABLE(call)                                                         \
  do {                                                                         \
    if ((call)->err_code && !(call)->err_data)                                 \
      return JRPC_EINVAL;                                                      \
  } while (0)

/* Stops a runaway result early: past the limit, the writer refuses more
 * and the reply becomes -32003. */
static inline int bounded(jrpc__call_t *call, int rc) {
  if (JRPC__UNLIKELY(jrpc__out_pos(call->w.out) - call->mark.pos >
                     call->e->lim.max_response_bytes)) {
    call->too_large = 1;
    call->w.bad = 1;
    return JRPC_E2BIG;
  }
  return rc;
}

#define WRITE(c, expr)                                                         \
  jrpc__call_t *call = CALL(c);                                                \
  WRITABLE(call);                                                              \
  return bounded(call, (expr))

static int api_w_obj(jrpc_call_t *c) {
  WRITE(c, jrpc__writer_obj(&call->w));
}
static int api_w_obj_end(jrpc_call_t *c) {
  WRITE(c, jrpc__writer_obj_end(&call->w));
}
static int api_w_arr(jrpc_call_t *c) {
  WRITE(c, jrpc__writer_arr(&call->w));
}
static int api_w_arr_end(jrpc_call_t *c) {
  WRITE(c, jrpc__writer_arr_end(&call->w));
}
static int api_w_key(jrpc_call_t *c, const char *s, size_t n) {
  WRITE(c, jrpc__writer_key(&call->w, s, n));
}
static int api_w_str(jrpc_call_t *c, const char *s, size_t n) {
  WRITE(c, jrpc__writer_str(&call->w, s, n));
}
static int api_w_i64(jrpc_call_t *c, int64_t v) {
  WRITE(c, jrpc__writer_i64(&call->w, v));
}
static int api_w_u64(jrpc_call_t *c, uint64_t v) {
  WRITE(c, jrpc__writer_u64(&call->w, v));
}
static int api_w_f64(jrpc_call_t *c, double v) {
  WRITE(c, jrpc__writer_f64(&call->w, v));
}
static int api_w_bool(jrpc_call_t *c, int v) {
  WRITE(c, jrpc__writer_bool(&call->w, v));
}
static int api_w_null(jrpc_call_t *c) {
  WRITE(c, jrpc__writer_null(&call->w));
}
static int api_w_raw(jrpc_call_t *c, const char *s, size_t n) {
  WRITE(c, jrpc__writer_raw(&call->w, s, n));
}

/* ---- errors ---- */

static int api_error(jrpc_call_t *c, int code, const char *msg) {
  jrpc__call_set_error(CALL(c), code, msg, 0);
  return JRPC_EFAIL;
}

static int api_error_begin(jrpc_call_t *c, int code, const char *msg) {
  return jrpc__call_set_error(CALL(c), code, msg, 1);
}

/* ---- memory, peer, log ---- */

static void *api_alloc(jrpc_call_t *c, size_t n) {
  return jrpc__arena_alloc(CALL(c)->arena, n);
}

static const jrpc_peer_t *api_peer(jrpc_call_t *c) {
  return CALL(c)->peer;
}

static void api_log(jrpc_call_t *c, int level, const char *msg) {
  jrpc__engine_t *e = CALL(c)->e;
  if (e->log)
    e->log(e->log_arg, level, msg);
}

/* ---- per-worker state (module.h) ---- */

/* The method's owner is the module that registered it (NULL for the
 * daemon's own); its slot k belongs to the worker of engine k. */
static void *api_worker_data(jrpc_call_t *c) {
  const jrpc__call_t *call = CALL(c);
  const jrpc__module_t *m = call->method ? call->method->owner : NULL;
  uint32_t k = call->e->worker;
  return m && k < m->nworkers && m->wlive[k] ? m->wslot[k] : NULL;
}

/* ---- async: needs a host with an event loop (async.c) ---- */

static jrpc_call_t *api_defer(jrpc_call_t *c) {
  return jrpc__defer(c);
}
static int api_finish(jrpc_call_t *c) {
  return jrpc__finish(c);
}
static int api_post(jrpc_call_t *c, jrpc_post_fn fn, void *arg) {
  return jrpc__post(c, fn, arg);
}
static int api_queue_work(jrpc_call_t *c, jrpc_work_fn w, jrpc_post_fn d,
                          void *arg) {
  return jrpc__queue_work(c, w, d, arg);
}
static int api_on_cancel(jrpc_call_t *c, jrpc_cancel_fn fn, void *arg) {
  return jrpc__on_cancel(c, fn, arg);
}
static int api_cancelled(jrpc_call_t *c) {
  return jrpc__cancelled(c);
}

/* ---- server push (push.c) ---- */

static int api_subscribe_accept(jrpc_call_t *c, const char *topic, size_t n) {
  return jrpc__push_accept(c, topic, n);
}
static int api_publish(jrpc_pub_t *p, const char *topic, size_t topic_n,
                       const char *json, size_t n) {
  return jrpc__push_publish(p, topic, topic_n, json, n);
}
static int api_notify(jrpc_call_t *c, const char *method, const char *json,
                      size_t n) {
  return jrpc__push_notify(c, method, json, n);
}

const struct jrpc_api jrpc__api = {
    JRPC_ABI_MAJOR,
    JRPC_ABI_MINOR,
    (uint32_t)sizeof(struct jrpc_api),
    0,
    api_register,
    api_conf_get,
    api_type,
    api_len,
    api_at,
    api_get,
    api_first,
    api_next,
    api_key,
    api_as_i64,
    api_as_f64,
    api_as_bool,
    api_as_str,
    api_raw,
    api_w_obj,
    api_w_obj_end,
    api_w_arr,
    api_w_arr_end,
    api_w_key,
    api_w_str,
    api_w_i64,
    api_w_u64,
    api_w_f64,
    api_w_bool,
    api_w_null,
    api_w_raw,
    api_error,
    api_error_begin,
    api_alloc,
    api_peer,
    api_log,
    api_defer,
    api_finish,
    api_post,
    api_queue_work,
    api_init_error,
    api_params_num,
    api_describe,
    api_on_worker,
    api_worker_data,
    api_on_cancel,
    api_cancelled,
    api_conf_keys,
    api_subscription,
    api_subscribe_accept,
    api_publisher,
    api_publish,
    api_notify,
};
