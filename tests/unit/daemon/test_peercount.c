/* test_peercount.c - max_connections_per_peer's table: the limit per
 * peer, peers counted apart (uid against address, IPv4 against IPv6),
 * places given back, growth past the first size, slots of peers gone
 * reused without the table growing for ever, and IPv6 peers counted by
 * peer_prefix_v6 (two addresses of one /64 are one peer; one bit outside
 * it, another). Only ::1 is loopback on Linux, so two IPv6 sources of one
 * /64 cannot be had end to end without privileges: the grouping is tested
 * here, on the keys admit.c makes. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <stdio.h>
#include <string.h>
#include <sys/socket.h>

#include "peercount.h"

static jrpcd_peerkey_t uid_key(uint32_t uid) {
  jrpcd_peerkey_t k;
  memset(&k, 0, sizeof(k));
  k.family = AF_UNIX;
  k.id = uid;
  return k;
}

static jrpcd_peerkey_t v4_key(uint32_t n) {
  jrpcd_peerkey_t k;
  memset(&k, 0, sizeof(k));
  k.family = AF_INET;
  memcpy(k.addr, &n, 4);
  return k;
}

/* Asks pc for a place for k: asserts that it is given (ok 1) or refused
 * (ok 0), failing at the caller's line; returns the count of k's
 * connections open that it reported. */
#define take(pc, k, ok) take_at((pc), (k), (ok), __FILE__, __LINE__)
static uint32_t take_at(jrpcd_peercount_t *pc, const jrpcd_peerkey_t *k, int ok,
                        const char *file, int line) {
  uint32_t open = 0;
  int given = jrpcd_peercount_take(pc, k, &open) != 0;
  _assert_int_equal(cast_to_largest_integral_type(given),
                    cast_to_largest_integral_type(ok), file, line);
  return open;
}

static void test_limit(void **state) {
  (void)state;
  jrpcd_peercount_t pc;
  jrpcd_peercount_init(&pc, 2, 128);
  jrpcd_peerkey_t a = uid_key(1000), b = uid_key(1001), ip = v4_key(1000);
  jrpcd_peerkey_t ip6 = ip;
  ip6.family = AF_INET6;
  assert_int_equal(take(&pc, &a, 1), 1);
  assert_int_equal(take(&pc, &a, 1), 2);
  assert_int_equal(take(&pc, &a, 0), 2);
  /* Others are counted apart, even with the same number inside. */
  take(&pc, &b, 1);
  take(&pc, &ip, 1);
  assert_int_equal(take(&pc, &ip6, 1), 1);
  /* A place given back is free again. */
  jrpcd_peercount_give(&pc, &a);
  take(&pc, &a, 1);
  take(&pc, &a, 0);
  jrpcd_peercount_free(&pc);

  /* No limit: nothing is counted. */
  jrpcd_peercount_init(&pc, 0, 64);
  for (int i = 0; i < 10; i++)
    take(&pc, &a, 1);
  assert_int_equal(pc.used, 0);
  jrpcd_peercount_free(&pc);
}

static void test_many_peers(void **state) {
  (void)state;
  jrpcd_peercount_t pc;
  jrpcd_peercount_init(&pc, 3, 128);
  enum { N = 5000 };
  for (uint32_t i = 0; i < N; i++) {
    jrpcd_peerkey_t k = v4_key(i);
    take(&pc, &k, 1);
    take(&pc, &k, 1);
  }
  assert_int_equal(pc.used, N);
  size_t cap = pc.cap;
  assert_true(cap * 3 >= (size_t)N * 4); /* at most three quarters full */
  for (uint32_t i = 0; i < N; i++) {
    jrpcd_peerkey_t k = v4_key(i);
    assert_int_equal(take(&pc, &k, 1), 3);
    take(&pc, &k, 0);
  }
  /* Every peer leaves; rounds of new peers come and go: the table keeps
   * its size (slots of peers gone are reused or swept). */
  for (uint32_t i = 0; i < N; i++) {
    jrpcd_peerkey_t k = v4_key(i);
    for (int j = 0; j < 3; j++)
      jrpcd_peercount_give(&pc, &k);
  }
  assert_int_equal(pc.used, 0);
  for (uint32_t round = 1; round <= 20; round++) {
    for (uint32_t i = 0; i < 100; i++) {
      jrpcd_peerkey_t k = v4_key(round * 1000000 + i);
      assert_int_equal(take(&pc, &k, 1), 1);
    }
    for (uint32_t i = 0; i < 100; i++) {
      jrpcd_peerkey_t k = v4_key(round * 1000000 + i);
      jrpcd_peercount_give(&pc, &k);
    }
  }
  assert_int_equal(pc.used, 0);
  assert_true(pc.cap <= cap);
  jrpcd_peercount_free(&pc);
}

