/* test_async.c - the deferred-call layer (lib/async.c), in process.
 *
 * Handlers registered here defer their calls through jrpc_defer and stash
 * the handles; the test later writes a result or an error through a handle
 * and calls jrpc_finish. The engine runs against a fake host: post()
 * appends to a queue the test drains on its own thread (also after posts
 * from another pthread), queue_work() runs the work at once and queues the
 * completion, output() and hold() count their calls. Replies are read off a
 * jrpc__stream_t exactly as the socket would get them, framing included,
 * and compared byte for byte (or as parsed JSON where a batch's order is
 * free). */
#include "async_fx.h"

/* ------------------------------------------------------------------ */
/* 1. One deferred call                                                */
/* ------------------------------------------------------------------ */

static void single(void **state, jrpc__framing_t framing) {
  fx_t *f = *state;
  start(f, NULL, HOST_FULL, framing);
  static const char *const ids[] = {"\"abc\"",           "7", "null", "-1.5e3",
                                    "\"a\\\"b\\u00e9\"", "0"};
  char req[256], res[256];
  for (size_t i = 0; i < sizeof(ids) / sizeof(ids[0]); i++) {
    snprintf(req, sizeof(req), REQ("later", "[1,{\"k\":\"v\"}]", "%s"), ids[i]);
    SEND(f, req);
    EXPECT_NONE(f);
    assert_int_equal(f->h.outputs, (int)i);
    assert_int_equal(f->nst, i + 1);
    assert_int_equal(f->s.sink.calls, 1);
    assert_int_equal(jrpc__async_live(&f->e), 1);
    assert_int_equal(f->h.hold_plus, (int)i + 1);
    assert_int_equal(f->h.hold_minus, (int)i);

    finish_echo(f, i);
    snprintf(res, sizeof(res), RES("[1,{\"k\":\"v\"}]", "%s"), ids[i]);
    EXPECT_EXACT(f, res);
    assert_int_equal(f->h.outputs, (int)i + 1);
    assert_ptr_equal(f->h.last_sink, &f->s.sink);
    assert_int_equal(f->s.sink.calls, 0);
    assert_int_equal(jrpc__async_live(&f->e), 0);
    assert_int_equal(f->h.hold_minus, (int)i + 1);
  }

  /* Nothing written: a null result. A structured result written through
   * the handle. */
  SEND(f, REQ("later", "[]", "\"n\""), REQ("later", "[]", "\"o\""));
  EXPECT_NONE(f);
  assert_int_equal(f->s.sink.calls, 2);
  size_t n0 = f->nst - 2;
  assert_int_equal(jrpc_finish(f->st[n0].d), 0);
  f->st[n0].d = NULL;
  jrpc_call_t *d = f->st[n0 + 1].d;
  assert_int_equal(jrpc_w_obj(d), 0);
  assert_int_equal(jrpc_w_key(d, "x", 1), 0);
  assert_int_equal(jrpc_w_f64(d, 0.5), 0);
  assert_int_equal(jrpc_w_key(d, "s", 1), 0);
  assert_int_equal(jrpc_w_str(d, "q\"\n", 3), 0);
  assert_int_equal(jrpc_w_obj_end(d), 0);
  assert_int_equal(jrpc_finish(d), 0);
  f->st[n0 + 1].d = NULL;
  EXPECT_EXACT(f, RES("null", "\"n\""),
               RES("{\"x\":0.5,\"s\":\"q\\\"\\n\"}", "\"o\""));
  finish_test(f);
}

static void test_single_newline(void **state) {
  single(state, JRPC_FRAMING_NEWLINE);
}
static void test_single_length(void **state) {
  single(state, JRPC_FRAMING_LENGTH);
}

/* Replies of deferred calls go to their own connection, in finish order,
 * and may overtake later replies. */
static void test_two_connections(void **state) {
  fx_t *f = *state;
  start(f, NULL, HOST_FULL, JRPC_FRAMING_NEWLINE);
  jrpc__stream_t b;
  jrpc__stream_init(&b, &f->e, JRPC_FRAMING_LENGTH);
  SEND(f, REQ("later", "[\"a1\"]", "1"), REQ("later", "[\"a2\"]", "2"));
  send_to(&b, (const char *const[]){REQ("later", "[\"b3\"]", "3"), NULL});
  assert_int_equal(f->nst, 3);
  assert_int_equal(f->s.sink.calls, 2);
  assert_int_equal(b.sink.calls, 1);

  finish_echo(f, 2);
  assert_int_equal(f->h.outputs, 1);
  assert_ptr_equal(f->h.last_sink, &b.sink);
  EXPECT_NONE(f);
  EXPECT_EXACT_FROM(f, &b, RES("[\"b3\"]", "3"));

  /* Call 2 answers before call 1, and before a synchronous call made
   * after both. */
  finish_echo(f, 1);
  SEND(f, REQ("add", "[1,2]", "4"));
  finish_echo(f, 0);
  assert_ptr_equal(f->h.last_sink, &f->s.sink);
  assert_int_equal(f->h.outputs, 3);
  EXPECT_EXACT(f, RES("[\"a2\"]", "2"), RES("3", "4"), RES("[\"a1\"]", "1"));
  expect_none_from(f, &b, HERE);
  jrpc__stream_free(&b);
  finish_test(f);
}

/* ------------------------------------------------------------------ */
/* 2. Deferred and finished inside the handler                         */
/* ------------------------------------------------------------------ */

