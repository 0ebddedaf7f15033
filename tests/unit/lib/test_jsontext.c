/* test_jsontext.c - lib/jsontext.h: number grammar, string validation,
 * unescaping, number conversion. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <stdio.h>
#include <string.h>
#include <locale.h>
#include <math.h>

#include <cmocka.h>

#include "jrpc/jrpc.h"
#include "jsontext.h"
#include "testutil.h"

/* Every check runs on a heap copy of exactly n bytes (ASan catches reads
 * past the end) and, where given, on a slice of a longer buffer whose next
 * bytes would change the answer if they were read. */
static int num_valid_n(const char *s, size_t n) {
  char *c = calloc(1, n ? n : 1);
  memcpy(c, s, n);
  int r = jrpc__num_valid(c, n);
  free(c);
  return r;
}

static int num_valid(const char *s) {
  return num_valid_n(s, strlen(s));
}

static int str_valid_n(const char *s, size_t n, int *esc) {
  char *c = calloc(1, n ? n : 1);
  memcpy(c, s, n);
  int e = 0;
  int r = jrpc__str_valid(c, n, &e);
  free(c);
  if (esc)
    *esc = e;
  return r;
}

#define STR_VALID(lit) str_valid_n((lit), sizeof(lit) - 1, NULL)

/* ------------------------------------------------------------------ */

static void test_num_valid_accept(void **state) {
  (void)state;
  static const char *ok[] = {"0",
                             "-0",
                             "1",
                             "-1",
                             "123",
                             "1.5",
                             "-1.5e10",
                             "1E+2",
                             "1e-2",
                             "0.0",
                             "0e0",
                             "-0.0e-0",
                             "1e2",
                             "10",
                             "9007199254740993",
                             "0.000001",
                             "1234567890123456789012345678901234567890",
                             "1E400",
                             "-1.25E-3"};
  for (size_t i = 0; i < sizeof ok / sizeof ok[0]; i++) {
    if (!num_valid(ok[i]))
      print_message("rejected: '%s'\n", ok[i]);
    assert_true(num_valid(ok[i]));
  }
}

static void test_num_valid_reject(void **state) {
  (void)state;
  static const char *bad[] = {
      "",     "-",   "01",    "-01",  "1.",       ".1",        "1.e3", "2.e3",
      "+1",   "1e",  "1e+",   "0x10", "Infinity", "-Infinity", "NaN",  " 1",
      "1 ",   "--1", "1.5.5", "00",   "1e1.5",    "1ee2",      "e1",   "-e1",
      "1-",   "1+1", "0.",    "-.5",  "1,0",      "1e-",       "\t1",  "1\n",
      "true", "1a",  "- 1",   "0.e1"};
  for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
    if (num_valid(bad[i]))
      print_message("accepted: '%s'\n", bad[i]);
    assert_false(num_valid(bad[i]));
  }
  /* A NUL byte inside the slice. */
  assert_false(num_valid_n("1\0", 2));
}

/* Only the first n bytes count. */
static void test_num_valid_slice(void **state) {
  (void)state;
  assert_true(jrpc__num_valid("12x", 2));
  assert_false(jrpc__num_valid("1.5", 2));  /* "1." */
  assert_false(jrpc__num_valid("1e5", 2));  /* "1e" */
  assert_false(jrpc__num_valid("-1", 1));   /* "-" */
  assert_true(jrpc__num_valid("0123", 1));  /* "0" */
  assert_false(jrpc__num_valid("0123", 2)); /* "01" */
}

/* ------------------------------------------------------------------ */

static void test_str_valid_plain(void **state) {
  (void)state;
  int esc = -1;
  assert_true(str_valid_n("", 0, &esc));
  assert_int_equal(esc, 0);
  assert_true(str_valid_n("hello world", 11, &esc));
  assert_int_equal(esc, 0);
  /* DEL and '/' are fine raw. */
  assert_true(STR_VALID("a\x7f/b"));
  assert_false(STR_VALID("a\"b"));
}

