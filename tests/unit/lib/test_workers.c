/* test_workers.c - per-worker module slots (jrpc_on_worker, ABI 1.3) in the
 * library: one init and exactly one fini per slot, whichever of worker
 * stop and module stop comes first, slots before the module's own fini;
 * jrpc_worker_data answering the calling engine's slot; a failing
 * per-worker init refusing the load with the worker named and everything
 * made so far undone; two instances side by side (a reload); modules of
 * ABI 1.2 loading as before. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "dispatch.h"
#include "module.h"
#include "testutil.h"

#define MAXW 8
#define MAXEV 64

/* What the module saw, in order: 'i' worker init, 'f' worker fini, 'F'
 * module fini; with the worker and the instance. */
typedef struct event {
  char kind;
  unsigned worker;
  int instance;
} event_t;

static event_t events[MAXEV];
static size_t nevents;
static int instances;

typedef struct inst {
  int id;
  int fail_worker; /* -1: none */
  int try_register;
  int register_rc; /* what jrpc_register returned inside a worker init */
} inst_t;

typedef struct slot {
  inst_t *in;
  unsigned worker;
  int calls;
} slot_t;

static void record(char kind, unsigned worker, int instance) {
  assert_true(nevents < MAXEV);
  events[nevents++] = (event_t){kind, worker, instance};
}

static size_t count(char kind, unsigned worker, int instance) {
  size_t n = 0;
  for (size_t i = 0; i < nevents; i++)
    n += events[i].kind == kind && events[i].worker == worker &&
         events[i].instance == instance;
  return n;
}

/* w.slot -> [instance, worker, calls on that slot so far], or null. */
static int h_slot(jrpc_call_t *c, jrpc_val_t params, void *udata) {
  slot_t *s = jrpc_worker_data(c);
  if (!s)
    return jrpc_w_null(c);
  s->calls++;
  jrpc_w_arr(c);
  jrpc_w_i64(c, s->in->id);
  jrpc_w_u64(c, s->worker);
  jrpc_w_i64(c, s->calls);
  return jrpc_w_arr_end(c);
}

static int h_noop(jrpc_call_t *c, jrpc_val_t params, void *udata) {
  return 0;
}

static int w_init(jrpc_reg_t *r, void *mod_data, unsigned worker, void **slot) {
  inst_t *in = mod_data;
  if (in->try_register)
    in->register_rc = jrpc_register(r, "w.late", h_noop, NULL);
  if ((int)worker == in->fail_worker)
    return jrpc_init_error(r, "no connection");
  slot_t *s = calloc(1, sizeof(*s));
  if (!s)
    return JRPC_ENOMEM;
  s->in = in;
  s->worker = worker;
  *slot = s;
  record('i', worker, in->id);
  return 0;
}

static void w_fini(void *mod_data, unsigned worker, void *slot) {
  inst_t *in = mod_data;
  slot_t *s = slot;
  assert_non_null(s);
  assert_ptr_equal(s->in, in); /* the slot its init made, with mod_data */
  assert_int_equal(s->worker, worker);
  record('f', worker, in->id);
  free(s);
}

static int m_init(jrpc_reg_t *r, void **mod_data) {
  inst_t *in = calloc(1, sizeof(*in));
  if (!in)
    return JRPC_ENOMEM;
  in->id = ++instances;
  const char *fw = jrpc_conf_get(r, "fail_worker");
  in->fail_worker = fw ? atoi(fw) : -1;
  in->try_register = jrpc_conf_get(r, "try_register") != NULL;
  *mod_data = in;
  int rc = jrpc_register(r, "w.slot", h_slot, NULL);
  if (!rc)
    rc = jrpc_on_worker(r, w_init, w_fini);
  return rc;
}

static void m_fini(void *mod_data) {
  inst_t *in = mod_data;
  record('F', 0, in->id);
  free(in);
}

static const jrpc_module_info_t wmod = {JRPC_MODULE_MAGIC,
                                        JRPC_ABI_MAJOR,
                                        JRPC_ABI_MINOR,
                                        sizeof(wmod),
                                        JRPC_BUILD_SIGNATURE,
                                        "wmod",
                                        "1.0",
                                        m_init,
                                        m_fini};

/* A module built against ABI 1.2: it knows nothing of slots. */
static int old_init(jrpc_reg_t *r, void **mod_data) {
  return jrpc_register(r, "w.slot", h_slot, NULL);
}
static const jrpc_module_info_t oldmod = {JRPC_MODULE_MAGIC,
                                          JRPC_ABI_MAJOR,
                                          2,
                                          sizeof(oldmod),
                                          JRPC_BUILD_SIGNATURE,
                                          "old",
                                          "1.0",
                                          old_init,
                                          NULL};

static int setup(void **state) {
  nevents = 0;
  instances = 0;
  return tu_setup(state);
}

/* The reply of w.slot on worker k's engine. */
static void call_on(tu_fixture *f, unsigned k, const char *expected) {
  char out[256];
  f->eng.worker = k;
  size_t n = tu_calls(f, "{\"jsonrpc\":\"2.0\",\"method\":\"w.slot\",\"id\":1}",
                      out, sizeof(out));
  char want[128];
  snprintf(want, sizeof(want), "{\"jsonrpc\":\"2.0\",\"result\":%s,\"id\":1}",
           expected);
  tu_assert_json(out, n, want);
}

/* Starts wmod over reg with nworkers slots; err gets the message. */
static int start(jrpc__module_t *m, jrpc__registry_t *reg,
                 const char *const *conf, unsigned nworkers, char *err) {
  return jrpc__module_start_workers(m, &wmod, "wmod.so", reg, conf, nworkers,
                                    err, 256);
}