static void v6(uint8_t a[16], const char *hex) {
  for (int i = 0; i < 16; i++) {
    unsigned b;
    sscanf(hex + 2 * i, "%2x", &b);
    a[i] = (uint8_t)b;
  }
}

static void test_prefix_v6(void **state) {
  (void)state;
  uint8_t a1[16], a2[16], b[16], v4[16] = {10, 0, 0, 7, 99, 99};
  v6(a1, "20010db8000000010000000000000001"); /* 2001:db8:0:1::1 */
  v6(a2, "20010db80000000100ab00cd00ef0002"); /* 2001:db8:0:1:ab:cd:ef:2 */
  v6(b, "20010db8000000000000000000000001");  /* 2001:db8::1, next /64 */
  jrpcd_peercount_t pc;
  jrpcd_peercount_init(&pc, 2, 64);
  jrpcd_peerkey_t k1, k2, kb, k4, k4b;
  jrpcd_peerkey_addr(&pc, &k1, AF_INET6, a1);
  jrpcd_peerkey_addr(&pc, &k2, AF_INET6, a2);
  jrpcd_peerkey_addr(&pc, &kb, AF_INET6, b);
  /* Two addresses of one /64 share its two places... */
  take(&pc, &k1, 1);
  assert_int_equal(take(&pc, &k2, 1), 2);
  take(&pc, &k1, 0);
  take(&pc, &k2, 0);
  /* ... while the next /64 has its own. */
  assert_int_equal(take(&pc, &kb, 1), 1);
  /* IPv4 keys keep the whole address and nothing past it. */
  jrpcd_peerkey_addr(&pc, &k4, AF_INET, v4);
  v4[4] = 1;
  jrpcd_peerkey_addr(&pc, &k4b, AF_INET, v4);
  assert_memory_equal(&k4, &k4b, sizeof(k4));
  assert_int_equal(take(&pc, &k4, 1), 1);
  jrpcd_peercount_free(&pc);

  /* A prefix off a byte boundary: /60 takes the high nibble of byte 7. */
  jrpcd_peercount_init(&pc, 1, 60);
  a2[7] = 0x0f; /* 2001:db8:0:f::, same /60 as a1 */
  jrpcd_peerkey_addr(&pc, &k1, AF_INET6, a1);
  jrpcd_peerkey_addr(&pc, &k2, AF_INET6, a2);
  assert_memory_equal(&k1, &k2, sizeof(k1));
  a2[7] = 0x10; /* 2001:db8:0:10::, the next /60 */
  jrpcd_peerkey_addr(&pc, &k2, AF_INET6, a2);
  assert_memory_not_equal(&k1, &k2, sizeof(k1));
  jrpcd_peercount_free(&pc);

  /* 128: every address on its own. */
  jrpcd_peercount_init(&pc, 1, 128);
  jrpcd_peerkey_addr(&pc, &k1, AF_INET6, a1);
  a2[7] = 0x01;
  jrpcd_peerkey_addr(&pc, &k2, AF_INET6, a2);
  assert_memory_not_equal(&k1, &k2, sizeof(k1));
  jrpcd_peercount_free(&pc);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_limit),
      cmocka_unit_test(test_many_peers),
      cmocka_unit_test(test_prefix_v6),
  };
  return cmocka_run_group_tests_name("test_peercount", tests, NULL, NULL);
}