static void test_str_valid_escapes(void **state) {
  (void)state;
  static const char *ok[] = {"\\\"",
                             "\\\\",
                             "\\/",
                             "\\b",
                             "\\f",
                             "\\n",
                             "\\r",
                             "\\t",
                             "\\u0041",
                             "\\u00e9",
                             "\\u00E9",
                             "\\uffff",
                             "\\u0000",
                             "a\\nb",
                             "\\uD83D\\uDE00",
                             "\\ud83d\\ude00",
                             "x\\ud800\\udc00y"};
  for (size_t i = 0; i < sizeof ok / sizeof ok[0]; i++) {
    int esc = 0;
    if (!str_valid_n(ok[i], strlen(ok[i]), &esc))
      print_message("rejected: '%s'\n", ok[i]);
    assert_true(str_valid_n(ok[i], strlen(ok[i]), &esc));
    assert_true(esc);
  }
  static const char *bad[] = {"\\x",
                              "\\u12",
                              "\\uZZZZ",
                              "\\u12G4",
                              "\\U0041",
                              "\\",
                              "a\\",
                              "\\a",
                              "\\0",
                              "\\'",
                              "\\ud800",
                              "\\udc00",
                              "\\ud800\\u0041",
                              "\\ud83d",
                              "\\ud83da",
                              "\\ud83d\\n",
                              "\\ud83d\\ud83d",
                              "\\ude00\\ud83d",
                              "\\ud800\\",
                              "\\ud800\\u"};
  for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
    if (str_valid_n(bad[i], strlen(bad[i]), NULL))
      print_message("accepted: '%s'\n", bad[i]);
    assert_false(str_valid_n(bad[i], strlen(bad[i]), NULL));
  }
  /* A short \u escape followed by hex digits outside the slice. */
  assert_false(jrpc__str_valid("\\u1234", 4, &(int){0}));
  assert_false(jrpc__str_valid("\\ud83d\\ude00", 6, &(int){0}));
}

static void test_str_valid_control(void **state) {
  (void)state;
  for (int c = 0; c < 0x20; c++) {
    char s[3] = {'a', (char)c, 'b'};
    assert_false(str_valid_n(s, 3, NULL));
  }
  assert_true(STR_VALID(" "));
}

static void test_str_valid_utf8(void **state) {
  (void)state;
  /* Valid: 2, 3 and 4 bytes, and the edges of each range. */
  assert_true(STR_VALID("\xc3\xa9"));         /* U+00E9 */
  assert_true(STR_VALID("\xc2\x80"));         /* U+0080 */
  assert_true(STR_VALID("\xdf\xbf"));         /* U+07FF */
  assert_true(STR_VALID("\xe0\xa0\x80"));     /* U+0800 */
  assert_true(STR_VALID("\xe2\x82\xac"));     /* U+20AC */
  assert_true(STR_VALID("\xed\x9f\xbf"));     /* U+D7FF */
  assert_true(STR_VALID("\xee\x80\x80"));     /* U+E000 */
  assert_true(STR_VALID("\xef\xbf\xbf"));     /* U+FFFF */
  assert_true(STR_VALID("\xf0\x90\x80\x80")); /* U+10000 */
  assert_true(STR_VALID("\xf0\x9f\x98\x80")); /* U+1F600 */
  assert_true(STR_VALID("\xf4\x8f\xbf\xbf")); /* U+10FFFF */
  assert_true(STR_VALID("a\xc3\xa9z\xe2\x82\xac\xf0\x9f\x98\x80!"));

  static const struct {
    const char *s;
    size_t n;
  } bad[] = {
      {"\xc0\x80", 2},         /* overlong NUL */
      {"\xc1\xbf", 2},         /* overlong */
      {"\xe0\x80\x80", 3},     /* overlong */
      {"\xe0\x9f\xbf", 3},     /* overlong */
      {"\xf0\x80\x80\x80", 4}, /* overlong */
      {"\xf0\x8f\xbf\xbf", 4}, /* overlong */
      {"\xed\xa0\x80", 3},     /* U+D800 encoded */
      {"\xed\xbf\xbf", 3},     /* U+DFFF encoded */
      {"\xf4\x90\x80\x80", 4}, /* U+110000 */
      {"\xf7\xbf\xbf\xbf", 4}, /* beyond */
      {"\x80", 1},             /* stray continuation */
      {"\xbf", 1},
      {"a\x80z", 3},
      {"\xc3\xa9\xa9", 3}, /* one continuation too many */
      {"\xc3", 1},         /* truncated */
      {"\xe2\x82", 2},
      {"\xf0\x9f\x98", 3},
      {"\xc3z", 2},     /* truncated, then ASCII */
      {"\xe2z\xac", 3}, /* broken in the middle */
      {"\xf5\x80\x80\x80", 4},
      {"\xf8\x88\x80\x80\x80", 5},
      {"\xfc\x84\x80\x80\x80\x80", 6},
      {"\xfe", 1},
      {"\xff", 1},
  };
  for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
    if (str_valid_n(bad[i].s, bad[i].n, NULL))
      print_message("accepted bad UTF-8 #%zu\n", i);
    assert_false(str_valid_n(bad[i].s, bad[i].n, NULL));
  }
  /* A sequence cut by the slice end, completed only beyond it. */
  assert_false(jrpc__str_valid("\xc3\xa9", 1, &(int){0}));
  assert_false(jrpc__str_valid("\xf0\x9f\x98\x80", 3, &(int){0}));
}

