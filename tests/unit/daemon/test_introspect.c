/* test_introspect.c - daemon/introspect.h, what rpc.stats and /metrics
 * show a connection: a method its view hides or denies is not shown, nor
 * a slow call known only by a name cut to fit (which may be the start of
 * a hidden method's name that a shown method happens to have whole), nor
 * a peer other than the caller's own; a caller without a known identity
 * owns no peer; stats = full shows everything. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <string.h>
#include <sys/socket.h>

#include "introspect.h"
#include "testutil.h"

/* Served methods run tu_handler_a; what admit.c points a denied slot at
 * is any other handler (tu_handler_b). */

#define CUT (sizeof(((jrpcd_slow_entry_t *)0)->method) - 1)

typedef struct fixture {
  jrpc__registry_t all, view;
  char long_name[CUT + 20]; /* hidden; its first CUT bytes are short_name */
  char short_name[CUT + 1]; /* served */
  jrpcd_listener_t l;
  jrpcd_conn_t conn;
} fixture_t;

static uint32_t slot_of(const jrpc__registry_t *r, const char *name) {
  const jrpc__method_t *m = jrpc__registry_find(r, name, strlen(name));
  assert_non_null(m);
  return m->slot;
}

static void set_fn(fixture_t *f, const char *name, jrpc_handler_fn fn) {
  f->view.slots[slot_of(&f->all, name)].fn = fn;
}

/* The registries, once for the group; the tests change only the listener
 * and the connection (fresh_conn). */
static int setup(void **state) {
  static fixture_t f;
  memset(&f, 0, sizeof(f));
  memset(f.long_name, 'x', sizeof(f.long_name) - 1);
  memcpy(f.short_name, f.long_name, CUT);
  assert_int_equal(jrpc__registry_init(&f.all), 0);
  const char *names[] = {"math.add", "math.divide", "admin.drop", f.long_name,
                         f.short_name};
  for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++)
    assert_int_equal(
        jrpc__registry_add(&f.all, names[i], tu_handler_a, NULL, &f, NULL), 0);
  assert_int_equal(jrpc__registry_view_init(&f.view, &f.all), 0);
  set_fn(&f, "admin.drop", NULL);          /* hidden: the listener's methods */
  set_fn(&f, f.long_name, NULL);           /* hidden */
  set_fn(&f, "math.divide", tu_handler_b); /* denied: [access] */
  *state = &f;
  return 0;
}

/* Before each test: a listener with stats = listener, and a connection on
 * it from 127.0.0.1:5000. */
static int fresh_conn(void **state) {
  fixture_t *f = *state;
  memset(&f->l, 0, sizeof(f->l));
  memset(&f->conn, 0, sizeof(f->conn));
  f->l.stats = JRPCD_STATS_LISTENER;
  f->conn.l = &f->l;
  f->conn.st.peer.family = AF_INET;
  f->conn.st.peer.uid = f->conn.st.peer.gid = f->conn.st.peer.pid = -1;
  strcpy(f->conn.st.peer.addr, "127.0.0.1");
  f->conn.st.peer.port = 5000;
  return 0;
}

static int teardown(void **state) {
  fixture_t *f = *state;
  jrpc__registry_view_free(&f->view);
  jrpc__registry_free(&f->all);
  return 0;
}

static int named(const jrpcd_scope_t *s, const char *name, int cut) {
  return jrpcd_scope_named(s, name, strlen(name), cut);
}

