/* test_outbuf.c - lib/outbuf.h: appending across segments, exact content
 * through copy and iov, mark/truncate, consume, pool reuse. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "outbuf.h"
#include "outbuf_fx.h"

static unsigned char pat(size_t i) {
  return (unsigned char)((i * 131 + (i >> 8) * 7 + 3) & 0xff);
}

static char *pattern(size_t off, size_t n) {
  char *s = malloc(n ? n : 1);
  assert_non_null(s);
  for (size_t i = 0; i < n; i++)
    s[i] = (char)pat(off + i);
  return s;
}

/* Pending bytes through jrpc__out_copy. */
static char *copy_all(jrpc__outbuf_t *o, size_t *n) {
  uint64_t pend = jrpc__out_pending(o);
  char *d = malloc((size_t)pend + 1);
  assert_non_null(d);
  *n = jrpc__out_copy(o, d, (size_t)pend + 1);
  assert_int_equal(*n, pend);
  return d;
}

/* Pending bytes through jrpc__out_iov. */
static char *iov_all(jrpc__outbuf_t *o, size_t *n) {
  const char *ptrs[1024];
  size_t lens[1024];
  size_t cnt = jrpc__out_iov(o, ptrs, lens, 1024);
  uint64_t pend = jrpc__out_pending(o);
  char *d = malloc((size_t)pend + 1);
  assert_non_null(d);
  size_t at = 0;
  for (size_t i = 0; i < cnt; i++) {
    assert_true(at + lens[i] <= pend);
    memcpy(d + at, ptrs[i], lens[i]);
    at += lens[i];
  }
  *n = at;
  return d;
}

/* Pending content must equal want[0..n) by both access paths. */
static void expect_pending(jrpc__outbuf_t *o, const void *want, size_t n) {
  assert_int_equal(jrpc__out_pending(o), n);
  size_t got_n = 0;
  char *got = copy_all(o, &got_n);
  assert_int_equal(got_n, n);
  assert_memory_equal(got, want, n);
  free(got);
  got = iov_all(o, &got_n);
  assert_int_equal(got_n, n);
  assert_memory_equal(got, want, n);
  free(got);
}

static void test_empty(void **state) {
  (void)state;
  jrpc__outbuf_t o;
  jrpc__out_init(&o, &fx_pool);
  assert_int_equal(jrpc__out_pending(&o), 0);
  assert_int_equal(jrpc__out_pos(&o), 0);
  const char *ptrs[4];
  size_t lens[4];
  size_t cnt = jrpc__out_iov(&o, ptrs, lens, 4);
  for (size_t i = 0; i < cnt; i++)
    assert_int_equal(lens[i], 0);
  char d[4];
  assert_int_equal(jrpc__out_copy(&o, d, sizeof d), 0);
  jrpc__out_free(&o);
}

static void test_put_small(void **state) {
  (void)state;
  jrpc__outbuf_t o;
  jrpc__out_init(&o, &fx_pool);
  assert_int_equal(jrpc__out_put(&o, "hello", 5), 0);
  assert_int_equal(jrpc__out_byte(&o, ' '), 0);
  assert_int_equal(jrpc__out_put(&o, "world", 5), 0);
  expect_pending(&o, "hello world", 11);
  assert_int_equal(jrpc__out_pos(&o), 11);
  const char *ptrs[4];
  size_t lens[4];
  assert_int_equal(jrpc__out_iov(&o, ptrs, lens, 4), 1);
  assert_int_equal(lens[0], 11);
  jrpc__out_free(&o);
  assert_int_equal(fx_pool.live, 0);
}

