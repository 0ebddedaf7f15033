/* test_request.c - the wire rules of docs/protocol.md and the JSON-RPC
 * 2.0 specification, through the whole pipeline: request validity
 * (jsonrpc, method, params, id), id echo byte for byte, notifications,
 * batches, parse errors anywhere, jrpcd's limits (-32001 frame, -32002
 * batch, -32003 response), handler errors (-32000 and the handler's own
 * code/message/data), and reply order on one stream. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "testutil.h"

#define OUT_CAP (4u << 20)
static char out[OUT_CAP];

#define S(lit) lit, sizeof(lit) - 1

static const char parse_error[] =
    "{\"jsonrpc\":\"2.0\",\"error\":{\"code\":-32700,"
    "\"message\":\"Parse error\"},\"id\":null}";
static const char invalid_request[] =
    "{\"jsonrpc\":\"2.0\",\"error\":{\"code\":-32600,"
    "\"message\":\"Invalid Request\"},\"id\":null}";

/* Newline framing can carry a payload when it is one non-blank line. */
static int newline_ok(const char *req, size_t n) {
  if (memchr(req, '\n', n))
    return 0;
  for (size_t i = 0; i < n; i++)
    if (req[i] != ' ' && req[i] != '\t' && req[i] != '\r')
      return req[n - 1] != '\r';
  return 0;
}

static const char *framing_name(int framing) {
  return framing == JRPC_FRAMING_NEWLINE ? "newline" : "length";
}

/* The reply's member `key` (or error member when err) as a tree. */
static tu_json_t *reply_tree(const char *r, size_t n) {
  tu_json_t *j = tu_json_parse(r, n);
  assert_non_null(j);
  return j;
}

/* Asserts id of reply tree j equals the JSON text `id`. */
static void assert_id(const tu_json_t *j, const char *id, const char *req) {
  tu_json_t *want = tu_json_parse(id, strlen(id));
  assert_non_null(want);
  const tu_json_t *got = tu_json_get(j, "id");
  if (!tu_json_node_equal(got, want)) {
    print_error("id mismatch for %s: expected %s\n", req, id);
    fail();
  }
  tu_json_free(want);
}

/* req (both framings when possible) -> a reply equal to `resp` as JSON. */
static void expect_n(tu_fixture *f, const char *req, size_t n,
                     const char *resp) {
  for (int fr = JRPC_FRAMING_LENGTH; fr >= JRPC_FRAMING_NEWLINE; fr--) {
    if (fr == JRPC_FRAMING_NEWLINE && !newline_ok(req, n))
      continue;
    size_t rn = tu_call(f, fr, req, n, out, OUT_CAP);
    if (!tu_json_equal(out, rn, resp, strlen(resp), 1)) {
      print_error("[%s] request: %.*s\n  got:      %.*s\n  expected: %s\n",
                  framing_name(fr), (int)(n > 300 ? 300 : n), req,
                  (int)(rn > 2000 ? 2000 : rn), out, resp);
      fail();
    }
  }
}
static void expect(tu_fixture *f, const char *req, const char *resp) {
  expect_n(f, req, strlen(req), resp);
}

/* req -> one error reply with `code`; id must equal `id` unless NULL. */
static void expect_err_n(tu_fixture *f, const char *req, size_t n, int code,
                         const char *id) {
  for (int fr = JRPC_FRAMING_LENGTH; fr >= JRPC_FRAMING_NEWLINE; fr--) {
    if (fr == JRPC_FRAMING_NEWLINE && !newline_ok(req, n))
      continue;
    size_t rn = tu_call(f, fr, req, n, out, OUT_CAP);
    int32_t got = tu_reply_code(out, rn);
    if (got != code) {
      print_error("[%s] request: %.*s\n  expected code %d, got: %.*s\n",
                  framing_name(fr), (int)(n > 300 ? 300 : n), req, code,
                  (int)(rn > 2000 ? 2000 : rn), rn ? out : "(no reply)");
      fail();
    }
    if (id) {
      tu_json_t *j = reply_tree(out, rn);
      assert_id(j, id, req);
      tu_json_free(j);
    }
  }
}
static void expect_err(tu_fixture *f, const char *req, int code,
                       const char *id) {
  expect_err_n(f, req, strlen(req), code, id);
}

/* req -> no output at all. */
static void expect_none(tu_fixture *f, const char *req) {
  size_t n = strlen(req);
  for (int fr = JRPC_FRAMING_LENGTH; fr >= JRPC_FRAMING_NEWLINE; fr--) {
    if (fr == JRPC_FRAMING_NEWLINE && !newline_ok(req, n))
      continue;
    tu_call(f, fr, req, n, out, OUT_CAP);
    if (f->out_n != 0) {
      print_error("[%s] request: %s\n  expected no output, got: %s\n",
                  framing_name(fr), req, out);
      fail();
    }
  }
}

/* ------------------------------------------------------------------ */
/* jsonrpc / method / params                                           */
/* ------------------------------------------------------------------ */

static void test_jsonrpc_member(void **state) {
  tu_fixture *f = *state;
  static const char *bad[] = {
      "{\"method\":\"subtract\",\"params\":[5,2],\"id\":1}",
      "{\"jsonrpc\":\"1.0\",\"method\":\"subtract\",\"params\":[5,2],"
      "\"id\":1}",
      "{\"jsonrpc\":2.0,\"method\":\"subtract\",\"params\":[5,2],\"id\":1}",
      "{\"jsonrpc\":2,\"method\":\"subtract\",\"params\":[5,2],\"id\":1}",
      "{\"jsonrpc\":\"2\",\"method\":\"subtract\",\"params\":[5,2],\"id\":1}",
      "{\"jsonrpc\":\"2.00\",\"method\":\"subtract\",\"params\":[5,2],"
      "\"id\":1}",
      "{\"jsonrpc\":\" 2.0\",\"method\":\"subtract\",\"params\":[5,2],"
      "\"id\":1}",
      "{\"jsonrpc\":\"2.0 \",\"method\":\"subtract\",\"params\":[5,2],"
      "\"id\":1}",
      "{\"jsonrpc\":\"2.0\\u0000\",\"method\":\"subtract\",\"params\":[5,2],"
      "\"id\":1}",
      "{\"jsonrpc\":\"\",\"method\":\"subtract\",\"params\":[5,2],\"id\":1}",
      "{\"jsonrpc\":null,\"method\":\"subtract\",\"params\":[5,2],\"id\":1}",
      "{\"jsonrpc\":true,\"method\":\"subtract\",\"params\":[5,2],\"id\":1}",
      "{\"jsonrpc\":[\"2.0\"],\"method\":\"subtract\",\"params\":[5,2],"
      "\"id\":1}",
      "{\"jsonrpc\":{\"v\":\"2.0\"},\"method\":\"subtract\",\"params\":[5,2],"
      "\"id\":1}",
      "{\"JSONRPC\":\"2.0\",\"method\":\"subtract\",\"params\":[5,2],"
      "\"id\":1}",
  };
  for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++)
    expect_err(f, bad[i], JRPC_INVALID_REQUEST, NULL);
  expect(f,
         "{\"jsonrpc\":\"2.0\",\"method\":\"subtract\",\"params\":[5,2],"
         "\"id\":1}",
         "{\"jsonrpc\":\"2.0\",\"result\":3,\"id\":1}");
  /* members in any order */
  expect(f,
         "{\"id\":1,\"params\":[5,2],\"method\":\"subtract\","
         "\"jsonrpc\":\"2.0\"}",
         "{\"jsonrpc\":\"2.0\",\"result\":3,\"id\":1}");
}

/* A JSON string is its unescaped value: "2\u002e0" is "2.0" and
 * "sub\u0074ract" is "subtract". */
static void test_escaped_envelope_strings(void **state) {
  tu_fixture *f = *state;
  expect(f,
         "{\"jsonrpc\":\"2\\u002e0\",\"method\":\"subtract\",\"params\":[5,2],"
         "\"id\":1}",
         "{\"jsonrpc\":\"2.0\",\"result\":3,\"id\":1}");
  expect(f,
         "{\"jsonrpc\":\"2.0\",\"method\":\"sub\\u0074ract\",\"params\":[5,2],"
         "\"id\":1}",
         "{\"jsonrpc\":\"2.0\",\"result\":3,\"id\":1}");
  expect(f,
         "{\"jsonrpc\":\"2.0\",\"method\":\"sub\\/tract\",\"params\":[5,2],"
         "\"id\":1}",
         "{\"jsonrpc\":\"2.0\",\"error\":{\"code\":-32601,\"message\":"
         "\"Method not found\"},\"id\":1}");
}

/* Member names are strings too: "m\u0065thod" is "method". */
static void test_escaped_member_names(void **state) {
  tu_fixture *f = *state;
  expect(f,
         "{\"jsonrpc\":\"2.0\",\"m\\u0065thod\":\"subtract\",\"params\":[5,2],"
         "\"\\u0069d\":1}",
         "{\"jsonrpc\":\"2.0\",\"result\":3,\"id\":1}");
  expect_err(f,
             "{\"jsonrpc\":\"2.0\",\"method\":\"subtract\",\"m\\u0065thod\":"
             "\"sum\",\"params\":[5,2],\"id\":1}",
             JRPC_INVALID_REQUEST, NULL);
}

