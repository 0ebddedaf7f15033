/* hello.c - a jrpcd handler module built outside jrpcd's source tree,
 * against an installed jrpcd (see README.md in this folder).
 *
 * hello.greet(name) -> "hello, NAME"; params ["bob"] or {"name":"bob"}.
 * The greeting is configurable: `greeting = hi` in its [plugin] section. */
#include <jrpc/jrpc.h>
#include <stdlib.h>
#include <string.h>

static int greet(jrpc_call_t *c, jrpc_val_t params, void *udata) {
  const char *greeting = udata;
  jrpc_val_t v = jrpc_type(c, params) == JRPC_T_OBJECT
                     ? jrpc_get(c, params, "name")
                     : jrpc_at(c, params, 0);
  const char *name;
  size_t n;
  if (jrpc_as_str(c, v, &name, &n) != 0)
    return jrpc_error(c, JRPC_INVALID_PARAMS, "expected a name");
  size_t g = strlen(greeting);
  char *msg = jrpc_alloc(c, g + 2 + n); /* freed when the reply is sent */
  if (!msg)
    return jrpc_error(c, JRPC_INTERNAL_ERROR, "out of memory");
  memcpy(msg, greeting, g);
  memcpy(msg + g, ", ", 2);
  memcpy(msg + g + 2, name, n);
  return jrpc_w_str(c, msg, g + 2 + n);
}

static int init(jrpc_reg_t *r, void **mod_data) {
  const char *conf = jrpc_conf_get(r, "greeting"); /* valid during init only */
  char *greeting = strdup(conf ? conf : "hello");
  if (!greeting)
    return jrpc_init_error(r, "out of memory");
  *mod_data = greeting;
  int rc = jrpc_register(r, "hello.greet", greet, greeting);
  if (rc != 0)
    free(greeting); /* fini is not called when init fails */
  return rc;
}

static void fini(void *mod_data) {
  free(mod_data);
}

JRPC_MODULE("hello", "1.0", init, fini)
