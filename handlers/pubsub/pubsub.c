/* pubsub.c - sample plugin: jrpcd as a message hub (server push, ABI 1.5).
 *
 *   pubsub.subscribe(channel)          -> subscription id
 *   pubsub.unsubscribe(id)             -> true, or false for an unknown id
 *   pubsub.publish(channel, message)   -> true
 *
 * Every subscriber of the channel, on any connection and worker, then
 * receives {"jsonrpc":"2.0","method":"pubsub.message","params":
 * {"subscription":ID,"result":{"channel":C,"message":M}}}. The daemon
 * keeps the subscriptions, answers pubsub.unsubscribe and bounds what a
 * slow subscriber may have queued; this plugin holds no state at all. */
#include <jrpc/jrpc.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* The channel: by position or by name. */
static jrpc_val_t arg(jrpc_call_t *c, jrpc_val_t params, uint32_t i,
                      const char *name) {
  return jrpc_type(c, params) == JRPC_T_ARRAY ? jrpc_at(c, params, i)
                                              : jrpc_get(c, params, name);
}

static int channel_of(jrpc_call_t *c, jrpc_val_t params, const char **ch,
                      size_t *n) {
  if (jrpc_as_str(c, arg(c, params, 0, "channel"), ch, n) != 0 ||
      memchr(*ch, '\0', *n))
    return jrpc_error(c, JRPC_INVALID_PARAMS, "channel: a string");
  return 0;
}

static int subscribe(jrpc_call_t *c, jrpc_val_t params, void *udata) {
  const char *ch;
  size_t n;
  if (channel_of(c, params, &ch, &n) != 0)
    return JRPC_EFAIL;
  return jrpc_subscribe_accept(c, ch, n);
}

static int publish(jrpc_call_t *c, jrpc_val_t params, void *pub) {
  const char *ch, *ch_json, *msg;
  size_t n, ch_n, msg_n;
  if (channel_of(c, params, &ch, &n) != 0)
    return JRPC_EFAIL;
  jrpc_val_t m = arg(c, params, 1, "message");
  if (jrpc_is_none(m) || jrpc_raw(c, m, &msg, &msg_n) != 0)
    return jrpc_error(c, JRPC_INVALID_PARAMS, "message: any JSON value");
  /* {"channel":C,"message":M}, as each subscriber receives it: C and M
   * as the caller's JSON text has them. */
  jrpc_raw(c, arg(c, params, 0, "channel"), &ch_json, &ch_n);
  char *json = jrpc_alloc(c, ch_n + msg_n + 32);
  if (!json)
    return jrpc_error(c, JRPC_INTERNAL_ERROR, "out of memory");
  int len =
      snprintf(json, ch_n + msg_n + 32, "{\"channel\":%.*s,\"message\":%.*s}",
               (int)ch_n, ch_json, (int)msg_n, msg);
  int rc = jrpc_publish(pub, ch, json, (size_t)len);
  if (rc != 0)
    return jrpc_error(c, JRPC_HANDLER_FAILED, "the message could not go out");
  return jrpc_w_bool(c, 1);
}

static int init(jrpc_reg_t *r, void **mod_data) {
  jrpc_pub_t *pub = jrpc_publisher(r);
  if (!pub)
    return jrpc_init_error(r, "no publisher (a host without server push)");
  int rc = jrpc_subscription(r, "pubsub.subscribe", "pubsub.unsubscribe",
                             "pubsub.message", subscribe, NULL);
  if (rc == 0)
    rc = jrpc_register(r, "pubsub.publish", publish, pub);
  return rc;
}

static void fini(void *mod_data) {}

JRPC_MODULE("pubsub", "1.0", init, fini)