static void test_method_member(void **state) {
  tu_fixture *f = *state;
  static const char *bad[] = {
      "{\"jsonrpc\":\"2.0\",\"method\":1,\"id\":1}",
      "{\"jsonrpc\":\"2.0\",\"method\":null,\"id\":1}",
      "{\"jsonrpc\":\"2.0\",\"id\":1}",
      "{\"jsonrpc\":\"2.0\",\"params\":[1],\"id\":1}",
      "{\"jsonrpc\":\"2.0\",\"method\":true,\"id\":1}",
      "{\"jsonrpc\":\"2.0\",\"method\":[\"sum\"],\"id\":1}",
      "{\"jsonrpc\":\"2.0\",\"method\":{\"name\":\"sum\"},\"id\":1}",
  };
  for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++)
    expect_err(f, bad[i], JRPC_INVALID_REQUEST, NULL);
  /* Invalid without an id is still answered (spec example "invalid
   * Request object"): it is not a valid notification. */
  expect(f, "{\"jsonrpc\":\"2.0\",\"method\":1}", invalid_request);
  expect(f, "{\"jsonrpc\":\"2.0\"}", invalid_request);
  expect(f, "{}", invalid_request);
  /* A string, but no such method. */
  static const char *missing[] = {"",          "Subtract",  "subtrac",
                                  "subtractx", "subtract ", " subtract"};
  for (size_t i = 0; i < sizeof missing / sizeof missing[0]; i++) {
    char req[256];
    snprintf(req, sizeof req,
             "{\"jsonrpc\":\"2.0\",\"method\":\"%s\",\"params\":[5,2],"
             "\"id\":\"m\"}",
             missing[i]);
    expect(f, req,
           "{\"jsonrpc\":\"2.0\",\"error\":{\"code\":-32601,\"message\":"
           "\"Method not found\"},\"id\":\"m\"}");
  }
  /* a very long name */
  {
    size_t ln = 20000;
    char *req = malloc(ln + 128);
    assert_non_null(req);
    int k = snprintf(req, 128, "{\"jsonrpc\":\"2.0\",\"id\":9,\"method\":\"");
    memset(req + k, 'm', ln);
    strcpy(req + k + ln, "\"}");
    expect_err(f, req, JRPC_METHOD_NOT_FOUND, "9");
    free(req);
  }
  /* A method name with a NUL in it is not "subtract". */
  expect_err(f,
             "{\"jsonrpc\":\"2.0\",\"method\":\"subtract\\u0000x\","
             "\"params\":[5,2],\"id\":1}",
             JRPC_METHOD_NOT_FOUND, "1");
}

static void test_params_member(void **state) {
  tu_fixture *f = *state;
  expect(f, "{\"jsonrpc\":\"2.0\",\"method\":\"ptype\",\"id\":1}",
         "{\"jsonrpc\":\"2.0\",\"result\":0,\"id\":1}");
  expect(f, "{\"jsonrpc\":\"2.0\",\"method\":\"ptype\",\"params\":[],\"id\":1}",
         "{\"jsonrpc\":\"2.0\",\"result\":6,\"id\":1}");
  expect(f, "{\"jsonrpc\":\"2.0\",\"method\":\"ptype\",\"params\":{},\"id\":1}",
         "{\"jsonrpc\":\"2.0\",\"result\":7,\"id\":1}");
  static const char *bad[] = {"\"x\"", "1",    "-1.5", "true",
                              "false", "null", "\"\""};
  for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
    char req[256];
    snprintf(req, sizeof req,
             "{\"jsonrpc\":\"2.0\",\"method\":\"ptype\",\"params\":%s,"
             "\"id\":1}",
             bad[i]);
    expect_err(f, req, JRPC_INVALID_REQUEST, NULL);
    /* as a would-be notification: still invalid, still answered */
    snprintf(req, sizeof req,
             "{\"jsonrpc\":\"2.0\",\"method\":\"update\",\"params\":%s}",
             bad[i]);
    expect(f, req, invalid_request);
  }
  /* invalid params on an unknown method: the request is invalid first */
  expect_err(f,
             "{\"jsonrpc\":\"2.0\",\"method\":\"nope\",\"params\":7,\"id\":1}",
             JRPC_INVALID_REQUEST, NULL);
}

/* ------------------------------------------------------------------ */
/* id                                                                  */
/* ------------------------------------------------------------------ */

/* Checks that the reply ends with ,"id":<id>} exactly. */
static void assert_id_echo(const char *r, size_t rn, const char *id) {
  char want[16384];
  int k = snprintf(want, sizeof want, ",\"id\":%s}", id);
  assert_true(k > 0 && (size_t)k < sizeof want);
  if (rn < (size_t)k || memcmp(r + rn - (size_t)k, want, (size_t)k) != 0) {
    print_error("id %s not echoed byte-for-byte at the end of: %.*s\n", id,
                (int)(rn > 2000 ? 2000 : rn), r);
    fail();
  }
}

static void test_id_echo(void **state) {
  tu_fixture *f = *state;
  static const char *ids[] = {
      "1",
      "-0",
      "1.5",
      "1e3",
      "1E+03",
      "-1.5e-7",
      "0",
      "-1",
      "12345678901234567890123",
      "1.0",
      "0.000001",
      "-12345678901234567890123.456e-789",
      "\"a\\u00e9\"",
      "\"\"",
      "\"1\"",
      "\"\\\"\\\\\\/\\b\\f\\n\\r\\t\"",
      "\"\xc3\xa9\xf0\x9f\x98\x80\"",
      "\"\\ud83d\\ude00\"",
      "null",
  };
  for (size_t i = 0; i < sizeof ids / sizeof ids[0]; i++) {
    char req[512];
    /* a result, an error from the handler, an error from the rules */
    static const char *fmt[] = {
        "{\"jsonrpc\":\"2.0\",\"method\":\"subtract\",\"params\":[5,2],"
        "\"id\":%s}",
        "{\"jsonrpc\":\"2.0\",\"method\":\"fail\",\"id\":%s}",
        "{\"jsonrpc\":\"2.0\",\"method\":\"nope\",\"id\":%s}",
        "{\"id\" : %s ,\"jsonrpc\":\"2.0\",\"method\":\"subtract\","
        "\"params\":[5,2]}",
    };
    for (size_t k = 0; k < sizeof fmt / sizeof fmt[0]; k++) {
      snprintf(req, sizeof req, fmt[k], ids[i]);
      for (int fr = 0; fr < 2; fr++) {
        size_t rn = tu_call(f, fr, req, strlen(req), out, OUT_CAP);
        assert_true(rn > 0);
        assert_id_echo(out, rn, ids[i]);
      }
    }
  }
  /* inside a batch, each element keeps its own id */
  const char *batch =
      "[{\"jsonrpc\":\"2.0\",\"method\":\"subtract\",\"params\":[5,2],"
      "\"id\":1.50},{\"jsonrpc\":\"2.0\",\"method\":\"nope\",\"id\":"
      "\"x\\u0041\"},{\"jsonrpc\":\"2.0\",\"method\":\"fail\",\"id\":-0}]";
  size_t rn = tu_calls(f, batch, out, OUT_CAP);
  assert_non_null(memmem(out, rn, ",\"id\":1.50}", 11));
  assert_non_null(memmem(out, rn, ",\"id\":\"x\\u0041\"}", 16));
  assert_non_null(memmem(out, rn, ",\"id\":-0}", 9));
}

static void test_id_long_string(void **state) {
  tu_fixture *f = *state;
  size_t idn = 10000;
  char *id = malloc(idn + 3), *req = malloc(idn + 128);
  assert_non_null(id);
  assert_non_null(req);
  id[0] = '"';
  for (size_t i = 1; i <= idn; i++)
    id[i] = (char)('a' + i % 26);
  id[idn + 1] = '"';
  id[idn + 2] = '\0';
  snprintf(req, idn + 128,
           "{\"jsonrpc\":\"2.0\",\"method\":\"subtract\",\"params\":[5,2],"
           "\"id\":%s}",
           id);
  size_t rn = tu_calls(f, req, out, OUT_CAP);
  assert_id_echo(out, rn, id);
  free(id);
  free(req);
}

static void test_id_invalid_types(void **state) {
  tu_fixture *f = *state;
  static const char *bad[] = {"{}", "[]", "true", "false", "{\"a\":1}", "[1]"};
  for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
    char req[256];
    snprintf(req, sizeof req,
             "{\"jsonrpc\":\"2.0\",\"method\":\"subtract\",\"params\":[5,2],"
             "\"id\":%s}",
             bad[i]);
    expect(f, req, invalid_request);
  }
}

/* "id":null is a call (answered with id null), not a notification. */
static void test_id_null_is_a_call(void **state) {
  tu_fixture *f = *state;
  expect(f,
         "{\"jsonrpc\":\"2.0\",\"method\":\"subtract\",\"params\":[5,2],"
         "\"id\":null}",
         "{\"jsonrpc\":\"2.0\",\"result\":3,\"id\":null}");
}

/* ------------------------------------------------------------------ */
/* notifications                                                       */
/* ------------------------------------------------------------------ */

static void test_notifications(void **state) {
  tu_fixture *f = *state;
  int fails = tu_calls_fail, upd = tu_calls_update;
  expect_none(f, "{\"jsonrpc\":\"2.0\",\"method\":\"update\",\"params\":[1]}");
  assert_int_equal(tu_calls_update, upd + 2); /* both framings */
  expect_none(f, "{\"jsonrpc\":\"2.0\",\"method\":\"nope\",\"params\":[1]}");
  expect_none(f, "{\"jsonrpc\":\"2.0\",\"method\":\"rpc.foo\"}");
  expect_none(f, "{\"jsonrpc\":\"2.0\",\"method\":\"fail\"}");
  assert_int_equal(tu_calls_fail, fails + 2);
  expect_none(f, "{\"jsonrpc\":\"2.0\",\"method\":\"fail_data\"}");
  expect_none(f, "{\"jsonrpc\":\"2.0\",\"method\":\"fail_bare\"}");
  expect_none(f, "{\"jsonrpc\":\"2.0\",\"method\":\"fail_after_write\"}");
  expect_none(
      f, "{\"jsonrpc\":\"2.0\",\"method\":\"misuse\",\"params\":[\"key\"]}");
  expect_none(f, "{\"jsonrpc\":\"2.0\",\"method\":\"subtract\",\"params\":"
                 "[\"a\",\"b\"]}");
  expect_none(f, "{\"jsonrpc\":\"2.0\",\"method\":\"get_data\"}");
}