static void now(void **state, jrpc__framing_t framing) {
  fx_t *f = *state;
  start(f, NULL, HOST_FULL, framing);
  f->now_rc = 99;
  SEND(f, REQ("now", "[\"n1\"]", "1"));
  assert_int_equal(f->now_rc, 0);
  EXPECT_EXACT(f, RES("[\"n1\"]", "1"));
  assert_int_equal(f->h.outputs, 1);
  assert_int_equal(f->s.sink.calls, 0);
  assert_int_equal(jrpc__async_live(&f->e), 0);

  /* In one read: a single "now", a synchronous call, batches mixing both,
   * and a "now" notification. Every reply is one whole frame, in order. */
  SEND(f, REQ("now", "{\"a\":1}", "2"), REQ("add", "[2,3]", "3"),
       "[" REQ("now", "[4]", "4") "," REQ("add", "[1,1]", "5") "]",
       "[" REQ("add", "[3,3]",
               "6") "," REQ("now", "[7]", "7") "," REQ("add", "[4,4]", "8") "]",
       NOTE("now", "[9]"), REQ("add", "[5,5]", "10"));
  EXPECT_JSON(f, RES("{\"a\":1}", "2"), RES("5", "3"),
              "[" RES("[4]", "4") "," RES("2", "5") "]",
              "[" RES("6", "6") "," RES("[7]", "7") "," RES("8", "8") "]",
              RES("10", "10"));
  assert_int_equal(f->s.sink.calls, 0);
  assert_int_equal(f->h.hold_plus, 5);
  finish_test(f);
}

static void test_now_newline(void **state) {
  now(state, JRPC_FRAMING_NEWLINE);
}
static void test_now_length(void **state) {
  now(state, JRPC_FRAMING_LENGTH);
}

/* A handler finishes calls of earlier frames while its own frame's reply
 * is being written: their replies follow that frame, whole. */
static void test_finish_during_other_frame(void **state) {
  fx_t *f = *state;
  start(f, NULL, HOST_FULL, JRPC_FRAMING_LENGTH);
  SEND(f, REQ("later", "[\"one\"]", "1"));
  SEND(f, REQ("kick", "[]", "2"));
  EXPECT_EXACT(f, RES("1", "2"), RES("[\"one\"]", "1"));

  SEND(f, REQ("later", "[\"three\"]", "3"));
  SEND(f, "[" REQ("add", "[1,2]", "4") "," REQ("kick", "[]", "5") "," REQ(
              "add", "[3,4]", "6") "]");
  EXPECT_EXACT(f, "[" RES("3", "4") "," RES("1", "5") "," RES("7", "6") "]",
               RES("[\"three\"]", "3"));
  assert_int_equal(f->h.outputs, 2);
  finish_test(f);
}

/* ------------------------------------------------------------------ */
/* 3. Batches with deferred calls                                      */
/* ------------------------------------------------------------------ */

#define MIXED_BATCH                                                            \
  "[" REQ("later", "[\"x\"]", "1") "," REQ("add", "[2,3]", "2") "," REQ(       \
      "later", "{\"y\":2}", "3") "]"
#define MIXED_REPLY                                                            \
  "[" RES("[\"x\"]", "1") "," RES("5", "2") "," RES("{\"y\":2}", "3") "]"

/* [later, add, later]: nothing until both deferred calls are finished (in
 * reverse order), then one frame with the whole array. */
static void batch_mixed(fx_t *f) {
  int outputs = f->h.outputs;
  size_t n0 = f->nst;
  SEND(f, MIXED_BATCH);
  EXPECT_NONE(f);
  assert_int_equal(f->nst, n0 + 2);
  assert_int_equal(f->s.sink.calls, 2);
  assert_int_equal(jrpc__async_live(&f->e), 2);
  finish_echo(f, n0 + 1);
  EXPECT_NONE(f);
  assert_int_equal(f->h.outputs, outputs);
  assert_int_equal(f->s.sink.calls, 1);
  finish_echo(f, n0);
  EXPECT_JSON(f, MIXED_REPLY);
  assert_int_equal(f->h.outputs, outputs + 1);
  assert_int_equal(f->s.sink.calls, 0);
}

static void test_batch_mixed_length(void **state) {
  fx_t *f = *state;
  start(f, NULL, HOST_FULL, JRPC_FRAMING_LENGTH);
  batch_mixed(f);
  finish_test(f);
}

/* The same batch as the first frame of a newline connection (its output
 * chain has no segment yet when the frame starts). */
static void test_batch_mixed_newline_first_frame(void **state) {
  fx_t *f = *state;
  start(f, NULL, HOST_FULL, JRPC_FRAMING_NEWLINE);
  batch_mixed(f);
  finish_test(f);
}

/* The same batch on a newline connection that has answered before. */
static void test_batch_mixed_newline_later_frame(void **state) {
  fx_t *f = *state;
  start(f, NULL, HOST_FULL, JRPC_FRAMING_NEWLINE);
  SEND(f, REQ("add", "[0,0]", "0"));
  EXPECT_EXACT(f, RES("0", "0"));
  batch_mixed(f);
  finish_test(f);
}

/* A synchronous reply before the deferred call, first frame, newline. */
static void test_batch_sync_first_newline(void **state) {
  fx_t *f = *state;
  start(f, NULL, HOST_FULL, JRPC_FRAMING_NEWLINE);
  SEND(f, "[" REQ("add", "[1,1]", "1") "," REQ("later", "[2]", "2") "]");
  EXPECT_NONE(f);
  finish_echo(f, 0);
  EXPECT_JSON(f, "[" RES("2", "1") "," RES("[2]", "2") "]");
  finish_test(f);
}

static void batch_kinds(void **state, jrpc__framing_t framing) {
  fx_t *f = *state;
  start(f, NULL, HOST_FULL, framing);

  /* Only deferred calls. */
  SEND(f, "[" REQ("later", "[\"p\"]", "\"p\"") "," REQ("later", "[\"q\"]",
                                                       "\"q\"") "]");
  EXPECT_NONE(f);
  finish_echo(f, 0);
  EXPECT_NONE(f);
  finish_echo(f, 1);
  EXPECT_JSON(f, "[" RES("[\"p\"]", "\"p\"") "," RES("[\"q\"]", "\"q\"") "]");
  assert_int_equal(f->h.outputs, 1);

  /* A deferred notification is not part of the array; finishing it sends
   * nothing and does not complete the batch. */
  SEND(f, "[" REQ("later", "[10]", "10") "," NOTE("later", "[11]") "," REQ(
              "add", "[6,6]", "12") "]");
  EXPECT_NONE(f);
  assert_int_equal(f->s.sink.calls, 2); /* the notification counts too */
  finish_echo(f, 3);
  EXPECT_NONE(f);
  assert_int_equal(f->s.sink.calls, 1);
  assert_int_equal(f->h.outputs, 1);
  finish_echo(f, 2);
  EXPECT_JSON(f, "[" RES("[10]", "10") "," RES("12", "12") "]");
  assert_int_equal(f->h.outputs, 2);

  /* A deferred notification and a synchronous call: answered at once. */
  SEND(f, "[" NOTE("later", "[13]") "," REQ("add", "[7,7]", "14") "]");
  EXPECT_EXACT(f, "[" RES("14", "14") "]");
  finish_echo(f, 4);
  EXPECT_NONE(f);

  /* Only deferred notifications: no output at all, ever. */
  SEND(f, "[" NOTE("later", "[15]") "," NOTE("later", "[16]") "]");
  EXPECT_NONE(f);
  assert_int_equal(f->s.sink.calls, 2);
  finish_echo(f, 6);
  finish_echo(f, 5);
  EXPECT_NONE(f);
  assert_int_equal(f->h.outputs, 2);
  assert_int_equal(f->nst, 7);
  finish_test(f);
}