static void test_listener_scope(void **state) {
  fixture_t *f = *state;
  jrpcd_scope_t s;
  jrpcd_scope_init(&s, &f->conn, &f->all, &f->view);
  assert_true(jrpcd_scope_method(&s, slot_of(&f->all, "math.add")));
  assert_true(jrpcd_scope_method(&s, slot_of(&f->all, f->short_name)));
  assert_false(jrpcd_scope_method(&s, slot_of(&f->all, "math.divide")));
  assert_false(jrpcd_scope_method(&s, slot_of(&f->all, "admin.drop")));
  assert_false(jrpcd_scope_method(&s, slot_of(&f->all, f->long_name)));
  /* Empty slots are no methods. */
  for (uint32_t i = 0; i <= f->all.mask; i++)
    if (!f->all.slots[i].name)
      assert_false(jrpcd_scope_method(&s, i));
  /* Slow calls, by name. */
  assert_true(named(&s, "math.add", 0));
  assert_false(named(&s, "math.divide", 0));
  assert_false(named(&s, "admin.drop", 0));
  assert_false(named(&s, "gone.since.reload", 0));
  assert_true(named(&s, f->short_name, 0));
  /* The hidden long name, recorded cut to the served short one's text. */
  assert_false(named(&s, f->short_name, 1));
  /* Peers: the caller's own only. */
  assert_true(jrpcd_scope_peer(&s, "127.0.0.1:5000"));
  assert_false(jrpcd_scope_peer(&s, "127.0.0.1:5001"));
  assert_false(jrpcd_scope_peer(&s, "127.0.0.2:5000"));
  assert_false(jrpcd_scope_peer(&s, "pid 7 uid 0"));
}

/* The connection's registry is the generation's own (no methods, no
 * [access]): everything is served, so everything is shown. */
static void test_no_view(void **state) {
  fixture_t *f = *state;
  jrpcd_scope_t s;
  jrpcd_scope_init(&s, &f->conn, &f->all, &f->all);
  assert_true(jrpcd_scope_method(&s, slot_of(&f->all, "admin.drop")));
  assert_true(named(&s, "math.divide", 0));
  assert_false(named(&s, f->short_name, 1));
}

static void test_full_scope(void **state) {
  fixture_t *f = *state;
  f->l.stats = JRPCD_STATS_FULL;
  jrpcd_scope_t s;
  jrpcd_scope_init(&s, &f->conn, &f->all, &f->view);
  assert_true(jrpcd_scope_method(&s, slot_of(&f->all, "math.divide")));
  assert_true(jrpcd_scope_method(&s, slot_of(&f->all, "admin.drop")));
  assert_true(named(&s, f->short_name, 1));
  assert_true(jrpcd_scope_peer(&s, "pid 7 uid 0"));
  for (uint32_t i = 0; i <= f->all.mask; i++)
    if (!f->all.slots[i].name)
      assert_false(jrpcd_scope_method(&s, i));
}

/* A Unix peer whose credentials could not be read, or a TCP one without
 * an address, owns no peer text: not even one that reads the same. */
static void test_unknown_peer(void **state) {
  fixture_t *f = *state;
  jrpcd_scope_t s;
  jrpc_peer_t *p = &f->conn.st.peer;
  memset(p, 0, sizeof(*p));
  p->family = AF_UNIX;
  p->uid = p->gid = p->pid = -1;
  jrpcd_scope_init(&s, &f->conn, &f->all, &f->view);
  assert_false(jrpcd_scope_peer(&s, "pid -1 uid -1"));
  assert_false(jrpcd_scope_peer(&s, ""));
  p->family = 0;
  jrpcd_scope_init(&s, &f->conn, &f->all, &f->view);
  assert_false(jrpcd_scope_peer(&s, "in-process"));
  p->family = AF_UNIX;
  p->pid = 7;
  p->uid = 0;
  jrpcd_scope_init(&s, &f->conn, &f->all, &f->view);
  assert_true(jrpcd_scope_peer(&s, "pid 7 uid 0"));
  assert_false(jrpcd_scope_peer(&s, "pid 8 uid 0"));
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test_setup(test_listener_scope, fresh_conn),
      cmocka_unit_test_setup(test_no_view, fresh_conn),
      cmocka_unit_test_setup(test_full_scope, fresh_conn),
      cmocka_unit_test_setup(test_unknown_peer, fresh_conn),
  };
  return cmocka_run_group_tests(tests, setup, teardown);
}