/* ------------------------------------------------------------------ */
/* batches                                                             */
/* ------------------------------------------------------------------ */

static void test_batch_empty(void **state) {
  tu_fixture *f = *state;
  expect(f, "[]", invalid_request);
  expect(f, "[ ]", invalid_request);
  expect(f, " [\t\r\n] ", invalid_request);
}

static void test_batch_invalid_elements(void **state) {
  tu_fixture *f = *state;
  char want[1024];
  snprintf(want, sizeof want, "[%s]", invalid_request);
  expect(f, "[1]", want);
  expect(f, "[[]]", want);
  expect(f, "[{}]", want);
  expect(f, "[null]", want);
  expect(f, "[{\"jsonrpc\":\"2.0\",\"method\":1}]", want);
  snprintf(want, sizeof want, "[%s,%s,%s]", invalid_request, invalid_request,
           invalid_request);
  expect(f, "[1,2,3]", want);
  expect(f, "[\"x\",true,[1]]", want);
}

static void test_batch_all_notifications(void **state) {
  tu_fixture *f = *state;
  int upd = tu_calls_update, fails = tu_calls_fail;
  expect_none(f, "[{\"jsonrpc\":\"2.0\",\"method\":\"update\"},"
                 "{\"jsonrpc\":\"2.0\",\"method\":\"nope\"},"
                 "{\"jsonrpc\":\"2.0\",\"method\":\"fail\"},"
                 "{\"jsonrpc\":\"2.0\",\"method\":\"update\",\"params\":[1]}]");
  assert_int_equal(tu_calls_update, upd + 4);
  assert_int_equal(tu_calls_fail, fails + 2);
  expect_none(f, "[{\"jsonrpc\":\"2.0\",\"method\":\"update\"}]");
}

static void test_batch_mixed(void **state) {
  tu_fixture *f = *state;
  expect(f,
         "[{\"jsonrpc\":\"2.0\",\"method\":\"subtract\",\"params\":[5,2],"
         "\"id\":1},"
         "{\"jsonrpc\":\"2.0\",\"method\":\"update\"},"
         "7,"
         "{\"jsonrpc\":\"2.0\",\"method\":\"fail\",\"id\":2},"
         "{\"jsonrpc\":\"2.0\",\"method\":\"nothing\",\"id\":3},"
         "{\"jsonrpc\":\"2.0\",\"method\":\"subtract\",\"params\":"
         "{\"minuend\":1,\"subtrahend\":3},\"id\":4}]",
         "[{\"jsonrpc\":\"2.0\",\"result\":3,\"id\":1},"
         "{\"jsonrpc\":\"2.0\",\"error\":{\"code\":-32600,\"message\":"
         "\"Invalid Request\"},\"id\":null},"
         "{\"jsonrpc\":\"2.0\",\"error\":{\"code\":4242,\"message\":"
         "\"it \\\"broke\\\"\\n\\ttwice \\u00e9\"},\"id\":2},"
         "{\"jsonrpc\":\"2.0\",\"result\":null,\"id\":3},"
         "{\"jsonrpc\":\"2.0\",\"result\":-2,\"id\":4}]");
  /* one call in a batch: still an array */
  expect(f,
         "[{\"jsonrpc\":\"2.0\",\"method\":\"subtract\",\"params\":[5,2],"
         "\"id\":1}]",
         "[{\"jsonrpc\":\"2.0\",\"result\":3,\"id\":1}]");
  /* a batch inside a batch is an invalid element, not a batch */
  char want[512];
  snprintf(want, sizeof want, "[%s]", invalid_request);
  expect(f,
         "[[{\"jsonrpc\":\"2.0\",\"method\":\"subtract\",\"params\":[5,2],"
         "\"id\":1}]]",
         want);
}

/* Calls far apart among non-objects, and non-objects after the last call:
 * each element keeps its own envelope (a parser that reads envelopes while
 * it scans grows its table as the batch goes). */
static void test_batch_calls_among_scalars(void **state) {
  tu_fixture *f = *state;
  static const char *const filler[] = {"7", "[]", "\"x\"", "{}"};
  char req[4096], want[8192];
  size_t rn = 0, wn = 0;
  req[rn++] = '[';
  want[wn++] = '[';
  for (int i = 0; i < 40; i++) {
    const char *sep = i ? "," : "";
    if (i == 0 || i == 25 || i == 26) {
      rn += (size_t)snprintf(req + rn, sizeof req - rn,
                             "%s{\"id\":%d,\"params\":[%d,5],\"jsonrpc\":"
                             "\"2.0\",\"method\":\"subtract\"}",
                             sep, i, i + 5);
      wn += (size_t)snprintf(want + wn, sizeof want - wn,
                             "%s{\"jsonrpc\":\"2.0\",\"result\":%d,\"id\":%d}",
                             sep, i, i);
    } else {
      rn += (size_t)snprintf(req + rn, sizeof req - rn, "%s%s", sep,
                             filler[i % 4]);
      wn += (size_t)snprintf(want + wn, sizeof want - wn, "%s%s", sep,
                             invalid_request);
    }
  }
  req[rn++] = ']';
  req[rn] = '\0';
  want[wn++] = ']';
  want[wn] = '\0';
  expect(f, req, want);
}

static void test_max_batch(void **state) {
  (void)state;
  tu_fixture fx;
  jrpc__limits_t lim = JRPC__LIMITS_DEFAULT;
  lim.max_batch = 3;
  tu_fixture_init(&fx, &lim);
  const char *call =
      "{\"jsonrpc\":\"2.0\",\"method\":\"subtract\",\"params\":[5,2],\"id\":1}";
  char req[1024];
  snprintf(req, sizeof req, "[%s,%s,%s]", call, call, call);
  size_t rn = tu_calls(&fx, req, out, OUT_CAP);
  tu_json_t *j = reply_tree(out, rn);
  assert_int_equal(j->type, TU_J_ARRAY);
  assert_int_equal(j->nkids, 3);
  tu_json_free(j);

  snprintf(req, sizeof req, "[%s,%s,%s,%s]", call, call, call, call);
  expect_err(&fx, req, JRPC_BATCH_TOO_LARGE, "null");
  rn = tu_calls(&fx, req, out, OUT_CAP);
  j = reply_tree(out, rn);
  assert_int_equal(j->type, TU_J_OBJECT);
  const tu_json_t *data = tu_json_get(tu_json_get(j, "error"), "data");
  tu_json_t *want = tu_json_parse(S("{\"limit\":3,\"got\":4}"));
  if (!tu_json_node_equal(data, want)) {
    print_error("-32002 data wrong in %s\n", out);
    fail();
  }
  tu_json_free(want);
  tu_json_free(j);

  /* much larger */
  size_t cap = 200 * 100, n = 0;
  char *big = malloc(cap);
  assert_non_null(big);
  big[n++] = '[';
  for (int i = 0; i < 100; i++)
    n += (size_t)snprintf(big + n, cap - n, "%s%d", i ? "," : "", i);
  big[n++] = ']';
  rn = tu_call(&fx, JRPC_FRAMING_LENGTH, big, n, out, OUT_CAP);
  tu_assert_code(out, rn, JRPC_BATCH_TOO_LARGE);
  j = reply_tree(out, rn);
  data = tu_json_get(tu_json_get(j, "error"), "data");
  want = tu_json_parse(S("{\"limit\":3,\"got\":100}"));
  assert_true(tu_json_node_equal(data, want));
  tu_json_free(want);
  tu_json_free(j);
  free(big);
  tu_fixture_free(&fx);
}

/* ------------------------------------------------------------------ */
/* parse errors                                                        */
/* ------------------------------------------------------------------ */

typedef struct text {
  const char *s;
  size_t n;
} text_t;
#define T(lit)                                                                 \
  { lit, sizeof(lit) - 1 }

