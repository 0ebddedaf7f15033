/* test_writer.c - lib/writer.h: token writers (strings, integers, doubles)
 * and the structural writer with its misuse checks. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <math.h>

#include <cmocka.h>

#include "jrpc/jrpc.h"
#include "jsontext.h"
#include "outbuf_fx.h"
#include "writer.h"
#include "bytescan.h"
#include "strspan.h"

/* ------------------------------------------------------------------ */
/* Strings.                                                            */
/* ------------------------------------------------------------------ */

/* Writes s as a JSON string; checks that the output is a quoted string
 * whose content is valid JSON string content; returns the unescaped
 * content (malloc'd, *dn bytes). */
static char *str_roundtrip(const char *s, size_t n, size_t *dn) {
  jrpc__outbuf_t o;
  jrpc__out_init(&o, &fx_pool);
  assert_int_equal(jrpc__json_str(&o, s, n), 0);
  size_t on;
  char *out = fx_out_take(&o, &on);
  jrpc__out_free(&o);
  assert_true(on >= 2);
  assert_int_equal(out[0], '"');
  assert_int_equal(out[on - 1], '"');
  for (size_t i = 0; i < on; i++)
    assert_true((unsigned char)out[i] >= 0x20);
  int esc;
  assert_true(jrpc__str_valid(out + 1, on - 2, &esc));
  char *d = malloc(on);
  *dn = jrpc__str_unescape(out + 1, on - 2, d);
  free(out);
  return d;
}

static void expect_str_same(const char *s, size_t n) {
  size_t dn;
  char *d = str_roundtrip(s, n, &dn);
  assert_int_equal(dn, n);
  assert_memory_equal(d, s, n);
  free(d);
}

static char *str_out(const char *s, size_t n, size_t *on) {
  jrpc__outbuf_t o;
  jrpc__out_init(&o, &fx_pool);
  assert_int_equal(jrpc__json_str(&o, s, n), 0);
  char *out = fx_out_take(&o, on);
  jrpc__out_free(&o);
  return out;
}

/* s[0..n) through jrpc__writer_raw (no validation there: any bytes). */
static char *raw_out(const char *s, size_t n, size_t *on) {
  jrpc__outbuf_t o;
  jrpc__out_init(&o, &fx_pool);
  jrpc__writer_t w;
  jrpc__writer_init(&w, &o);
  assert_int_equal(jrpc__writer_raw(&w, s, n), 0);
  char *out = fx_out_take(&o, on);
  jrpc__out_free(&o);
  return out;
}

static void test_str_simple(void **state) {
  (void)state;
  size_t n;
  char *out = str_out("hello", 5, &n);
  assert_string_equal(out, "\"hello\"");
  free(out);
  out = str_out("", 0, &n);
  assert_string_equal(out, "\"\"");
  free(out);
  out = str_out("a\"b\\c", 5, &n);
  assert_string_equal(out, "\"a\\\"b\\\\c\"");
  free(out);
  out = str_out("line\nnext", 9, &n);
  assert_null(memchr(out, '\n', n));
  free(out);
}

static void test_str_controls(void **state) {
  (void)state;
  char all[0x20 + 4];
  for (int c = 0; c < 0x20; c++)
    all[c] = (char)c;
  all[0x20] = '"';
  all[0x21] = '\\';
  all[0x22] = 0x7f;
  all[0x23] = '/';
  expect_str_same(all, sizeof all);
  for (int c = 0; c < 0x20; c++) {
    char one[3] = {'x', (char)c, 'y'};
    expect_str_same(one, 3);
  }
}

static void test_str_utf8_passthrough(void **state) {
  (void)state;
  const char s[] = "caf\xc3\xa9 \xe2\x82\xac \xf0\x9f\x98\x80 \xef\xbf\xbf "
                   "\xf4\x8f\xbf\xbf";
  size_t n;
  char *out = str_out(s, sizeof s - 1, &n);
  assert_int_equal(n, sizeof s - 1 + 2);
  assert_memory_equal(out + 1, s, sizeof s - 1);
  free(out);
  expect_str_same(s, sizeof s - 1);
}

