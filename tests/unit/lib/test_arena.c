/* test_arena.c - lib/arena.h: alignment, growth, reset consolidation,
 * retain cap, mark/rewind. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "arena.h"

static int aligned16(const void *p) {
  return ((uintptr_t)p % JRPC__ARENA_ALIGN) == 0;
}

/* A mixed workload of n allocations; every block is filled with a pattern
 * derived from its index so overlaps show up in verify(). */
#define WL_MAX 4096
typedef struct {
  unsigned char *p[WL_MAX];
  size_t n[WL_MAX];
  size_t count;
} workload_t;

static size_t wl_size(size_t i) {
  static const size_t sizes[] = {1, 7, 16, 17, 31, 64, 100, 255, 513, 1000};
  return sizes[i % (sizeof sizes / sizeof sizes[0])] + (i % 3);
}

static void wl_run(jrpc__arena_t *a, workload_t *w, size_t count) {
  assert_true(count <= WL_MAX);
  w->count = count;
  for (size_t i = 0; i < count; i++) {
    w->n[i] = wl_size(i);
    w->p[i] = jrpc__arena_alloc(a, w->n[i]);
    assert_non_null(w->p[i]);
    assert_true(aligned16(w->p[i]));
    memset(w->p[i], (int)(i * 31 + 7) & 0xff, w->n[i]);
  }
}

static void wl_verify(const workload_t *w) {
  for (size_t i = 0; i < w->count; i++)
    for (size_t j = 0; j < w->n[i]; j++)
      assert_int_equal(w->p[i][j], (i * 31 + 7) & 0xff);
}

static size_t wl_bytes(size_t count) {
  size_t t = 0;
  for (size_t i = 0; i < count; i++)
    t += wl_size(i);
  return t;
}

static void test_alignment(void **state) {
  (void)state;
  jrpc__arena_t a;
  jrpc__arena_init(&a, 4096, 1 << 20);
  for (size_t n = 0; n < 300; n++) {
    void *p = jrpc__arena_alloc(&a, n ? n : 1);
    assert_non_null(p);
    assert_true(aligned16(p));
  }
  /* Odd sizes in a row never hand out overlapping or unaligned blocks. */
  char *prev = jrpc__arena_alloc(&a, 3);
  for (int i = 0; i < 100; i++) {
    char *p = jrpc__arena_alloc(&a, 3);
    assert_true(aligned16(p));
    assert_true(p != prev);
    prev = p;
  }
  jrpc__arena_free(&a);
}

static void test_many_sizes(void **state) {
  (void)state;
  static workload_t w;
  jrpc__arena_t a;
  jrpc__arena_init(&a, 1024, 1 << 20);
  wl_run(&a, &w, 2000);
  wl_verify(&w);
  /* It must have grown past the first 1 KiB chunk. */
  assert_true(a.mallocs >= 2);
  assert_true(a.total >= wl_bytes(2000));
  jrpc__arena_free(&a);
}

static void test_larger_than_chunk(void **state) {
  (void)state;
  jrpc__arena_t a;
  jrpc__arena_init(&a, 256, 1 << 20);
  unsigned char *small = jrpc__arena_alloc(&a, 10);
  assert_non_null(small);
  memset(small, 0x11, 10);
  size_t big_n = 100000;
  unsigned char *big = jrpc__arena_alloc(&a, big_n);
  assert_non_null(big);
  assert_true(aligned16(big));
  memset(big, 0x22, big_n);
  unsigned char *after = jrpc__arena_alloc(&a, 10);
  assert_non_null(after);
  memset(after, 0x33, 10);
  for (size_t i = 0; i < 10; i++) {
    assert_int_equal(small[i], 0x11);
    assert_int_equal(after[i], 0x33);
  }
  for (size_t i = 0; i < big_n; i++)
    assert_int_equal(big[i], 0x22);
  assert_true(a.total >= big_n + 20);
  jrpc__arena_free(&a);
}

static void test_reset_consolidates(void **state) {
  (void)state;
  static workload_t w;
  jrpc__arena_t a;
  jrpc__arena_init(&a, 512, 1 << 20);
  wl_run(&a, &w, 1500);
  wl_verify(&w);
  assert_true(a.mallocs >= 2);
  jrpc__arena_reset(&a);
  uint64_t m = a.mallocs;
  for (int round = 0; round < 5; round++) {
    wl_run(&a, &w, 1500);
    wl_verify(&w);
    assert_int_equal(a.mallocs, m);
    jrpc__arena_reset(&a);
    assert_int_equal(a.mallocs, m);
  }
  /* Also with one allocation bigger than a chunk in the cycle. */
  jrpc__arena_reset(&a);
  wl_run(&a, &w, 100);
  assert_non_null(jrpc__arena_alloc(&a, 300000));
  jrpc__arena_reset(&a);
  m = a.mallocs;
  for (int round = 0; round < 3; round++) {
    wl_run(&a, &w, 100);
    unsigned char *big = jrpc__arena_alloc(&a, 300000);
    assert_non_null(big);
    memset(big, 0x5a, 300000);
    wl_verify(&w);
    jrpc__arena_reset(&a);
    assert_int_equal(a.mallocs, m);
  }
  jrpc__arena_free(&a);
}

static void test_reset_reuses_memory(void **state) {
  (void)state;
  jrpc__arena_t a;
  jrpc__arena_init(&a, 4096, 1 << 20);
  void *p1 = jrpc__arena_alloc(&a, 100);
  jrpc__arena_reset(&a);
  void *p2 = jrpc__arena_alloc(&a, 100);
  assert_ptr_equal(p1, p2);
  uint64_t m = a.mallocs;
  for (int i = 0; i < 1000; i++) {
    jrpc__arena_reset(&a);
    assert_non_null(jrpc__arena_alloc(&a, 100));
  }
  assert_int_equal(a.mallocs, m);
  jrpc__arena_free(&a);
}