static const text_t invalid_json[] = {
    T("{\"jsonrpc\":\"2.0\",\"method\":\"sum\",\"params\":[1,2,],\"id\":1}"),
    T("[{\"jsonrpc\":\"2.0\",\"method\":\"sum\",\"params\":[1],\"id\":1},"
      "{\"jsonrpc\":\"2.0\",\"method\":\"sum\",\"params\":[01],\"id\":2}]"),
    T("[{\"jsonrpc\":\"2.0\",\"method\":\"sum\",\"params\":[1],\"id\":1},]"),
    T("[{\"jsonrpc\":\"2.0\",\"method\":\"sum\",\"params\":[1],\"id\":1}"),
    T("[{\"jsonrpc\":\"2.0\",\"method\":\"sum\",\"params\":[1],\"id\":1},"
      "{\"jsonrpc\":\"2.0\",\"method\":\"sum\",\"params\":[1],\"id\":2,}]"),
    T("{\"jsonrpc\":\"2.0\",\"method\":\"sum\",\"params\":[1],\"id\":1} x"),
    T("{\"jsonrpc\":\"2.0\",\"method\":\"sum\",\"params\":[1],\"id\":1}"
      "{\"jsonrpc\":\"2.0\",\"method\":\"sum\",\"params\":[1],\"id\":2}"),
    T("{\"jsonrpc\":\"2.0\",\"method\":\"sum\",\"params\":[1],\"id\":1},"),
    T("{\"jsonrpc\":\"2.0\",\"method\":\"sum\",\"params\":[1],\"id\":1}]"),
    T("{\"jsonrpc\":\"2.0\",\"method\":\"sum\",\"params\":[1,[2,{\"a\":tru}]],"
      "\"id\":1}"),
    T("{\"jsonrpc\":\"2.0\",\"method\":\"sum\",\"params\":[1.],\"id\":1}"),
    T("{\"jsonrpc\":\"2.0\",\"method\":\"sum\",\"params\":[2.e3],\"id\":1}"),
    T("{\"jsonrpc\":\"2.0\",\"method\":\"sum\",\"params\":[.5],\"id\":1}"),
    T("{\"jsonrpc\":\"2.0\",\"method\":\"sum\",\"params\":[1e],\"id\":1}"),
    T("{\"jsonrpc\":\"2.0\",\"method\":\"sum\",\"params\":[-],\"id\":1}"),
    T("{\"jsonrpc\":\"2.0\",\"method\":\"sum\",\"params\":[+1],\"id\":1}"),
    T("{\"jsonrpc\":\"2.0\",\"method\":\"sum\",\"params\":[0x10],\"id\":1}"),
    T("{\"jsonrpc\":\"2.0\",\"method\":\"sum\",\"params\":[NaN],\"id\":1}"),
    T("{\"jsonrpc\":\"2.0\",\"method\":\"sum\",\"params\":[Infinity],"
      "\"id\":1}"),
    T("{\"jsonrpc\":\"2.0\",\"method\":\"sum\" \"params\":[1],\"id\":1}"),
    T("{\"jsonrpc\":\"2.0\",\"method\":\"sum\",\"params\":[1 2],\"id\":1}"),
    T("{\"jsonrpc\":\"2.0\",\"method\":\"sum\",\"params\":{\"a\" 1},"
      "\"id\":1}"),
    T("{\"jsonrpc\":\"2.0\",\"method\":\"sum\",\"params\":{\"a\":},"
      "\"id\":1}"),
    T("{\"jsonrpc\":\"2.0\",\"method\":\"sum\",\"params\":{1:2},\"id\":1}"),
    T("{\"jsonrpc\":\"2.0\",\"method\":\"su\tm\",\"id\":1}"),
    T("{\"jsonrpc\":\"2.0\",\"method\":\"sum\",\"params\":[\"\\x\"],"
      "\"id\":1}"),
    T("{\"jsonrpc\":\"2.0\",\"method\":\"sum\",\"params\":[\"\\u12\"],"
      "\"id\":1}"),
    T("{\"jsonrpc\":\"2.0\",\"method\":\"sum\",\"params\":[\"\\u12G4\"],"
      "\"id\":1}"),
    T("{\"jsonrpc\":\"2.0\",\"method\":\"sum\",\"params\":[\"\\'\"],"
      "\"id\":1}"),
    T("{\"jsonrpc\":\"2.0\",\"method\":\"sum\",\"params\":[1],\"id\":1"),
    T("{\"jsonrpc\":\"2.0\",\"method\":\"sum\",\"params\":[1],\"id\":1,}"),
    T("{\"jsonrpc\":\"2.0\",\"method\":\"sum\",\"params\":[1],\"id\":1]"),
    T("{\"jsonrpc\":\"2.0\",\"method\":\"sum\",\"params\":[1],\"id\":TRUE}"),
    T("{\"jsonrpc\":\"2.0\",\"method\":\"sum\",\"params\":[nul],\"id\":1}"),
    T("{\"jsonrpc\":\"2.0\",\"method\":\"sum\",\"params\":[1],\"id\":\"1}"),
    T("{'jsonrpc':'2.0','method':'sum','id':1}"),
    T("{jsonrpc:\"2.0\",method:\"sum\",id:1}"),
    T("{\"jsonrpc\":\"2.0\",\"method\":\"sum\",\"params\":[1],\"id\":1}\0"),
    T("\0{\"jsonrpc\":\"2.0\",\"method\":\"sum\",\"params\":[1],\"id\":1}"),
    T("{\"jsonrpc\":\"2.0\",\"method\":\"s\0m\",\"id\":1}"),
    T("{\"jsonrpc\":\"2.0\",\"method\":\"sum\",\"params\":[1],\"id\":1}\x0c"),
    T("\"unterminated"),
    T("["),
    T("]"),
    T("{"),
    T("}"),
    T(","),
    T(":"),
    T("x"),
    T("[,1]"),
    T("[1,,2]"),
    T("-"),
    T("01"),
    T("tru"),
    T("nulll"),
    T("[1]]"),
    T("[][]"),
    T("{}{}"),
    T("1 2"),
};

static void test_invalid_json_anywhere(void **state) {
  tu_fixture *f = *state;
  for (size_t i = 0; i < sizeof invalid_json / sizeof invalid_json[0]; i++)
    expect_n(f, invalid_json[i].s, invalid_json[i].n, parse_error);
}

/* Length framing carries an empty or blank payload as a frame: not JSON. */
static void test_empty_length_frame(void **state) {
  tu_fixture *f = *state;
  size_t rn = tu_call(f, JRPC_FRAMING_LENGTH, "", 0, out, OUT_CAP);
  assert_true(tu_json_equal(out, rn, S(parse_error), 0));
  rn = tu_call(f, JRPC_FRAMING_LENGTH, " \r\n\t", 4, out, OUT_CAP);
  assert_true(tu_json_equal(out, rn, S(parse_error), 0));
}

static void test_invalid_utf8(void **state) {
  tu_fixture *f = *state;
  static const char *bad[] = {
      "\xff",
      "\xfe",
      "\x80",
      "a\xbf",
      "\xc0\xaf",         /* overlong '/' */
      "\xc1\xbf",         /* overlong */
      "\xe0\x80\xaf",     /* overlong */
      "\xf0\x80\x80\xaf", /* overlong */
      "\xed\xa0\x80",     /* encoded surrogate U+D800 */
      "\xed\xbf\xbf",     /* encoded surrogate U+DFFF */
      "\xf4\x90\x80\x80", /* U+110000 */
      "\xf5\x80\x80\x80",
      "\xe2\x82",     /* truncated */
      "\xf0\x9f\x98", /* truncated */
      "\xc3",         /* truncated at the quote */
      "\xc3\x28",     /* bad continuation */
      "\\ud800",      /* lone high surrogate */
      "\\udc00",      /* lone low surrogate */
      "\\udfff",
      "\\ud800\\u0041",
      "\\ud800x",
      "\\ud800\\ud800",
      "\\ude00\\ud83d", /* reversed pair */
  };
  static const char *where[] = {
      "{\"jsonrpc\":\"2.0\",\"method\":\"echo\",\"params\":[\"%s\"],\"id\":1}",
      "{\"jsonrpc\":\"2.0\",\"method\":\"echo\",\"params\":{\"%s\":1},"
      "\"id\":1}",
      "{\"jsonrpc\":\"2.0\",\"method\":\"x%s\",\"id\":1}",
      "{\"jsonrpc\":\"2.0\",\"method\":\"echo\",\"id\":\"%s\"}",
      "{\"jsonrpc\":\"2.0\",\"method\":\"echo\",\"params\":[1,[{\"a\":"
      "[\"ok\",\"%s\"]}]],\"id\":1}",
      "{\"jsonrpc\":\"2.0\",\"method\":\"update\",\"params\":[\"%s\"]}",
      "[{\"jsonrpc\":\"2.0\",\"method\":\"echo\",\"id\":1},\"%s\"]",
  };
  for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++)
    for (size_t w = 0; w < sizeof where / sizeof where[0]; w++) {
      char req[512];
      snprintf(req, sizeof req, where[w], bad[i]);
      expect(f, req, parse_error);
    }
  /* valid non-ASCII passes, raw or escaped */
  expect(f,
         "{\"jsonrpc\":\"2.0\",\"method\":\"echo_str\",\"params\":"
         "[\"\xc3\xa9\xe2\x82\xac\xf0\x9f\x98\x80\xf4\x8f\xbf\xbf\"],\"id\":1}",
         "{\"jsonrpc\":\"2.0\",\"result\":"
         "\"\\u00e9\\u20ac\\ud83d\\ude00\\udbff\\udfff\",\"id\":1}");
  expect(
      f,
      "{\"jsonrpc\":\"2.0\",\"method\":\"echo_str\",\"params\":"
      "[\"\\ud83d\\ude00\\u00e9\\uFFFF\"],\"id\":1}",
      "{\"jsonrpc\":\"2.0\",\"result\":\"\xf0\x9f\x98\x80\xc3\xa9\xef\xbf\xbf"
      "\",\"id\":1}");
}

static void test_top_level_scalars(void **state) {
  tu_fixture *f = *state;
  static const char *scalars[] = {"1",    "\"x\"", "true", "false", "null",
                                  "-1.5", "\"\"",  "0",    " 1e3 ", "\"[]\""};
  for (size_t i = 0; i < sizeof scalars / sizeof scalars[0]; i++)
    expect(f, scalars[i], invalid_request);
}

static char *nest(const char *open, const char *mid, const char *close,
                  size_t depth, const char *prefix, const char *suffix,
                  size_t *n) {
  size_t ol = strlen(open), cl = strlen(close), ml = strlen(mid),
         pl = strlen(prefix), sl = strlen(suffix);
  char *s = malloc(pl + depth * (ol + cl) + ml + sl + 1), *p = s;
  assert_non_null(s);
  memcpy(p, prefix, pl);
  p += pl;
  for (size_t i = 0; i < depth; i++, p += ol)
    memcpy(p, open, ol);
  memcpy(p, mid, ml);
  p += ml;
  for (size_t i = 0; i < depth; i++, p += cl)
    memcpy(p, close, cl);
  memcpy(p, suffix, sl);
  p += sl;
  *p = '\0';
  *n = (size_t)(p - s);
  return s;
}

static void test_depth(void **state) {
  tu_fixture *f = *state;
  size_t n;
  char *s;

  s = nest("[", "", "", 100000, "", "", &n);
  expect_n(f, s, n, parse_error);
  free(s);
  s = nest("[", "", "]", 100000, "", "", &n);
  expect_n(f, s, n, parse_error);
  free(s);
  s = nest("{\"a\":", "1", "}", 100000, "", "", &n);
  expect_n(f, s, n, parse_error);
  free(s);
  s = nest("[", "", "", 100000,
           "{\"jsonrpc\":\"2.0\",\"method\":\"echo\",\"id\":1,\"params\":", "",
           &n);
  expect_n(f, s, n, parse_error);
  free(s);
  s = nest("[{\"a\":", "1", "}]", 50000,
           "[{\"jsonrpc\":\"2.0\",\"method\":\"echo\",\"id\":1,\"params\":",
           "}]", &n);
  expect_n(f, s, n, parse_error);
  free(s);
}