/* Decoded output must be prefix, one or more U+FFFD, then suffix. */
static void expect_replaced(const char *s, size_t n, const char *pre,
                            const char *post) {
  size_t dn;
  char *d = str_roundtrip(s, n, &dn);
  size_t lp = strlen(pre), ls = strlen(post);
  if (!(dn >= lp + 3 + ls))
    print_message("too short for input #%02x...\n", (unsigned char)s[lp]);
  assert_true(dn >= lp + 3 + ls);
  assert_memory_equal(d, pre, lp);
  assert_memory_equal(d + dn - ls, post, ls);
  size_t mid = dn - lp - ls;
  assert_int_equal(mid % 3, 0);
  for (size_t i = 0; i < mid; i += 3)
    assert_memory_equal(d + lp + i, "\xef\xbf\xbd", 3);
  free(d);
}

static void test_str_invalid_utf8(void **state) {
  (void)state;
  static const char *bad[] = {"\x80",
                              "\xbf",
                              "\xc0\x80",
                              "\xc1\xbf",
                              "\xe0\x80\x80",
                              "\xed\xa0\x80",
                              "\xed\xbf\xbf",
                              "\xf0\x80\x80\x80",
                              "\xf4\x90\x80\x80",
                              "\xf5\x80\x80\x80",
                              "\xfe",
                              "\xff",
                              "\xc3",
                              "\xe2\x82",
                              "\xf0\x9f\x98"};
  for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
    char buf[16];
    size_t bn = strlen(bad[i]);
    buf[0] = 'a';
    memcpy(buf + 1, bad[i], bn);
    buf[1 + bn] = 'b';
    expect_replaced(buf, bn + 2, "a", "b");
    /* At the very end of the input as well. */
    buf[1 + bn] = 0;
    expect_replaced(buf, bn + 1, "a", "");
  }
  /* A truncated sequence does not swallow the ASCII after it. */
  expect_replaced("\xe2\x82z", 3, "", "z");
  expect_replaced("\xc3\"", 2, "", "\"");
  /* Good characters around bad ones survive. */
  expect_replaced("\xc3\xa9\xff\xc3\xa9", 5, "\xc3\xa9", "\xc3\xa9");
}

static void test_str_long(void **state) {
  (void)state;
  /* Spans many output segments; escapes at every position mod 6. */
  size_t n = 100000;
  char *s = malloc(n);
  for (size_t i = 0; i < n; i++) {
    switch (i % 7) {
    case 0:
      s[i] = '"';
      break;
    case 3:
      s[i] = '\n';
      break;
    case 5:
      s[i] = 1;
      break;
    default:
      s[i] = (char)('a' + i % 26);
    }
  }
  expect_str_same(s, n);
  free(s);
}

/* ------------------------------------------------------------------ */
/* Numbers.                                                            */
/* ------------------------------------------------------------------ */

static void expect_i64(int64_t v, const char *want) {
  jrpc__outbuf_t o;
  jrpc__out_init(&o, &fx_pool);
  assert_int_equal(jrpc__json_i64(&o, v), 0);
  size_t n;
  char *out = fx_out_take(&o, &n);
  assert_string_equal(out, want);
  free(out);
  jrpc__out_free(&o);
}

static void expect_u64(uint64_t v, const char *want) {
  jrpc__outbuf_t o;
  jrpc__out_init(&o, &fx_pool);
  assert_int_equal(jrpc__json_u64(&o, v), 0);
  size_t n;
  char *out = fx_out_take(&o, &n);
  assert_string_equal(out, want);
  free(out);
  jrpc__out_free(&o);
}