static void test_str_valid_has_escape(void **state) {
  (void)state;
  int esc = 0;
  assert_true(str_valid_n("abc\xc3\xa9", 5, &esc));
  assert_int_equal(esc, 0);
  esc = 0;
  assert_true(str_valid_n("abc\\/", 5, &esc));
  assert_true(esc);
  esc = 0;
  assert_true(str_valid_n("\\u0041", 6, &esc));
  assert_true(esc);
}

/* ------------------------------------------------------------------ */

static size_t unescape(const char *s, size_t n, char *dst) {
  char *c = calloc(1, n ? n : 1);
  memcpy(c, s, n);
  int esc;
  assert_true(jrpc__str_valid(c, n, &esc));
  size_t r = jrpc__str_unescape(c, n, dst);
  free(c);
  return r;
}

#define UNESC(lit, want)                                                       \
  do {                                                                         \
    char d_[sizeof(lit) + 1];                                                  \
    memset(d_, 0x55, sizeof d_);                                               \
    size_t n_ = unescape((lit), sizeof(lit) - 1, d_);                          \
    assert_int_equal(n_, sizeof(want) - 1);                                    \
    assert_memory_equal(d_, (want), sizeof(want) - 1);                         \
    assert_int_equal(d_[n_], 0);                                               \
  } while (0)

static void test_unescape(void **state) {
  (void)state;
  UNESC("", "");
  UNESC("plain", "plain");
  UNESC("\xc3\xa9", "\xc3\xa9");
  UNESC("\\\"\\\\\\/\\b\\f\\n\\r\\t", "\"\\/\b\f\n\r\t");
  UNESC("\\u0041", "A");
  UNESC("\\u007f", "\x7f");
  UNESC("\\u0080", "\xc2\x80");
  UNESC("\\u00e9", "\xc3\xa9");
  UNESC("\\u00E9", "\xc3\xa9");
  UNESC("\\u07ff", "\xdf\xbf");
  UNESC("\\u0800", "\xe0\xa0\x80");
  UNESC("\\u20ac", "\xe2\x82\xac");
  UNESC("\\uffff", "\xef\xbf\xbf");
  UNESC("\\ud83d\\ude00", "\xf0\x9f\x98\x80");
  UNESC("\\uD800\\uDC00", "\xf0\x90\x80\x80");
  UNESC("\\udbff\\udfff", "\xf4\x8f\xbf\xbf");
  UNESC("a\\u0000b", "a\0b");
  UNESC("x\\ny\\u00e9z", "x\ny\xc3\xa9z");
}

static void test_str_decode(void **state) {
  (void)state;
  jrpc__arena_t a;
  jrpc__arena_init(&a, 256, 1 << 20);
  size_t n = 0;
  const char *s = jrpc__str_decode("\\u00e9\\ud83d\\ude00", 18, &a, &n);
  assert_non_null(s);
  assert_int_equal(n, 6);
  assert_memory_equal(s, "\xc3\xa9\xf0\x9f\x98\x80", 6);
  assert_int_equal(s[6], 0);

  s = jrpc__str_decode("a\\u0000b", 8, &a, &n);
  assert_non_null(s);
  assert_int_equal(n, 3);
  assert_memory_equal(s, "a\0b", 3);
  assert_int_equal(s[3], 0);

  /* Without escapes: a copy, terminated, of only the n bytes. */
  s = jrpc__str_decode("plainXYZ", 5, &a, &n);
  assert_non_null(s);
  assert_int_equal(n, 5);
  assert_memory_equal(s, "plain", 5);
  assert_int_equal(s[5], 0);

  /* Longer than the arena's first chunk. */
  char big[3000];
  for (int i = 0; i < 500; i++)
    memcpy(big + 6 * i, "\\u00e9", 6);
  s = jrpc__str_decode(big, sizeof big, &a, &n);
  assert_non_null(s);
  assert_int_equal(n, 1000);
  for (int i = 0; i < 500; i++)
    assert_memory_equal(s + 2 * i, "\xc3\xa9", 2);
  assert_int_equal(s[1000], 0);
  jrpc__arena_free(&a);
}

/* ------------------------------------------------------------------ */