/* The depth pre-check counts brackets outside strings only: 300 '[' inside
 * a string (and after escaped quotes) are not nesting. */
static void test_depth_brackets_in_strings(void **state) {
  tu_fixture *f = *state;
  char br[301], req[1024], want[1024];
  memset(br, '[', 300);
  br[300] = 0;
  snprintf(req, sizeof req,
           "{\"jsonrpc\":\"2.0\",\"method\":\"echo\",\"params\":[\"%s\","
           "\"\\\"%s\\\\\"],\"id\":1}",
           br, br);
  snprintf(want, sizeof want,
           "{\"jsonrpc\":\"2.0\",\"result\":[\"%s\",\"\\\"%s\\\\\"],"
           "\"id\":1}",
           br, br);
  expect_n(f, req, strlen(req), want);
  /* ... while the same brackets outside a string are too deep. */
  snprintf(req, sizeof req,
           "{\"jsonrpc\":\"2.0\",\"method\":\"echo\",\"params\":[\"\\\"\",%s"
           "]}",
           br);
  expect_n(f, req, strlen(req), parse_error);
}

/* echo with params k arrays deep around `mid`: answered with them. */
static void expect_echoed(tu_fixture *f, const char *pre, const char *mid,
                          size_t k) {
  size_t n, pn;
  char want[4096];
  char *s = nest("[", mid, "]", k, pre, "}", &n);
  char *params = nest("[", mid, "]", k, "", "", &pn);
  snprintf(want, sizeof want, "{\"jsonrpc\":\"2.0\",\"result\":%s,\"id\":1}",
           params);
  expect_n(f, s, n, want);
  free(s);
  free(params);
}

/* The request object is level 1, so params nested k deep make k + 1. */
static void test_depth_limit_exact(void **state) {
  tu_fixture *f = *state;
  const char *pre = "{\"jsonrpc\":\"2.0\",\"method\":\"echo\",\"id\":1,"
                    "\"params\":";
  size_t n;
  char *s;

  expect_echoed(f, pre, "", JRPC__MAX_DEPTH - 1);

  s = nest("[", "", "]", JRPC__MAX_DEPTH, pre, "}", &n);
  expect_n(f, s, n, parse_error);
  free(s);

  /* A scalar in the deepest container adds no level (simdjson's own limit
   * would count it: every backend must agree). */
  expect_echoed(f, pre, "null", JRPC__MAX_DEPTH - 1);
  s = nest("{\"k\":", "\"v\"", "}", JRPC__MAX_DEPTH, pre, "}", &n);
  expect_n(f, s, n, parse_error);
  free(s);

  /* a batch adds a level too */
  s = nest("[", "", "]", JRPC__MAX_DEPTH - 2,
           "[{\"jsonrpc\":\"2.0\","
           "\"method\":\"echo\",\"id\":1,\"params\":",
           "}]", &n);
  tu_call(f, JRPC_FRAMING_LENGTH, s, n, out, OUT_CAP);
  assert_int_equal(tu_reply_code(out + 1, strlen(out) - 2), 0);
  free(s);
  s = nest("[", "", "]", JRPC__MAX_DEPTH - 1,
           "[{\"jsonrpc\":\"2.0\","
           "\"method\":\"echo\",\"id\":1,\"params\":",
           "}]", &n);
  expect_n(f, s, n, parse_error);
  free(s);
}

static int h_dummy(jrpc_call_t *c, jrpc_val_t p, void *u) {
  (void)p;
  (void)u;
  return jrpc_w_null(c);
}

static void test_rpc_reserved(void **state) {
  tu_fixture *f = *state;
  static const char *names[] = {"rpc.foo", "rpc.", "rpc.discover"};
  for (size_t i = 0; i < sizeof names / sizeof names[0]; i++) {
    char req[256];
    snprintf(req, sizeof req,
             "{\"jsonrpc\":\"2.0\",\"method\":\"%s\",\"id\":1}", names[i]);
    expect(f, req,
           "{\"jsonrpc\":\"2.0\",\"error\":{\"code\":-32601,\"message\":"
           "\"Method not found\"},\"id\":1}");
  }
  /* a module cannot take such a name */
  assert_int_equal(
      jrpc__registry_add(&f->reg, "rpc.foo", h_dummy, NULL, NULL, NULL),
      JRPC_EINVAL);
}

static void test_duplicate_members(void **state) {
  tu_fixture *f = *state;
  static const char *dup[] = {
      "{\"jsonrpc\":\"2.0\",\"method\":\"subtract\",\"method\":\"sum\","
      "\"params\":[5,2],\"id\":1}",
      "{\"jsonrpc\":\"2.0\",\"method\":\"subtract\",\"method\":\"subtract\","
      "\"params\":[5,2],\"id\":1}",
      "{\"jsonrpc\":\"2.0\",\"jsonrpc\":\"2.0\",\"method\":\"subtract\","
      "\"params\":[5,2],\"id\":1}",
      "{\"jsonrpc\":\"2.0\",\"method\":\"subtract\",\"params\":[5,2],"
      "\"params\":[1,1],\"id\":1}",
      "{\"jsonrpc\":\"2.0\",\"method\":\"subtract\",\"params\":[5,2],"
      "\"id\":1,\"id\":2}",
      "{\"id\":1,\"jsonrpc\":\"2.0\",\"method\":\"subtract\",\"params\":[5,2],"
      "\"id\":1}",
  };
  for (size_t i = 0; i < sizeof dup / sizeof dup[0]; i++)
    expect_err(f, dup[i], JRPC_INVALID_REQUEST, NULL);
  /* inside a batch: only that element */
  char req[1024];
  snprintf(req, sizeof req, "[%s,%s]", dup[0],
           "{\"jsonrpc\":\"2.0\",\"method\":\"subtract\",\"params\":[5,2],"
           "\"id\":2}");
  size_t rn = tu_calls(f, req, out, OUT_CAP);
  tu_json_t *j = reply_tree(out, rn);
  assert_int_equal(j->type, TU_J_ARRAY);
  assert_int_equal(j->nkids, 2);
  tu_json_free(j);
  /* unknown extra members are allowed; duplicates inside params are the
   * handler's business (first wins) */
  expect(f,
         "{\"jsonrpc\":\"2.0\",\"method\":\"subtract\",\"params\":[5,2],"
         "\"id\":1,\"extra\":1,\"extra\":2}",
         "{\"jsonrpc\":\"2.0\",\"result\":3,\"id\":1}");
  expect(f,
         "{\"jsonrpc\":\"2.0\",\"method\":\"subtract\",\"params\":"
         "{\"minuend\":42,\"minuend\":1,\"subtrahend\":2},\"id\":1}",
         "{\"jsonrpc\":\"2.0\",\"result\":40,\"id\":1}");
}

/* ------------------------------------------------------------------ */
/* frame limits                                                        */
/* ------------------------------------------------------------------ */

/* A request of exactly n bytes: a sum over zeros padded to size. */
static char *sized_request(size_t n, int id) {
  char head[64];
  int hl = snprintf(head, sizeof head,
                    "{\"jsonrpc\":\"2.0\",\"id\":%d,\"method\":\"sum\","
                    "\"params\":[0",
                    id);
  char *s = malloc(n + 1);
  assert_non_null(s);
  assert_true(n >= (size_t)hl + 2);
  memcpy(s, head, (size_t)hl);
  size_t p = (size_t)hl;
  while (p + 2 < n) {
    if (n - p - 2 >= 2) {
      memcpy(s + p, ",0", 2);
      p += 2;
    } else {
      s[p++] = ' ';
    }
  }
  s[p++] = ']';
  s[p++] = '}';
  s[p] = '\0';
  assert_int_equal(p, n);
  assert_true(tu_json_valid(s, n));
  return s;
}

static void assert_too_large(const char *r, size_t rn, uint64_t limit,
                             uint64_t got) {
  tu_assert_code(r, rn, JRPC_FRAME_TOO_LARGE);
  tu_json_t *j = reply_tree(r, rn);
  char want[128];
  snprintf(want, sizeof want, "{\"limit\":%llu,\"got\":%llu}",
           (unsigned long long)limit, (unsigned long long)got);
  tu_json_t *w = tu_json_parse(want, strlen(want));
  const tu_json_t *data = tu_json_get(tu_json_get(j, "error"), "data");
  if (!tu_json_node_equal(data, w)) {
    print_error("-32001 data: expected %s in %.*s\n", want, (int)rn, r);
    fail();
  }
  assert_true(tu_json_get(j, "id")->type == TU_J_NULL);
  tu_json_free(w);
  tu_json_free(j);
}