static void test_batch_kinds_newline(void **state) {
  batch_kinds(state, JRPC_FRAMING_NEWLINE);
}
static void test_batch_kinds_length(void **state) {
  batch_kinds(state, JRPC_FRAMING_LENGTH);
}

/* ------------------------------------------------------------------ */
/* 4. A deferred notification                                          */
/* ------------------------------------------------------------------ */

/* The daemon-wide cap on calls in flight: past it, jrpc_defer returns
 * NULL and the call is answered -32005 whatever the handler then writes;
 * once a call finishes, deferring works again. */
static void test_busy(void **state) {
  fx_t *f = *state;
  start(f, NULL, HOST_FULL, JRPC_FRAMING_NEWLINE);
  _Atomic uint32_t live = 0;
  f->e.live_total = &live;
  f->e.max_live_total = 2;
  SEND(f, REQ("later", "[1]", "1"), NOTE("later", "[2]"),
       REQ("later", "[3]", "3"), NOTE("later", "[4]"));
  EXPECT_EXACT(f, "{\"jsonrpc\":\"2.0\",\"error\":{\"code\":-32005,"
                  "\"message\":\"Server busy\",\"data\":{\"limit\":2,"
                  "\"got\":2}},\"id\":3}");
  assert_int_equal(f->nst, 2);
  assert_int_equal(live, 2);
  finish_echo(f, 1);
  assert_int_equal(live, 1);
  SEND(f, REQ("later", "[5]", "5"));
  EXPECT_NONE(f);
  assert_int_equal(live, 2);
  finish_echo(f, 0);
  finish_echo(f, 2);
  EXPECT_EXACT(f, RES("[1]", "1"), RES("[5]", "5"));
  assert_int_equal(live, 0);
  finish_test(f);
}

static void test_deferred_notification(void **state) {
  fx_t *f = *state;
  start(f, NULL, HOST_FULL, JRPC_FRAMING_NEWLINE);
  SEND(f, NOTE("later", "[1]"));
  EXPECT_NONE(f);
  assert_int_equal(f->nst, 1);
  assert_int_equal(f->s.sink.calls, 1); /* in flight, though never answered */
  assert_int_equal(jrpc__async_live(&f->e), 1);
  assert_int_equal(f->h.hold_plus, 1);
  finish_echo(f, 0);
  EXPECT_NONE(f);
  assert_int_equal(f->h.outputs, 0);
  assert_int_equal(jrpc__async_live(&f->e), 0);
  assert_int_equal(f->h.hold_minus, 1);

  /* An error on a deferred notification is not sent either. */
  SEND(f, NOTE("later_err", "[2]"));
  assert_int_equal(jrpc_error(f->st[1].d, 4242, "nope"), JRPC_EFAIL);
  assert_int_equal(jrpc_finish(f->st[1].d), 0);
  f->st[1].d = NULL;
  EXPECT_NONE(f);
  assert_int_equal(f->h.outputs, 0);
  finish_test(f);
}

/* ------------------------------------------------------------------ */
/* 5. Errors on deferred calls                                         */
/* ------------------------------------------------------------------ */

static void test_errors(void **state) {
  fx_t *f = *state;
  start(f, NULL, HOST_FULL, JRPC_FRAMING_LENGTH);
  SEND(f, REQ("later_err", "[]", "1"), REQ("later_err", "[]", "2"),
       REQ("later_err", "[]", "3"), REQ("later_err", "[]", "4"),
       REQ("later_err", "[]", "5"));
  EXPECT_NONE(f);
  assert_int_equal(f->nst, 5);

  /* jrpc_error discards a partial result; later writes are refused. */
  jrpc_call_t *d = f->st[0].d;
  assert_int_equal(jrpc_w_arr(d), 0);
  assert_int_equal(jrpc_w_i64(d, 1), 0);
  assert_int_equal(jrpc_error(d, 4242, "it \"broke\""), JRPC_EFAIL);
  assert_int_equal(jrpc_w_i64(d, 2), JRPC_EINVAL);
  assert_int_equal(jrpc_finish(d), 0);
  EXPECT_EXACT(f, ERR(4242, "it \\\"broke\\\"", "1"));

  /* jrpc_error_begin + one value: the error's data. */
  d = f->st[1].d;
  assert_int_equal(jrpc_w_str(d, "partial", 7), 0);
  assert_int_equal(jrpc_error_begin(d, JRPC_INVALID_PARAMS, "Invalid params"),
                   0);
  assert_int_equal(jrpc_w_obj(d), 0);
  assert_int_equal(jrpc_w_key(d, "field", 5), 0);
  assert_int_equal(jrpc_w_str(d, "a", 1), 0);
  assert_int_equal(jrpc_w_key(d, "why", 3), 0);
  assert_int_equal(jrpc_w_arr(d), 0);
  assert_int_equal(jrpc_w_i64(d, 1), 0);
  assert_int_equal(jrpc_w_null(d), 0);
  assert_int_equal(jrpc_w_arr_end(d), 0);
  assert_int_equal(jrpc_w_obj_end(d), 0);
  assert_int_equal(jrpc_finish(d), 0);
  EXPECT_EXACT(f, ERRD(-32602, "Invalid params",
                       "{\"field\":\"a\",\"why\":[1,null]}", "2"));

  /* error_begin without data: no "data" member. */
  d = f->st[2].d;
  assert_int_equal(jrpc_error_begin(d, -32099, "custom"), 0);
  assert_int_equal(jrpc_finish(d), 0);
  EXPECT_EXACT(f, ERR(-32099, "custom", "3"));

  /* Code 0: "failed, no code given". */
  d = f->st[3].d;
  assert_int_equal(jrpc_error(d, 0, "no code"), JRPC_EFAIL);
  assert_int_equal(jrpc_finish(d), 0);
  EXPECT_EXACT(f, ERR(-32000, "no code", "4"));

  /* Writer misuse on a deferred call: -32000, never invalid JSON. */
  d = f->st[4].d;
  assert_int_equal(jrpc_w_arr(d), 0);
  assert_int_equal(jrpc_finish(d), 0);
  take_from(f, &f->s);
  assert_int_equal(f->out_n, f->fn[0] + 4);
  tu_assert_code(f->fp[0], f->fn[0], JRPC_HANDLER_FAILED);

  /* JRPC_ASYNC returned without jrpc_defer. */
  SEND(f, REQ("no_defer_async", "[]", "6"));
  EXPECT_EXACT(f, ERRD(-32000, "Handler failed",
                       "\"returned JRPC_ASYNC without jrpc_defer\"", "6"));
  assert_int_equal(jrpc__async_live(&f->e), 0);
  assert_int_equal(f->h.outputs, 5);
  for (size_t i = 0; i < f->nst; i++)
    f->st[i].d = NULL;
  finish_test(f);
}