static void test_put_large(void **state) {
  (void)state;
  const size_t n = 10 * JRPC__SEG_SIZE + 12345;
  char *src = pattern(0, n);
  jrpc__outbuf_t o;
  jrpc__out_init(&o, &fx_pool);
  assert_int_equal(jrpc__out_put(&o, "<", 1), 0);
  assert_int_equal(jrpc__out_put(&o, src, n), 0);
  assert_int_equal(jrpc__out_pos(&o), n + 1);
  char *want = malloc(n + 1);
  want[0] = '<';
  memcpy(want + 1, src, n);
  expect_pending(&o, want, n + 1);

  /* Several segments, each within its capacity. */
  const char *ptrs[64];
  size_t lens[64];
  size_t cnt = jrpc__out_iov(&o, ptrs, lens, 64);
  assert_true(cnt >= 2);
  size_t sum = 0;
  for (size_t i = 0; i < cnt; i++)
    sum += lens[i];
  assert_int_equal(sum, n + 1);
  /* With a smaller max, the first entries come in order. */
  const char *p2[2];
  size_t l2[2];
  assert_int_equal(jrpc__out_iov(&o, p2, l2, 2), 2);
  assert_ptr_equal(p2[0], ptrs[0]);
  assert_int_equal(l2[0], lens[0]);
  assert_ptr_equal(p2[1], ptrs[1]);
  assert_int_equal(l2[1], lens[1]);

  /* Copy into a short destination stops at cap. */
  char small[100];
  assert_int_equal(jrpc__out_copy(&o, small, sizeof small), sizeof small);
  assert_memory_equal(small, want, sizeof small);

  free(want);
  free(src);
  jrpc__out_free(&o);
  assert_int_equal(fx_pool.live, 0);
}

/* Many small appends of every kind straddle the segment borders. */
static void test_put_mixed(void **state) {
  (void)state;
  const size_t n = 5 * JRPC__SEG_SIZE;
  char *want = malloc(n + 200);
  size_t at = 0;
  jrpc__outbuf_t o;
  jrpc__out_init(&o, &fx_pool);
  size_t k = 0;
  while (at < n) {
    switch (k++ % 3) {
    case 0: {
      size_t len = 1 + k % 37;
      char *s = pattern(at, len);
      assert_int_equal(jrpc__out_put(&o, s, len), 0);
      memcpy(want + at, s, len);
      at += len;
      free(s);
      break;
    }
    case 1:
      assert_int_equal(jrpc__out_byte(&o, (char)pat(at)), 0);
      want[at] = (char)pat(at);
      at++;
      break;
    default: {
      size_t len = 1 + k % 64;
      char *r = jrpc__out_room(&o, len);
      assert_non_null(r);
      assert_ptr_equal(r, o.p);
      assert_true((size_t)(o.end - o.p) >= len);
      for (size_t i = 0; i < len; i++)
        r[i] = want[at + i] = (char)pat(at + i);
      o.p += len;
      at += len;
      break;
    }
    }
    assert_int_equal(jrpc__out_pos(&o), at);
  }
  expect_pending(&o, want, at);
  free(want);
  jrpc__out_free(&o);
}

static void test_truncate_within_segment(void **state) {
  (void)state;
  jrpc__outbuf_t o;
  jrpc__out_init(&o, &fx_pool);
  jrpc__out_put(&o, "abc", 3);
  jrpc__outmark_t m = jrpc__out_mark(&o);
  assert_int_equal(m.pos, 3);
  jrpc__out_put(&o, "defg", 4);
  expect_pending(&o, "abcdefg", 7);
  jrpc__out_truncate(&o, m);
  expect_pending(&o, "abc", 3);
  assert_int_equal(jrpc__out_pos(&o), 3);
  jrpc__out_put(&o, "X", 1);
  expect_pending(&o, "abcX", 4);
  /* Truncating to the current position changes nothing. */
  m = jrpc__out_mark(&o);
  jrpc__out_truncate(&o, m);
  expect_pending(&o, "abcX", 4);
  jrpc__out_free(&o);
}

static void test_truncate_across_segments(void **state) {
  (void)state;
  const size_t big = 4 * JRPC__SEG_SIZE + 100;
  char *src = pattern(0, big + 100);
  jrpc__outbuf_t o;
  jrpc__out_init(&o, &fx_pool);
  jrpc__out_put(&o, src, 100);
  jrpc__outmark_t m = jrpc__out_mark(&o);
  jrpc__out_put(&o, src + 100, big);
  assert_int_equal(jrpc__out_pending(&o), 100 + big);
  jrpc__out_truncate(&o, m);
  expect_pending(&o, src, 100);
  assert_int_equal(jrpc__out_pos(&o), 100);
  /* Appending after truncation continues from the mark. */
  jrpc__out_put(&o, src + 100, 1000);
  expect_pending(&o, src, 1100);

  /* Steady state: the segments dropped by truncate are reused. */
  jrpc__out_truncate(&o, m);
  uint64_t mallocs = 0;
  for (int round = 0; round < 10; round++) {
    jrpc__out_put(&o, src + 100, big);
    jrpc__out_truncate(&o, m);
    expect_pending(&o, src, 100);
    if (round == 1)
      mallocs = fx_pool.mallocs;
    else if (round > 1)
      assert_int_equal(fx_pool.mallocs, mallocs);
  }
  free(src);
  jrpc__out_free(&o);
  assert_int_equal(fx_pool.live, 0);
}