static void test_integers(void **state) {
  (void)state;
  expect_i64(0, "0");
  expect_i64(-1, "-1");
  expect_i64(1, "1");
  expect_i64(10, "10");
  expect_i64(-1234567890, "-1234567890");
  expect_i64(INT64_MIN, "-9223372036854775808");
  expect_i64(INT64_MAX, "9223372036854775807");
  expect_u64(0, "0");
  expect_u64(UINT64_MAX, "18446744073709551615");
  expect_u64((uint64_t)INT64_MAX + 1, "9223372036854775808");
  /* Every digit count, at both ends, both signs (the digits are counted
   * first, single digits take a path of their own). */
  char want[32];
  for (int64_t v = -12; v <= 12; v++) {
    snprintf(want, sizeof want, "%lld", (long long)v);
    expect_i64(v, want);
  }
  for (uint64_t p = 10; p <= 1000000000000000000ull; p *= 10) {
    uint64_t vs[] = {p - 1, p, p + 1};
    for (int k = 0; k < 3; k++) {
      snprintf(want, sizeof want, "%llu", (unsigned long long)vs[k]);
      expect_u64(vs[k], want);
      snprintf(want, sizeof want, "-%llu", (unsigned long long)vs[k]);
      expect_i64(-(int64_t)vs[k], want);
    }
  }
}

/* Writes v, checks the text is a JSON number that reads back bit-exact;
 * returns the text. */
static const char *f64_text(double v) {
  static char text[64];
  jrpc__outbuf_t o;
  jrpc__out_init(&o, &fx_pool);
  assert_int_equal(jrpc__json_f64(&o, v), 0);
  size_t n = (size_t)jrpc__out_pending(&o);
  assert_true(n > 0 && n < sizeof text);
  assert_int_equal(jrpc__out_copy(&o, text, sizeof text - 1), n);
  text[n] = 0;
  jrpc__out_free(&o);
  if (!jrpc__num_valid(text, n))
    print_message("not a JSON number: '%s'\n", text);
  assert_true(jrpc__num_valid(text, n));
  double back = strtod(text, NULL);
  if (memcmp(&back, &v, sizeof v) != 0)
    print_message("%.17g written as '%s'\n", v, text);
  assert_memory_equal(&back, &v, sizeof v);
  return text;
}

/* The significant digits of number text: no sign, point, exponent, or
 * leading/trailing zeros. */
static void sig_digits(const char *t, char *dst) {
  size_t k = 0;
  for (; *t && *t != 'e' && *t != 'E'; t++)
    if (*t >= '0' && *t <= '9' && !(k == 0 && *t == '0'))
      dst[k++] = *t;
  while (k > 0 && dst[k - 1] == '0')
    k--;
  dst[k] = 0;
}

static void expect_f64_shortest(double v, const char *digits) {
  const char *t = f64_text(v);
  char d[64];
  sig_digits(t, d);
  if (strcmp(d, digits) != 0)
    print_message("%.17g written as '%s'\n", v, t);
  assert_string_equal(d, digits);
}

static void test_f64_known(void **state) {
  (void)state;
  expect_f64_shortest(0.1, "1");
  expect_f64_shortest(1 / 3.0, "3333333333333333");
  expect_f64_shortest(1e308, "1");
  expect_f64_shortest(5e-324, "5");
  expect_f64_shortest(123456789.0, "123456789");
  expect_f64_shortest(1e21, "1");
  expect_f64_shortest(1.5, "15");
  expect_f64_shortest(-2.5, "25");
  expect_f64_shortest(0.30000000000000004, "30000000000000004");
  expect_f64_shortest(1.7976931348623157e308, "17976931348623157");
  expect_f64_shortest(2.2250738585072014e-308, "22250738585072014");
  expect_f64_shortest(9007199254740993.0, "9007199254740992");
  (void)f64_text(0.0);
  (void)f64_text(-0.0);
  (void)f64_text(1.0);
  (void)f64_text(-1e-7);
  (void)f64_text(1e22);
  (void)f64_text(1e100);
}

static uint64_t rng_state = 0x9e3779b97f4a7c15u;

static uint64_t rng(void) {
  /* xorshift64* */
  rng_state ^= rng_state >> 12;
  rng_state ^= rng_state << 25;
  rng_state ^= rng_state >> 27;
  return rng_state * 0x2545f4914f6cdd1du;
}

