/* fx_init_fail.c - registers "fx.partial", then fails its init: the host
 * must remove "fx.partial" again. fini aborts, because a module whose init
 * failed has no data for fini to release and must not be called again. */
#include <jrpc/jrpc.h>

#include <stdlib.h>

static int partial(jrpc_call_t *c, jrpc_val_t params, void *udata) {
  return jrpc_w_bool(c, 1);
}

static int init(jrpc_reg_t *r, void **mod_data) {
  int rc = jrpc_register(r, "fx.partial", partial, NULL);
  if (rc)
    return rc;
  return -1;
}

static void fini(void *mod_data) {
  abort();
}

JRPC_MODULE("fx_init_fail", "1.0", init, fini)