static void test_slot_per_worker(void **state) {
  tu_fixture *f = *state;
  jrpc__module_t m;
  char err[256];
  assert_int_equal(start(&m, &f->reg, NULL, 3, err), 0);
  for (unsigned k = 0; k < 3; k++)
    assert_int_equal(count('i', k, 1), 1);
  assert_int_equal(nevents, 3);
  call_on(f, 0, "[1,0,1]");
  call_on(f, 2, "[1,2,1]");
  call_on(f, 0, "[1,0,2]"); /* worker 0's own counter, not worker 2's */
  call_on(f, 1, "[1,1,1]");
  call_on(f, 3, "null"); /* no such worker */
  /* Worker 1 is done: its slot goes, once, and its calls see none. */
  jrpc__module_worker_stop(&m, 1);
  jrpc__module_worker_stop(&m, 1);
  assert_int_equal(count('f', 1, 1), 1);
  call_on(f, 1, "null");
  call_on(f, 2, "[1,2,2]");
  jrpc__module_stop(&m);
  for (unsigned k = 0; k < 3; k++)
    assert_int_equal(count('f', k, 1), 1);
  assert_int_equal(count('F', 0, 1), 1);
  /* Last worker first, and the module's fini after every slot's. */
  assert_int_equal(nevents, 7);
  assert_int_equal(events[4].kind, 'f');
  assert_int_equal(events[4].worker, 2);
  assert_int_equal(events[5].worker, 0);
  assert_int_equal(events[6].kind, 'F');
}

/* A reload: a second instance of the same module beside the first, each
 * with its own slots, the first unloaded while the second serves. */
static void test_two_instances(void **state) {
  tu_fixture *f = *state;
  jrpc__registry_t reg2;
  assert_int_equal(jrpc__registry_init(&reg2), 0);
  jrpc__module_t a, b;
  char err[256];
  assert_int_equal(start(&a, &f->reg, NULL, 2, err), 0);
  assert_int_equal(start(&b, &reg2, NULL, 2, err), 0);
  call_on(f, 1, "[1,1,1]");
  const jrpc__registry_t *old = f->eng.reg;
  f->eng.reg = &reg2;
  call_on(f, 1, "[2,1,1]");
  call_on(f, 1, "[2,1,2]");
  jrpc__module_worker_stop(&a, 0);
  jrpc__module_worker_stop(&a, 1);
  jrpc__module_stop(&a);
  assert_int_equal(count('F', 0, 1), 1);
  assert_int_equal(count('f', 0, 2) + count('f', 1, 2) + count('F', 0, 2), 0);
  call_on(f, 0, "[2,0,1]");
  jrpc__module_stop(&b);
  for (int in = 1; in <= 2; in++)
    for (unsigned k = 0; k < 2; k++) {
      assert_int_equal(count('i', k, in), 1);
      assert_int_equal(count('f', k, in), 1);
    }
  f->eng.reg = old;
  jrpc__registry_free(&reg2);
}

static void test_worker_init_fails(void **state) {
  tu_fixture *f = *state;
  const char *const conf[] = {"fail_worker", "2", NULL};
  jrpc__module_t m;
  char err[256];
  assert_int_not_equal(start(&m, &f->reg, conf, 4, err), 0);
  assert_string_equal(
      err, "wmod.so: worker 2: per-worker init failed: no connection");
  /* The two slots made are finalised, the module's fini ran, nothing of
   * it stays registered. */
  assert_int_equal(count('f', 0, 1), 1);
  assert_int_equal(count('f', 1, 1), 1);
  assert_int_equal(count('i', 2, 1) + count('i', 3, 1), 0);
  assert_int_equal(count('F', 0, 1), 1);
  assert_null(jrpc__registry_find(&f->reg, "w.slot", 6));
}

static void test_no_registering_per_worker(void **state) {
  tu_fixture *f = *state;
  const char *const conf[] = {"try_register", "yes", NULL};
  jrpc__module_t m;
  char err[256];
  assert_int_equal(start(&m, &f->reg, conf, 1, err), 0);
  const inst_t *in = m.data;
  assert_int_equal(in->register_rc, JRPC_EINVAL);
  assert_null(jrpc__registry_find(&f->reg, "w.late", 6));
  jrpc__module_stop(&m);
  assert_int_equal(count('f', 0, 1), 1);
}

/* A host with one thread: one slot, worker 0; a 1.2 module: none. */
static void test_one_thread_and_old_abi(void **state) {
  tu_fixture *f = *state;
  jrpc__module_t m;
  char err[256];
  assert_int_equal(
      jrpc__module_start(&m, &wmod, "wmod.so", &f->reg, NULL, err, sizeof(err)),
      0);
  assert_int_equal(m.nworkers, 1);
  call_on(f, 0, "[1,0,1]");
  jrpc__module_stop(&m);
  assert_int_equal(count('f', 0, 1), 1);
  jrpc__registry_remove_owner(&f->reg, &m);

  jrpc__module_t old;
  assert_int_equal(jrpc__module_start(&old, &oldmod, "old.so", &f->reg, NULL,
                                      err, sizeof(err)),
                   0);
  call_on(f, 0, "null");
  jrpc__module_stop(&old);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test_setup_teardown(test_slot_per_worker, setup, tu_teardown),
      cmocka_unit_test_setup_teardown(test_two_instances, setup, tu_teardown),
      cmocka_unit_test_setup_teardown(test_worker_init_fails, setup,
                                      tu_teardown),
      cmocka_unit_test_setup_teardown(test_no_registering_per_worker, setup,
                                      tu_teardown),
      cmocka_unit_test_setup_teardown(test_one_thread_and_old_abi, setup,
                                      tu_teardown),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