static void test_f64_random(void **state) {
  (void)state;
  int done = 0;
  while (done < 10000) {
    uint64_t bits = rng();
    double v;
    memcpy(&v, &bits, sizeof v);
    if (!isfinite(v))
      continue;
    const char *t = f64_text(v);
    char d[64];
    sig_digits(t, d);
    assert_true(strlen(d) <= 17);
    done++;
  }
  /* And some integers stored as doubles. */
  for (int i = 0; i < 1000; i++) {
    double v = (double)(int64_t)(rng() >> (rng() % 64));
    (void)f64_text(v);
    (void)f64_text(-v);
  }
}

/* The fewest significant digits with which %.*g reads back as v. */
static size_t min_digits(double v) {
  char buf[40];
  for (int p = 1; p < 17; p++) {
    snprintf(buf, sizeof buf, "%.*g", p, v);
    double back = strtod(buf, NULL);
    if (memcmp(&back, &v, sizeof v) == 0)
      return (size_t)p;
  }
  return 17;
}

/* Shortest: never more digits than the shortest %.*g that round-trips.
 * Random bit patterns include subnormals, where %.15g is not shortest. */
static void test_f64_random_shortest(void **state) {
  (void)state;
  rng_state = 0x1234567887654321u;
  int done = 0;
  while (done < 10000) {
    uint64_t bits = rng();
    if (done % 10 == 0)
      bits &= 0x800fffffffffffffu; /* a subnormal */
    double v;
    memcpy(&v, &bits, sizeof v);
    if (!isfinite(v))
      continue;
    const char *t = f64_text(v);
    char d[64];
    sig_digits(t, d);
    size_t want = min_digits(v);
    if (strlen(d) > want)
      print_message("%.17g written as '%s', %zu digits suffice\n", v, t, want);
    assert_true(strlen(d) <= want);
    done++;
  }
}

static void test_f64_nonfinite(void **state) {
  (void)state;
  jrpc__outbuf_t o;
  jrpc__out_init(&o, &fx_pool);
  assert_int_equal(jrpc__json_f64(&o, NAN), JRPC_EINVAL);
  assert_int_equal(jrpc__json_f64(&o, -NAN), JRPC_EINVAL);
  assert_int_equal(jrpc__json_f64(&o, INFINITY), JRPC_EINVAL);
  assert_int_equal(jrpc__json_f64(&o, -INFINITY), JRPC_EINVAL);
  assert_int_equal(jrpc__out_pending(&o), 0);
  jrpc__out_free(&o);
}

/* ------------------------------------------------------------------ */
/* Structure.                                                          */
/* ------------------------------------------------------------------ */

typedef struct {
  jrpc__outbuf_t o;
  jrpc__writer_t w;
} wr_t;

static void wr_init(wr_t *x) {
  jrpc__out_init(&x->o, &fx_pool);
  jrpc__writer_init(&x->w, &x->o);
}

/* Finishes successfully and checks the exact text. */
static void wr_expect(wr_t *x, const char *want) {
  int empty = -1;
  assert_int_equal(jrpc__writer_finish(&x->w, &empty), 0);
  assert_int_equal(empty, 0);
  assert_int_equal(x->w.bad, 0);
  size_t n;
  char *out = fx_out_take(&x->o, &n);
  assert_string_equal(out, want);
  free(out);
  jrpc__out_free(&x->o);
}

/* Finish must fail. */
static void wr_expect_fail(wr_t *x) {
  int empty = 0;
  assert_true(x->w.bad);
  assert_true(jrpc__writer_finish(&x->w, &empty) != 0);
  jrpc__out_free(&x->o);
}

#define K(w, lit) jrpc__writer_key((w), (lit), sizeof(lit) - 1)