/* ------------------------------------------------------------------ */
/* 6. The connection goes away                                         */
/* ------------------------------------------------------------------ */

static void gone(void **state, jrpc__framing_t framing) {
  fx_t *f = *state;
  start(f, NULL, HOST_FULL, framing);
  SEND(f, REQ("later", "[1]", "1"),
       "[" REQ("later", "[2]", "2") "," REQ("add", "[1,2]", "3") "," REQ(
           "later", "[4]", "4") "]",
       NOTE("later", "[5]"),
       "[" REQ("later", "[6]", "6") "," REQ("later", "[7]", "7") "]");
  EXPECT_NONE(f);
  assert_int_equal(f->nst, 6);
  /* One call of the last batch is done before the connection goes. */
  finish_echo(f, 5);
  EXPECT_NONE(f);
  assert_int_equal(f->s.sink.calls, 5);
  stream_gone(f);
  assert_int_equal(f->s.sink.calls, 0);
  /* Its calls are cancelled at once (no longer in flight), but each keeps
   * its module until its handler lets go of it. */
  assert_int_equal(jrpc__async_live(&f->e), 0);
  assert_int_equal(f->h.hold_minus, 1);

  /* Finishing now sends nothing anywhere, and releases the handle. */
  for (size_t i = 0; i < 5; i++) {
    assert_int_equal(jrpc_cancelled(f->st[i].d), 1);
    assert_int_equal(jrpc_w_raw(f->st[i].d, "1", 1), JRPC_EINVAL);
    assert_int_equal(jrpc_finish(f->st[i].d), JRPC_ECANCELED);
    f->st[i].d = NULL;
  }
  assert_int_equal(f->h.outputs, 0);
  assert_int_equal(f->h.hold_plus, 6);
  assert_int_equal(f->h.hold_minus, 6);
  finish_test(f);
}

static void test_gone_newline(void **state) {
  gone(state, JRPC_FRAMING_NEWLINE);
}
static void test_gone_length(void **state) {
  gone(state, JRPC_FRAMING_LENGTH);
}

/* The connection goes, then the engine, with calls never finished. */
static void test_gone_then_engine_free(void **state) {
  fx_t *f = *state;
  start(f, NULL, HOST_FULL, JRPC_FRAMING_LENGTH);
  SEND(f, REQ("later", "[1]", "1"),
       "[" REQ("later", "[2]", "2") "," REQ("add", "[1,2]", "3") "]");
  EXPECT_NONE(f);
  stream_gone(f);
  jrpc__engine_free(&f->e);
  f->e_live = 0;
  assert_int_equal(f->h.outputs, 0);
  assert_int_equal(f->h.hold_plus, 2);
  for (size_t i = 0; i < f->nst; i++)
    f->st[i].d = NULL;
  finish_test(f);
}

/* ------------------------------------------------------------------ */
/* 7. Shutdown: jrpc__async_cancel_all                                 */
/* ------------------------------------------------------------------ */

static void test_cancel_all(void **state) {
  fx_t *f = *state;
  start(f, NULL, HOST_FULL, JRPC_FRAMING_NEWLINE);
  SEND(f, REQ("add", "[0,0]", "0"));
  EXPECT_EXACT(f, RES("0", "0"));
  SEND(f, REQ("later", "[1]", "1"),
       "[" REQ("later", "[2]", "2") "," REQ("add", "[1,2]", "3") "," REQ(
           "later", "[4]", "4") "]",
       NOTE("later", "[5]"), REQ("later", "[6]", "6"));
  EXPECT_NONE(f);
  assert_int_equal(f->nst, 5);
  /* One is finished normally first, one has a partial result. */
  finish_echo(f, 4);
  EXPECT_EXACT(f, RES("[6]", "6"));
  assert_int_equal(jrpc_w_arr(f->st[0].d), 0);
  assert_int_equal(jrpc__async_live(&f->e), 4);

  jrpc__async_cancel_all(&f->e);
  assert_int_equal(jrpc__async_live(&f->e), 0);
  EXPECT_JSON(f, ERR(-32007, "Shutting down", "1"),
              "[" ERR(-32007, "Shutting down", "2") "," RES("3", "3") "," ERR(
                  -32007, "Shutting down", "4") "]");
  take_from(f, &f->s); /* nothing more */
  assert_int_equal(f->out_n, 0);
  /* Every call ended tells the host, which may then read or close: the
   * two replies, the batch's two calls, the notification. */
  assert_int_equal(f->h.outputs + f->h.wakes, 5);
  assert_int_equal(f->s.sink.calls, 0);
  /* Released at once: the modules may go. */
  assert_int_equal(f->h.hold_plus, 5);
  assert_int_equal(f->h.hold_minus, 5);

  /* The handles stay valid; finishing them does nothing. */
  for (size_t i = 0; i < 4; i++) {
    jrpc_call_t *d = f->st[i].d;
    assert_int_equal(jrpc_w_i64(d, 1), JRPC_EINVAL);
    assert_int_equal(jrpc_queue_work(d, never_work, never_run, NULL),
                     JRPC_ECANCELED);
    assert_int_equal(jrpc_finish(d), JRPC_ECANCELED);
    assert_int_equal(jrpc_finish(d), JRPC_ECANCELED);
  }
  EXPECT_NONE(f);
  assert_int_equal(f->h.outputs + f->h.wakes, 5);
  assert_int_equal(f->h.works, 0);

  /* A second cancel finds nothing; the engine frees the ended calls. */
  jrpc__async_cancel_all(&f->e);
  EXPECT_NONE(f);
  stream_gone(f);
  jrpc__engine_free(&f->e);
  f->e_live = 0;
  for (size_t i = 0; i < f->nst; i++)
    f->st[i].d = NULL;
  finish_test(f);
}

