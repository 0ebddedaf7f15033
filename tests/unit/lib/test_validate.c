/* test_validate.c - validate_params' plans (lib/validate.c): every reason
 * a call is refused for, arrays of types, integer against number, by-name,
 * by-position and either; on every parser backend, through the token path
 * and the view path alike; and the descriptions a plan cannot be made
 * from. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "common.h"
#include "parser.h"
#include "testutil.h"
#include "validate.h"

/* Descriptions: a and b required numbers, either way (math's); the same
 * by name, by position; integer and a type array; optional params. */
#define AB(ps)                                                                 \
  "{\"paramStructure\":\"" ps "\",\"params\":["                                \
  "{\"name\":\"a\",\"required\":true,\"schema\":{\"type\":\"number\"}},"       \
  "{\"name\":\"b\",\"required\":true,\"schema\":{\"type\":\"number\"}}]}"
static const char d_either[] = AB("either");
static const char d_name[] = AB("by-name");
static const char d_pos[] = AB("by-position");
static const char d_types[] =
    "{\"params\":[{\"name\":\"n\",\"required\":true,\"schema\":{\"type\":"
    "\"integer\"}},{\"name\":\"s\",\"schema\":{\"type\":[\"string\","
    "\"null\"]}},{\"name\":\"any\"},{\"name\":\"o\",\"schema\":{\"type\":["
    "\"object\",\"array\",\"boolean\"]}}]}";
/* Only the third of three is required: by position, all three must come. */
static const char d_late[] =
    "{\"params\":[{\"name\":\"x\"},{\"name\":\"y\"},{\"name\":\"z\","
    "\"required\":true}]}";
static const char d_none[] = "{\"params\":[]}";
static const char d_extra[] =
    "{\"x-jrpcd-extra-params\":true,\"params\":[{\"name\":\"a\","
    "\"required\":true}]}";

/* Names for the fast path's key words: prefixes of each other, one past
 * eight bytes, one with a quote (no closing-quote word for it). */
static const char d_short[] =
    "{\"params\":[{\"name\":\"a\",\"required\":true},{\"name\":\"ab\"},"
    "{\"name\":\"abc\",\"schema\":{\"type\":\"integer\"}}]}";
static const char d_long[] =
    "{\"params\":[{\"name\":\"alpha_beta_gamma\",\"required\":true},{"
    "\"name\":\"ab\",\"schema\":{\"type\":\"string\"}}]}";
static const char d_quote[] =
    "{\"params\":[{\"name\":\"q\\\"x\",\"required\":true}]}";

/* params (NULL: absent) -> what the check says, as text; fast: a token
 * backend's fast path (jrpc__vplan_fast) must say yes to it. */