static void test_writer_nested(void **state) {
  (void)state;
  wr_t x;
  wr_init(&x);
  jrpc__writer_t *w = &x.w;
  assert_int_equal(jrpc__writer_obj(w), 0);
  assert_int_equal(K(w, "a"), 0);
  assert_int_equal(jrpc__writer_arr(w), 0);
  assert_int_equal(jrpc__writer_i64(w, 1), 0);
  assert_int_equal(jrpc__writer_i64(w, 2), 0);
  assert_int_equal(jrpc__writer_obj(w), 0);
  assert_int_equal(K(w, "b"), 0);
  assert_int_equal(jrpc__writer_null(w), 0);
  assert_int_equal(jrpc__writer_obj_end(w), 0);
  assert_int_equal(jrpc__writer_arr_end(w), 0);
  assert_int_equal(K(w, "c"), 0);
  assert_int_equal(jrpc__writer_bool(w, 1), 0);
  assert_int_equal(jrpc__writer_obj_end(w), 0);
  wr_expect(&x, "{\"a\":[1,2,{\"b\":null}],\"c\":true}");
}

static void test_writer_all_types(void **state) {
  (void)state;
  wr_t x;
  wr_init(&x);
  jrpc__writer_t *w = &x.w;
  assert_int_equal(jrpc__writer_arr(w), 0);
  assert_int_equal(jrpc__writer_str(w, "s\"", 2), 0);
  assert_int_equal(jrpc__writer_i64(w, -5), 0);
  assert_int_equal(jrpc__writer_u64(w, UINT64_MAX), 0);
  assert_int_equal(jrpc__writer_f64(w, 1.5), 0);
  assert_int_equal(jrpc__writer_bool(w, 0), 0);
  assert_int_equal(jrpc__writer_bool(w, 1), 0);
  assert_int_equal(jrpc__writer_null(w), 0);
  assert_int_equal(jrpc__writer_obj(w), 0);
  assert_int_equal(jrpc__writer_obj_end(w), 0);
  assert_int_equal(jrpc__writer_arr(w), 0);
  assert_int_equal(jrpc__writer_arr_end(w), 0);
  assert_int_equal(jrpc__writer_raw(w, "{\"r\":[1]}", 9), 0);
  assert_int_equal(jrpc__writer_arr_end(w), 0);
  wr_expect(&x, "[\"s\\\"\",-5,18446744073709551615,1.5,false,true,null,{},"
                "[],{\"r\":[1]}]");
}

static void test_writer_scalars_top(void **state) {
  (void)state;
  wr_t x;
  wr_init(&x);
  assert_int_equal(jrpc__writer_i64(&x.w, 7), 0);
  wr_expect(&x, "7");
  wr_init(&x);
  assert_int_equal(jrpc__writer_str(&x.w, "hi", 2), 0);
  wr_expect(&x, "\"hi\"");
  wr_init(&x);
  assert_int_equal(jrpc__writer_obj(&x.w), 0);
  assert_int_equal(jrpc__writer_obj_end(&x.w), 0);
  wr_expect(&x, "{}");
  wr_init(&x);
  assert_int_equal(jrpc__writer_raw(&x.w, "[1,2]", 5), 0);
  wr_expect(&x, "[1,2]");
}

static void test_writer_keys(void **state) {
  (void)state;
  wr_t x;
  wr_init(&x);
  jrpc__writer_t *w = &x.w;
  assert_int_equal(jrpc__writer_obj(w), 0);
  assert_int_equal(K(w, "q\"k\n"), 0);
  assert_int_equal(jrpc__writer_i64(w, 1), 0);
  assert_int_equal(K(w, ""), 0);
  assert_int_equal(jrpc__writer_arr(w), 0);
  assert_int_equal(jrpc__writer_arr(w), 0);
  assert_int_equal(jrpc__writer_arr_end(w), 0);
  assert_int_equal(jrpc__writer_arr(w), 0);
  assert_int_equal(jrpc__writer_arr(w), 0);
  assert_int_equal(jrpc__writer_arr_end(w), 0);
  assert_int_equal(jrpc__writer_arr_end(w), 0);
  assert_int_equal(jrpc__writer_arr_end(w), 0);
  assert_int_equal(K(w, "r"), 0);
  assert_int_equal(jrpc__writer_raw(w, "true", 4), 0);
  assert_int_equal(jrpc__writer_obj_end(w), 0);
  wr_expect(&x, "{\"q\\\"k\\n\":1,\"\":[[],[[]]],\"r\":true}");
}

