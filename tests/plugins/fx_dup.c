/* fx_dup.c - claims "math.add", which the math module already has, and
 * passes jrpc_register's verdict (JRPC_EEXIST when both are loaded) back as
 * the result of init. */
#include <jrpc/jrpc.h>

static int add(jrpc_call_t *c, jrpc_val_t params, void *udata) {
  return jrpc_w_str(c, "fx_dup", 6);
}

static int init(jrpc_reg_t *r, void **mod_data) {
  return jrpc_register(r, "math.add", add, NULL);
}

JRPC_MODULE("fx_dup", "1.0", init, NULL)
