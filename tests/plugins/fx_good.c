/* fx_good.c - a well-formed fixture module. "fx.ok" answers true; when its
 * config section has a "greeting" key, "fx.greeting" answers that string,
 * which shows that config reaches init and that mod_data reaches fini; an
 * "alias" key registers fx.ok's handler under that name too, followed by
 * "alias_pad" x's (a config line is short; a method name need not be: the
 * [access] tests use names of any length). */
#include <jrpc/jrpc.h>

#include <stdlib.h>
#include <string.h>

static int ok(jrpc_call_t *c, jrpc_val_t params, void *udata) {
  return jrpc_w_bool(c, 1);
}

static int greeting(jrpc_call_t *c, jrpc_val_t params, void *udata) {
  const char *s = udata;
  return jrpc_w_str(c, s, strlen(s));
}

static int register_alias(jrpc_reg_t *r, const char *alias) {
  const char *pad = jrpc_conf_get(r, "alias_pad");
  size_t n = strlen(alias), extra = pad ? strtoul(pad, NULL, 10) : 0;
  char *name = malloc(n + extra + 1);
  if (!name)
    return JRPC_ENOMEM;
  memcpy(name, alias, n);
  memset(name + n, 'x', extra);
  name[n + extra] = '\0';
  int rc = jrpc_register(r, name, ok, NULL); /* the registry copies it */
  free(name);
  return rc;
}

static int init(jrpc_reg_t *r, void **mod_data) {
  int rc = jrpc_register(r, "fx.ok", ok, NULL);
  if (rc)
    return rc;
  const char *alias = jrpc_conf_get(r, "alias");
  if (alias && (rc = register_alias(r, alias)) != 0)
    return rc;
  const char *g = jrpc_conf_get(r, "greeting");
  if (!g)
    return 0;
  /* A copy: the header promises nothing about how long config strings
   * live after init. */
  size_t n = strlen(g) + 1;
  char *copy = malloc(n);
  if (!copy)
    return JRPC_ENOMEM;
  memcpy(copy, g, n);
  rc = jrpc_register(r, "fx.greeting", greeting, copy);
  if (rc) {
    free(copy);
    return rc;
  }
  *mod_data = copy;
  return 0;
}

static void fini(void *mod_data) {
  free(mod_data);
}

JRPC_MODULE("fx_good", "1.0", init, fini)
