/* fx_guard.c - a fixture for [access] and `methods` tests: every handler
 * counts the calls that reach it, per method, so that a test can tell a
 * method that never ran from one that answered something.
 *
 *  fx.ok          described (n, a required integer; tag, a string or
 *                 null): the control, served;
 *  fx.deny        described like fx.ok: what [access] denies;
 *  fx.deny_plain  not described (no params plan);
 *  fx.deny_later  described like fx.ok; defers, then answers from its
 *                 loop (a deferred handler);
 *  fx.ok_later    the same, served: the deferred control;
 *  fx.hide        described like fx.ok: what `methods` hides;
 *  fx.ran         not described: {"fx.ok":N,...}, how many calls reached
 *                 each of the above so far (summed over workers). */
#include <jrpc/jrpc.h>

#include <stdatomic.h>
#include <stdint.h>
#include <string.h>

static const char *const names[] = {"fx.ok",         "fx.deny",
                                    "fx.deny_plain", "fx.deny_later",
                                    "fx.ok_later",   "fx.hide"};
enum { NMETHODS = sizeof(names) / sizeof(names[0]) };
static atomic_uint reached[NMETHODS];

static const char n_tag[] =
    "{\"params\":[{\"name\":\"n\",\"required\":true,\"schema\":{\"type\":"
    "\"integer\"}},{\"name\":\"tag\",\"schema\":{\"type\":[\"string\","
    "\"null\"]}}],\"result\":{\"name\":\"calls\",\"schema\":{}}}";

static int count(jrpc_call_t *c, jrpc_val_t params, void *udata) {
  (void)params;
  unsigned k = (unsigned)(uintptr_t)udata;
  return jrpc_w_u64(c, atomic_fetch_add(&reached[k], 1) + 1);
}

static void answer_later(jrpc_call_t *d, void *arg) {
  (void)arg;
  jrpc_w_bool(d, 1);
  jrpc_finish(d);
}

static int count_later(jrpc_call_t *c, jrpc_val_t params, void *udata) {
  (void)params;
  atomic_fetch_add(&reached[(uintptr_t)udata], 1);
  jrpc_call_t *d = jrpc_defer(c);
  if (!d)
    return jrpc_error(c, JRPC_INTERNAL_ERROR, "no deferred calls here");
  (void)jrpc_post(d, answer_later, NULL); /* on failure the host ended it */
  return JRPC_ASYNC;
}

static int ran(jrpc_call_t *c, jrpc_val_t params, void *udata) {
  (void)params;
  (void)udata;
  jrpc_w_obj(c);
  for (unsigned k = 0; k < NMETHODS; k++) {
    jrpc_w_key(c, names[k], strlen(names[k]));
    jrpc_w_u64(c, atomic_load(&reached[k]));
  }
  return jrpc_w_obj_end(c);
}

static int init(jrpc_reg_t *r, void **mod_data) {
  (void)mod_data;
  int rc = 0;
  for (unsigned k = 0; k < NMETHODS && !rc; k++) {
    int later = strstr(names[k], "_later") != NULL;
    rc = jrpc_register(r, names[k], later ? count_later : count,
                       (void *)(uintptr_t)k);
    if (!rc && strcmp(names[k], "fx.deny_plain") != 0)
      rc = jrpc_describe(r, names[k], n_tag);
  }
  if (!rc)
    rc = jrpc_register(r, "fx.ran", ran, NULL);
  return rc;
}

JRPC_MODULE("fx_guard", "1.0", init, NULL)