static void test_writer_empty(void **state) {
  (void)state;
  wr_t x;
  wr_init(&x);
  int empty = 0;
  assert_int_equal(jrpc__writer_finish(&x.w, &empty), 0);
  assert_int_equal(empty, 1);
  assert_int_equal(jrpc__out_pending(&x.o), 0);
  jrpc__out_free(&x.o);
}

static void test_misuse_key_outside_object(void **state) {
  (void)state;
  wr_t x;
  wr_init(&x);
  assert_true(K(&x.w, "a") < 0);
  wr_expect_fail(&x);

  wr_init(&x);
  assert_int_equal(jrpc__writer_arr(&x.w), 0);
  assert_true(K(&x.w, "a") < 0);
  wr_expect_fail(&x);
}

static void test_misuse_value_without_key(void **state) {
  (void)state;
  wr_t x;
  wr_init(&x);
  assert_int_equal(jrpc__writer_obj(&x.w), 0);
  assert_true(jrpc__writer_i64(&x.w, 1) < 0);
  wr_expect_fail(&x);

  wr_init(&x);
  assert_int_equal(jrpc__writer_obj(&x.w), 0);
  assert_int_equal(K(&x.w, "a"), 0);
  assert_int_equal(jrpc__writer_i64(&x.w, 1), 0);
  assert_true(jrpc__writer_str(&x.w, "v", 1) < 0);
  wr_expect_fail(&x);

  wr_init(&x);
  assert_int_equal(jrpc__writer_obj(&x.w), 0);
  assert_true(jrpc__writer_arr(&x.w) < 0);
  wr_expect_fail(&x);

  wr_init(&x);
  assert_int_equal(jrpc__writer_obj(&x.w), 0);
  assert_true(jrpc__writer_raw(&x.w, "1", 1) < 0);
  wr_expect_fail(&x);
}

static void test_misuse_two_top_level(void **state) {
  (void)state;
  wr_t x;
  wr_init(&x);
  assert_int_equal(jrpc__writer_i64(&x.w, 1), 0);
  assert_true(jrpc__writer_i64(&x.w, 2) < 0);
  wr_expect_fail(&x);

  wr_init(&x);
  assert_int_equal(jrpc__writer_arr(&x.w), 0);
  assert_int_equal(jrpc__writer_arr_end(&x.w), 0);
  assert_true(jrpc__writer_obj(&x.w) < 0);
  wr_expect_fail(&x);
}

static void test_misuse_wrong_end(void **state) {
  (void)state;
  wr_t x;
  wr_init(&x);
  assert_int_equal(jrpc__writer_arr(&x.w), 0);
  assert_true(jrpc__writer_obj_end(&x.w) < 0);
  wr_expect_fail(&x);

  wr_init(&x);
  assert_int_equal(jrpc__writer_obj(&x.w), 0);
  assert_true(jrpc__writer_arr_end(&x.w) < 0);
  wr_expect_fail(&x);

  wr_init(&x);
  assert_true(jrpc__writer_arr_end(&x.w) < 0);
  wr_expect_fail(&x);

  wr_init(&x);
  assert_true(jrpc__writer_obj_end(&x.w) < 0);
  wr_expect_fail(&x);
}

static void test_misuse_unclosed(void **state) {
  (void)state;
  wr_t x;
  int empty = 0;
  wr_init(&x);
  assert_int_equal(jrpc__writer_obj(&x.w), 0);
  assert_true(jrpc__writer_finish(&x.w, &empty) != 0);
  jrpc__out_free(&x.o);

  wr_init(&x);
  assert_int_equal(jrpc__writer_arr(&x.w), 0);
  assert_int_equal(jrpc__writer_i64(&x.w, 1), 0);
  assert_int_equal(jrpc__writer_arr(&x.w), 0);
  assert_int_equal(jrpc__writer_arr_end(&x.w), 0);
  assert_true(jrpc__writer_finish(&x.w, &empty) != 0);
  jrpc__out_free(&x.o);

  /* A key that never got its value. */
  wr_init(&x);
  assert_int_equal(jrpc__writer_obj(&x.w), 0);
  assert_int_equal(K(&x.w, "a"), 0);
  assert_true(jrpc__writer_finish(&x.w, &empty) != 0);
  jrpc__out_free(&x.o);
}