/* Engine teardown with calls still unfinished answers them (-32007) on a
 * connection that is still there, and frees them. */
static void test_engine_free_cancels(void **state) {
  fx_t *f = *state;
  start(f, NULL, HOST_FULL, JRPC_FRAMING_LENGTH);
  SEND(f, REQ("later", "[1]", "1"));
  EXPECT_NONE(f);
  jrpc__engine_free(&f->e);
  f->e_live = 0;
  f->st[0].d = NULL;
  EXPECT_EXACT(f, ERR(-32007, "Shutting down", "1"));
  assert_int_equal(f->h.outputs, 1);
  /* The stream's buffers came from the engine's pool, emptied already:
   * return them to it and empty it again. */
  stream_gone(f);
  jrpc__bufpool_free(&f->e.pool);
  finish_test(f);
}

/* ------------------------------------------------------------------ */
/* 8. post / queue_work, and hosts without an event loop               */
/* ------------------------------------------------------------------ */

static void test_post_and_work(void **state) {
  fx_t *f = *state;
  start(f, NULL, HOST_FULL, JRPC_FRAMING_NEWLINE);
  f->post_rc = f->work_rc = 99;
  f->cb_rc[0] = f->cb_rc[1] = 99;
  SEND(f, REQ("post_self", "[]", "1"));
  assert_int_equal(f->post_rc, 0);
  assert_int_equal(f->h.posts, 1);
  EXPECT_NONE(f);
  assert_int_equal(drain(f), 1);
  assert_int_equal(f->cb_rc[0], 0);
  EXPECT_EXACT(f, RES("[\"posted 0\",3000]", "1"));

  SEND(f, REQ("work_self", "[]", "2"));
  assert_int_equal(f->work_rc, 0);
  assert_int_equal(f->h.works, 1);
  assert_int_equal(f->work_ran, 1);
  EXPECT_NONE(f);
  assert_int_equal(drain(f), 1);
  assert_int_equal(f->cb_rc[1], 0);
  EXPECT_EXACT(f, RES("1", "2"));

  /* Not on a synchronous call. */
  SEND(f, REQ("probe", "[]", "3"));
  EXPECT_EXACT(f, RES("[-22,-22,-22]", "3"));
  assert_int_equal(f->h.posts, 1);
  assert_int_equal(f->h.works, 1);

  /* Nor without a function. */
  SEND(f, REQ("later", "[4]", "4"));
  jrpc_call_t *d = f->st[0].d;
  assert_int_equal(jrpc_post(d, NULL, NULL), JRPC_EINVAL);
  assert_int_equal(jrpc_queue_work(d, NULL, never_run, NULL), JRPC_EINVAL);
  assert_int_equal(jrpc_queue_work(d, never_work, NULL, NULL), JRPC_EINVAL);
  finish_echo(f, 0);
  EXPECT_EXACT(f, RES("[4]", "4"));
  assert_int_equal(f->h.posts, 1);
  finish_test(f);
}

typedef struct poster {
  fx_t *f;
  int rc[MAX_STASH];
} poster_t;

static void finish_echo_cb(jrpc_call_t *d, void *arg) {
  fx_t *f = arg;
  for (size_t i = 0; i < f->nst; i++) {
    if (f->st[i].d == d) {
      jrpc_w_raw(d, f->st[i].params, f->st[i].params_n);
      f->cb_rc[i] = jrpc_finish(d);
      f->st[i].d = NULL;
      return;
    }
  }
  fail_msg("posted with an unknown handle");
}

static void *poster_main(void *arg) {
  poster_t *p = arg;
  for (size_t i = p->f->nst; i-- > 0;)
    p->rc[i] = jrpc_post(p->f->st[i].d, finish_echo_cb, p->f);
  return NULL;
}

/* jrpc_post from another thread; the loop (this thread) runs the posts. */
static void test_post_from_thread(void **state) {
  fx_t *f = *state;
  start(f, NULL, HOST_FULL, JRPC_FRAMING_LENGTH);
  SEND(f, REQ("later", "[\"t1\"]", "1"),
       "[" REQ("later", "[\"t2\"]", "2") "," REQ("later", "[\"t3\"]", "3") "]");
  assert_int_equal(f->nst, 3);
  poster_t p;
  memset(&p, 0, sizeof(p));
  p.f = f;
  for (size_t i = 0; i < 3; i++)
    p.rc[i] = 99, f->cb_rc[i] = 99;
  pthread_t t;
  assert_int_equal(pthread_create(&t, NULL, poster_main, &p), 0);
  assert_int_equal(pthread_join(t, NULL), 0);
  for (size_t i = 0; i < 3; i++)
    assert_int_equal(p.rc[i], 0);
  assert_int_equal(f->h.posts, 3);
  EXPECT_NONE(f);
  assert_int_equal(f->h.outputs, 0);
  assert_int_equal(drain(f), 3);
  for (size_t i = 0; i < 3; i++)
    assert_int_equal(f->cb_rc[i], 0);
  /* Posted (so finished) 3, 2, 1: the batch answers once 2 is done, then
   * call 1 answers. */
  EXPECT_JSON(f, "[" RES("[\"t3\"]", "3") "," RES("[\"t2\"]", "2") "]",
              RES("[\"t1\"]", "1"));
  assert_int_equal(f->h.outputs, 2);
  finish_test(f);
}