static const struct {
  const char *desc, *params, *want;
  int fast;
} cases[] = {
    {d_either, "[1,2]", "ok", 1},
    {d_either, "{\"a\":1,\"b\":2}", "ok", 1},
    {d_either, "{\"b\":2,\"a\":-1.5e3}", "ok", 0},
    {d_either, "[1]", "missing b", 0},
    {d_either, "[]", "missing a", 0},
    {d_either, NULL, "missing a", 0},
    {d_either, "[1,2,3]", "too many 3", 0},
    {d_either, "{\"a\":1}", "missing b", 0},
    {d_either, "{}", "missing a", 0},
    {d_either, "{\"a\":1,\"b\":2,\"c\":3}", "unknown c", 0},
    {d_either, "{\"a\":1,\"\\u0062\":2}", "ok", 0},
    {d_either, "{\"a\":1,\"b\\u0062\":2}", "unknown b\\u0062",
     0}, /* raw here */
    {d_either, "[\"1\",2]", "type a number string", 0},
    {d_either, "[1,null]", "type b number null", 0},
    {d_either, "{\"a\":1,\"b\":true}", "type b number boolean", 0},
    {d_either, "{\"a\":[1],\"b\":1}", "type a number array", 0},
    {d_either, "[1,{}]", "type b number object", 0},
    {d_name, "{\"a\":1,\"b\":2}", "ok", 0},
    {d_name, "[1,2]", "structure object array", 0},
    {d_name, NULL, "missing a", 0},
    {d_pos, "[1,2]", "ok", 0},
    {d_pos, "{\"a\":1,\"b\":2}", "structure array object", 0},
    {d_pos, NULL, "missing a", 0},
    {d_types, "[1]", "ok", 0},
    {d_types, "[-7,\"s\",{},[]]", "ok", 0},
    {d_types, "[2.0,null,1,true]", "ok", 0},
    {d_types, "[1e3]", "ok", 0},
    {d_types, "[-1.5E+2]", "ok", 0},
    {d_types, "[1.5]", "type n integer number", 0},
    {d_types, "[1e-1]", "type n integer number", 0},
    {d_types, "[\"1\"]", "type n integer string", 0},
    {d_types, "[1,2]", "type s null|string number", 0},
    {d_types, "[1,\"x\",null,1]", "type o boolean|array|object number", 0},
    {d_types, "{\"n\":1,\"s\":false}", "type s null|string boolean", 0},
    {d_types, "{\"s\":\"x\"}", "missing n", 0},
    {d_types, "[1,null,null,null,5]", "too many 5", 0},
    {d_late, "[1,2,3]", "ok", 0},
    {d_late, "[1,2]", "missing z", 0},
    {d_late, "{\"z\":0}", "ok", 0},
    {d_late, "{\"x\":0,\"y\":0}", "missing z", 0},
    {d_none, "[]", "ok", 0},
    {d_none, NULL, "ok", 0},
    {d_none, "{}", "ok", 0},
    {d_none, "[0]", "too many 1", 0},
    {d_none, "{\"a\":0}", "unknown a", 0},
    {d_extra, "{\"a\":0,\"zz\":1}", "ok", 0},
    {d_extra, "{\"zz\":1}", "missing a", 0},
    {d_types, "[-7,\"s\",{},[]]", "ok", 1},
    {d_types, "{\"n\":1,\"s\":null,\"any\":[],\"o\":true}", "ok", 1},
    {d_none, "{}", "ok", 1},
    {d_short, "{\"a\":1,\"ab\":2,\"abc\":3}", "ok", 1},
    {d_short, "{\"ab\":1}", "missing a", 0},
    {d_short, "{\"a\":1,\"abc\":2}", "ok", 0},
    {d_short, "{\"a\":1,\"ab\":2,\"abcd\":3}", "unknown abcd", 0},
    {d_short, "{\"a\":1,\"ab\":2,\"abc\":3.5}", "type abc integer number", 0},
    {d_short, "{\"a\":1,\"ab\":2,\"abc\":3.0}", "ok", 0},
    {d_short, "{\"a\\\"\":1}", "unknown a\\\"", 0},
    {d_long, "{\"alpha_beta_gamma\":1,\"ab\":\"s\"}", "ok", 1},
    {d_long, "{\"alpha_beta_gammX\":1}", "unknown alpha_beta_gammX", 0},
    {d_long, "{\"alpha_beta_gamma\":1,\"ab\":2}", "type ab string number", 0},
    {d_long, "[0,\"s\"]", "ok", 1},
    {d_quote, "{\"q\\\"x\":1}", "ok", 0},
    {d_quote, "{\"q\":1}", "unknown q", 0},
};

static void types_text(char *out, size_t cap, unsigned bits) {
  size_t off = 0;
  out[0] = '\0';
  for (unsigned bit = 1; bit <= JRPC__VT_OBJECT; bit <<= 1)
    if (bits & bit)
      off += (size_t)snprintf(out + off, cap - off, "%s%s", off ? "|" : "",
                              jrpc__vtype_name(bit));
}

static void outcome(int ok, const jrpc__vfail_t *f, char *out, size_t cap) {
  char a[64], b[64];
  switch (ok ? JRPC__VR_OK : f->reason) {
  case JRPC__VR_OK:
    snprintf(out, cap, "%s", ok ? "ok" : "failed without a reason");
    return;
  case JRPC__VR_MISSING:
    snprintf(out, cap, "missing %s", f->param->name);
    return;
  case JRPC__VR_UNKNOWN:
    snprintf(out, cap, "unknown %.*s", (int)f->name_n, f->name);
    return;
  case JRPC__VR_TOO_MANY:
    snprintf(out, cap, "too many %u", f->got_n);
    return;
  case JRPC__VR_TYPE:
    types_text(a, sizeof(a), f->param->types);
    types_text(b, sizeof(b), f->got_type);
    snprintf(out, cap, "type %s %s %s", f->param->name, a, b);
    return;
  case JRPC__VR_STRUCTURE:
    types_text(a, sizeof(a), f->want_type);
    types_text(b, sizeof(b), f->got_type);
    snprintf(out, cap, "structure %s %s", a, b);
    return;
  }
}