static void test_misuse_key_after_key(void **state) {
  (void)state;
  wr_t x;
  wr_init(&x);
  assert_int_equal(jrpc__writer_obj(&x.w), 0);
  assert_int_equal(K(&x.w, "a"), 0);
  assert_true(K(&x.w, "b") < 0);
  wr_expect_fail(&x);

  /* obj_end right after a key. */
  wr_init(&x);
  assert_int_equal(jrpc__writer_obj(&x.w), 0);
  assert_int_equal(K(&x.w, "a"), 0);
  assert_true(jrpc__writer_obj_end(&x.w) < 0);
  wr_expect_fail(&x);
}

/* After a misuse, later correct-looking calls do not clear it. */
static void test_misuse_sticky(void **state) {
  (void)state;
  wr_t x;
  wr_init(&x);
  assert_int_equal(jrpc__writer_obj(&x.w), 0);
  assert_true(jrpc__writer_null(&x.w) < 0);
  (void)K(&x.w, "a");
  (void)jrpc__writer_null(&x.w);
  (void)jrpc__writer_obj_end(&x.w);
  wr_expect_fail(&x);
}

static void test_writer_nonfinite(void **state) {
  (void)state;
  wr_t x;
  wr_init(&x);
  assert_int_equal(jrpc__writer_arr(&x.w), 0);
  assert_true(jrpc__writer_f64(&x.w, NAN) < 0);
  (void)jrpc__writer_arr_end(&x.w);
  wr_expect_fail(&x);
}

static void test_writer_depth(void **state) {
  (void)state;
  wr_t x;
  char want[2 * JRPC__WRITER_MAX_DEPTH + 1];
  /* Exactly the maximum depth is fine. */
  wr_init(&x);
  for (int i = 0; i < JRPC__WRITER_MAX_DEPTH; i++) {
    assert_int_equal(jrpc__writer_arr(&x.w), 0);
    want[i] = '[';
  }
  for (int i = 0; i < JRPC__WRITER_MAX_DEPTH; i++) {
    assert_int_equal(jrpc__writer_arr_end(&x.w), 0);
    want[JRPC__WRITER_MAX_DEPTH + i] = ']';
  }
  want[2 * JRPC__WRITER_MAX_DEPTH] = 0;
  wr_expect(&x, want);

  /* Alternating objects and arrays at full depth. */
  wr_init(&x);
  for (int i = 0; i < JRPC__WRITER_MAX_DEPTH; i++) {
    if (i % 2 == 0) {
      assert_int_equal(jrpc__writer_obj(&x.w), 0);
      assert_int_equal(K(&x.w, "k"), 0);
    } else {
      assert_int_equal(jrpc__writer_arr(&x.w), 0);
    }
  }
  assert_int_equal(jrpc__writer_null(&x.w), 0);
  for (int i = JRPC__WRITER_MAX_DEPTH - 1; i >= 0; i--) {
    if (i % 2 == 0)
      assert_int_equal(jrpc__writer_obj_end(&x.w), 0);
    else
      assert_int_equal(jrpc__writer_arr_end(&x.w), 0);
  }
  {
    int empty = -1;
    assert_int_equal(jrpc__writer_finish(&x.w, &empty), 0);
    jrpc__out_free(&x.o);
  }

  /* One deeper is an error, and far deeper does not crash. */
  wr_init(&x);
  for (int i = 0; i < JRPC__WRITER_MAX_DEPTH; i++)
    assert_int_equal(jrpc__writer_arr(&x.w), 0);
  assert_true(jrpc__writer_arr(&x.w) < 0);
  for (int i = 0; i < 1000; i++) {
    (void)jrpc__writer_obj(&x.w);
    (void)jrpc__writer_arr(&x.w);
  }
  for (int i = 0; i < 3000; i++)
    (void)jrpc__writer_arr_end(&x.w);
  wr_expect_fail(&x);
}