/* A mark inside a segment that is full, truncated after more segments. */
static void test_truncate_at_segment_end(void **state) {
  (void)state;
  jrpc__outbuf_t o;
  jrpc__out_init(&o, &fx_pool);
  jrpc__out_byte(&o, 'a');
  size_t room = (size_t)(o.end - o.p);
  char *src = pattern(0, room + 3 * JRPC__SEG_SIZE);
  jrpc__out_put(&o, src, room); /* tail now exactly full */
  jrpc__outmark_t m = jrpc__out_mark(&o);
  jrpc__out_put(&o, src + room, 3 * JRPC__SEG_SIZE);
  jrpc__out_truncate(&o, m);
  char *want = malloc(room + 10);
  want[0] = 'a';
  memcpy(want + 1, src, room);
  expect_pending(&o, want, room + 1);
  jrpc__out_put(&o, "xyz", 3);
  memcpy(want + 1 + room, "xyz", 3);
  expect_pending(&o, want, room + 4);
  free(want);
  free(src);
  jrpc__out_free(&o);
}

/* A mark taken on an empty chain truncates back to nothing. */
static void test_truncate_to_empty(void **state) {
  (void)state;
  jrpc__outbuf_t o;
  jrpc__out_init(&o, &fx_pool);
  jrpc__outmark_t m = jrpc__out_mark(&o);
  char *src = pattern(0, 3 * JRPC__SEG_SIZE);
  jrpc__out_put(&o, src, 3 * JRPC__SEG_SIZE);
  jrpc__out_truncate(&o, m);
  assert_int_equal(jrpc__out_pending(&o), 0);
  jrpc__out_put(&o, "ok", 2);
  expect_pending(&o, "ok", 2);
  free(src);
  jrpc__out_free(&o);
}

static void test_consume_partial(void **state) {
  (void)state;
  jrpc__outbuf_t o;
  jrpc__out_init(&o, &fx_pool);
  jrpc__out_put(&o, "hello world", 11);
  jrpc__out_consume(&o, 6);
  expect_pending(&o, "world", 5);
  const char *ptrs[2];
  size_t lens[2];
  assert_int_equal(jrpc__out_iov(&o, ptrs, lens, 2), 1);
  assert_memory_equal(ptrs[0], "world", 5);
  assert_int_equal(jrpc__out_pos(&o), 11);
  jrpc__out_put(&o, "!", 1);
  expect_pending(&o, "world!", 6);
  jrpc__out_consume(&o, 6);
  assert_int_equal(jrpc__out_pending(&o), 0);
  assert_int_equal(jrpc__out_pos(&o), 12);
  /* Reuse after everything was consumed. */
  jrpc__out_put(&o, "again", 5);
  expect_pending(&o, "again", 5);
  assert_int_equal(jrpc__out_pos(&o), 17);
  jrpc__out_free(&o);
}

static void test_consume_across_segments(void **state) {
  (void)state;
  const size_t n = 7 * JRPC__SEG_SIZE + 999;
  char *src = pattern(0, n);
  jrpc__outbuf_t o;
  jrpc__out_init(&o, &fx_pool);
  jrpc__out_put(&o, src, n);
  size_t live_full = fx_pool.live;
  size_t done = 0;
  size_t step = 1;
  while (done < n) {
    size_t c = step < n - done ? step : n - done;
    jrpc__out_consume(&o, c);
    done += c;
    assert_int_equal(jrpc__out_pending(&o), n - done);
    if (n - done > 0) {
      /* The first iov entry starts at the first pending byte. */
      const char *ptrs[1];
      size_t lens[1];
      assert_int_equal(jrpc__out_iov(&o, ptrs, lens, 1), 1);
      assert_true(lens[0] > 0);
      assert_int_equal((unsigned char)ptrs[0][0], pat(done));
    }
    step = step * 3 + 1;
  }
  assert_int_equal(jrpc__out_pending(&o), 0);
  /* Consumed segments went back to the pool; at most the tail is kept. */
  assert_true(fx_pool.live <= live_full / 4);
  jrpc__out_put(&o, src, 100);
  expect_pending(&o, src, 100);
  free(src);
  jrpc__out_free(&o);
}