static void check_case(const char *backend, size_t i, jrpc_val_t params,
                       void *arg) {
  (void)arg;
  char err[200];
  jrpc__vplan_t *plan;
  assert_int_equal(jrpc__vplan_compile(cases[i].desc, &plan, err, sizeof(err)),
                   0);
  assert_non_null(plan);
  jrpc__vfail_t f1 = {0}, f2 = {0};
  char got[256], views[256];
  outcome(jrpc__vplan_check(plan, params, &f1), &f1, got, sizeof(got));
  outcome(jrpc__vplan_check_views(plan, params, &f2), &f2, views,
          sizeof(views));
  if (strcmp(got, cases[i].want) != 0 || strcmp(views, cases[i].want) != 0)
    fail_msg("%s: %s with %s: got \"%s\" (views \"%s\"), want \"%s\"", backend,
             cases[i].desc, cases[i].params ? cases[i].params : "(absent)", got,
             views, cases[i].want);
  /* The fast path never passes what the full check refuses, and takes the
   * shapes it is for on the token backends. */
  int fast = jrpc__vplan_fast(plan, params);
  int tokens = strcmp(backend, "simdjson") != 0;
  if ((fast && strcmp(cases[i].want, "ok") != 0) ||
      (tokens && cases[i].fast && !fast))
    fail_msg("%s: %s with %s: fast path says %d", backend, cases[i].desc,
             cases[i].params ? cases[i].params : "(absent)", fast);
  jrpc__vplan_free(plan);
}

static void test_checks(void **state) {
  (void)state;
  enum { N = sizeof(cases) / sizeof(cases[0]) };
  const char *texts[N];
  for (size_t i = 0; i < N; i++)
    texts[i] = cases[i].params;
  tu_each_backend(texts, N, check_case, NULL);
}

/* Descriptions a plan cannot be made from: refused with a reason, or
 * (a $ref) left unchecked. */
static void test_compile(void **state) {
  (void)state;
  static const struct {
    const char *desc, *why; /* why NULL: compiles */
  } bad[] = {
      {"{\"params\":[{\"required\":true}]}", "has no name"},
      {"{\"params\":[{\"name\":\"\"}]}", "has no name"},
      {"{\"params\":[1]}", "not an object"},
      {"{\"params\":{}}", "not an array"},
      {"{\"params\":[{\"name\":\"a\"},{\"name\":\"a\"}]}", "described twice"},
      {"{\"params\":[{\"name\":\"a\",\"schema\":{\"type\":\"int\"}}]}",
       "names no JSON Schema type"},
      {"{\"params\":[{\"name\":\"a\",\"schema\":{\"type\":[]}}]}",
       "empty array"},
      {"{\"params\":[{\"name\":\"a\",\"schema\":{\"type\":3}}]}",
       "neither a name"},
      {"{\"params\":[{\"name\":\"a\",\"schema\":[]}]}", "not an object"},
      {"{\"params\":[{\"name\":\"a\",\"required\":\"yes\"}]}", "not a boolean"},
      {"{\"paramStructure\":\"named\",\"params\":[]}", "paramStructure"},
      {"{\"paramStructure\":1,\"params\":[]}", "paramStructure"},
      {"[]", "not a JSON object"},
      {"{\"params\":[{\"name\":\"a\",\"schema\":true}]}", NULL},
      {"{\"params\":[{\"name\":\"a\",\"schema\":{\"oneOf\":[]}}]}", NULL},
  };
  for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
    char err[200];
    jrpc__vplan_t *plan = NULL;
    int rc = jrpc__vplan_compile(bad[i].desc, &plan, err, sizeof(err));
    if (!bad[i].why) {
      assert_int_equal(rc, 0);
      assert_non_null(plan);
      assert_int_equal(plan->p[0].types, 0); /* anything goes */
      jrpc__vplan_free(plan);
      continue;
    }
    if (rc != JRPC_EINVAL || plan || !strstr(err, bad[i].why))
      fail_msg("%s: rc %d, err \"%s\"; want EINVAL with \"%s\"", bad[i].desc,
               rc, err, bad[i].why);
  }
  /* 65 params: over the plan's limit. */
  char big[4096];
  size_t off = (size_t)snprintf(big, sizeof(big), "{\"params\":[");
  for (int k = 0; k <= JRPC__VPLAN_MAX_PARAMS; k++)
    off += (size_t)snprintf(big + off, sizeof(big) - off,
                            "%s{\"name\":\"p%d\"}", k ? "," : "", k);
  snprintf(big + off, sizeof(big) - off, "]}");
  char err[200];
  jrpc__vplan_t *plan = NULL;
  assert_int_equal(jrpc__vplan_compile(big, &plan, err, sizeof(err)),
                   JRPC_EINVAL);
  assert_non_null(strstr(err, "more than 64"));
  /* A $ref: no plan, not an error, and a reason. */
  assert_int_equal(jrpc__vplan_compile("{\"params\":[{\"$ref\":\"#/x\"}]}",
                                       &plan, err, sizeof(err)),
                   0);
  assert_null(plan);
  assert_non_null(strstr(err, "$ref"));
  /* Any params, by the method's own account (echo): nothing to check. */
  assert_int_equal(jrpc__vplan_compile("{\"x-jrpcd-params\":\"any\","
                                       "\"params\":[]}",
                                       &plan, err, sizeof(err)),
                   0);
  assert_null(plan);
  assert_string_equal(err, "");
}