static int to_i64(const char *s, int64_t *v) {
  size_t n = strlen(s);
  assert_true(jrpc__num_valid(s, n));
  char *c = calloc(1, n);
  memcpy(c, s, n);
  int r = jrpc__num_to_i64(c, n, v);
  free(c);
  return r;
}

static void test_num_to_i64(void **state) {
  (void)state;
  int64_t v;
  assert_int_equal(to_i64("0", &v), 0);
  assert_int_equal(v, 0);
  v = 99;
  assert_int_equal(to_i64("-0", &v), 0);
  assert_int_equal(v, 0);
  assert_int_equal(to_i64("42", &v), 0);
  assert_int_equal(v, 42);
  assert_int_equal(to_i64("-42", &v), 0);
  assert_int_equal(v, -42);
  assert_int_equal(to_i64("9223372036854775807", &v), 0);
  assert_true(v == INT64_MAX);
  assert_int_equal(to_i64("-9223372036854775808", &v), 0);
  assert_true(v == INT64_MIN);
  assert_int_equal(to_i64("9223372036854775806", &v), 0);
  assert_true(v == INT64_MAX - 1);
  assert_int_equal(to_i64("9223372036854775808", &v), JRPC_ERANGE);
  assert_int_equal(to_i64("-9223372036854775809", &v), JRPC_ERANGE);
  assert_int_equal(to_i64("18446744073709551616", &v), JRPC_ERANGE);
  assert_int_equal(to_i64("99999999999999999999", &v), JRPC_ERANGE);
  assert_int_equal(to_i64("123456789012345678901234567890", &v), JRPC_ERANGE);
  assert_int_equal(to_i64("1.0", &v), JRPC_ERANGE);
  assert_int_equal(to_i64("1e2", &v), JRPC_ERANGE);
  assert_int_equal(to_i64("1E0", &v), JRPC_ERANGE);
  assert_int_equal(to_i64("-0.5", &v), JRPC_ERANGE);
  /* Only the slice counts. */
  assert_int_equal(jrpc__num_to_i64("1234", 2, &v), 0);
  assert_int_equal(v, 12);
}

static int to_f64(const char *s, double *v) {
  size_t n = strlen(s);
  assert_true(jrpc__num_valid(s, n));
  char *c = calloc(1, n);
  memcpy(c, s, n);
  int r = jrpc__num_to_f64(c, n, v);
  free(c);
  return r;
}

static int same_bits(double a, double b) {
  return memcmp(&a, &b, sizeof a) == 0;
}

static void test_num_to_f64(void **state) {
  (void)state;
  double v;
  assert_int_equal(to_f64("0.1", &v), 0);
  assert_true(same_bits(v, 0.1));
  assert_int_equal(to_f64("1e308", &v), 0);
  assert_true(same_bits(v, 1e308));
  assert_int_equal(to_f64("-2.5", &v), 0);
  assert_true(same_bits(v, -2.5));
  assert_int_equal(to_f64("-0", &v), 0);
  assert_true(same_bits(v, -0.0));
  assert_int_equal(to_f64("42", &v), 0);
  assert_true(same_bits(v, 42.0));
  assert_int_equal(to_f64("1E+2", &v), 0);
  assert_true(same_bits(v, 100.0));
  assert_int_equal(to_f64("1e400", &v), JRPC_ERANGE);
  assert_int_equal(to_f64("-1e400", &v), JRPC_ERANGE);
  /* Underflow is not an overflow: it reads as zero or a subnormal. */
  assert_int_equal(to_f64("1e-400", &v), 0);
  assert_true(v == 0.0);
  assert_int_equal(to_f64("5e-324", &v), 0);
  assert_true(same_bits(v, 5e-324));
  /* Correct rounding where it is easy to get wrong. */
  assert_int_equal(to_f64("9007199254740993", &v), 0);
  assert_true(same_bits(v, 9007199254740992.0));
  assert_int_equal(to_f64("1.7976931348623157e308", &v), 0);
  assert_true(same_bits(v, 1.7976931348623157e308));
  assert_int_equal(to_f64("2.2250738585072011e-308", &v), 0);
  assert_true(same_bits(v, 2.2250738585072011e-308));
  assert_int_equal(to_f64("0.30000000000000004", &v), 0);
  assert_true(same_bits(v, 0.30000000000000004));
  assert_int_equal(to_f64("123456789012345678901234567890", &v), 0);
  assert_true(same_bits(v, 123456789012345678901234567890.0));
  /* Only the slice counts. */
  assert_int_equal(jrpc__num_to_f64("1.55", 3, &v), 0);
  assert_true(same_bits(v, 1.5));
  assert_int_equal(jrpc__num_to_f64("2e10", 1, &v), 0);
  assert_true(same_bits(v, 2.0));
}