static void test_consume_middle_then_check(void **state) {
  (void)state;
  const size_t n = 3 * JRPC__SEG_SIZE;
  char *src = pattern(0, n);
  jrpc__outbuf_t o;
  jrpc__out_init(&o, &fx_pool);
  jrpc__out_put(&o, src, n);
  jrpc__out_consume(&o, JRPC__SEG_SIZE + 17);
  expect_pending(&o, src + JRPC__SEG_SIZE + 17, n - JRPC__SEG_SIZE - 17);
  free(src);
  jrpc__out_free(&o);
}

/* Write and consume a lot: the pool stops allocating after warm-up. */
static void test_steady_state(void **state) {
  (void)state;
  const size_t n = 40000;
  char *src = pattern(0, n);
  jrpc__outbuf_t o;
  jrpc__out_init(&o, &fx_pool);
  uint64_t m = 0;
  for (int round = 0; round < 50; round++) {
    jrpc__out_put(&o, src, n);
    expect_pending(&o, src, n);
    /* Consume in two uneven steps, like partial socket writes. */
    jrpc__out_consume(&o, 12345);
    jrpc__out_consume(&o, n - 12345);
    assert_int_equal(jrpc__out_pending(&o), 0);
    if (round == 2)
      m = fx_pool.mallocs;
    else if (round > 2)
      assert_int_equal(fx_pool.mallocs, m);
  }
  assert_int_equal(jrpc__out_pos(&o), 50 * (uint64_t)n);
  free(src);
  jrpc__out_free(&o);
}

/* Nothing pending: every segment goes back to the pool and positions
 * start over; something pending: nothing happens. */
static void test_release_idle(void **state) {
  (void)state;
  const size_t n = 20000; /* two segments */
  char *src = pattern(0, n);
  jrpc__outbuf_t o;
  jrpc__out_init(&o, &fx_pool);
  jrpc__out_release_idle(&o); /* fresh: nothing to do */
  assert_null(o.head);
  jrpc__out_put(&o, src, n);
  jrpc__out_consume(&o, n - 1);
  jrpc__out_release_idle(&o);
  assert_int_equal(jrpc__out_pending(&o), 1);
  assert_true(fx_pool.live > 0);
  jrpc__out_consume(&o, 1);
  jrpc__out_release_idle(&o);
  assert_null(o.head);
  assert_int_equal(fx_pool.live, 0);
  assert_int_equal(jrpc__out_pos(&o), 0);
  /* Usable as new, marks included. */
  jrpc__outmark_t m = jrpc__out_mark(&o);
  jrpc__out_put(&o, src, 100);
  assert_int_equal(jrpc__out_pos(&o) - m.pos, 100);
  expect_pending(&o, src, 100);
  jrpc__out_truncate(&o, m);
  assert_int_equal(jrpc__out_pending(&o), 0);
  free(src);
  jrpc__out_free(&o);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_release_idle),
      cmocka_unit_test(test_empty),
      cmocka_unit_test(test_put_small),
      cmocka_unit_test(test_put_large),
      cmocka_unit_test(test_put_mixed),
      cmocka_unit_test(test_truncate_within_segment),
      cmocka_unit_test(test_truncate_across_segments),
      cmocka_unit_test(test_truncate_at_segment_end),
      cmocka_unit_test(test_truncate_to_empty),
      cmocka_unit_test(test_consume_partial),
      cmocka_unit_test(test_consume_across_segments),
      cmocka_unit_test(test_consume_middle_then_check),
      cmocka_unit_test(test_steady_state),
  };
  return cmocka_run_group_tests(tests, fx_pool_setup, fx_pool_teardown);
}
