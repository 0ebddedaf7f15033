/* test_bufpool.c - lib/bufpool.h: alignment, padding, size classes, reuse,
 * retain cap, refusal of impossible sizes. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "bufpool.h"
#include "common.h"

static size_t next_pow2(size_t v) {
  size_t p = 1;
  while (p < v)
    p <<= 1;
  return p;
}

/* The class a request for `want` usable bytes should land in. */
static size_t class_for(size_t want) {
  size_t s = next_pow2(want + JRPC__PAD);
  return s < ((size_t)1 << JRPC__BUF_MIN_SHIFT)
             ? (size_t)1 << JRPC__BUF_MIN_SHIFT
             : s;
}

static void fill_all(char *b, size_t cap, unsigned char v) {
  /* The usable part and the padding after it must all be addressable. */
  memset(b, v, cap + JRPC__PAD);
}

static void check_all(const char *b, size_t cap, unsigned char v) {
  for (size_t i = 0; i < cap + JRPC__PAD; i++)
    assert_int_equal((unsigned char)b[i], v);
}

static void test_alignment_and_padding(void **state) {
  (void)state;
  jrpc__bufpool_t p;
  jrpc__bufpool_init(&p, 1 << 24);
  static const size_t wants[] = {0,    1,    63,    64,     100,
                                 4031, 4032, 4033,  4096,   8000,
                                 8128, 8129, 65536, 100000, 1 << 20};
  for (size_t i = 0; i < sizeof wants / sizeof wants[0]; i++) {
    size_t cap = 0;
    char *b = jrpc__bufpool_get(&p, wants[i], &cap);
    assert_non_null(b);
    assert_int_equal((uintptr_t)b % 64, 0);
    assert_true(cap >= wants[i]);
    /* A class of size S offers S - JRPC__PAD usable bytes. */
    assert_int_equal(cap + JRPC__PAD, class_for(wants[i]));
    fill_all(b, cap, (unsigned char)(i + 1));
    check_all(b, cap, (unsigned char)(i + 1));
    jrpc__bufpool_put(&p, b, cap);
  }
  assert_int_equal(p.live, 0);
  jrpc__bufpool_free(&p);
}

static void test_reuse(void **state) {
  (void)state;
  jrpc__bufpool_t p;
  jrpc__bufpool_init(&p, 1 << 24);
  size_t cap1 = 0, cap2 = 0;
  char *b1 = jrpc__bufpool_get(&p, 1000, &cap1);
  assert_non_null(b1);
  assert_true(p.live > 0);
  jrpc__bufpool_put(&p, b1, cap1);
  assert_int_equal(p.live, 0);
  uint64_t m = p.mallocs;
  assert_true(m >= 1);
  char *b2 = jrpc__bufpool_get(&p, 1900, &cap2); /* same class */
  assert_int_equal(class_for(1000), class_for(1900));
  assert_ptr_equal(b1, b2);
  assert_int_equal(cap1, cap2);
  jrpc__bufpool_put(&p, b2, cap2);
  /* Every size of b1's class comes back as b1. */
  for (int i = 0; i < 10000; i++) {
    size_t c = 0;
    size_t want = cap1 / 2 + 1 + (size_t)i % (cap1 / 2);
    assert_int_equal(class_for(want), class_for(cap1));
    char *b = jrpc__bufpool_get(&p, want, &c);
    assert_non_null(b);
    b[0] = 1;
    b[c + JRPC__PAD - 1] = 2;
    jrpc__bufpool_put(&p, b, c);
  }
  assert_int_equal(p.mallocs, m);
  jrpc__bufpool_free(&p);
}

static void test_size_classes(void **state) {
  (void)state;
  jrpc__bufpool_t p;
  jrpc__bufpool_init(&p, 1 << 24);
  static const size_t wants[] = {100, 5000, 10000, 70000, 300000};
  enum { N = sizeof wants / sizeof wants[0] };
  char *b[N];
  size_t cap[N];
  for (size_t i = 0; i < N; i++) {
    b[i] = jrpc__bufpool_get(&p, wants[i], &cap[i]);
    assert_non_null(b[i]);
    fill_all(b[i], cap[i], (unsigned char)(0x40 + i));
    if (i > 0)
      assert_true(cap[i] > cap[i - 1]);
  }
  /* No buffer overlaps another. */
  for (size_t i = 0; i < N; i++)
    check_all(b[i], cap[i], (unsigned char)(0x40 + i));
  for (size_t i = 0; i < N; i++)
    jrpc__bufpool_put(&p, b[i], cap[i]);
  assert_int_equal(p.live, 0);
  uint64_t m = p.mallocs;
  for (int round = 0; round < 10; round++) {
    /* Reverse order: each class hands back its own buffer. */
    for (size_t k = N; k-- > 0;) {
      size_t c = 0;
      char *x = jrpc__bufpool_get(&p, wants[k], &c);
      assert_ptr_equal(x, b[k]);
      assert_int_equal(c, cap[k]);
    }
    for (size_t k = 0; k < N; k++)
      jrpc__bufpool_put(&p, b[k], cap[k]);
  }
  assert_int_equal(p.mallocs, m);
  jrpc__bufpool_free(&p);
}

