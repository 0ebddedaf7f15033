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

static int init(jrpc_reg_t *r, void **mod_data) {
  return jrpc_register(r, "echo", echo, NULL);
}

JRPC_MODULE("echo", "1.0", init, NULL)