static void test_frame_too_large_newline(void **state) {
  (void)state;
  tu_fixture fx;
  jrpc__limits_t lim = JRPC__LIMITS_DEFAULT;
  lim.max_frame_bytes = 100;
  tu_fixture_init(&fx, &lim);
  char *exact = sized_request(100, 1), *over = sized_request(101, 2),
       *big = sized_request(5000, 3), *ok = sized_request(60, 4);
  size_t cap = 6000 + 400, n = 0;
  char *in = malloc(cap);
  assert_non_null(in);
  n += tu_frame(JRPC_FRAMING_NEWLINE, exact, 100, in + n, cap - n);
  n += tu_frame(JRPC_FRAMING_NEWLINE, over, 101, in + n, cap - n);
  n += tu_frame(JRPC_FRAMING_NEWLINE, ok, 60, in + n, cap - n);
  n += tu_frame(JRPC_FRAMING_NEWLINE, big, 5000, in + n, cap - n);
  n += tu_frame(JRPC_FRAMING_NEWLINE, ok, 60, in + n, cap - n);
  static const size_t chunks[] = {0, 1, 7, 64, 99, 100, 101, 4096};
  for (size_t c = 0; c < sizeof chunks / sizeof chunks[0]; c++) {
    const char *fp[8];
    size_t fn[8];
    fx.chunk = chunks[c];
    size_t rn = tu_run(&fx, JRPC_FRAMING_NEWLINE, in, n, out, OUT_CAP);
    assert_false(fx.closed);
    int k = tu_unframe(JRPC_FRAMING_NEWLINE, out, rn, fp, fn, 8);
    if (k != 5)
      print_error("chunk %zu: %d replies: %s\n", chunks[c], k, out);
    assert_int_equal(k, 5);
    tu_assert_json(fp[0], fn[0], "{\"jsonrpc\":\"2.0\",\"result\":0,\"id\":1}");
    assert_too_large(fp[1], fn[1], 100, 101);
    tu_assert_json(fp[2], fn[2], "{\"jsonrpc\":\"2.0\",\"result\":0,\"id\":4}");
    assert_too_large(fp[3], fn[3], 100, 5000);
    tu_assert_json(fp[4], fn[4], "{\"jsonrpc\":\"2.0\",\"result\":0,\"id\":4}");
  }
  /* an oversized final line without its newline, at EOF: in one read
   * with the EOF, and in small reads */
  static const size_t eof_chunks[] = {7, 4096, 0};
  for (size_t c = 0; c < sizeof eof_chunks / sizeof eof_chunks[0]; c++) {
    const char *fp[2];
    size_t fn[2];
    size_t chunk = eof_chunks[c];
    fx.chunk = chunk;
    size_t rn = tu_run(&fx, JRPC_FRAMING_NEWLINE, big, 5000, out, OUT_CAP);
    int k = tu_unframe(JRPC_FRAMING_NEWLINE, out, rn, fp, fn, 2);
    if (k != 1)
      print_error("unterminated oversized line at EOF, reads of %zu: %d "
                  "replies\n",
                  chunk, k);
    assert_int_equal(k, 1);
    assert_too_large(fp[0], fn[0], 100, 5000);
  }
  fx.chunk = 0;
  free(in);
  free(exact);
  free(over);
  free(big);
  free(ok);
  tu_fixture_free(&fx);
}

/* CRLF line ends: the '\r' is not part of the frame, for the limit too;
 * a long run of blanks is a blank line, not an oversized frame. */
static void test_frame_limit_crlf_and_blanks(void **state) {
  (void)state;
  tu_fixture fx;
  jrpc__limits_t lim = JRPC__LIMITS_DEFAULT;
  lim.max_frame_bytes = 100;
  tu_fixture_init(&fx, &lim);
  char *exact = sized_request(100, 1), *over = sized_request(101, 2),
       *ok = sized_request(60, 4);
  size_t cap = 2000, n = 0;
  char *in = malloc(cap);
  assert_non_null(in);
  memcpy(in + n, exact, 100);
  n += 100;
  memcpy(in + n, "\r\n", 2);
  n += 2;
  memcpy(in + n, over, 101);
  n += 101;
  memcpy(in + n, "\r\n", 2);
  n += 2;
  memset(in + n, ' ', 500);
  n += 500;
  in[n++] = '\n';
  memset(in + n, '\t', 300);
  n += 300;
  memcpy(in + n, "\r\n", 2);
  n += 2;
  memcpy(in + n, ok, 60);
  n += 60;
  memcpy(in + n, "\r\n", 2);
  n += 2;
  static const size_t chunks[] = {0, 1, 5, 101, 102};
  for (size_t c = 0; c < sizeof chunks / sizeof chunks[0]; c++) {
    const char *fp[8];
    size_t fn[8];
    fx.chunk = chunks[c];
    size_t rn = tu_run(&fx, JRPC_FRAMING_NEWLINE, in, n, out, OUT_CAP);
    int k = tu_unframe(JRPC_FRAMING_NEWLINE, out, rn, fp, fn, 8);
    if (k != 3)
      print_error("reads of %zu: %d replies: %.*s\n", chunks[c], k, (int)rn,
                  out);
    assert_int_equal(k, 3);
    tu_assert_json(fp[0], fn[0], "{\"jsonrpc\":\"2.0\",\"result\":0,\"id\":1}");
    assert_too_large(fp[1], fn[1], 100, 101);
    tu_assert_json(fp[2], fn[2], "{\"jsonrpc\":\"2.0\",\"result\":0,\"id\":4}");
  }
  fx.chunk = 0;
  free(in);
  free(exact);
  free(over);
  free(ok);
  tu_fixture_free(&fx);
}

/* A length frame cut short by EOF gets no reply (and no crash); the
 * frames before it are answered. */
static void test_length_truncated_at_eof(void **state) {
  tu_fixture *f = *state;
  const char *req =
      "{\"jsonrpc\":\"2.0\",\"method\":\"subtract\",\"params\":[5,2],\"id\":1}";
  char in[512];
  size_t n = tu_frame(JRPC_FRAMING_LENGTH, req, strlen(req), in, sizeof in);
  memcpy(in + n, "\0\0\0\x32{\"jsonrpc\"", 14);
  for (size_t cut = n; cut <= n + 14; cut++) {
    const char *fp[2];
    size_t fn[2];
    size_t rn = tu_run(f, JRPC_FRAMING_LENGTH, in, cut, out, OUT_CAP);
    assert_int_equal(tu_unframe(JRPC_FRAMING_LENGTH, out, rn, fp, fn, 2), 1);
    tu_assert_json(fp[0], fn[0], "{\"jsonrpc\":\"2.0\",\"result\":3,\"id\":1}");
  }
}

/* A full batch at the default limit: every call answered once. */
static void test_batch_at_limit(void **state) {
  tu_fixture *f = *state;
  enum { N = 1000 };
  size_t cap = N * 100, n = 0;
  char *req = malloc(cap);
  assert_non_null(req);
  req[n++] = '[';
  for (int i = 0; i < N; i++)
    n += (size_t)snprintf(req + n, cap - n,
                          "%s{\"jsonrpc\":\"2.0\",\"method\":\"subtract\","
                          "\"params\":[%d,1],\"id\":%d}",
                          i ? "," : "", i, i);
  req[n++] = ']';
  size_t rn = tu_call(f, JRPC_FRAMING_LENGTH, req, n, out, OUT_CAP);
  tu_json_t *j = reply_tree(out, rn);
  assert_int_equal(j->type, TU_J_ARRAY);
  assert_int_equal(j->nkids, N);
  char *seen_id = calloc(N, 1);
  assert_non_null(seen_id);
  for (size_t i = 0; i < N; i++) {
    const tu_json_t *e = j->kids[i];
    long id = strtol(tu_json_get(e, "id")->s, NULL, 10);
    assert_true(id >= 0 && id < N && !seen_id[id]);
    seen_id[id] = 1;
    assert_int_equal(strtol(tu_json_get(e, "result")->s, NULL, 10), id - 1);
  }
  free(seen_id);
  tu_json_free(j);
  free(req);
}

static void test_frame_too_large_length(void **state) {
  (void)state;
  tu_fixture fx;
  jrpc__limits_t lim = JRPC__LIMITS_DEFAULT;
  lim.max_frame_bytes = 100;
  tu_fixture_init(&fx, &lim);
  char *exact = sized_request(100, 1), *ok = sized_request(60, 4);
  char in[1024];
  size_t n = 0;
  n += tu_frame(JRPC_FRAMING_LENGTH, exact, 100, in + n, sizeof in - n);
  n += tu_frame(JRPC_FRAMING_LENGTH, ok, 60, in + n, sizeof in - n);
  /* a header announcing 1000 bytes; only some of them follow */
  memcpy(in + n, "\0\0\x03\xe8", 4);
  n += 4;
  memset(in + n, ' ', 200);
  n += 200;
  n += tu_frame(JRPC_FRAMING_LENGTH, ok, 60, in + n, sizeof in - n);
  static const size_t chunks[] = {0, 1, 3, 5, 64};
  for (size_t c = 0; c < sizeof chunks / sizeof chunks[0]; c++) {
    const char *fp[8];
    size_t fn[8];
    fx.chunk = chunks[c];
    size_t rn = tu_run(&fx, JRPC_FRAMING_LENGTH, in, n, out, OUT_CAP);
    assert_true(fx.closed);
    assert_int_equal(fx.last_rc, JRPC__ECLOSE);
    int k = tu_unframe(JRPC_FRAMING_LENGTH, out, rn, fp, fn, 8);
    if (k != 3)
      print_error("chunk %zu: %d replies: %.*s\n", chunks[c], k, (int)rn, out);
    assert_int_equal(k, 3);
    tu_assert_json(fp[0], fn[0], "{\"jsonrpc\":\"2.0\",\"result\":0,\"id\":1}");
    tu_assert_json(fp[1], fn[1], "{\"jsonrpc\":\"2.0\",\"result\":0,\"id\":4}");
    assert_too_large(fp[2], fn[2], 100, 1000);
  }
  /* a length of 2^32-1 alone: refused at once, before its bytes arrive */
  fx.chunk = 0;
  size_t rn =
      tu_run(&fx, JRPC_FRAMING_LENGTH, "\xff\xff\xff\xff", 4, out, OUT_CAP);
  assert_true(fx.closed);
  const char *fp[2];
  size_t fn[2];
  assert_int_equal(tu_unframe(JRPC_FRAMING_LENGTH, out, rn, fp, fn, 2), 1);
  assert_too_large(fp[0], fn[0], 100, 4294967295u);
  free(exact);
  free(ok);
  tu_fixture_free(&fx);
}

/* ------------------------------------------------------------------ */
/* handler results and errors                                          */
/* ------------------------------------------------------------------ */