/* The fast path (exact multiply/divide by a power of ten) must give the
 * same double as strtod, bit for bit, on numbers it takes and on the edge
 * of what it takes (15/16 digits, exponents 22/23). */
static void test_num_to_f64_matches_strtod(void **state) {
  (void)state;
  uint64_t x = 0x9E3779B97F4A7C15ull;
  char buf[64];
  for (int i = 0; i < 200000; i++) {
    x ^= x << 13;
    x ^= x >> 7;
    x ^= x << 17;
    int digits = 1 + (int)(x % 17); /* 1..17 significant digits */
    int point = (int)((x >> 8) % (unsigned)(digits + 1));
    int exp = (int)((x >> 16) % 61) - 30; /* -30..30 */
    size_t n = 0;
    if (x >> 63)
      buf[n++] = '-';
    uint64_t y = x;
    for (int d = 0; d < digits; d++) {
      if (d == point && d > 0)
        buf[n++] = '.';
      int digit = (int)(y % 10);
      y /= 10;
      if (d == 0 && digit == 0 && point != 1)
        digit = 1; /* no leading zero unless "0.x" */
      buf[n++] = (char)('0' + digit);
    }
    if ((x >> 40) & 1)
      n += (size_t)snprintf(buf + n, sizeof(buf) - n, "e%d", exp);
    buf[n] = 0;
    if (!jrpc__num_valid(buf, n))
      continue;
    double want = strtod(buf, NULL), got = 0;
    assert_int_equal(jrpc__num_to_f64(buf, n, &got), 0);
    if (memcmp(&want, &got, sizeof(double)) != 0)
      fail_msg("%s: strtod %.17g, jrpc %.17g", buf, want, got);
  }
}

/* The comma-decimal locales tried, in order. */
static const char *const comma_locales[] = {"de_DE.UTF-8", "de_DE.utf8",
                                            "fr_FR.UTF-8", "de_DE", NULL};

static int set_comma_locale(void) {
  for (int i = 0; comma_locales[i]; i++)
    if (setlocale(LC_NUMERIC, comma_locales[i]))
      return 1;
  return 0;
}

/* Conversion ignores LC_NUMERIC: "1.5" is 1.5 where the decimal point is a
 * comma. Run alone (test_jsontext locale) after main has set the locale. */
static void test_num_to_f64_locale(void **state) {
  (void)state;
  assert_true(set_comma_locale());
  assert_int_equal(strcmp(localeconv()->decimal_point, ","), 0);
  /* Short ones take the exact fast path; 17 digits and a large exponent
   * go to strtod, whose LC_NUMERIC dependence is what is under test. */
  static const struct {
    const char *text;
    double want;
  } cases[] = {
      {"1.5", 1.5},
      {"-0.25e1", -2.5},
      {"1.2345678901234567", 1.2345678901234567},
      {"-7.5e300", -7.5e300},
  };
  double got[4];
  int rc[4];
  for (int i = 0; i < 4; i++)
    rc[i] = to_f64(cases[i].text, &got[i]);
  setlocale(LC_NUMERIC, "C");
  for (int i = 0; i < 4; i++) {
    assert_int_equal(rc[i], 0);
    if (!same_bits(got[i], cases[i].want))
      fail_msg("%s read as %.17g under a comma-decimal locale", cases[i].text,
               got[i]);
  }
}

int main(int argc, char **argv) {
  if (argc > 1 && strcmp(argv[1], "locale") == 0) {
    if (!set_comma_locale())
      return tu_missing("no comma-decimal locale installed (de_DE.UTF-8 or "
                        "fr_FR.UTF-8)");
    setlocale(LC_NUMERIC, "C");
    const struct CMUnitTest locale_tests[] = {
        cmocka_unit_test(test_num_to_f64_locale),
    };
    return cmocka_run_group_tests(locale_tests, NULL, NULL);
  }
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_num_valid_accept),
      cmocka_unit_test(test_num_valid_reject),
      cmocka_unit_test(test_num_valid_slice),
      cmocka_unit_test(test_str_valid_plain),
      cmocka_unit_test(test_str_valid_escapes),
      cmocka_unit_test(test_str_valid_control),
      cmocka_unit_test(test_str_valid_utf8),
      cmocka_unit_test(test_str_valid_has_escape),
      cmocka_unit_test(test_unescape),
      cmocka_unit_test(test_str_decode),
      cmocka_unit_test(test_num_to_i64),
      cmocka_unit_test(test_num_to_f64),
      cmocka_unit_test(test_num_to_f64_matches_strtod),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