static void test_retain_cap(void **state) {
  (void)state;
  const size_t retain = 64 * 1024;
  jrpc__arena_t a;
  jrpc__arena_init(&a, 4096, retain);
  for (int i = 0; i < 256; i++) {
    unsigned char *p = jrpc__arena_alloc(&a, 4000);
    assert_non_null(p);
    memset(p, i, 4000);
  }
  assert_true(a.total >= 256 * 4000);
  jrpc__arena_reset(&a);
  assert_true(a.total <= retain);
  /* Still usable after shrinking, and a big cycle again stays bounded. */
  for (int round = 0; round < 3; round++) {
    for (int i = 0; i < 100; i++) {
      unsigned char *p = jrpc__arena_alloc(&a, 8000);
      assert_non_null(p);
      memset(p, i, 8000);
    }
    jrpc__arena_reset(&a);
    assert_true(a.total <= retain);
  }
  /* One allocation larger than retain. */
  unsigned char *p = jrpc__arena_alloc(&a, 4 * retain);
  assert_non_null(p);
  memset(p, 1, 4 * retain);
  jrpc__arena_reset(&a);
  assert_true(a.total <= retain);
  jrpc__arena_free(&a);
}

static void test_mark_rewind(void **state) {
  (void)state;
  jrpc__arena_t a;
  jrpc__arena_init(&a, 1024, 1 << 20);
  unsigned char *keep = jrpc__arena_alloc(&a, 40);
  memset(keep, 0xab, 40);

  jrpc__arena_mark_t m = jrpc__arena_mark(&a);
  void *first = jrpc__arena_alloc(&a, 24);
  /* Spill over several chunks. */
  for (int i = 0; i < 50; i++) {
    unsigned char *p = jrpc__arena_alloc(&a, 200);
    assert_non_null(p);
    memset(p, 0xcd, 200);
  }
  uint64_t mallocs = a.mallocs;
  assert_true(mallocs >= 3);
  jrpc__arena_rewind(&a, m);
  /* The next allocation starts where the mark was. */
  void *again = jrpc__arena_alloc(&a, 24);
  assert_ptr_equal(first, again);
  for (int i = 0; i < 40; i++)
    assert_int_equal(keep[i], 0xab);

  /* Repeating the same workload after rewind reuses the spare chunks. */
  for (int round = 0; round < 5; round++) {
    jrpc__arena_rewind(&a, m);
    void *p0 = jrpc__arena_alloc(&a, 24);
    assert_ptr_equal(p0, first);
    for (int i = 0; i < 50; i++) {
      unsigned char *p = jrpc__arena_alloc(&a, 200);
      assert_non_null(p);
      memset(p, 0xcd, 200);
    }
    assert_int_equal(a.mallocs, mallocs);
  }
  for (int i = 0; i < 40; i++)
    assert_int_equal(keep[i], 0xab);
  jrpc__arena_free(&a);
}

static void test_mark_nested(void **state) {
  (void)state;
  jrpc__arena_t a;
  jrpc__arena_init(&a, 1024, 1 << 20);
  (void)jrpc__arena_alloc(&a, 16);
  jrpc__arena_mark_t m1 = jrpc__arena_mark(&a);
  void *a1 = jrpc__arena_alloc(&a, 100);
  jrpc__arena_mark_t m2 = jrpc__arena_mark(&a);
  void *b1 = jrpc__arena_alloc(&a, 100);
  for (int i = 0; i < 20; i++)
    (void)jrpc__arena_alloc(&a, 300);
  jrpc__arena_rewind(&a, m2);
  void *b2 = jrpc__arena_alloc(&a, 100);
  assert_ptr_equal(b1, b2);
  jrpc__arena_rewind(&a, m1);
  void *a2 = jrpc__arena_alloc(&a, 100);
  assert_ptr_equal(a1, a2);
  jrpc__arena_free(&a);
}

/* A mark taken before anything was allocated rewinds to empty. */
static void test_mark_on_fresh_arena(void **state) {
  (void)state;
  jrpc__arena_t a;
  jrpc__arena_init(&a, 1024, 1 << 20);
  jrpc__arena_mark_t m = jrpc__arena_mark(&a);
  for (int i = 0; i < 30; i++) {
    unsigned char *p = jrpc__arena_alloc(&a, 100);
    assert_non_null(p);
    memset(p, i, 100);
  }
  jrpc__arena_rewind(&a, m);
  uint64_t mallocs = a.mallocs;
  for (int round = 0; round < 3; round++) {
    for (int i = 0; i < 30; i++) {
      unsigned char *p = jrpc__arena_alloc(&a, 100);
      assert_non_null(p);
      assert_true(aligned16(p));
      memset(p, i, 100);
    }
    jrpc__arena_rewind(&a, m);
  }
  assert_int_equal(a.mallocs, mallocs);
  jrpc__arena_free(&a);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_alignment),
      cmocka_unit_test(test_many_sizes),
      cmocka_unit_test(test_larger_than_chunk),
      cmocka_unit_test(test_reset_consolidates),
      cmocka_unit_test(test_reset_reuses_memory),
      cmocka_unit_test(test_retain_cap),
      cmocka_unit_test(test_mark_rewind),
      cmocka_unit_test(test_mark_nested),
      cmocka_unit_test(test_mark_on_fresh_arena),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
