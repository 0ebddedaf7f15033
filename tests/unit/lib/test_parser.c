/* test_parser.c - the parameter view API (jrpc_at/get/len/type/first/next/
 * key/as_i64/as_f64/as_bool/as_str/raw) as a handler sees it, through the
 * whole pipeline on the jsmn backend: arrays, objects, nesting, absent
 * values, number conversion and its errors, string unescaping, exact raw
 * bytes, duplicate keys, and inputs far larger than any fixed token cap.
 *
 * The checks run inside a handler, where a cmocka assertion would longjmp
 * through library code; so they are recorded (CHECK*) and reported by the
 * test after the call returns. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <cmocka.h>

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "testutil.h"

#define OUT_CAP (1u << 20)
static char out[OUT_CAP];

/* ------------------------------------------------------------------ */
/* Recording checks                                                    */
/* ------------------------------------------------------------------ */

static char fail_msg[4096];
static size_t fail_len;
static int fail_count;

static void failf(int line, const char *fmt, ...) {
  va_list ap;
  fail_count++;
  if (fail_len >= sizeof fail_msg - 1)
    return;
  int k = snprintf(fail_msg + fail_len, sizeof fail_msg - fail_len,
                   "  line %d: ", line);
  if (k > 0)
    fail_len += (size_t)k;
  if (fail_len >= sizeof fail_msg - 1)
    return;
  va_start(ap, fmt);
  k = vsnprintf(fail_msg + fail_len, sizeof fail_msg - fail_len, fmt, ap);
  va_end(ap);
  if (k > 0)
    fail_len += (size_t)k;
  if (fail_len < sizeof fail_msg - 1)
    fail_msg[fail_len++] = '\n';
  if (fail_len >= sizeof fail_msg)
    fail_len = sizeof fail_msg - 1;
  fail_msg[fail_len] = '\0';
}