static void test_handler_errors(void **state) {
  tu_fixture *f = *state;
  expect(f, "{\"jsonrpc\":\"2.0\",\"method\":\"fail\",\"id\":1}",
         "{\"jsonrpc\":\"2.0\",\"error\":{\"code\":4242,\"message\":"
         "\"it \\\"broke\\\"\\n\\ttwice \\u00e9\"},\"id\":1}");
  expect(f,
         "{\"jsonrpc\":\"2.0\",\"method\":\"fail_code\",\"params\":"
         "[-32602,\"bad a\"],\"id\":1}",
         "{\"jsonrpc\":\"2.0\",\"error\":{\"code\":-32602,\"message\":"
         "\"bad a\"},\"id\":1}");
  expect(f,
         "{\"jsonrpc\":\"2.0\",\"method\":\"fail_code\",\"params\":"
         "[1,\"\"],\"id\":1}",
         "{\"jsonrpc\":\"2.0\",\"error\":{\"code\":1,\"message\":\"\"},"
         "\"id\":1}");
  expect(f,
         "{\"jsonrpc\":\"2.0\",\"method\":\"fail_code\",\"params\":"
         "[-2147483648,\"min\"],\"id\":1}",
         "{\"jsonrpc\":\"2.0\",\"error\":{\"code\":-2147483648,\"message\":"
         "\"min\"},\"id\":1}");
  expect(f,
         "{\"jsonrpc\":\"2.0\",\"method\":\"fail_code\",\"params\":"
         "[-32099,\"\\u0001\\u001f\\\\\"],\"id\":1}",
         "{\"jsonrpc\":\"2.0\",\"error\":{\"code\":-32099,\"message\":"
         "\"\\u0001\\u001F\\\\\"},\"id\":1}");
  /* jrpc_error_begin + data */
  expect(f, "{\"jsonrpc\":\"2.0\",\"method\":\"fail_data\",\"id\":1}",
         "{\"jsonrpc\":\"2.0\",\"error\":{\"code\":-32602,\"message\":"
         "\"Invalid params\",\"data\":{\"field\":\"a\",\"why\":[1,2,null]}},"
         "\"id\":1}");
  expect(f,
         "{\"jsonrpc\":\"2.0\",\"method\":\"fail_data\",\"params\":"
         "{\"x\":[1,{\"y\":null}],\"s\":\"\\u00e9\"},\"id\":1}",
         "{\"jsonrpc\":\"2.0\",\"error\":{\"code\":-32602,\"message\":"
         "\"Invalid params\",\"data\":{\"x\":[1,{\"y\":null}],\"s\":\"\xc3\xa9"
         "\"}},\"id\":1}");
  /* an error discards the partial result */
  size_t rn = tu_calls(
      f, "{\"jsonrpc\":\"2.0\",\"method\":\"fail_after_write\",\"id\":1}", out,
      OUT_CAP);
  tu_assert_json(out, rn,
                 "{\"jsonrpc\":\"2.0\",\"error\":{\"code\":77,\"message\":"
                 "\"late\"},\"id\":1}");
  assert_null(memmem(out, rn, "LEAK", 4));
  assert_null(memmem(out, rn, "partial", 7));
  /* invalid params reported by the handler, from the view API's errors */
  expect(f,
         "{\"jsonrpc\":\"2.0\",\"method\":\"subtract\",\"params\":[1.5,2],"
         "\"id\":1}",
         "{\"jsonrpc\":\"2.0\",\"error\":{\"code\":-32602,\"message\":"
         "\"Invalid params\"},\"id\":1}");
}

static void test_handler_failed_codes(void **state) {
  tu_fixture *f = *state;
  expect_err(f, "{\"jsonrpc\":\"2.0\",\"method\":\"fail_bare\",\"id\":7}",
             JRPC_HANDLER_FAILED, "7");
  static const char *kinds[] = {"key",   "unclosed", "two",     "end",
                                "nokey", "mismatch", "dangling"};
  for (size_t i = 0; i < sizeof kinds / sizeof kinds[0]; i++) {
    char req[256];
    snprintf(req, sizeof req,
             "{\"jsonrpc\":\"2.0\",\"method\":\"misuse\",\"params\":[\"%s\"],"
             "\"id\":\"%s\"}",
             kinds[i], kinds[i]);
    char id[64];
    snprintf(id, sizeof id, "\"%s\"", kinds[i]);
    expect_err(f, req, JRPC_HANDLER_FAILED, id);
  }
  /* a failing element does not spoil its batch */
  size_t rn = tu_calls(
      f,
      "[{\"jsonrpc\":\"2.0\",\"method\":\"misuse\",\"params\":[\"unclosed\"],"
      "\"id\":1},{\"jsonrpc\":\"2.0\",\"method\":\"subtract\",\"params\":"
      "[5,2],\"id\":2},{\"jsonrpc\":\"2.0\",\"method\":\"fail_bare\","
      "\"id\":3}]",
      out, OUT_CAP);
  tu_json_t *j = reply_tree(out, rn);
  assert_int_equal(j->type, TU_J_ARRAY);
  assert_int_equal(j->nkids, 3);
  int seen = 0;
  for (size_t i = 0; i < 3; i++) {
    const tu_json_t *e = j->kids[i], *id = tu_json_get(e, "id");
    const tu_json_t *err = tu_json_get(e, "error");
    if (!strcmp(id->s, "2")) {
      assert_string_equal(tu_json_get(e, "result")->s, "3");
      seen |= 2;
    } else {
      assert_non_null(err);
      assert_string_equal(tu_json_get(err, "code")->s, "-32000");
      seen |= !strcmp(id->s, "1") ? 1 : 4;
    }
  }
  assert_int_equal(seen, 7);
  tu_json_free(j);
}

static void test_result_null_when_nothing_written(void **state) {
  tu_fixture *f = *state;
  expect(f, "{\"jsonrpc\":\"2.0\",\"method\":\"nothing\",\"id\":1}",
         "{\"jsonrpc\":\"2.0\",\"result\":null,\"id\":1}");
  expect(f, "{\"jsonrpc\":\"2.0\",\"method\":\"update\",\"id\":\"u\"}",
         "{\"jsonrpc\":\"2.0\",\"result\":null,\"id\":\"u\"}");
}

static void test_response_too_large(void **state) {
  (void)state;
  tu_fixture fx;
  jrpc__limits_t lim = JRPC__LIMITS_DEFAULT;
  lim.max_response_bytes = 4096;
  tu_fixture_init(&fx, &lim);
  expect(&fx,
         "{\"jsonrpc\":\"2.0\",\"method\":\"huge\",\"params\":[3],\"id\":1}",
         "{\"jsonrpc\":\"2.0\",\"result\":\"xxx\",\"id\":1}");
  static const char *big[] = {
      "{\"jsonrpc\":\"2.0\",\"method\":\"huge\",\"params\":[100000],\"id\":7}",
      "{\"jsonrpc\":\"2.0\",\"method\":\"huge\",\"params\":[5000],\"id\":7}",
      ("{\"jsonrpc\":\"2.0\",\"id\":7,\"method\":\"huge\","
       "\"params\":[100000,\"arr\"]}"),
  };
  for (size_t i = 0; i < sizeof big / sizeof big[0]; i++) {
    expect_err(&fx, big[i], JRPC_RESPONSE_TOO_LARGE, "7");
    assert_true(fx.out_n < 4096);
    assert_null(memmem(out, strlen(out), "xxxxxxxx", 8));
  }
  /* in a batch only the oversized element fails */
  size_t rn = tu_calls(
      &fx,
      "[{\"jsonrpc\":\"2.0\",\"method\":\"huge\",\"params\":[3],\"id\":1},"
      "{\"jsonrpc\":\"2.0\",\"method\":\"huge\",\"params\":[100000],\"id\":2},"
      "{\"jsonrpc\":\"2.0\",\"method\":\"subtract\",\"params\":[5,2],"
      "\"id\":3}]",
      out, OUT_CAP);
  tu_json_t *j = reply_tree(out, rn);
  assert_int_equal(j->type, TU_J_ARRAY);
  assert_int_equal(j->nkids, 3);
  for (size_t i = 0; i < 3; i++) {
    const tu_json_t *e = j->kids[i];
    const char *id = tu_json_get(e, "id")->s;
    const tu_json_t *err = tu_json_get(e, "error");
    if (!strcmp(id, "2")) {
      assert_non_null(err);
      assert_string_equal(tu_json_get(err, "code")->s, "-32003");
    } else {
      assert_null(err);
    }
  }
  tu_json_free(j);
  /* under the default limit a 1 MiB result goes through whole */
  tu_fixture_free(&fx);
  tu_fixture_init(&fx, NULL);
  rn = tu_calls(
      &fx,
      "{\"jsonrpc\":\"2.0\",\"method\":\"huge\",\"params\":[1048576],\"id\":1}",
      out, OUT_CAP);
  j = reply_tree(out, rn);
  assert_int_equal(tu_json_get(j, "result")->n, 1048576);
  tu_json_free(j);
  tu_fixture_free(&fx);
}

