/* fx_peer.c - a fixture module: "fx.peer" answers with what jrpc_peer()
 * says of its caller, every field (ABI 1.2's transport and cert_cn among
 * them), so that tests can see what a handler sees. */
#include <jrpc/jrpc.h>

#include <string.h>

static void w_num(jrpc_call_t *c, const char *key, int64_t v) {
  jrpc_w_key(c, key, strlen(key));
  jrpc_w_i64(c, v);
}

static void w_text(jrpc_call_t *c, const char *key, const char *v) {
  jrpc_w_key(c, key, strlen(key));
  jrpc_w_str(c, v, strlen(v));
}

static int peer(jrpc_call_t *c, jrpc_val_t params, void *udata) {
  const jrpc_peer_t *p = jrpc_peer(c);
  static const char *const transports[] = {"unknown", "unix", "tcp", "tls"};
  jrpc_w_obj(c);
  w_text(c, "transport",
         p->transport >= 0 && p->transport <= 3 ? transports[p->transport]
                                                : "?");
  w_num(c, "uid", p->uid);
  w_num(c, "gid", p->gid);
  w_text(c, "addr", p->addr);
  w_num(c, "port", p->port);
  w_text(c, "cert_cn", p->cert_cn);
  return jrpc_w_obj_end(c);
}

static int init(jrpc_reg_t *r, void **mod_data) {
  return jrpc_register(r, "fx.peer", peer, NULL);
}

JRPC_MODULE("fx_peer", "1.0", init, NULL)