#define CHECK(cond)                                                            \
  do {                                                                         \
    if (!(cond))                                                               \
      failf(__LINE__, "%s", #cond);                                            \
  } while (0)
#define CHECK_I(a, b)                                                          \
  do {                                                                         \
    long long a_ = (long long)(a), b_ = (long long)(b);                        \
    if (a_ != b_)                                                              \
      failf(__LINE__, "%s == %s: %lld != %lld", #a, #b, a_, b_);               \
  } while (0)

/* v is a string whose unescaped bytes are want[0..wn). */
#define CHECK_STR(c, v, want, wn) check_str((c), (v), (want), (wn), __LINE__)
static void check_str(jrpc_call_t *c, jrpc_val_t v, const char *want, size_t wn,
                      int line) {
  const char *s = NULL;
  size_t n = 0;
  int rc = jrpc_as_str(c, v, &s, &n);
  if (rc != 0) {
    failf(line, "as_str failed: %d", rc);
    return;
  }
  if (n != wn || memcmp(s, want, wn) != 0)
    failf(line, "as_str: got %zu bytes \"%.*s\", want %zu \"%.*s\"", n, (int)n,
          s, wn, (int)wn, want);
  else if (s[n] != '\0')
    failf(line, "as_str: not NUL-terminated");
}

/* raw(v) is exactly `want`. */
#define CHECK_RAW(c, v, want) check_raw((c), (v), (want), __LINE__)
static void check_raw(jrpc_call_t *c, jrpc_val_t v, const char *want,
                      int line) {
  const char *s = NULL;
  size_t n = 0, wn = strlen(want);
  int rc = jrpc_raw(c, v, &s, &n);
  if (rc != 0)
    failf(line, "raw failed: %d", rc);
  else if (n != wn || memcmp(s, want, wn) != 0)
    failf(line, "raw: got \"%.*s\", want \"%s\"", (int)n, s, want);
}

#define CHECK_KEY(c, v, want, wn) check_key((c), (v), (want), (wn), __LINE__)
static void check_key(jrpc_call_t *c, jrpc_val_t v, const char *want, size_t wn,
                      int line) {
  const char *s = NULL;
  size_t n = 0;
  int rc = jrpc_key(c, v, &s, &n);
  if (rc != 0)
    failf(line, "key failed: %d", rc);
  else if (n != wn || memcmp(s, want, wn) != 0)
    failf(line, "key: got \"%.*s\" (%zu), want \"%.*s\" (%zu)", (int)n, s, n,
          (int)wn, want, wn);
  else if (s[n] != '\0')
    failf(line, "key: not NUL-terminated");
}

#define CHECK_I64(c, v, want) check_i64((c), (v), (want), __LINE__)
static void check_i64(jrpc_call_t *c, jrpc_val_t v, int64_t want, int line) {
  int64_t x = 12345;
  int rc = jrpc_as_i64(c, v, &x);
  if (rc != 0 || x != want)
    failf(line, "as_i64: rc %d value %lld, want 0 and %lld", rc, (long long)x,
          (long long)want);
}

#define CHECK_I64_ERR(c, v, err) check_i64_err((c), (v), (err), __LINE__)
static void check_i64_err(jrpc_call_t *c, jrpc_val_t v, int err, int line) {
  int64_t x = 0;
  int rc = jrpc_as_i64(c, v, &x);
  if (rc != err)
    failf(line, "as_i64: rc %d, want %d", rc, err);
}

/* ------------------------------------------------------------------ */
/* The probe handler                                                   */
/* ------------------------------------------------------------------ */

typedef void (*probe_fn)(jrpc_call_t *c, jrpc_val_t params);
static probe_fn probe;
static int probe_ran;

static int h_probe(jrpc_call_t *c, jrpc_val_t params, void *udata) {
  (void)udata;
  probe_ran++;
  probe(c, params);
  return jrpc_w_bool(c, 1);
}

static int setup(void **state) {
  int rc = tu_setup(state);
  if (rc == 0)
    tu_fixture_add(*state, "probe", h_probe, NULL);
  return rc;
}

/* Calls "probe" with params text (NULL: no params) and checks that the
 * handler ran once with no failed check. */
static void run_probe(tu_fixture *f, const char *params, probe_fn fn) {
  size_t pn = params ? strlen(params) : 0, cap = pn + 128;
  char *req = malloc(cap);
  assert_non_null(req);
  if (params)
    snprintf(req, cap,
             "{\"jsonrpc\":\"2.0\",\"method\":\"probe\",\"params\":%s,"
             "\"id\":1}",
             params);
  else
    snprintf(req, cap, "{\"jsonrpc\":\"2.0\",\"method\":\"probe\",\"id\":1}");
  probe = fn;
  probe_ran = 0;
  fail_count = 0;
  fail_len = 0;
  fail_msg[0] = '\0';
  size_t rn = tu_call(f, JRPC_FRAMING_LENGTH, req, strlen(req), out, OUT_CAP);
  free(req);
  if (fail_count) {
    print_error("%d failed check(s) in the handler:\n%s", fail_count, fail_msg);
    fail();
  }
  if (probe_ran != 1)
    print_error("handler ran %d times; reply: %s\n", probe_ran, out);
  assert_int_equal(probe_ran, 1);
  tu_assert_json(out, rn, "{\"jsonrpc\":\"2.0\",\"result\":true,\"id\":1}");
}

/* ------------------------------------------------------------------ */
/* Arrays                                                              */
/* ------------------------------------------------------------------ */

static const char array_params[] =
    "[1, \"two\", [3,  4 ], {\"five\" : 5}, null, true, false, 1.5, -7]";

static void p_array(jrpc_call_t *c, jrpc_val_t p) {
  static const jrpc_type_t types[] = {
      JRPC_T_NUMBER, JRPC_T_STRING, JRPC_T_ARRAY,  JRPC_T_OBJECT, JRPC_T_NULL,
      JRPC_T_TRUE,   JRPC_T_FALSE,  JRPC_T_NUMBER, JRPC_T_NUMBER};
  CHECK_I(jrpc_type(c, p), JRPC_T_ARRAY);
  CHECK(!jrpc_is_none(p));
  CHECK_I(jrpc_len(c, p), 9);
  for (uint32_t i = 0; i < 9; i++) {
    CHECK_I(jrpc_type(c, jrpc_at(c, p, i)), types[i]);
    CHECK(!jrpc_is_none(jrpc_at(c, p, i)));
  }
  CHECK(jrpc_is_none(jrpc_at(c, p, 9)));
  CHECK_I(jrpc_type(c, jrpc_at(c, p, 9)), JRPC_T_NONE);
  CHECK(jrpc_is_none(jrpc_at(c, p, 1000000)));
  CHECK(jrpc_is_none(jrpc_at(c, p, UINT32_MAX)));

  /* iteration visits the same elements in order */
  uint32_t k = 0;
  for (jrpc_val_t e = jrpc_first(c, p); !jrpc_is_none(e);
       e = jrpc_next(c, e), k++) {
    if (k >= 9) {
      CHECK(!"iteration does not stop");
      break;
    }
    CHECK_I(jrpc_type(c, e), types[k]);
    const char *a, *b;
    size_t an, bn;
    if (jrpc_raw(c, e, &a, &an) == 0 &&
        jrpc_raw(c, jrpc_at(c, p, k), &b, &bn) == 0)
      CHECK(an == bn && memcmp(a, b, an) == 0);
    else
      CHECK(!"raw failed");
  }
  CHECK_I(k, 9);

  CHECK_I64(c, jrpc_at(c, p, 0), 1);
  CHECK_STR(c, jrpc_at(c, p, 1), "two", 3);
  jrpc_val_t inner = jrpc_at(c, p, 2);
  CHECK_I(jrpc_len(c, inner), 2);
  CHECK_I64(c, jrpc_at(c, inner, 0), 3);
  CHECK_I64(c, jrpc_at(c, inner, 1), 4);
  CHECK(jrpc_is_none(jrpc_at(c, inner, 2)));
  CHECK_RAW(c, inner, "[3,  4 ]");
  jrpc_val_t obj = jrpc_at(c, p, 3);
  CHECK_I(jrpc_len(c, obj), 1);
  CHECK_I64(c, jrpc_get(c, obj, "five"), 5);
  CHECK_I64(c, jrpc_at(c, obj, 0), 5);
  CHECK_RAW(c, obj, "{\"five\" : 5}");

  int b = 7;
  CHECK_I(jrpc_as_bool(c, jrpc_at(c, p, 5), &b), 0);
  CHECK_I(b, 1);
  CHECK_I(jrpc_as_bool(c, jrpc_at(c, p, 6), &b), 0);
  CHECK_I(b, 0);
  CHECK_I(jrpc_as_bool(c, jrpc_at(c, p, 0), &b), JRPC_ETYPE);
  CHECK_I(jrpc_as_bool(c, jrpc_at(c, p, 4), &b), JRPC_ETYPE);
  CHECK_I(jrpc_as_bool(c, jrpc_at(c, p, 1), &b), JRPC_ETYPE);

  double d = 0;
  CHECK_I(jrpc_as_f64(c, jrpc_at(c, p, 7), &d), 0);
  CHECK(d == 1.5);
  CHECK_I(jrpc_as_f64(c, jrpc_at(c, p, 8), &d), 0);
  CHECK(d == -7.0);
  CHECK_I(jrpc_as_f64(c, jrpc_at(c, p, 1), &d), JRPC_ETYPE);
  CHECK_I(jrpc_as_f64(c, jrpc_at(c, p, 4), &d), JRPC_ETYPE);

  CHECK_I64_ERR(c, jrpc_at(c, p, 7), JRPC_ERANGE);
  CHECK_I64_ERR(c, jrpc_at(c, p, 1), JRPC_ETYPE);
  CHECK_I64_ERR(c, jrpc_at(c, p, 4), JRPC_ETYPE);
  CHECK_I64_ERR(c, jrpc_at(c, p, 5), JRPC_ETYPE);
  CHECK_I64_ERR(c, inner, JRPC_ETYPE);
  CHECK_I64(c, jrpc_at(c, p, 8), -7);

  const char *s;
  size_t n;
  CHECK_I(jrpc_as_str(c, jrpc_at(c, p, 0), &s, &n), JRPC_ETYPE);
  CHECK_I(jrpc_as_str(c, jrpc_at(c, p, 4), &s, &n), JRPC_ETYPE);
  CHECK_I(jrpc_as_str(c, inner, &s, &n), JRPC_ETYPE);

  /* len of non-containers is 0; get on an array is absent */
  CHECK_I(jrpc_len(c, jrpc_at(c, p, 0)), 0);
  CHECK_I(jrpc_len(c, jrpc_at(c, p, 1)), 0);
  CHECK_I(jrpc_len(c, jrpc_at(c, p, 4)), 0);
  CHECK(jrpc_is_none(jrpc_get(c, p, "five")));
  CHECK(jrpc_is_none(jrpc_get(c, p, "0")));
  /* at/first on scalars are absent */
  CHECK(jrpc_is_none(jrpc_at(c, jrpc_at(c, p, 0), 0)));
  CHECK(jrpc_is_none(jrpc_at(c, jrpc_at(c, p, 1), 0)));
  CHECK(jrpc_is_none(jrpc_first(c, jrpc_at(c, p, 1))));
  CHECK(jrpc_is_none(jrpc_first(c, jrpc_at(c, p, 4))));

  CHECK_RAW(c, jrpc_at(c, p, 1), "\"two\"");
  CHECK_RAW(c, jrpc_at(c, p, 4), "null");
  CHECK_RAW(c, jrpc_at(c, p, 5), "true");
  CHECK_RAW(c, jrpc_at(c, p, 6), "false");
  CHECK_RAW(c, jrpc_at(c, p, 7), "1.5");
  CHECK_RAW(c, jrpc_at(c, p, 8), "-7");
  CHECK_RAW(c, p, array_params);
}

static void test_array_views(void **state) {
  run_probe(*state, array_params, p_array);
}

static void p_empty(jrpc_call_t *c, jrpc_val_t p) {
  jrpc_val_t a = jrpc_at(c, p, 0), o = jrpc_at(c, p, 1);
  CHECK_I(jrpc_len(c, p), 2);
  CHECK_I(jrpc_type(c, a), JRPC_T_ARRAY);
  CHECK_I(jrpc_type(c, o), JRPC_T_OBJECT);
  CHECK_I(jrpc_len(c, a), 0);
  CHECK_I(jrpc_len(c, o), 0);
  CHECK(jrpc_is_none(jrpc_first(c, a)));
  CHECK(jrpc_is_none(jrpc_first(c, o)));
  CHECK(jrpc_is_none(jrpc_at(c, a, 0)));
  CHECK(jrpc_is_none(jrpc_at(c, o, 0)));
  CHECK(jrpc_is_none(jrpc_get(c, o, "")));
  CHECK_RAW(c, a, "[ ]");
  CHECK_RAW(c, o, "{}");
}

static void test_empty_containers(void **state) {
  run_probe(*state, "[[ ],{}]", p_empty);
}

/* ------------------------------------------------------------------ */
/* Objects and keys                                                    */
/* ------------------------------------------------------------------ */

static const char object_params[] =
    "{\"a\":1,\"b\":{\"c\":[true]},\"a\":2,\"e\\u00e9\":\"x\",\"\":0,"
    "\"\\u0000k\":\"nul\",\"q\\\"\\\\\":[]}";

static void p_object(jrpc_call_t *c, jrpc_val_t p) {
  CHECK_I(jrpc_type(c, p), JRPC_T_OBJECT);
  CHECK_I(jrpc_len(c, p), 7);
  CHECK_I64(c, jrpc_get(c, p, "a"), 1); /* first of the duplicates */
  jrpc_val_t b = jrpc_get(c, p, "b");
  CHECK_I(jrpc_type(c, b), JRPC_T_OBJECT);
  jrpc_val_t cc = jrpc_get(c, b, "c");
  CHECK_I(jrpc_type(c, cc), JRPC_T_ARRAY);
  CHECK_I(jrpc_len(c, cc), 1);
  CHECK_I(jrpc_type(c, jrpc_at(c, cc, 0)), JRPC_T_TRUE);
  CHECK_RAW(c, b, "{\"c\":[true]}");
  CHECK(jrpc_is_none(jrpc_get(c, p, "missing")));
  CHECK(jrpc_is_none(jrpc_get(c, p, "A")));
  CHECK(jrpc_is_none(jrpc_get(c, p, "a ")));
  CHECK(jrpc_is_none(jrpc_get(c, b, "a"))); /* not a deep search */
  CHECK(jrpc_is_none(jrpc_get(c, p, "c")));
  CHECK_I(jrpc_type(c, jrpc_get(c, p, "missing")), JRPC_T_NONE);
  CHECK_I64(c, jrpc_get(c, p, ""), 0);
  /* by position: the value of the i-th member */
  CHECK_I64(c, jrpc_at(c, p, 0), 1);
  CHECK_I64(c, jrpc_at(c, p, 2), 2);
  CHECK_STR(c, jrpc_at(c, p, 3), "x", 1);
  CHECK(jrpc_is_none(jrpc_at(c, p, 7)));

  /* keys, unescaped and NUL-terminated, in document order */
  static const struct {
    const char *k;
    size_t n;
  } keys[] = {{"a", 1}, {"b", 1},   {"a", 1},    {"e\xc3\xa9", 3},
              {"", 0},  {"\0k", 2}, {"q\"\\", 3}};
  uint32_t i = 0;
  for (jrpc_val_t m = jrpc_first(c, p); !jrpc_is_none(m);
       m = jrpc_next(c, m), i++) {
    if (i >= 7) {
      CHECK(!"iteration does not stop");
      break;
    }
    CHECK_KEY(c, m, keys[i].k, keys[i].n);
    const char *x, *y;
    size_t xn, yn;
    CHECK(jrpc_raw(c, m, &x, &xn) == 0 &&
          jrpc_raw(c, jrpc_at(c, p, i), &y, &yn) == 0 && xn == yn &&
          memcmp(x, y, xn) == 0);
  }
  CHECK_I(i, 7);
  /* the values the iteration gave */
  jrpc_val_t m = jrpc_first(c, p);
  CHECK_I64(c, m, 1);
  m = jrpc_next(c, jrpc_next(c, m));
  CHECK_I64(c, m, 2);

  CHECK_KEY(c, jrpc_get(c, p, "b"), "b", 1);
  CHECK_KEY(c, jrpc_at(c, p, 3), "e\xc3\xa9", 3);
  CHECK_KEY(c, jrpc_get(c, b, "c"), "c", 1);
  /* key() of something that is not a member */
  const char *s;
  size_t n;
  CHECK(jrpc_key(c, p, &s, &n) < 0);
  CHECK(jrpc_key(c, jrpc_at(c, cc, 0), &s, &n) < 0);
  CHECK(jrpc_key(c, jrpc_at(c, p, 99), &s, &n) < 0);
  CHECK_RAW(c, p, object_params);
}

static void test_object_views(void **state) {
  run_probe(*state, object_params, p_object);
}

/* A member name is a string: "\u0061b" and "ab" are the same name. */
static char long_key[6000];

static void p_escaped_key_get(jrpc_call_t *c, jrpc_val_t p) {
  CHECK_I64(c, jrpc_get(c, p, "ab"), 1);
  CHECK_I64(c, jrpc_get(c, p, "\xc3\xa9"), 2);
  CHECK_I64(c, jrpc_get(c, p, "a/b"), 3);
  CHECK_I64(c, jrpc_get(c, p, "a key with an escape \xc3\xa9 inside"), 4);
  CHECK_I64(c, jrpc_get(c, p, long_key), 5);
  CHECK_KEY(c, jrpc_at(c, p, 4), long_key, 5000);
  CHECK(jrpc_is_none(jrpc_get(c, p, "\\u0061b")));
  CHECK(jrpc_is_none(jrpc_get(c, p, "a key with an escape \xc3\xa9 insid")));
}

static void test_get_escaped_key(void **state) {
  /* a 5000-byte key: 4998 'k', then "\u0041" (A) and 'z' */
  static char params[8000];
  memset(long_key, 'k', 4998);
  memcpy(long_key + 4998, "Az", 3);
  snprintf(params, sizeof params,
           "{\"\\u0061b\":1,\"\\u00e9\":2,\"a\\/b\":3,"
           "\"a key with an escape \\u00e9 inside\":4,\"%.4998s\\u0041z\":5}",
           long_key);
  run_probe(*state, params, p_escaped_key_get);
}

static void p_nested(jrpc_call_t *c, jrpc_val_t p) {
  /* {"l1":{"l2":[0,{"l3":[[["deep"]]]}]}} */
  jrpc_val_t v = jrpc_get(c, p, "l1");
  v = jrpc_get(c, v, "l2");
  CHECK_I(jrpc_len(c, v), 2);
  v = jrpc_at(c, v, 1);
  v = jrpc_get(c, v, "l3");
  v = jrpc_at(c, jrpc_at(c, jrpc_at(c, v, 0), 0), 0);
  CHECK_STR(c, v, "deep", 4);
  /* next() skips whole subtrees */
  jrpc_val_t arr = jrpc_at(c, p, 1);
  jrpc_val_t e = jrpc_first(c, arr);
  CHECK_RAW(c, e, "[[1,[2]],{\"x\":[3]}]");
  e = jrpc_next(c, e);
  CHECK_RAW(c, e, "{\"y\":{\"z\":[4,5]}}");
  e = jrpc_next(c, e);
  CHECK_I64(c, e, 6);
  CHECK(jrpc_is_none(jrpc_next(c, e)));
  /* next() of the last member of an inner container does not escape */
  jrpc_val_t inner = jrpc_first(c, jrpc_first(c, arr)); /* [1,[2]] */
  jrpc_val_t last = jrpc_next(c, jrpc_first(c, inner)); /* [2] */
  CHECK_RAW(c, last, "[2]");
  CHECK(jrpc_is_none(jrpc_next(c, last)));
  CHECK(jrpc_is_none(jrpc_next(c, jrpc_first(c, last))));
  /* views of absent values stay absent */
  jrpc_val_t none = jrpc_get(c, p, "nope");
  CHECK(jrpc_is_none(jrpc_at(c, none, 0)));
  CHECK(jrpc_is_none(jrpc_get(c, none, "x")));
  CHECK(jrpc_is_none(jrpc_first(c, none)));
  CHECK(jrpc_is_none(jrpc_next(c, none)));
}

static void test_nested(void **state) {
  run_probe(*state,
            "{\"l1\":{\"l2\":[0,{\"l3\":[[[\"deep\"]]]}]},"
            "\"list\":[[[1,[2]],{\"x\":[3]}],{\"y\":{\"z\":[4,5]}},6]}",
            p_nested);
}

/* ------------------------------------------------------------------ */
/* Absent values                                                       */
/* ------------------------------------------------------------------ */

static void p_none(jrpc_call_t *c, jrpc_val_t p) {
  CHECK(jrpc_is_none(p));
  CHECK_I(jrpc_type(c, p), JRPC_T_NONE);
  CHECK_I(jrpc_len(c, p), 0);
  CHECK(jrpc_is_none(jrpc_at(c, p, 0)));
  CHECK(jrpc_is_none(jrpc_get(c, p, "a")));
  CHECK(jrpc_is_none(jrpc_first(c, p)));
  CHECK(jrpc_is_none(jrpc_next(c, p)));
  int64_t i = 0;
  double d = 0;
  int b = 0;
  const char *s = NULL;
  size_t n = 0;
  CHECK(jrpc_as_i64(c, p, &i) < 0);
  CHECK(jrpc_as_f64(c, p, &d) < 0);
  CHECK(jrpc_as_bool(c, p, &b) < 0);
  CHECK(jrpc_as_str(c, p, &s, &n) < 0);
  CHECK(jrpc_raw(c, p, &s, &n) < 0);
  CHECK(jrpc_key(c, p, &s, &n) < 0);
}

static void test_params_absent(void **state) {
  run_probe(*state, NULL, p_none);
}

static void p_none_inside(jrpc_call_t *c, jrpc_val_t p) {
  p_none(c, jrpc_at(c, p, 5));
  p_none(c, jrpc_get(c, jrpc_at(c, p, 0), "zz"));
}

static void test_absent_inside(void **state) {
  run_probe(*state, "[{\"a\":1}]", p_none_inside);
}

/* ------------------------------------------------------------------ */
/* Numbers                                                             */
/* ------------------------------------------------------------------ */

static const char *i64_ok[] = {"0",
                               "-0",
                               "1",
                               "-1",
                               "42",
                               "9223372036854775807",
                               "-9223372036854775808",
                               "1000000000000"};
static const int64_t i64_val[] = {0,  0,         1,         -1,
                                  42, INT64_MAX, INT64_MIN, 1000000000000};
static const char *i64_range[] = {"9223372036854775808",
                                  "-9223372036854775809",
                                  "12345678901234567890123",
                                  "1.5",
                                  "1.0",
                                  "1e3",
                                  "1E0",
                                  "0.0",
                                  "-0.5",
                                  "1e-2",
                                  "100000000000000000000"};
static const char *f64_text[] = {"0",
                                 "1.5",
                                 "-7",
                                 "1e3",
                                 "1E-2",
                                 "0.1",
                                 "123.456",
                                 "-0.0",
                                 "9007199254740993",
                                 "12345678901234567890123",
                                 "2.2250738585072014e-308",
                                 "4.9e-324",
                                 "1.7976931348623157e308",
                                 "3.141592653589793238462643383279",
                                 "1E+2",
                                 "0.30000000000000004"};

enum {
  N_I64_OK = sizeof i64_ok / sizeof i64_ok[0],
  N_I64_RANGE = sizeof i64_range / sizeof i64_range[0],
  N_F64 = sizeof f64_text / sizeof f64_text[0],
};

static void p_numbers(jrpc_call_t *c, jrpc_val_t p) {
  jrpc_val_t ok = jrpc_at(c, p, 0), range = jrpc_at(c, p, 1),
             f = jrpc_at(c, p, 2), bad = jrpc_at(c, p, 3);
  CHECK_I(jrpc_len(c, ok), N_I64_OK);
  for (uint32_t i = 0; i < N_I64_OK; i++) {
    CHECK_I(jrpc_type(c, jrpc_at(c, ok, i)), JRPC_T_NUMBER);
    CHECK_I64(c, jrpc_at(c, ok, i), i64_val[i]);
    CHECK_RAW(c, jrpc_at(c, ok, i), i64_ok[i]);
  }
  CHECK_I(jrpc_len(c, range), N_I64_RANGE);
  for (uint32_t i = 0; i < N_I64_RANGE; i++) {
    int64_t x;
    int rc = jrpc_as_i64(c, jrpc_at(c, range, i), &x);
    if (rc != JRPC_ERANGE)
      failf(__LINE__, "as_i64(%s): %d, want JRPC_ERANGE", i64_range[i], rc);
  }
  CHECK_I(jrpc_len(c, f), N_F64);
  for (uint32_t i = 0; i < N_F64; i++) {
    double d = 42, want = strtod(f64_text[i], NULL);
    int rc = jrpc_as_f64(c, jrpc_at(c, f, i), &d);
    if (rc != 0 || d != want || signbit(d) != signbit(want))
      failf(__LINE__, "as_f64(%s): rc %d, %.17g, want %.17g", f64_text[i], rc,
            d, want);
  }
  double d;
  CHECK_I(jrpc_as_f64(c, jrpc_at(c, bad, 0), &d), JRPC_ERANGE); /* 1e400 */
  CHECK_I(jrpc_as_f64(c, jrpc_at(c, bad, 1), &d), JRPC_ERANGE); /* -1e400 */
  CHECK_I(jrpc_as_f64(c, jrpc_at(c, bad, 2), &d), JRPC_ETYPE);  /* "1" */
  CHECK_I64_ERR(c, jrpc_at(c, bad, 2), JRPC_ETYPE);
  CHECK_I(jrpc_as_f64(c, jrpc_at(c, bad, 3), &d), JRPC_ETYPE); /* true */
  CHECK_I(jrpc_as_f64(c, jrpc_at(c, bad, 4), &d), JRPC_ETYPE); /* [] */
  CHECK_I(jrpc_as_f64(c, jrpc_at(c, bad, 5), &d), JRPC_ETYPE); /* {} */
  CHECK_I64_ERR(c, jrpc_at(c, bad, 5), JRPC_ETYPE);
}

static void test_numbers(void **state) {
  char params[4096];
  size_t n = 0;
  n += (size_t)snprintf(params + n, sizeof params - n, "[[");
  for (size_t i = 0; i < N_I64_OK; i++)
    n += (size_t)snprintf(params + n, sizeof params - n, "%s%s", i ? "," : "",
                          i64_ok[i]);
  n += (size_t)snprintf(params + n, sizeof params - n, "],[");
  for (size_t i = 0; i < N_I64_RANGE; i++)
    n += (size_t)snprintf(params + n, sizeof params - n, "%s%s", i ? "," : "",
                          i64_range[i]);
  n += (size_t)snprintf(params + n, sizeof params - n, "],[");
  for (size_t i = 0; i < N_F64; i++)
    n += (size_t)snprintf(params + n, sizeof params - n, "%s%s", i ? "," : "",
                          f64_text[i]);
  snprintf(params + n, sizeof params - n, "],[1e400,-1e400,\"1\",true,[],{}]]");
  run_probe(*state, params, p_numbers);
}

/* ------------------------------------------------------------------ */
/* Strings                                                             */
/* ------------------------------------------------------------------ */

static void p_strings(jrpc_call_t *c, jrpc_val_t p) {
  CHECK_STR(c, jrpc_at(c, p, 0), "a\nb", 3);
  CHECK_STR(c, jrpc_at(c, p, 1), "\xc3\xa9", 2);
  CHECK_STR(c, jrpc_at(c, p, 2), "\xf0\x9f\x98\x80", 4);
  CHECK_STR(c, jrpc_at(c, p, 3), "x\0y", 3);
  CHECK_STR(c, jrpc_at(c, p, 4), "\"\\/\b\f\n\r\t", 8);
  CHECK_STR(c, jrpc_at(c, p, 5), "", 0);
  CHECK_STR(c, jrpc_at(c, p, 6), "plain", 5);
  CHECK_STR(c, jrpc_at(c, p, 7), "\xc3\xa9\xe2\x82\xac\xf0\x9f\x98\x80", 9);
  CHECK_STR(c, jrpc_at(c, p, 8), "\xe2\x82\xac\xef\xbf\xbf\x7f", 7);
  CHECK_STR(c, jrpc_at(c, p, 9), "\0", 1);
  CHECK_STR(c, jrpc_at(c, p, 10), "\xf4\x8f\xbf\xbf", 4);
  /* raw keeps the escapes and the quotes */
  CHECK_RAW(c, jrpc_at(c, p, 0), "\"a\\nb\"");
  CHECK_RAW(c, jrpc_at(c, p, 3), "\"x\\u0000y\"");
  CHECK_RAW(c, jrpc_at(c, p, 5), "\"\"");
  /* the same value twice: both stay valid */
  const char *s1, *s2;
  size_t n1, n2;
  CHECK(jrpc_as_str(c, jrpc_at(c, p, 0), &s1, &n1) == 0);
  CHECK(jrpc_as_str(c, jrpc_at(c, p, 1), &s2, &n2) == 0);
  CHECK(n1 == 3 && memcmp(s1, "a\nb", 3) == 0);
  CHECK(n2 == 2 && memcmp(s2, "\xc3\xa9", 2) == 0);
}

static void test_strings(void **state) {
  run_probe(*state,
            "[\"a\\nb\",\"\\u00e9\",\"\\ud83d\\ude00\",\"x\\u0000y\","
            "\"\\\"\\\\\\/\\b\\f\\n\\r\\t\",\"\",\"plain\","
            "\"\xc3\xa9\xe2\x82\xac\xf0\x9f\x98\x80\","
            "\"\\u20AC\\uffff\x7f\",\"\\u0000\",\"\\uDBFF\\uDFFF\"]",
            p_strings);
}

static size_t long_n;

static void p_long_string(jrpc_call_t *c, jrpc_val_t p) {
  const char *s;
  size_t n;
  CHECK(jrpc_as_str(c, jrpc_at(c, p, 0), &s, &n) == 0);
  CHECK_I(n, long_n + 2);
  if (n == long_n + 2) {
    size_t bad = 0;
    for (size_t i = 0; i < long_n; i++)
      bad += s[i] != (char)('a' + i % 26);
    CHECK_I(bad, 0);
    CHECK(s[long_n] == '\n' && s[long_n + 1] == '\t' && s[n] == '\0');
  }
}

static void test_long_string(void **state) {
  long_n = 300000;
  char *params = malloc(long_n + 16);
  assert_non_null(params);
  size_t k = 0;
  params[k++] = '[';
  params[k++] = '"';
  for (size_t i = 0; i < long_n; i++)
    params[k++] = (char)('a' + i % 26);
  memcpy(params + k, "\\n\\t\"]", 7);
  run_probe(*state, params, p_long_string);
  free(params);
}

/* ------------------------------------------------------------------ */
/* raw                                                                 */
/* ------------------------------------------------------------------ */

static const char raw_params[] =
    "{ \"o\" : { \"x\" : [ 1 , 2 ] ,\"s\":\"a\\\"b\\u00e9\" } ,\r\n"
    "  \"n\" : -1.50e+3 , \"t\":true,\"f\" :false, \"z\":null,"
    "\"e\":[ ],\"eo\":{ } }";

static void p_raw(jrpc_call_t *c, jrpc_val_t p) {
  jrpc_val_t o = jrpc_get(c, p, "o");
  CHECK_RAW(c, o, "{ \"x\" : [ 1 , 2 ] ,\"s\":\"a\\\"b\\u00e9\" }");
  CHECK_RAW(c, jrpc_get(c, o, "x"), "[ 1 , 2 ]");
  CHECK_RAW(c, jrpc_get(c, o, "s"), "\"a\\\"b\\u00e9\"");
  CHECK_RAW(c, jrpc_at(c, jrpc_get(c, o, "x"), 1), "2");
  CHECK_RAW(c, jrpc_get(c, p, "n"), "-1.50e+3");
  CHECK_RAW(c, jrpc_get(c, p, "t"), "true");
  CHECK_RAW(c, jrpc_get(c, p, "f"), "false");
  CHECK_RAW(c, jrpc_get(c, p, "z"), "null");
  CHECK_RAW(c, jrpc_get(c, p, "e"), "[ ]");
  CHECK_RAW(c, jrpc_get(c, p, "eo"), "{ }");
  CHECK_RAW(c, p, raw_params);
  double d;
  CHECK(jrpc_as_f64(c, jrpc_get(c, p, "n"), &d) == 0 && d == -1500.0);
  CHECK_I64_ERR(c, jrpc_get(c, p, "n"), JRPC_ERANGE);
  CHECK_STR(c, jrpc_get(c, o, "s"), "a\"b\xc3\xa9", 5);
}

static void test_raw(void **state) {
  run_probe(*state, raw_params, p_raw);
}

/* ------------------------------------------------------------------ */
/* Memory                                                              */
/* ------------------------------------------------------------------ */

static void p_alloc(jrpc_call_t *c, jrpc_val_t p) {
  (void)p;
  char *a = jrpc_alloc(c, 1), *b = jrpc_alloc(c, 1000000),
       *d = jrpc_alloc(c, 3);
  CHECK(a && b && d);
  if (!a || !b || !d)
    return;
  CHECK(((uintptr_t)a & 15) == 0);
  CHECK(((uintptr_t)b & 15) == 0);
  CHECK(((uintptr_t)d & 15) == 0);
  memset(b, 0xab, 1000000);
  *a = 1;
  memset(d, 2, 3);
  CHECK(*a == 1 && (unsigned char)b[999999] == 0xab && d[2] == 2);
  CHECK(b + 1000000 <= a || a + 1 <= b);
}

static void test_alloc(void **state) {
  run_probe(*state, "[]", p_alloc);
}

/* ------------------------------------------------------------------ */
/* Large inputs                                                        */
/* ------------------------------------------------------------------ */

enum { BIG_N = 100000 };

static void p_big_array(jrpc_call_t *c, jrpc_val_t p) {
  CHECK_I(jrpc_type(c, p), JRPC_T_ARRAY);
  CHECK_I(jrpc_len(c, p), BIG_N);
  CHECK_I64(c, jrpc_at(c, p, 0), 0);
  CHECK_I64(c, jrpc_at(c, p, 1), 1);
  CHECK_I64(c, jrpc_at(c, p, BIG_N / 2), BIG_N / 2);
  CHECK_I64(c, jrpc_at(c, p, BIG_N - 1), BIG_N - 1);
  CHECK(jrpc_is_none(jrpc_at(c, p, BIG_N)));
  int64_t sum = 0, x;
  uint32_t k = 0, bad = 0;
  for (jrpc_val_t e = jrpc_first(c, p); !jrpc_is_none(e) && k <= BIG_N;
       e = jrpc_next(c, e), k++) {
    if (jrpc_as_i64(c, e, &x) != 0 || x != k)
      bad++;
    sum += x;
  }
  CHECK_I(k, BIG_N);
  CHECK_I(bad, 0);
  CHECK_I(sum, (int64_t)BIG_N * (BIG_N - 1) / 2);
}

static char *big_params(const char *fmt, size_t n, size_t per) {
  size_t cap = n * per + 16, k = 0;
  char *s = malloc(cap);
  assert_non_null(s);
  s[k++] = '[';
  for (size_t i = 0; i < n; i++) {
    if (i)
      s[k++] = ',';
    k += (size_t)snprintf(s + k, cap - k, fmt, i, i);
    assert_true(k < cap - 4);
  }
  s[k++] = ']';
  s[k] = '\0';
  return s;
}

static void test_big_array(void **state) {
  char *params = big_params("%zu", BIG_N, 8);
  run_probe(*state, params, p_big_array);
  free(params);
}

static void p_big_nested(jrpc_call_t *c, jrpc_val_t p) {
  enum { N = BIG_N / 4 };
  CHECK_I(jrpc_len(c, p), N);
  jrpc_val_t last = jrpc_at(c, p, N - 1);
  CHECK_I(jrpc_type(c, last), JRPC_T_OBJECT);
  CHECK_I64(c, jrpc_get(c, last, "k"), N - 1);
  CHECK_I64(c, jrpc_at(c, jrpc_get(c, last, "v"), 0), N - 1);
  uint32_t k = 0, bad = 0;
  for (jrpc_val_t e = jrpc_first(c, p); !jrpc_is_none(e) && k <= N;
       e = jrpc_next(c, e), k++) {
    int64_t x;
    if (jrpc_as_i64(c, jrpc_get(c, e, "k"), &x) != 0 || x != k)
      bad++;
  }
  CHECK_I(k, N);
  CHECK_I(bad, 0);
}

static void test_big_nested(void **state) {
  char *params = big_params("{\"k\":%zu,\"v\":[%zu]}", BIG_N / 4, 28);
  run_probe(*state, params, p_big_nested);
  free(params);
}

static void p_big_object(jrpc_call_t *c, jrpc_val_t p) {
  enum { N = 20000 };
  CHECK_I(jrpc_type(c, p), JRPC_T_OBJECT);
  CHECK_I(jrpc_len(c, p), N);
  CHECK_I64(c, jrpc_get(c, p, "k0"), 0);
  CHECK_I64(c, jrpc_get(c, p, "k19999"), 19999);
  CHECK_I64(c, jrpc_get(c, p, "k12345"), 12345);
  CHECK(jrpc_is_none(jrpc_get(c, p, "k20000")));
}

static void test_big_object(void **state) {
  char *params = big_params("\"k%zu\":%zu", 20000, 20);
  params[0] = '{';
  params[strlen(params) - 1] = '}';
  run_probe(*state, params, p_big_object);
  free(params);
}

/* ------------------------------------------------------------------ */
/* Batches: each element sees its own params                           */
/* ------------------------------------------------------------------ */

static char seen[3][64];
static int seen_n;

static int h_record(jrpc_call_t *c, jrpc_val_t p, void *u) {
  const char *s;
  size_t n;
  (void)u;
  if (jrpc_raw(c, p, &s, &n) != 0)
    return jrpc_error(c, JRPC_INTERNAL_ERROR, "raw failed");
  if (seen_n < 3 && n < 64) {
    memcpy(seen[seen_n], s, n);
    seen[seen_n][n] = '\0';
  }
  seen_n++;
  return jrpc_w_raw(c, s, n);
}

static void test_batch_params(void **state) {
  tu_fixture *f = *state;
  tu_fixture_add(f, "record", h_record, NULL);
  seen_n = 0;
  memset(seen, 0, sizeof seen);
  size_t rn = tu_calls(
      f,
      "[{\"jsonrpc\":\"2.0\",\"method\":\"record\",\"params\":[1],\"id\":1},"
      "{\"jsonrpc\":\"2.0\",\"method\":\"record\",\"params\":{\"k\":\"v\"}},"
      "{\"jsonrpc\":\"2.0\",\"method\":\"record\",\"params\":[[2]],\"id\":3}]",
      out, OUT_CAP);
  assert_int_equal(seen_n, 3);
  assert_string_equal(seen[0], "[1]");
  assert_string_equal(seen[1], "{\"k\":\"v\"}");
  assert_string_equal(seen[2], "[[2]]");
  tu_assert_json(out, rn,
                 "[{\"jsonrpc\":\"2.0\",\"result\":[1],\"id\":1},"
                 "{\"jsonrpc\":\"2.0\",\"result\":[[2]],\"id\":3}]");
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_array_views),
      cmocka_unit_test(test_empty_containers),
      cmocka_unit_test(test_object_views),
      cmocka_unit_test(test_get_escaped_key),
      cmocka_unit_test(test_nested),
      cmocka_unit_test(test_params_absent),
      cmocka_unit_test(test_absent_inside),
      cmocka_unit_test(test_numbers),
      cmocka_unit_test(test_strings),
      cmocka_unit_test(test_long_string),
      cmocka_unit_test(test_raw),
      cmocka_unit_test(test_alloc),
      cmocka_unit_test(test_big_array),
      cmocka_unit_test(test_big_nested),
      cmocka_unit_test(test_big_object),
      cmocka_unit_test(test_batch_params),
      cmocka_unit_test(tu_test_auto_switched),
  };
  return cmocka_run_group_tests(tests, setup, tu_teardown);
}
