/* test_params.c - jrpc_params_num (lib/params.c): on every parser backend,
 * the token path and the view path give the same answers, and both agree
 * with reading each number the long way (jrpc_at / jrpc_get, then as_i64,
 * then as_f64), which is what a handler did before ABI 1.1. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "common.h"
#include "params.h"
#include "testutil.h"
#include "parser.h"
#include "view.h"

static const char *const names[3] = {"a", "b", "c"};

/* params texts: shapes, numbers of every spelling, wrong types, absent
 * and escaped keys, duplicates. */
static const char *const cases[] = {
    "[1,2]",
    "[1,2,3]",
    "[1]",
    "[]",
    "{}",
    "[-0,0]",
    "[-7,123456789012345678]",
    "[9223372036854775807,-9223372036854775808]",
    "[9223372036854775808,-9223372036854775809]",
    "[1234567890123456789012,1.5]",
    "[1e2,-2.5E-3]",
    "[1e400,-1e400]",
    "[\"1\",null]",
    "[true,false]",
    "[[1],{\"a\":1}]",
    "[ 1 , 2 ]",
    /* the positional loop handing over mid-array (elements_from) */
    "[5,-3]",
    "[12,1.5,\"x\"]",
    "[1,[2],3]",
    "[7,{\"a\":[1]},8]",
    "[0,1]",
    "[123456789012345678,1234567890123456789]",
    "{\"a\":1,\"b\":2}",
    "{\"b\":2,\"a\":1}",
    "{\"a\":1}",
    "{\"b\":\"x\"}",
    "{\"\\u0061\":5,\"b\":6}",
    "{\"a\\u0062\":1,\"b\":2}",
    "{\"aa\":1,\"b\":2}",
    "{\"a\":1,\"a\":2,\"b\":3}",
    "{\"x\":[1,2,{\"a\":9}],\"a\":3.25,\"b\":-4}",
    "{\"a\":{\"b\":1},\"b\":[2]}",
    "{\"c\":0.1,\"a\":1e-400,\"b\":123456789012345678901234567890}",
};

/* The long way: one number as math.c read it before jrpc_params_num. */
static void oracle_one(jrpc_val_t v, jrpc_num_t *out) {
  out->is_int = 0;
  int rc = jrpc__view_i64(v, &out->i);
  if (rc == 0) {
    out->status = 0;
    out->is_int = 1;
    out->d = (double)out->i;
    return;
  }
  if (rc == JRPC_ENOENT || rc == JRPC_ETYPE) {
    out->status = rc;
    return;
  }
  out->status = jrpc__view_f64(v, &out->d);
}

static int oracle(jrpc_val_t params, uint32_t n, jrpc_num_t *out) {
  switch (jrpc__view_type(params)) {
  case JRPC_T_ARRAY:
    if (jrpc__view_len(params) != n)
      return JRPC_EINVAL;
    for (uint32_t k = 0; k < n; k++)
      oracle_one(jrpc__view_at(params, k), &out[k]);
    return 0;
  case JRPC_T_OBJECT:
    for (uint32_t k = 0; k < n; k++)
      oracle_one(jrpc__view_get(params, names[k], strlen(names[k])), &out[k]);
    return 0;
  default:
    return JRPC_ETYPE;
  }
}

static void same(const char *what, const char *backend, const char *text,
                 uint32_t n, int rc_want, const jrpc_num_t *want, int rc_got,
                 const jrpc_num_t *got) {
  if (rc_got != rc_want)
    fail_msg("%s, %s, %s (n=%u): returned %d, want %d", what, backend, text, n,
             rc_got, rc_want);
  if (rc_want)
    return;
  for (uint32_t k = 0; k < n; k++) {
    const jrpc_num_t *w = &want[k], *g = &got[k];
    int ok =
        g->status == w->status &&
        (w->status || (g->is_int == w->is_int && (!w->is_int || g->i == w->i) &&
                       memcmp(&g->d, &w->d, sizeof(double)) == 0));
    if (!ok)
      fail_msg("%s, %s, %s (n=%u), number %u: status %d int %d i %lld d %.17g;"
               " want status %d int %d i %lld d %.17g",
               what, backend, text, n, k, g->status, g->is_int, (long long)g->i,
               g->d, w->status, w->is_int, (long long)w->i, w->d);
  }
}

static void agree(const char *backend, size_t i, jrpc_val_t params, void *arg) {
  (void)arg;
  for (uint32_t n = 1; n <= 3; n++) {
    jrpc_num_t want[3], got[3], views[3];
    memset(got, 0x5a, sizeof(got));
    memset(views, 0x5a, sizeof(views));
    int rw = oracle(params, n, want);
    int rg = jrpc__params_num(params, names, n, got);
    int rv = jrpc__params_num_views(params, names, n, views);
    same("params_num", backend, cases[i], n, rw, want, rg, got);
    same("by views", backend, cases[i], n, rw, want, rv, views);
  }
}

static void test_agree(void **state) {
  (void)state;
  tu_each_backend(cases, sizeof(cases) / sizeof(cases[0]), agree, NULL);
}

/* Answers a handler relies on, spelled out. */
static void test_values(void **state) {
  (void)state;
  jrpc__parser_t *p = jrpc__parser_new("native");
  jrpc__arena_t a;
  jrpc__arena_init(&a, 1 << 16, 1 << 20);
  char buf[256];
  jrpc_num_t o[2];

  jrpc_val_t v =
      tu_params_of(p, &a, "{\"b\":2.5,\"\\u0061\":-3}", buf, sizeof(buf));
  assert_int_equal(jrpc__params_num(v, names, 2, o), 0);
  assert_int_equal(o[0].status, 0);
  assert_int_equal(o[0].is_int, 1);
  assert_int_equal(o[0].i, -3);
  assert_true(o[0].d == -3.0);
  assert_int_equal(o[1].status, 0);
  assert_int_equal(o[1].is_int, 0);
  assert_true(o[1].d == 2.5);
  /* Named params without names to look for. */
  assert_int_equal(jrpc__params_num(v, NULL, 2, o), JRPC_ETYPE);

  v = tu_params_of(p, &a, "[7,\"x\"]", buf, sizeof(buf));
  assert_int_equal(jrpc__params_num(v, NULL, 2, o), 0);
  assert_int_equal(o[0].i, 7);
  assert_int_equal(o[1].status, JRPC_ETYPE);
  assert_int_equal(jrpc__params_num(v, NULL, 1, o), JRPC_EINVAL);

  v = tu_params_of(p, &a, "{\"a\":1e999}", buf, sizeof(buf));
  assert_int_equal(jrpc__params_num(v, names, 2, o), 0);
  assert_int_equal(o[0].status, JRPC_ERANGE);
  assert_int_equal(o[1].status, JRPC_ENOENT);

  /* A name asked for twice gets the first member of that name both times
   * (as jrpc_get), though the members follow the names' order. */
  static const char *const twice[2] = {"a", "a"};
  v = tu_params_of(p, &a, "{\"a\":1,\"a\":2}", buf, sizeof(buf));
  assert_int_equal(jrpc__params_num(v, twice, 2, o), 0);
  assert_int_equal(o[0].i, 1);
  assert_int_equal(o[1].i, 1);

  v = tu_params_of(p, &a, NULL, buf, sizeof(buf));
  assert_int_equal(jrpc__params_num(v, names, 2, o), JRPC_ETYPE);
  jrpc__arena_free(&a);
  jrpc__parser_destroy(p);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_agree),
      cmocka_unit_test(test_values),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
