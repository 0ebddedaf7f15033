/* fx_env.c - a fixture module that shows what a process a plugin starts
 * would inherit from jrpcd: "env.get" [NAME] answers the variable NAME of
 * jrpcd's environment, or null; "env.cloexec" [FD] answers whether fd FD
 * is closed on exec (a child would not get it), or null if FD is not open.
 * activation.sh uses them to see that NOTIFY_SOCKET and LISTEN_* are gone
 * and that the passed sockets stay jrpcd's. */
#include <jrpc/jrpc.h>

#include <fcntl.h>
#include <stdlib.h>
#include <string.h>

static int env_get(jrpc_call_t *c, jrpc_val_t params, void *udata) {
  const char *name;
  size_t n;
  if (jrpc_as_str(c, jrpc_at(c, params, 0), &name, &n))
    return jrpc_error(c, JRPC_INVALID_PARAMS, "Invalid params");
  const char *v = getenv(name);
  return v ? jrpc_w_str(c, v, strlen(v)) : jrpc_w_null(c);
}

static int env_cloexec(jrpc_call_t *c, jrpc_val_t params, void *udata) {
  int64_t fd;
  if (jrpc_as_i64(c, jrpc_at(c, params, 0), &fd) || fd < 0 || fd > 65535)
    return jrpc_error(c, JRPC_INVALID_PARAMS, "Invalid params");
  int fl = fcntl((int)fd, F_GETFD);
  return fl < 0 ? jrpc_w_null(c) : jrpc_w_bool(c, (fl & FD_CLOEXEC) != 0);
}

static int init(jrpc_reg_t *r, void **mod_data) {
  int rc = jrpc_register(r, "env.get", env_get, NULL);
  return rc ? rc : jrpc_register(r, "env.cloexec", env_cloexec, NULL);
}

JRPC_MODULE("fx_env", "1.0", init, NULL)
