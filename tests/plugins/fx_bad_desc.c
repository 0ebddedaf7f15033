/* fx_bad_desc.c - a fixture module whose method description is refused:
 * FX_CASE (a compile definition) picks which way it is wrong, so that each
 * fails the load with its own message. */
#include <jrpc/jrpc.h>

static int ok(jrpc_call_t *c, jrpc_val_t params, void *udata) {
  return jrpc_w_bool(c, 1);
}

static int init(jrpc_reg_t *r, void **mod_data) {
  static const struct {
    const char *method, *desc;
  } cases[] = {
      {"fx.described", "{\"params\":[}"},                 /* 0: not JSON */
      {"fx.described", "[1]"},                            /* 1: not an object */
      {"fx.described", "{\"name\":\"x\",\"params\":[]}"}, /* 2: a name */
      {"fx.described", "{\"summary\":\"s\"}"},            /* 3: no params */
      {"fx.other", "{\"params\":[]}"},                    /* 4: not ours */
  };
  int rc = jrpc_register(r, "fx.described", ok, NULL);
  if (rc)
    return rc;
  return jrpc_describe(r, cases[FX_CASE].method, cases[FX_CASE].desc);
}

JRPC_MODULE("fx_bad_desc", "1.0", init, NULL)