static void test_many_same_class(void **state) {
  (void)state;
  jrpc__bufpool_t p;
  jrpc__bufpool_init(&p, 1 << 24);
  enum { N = 64 };
  char *b[N];
  size_t cap[N];
  for (int i = 0; i < N; i++) {
    b[i] = jrpc__bufpool_get(&p, 3000, &cap[i]);
    assert_non_null(b[i]);
    fill_all(b[i], cap[i], (unsigned char)i);
  }
  for (int i = 0; i < N; i++)
    check_all(b[i], cap[i], (unsigned char)i);
  for (int i = 0; i < N; i++)
    jrpc__bufpool_put(&p, b[i], cap[i]);
  uint64_t m = p.mallocs;
  assert_int_equal(m, N);
  for (int i = 0; i < N; i++) {
    b[i] = jrpc__bufpool_get(&p, 3000, &cap[i]);
    assert_non_null(b[i]);
  }
  assert_int_equal(p.mallocs, m);
  for (int i = 0; i < N; i++)
    jrpc__bufpool_put(&p, b[i], cap[i]);
  jrpc__bufpool_free(&p);
}

static void test_huge_want(void **state) {
  (void)state;
  jrpc__bufpool_t p;
  jrpc__bufpool_init(&p, 1 << 24);
  static const size_t wants[] = {
      SIZE_MAX,
      SIZE_MAX - JRPC__PAD,
      SIZE_MAX / 2,
      (size_t)1 << 40,
      ((size_t)1 << JRPC__BUF_MAX_SHIFT) - JRPC__PAD + 1, /* one over max */
      (size_t)1 << JRPC__BUF_MAX_SHIFT,
  };
  for (size_t i = 0; i < sizeof wants / sizeof wants[0]; i++) {
    size_t cap = 12345;
    char *b = jrpc__bufpool_get(&p, wants[i], &cap);
    assert_null(b);
  }
  assert_int_equal(p.live, 0);
  assert_int_equal(p.mallocs, 0);
  /* The pool still works afterwards. */
  size_t cap = 0;
  char *b = jrpc__bufpool_get(&p, 10, &cap);
  assert_non_null(b);
  jrpc__bufpool_put(&p, b, cap);
  jrpc__bufpool_free(&p);
}

static void test_retain_cap(void **state) {
  (void)state;
  const size_t retain = 16 * 1024;
  jrpc__bufpool_t p;
  jrpc__bufpool_init(&p, retain);
  enum { N = 10 };
  char *b[N];
  size_t cap[N];
  for (int i = 0; i < N; i++) {
    b[i] = jrpc__bufpool_get(&p, 1000, &cap[i]); /* 4 KiB class */
    assert_non_null(b[i]);
  }
  for (int i = 0; i < N; i++) {
    jrpc__bufpool_put(&p, b[i], cap[i]);
    assert_true(p.idle <= retain);
  }
  assert_int_equal(p.live, 0);
  assert_true(p.idle > 0);
  /* Only what was kept can be reused: getting N again must malloc the
   * rest (at most retain / the class size were kept). */
  uint64_t m = p.mallocs;
  for (int i = 0; i < N; i++) {
    b[i] = jrpc__bufpool_get(&p, 1000, &cap[i]);
    assert_non_null(b[i]);
  }
  assert_true(p.mallocs - m >= N - retain / class_for(1000));
  for (int i = 0; i < N; i++)
    jrpc__bufpool_put(&p, b[i], cap[i]);
  /* A buffer bigger than retain is not kept at all. */
  size_t c = 0;
  char *big = jrpc__bufpool_get(&p, 100000, &c);
  assert_non_null(big);
  jrpc__bufpool_put(&p, big, c);
  assert_true(p.idle <= retain);
  jrpc__bufpool_free(&p);
}

static void test_retain_zero(void **state) {
  (void)state;
  jrpc__bufpool_t p;
  jrpc__bufpool_init(&p, 0);
  size_t c = 0;
  char *b = jrpc__bufpool_get(&p, 100, &c);
  assert_non_null(b);
  jrpc__bufpool_put(&p, b, c);
  assert_int_equal(p.idle, 0);
  assert_int_equal(p.live, 0);
  jrpc__bufpool_free(&p);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_alignment_and_padding),
      cmocka_unit_test(test_reuse),
      cmocka_unit_test(test_size_classes),
      cmocka_unit_test(test_many_same_class),
      cmocka_unit_test(test_huge_want),
      cmocka_unit_test(test_retain_cap),
      cmocka_unit_test(test_retain_zero),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