/* Without a host, jrpc_defer gives NULL: the handler answers an error. */
static void test_no_host(void **state) {
  fx_t *f = *state;
  start(f, NULL, HOST_NONE, JRPC_FRAMING_NEWLINE);
  SEND(f, REQ("later", "[1]", "1"), REQ("now", "[2]", "2"),
       REQ("post_self", "[3]", "3"), REQ("probe", "[]", "4"),
       "[" REQ("later", "[5]", "5") "," REQ("add", "[2,4]", "6") "]",
       NOTE("later", "[7]"));
  EXPECT_EXACT(f, ERR(-32603, "cannot defer", "1"),
               ERR(-32603, "cannot defer", "2"),
               ERR(-32603, "cannot defer", "3"), RES("[-22,-22,-22]", "4"),
               "[" ERR(-32603, "cannot defer", "5") "," RES("6", "6") "]");
  assert_int_equal(f->nst, 0);
  assert_int_equal(jrpc__async_live(&f->e), 0);
  assert_int_equal(f->h.hold_plus, 0);
  finish_test(f);
}

/* A host without post/queue_work: both are JRPC_ENOSYS; and a handle whose
 * engine lost its host: the same. */
static void test_host_without_loop(void **state) {
  fx_t *f = *state;
  start(f, NULL, HOST_NO_LOOP, JRPC_FRAMING_NEWLINE);
  SEND(f, REQ("post_self", "[]", "1"), REQ("work_self", "[]", "2"));
  assert_int_equal(f->post_rc, JRPC_ENOSYS);
  assert_int_equal(f->work_rc, JRPC_ENOSYS);
  EXPECT_EXACT(f, ERR(-32603, "post failed", "1"),
               ERR(-32603, "queue_work failed", "2"));
  assert_int_equal(f->work_ran, 0);
  finish_test(f);
}

static void test_host_removed(void **state) {
  fx_t *f = *state;
  start(f, NULL, HOST_FULL, JRPC_FRAMING_NEWLINE);
  SEND(f, REQ("later", "[1]", "1"));
  jrpc_call_t *d = f->st[0].d;
  f->e.host = NULL;
  assert_int_equal(jrpc_post(d, never_run, NULL), JRPC_ENOSYS);
  assert_int_equal(jrpc_queue_work(d, never_work, never_run, NULL),
                   JRPC_ENOSYS);
  f->e.host = &f->ops;
  assert_int_equal(f->h.posts, 0);
  finish_echo(f, 0);
  EXPECT_EXACT(f, RES("[1]", "1"));
  finish_test(f);
}

/* ------------------------------------------------------------------ */
/* 9. Flow control: max_calls                                          */
/* ------------------------------------------------------------------ */

static void test_max_calls(void **state) {
  fx_t *f = *state;
  start(f, NULL, HOST_FULL, JRPC_FRAMING_NEWLINE);
  f->s.sink.max_calls = 2;
  /* Five requests of one length; the last has no newline (then EOF). */
#define LINE(n) REQ("later", "[" #n "]", #n)
  const char in[] = LINE(1) "\n" LINE(2) "\n" LINE(3) "\n" LINE(4) "\n" LINE(5);
  const size_t line = sizeof(LINE(5)) - 1;
#undef LINE
  assert_int_equal(sizeof(in) - 1, 5 * line + 4);
  const size_t rest = 3 * line + 2; /* lines 3, 4 and 5 */
  assert_int_equal(feed_raw(&f->s, in, sizeof(in) - 1, 1), 0);
  assert_int_equal(f->nst, 2);
  assert_int_equal(f->s.sink.calls, 2);
  assert_int_equal(f->s.held, 1);
  assert_int_equal(jrpc__stream_partial(&f->s), rest);
  EXPECT_NONE(f);

  /* Still held while the calls are unfinished. */
  assert_int_equal(jrpc__stream_feed(&f->s, 0, 1), 0);
  assert_int_equal(f->nst, 2);
  assert_int_equal(f->s.held, 1);

  finish_echo(f, 1);
  assert_int_equal(f->s.sink.calls, 1);
  finish_echo(f, 0);
  assert_int_equal(f->s.sink.calls, 0);
  EXPECT_EXACT(f, RES("[2]", "2"), RES("[1]", "1"));
  assert_int_equal(f->nst, 2);

  assert_int_equal(jrpc__stream_feed(&f->s, 0, 1), 0);
  assert_int_equal(f->nst, 4);
  assert_int_equal(f->s.sink.calls, 2);
  assert_int_equal(f->s.held, 1);
  assert_int_equal(jrpc__stream_partial(&f->s), line);
  EXPECT_NONE(f);

  finish_echo(f, 2);
  finish_echo(f, 3);
  EXPECT_EXACT(f, RES("[3]", "3"), RES("[4]", "4"));
  assert_int_equal(jrpc__stream_feed(&f->s, 0, 1), 0);
  assert_int_equal(f->nst, 5);
  assert_int_equal(f->s.sink.calls, 1);
  assert_int_equal(f->s.held, 0);
  assert_int_equal(jrpc__stream_partial(&f->s), 0);
  assert_null(f->s.buf);
  finish_echo(f, 4);
  EXPECT_EXACT(f, RES("[5]", "5"));
  assert_int_equal(f->s.sink.calls, 0);
  assert_int_equal(jrpc__stream_feed(&f->s, 0, 1), 0);
  assert_int_equal(f->nst, 5);
  EXPECT_NONE(f);
  assert_int_equal(f->h.outputs, 5);
  finish_test(f);
}

/* What counts: deferred calls of the connection still in flight, a
 * batch's each and notifications too; not calls finished within their
 * frame. */
