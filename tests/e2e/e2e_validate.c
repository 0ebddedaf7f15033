/* e2e_validate.c - validate_params against a real daemon: a described
 * method's bad params are answered -32602 with data naming the param and
 * the reason, and its handler is not called (the fixture fx_count counts
 * the calls that reach it); undescribed methods are never checked; the
 * [server] key and a [plugin NAME]'s own key turn it off and on; a
 * description the checks cannot be made from fails the plugin's load,
 * naming the method, only while checking is on. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <stdio.h>
#include <string.h>

#include "e2e.h"

#ifndef JRPC_FIXTURE_DIR
#error "JRPC_FIXTURE_DIR must name the fixture plugins' folder"
#endif

#define INVALID(data, id) ERRD("-32602", "Invalid params", data, id)

static void with_fx(char *out, size_t cap, const char *fx_keys) {
  snprintf(out, cap, "%s[plugin fx]\npath = %s/fx_count.so\n%s",
           e2e_plugins_default, JRPC_FIXTURE_DIR, fx_keys ? fx_keys : "");
}

static void start(e2e_daemon_t *d, const char *server, const char *fx_keys) {
  static char plugins[1024];
  with_fx(plugins, sizeof(plugins), fx_keys);
  e2e_opts_t o = {.workers = 1, .server = server, .plugins = plugins};
  e2e_start(d, &o);
}

static void test_checked_by_default(void **state) {
  e2e_daemon_t *d = *state;
  start(d, NULL, NULL);
  e2e_conn_t *c = e2e_connect(d, E2E_UNIX_NL);
  e2e_send(c, REQ("fx.count", "[]", "1"));
  e2e_expect(c, INVALID("{\"param\":\"n\",\"reason\":\"missing\"}", "1"));
  e2e_send(c, REQ("fx.count", "{\"tag\":\"x\"}", "2"));
  e2e_expect(c, INVALID("{\"param\":\"n\",\"reason\":\"missing\"}", "2"));
  e2e_send(c, REQ("fx.count", "[1.5]", "3"));
  e2e_expect(c, INVALID("{\"param\":\"n\",\"reason\":\"type\",\"expected\":"
                        "\"integer\",\"got\":\"number\"}",
                        "3"));
  e2e_send(c, REQ("fx.count", "[1,7]", "4"));
  e2e_expect(c, INVALID("{\"param\":\"tag\",\"reason\":\"type\",\"expected\":"
                        "[\"null\",\"string\"],\"got\":\"number\"}",
                        "4"));
  e2e_send(c, REQ("fx.count", "[1,null,3]", "5"));
  e2e_expect(c, INVALID("{\"reason\":\"too many\",\"max\":2,\"got\":3}", "5"));
  e2e_send(c, REQ("fx.count", "{\"n\":1,\"t\\u0061g\":null,\"nn\":2}", "6"));
  e2e_expect(c, INVALID("{\"param\":\"nn\",\"reason\":\"unknown\"}", "6"));
  /* In a batch, and as a notification (never answered, never run). */
  e2e_send(c,
           "[" REQ("fx.count", "[\"1\"]", "7") "," NOTE("fx.count", "[]") "]");
  e2e_expect(c, "[" INVALID("{\"param\":\"n\",\"reason\":\"type\",\"expected\":"
                            "\"integer\",\"got\":\"string\"}",
                            "7") "]");
  /* None of those reached the handler: the first good call is its first. */
  e2e_send(c, REQ("fx.count", "{\"n\":2.0,\"tag\":\"x\"}", "8"));
  e2e_expect(c, RES("1", "8"));
  /* Not described: whatever the params, the handler runs. */
  e2e_send(c, REQ("fx.plain", "[\"anything\",1,2,3]", "9"));
  e2e_expect(c, RES("2", "9"));
  /* math is described too: its checks come first now. */
  e2e_send(c, REQ("math.add", "{\"a\":1,\"b\":2,\"c\":3}", "10"));
  e2e_expect(c, INVALID("{\"param\":\"c\",\"reason\":\"unknown\"}", "10"));
  e2e_close(c);
  e2e_stop(d);
}

/* Off for the plugin: bad params reach its handler. */
static void test_off_per_plugin(void **state) {
  e2e_daemon_t *d = *state;
  start(d, NULL, "validate_params = no\n");
  e2e_conn_t *c = e2e_connect(d, E2E_UNIX_NL);
  e2e_send(c, REQ("fx.count", "[\"not an integer\",1,2]", "1"));
  e2e_expect(c, RES("1", "1"));
  e2e_send(c, REQ("fx.count", "{}", "2"));
  e2e_expect(c, RES("2", "2"));
  /* The other plugins still check. */
  e2e_send(c, REQ("math.add", "[1]", "3"));
  e2e_expect(c, INVALID("{\"param\":\"b\",\"reason\":\"missing\"}", "3"));
  e2e_close(c);
  e2e_stop(d);
}

/* Off for the server, on again for one plugin. */
static void test_off_for_server(void **state) {
  e2e_daemon_t *d = *state;
  start(d, "validate_params = no\n", "validate_params = yes\n");
  e2e_conn_t *c = e2e_connect(d, E2E_UNIX_NL);
  e2e_send(c, REQ("fx.count", "[]", "1"));
  e2e_expect(c, INVALID("{\"param\":\"n\",\"reason\":\"missing\"}", "1"));
  /* math checks its own params (its message, not the validator's: an
   * unknown name is no error to math). */
  e2e_send(c, REQ("math.add", "{\"a\":1,\"b\":2,\"c\":3}", "2"));
  e2e_expect(c, RES("3", "2"));
  e2e_close(c);
  e2e_stop(d);
}

/* A description no check can be made from: the plugin does not load while
 * checking is on (strict_plugins = no: skipped, logged), and loads when
 * it is off. */
static void test_broken_description(void **state) {
  e2e_daemon_t *d = *state;
  start(d, "strict_plugins = no\n", "broken = yes\n");
  e2e_wait_log(d,
               "description of \"fx.count\": param \"n\": schema \"type\" "
               "names no JSON Schema type",
               1, E2E_REPLY_MS);
  e2e_conn_t *c = e2e_connect(d, E2E_UNIX_NL);
  e2e_send(c, REQ("fx.plain", "[]", "1"));
  e2e_expect(c, ERR("-32601", "Method not found", "1"));
  e2e_roundtrip(c, 2);
  e2e_close(c);
  e2e_stop(d);
  e2e_cleanup(d);
  memset(d, 0, sizeof(*d));
  start(d, NULL, "broken = yes\nvalidate_params = no\n");
  c = e2e_connect(d, E2E_UNIX_NL);
  e2e_send(c, REQ("fx.count", "[\"x\"]", "3"));
  e2e_expect(c, RES("1", "3"));
  e2e_close(c);
  e2e_stop(d);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test_setup_teardown(test_checked_by_default, e2e_setup,
                                      e2e_teardown),
      cmocka_unit_test_setup_teardown(test_off_per_plugin, e2e_setup,
                                      e2e_teardown),
      cmocka_unit_test_setup_teardown(test_off_for_server, e2e_setup,
                                      e2e_teardown),
      cmocka_unit_test_setup_teardown(test_broken_description, e2e_setup,
                                      e2e_teardown),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