/* In a registry: described methods get the stand-in handler with their
 * own behind it; others keep theirs; a broken description is refused
 * naming the method. */

static void test_registry(void **state) {
  (void)state;
  jrpc__registry_t r;
  assert_int_equal(jrpc__registry_init(&r), 0);
  int owner, other;
  jrpc__regctx_t ctx;
  jrpc__regctx_init(&ctx, &r, &owner, NULL);
  assert_int_equal(
      jrpc__registry_add(&r, "m.described", tu_handler_a, &r, &owner, NULL), 0);
  assert_int_equal(
      jrpc__registry_add(&r, "m.plain", tu_handler_b, NULL, &owner, NULL), 0);
  assert_int_equal(
      jrpc__registry_add(&r, "o.described", tu_handler_a, NULL, &other, NULL),
      0);
  assert_int_equal(jrpc__describe(&ctx, "m.described", d_either), 0);
  jrpc__regctx_t octx;
  jrpc__regctx_init(&octx, &r, &other, NULL);
  assert_int_equal(jrpc__describe(&octx, "o.described", d_either), 0);
  char err[256];
  assert_int_equal(
      jrpc__validate_owner(&r, &owner, err, sizeof(err), NULL, NULL), 0);
  const jrpc__method_t *m = jrpc__registry_find(&r, "m.described", 11);
  assert_non_null(m->vplan); /* dispatch checks, then calls fn */
  assert_ptr_equal(m->fn, tu_handler_a);
  assert_ptr_equal(m->udata, &r);
  m = jrpc__registry_find(&r, "m.plain", 7);
  assert_ptr_equal(m->fn, tu_handler_b);
  assert_null(m->vplan);
  m = jrpc__registry_find(&r, "o.described", 11);
  assert_ptr_equal(m->fn, tu_handler_a); /* another owner's: not touched */

  assert_int_equal(
      jrpc__registry_add(&r, "m.broken", tu_handler_a, NULL, &owner, NULL), 0);
  assert_int_equal(
      jrpc__describe(&ctx, "m.broken", "{\"params\":[{\"schema\":{}}]}"), 0);
  assert_int_equal(
      jrpc__validate_owner(&r, &owner, err, sizeof(err), NULL, NULL),
      JRPC_EINVAL);
  assert_non_null(strstr(err, "\"m.broken\": a param has no name"));
  jrpc__registry_remove_owner(&r, &owner); /* frees the plans (ASan) */
  jrpc__registry_free(&r);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_checks),
      cmocka_unit_test(test_compile),
      cmocka_unit_test(test_registry),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