static void test_max_calls_counting(void **state) {
  fx_t *f = *state;
  start(f, NULL, HOST_FULL, JRPC_FRAMING_LENGTH);
  f->s.sink.max_calls = 1;
  SEND(f, REQ("now", "[1]", "1"), REQ("now", "[2]", "2"), NOTE("later", "[3]"),
       NOTE("later", "[4]"), REQ("now", "[5]", "5"), REQ("later", "[6]", "6"),
       REQ("add", "[3,4]", "7"));
  EXPECT_EXACT(f, RES("[1]", "1"), RES("[2]", "2"));
  assert_int_equal(f->nst, 1);
  assert_int_equal(f->s.sink.calls, 1);
  assert_int_equal(f->s.held, 1);
  int wakes = f->h.wakes;
  finish_echo(f, 0); /* notification 3: nothing sent, the next goes in */
  assert_int_equal(f->s.sink.calls, 0);
  /* The host hears of it, though there is nothing to send: else a
   * connection held behind notifications would never read again. */
  assert_int_equal(f->h.wakes, wakes + 1);
  assert_int_equal(jrpc__stream_feed(&f->s, 0, 0), 0);
  assert_int_equal(f->nst, 2);
  assert_int_equal(f->s.held, 1);
  EXPECT_NONE(f);
  finish_echo(f, 1); /* notification 4 */
  assert_int_equal(jrpc__stream_feed(&f->s, 0, 0), 0);
  EXPECT_EXACT(f, RES("[5]", "5"));
  assert_int_equal(f->nst, 3);
  assert_int_equal(f->s.held, 1);
  finish_echo(f, 2);
  EXPECT_EXACT(f, RES("[6]", "6"));
  assert_int_equal(jrpc__stream_feed(&f->s, 0, 0), 0);
  assert_int_equal(f->s.held, 0);
  EXPECT_EXACT(f, RES("7", "7"));

  f->s.sink.max_calls = 3;
  SEND(f,
       "[" REQ("later", "[8]",
               "8") "," NOTE("later", "[9]") "," REQ("later", "[10]", "10") "]",
       REQ("add", "[5,6]", "11"));
  assert_int_equal(f->s.sink.calls, 3);
  assert_int_equal(f->s.held, 1);
  EXPECT_NONE(f);
  finish_echo(f, 4); /* the notification */
  assert_int_equal(f->s.sink.calls, 2);
  wakes = f->h.wakes;
  finish_echo(f, 3); /* the batch still waits, but there is room now */
  assert_int_equal(f->s.sink.calls, 1);
  assert_int_equal(f->h.wakes, wakes + 1);
  finish_echo(f, 5);
  assert_int_equal(f->s.sink.calls, 0);
  EXPECT_JSON(f, "[" RES("[8]", "8") "," RES("[10]", "10") "]");
  assert_int_equal(jrpc__stream_feed(&f->s, 0, 0), 0);
  EXPECT_EXACT(f, RES("11", "11"));
  finish_test(f);
}

/* One batch cannot defer more calls than the connection may have in
 * flight: the calls past max_calls are answered -32005 (notifications
 * just do not run), the rest as usual. */
static void test_max_calls_batch(void **state) {
  fx_t *f = *state;
  start(f, NULL, HOST_FULL, JRPC_FRAMING_NEWLINE);
  f->s.sink.max_calls = 2;
  SEND(f,
       "[" REQ("later", "[1]", "1") "," NOTE("later", "[2]") "," REQ(
           "later", "[3]", "3") "," REQ("add", "[2,2]",
                                        "4") "," REQ("later", "[5]", "5") "]");
  EXPECT_NONE(f);
  assert_int_equal(f->nst, 2);
  assert_int_equal(f->s.sink.calls, 2);
  finish_echo(f, 0);
  finish_echo(f, 1);
  EXPECT_JSON(
      f, "[" ERRD(-32005, "Server busy", "{\"limit\":2,\"got\":2}",
                  "3") "," RES("4", "4") "," ERRD(-32005, "Server busy",
                                                  "{\"limit\":2,"
                                                  "\"got\":2}",
                                                  "5") "," RES("[1]", "1") "]");
  assert_int_equal(f->s.sink.calls, 0);
  finish_test(f);
}

/* ------------------------------------------------------------------ */
/* 10. max_response_bytes on a deferred call                           */
/* ------------------------------------------------------------------ */

static void test_too_large(void **state) {
  fx_t *f = *state;
  jrpc__limits_t lim = JRPC__LIMITS_DEFAULT;
  lim.max_response_bytes = 100;
  start(f, &lim, HOST_FULL, JRPC_FRAMING_LENGTH);
  SEND(f, REQ("later", "[1]", "1"), REQ("later", "[2]", "2"),
       "[" REQ("later", "[3]", "3") "," REQ("add", "[1,2]", "4") "]");
  char big[200];
  memset(big, 'x', sizeof(big));

  /* 26 bytes of envelope + 202 of string: 228 > 100. */
  jrpc_call_t *d = f->st[0].d;
  assert_int_equal(jrpc_w_str(d, big, sizeof(big)), JRPC_E2BIG);
  assert_int_equal(jrpc_w_i64(d, 1), JRPC_E2BIG);
  assert_int_equal(jrpc_finish(d), 0);
  EXPECT_EXACT(f, ERRD(-32003, "Response too large",
                       "{\"limit\":100,\"got\":228}", "1"));

  /* Just within the limit: 26 + 74 = 100. */
  d = f->st[1].d;
  assert_int_equal(jrpc_w_str(d, big, 72), 0);
  assert_int_equal(jrpc_finish(d), 0);
  take_from(f, &f->s);
  assert_int_equal(f->fn[0], 100 + 8); /* + ,"id":2} */
  tu_assert_code(f->fp[0], f->fn[0], 0);

  /* In a batch: that element only. */
  d = f->st[2].d;
  assert_int_equal(jrpc_w_arr(d), 0);
  for (int i = 0; i < 50; i++)
    jrpc_w_i64(d, 1000);
  assert_int_equal(jrpc_w_i64(d, 1), JRPC_E2BIG);
  assert_int_equal(jrpc_finish(d), 0);
  take_from(f, &f->s);
  assert_int_equal(tu_json_valid(f->fp[0], f->fn[0]), 1);
  tu_json_t *j = tu_json_parse(f->fp[0], f->fn[0]);
  assert_non_null(j);
  assert_int_equal(j->nkids, 2);
  int seen = 0;
  for (size_t i = 0; i < 2; i++) {
    const tu_json_t *r = tu_json_at(j, i);
    const tu_json_t *id = tu_json_get(r, "id");
    assert_non_null(id);
    if (strcmp(id->s, "3") == 0) {
      const tu_json_t *err = tu_json_get(r, "error");
      assert_non_null(err);
      assert_string_equal(tu_json_get(err, "code")->s, "-32003");
      assert_string_equal(tu_json_get(tu_json_get(err, "data"), "limit")->s,
                          "100");
      seen |= 1;
    } else {
      assert_string_equal(id->s, "4");
      assert_string_equal(tu_json_get(r, "result")->s, "3");
      seen |= 2;
    }
  }
  tu_json_free(j);
  assert_int_equal(seen, 3);
  finish_test(f);
}

