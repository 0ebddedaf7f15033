/* test_strspan.c - lib/strspan.h: every string-scanning kernel this CPU
 * can run finds the same first special byte as a byte-by-byte reference,
 * at every offset and length, and reads nothing past the end it is given
 * (buffers are heap copies of exactly that length, for ASan). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "strspan.h"

static const unsigned char *reference(const unsigned char *p,
                                      const unsigned char *end) {
  while (p < end && *p >= 0x20 && *p < 0x80 && *p != '"' && *p != '\\')
    p++;
  return p;
}

/* The bytes a special one is drawn from: each class the kernels treat
 * differently, and the neighbours of each boundary. */
static const unsigned char specials[] = {0x00, 0x01, 0x1F, '"',  '\\',
                                         0x80, 0xC3, 0xFF, 0x7F, 0x20};

/* Plain bytes of length n with one byte b at position at (n: none);
 * checks jrpc__plain_span and jrpc__plain_span_long on an exact-size
 * copy. */
static void check(size_t n, size_t at, unsigned char b) {
  unsigned char *buf = malloc(n ? n : 1);
  for (size_t i = 0; i < n; i++)
    buf[i] = (unsigned char)('a' + i % 26);
  if (at < n)
    buf[at] = b;
  const unsigned char *want = reference(buf, buf + n);
  const unsigned char *got = jrpc__plain_span(buf, buf + n);
  if (got != want)
    fail_msg("plain_span n=%zu at=%zu byte=%#x: %td, want %td", n, at, b,
             got - buf, want - buf);
  got = jrpc__plain_span_long(buf, buf + n);
  if (got != want)
    fail_msg("%s n=%zu at=%zu byte=%#x: %td, want %td", jrpc__strspan_kernel(),
             n, at, b, got - buf, want - buf);
  free(buf);
}

static void sweep(void) {
  for (size_t n = 0; n <= 200; n++) {
    check(n, n, 0);
    for (size_t at = 0; at < n; at++)
      for (size_t k = 0; k < sizeof(specials); k++)
        check(n, at, specials[k]);
  }
  /* Long spans: every step size and tail of the unrolled loops. */
  for (size_t n = 4000; n <= 4130; n++) {
    check(n, n, 0);
    check(n, n - 1, '"');
    check(n, n - 70, 0x80);
  }
}

static void run_kernel(const char *name) {
  if (jrpc__strspan_force(name) != 0) {
    printf("kernel %s: not on this CPU or in this build, skipped\n", name);
    return;
  }
  assert_string_equal(jrpc__strspan_kernel(), name);
  sweep();
}

static void test_swar(void **state) {
  (void)state;
  run_kernel("swar");
}
static void test_sse2(void **state) {
  (void)state;
  run_kernel("sse2");
}
static void test_avx2(void **state) {
  (void)state;
  run_kernel("avx2");
}

static void test_unknown_kernel(void **state) {
  (void)state;
  assert_int_equal(jrpc__strspan_force("no such kernel"), -1);
}

int main(void) {
  const char *chosen = jrpc__strspan_kernel();
  printf("kernel chosen for this CPU: %s\n", chosen);
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_swar),
      cmocka_unit_test(test_sse2),
      cmocka_unit_test(test_avx2),
      cmocka_unit_test(test_unknown_kernel),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
