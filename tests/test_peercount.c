/* test_peercount.c - max_connections_per_peer's table: the limit per
 * peer, peers counted apart (uid against address, IPv4 against IPv6),
 * places given back, growth past the first size, and slots of peers gone
 * reused without the table growing for ever. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

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

static void test_limit(void **state) {
  (void)state;
  jrpcd_peercount_t pc;
  jrpcd_peercount_init(&pc, 2);
  jrpcd_peerkey_t a = uid_key(1000), b = uid_key(1001), ip = v4_key(1000);
  jrpcd_peerkey_t ip6 = ip;
  ip6.family = AF_INET6;
  uint32_t open;
  assert_true(jrpcd_peercount_take(&pc, &a, &open));
  assert_int_equal(open, 1);
  assert_true(jrpcd_peercount_take(&pc, &a, &open));
  assert_int_equal(open, 2);
  assert_false(jrpcd_peercount_take(&pc, &a, &open));
  assert_int_equal(open, 2);
  /* Others are counted apart, even with the same number inside. */
  assert_true(jrpcd_peercount_take(&pc, &b, &open));
  assert_true(jrpcd_peercount_take(&pc, &ip, &open));
  assert_true(jrpcd_peercount_take(&pc, &ip6, &open));
  assert_int_equal(open, 1);
  /* A place given back is free again. */
  jrpcd_peercount_give(&pc, &a);
  assert_true(jrpcd_peercount_take(&pc, &a, &open));
  assert_false(jrpcd_peercount_take(&pc, &a, &open));
  jrpcd_peercount_free(&pc);

  /* No limit: nothing is counted. */
  jrpcd_peercount_init(&pc, 0);
  for (int i = 0; i < 10; i++)
    assert_true(jrpcd_peercount_take(&pc, &a, &open));
  assert_int_equal(pc.used, 0);
  jrpcd_peercount_free(&pc);
}

static void test_many_peers(void **state) {
  (void)state;
  jrpcd_peercount_t pc;
  jrpcd_peercount_init(&pc, 3);
  enum { N = 5000 };
  uint32_t open;
  for (uint32_t i = 0; i < N; i++) {
    jrpcd_peerkey_t k = v4_key(i);
    assert_true(jrpcd_peercount_take(&pc, &k, &open));
    assert_true(jrpcd_peercount_take(&pc, &k, &open));
  }
  assert_int_equal(pc.used, N);
  size_t cap = pc.cap;
  assert_true(cap * 3 >= (size_t)N * 4); /* at most three quarters full */
  for (uint32_t i = 0; i < N; i++) {
    jrpcd_peerkey_t k = v4_key(i);
    assert_true(jrpcd_peercount_take(&pc, &k, &open));
    assert_int_equal(open, 3);
    assert_false(jrpcd_peercount_take(&pc, &k, &open));
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
      assert_true(jrpcd_peercount_take(&pc, &k, &open));
      assert_int_equal(open, 1);
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

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_limit),
      cmocka_unit_test(test_many_peers),
  };
  return cmocka_run_group_tests_name("test_peercount", tests, NULL, NULL);
}
