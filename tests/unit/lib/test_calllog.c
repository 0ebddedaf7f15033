/* test_calllog.c - the engine's per-call hook for the host's access log
 * (jrpc__engine_t.on_call, lib/dispatch.c and lib/async.c), in process:
 * every request object of a frame gives exactly one record, in order, with
 * its method, kind, the code it was answered with and the bytes of its
 * response object; a deferred call gives its record when it ends
 * (finished, or its connection gone: -32800 and nothing sent), never at
 * dispatch; a frame answered with one error and no call gives one record
 * without a method; the sink's origin comes back on each. Without the hook
 * nothing is recorded and the replies are byte for byte the same. */
#include "async_fx.h"

#define MAX_RECS 32

typedef struct rec {
  char method[64];
  int has_method;
  int code;
  uint64_t bytes;
  int notify;
  const void *origin;
  uint64_t start_ns, end_ns;
} rec_t;

static rec_t recs[MAX_RECS];
static int nrecs;
static const int origin_mark = 1, arg_mark = 2;

static void note(void *arg, const jrpc__call_done_t *d) {
  assert_ptr_equal(arg, &arg_mark);
  assert_true(nrecs < MAX_RECS);
  rec_t *r = &recs[nrecs++];
  memset(r, 0, sizeof(*r));
  r->has_method = d->method != NULL;
  if (d->method) {
    assert_true(d->method_n < sizeof(r->method));
    memcpy(r->method, d->method, d->method_n);
  }
  r->code = d->code;
  r->bytes = d->reply_bytes;
  r->notify = d->notify;
  r->origin = d->origin;
  r->start_ns = d->start_ns;
  r->end_ns = d->end_ns;
  assert_non_null(d->peer);
}

static void expect_rec(int i, const char *method, int code, size_t bytes,
                       int notify) {
  assert_true(i < nrecs);
  const rec_t *r = &recs[i];
  if (method) {
    assert_true(r->has_method);
    assert_string_equal(r->method, method);
  } else {
    assert_false(r->has_method);
  }
  assert_int_equal(r->code, code);
  assert_int_equal(r->bytes, bytes);
  assert_int_equal(r->notify, notify);
  assert_ptr_equal(r->origin, &origin_mark);
  assert_true(r->start_ns <= r->end_ns);
}

static void logged(fx_t *f) {
  start(f, NULL, HOST_FULL, JRPC_FRAMING_NEWLINE);
  f->s.sink.origin = &origin_mark;
  f->e.on_call = note;
  f->e.on_call_arg = (void *)&arg_mark;
  nrecs = 0;
}

#define BATCH                                                                  \
  "[" REQ("add", "[1,2]", "1") "," REQ("nope", "[]", "2") "," NOTE(            \
      "add", "[3,4]") ",{\"jsonrpc\":\"2.0\",\"id\":3}," REQ("add", "[1]",     \
                                                             "4") "]"
#define BATCH_REPLY                                                            \
  "[" RES("3", "1") "," ERR(-32601, "Method not found", "2") "," ERR(          \
      -32600, "Invalid Request", "3") "," ERR(-32602, "Invalid params",        \
                                              "4") "]"

static void test_batch(void **state) {
  fx_t *f = *state;
  logged(f);
  SEND(f, BATCH);
  EXPECT_EXACT(f, BATCH_REPLY);
  assert_int_equal(nrecs, 5);
  expect_rec(0, "add", 0, strlen(RES("3", "1")), 0);
  expect_rec(1, "nope", -32601, strlen(ERR(-32601, "Method not found", "2")),
             0);
  expect_rec(2, "add", 0, 0, 1);
  expect_rec(3, NULL, -32600, strlen(ERR(-32600, "Invalid Request", "3")), 0);
  expect_rec(4, "add", -32602, strlen(ERR(-32602, "Invalid params", "4")), 0);
  finish_test(f);
}

static void test_frame_errors(void **state) {
  fx_t *f = *state;
  logged(f);
  static const char parse[] = "{\"jsonrpc\":\"2.0\",\"error\":{\"code\":-32700,"
                              "\"message\":\"Parse error\"},\"id\":null}";
  SEND(f, "{nope");
  EXPECT_EXACT(f, parse);
  SEND(f, "[]");
  take_from(f, &f->s);
  assert_int_equal(nrecs, 2);
  expect_rec(0, NULL, -32700, strlen(parse), 0);
  expect_rec(1, NULL, -32600, f->out_n - 1, 0); /* less the newline */
  finish_test(f);
}

static void test_deferred(void **state) {
  fx_t *f = *state;
  logged(f);
  SEND(f, REQ("later", "[5]", "7"));
  EXPECT_NONE(f);
  assert_int_equal(nrecs, 0); /* not at dispatch: when it ends */
  finish_echo(f, 0);
  EXPECT_EXACT(f, RES("[5]", "7"));
  assert_int_equal(nrecs, 1);
  expect_rec(0, "later", 0, strlen(RES("[5]", "7")), 0);

  /* A deferred notification, and a call whose connection goes. */
  SEND(f, NOTE("later", "[]"), REQ("later", "[]", "8"));
  assert_int_equal(nrecs, 1);
  finish_echo(f, 1);
  assert_int_equal(nrecs, 2);
  expect_rec(1, "later", 0, 0, 1);
  stream_gone(f);
  assert_int_equal(nrecs, 3);
  assert_int_equal(recs[2].code, JRPC_REQUEST_CANCELLED);
  assert_int_equal(recs[2].bytes, 0);
  assert_int_equal(jrpc_finish(f->st[2].d), JRPC_ECANCELED);
  f->st[2].d = NULL;
  assert_int_equal(nrecs, 3);
  finish_test(f);
}

/* Without the hook: no record, and the same bytes. */
static void test_off(void **state) {
  fx_t *f = *state;
  start(f, NULL, HOST_FULL, JRPC_FRAMING_NEWLINE);
  nrecs = 0;
  SEND(f, BATCH);
  EXPECT_EXACT(f, BATCH_REPLY);
  SEND(f, REQ("later", "[5]", "7"));
  finish_echo(f, 0);
  EXPECT_EXACT(f, RES("[5]", "7"));
  assert_int_equal(nrecs, 0);
  finish_test(f);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test_setup_teardown(test_batch, setup, teardown),
      cmocka_unit_test_setup_teardown(test_frame_errors, setup, teardown),
      cmocka_unit_test_setup_teardown(test_deferred, setup, teardown),
      cmocka_unit_test_setup_teardown(test_off, setup, teardown),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