/* ------------------------------------------------------------------ */
/* 11. jrpc_alloc on a deferred handle after the handler returned      */
/* ------------------------------------------------------------------ */

static void test_alloc_after_return(void **state) {
  fx_t *f = *state;
  start(f, NULL, HOST_FULL, JRPC_FRAMING_NEWLINE);
  SEND(f, REQ("later", "[\"keep me\",{\"n\":12345}]", "1"));
  /* The frame's scratch memory is reset and reused, over and over. */
  for (int i = 0; i < 20; i++)
    SEND(f, REQ("fill", "[\"ZZZZZZZZZZZZZZZZZZZZZZZZZZZZZZZZZZZZZZZZ\"]", "2"));
  take_from(f, &f->s);
  assert_int_equal(f->out_n, 20 * (sizeof(RES("true", "2")) - 1 + 1));
  jrpc_call_t *d = f->st[0].d;
  assert_string_equal(f->st[0].params, "[\"keep me\",{\"n\":12345}]");

  /* New scratch memory on the handle now, some larger than its first
   * block; all of it distinct and intact until finish. */
  char *blocks[8];
  size_t sizes[8] = {1, 7, 64, 1000, 5000, 3, 20000, 16};
  for (int i = 0; i < 8; i++) {
    blocks[i] = jrpc_alloc(d, sizes[i]);
    assert_non_null(blocks[i]);
    memset(blocks[i], 'a' + i, sizes[i]);
  }
  for (int i = 0; i < 20; i++)
    SEND(f, REQ("fill", "[]", "3"));
  take_from(f, &f->s);
  for (int i = 0; i < 8; i++)
    for (size_t k = 0; k < sizes[i]; k++)
      if (blocks[i][k] != 'a' + i)
        fail_msg("block %d byte %zu changed", i, k);
  assert_int_equal(jrpc_w_arr(d), 0);
  assert_int_equal(jrpc_w_raw(d, f->st[0].params, f->st[0].params_n), 0);
  assert_int_equal(jrpc_w_str(d, blocks[1], sizes[1]), 0);
  assert_int_equal(jrpc_w_arr_end(d), 0);
  assert_int_equal(jrpc_finish(d), 0);
  f->st[0].d = NULL;
  EXPECT_EXACT(f, RES("[[\"keep me\",{\"n\":12345}],\"bbbbbbb\"]", "1"));

  /* And from a posted function (post_self allocates in its callback). */
  SEND(f, REQ("post_self", "[]", "4"));
  for (int i = 0; i < 5; i++)
    SEND(f, REQ("fill", "[]", "5"));
  take_from(f, &f->s);
  assert_int_equal(drain(f), 1);
  EXPECT_EXACT(f, RES("[\"posted 0\",3000]", "4"));
  finish_test(f);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test_setup_teardown(test_single_newline, setup, teardown),
      cmocka_unit_test_setup_teardown(test_single_length, setup, teardown),
      cmocka_unit_test_setup_teardown(test_two_connections, setup, teardown),
      cmocka_unit_test_setup_teardown(test_now_newline, setup, teardown),
      cmocka_unit_test_setup_teardown(test_now_length, setup, teardown),
      cmocka_unit_test_setup_teardown(test_finish_during_other_frame, setup,
                                      teardown),
      cmocka_unit_test_setup_teardown(test_batch_mixed_length, setup, teardown),
      cmocka_unit_test_setup_teardown(test_batch_mixed_newline_first_frame,
                                      setup, teardown),
      cmocka_unit_test_setup_teardown(test_batch_mixed_newline_later_frame,
                                      setup, teardown),
      cmocka_unit_test_setup_teardown(test_batch_sync_first_newline, setup,
                                      teardown),
      cmocka_unit_test_setup_teardown(test_batch_kinds_newline, setup,
                                      teardown),
      cmocka_unit_test_setup_teardown(test_batch_kinds_length, setup, teardown),
      cmocka_unit_test_setup_teardown(test_busy, setup, teardown),
      cmocka_unit_test_setup_teardown(test_deferred_notification, setup,
                                      teardown),
      cmocka_unit_test_setup_teardown(test_errors, setup, teardown),
      cmocka_unit_test_setup_teardown(test_gone_newline, setup, teardown),
      cmocka_unit_test_setup_teardown(test_gone_length, setup, teardown),
      cmocka_unit_test_setup_teardown(test_gone_then_engine_free, setup,
                                      teardown),
      cmocka_unit_test_setup_teardown(test_cancel_all, setup, teardown),
      cmocka_unit_test_setup_teardown(test_engine_free_cancels, setup,
                                      teardown),
      cmocka_unit_test_setup_teardown(test_post_and_work, setup, teardown),
      cmocka_unit_test_setup_teardown(test_post_from_thread, setup, teardown),
      cmocka_unit_test_setup_teardown(test_no_host, setup, teardown),
      cmocka_unit_test_setup_teardown(test_host_without_loop, setup, teardown),
      cmocka_unit_test_setup_teardown(test_host_removed, setup, teardown),
      cmocka_unit_test_setup_teardown(test_max_calls, setup, teardown),
      cmocka_unit_test_setup_teardown(test_max_calls_counting, setup, teardown),
      cmocka_unit_test_setup_teardown(test_max_calls_batch, setup, teardown),
      cmocka_unit_test_setup_teardown(test_too_large, setup, teardown),
      cmocka_unit_test_setup_teardown(test_alloc_after_return, setup, teardown),
      cmocka_unit_test(tu_test_auto_switched),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
