/* fx_count.c - a fixture that counts the calls that reach its handlers,
 * for validate_params' tests: "fx.count" is described (n, a required
 * integer; tag, an optional string or null) and answers how many calls
 * reached it so far; "fx.plain" is not described and answers the same
 * count. "fx.block" [ms, fail] holds its worker for ms milliseconds
 * before it answers (an error when fail is true): a slow synchronous call
 * for slow_call_ms' tests. With "broken = yes" in its section, fx.count's
 * description has a type no JSON Schema knows, which validate_params refuses at
 * load. */
#include <jrpc/jrpc.h>

#include <stdatomic.h>
#include <string.h>
#include <time.h>

static atomic_uint reached;

static int count(jrpc_call_t *c, jrpc_val_t params, void *udata) {
  (void)params;
  (void)udata;
  return jrpc_w_u64(c, atomic_fetch_add(&reached, 1) + 1);
}

static int block(jrpc_call_t *c, jrpc_val_t params, void *udata) {
  (void)udata;
  int64_t ms = 0;
  int fail = 0;
  if (jrpc_as_i64(c, jrpc_at(c, params, 0), &ms) != 0 || ms < 0 || ms > 10000)
    return jrpc_error(c, JRPC_INVALID_PARAMS, NULL);
  jrpc_as_bool(c, jrpc_at(c, params, 1), &fail);
  struct timespec ts = {(time_t)(ms / 1000), (long)(ms % 1000) * 1000000L};
  while (nanosleep(&ts, &ts) != 0)
    ;
  return fail ? jrpc_error(c, JRPC_HANDLER_FAILED, "failed as asked")
              : jrpc_w_i64(c, ms);
}

static const char good[] =
    "{\"summary\":\"counts the calls that reach it\",\"params\":["
    "{\"name\":\"n\",\"required\":true,\"schema\":{\"type\":\"integer\"}},"
    "{\"name\":\"tag\",\"schema\":{\"type\":[\"string\",\"null\"]}}],"
    "\"result\":{\"name\":\"calls\",\"schema\":{\"type\":\"integer\"}}}";
static const char broken[] =
    "{\"params\":[{\"name\":\"n\",\"schema\":{\"type\":\"int\"}}],"
    "\"result\":{\"name\":\"calls\",\"schema\":{}}}";

static int init(jrpc_reg_t *r, void **mod_data) {
  (void)mod_data;
  const char *b = jrpc_conf_get(r, "broken");
  int rc = jrpc_register(r, "fx.count", count, NULL);
  if (!rc)
    rc = jrpc_describe(r, "fx.count", b && !strcmp(b, "yes") ? broken : good);
  if (!rc)
    rc = jrpc_register(r, "fx.plain", count, NULL);
  if (!rc)
    rc = jrpc_register(r, "fx.block", block, NULL);
  return rc;
}

JRPC_MODULE("fx_count", "1.0", init, NULL)
