/* test_cancel.c - deferred calls that end before their handler finishes
 * them (lib/async.c): timeouts, $/cancelRequest, the connection going,
 * shutdown; the cancel callback, jrpc_cancelled, and the handle's life
 * after it (a tomb until jrpc_finish). Every race the issue lists, on the
 * fixture of test_async (async_fx.h) with its fake clock: nothing waits.
 * Run under ASan, a handle used after it was freed shows here. */
#include "async_fx.h"
#include "module.h"

/* ------------------------------------------------------------------ */
/* Handlers and the cancel callback                                    */
/* ------------------------------------------------------------------ */

/* What the cancel callbacks saw. */
static struct {
  int calls;                /* callbacks run */
  jrpc_call_t *last;        /* the handle of the latest */
  int cancelled_seen;       /* jrpc_cancelled(d) inside it */
  int on_cancel_rc;         /* jrpc_on_cancel on d inside it */
  int finish_rc;            /* jrpc_finish inside it (finishing ones) */
  jrpc_call_t *also_finish; /* another call the callback finishes */
} cb;

static void on_cancel_count(jrpc_call_t *d, void *arg) {
  (void)arg;
  cb.calls++;
  cb.last = d;
  cb.cancelled_seen = jrpc_cancelled(d);
  cb.on_cancel_rc = jrpc_on_cancel(d, on_cancel_count, NULL);
  if (cb.also_finish) {
    jrpc_call_t *other = cb.also_finish;
    cb.also_finish = NULL;
    jrpc_w_i64(other, 1);
    jrpc_finish(other);
  }
}

/* Like sleep's: the callback is the handler's last word on d. */
static void on_cancel_finish(jrpc_call_t *d, void *arg) {
  fx_t *f = arg;
  cb.calls++;
  cb.last = d;
  cb.finish_rc = jrpc_finish(d);
  for (size_t i = 0; i < f->nst; i++)
    if (f->st[i].d == d)
      f->st[i].d = NULL;
}

/* Defers (stashing the handle, as "later") with cancel callback fn. */
static int later_with(jrpc_call_t *c, jrpc_val_t params, fx_t *f,
                      jrpc_cancel_fn fn) {
  size_t before = f->nst;
  int rc = h_later(c, params, f);
  if (f->nst > before)
    assert_int_equal(jrpc_on_cancel(f->st[before].d, fn, f), 0);
  return rc;
}

/* With a counting callback, and with one that finishes the call. */
static int h_cxl(jrpc_call_t *c, jrpc_val_t params, void *udata) {
  return later_with(c, params, udata, on_cancel_count);
}
static int h_cxl_fin(jrpc_call_t *c, jrpc_val_t params, void *udata) {
  return later_with(c, params, udata, on_cancel_finish);
}

/* Synchronous: finishes every stashed call; answers how many said
 * JRPC_ECANCELED. */
static int h_finish_all(jrpc_call_t *c, jrpc_val_t params, void *udata) {
  fx_t *f = udata;
  int64_t k = 0;
  for (size_t i = 0; i < f->nst; i++)
    if (f->st[i].d) {
      k += jrpc_finish(f->st[i].d) == JRPC_ECANCELED;
      f->st[i].d = NULL;
    }
  return jrpc_w_i64(c, k);
}

/* Synchronous: what the cancellation calls say of a call not deferred. */
static int h_sync_probe(jrpc_call_t *c, jrpc_val_t params, void *udata) {
  jrpc_w_arr(c);
  jrpc_w_i64(c, jrpc_on_cancel(c, on_cancel_count, NULL));
  jrpc_w_i64(c, jrpc_cancelled(c));
  return jrpc_w_arr_end(c);
}

/* Gives method `name` a description with this timeout member (the text
 * after "x-jrpcd-timeout-ms":); returns what jrpc_describe said. */
