/* test_stats.c - the latency histogram of lib/stats.h: every duration
 * falls in the bucket whose bounds hold it, buckets are within 25% of
 * their lower bound, the last one takes everything longer, and quantiles
 * are ordered, never beyond the longest call and never below the value
 * they stand for. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "stats.h"

static void test_buckets(void **state) {
  (void)state;
  /* Bounds rise, and each bucket's width is at most a quarter of its
   * lower bound from 4 us on. */
  for (unsigned k = 0; k + 1 < JRPC__LAT_BUCKETS; k++) {
    uint64_t lo = jrpc__lat_lower_ns(k), hi = jrpc__lat_lower_ns(k + 1);
    assert_true(lo < hi);
    if (k >= 4)
      assert_true((hi - lo) * 4 <= lo);
    /* Both ends of the bucket, and a value between, land in it. */
    assert_int_equal(jrpc__lat_bucket(lo), k);
    assert_int_equal(jrpc__lat_bucket(hi - 1), k);
    assert_int_equal(jrpc__lat_bucket(lo + (hi - lo) / 2), k);
  }
  assert_int_equal(jrpc__lat_bucket(0), 0);
  assert_int_equal(jrpc__lat_bucket(999), 0);
  assert_int_equal(jrpc__lat_bucket(1000), 1);
  /* A minute and more: the last bucket, which starts near 58.7 s. */
  uint64_t last = jrpc__lat_lower_ns(JRPC__LAT_BUCKETS - 1);
  assert_true(last > 50000000000ull && last < 60000000000ull);
  assert_int_equal(jrpc__lat_bucket(60000000000ull), JRPC__LAT_BUCKETS - 1);
  assert_int_equal(jrpc__lat_bucket(UINT64_MAX), JRPC__LAT_BUCKETS - 1);
  assert_true(jrpc__lat_lower_ns(JRPC__LAT_BUCKETS) == UINT64_MAX);
}

static void test_quantiles(void **state) {
  (void)state;
  static jrpc__mstat_t m;
  /* 98 calls of 10 us, one of 5 ms, one of 2 s. */
  for (int i = 0; i < 98; i++)
    jrpc__lat_add(&m, 10000, 1);
  jrpc__lat_add(&m, 5000000, 1);
  jrpc__lat_add(&m, 2000000000, 1);
  uint64_t h[JRPC__LAT_BUCKETS], total = 0;
  for (unsigned k = 0; k < JRPC__LAT_BUCKETS; k++)
    total += h[k] = JRPC__STAT_GET(m.lat[k]);
  assert_int_equal(total, 100);
  uint64_t max = JRPC__STAT_GET(m.max_ns);
  assert_int_equal(max, 2000000000);
  uint64_t p50 = jrpc__lat_quantile_ns(h, total, 0.50, max);
  uint64_t p99 = jrpc__lat_quantile_ns(h, total, 0.99, max);
  uint64_t p100 = jrpc__lat_quantile_ns(h, total, 1.0, max);
  /* p50: 10 us, read as its bucket's upper bound (within 25%). */
  assert_true(p50 >= 10000 && p50 <= 12500);
  /* p99 is the 99th call: 5 ms. */
  assert_true(p99 >= 5000000 && p99 <= 6250000);
  assert_int_equal(p100, max);
  /* Clamped to the longest call: one call of 10 us has p50 = max. */
  uint64_t one[JRPC__LAT_BUCKETS] = {0};
  one[jrpc__lat_bucket(10001)] = 1;
  assert_int_equal(jrpc__lat_quantile_ns(one, 1, 0.5, 10001), 10001);
  assert_int_equal(jrpc__lat_quantile_ns(one, 0, 0.5, 0), 0);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_buckets),
      cmocka_unit_test(test_quantiles),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
