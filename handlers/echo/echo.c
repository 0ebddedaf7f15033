/* echo.c - sample handler module: "echo" answers with its params, byte for
 * byte as the client sent them (same spacing, escapes and number spelling),
 * or null when the request has no params. */
#include <jrpc/jrpc.h>

#include <stddef.h>

static int echo(jrpc_call_t *c, jrpc_val_t params, void *udata) {
  if (jrpc_type(c, params) == JRPC_T_NONE)
    return jrpc_w_null(c);
  /* The raw bytes rather than a rebuilt value: re-encoding would normalise
   * numbers and escapes, and an echo must not. */
  const char *json;
  size_t n;
  if (jrpc_raw(c, params, &json, &n) != 0)
    return jrpc_error(c, JRPC_INTERNAL_ERROR, "params are not readable");
  return jrpc_w_raw(c, json, n);
}

/* Any params at all, which OpenRPC's params cannot say: jrpcd's own
 * "x-jrpcd-params": "any" does (jrpc then checks no arguments). */
static int init(jrpc_reg_t *r, void **mod_data) {
  static const char *const no_keys[] = {NULL}; /* it reads none */
  if (jrpc_conf_keys(r, no_keys))
    return JRPC_EINVAL;
  int rc = jrpc_register(r, "echo", echo, NULL);
  if (rc)
    return rc;
  return jrpc_describe(r, "echo",
                       "{\"summary\":\"the params back, byte for byte\","
                       "\"paramStructure\":\"either\",\"params\":[],"
                       "\"x-jrpcd-params\":\"any\","
                       "\"result\":{\"name\":\"params\",\"schema\":{}},"
                       "\"examples\":[{\"name\":\"a list\",\"params\":[],"
                       "\"result\":{\"name\":\"params\",\"value\":null}}]}");
}

JRPC_MODULE("echo", "1.0", init, NULL)