static void test_writer_raw_crlf(void **state) {
  (void)state;
  wr_t x;
  wr_init(&x);
  assert_int_equal(jrpc__writer_arr(&x.w), 0);
  const char raw[] = "{\r\n\"a\":\n[1,\r2]\n}";
  assert_int_equal(jrpc__writer_raw(&x.w, raw, sizeof raw - 1), 0);
  assert_int_equal(jrpc__writer_raw(&x.w, "\n3\r\n", 4), 0);
  assert_int_equal(jrpc__writer_arr_end(&x.w), 0);
  wr_expect(&x, "[{  \"a\": [1, 2] }, 3  ]");
}

/* The scans behind long strings (strspan.h) and raw values (bytescan.h),
 * on every kernel this CPU runs: a string of 100 to 140 bytes with one byte to
 * rewrite (a quote, a control character, a raw newline, invalid UTF-8) or a
 * UTF-8 sequence at each position comes out as the portable kernel writes it.
 */
static void test_long_runs_every_kernel(void **state) {
  (void)state;
  static const char *const kernels[] = {"sse2", "avx2"};
  static const char *const inserts[] = {"\"",       "\x01", "\n", "\xff",
                                        "\xc3\xa9", "\\",   "\r"};
  const char *best_span = jrpc__strspan_kernel();
  char s[160], *want[2];
  size_t wn[2];
  for (size_t len = 100; len <= 140; len += 13)
    for (size_t at = 0; at < len; at++)
      for (size_t k = 0; k < sizeof(inserts) / sizeof(inserts[0]); k++) {
        size_t in = strlen(inserts[k]);
        memset(s, 'x', len);
        memcpy(s + at, inserts[k], at + in <= len ? in : len - at);
        for (int raw = 0; raw < 2; raw++) {
          jrpc__scan_use("swar");
          want[raw] =
              raw ? raw_out(s, len, &wn[raw]) : str_out(s, len, &wn[raw]);
        }
        for (size_t v = 0; v < 2; v++) {
          if (jrpc__scan_use(kernels[v]) != 0)
            continue;
          for (int raw = 0; raw < 2; raw++) {
            size_t gn;
            char *got = raw ? raw_out(s, len, &gn) : str_out(s, len, &gn);
            if (gn != wn[raw] || memcmp(got, want[raw], gn) != 0)
              fail_msg("%s, %s, length %zu, insert %zu at %zu differs",
                       kernels[v], raw ? "raw" : "string", len, k, at);
            free(got);
          }
        }
        free(want[0]);
        free(want[1]);
      }
  jrpc__scan_use(NULL);
  assert_int_equal(jrpc__strspan_force(best_span), 0);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_str_simple),
      cmocka_unit_test(test_str_controls),
      cmocka_unit_test(test_str_utf8_passthrough),
      cmocka_unit_test(test_str_invalid_utf8),
      cmocka_unit_test(test_str_long),
      cmocka_unit_test(test_integers),
      cmocka_unit_test(test_f64_known),
      cmocka_unit_test(test_f64_random),
      cmocka_unit_test(test_f64_random_shortest),
      cmocka_unit_test(test_f64_nonfinite),
      cmocka_unit_test(test_writer_nested),
      cmocka_unit_test(test_writer_all_types),
      cmocka_unit_test(test_writer_scalars_top),
      cmocka_unit_test(test_writer_keys),
      cmocka_unit_test(test_writer_empty),
      cmocka_unit_test(test_misuse_key_outside_object),
      cmocka_unit_test(test_misuse_value_without_key),
      cmocka_unit_test(test_misuse_two_top_level),
      cmocka_unit_test(test_misuse_wrong_end),
      cmocka_unit_test(test_misuse_unclosed),
      cmocka_unit_test(test_misuse_key_after_key),
      cmocka_unit_test(test_misuse_sticky),
      cmocka_unit_test(test_writer_nonfinite),
      cmocka_unit_test(test_writer_depth),
      cmocka_unit_test(test_writer_raw_crlf),
      cmocka_unit_test(test_long_runs_every_kernel),
  };
  return cmocka_run_group_tests(tests, fx_pool_setup, fx_pool_teardown);
}