static int describe_timeout(fx_t *f, const char *name, const char *value) {
  char json[128];
  snprintf(json, sizeof(json), "{\"params\":[],\"x-jrpcd-timeout-ms\":%s}",
           value);
  jrpc__regctx_t ctx;
  jrpc__regctx_init(&ctx, &f->reg, NULL, NULL);
  return jrpc__describe(&ctx, name, json);
}

static int setup_cancel(void **state) {
  int rc = setup(state);
  fx_t *f = *state;
  memset(&cb, 0, sizeof(cb));
  add(f, "cxl", h_cxl);
  add(f, "cxl_fin", h_cxl_fin);
  add(f, "sync_probe", h_sync_probe);
  add(f, "finish_all", h_finish_all);
  /* Deadlines, from descriptions: slow 50 ms, slower 100 ms. */
  add(f, "slow", h_cxl);
  add(f, "slower", h_cxl);
  add(f, "slow_fin", h_cxl_fin);
  assert_int_equal(describe_timeout(f, "slow", "50"), 0);
  assert_int_equal(describe_timeout(f, "slower", "100"), 0);
  assert_int_equal(describe_timeout(f, "slow_fin", "50"), 0);
  return rc;
}

#define CANCEL(id) NOTE("$/cancelRequest", "{\"id\":" id "}")
#define TIMED_OUT(ms, id)                                                      \
  ERRD(-32004, "Timed out", "{\"timeout_ms\":" #ms "}", id)
#define CANCELLED(id) ERR(-32800, "Request cancelled", id)

/* The stashed call i ended early: jrpc_finish releases it, says so, and
 * sends nothing. */
static void finish_tomb(fx_t *f, size_t i) {
  jrpc_call_t *d = f->st[i].d;
  assert_non_null(d);
  assert_int_equal(jrpc_cancelled(d), 1);
  assert_int_equal(jrpc_w_i64(d, 5), JRPC_EINVAL);
  assert_int_equal(jrpc_finish(d), JRPC_ECANCELED);
  f->st[i].d = NULL;
  EXPECT_NONE(f);
}

/* ------------------------------------------------------------------ */
/* Timeouts                                                            */
/* ------------------------------------------------------------------ */

/* Timeout, then the handler finishes: one -32004, the callback once, the
 * finish harmless. */
static void test_timeout_then_finish(void **state) {
  fx_t *f = *state;
  start(f, NULL, HOST_FULL, JRPC_FRAMING_NEWLINE);
  SEND(f, REQ("slow", "[1]", "1"));
  EXPECT_NONE(f);
  assert_int_equal(f->h.arms, 1);
  assert_int_equal(f->h.armed, f->h.now + 50);
  assert_int_equal(jrpc_cancelled(f->st[0].d), 0);
  tick(f, 49);
  EXPECT_NONE(f);
  assert_int_equal(cb.calls, 0);
  tick(f, 1);
  EXPECT_EXACT(f, TIMED_OUT(50, "1"));
  assert_int_equal(cb.calls, 1);
  assert_ptr_equal(cb.last, f->st[0].d);
  assert_int_equal(cb.cancelled_seen, 1);
  assert_int_equal(cb.on_cancel_rc, JRPC_ECANCELED);
  assert_int_equal(jrpc__async_live(&f->e), 0);
  assert_int_equal(f->s.sink.calls, 0);
  /* Still holding its module until the handler lets go. */
  assert_int_equal(f->h.hold_plus, 1);
  assert_int_equal(f->h.hold_minus, 0);
  tick(f, 1000);
  EXPECT_NONE(f);
  finish_tomb(f, 0);
  assert_int_equal(cb.calls, 1);
  finish_test(f);
}

/* Finished in time: no timeout later, and the deadline is gone. */
static void test_finish_before_timeout(void **state) {
  fx_t *f = *state;
  start(f, NULL, HOST_FULL, JRPC_FRAMING_LENGTH);
  SEND(f, REQ("slow", "[1]", "1"));
  tick(f, 49);
  finish_echo(f, 0);
  EXPECT_EXACT(f, RES("[1]", "1"));
  tick(f, 100);
  EXPECT_NONE(f);
  assert_int_equal(cb.calls, 0);
  finish_test(f);
}

/* Deadlines fire in their order, whatever the order of the calls; calls
 * without a timeout never fire; a synchronous call arms nothing. */
static void test_timeout_order(void **state) {
  fx_t *f = *state;
  start(f, NULL, HOST_FULL, JRPC_FRAMING_NEWLINE);
  SEND(f, REQ("add", "[1,2]", "0"));
  EXPECT_EXACT(f, RES("3", "0"));
  assert_int_equal(f->h.arms, 0);
  SEND(f, REQ("slower", "[1]", "1"), REQ("cxl", "[2]", "2"));
  tick(f, 10);
  SEND(f, REQ("slow", "[3]", "3"), REQ("slower", "[4]", "4"));
  /* 1 is due at 100, 3 at 60: the timer moved to the earlier one. */
  assert_int_equal(f->h.armed, 1000 + 60);
  tick(f, 50);
  EXPECT_EXACT(f, TIMED_OUT(50, "3"));
  assert_int_equal(f->h.armed, 1000 + 100);
  tick(f, 40);
  EXPECT_EXACT(f, TIMED_OUT(100, "1"));
  tick(f, 10);
  EXPECT_EXACT(f, TIMED_OUT(100, "4"));
  assert_int_equal(f->h.armed, 0);
  tick(f, 100000);
  EXPECT_NONE(f);
  assert_int_equal(cb.calls, 3);
  finish_echo(f, 1);
  EXPECT_EXACT(f, RES("[2]", "2"));
  finish_tomb(f, 0);
  finish_tomb(f, 2);
  finish_tomb(f, 3);
  finish_test(f);
}

/* A timeout inside a batch answers that call's element; the array goes
 * when the last call ends. */
static void test_timeout_in_batch(void **state) {
  fx_t *f = *state;
  start(f, NULL, HOST_FULL, JRPC_FRAMING_NEWLINE);
  SEND(f, "[" REQ("slow", "[1]", "1") "," REQ("add", "[1,2]", "2") "," REQ(
              "cxl", "[3]", "3") "]");
  tick(f, 50);
  EXPECT_NONE(f);
  finish_echo(f, 1);
  EXPECT_JSON(f,
              "[" TIMED_OUT(50, "1") "," RES("3", "2") "," RES("[3]", "3") "]");
  finish_tomb(f, 0);
  finish_test(f);
}

/* x-jrpcd-timeout-ms must be a whole number of ms that fits 32 bits. */
static void test_timeout_description(void **state) {
  fx_t *f = *state;
  static const char *const bad[] = {"-1",   "1.5",        "1e3", "\"50\"",
                                    "null", "4294967296", "[]",  "true"};
  for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
    if (describe_timeout(f, "cxl", bad[i]) != JRPC_EINVAL)
      fail_msg("\"x-jrpcd-timeout-ms\":%s accepted", bad[i]);
  assert_int_equal(describe_timeout(f, "cxl", "4294967295"), 0);
  const jrpc__method_t *m = jrpc__registry_find(&f->reg, "cxl", 3);
  assert_int_equal(m->timeout_ms, 4294967295u);
  assert_int_equal(m->timeout_own, 1);
  assert_int_equal(describe_timeout(f, "cxl", "0"), 0);
  assert_int_equal(m->timeout_ms, 0);
}

/* ------------------------------------------------------------------ */
/* $/cancelRequest                                                     */
/* ------------------------------------------------------------------ */

/* While deferred: -32800 at once, the callback, the finish harmless. */
static void cancel_while_deferred(void **state, jrpc__framing_t framing) {
  fx_t *f = *state;
  start(f, NULL, HOST_FULL, framing);
  SEND(f, REQ("cxl", "[1]", "\"a\""), REQ("cxl", "[2]", "7"));
  SEND(f, CANCEL("7"));
  EXPECT_EXACT(f, CANCELLED("7"));
  assert_int_equal(cb.calls, 1);
  assert_ptr_equal(cb.last, f->st[1].d);
  assert_int_equal(jrpc__async_live(&f->e), 1);
  assert_int_equal(f->s.sink.calls, 1);
  /* A second cancel of it, an unknown id, a string id by its bytes. */
  SEND(f, CANCEL("7"), CANCEL("8"), CANCEL("\"b\""));
  EXPECT_NONE(f);
  assert_int_equal(cb.calls, 1);
  SEND(f, CANCEL("\"a\""));
  EXPECT_EXACT(f, CANCELLED("\"a\""));
  finish_tomb(f, 1);
  finish_tomb(f, 0);
  assert_int_equal(cb.calls, 2);
  finish_test(f);
}
static void test_cancel_while_deferred_newline(void **state) {
  cancel_while_deferred(state, JRPC_FRAMING_NEWLINE);
}
static void test_cancel_while_deferred_length(void **state) {
  cancel_while_deferred(state, JRPC_FRAMING_LENGTH);
}

/* Before the handler defers: the cancel finds nothing and is forgotten;
 * the call runs and answers as usual. */
static void test_cancel_before_defer(void **state) {
  fx_t *f = *state;
  start(f, NULL, HOST_FULL, JRPC_FRAMING_NEWLINE);
  SEND(f, "[" CANCEL("1") "," REQ("cxl", "[1]", "1") "]");
  SEND(f, CANCEL("2"), REQ("cxl", "[2]", "2"));
  EXPECT_NONE(f);
  finish_echo(f, 0);
  finish_echo(f, 1);
  EXPECT_EXACT(f, "[" RES("[1]", "1") "]", RES("[2]", "2"));
  assert_int_equal(cb.calls, 0);
  finish_test(f);
}

/* After finish: nothing more is sent, nothing runs. Also a call finished
 * during its own frame, before that frame's cancel. */
static void test_cancel_after_finish(void **state) {
  fx_t *f = *state;
  start(f, NULL, HOST_FULL, JRPC_FRAMING_NEWLINE);
  SEND(f, REQ("cxl", "[1]", "1"));
  finish_echo(f, 0);
  EXPECT_EXACT(f, RES("[1]", "1"));
  SEND(f, CANCEL("1"));
  EXPECT_NONE(f);
  SEND(f, "[" REQ("now", "[2]", "2") "," CANCEL("2") "]");
  EXPECT_EXACT(f, "[" RES("[2]", "2") "]");
  assert_int_equal(f->now_rc, 0);
  assert_int_equal(cb.calls, 0);
  finish_test(f);
}

/* Inside a batch: the element is -32800, from a later frame or from the
 * same batch; the callback that finishes the call itself is safe. */
static void test_cancel_in_batch(void **state) {
  fx_t *f = *state;
  start(f, NULL, HOST_FULL, JRPC_FRAMING_LENGTH);
  SEND(f, "[" REQ("cxl", "[1]", "1") "," REQ("add", "[1,2]", "2") "," REQ(
              "cxl_fin", "[3]", "3") "]");
  SEND(f, CANCEL("1"));
  EXPECT_NONE(f);
  SEND(f, CANCEL("3"));
  EXPECT_JSON(f, "[" CANCELLED("1") "," RES("3", "2") "," CANCELLED("3") "]");
  assert_int_equal(cb.calls, 2);
  assert_int_equal(cb.finish_rc, JRPC_ECANCELED);
  finish_tomb(f, 0);
  SEND(f, "[" REQ("cxl_fin", "[4]", "4") "," CANCEL("4") "," REQ("add", "[2,2]",
                                                                 "5") "]");
  EXPECT_JSON(f, "[" CANCELLED("4") "," RES("4", "5") "]");
  assert_int_equal(cb.calls, 3);
  finish_test(f);
}

/* Cancelled, then its deadline passes: nothing more. Timed out, then
 * cancelled: nothing more. */
static void test_cancel_then_timeout(void **state) {
  fx_t *f = *state;
  start(f, NULL, HOST_FULL, JRPC_FRAMING_NEWLINE);
  SEND(f, REQ("slow", "[1]", "1"), REQ("slower", "[2]", "2"));
  SEND(f, CANCEL("1"));
  EXPECT_EXACT(f, CANCELLED("1"));
  tick(f, 50);
  EXPECT_NONE(f);
  tick(f, 50);
  EXPECT_EXACT(f, TIMED_OUT(100, "2"));
  SEND(f, CANCEL("2"));
  EXPECT_NONE(f);
  assert_int_equal(cb.calls, 2);
  finish_tomb(f, 0);
  finish_tomb(f, 1);
  finish_test(f);
}

/* ------------------------------------------------------------------ */
/* The connection goes; shutdown; the API on other handles             */
/* ------------------------------------------------------------------ */

/* In the middle of a batch with deferred calls, with single calls and a
 * notification besides: every unfinished call is cancelled at once, its
 * reply buffer freed, nothing sent; a callback finishing another call of
 * the connection meanwhile is safe. */
static void test_gone_mid_batch(void **state) {
  fx_t *f = *state;
  start(f, NULL, HOST_FULL, JRPC_FRAMING_NEWLINE);
  SEND(f,
       "[" REQ("cxl", "[1]", "1") "," REQ("add", "[1,2]", "2") "," REQ(
           "slow_fin", "[3]", "3") "," REQ("cxl", "[4]", "4") "]",
       REQ("cxl", "[5]", "5"), NOTE("cxl", "[6]"), REQ("later", "[7]", "7"));
  EXPECT_NONE(f);
  assert_int_equal(f->nst, 6);
  finish_echo(f, 2); /* one element of the batch is done */
  EXPECT_NONE(f);
  /* Whichever callback runs first finishes the plain "later" call 7. */
  cb.also_finish = f->st[5].d;
  f->st[5].d = NULL;
  stream_gone(f);
  assert_int_equal(jrpc__async_live(&f->e), 0);
  assert_int_equal(cb.calls, 4); /* 1, 3 (finishing itself), 5, 6 */
  assert_null(cb.also_finish);
  assert_int_equal(f->h.outputs, 0);
  /* Its deadline went with it. */
  tick(f, 1000);
  finish_tomb(f, 0);
  finish_tomb(f, 3);
  finish_tomb(f, 4);
  assert_int_equal(f->h.outputs, 0);
  finish_test(f);
}

/* Shutdown runs the callbacks too; those handles stay valid. */
static void test_shutdown_runs_callbacks(void **state) {
  fx_t *f = *state;
  start(f, NULL, HOST_FULL, JRPC_FRAMING_NEWLINE);
  SEND(f, REQ("cxl", "[1]", "1"), REQ("slow_fin", "[2]", "2"));
  jrpc__async_cancel_all(&f->e);
  EXPECT_EXACT(f, ERR(-32007, "Shutting down", "1"),
               ERR(-32007, "Shutting down", "2"));
  assert_int_equal(cb.calls, 2);
  assert_int_equal(jrpc_cancelled(f->st[0].d), 1);
  assert_int_equal(jrpc_finish(f->st[0].d), JRPC_ECANCELED);
  assert_int_equal(jrpc_finish(f->st[0].d), JRPC_ECANCELED);
  f->st[0].d = NULL;
  tick(f, 1000);
  EXPECT_NONE(f);
  finish_test(f);
}

static int post_rc;
static void post_finish(jrpc_call_t *d, void *arg) {
  (void)arg;
  post_rc = jrpc_finish(d);
}

static void test_api_on_other_handles(void **state) {
  fx_t *f = *state;
  start(f, NULL, HOST_FULL, JRPC_FRAMING_NEWLINE);
  SEND(f, REQ("sync_probe", "[]", "1"));
  EXPECT_EXACT(f, RES("[-22,0]", "1"));
  /* A cancelled call takes no new callback; post still works on it, and
   * a finish from the posted function releases it. */
  SEND(f, REQ("later", "[2]", "2"));
  SEND(f, CANCEL("2"));
  EXPECT_EXACT(f, CANCELLED("2"));
  assert_int_equal(jrpc_on_cancel(f->st[0].d, on_cancel_count, NULL),
                   JRPC_ECANCELED);
  assert_int_equal(jrpc_post(f->st[0].d, post_finish, NULL), 0);
  assert_int_equal(drain(f), 1);
  assert_int_equal(post_rc, JRPC_ECANCELED);
  EXPECT_NONE(f);
  f->st[0].d = NULL;
  /* Cancelled in its own batch, then finished by a later call of it. */
  SEND(f, "[" REQ("later", "[3]", "3") "," CANCEL("3") "," REQ("finish_all",
                                                               "[]", "4") "]");
  EXPECT_JSON(f, "[" CANCELLED("3") "," RES("1", "4") "]");
  assert_int_equal(cb.calls, 0);
  finish_test(f);
}

/* ABI 1.3 appended to the table: modules built for 1.0 to 1.2 still load
 * (the host checks their minor, not its own), a newer minor does not. */
static int fx_init(jrpc_reg_t *r, void **mod_data) {
  (void)r;
  (void)mod_data;
  return 0;
}
static void test_older_minor_loads(void **state) {
  (void)state;
  assert_int_equal(JRPC_ABI_MINOR, 5);
  char err[256];
  for (uint16_t minor = 0; minor <= JRPC_ABI_MINOR + 1; minor++) {
    jrpc_module_info_t info = {JRPC_MODULE_MAGIC,
                               JRPC_ABI_MAJOR,
                               minor,
                               sizeof(info),
                               JRPC_BUILD_SIGNATURE,
                               "fx",
                               "1.0",
                               fx_init,
                               NULL};
    int rc = jrpc__module_check(&info, "fx.so", err, sizeof(err));
    if (minor <= JRPC_ABI_MINOR)
      assert_int_equal(rc, 0);
    else
      assert_int_equal(rc, JRPC_EINVAL);
  }
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test_setup_teardown(test_timeout_then_finish, setup_cancel,
                                      teardown),
      cmocka_unit_test_setup_teardown(test_finish_before_timeout, setup_cancel,
                                      teardown),
      cmocka_unit_test_setup_teardown(test_timeout_order, setup_cancel,
                                      teardown),
      cmocka_unit_test_setup_teardown(test_timeout_in_batch, setup_cancel,
                                      teardown),
      cmocka_unit_test_setup_teardown(test_timeout_description, setup_cancel,
                                      teardown),
      cmocka_unit_test_setup_teardown(test_cancel_while_deferred_newline,
                                      setup_cancel, teardown),
      cmocka_unit_test_setup_teardown(test_cancel_while_deferred_length,
                                      setup_cancel, teardown),
      cmocka_unit_test_setup_teardown(test_cancel_before_defer, setup_cancel,
                                      teardown),
      cmocka_unit_test_setup_teardown(test_cancel_after_finish, setup_cancel,
                                      teardown),
      cmocka_unit_test_setup_teardown(test_cancel_in_batch, setup_cancel,
                                      teardown),
      cmocka_unit_test_setup_teardown(test_cancel_then_timeout, setup_cancel,
                                      teardown),
      cmocka_unit_test_setup_teardown(test_gone_mid_batch, setup_cancel,
                                      teardown),
      cmocka_unit_test_setup_teardown(test_shutdown_runs_callbacks,
                                      setup_cancel, teardown),
      cmocka_unit_test_setup_teardown(test_api_on_other_handles, setup_cancel,
                                      teardown),
      cmocka_unit_test(test_older_minor_loads),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