static void test_control_chars_in_reply(void **state) {
  tu_fixture *f = *state;
  for (int fr = 0; fr < 2; fr++) {
    const char *req = "{\"jsonrpc\":\"2.0\",\"method\":\"ctl\",\"id\":1}";
    size_t rn = tu_call(f, fr, req, strlen(req), out, OUT_CAP);
    for (size_t i = 0; i < rn; i++)
      if ((unsigned char)out[i] < 0x20) {
        print_error("raw control byte 0x%02x at %zu in %s\n",
                    (unsigned char)out[i], i, out);
        fail();
      }
    tu_json_t *j = reply_tree(out, rn);
    const tu_json_t *res = tu_json_get(j, "result");
    assert_non_null(res);
    assert_int_equal(res->type, TU_J_STRING);
    assert_int_equal(res->n, tu_ctl_len);
    assert_memory_equal(res->s, tu_ctl_bytes, tu_ctl_len);
    tu_json_free(j);
  }
  /* the same bytes in, unescaped by as_str and escaped again by w_str */
  expect(f,
         "{\"jsonrpc\":\"2.0\",\"method\":\"echo_str\",\"params\":[\""
         "\\u0000\\u0001\\u0002\\u0003\\u0004\\u0005\\u0006\\u0007"
         "\\b\\t\\n\\u000b\\f\\r\\u000e\\u000f"
         "\\u0010\\u0011\\u0012\\u0013\\u0014\\u0015\\u0016\\u0017"
         "\\u0018\\u0019\\u001a\\u001b\\u001c\\u001d\\u001e\\u001f"
         "\x7f\\\"\\\\/\xc3\xa9\xe2\x82\xac\\ud83d\\ude00 end\"],\"id\":1}",
         "{\"jsonrpc\":\"2.0\",\"result\":\""
         "\\u0000\\u0001\\u0002\\u0003\\u0004\\u0005\\u0006\\u0007"
         "\\u0008\\u0009\\u000a\\u000b\\u000c\\u000d\\u000e\\u000f"
         "\\u0010\\u0011\\u0012\\u0013\\u0014\\u0015\\u0016\\u0017"
         "\\u0018\\u0019\\u001a\\u001b\\u001c\\u001d\\u001e\\u001f"
         "\\u007f\\u0022\\u005c\\u002f\\u00e9\\u20ac\\ud83d\\ude00 end\","
         "\"id\":1}");
  /* w_raw of params with line breaks in them: no raw newline in a
   * newline-framed reply */
  const char *req =
      "{\"jsonrpc\":\"2.0\",\"method\":\"echo\",\"params\":[1,\r\n"
      "2,\n3],\"id\":1}";
  size_t rn = tu_call(f, JRPC_FRAMING_LENGTH, req, strlen(req), out, OUT_CAP);
  tu_assert_json(out, rn, "{\"jsonrpc\":\"2.0\",\"result\":[1,2,3],\"id\":1}");
  const char *line = "{\"jsonrpc\":\"2.0\",\"method\":\"echo\",\"params\":"
                     "[1,\r2,\t3],\"id\":1}";
  rn = tu_call(f, JRPC_FRAMING_NEWLINE, line, strlen(line), out, OUT_CAP);
  tu_assert_json(out, rn, "{\"jsonrpc\":\"2.0\",\"result\":[1,2,3],\"id\":1}");
  assert_null(memchr(out, '\r', rn));
}

/* Invalid UTF-8 handed to the writer comes out as U+FFFD: the reply stays
 * valid JSON (tu_call checks) and keeps the valid bytes around it. */
static void test_writer_invalid_utf8(void **state) {
  tu_fixture *f = *state;
  for (int fr = 0; fr < 2; fr++) {
    const char *req = "{\"jsonrpc\":\"2.0\",\"method\":\"bad_utf8\",\"id\":1}";
    size_t rn = tu_call(f, fr, req, strlen(req), out, OUT_CAP);
    tu_json_t *j = reply_tree(out, rn);
    const tu_json_t *res = tu_json_get(j, "result");
    assert_non_null(res);
    assert_int_equal(res->type, TU_J_OBJECT);
    assert_int_equal(res->nkids, 1);
    const tu_json_t *v = res->kids[0];
    assert_true(v->key_n == 4 && memcmp(v->key, "k\xef\xbf\xbd", 4) == 0);
    assert_int_equal(v->type, TU_J_STRING);
    assert_true(v->n >= 8);
    assert_true(v->s[0] == 'a');
    assert_memory_equal(v->s + 1, "\xef\xbf\xbd", 3);
    assert_memory_equal(v->s + v->n - 3, "\xef\xbf\xbd", 3);
    assert_non_null(memchr(v->s, 'b', v->n));
    tu_json_free(j);
  }
}

/* Several requests on one stream: replies in request order. */
static void test_reply_order(void **state) {
  tu_fixture *f = *state;
  static const char *reqs[] = {
      "{\"jsonrpc\":\"2.0\",\"method\":\"subtract\",\"params\":[5,2],"
      "\"id\":1}",
      "{\"jsonrpc\":\"2.0\",\"method\":\"update\"}",
      "{\"jsonrpc\":\"2.0\",\"method\":\"fail\",\"id\":2}",
      "[1]",
      "{\"jsonrpc\":\"2.0\",\"method\":\"nope\",\"id\":3}",
      "{\"jsonrpc\":\"2.0\",\"method\":\"sum\",\"params\":[1,2,,],\"id\":4}",
      "[{\"jsonrpc\":\"2.0\",\"method\":\"update\"}]",
      "{\"jsonrpc\":\"2.0\",\"method\":\"nothing\",\"id\":5}",
      "{\"jsonrpc\":\"2.0\",\"method\":\"subtract\",\"params\":[2,5],"
      "\"id\":6}",
  };
  static const char *replies[] = {
      "{\"jsonrpc\":\"2.0\",\"result\":3,\"id\":1}",
      "{\"jsonrpc\":\"2.0\",\"error\":{\"code\":4242,\"message\":"
      "\"it \\\"broke\\\"\\n\\ttwice \\u00e9\"},\"id\":2}",
      "[{\"jsonrpc\":\"2.0\",\"error\":{\"code\":-32600,\"message\":"
      "\"Invalid Request\"},\"id\":null}]",
      "{\"jsonrpc\":\"2.0\",\"error\":{\"code\":-32601,\"message\":"
      "\"Method not found\"},\"id\":3}",
      parse_error,
      "{\"jsonrpc\":\"2.0\",\"result\":null,\"id\":5}",
      "{\"jsonrpc\":\"2.0\",\"result\":-3,\"id\":6}",
  };
  enum { NREQ = sizeof reqs / sizeof reqs[0], NREP = 7 };
  for (int fr = 0; fr < 2; fr++) {
    char in[4096];
    size_t n = 0;
    for (size_t i = 0; i < NREQ; i++) {
      n += tu_frame(fr, reqs[i], strlen(reqs[i]), in + n, sizeof in - n);
      if (fr == JRPC_FRAMING_NEWLINE && i % 3 == 1) {
        /* CRLF endings and blank lines are tolerated */
        in[n - 1] = '\r';
        memcpy(in + n, "\n\n  \r\n", 6);
        n += 6;
      }
    }
    static const size_t chunks[] = {0, 1, 2, 3, 17, 100};
    for (size_t c = 0; c < sizeof chunks / sizeof chunks[0]; c++) {
      const char *fp[NREQ];
      size_t fn[NREQ];
      f->chunk = chunks[c];
      size_t rn = tu_run(f, fr, in, n, out, OUT_CAP);
      int k = tu_unframe(fr, out, rn, fp, fn, NREQ);
      if (k != NREP)
        print_error("[%s] chunk %zu: %d replies: %.*s\n", framing_name(fr),
                    chunks[c], k, (int)rn, out);
      assert_int_equal(k, NREP);
      for (int i = 0; i < NREP; i++)
        tu_assert_json(fp[i], fn[i], replies[i]);
    }
  }
  f->chunk = 0;
}

/* Whitespace around and inside a request is insignificant. */
static void test_whitespace(void **state) {
  tu_fixture *f = *state;
  expect(f,
         " \t{ \"jsonrpc\" : \"2.0\" ,\r\n \"method\"\t:\"subtract\", "
         "\"params\" : [ 5 , 2 ] , \"id\" : 1 }\r\n\t ",
         "{\"jsonrpc\":\"2.0\",\"result\":3,\"id\":1}");
  expect(f,
         "\t{ \"jsonrpc\" : \"2.0\" , \"method\"\t:\"subtract\", "
         "\"params\" : [ 5 , 2 ] , \"id\" : 1 } ",
         "{\"jsonrpc\":\"2.0\",\"result\":3,\"id\":1}");
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_jsonrpc_member),
      cmocka_unit_test(test_escaped_envelope_strings),
      cmocka_unit_test(test_escaped_member_names),
      cmocka_unit_test(test_method_member),
      cmocka_unit_test(test_params_member),
      cmocka_unit_test(test_id_echo),
      cmocka_unit_test(test_id_long_string),
      cmocka_unit_test(test_id_invalid_types),
      cmocka_unit_test(test_id_null_is_a_call),
      cmocka_unit_test(test_notifications),
      cmocka_unit_test(test_batch_empty),
      cmocka_unit_test(test_batch_invalid_elements),
      cmocka_unit_test(test_batch_all_notifications),
      cmocka_unit_test(test_batch_mixed),
      cmocka_unit_test(test_batch_calls_among_scalars),
      cmocka_unit_test(test_max_batch),
      cmocka_unit_test(test_invalid_json_anywhere),
      cmocka_unit_test(test_empty_length_frame),
      cmocka_unit_test(test_invalid_utf8),
      cmocka_unit_test(test_top_level_scalars),
      cmocka_unit_test(test_depth),
      cmocka_unit_test(test_depth_brackets_in_strings),
      cmocka_unit_test(test_depth_limit_exact),
      cmocka_unit_test(test_rpc_reserved),
      cmocka_unit_test(test_duplicate_members),
      cmocka_unit_test(test_frame_too_large_newline),
      cmocka_unit_test(test_frame_too_large_length),
      cmocka_unit_test(test_frame_limit_crlf_and_blanks),
      cmocka_unit_test(test_length_truncated_at_eof),
      cmocka_unit_test(test_batch_at_limit),
      cmocka_unit_test(test_handler_errors),
      cmocka_unit_test(test_handler_failed_codes),
      cmocka_unit_test(test_result_null_when_nothing_written),
      cmocka_unit_test(test_response_too_large),
      cmocka_unit_test(test_control_chars_in_reply),
      cmocka_unit_test(test_writer_invalid_utf8),
      cmocka_unit_test(test_reply_order),
      cmocka_unit_test(test_whitespace),
      cmocka_unit_test(tu_test_auto_switched),
  };
  return cmocka_run_group_tests(tests, tu_setup, tu_teardown);
}
