/* [cluster] on reload: what a new broker connection takes over from the
 * one it replaces (interest.c: jrpcd_interest_carry, _forget_carried,
 * _let_go). The workers count into the new table anew; a topic the old
 * connection held is subscribed once more as JRPCD_INTEREST_AGAIN (its
 * subscribers are told of the gap), a topic counted fresh is not, and what
 * no worker counts after all of them have is forgotten. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "interest.h"

/* A broker: what was applied to it, by kind. */
typedef struct broker {
  int subs, again, unsubs, released;
} broker_t;

static int apply(void *arg, const char *key, size_t key_n, int subscribe,
                 void **handle) {
  (void)key;
  (void)key_n;
  broker_t *b = arg;
  if (subscribe == JRPCD_INTEREST_AGAIN)
    b->again++;
  else if (subscribe)
    b->subs++;
  else
    b->unsubs++;
  *handle = subscribe ? b : NULL;
  return 0;
}

static void release(void *arg, void *handle) {
  broker_t *b = arg;
  assert_ptr_equal(handle, b);
  b->released++;
}

/* The old connection (old, its broker b) holds t1 and t2; t3 was counted
 * but its broker call not yet made (not held). The new one's table (in)
 * takes over from it. */
static void switch_over(jrpcd_interest_t *old, broker_t *b,
                        jrpcd_interest_t *in) {
  assert_int_equal(jrpcd_interest_init(old), 0);
  assert_int_equal(jrpcd_interest_change(old, "m\0t1", 4, 1), 1);
  assert_int_equal(jrpcd_interest_change(old, "m\0t2", 4, 1), 1);
  assert_int_equal(jrpcd_interest_take(old, apply, b), 2);
  assert_int_equal(jrpcd_interest_change(old, "m\0t3", 4, 1), 1);
  assert_int_equal(jrpcd_interest_init(in), 0);
  assert_int_equal(jrpcd_interest_carry(in, old), 0);
}

static void test_carry_tells_held_topics_once(void **state) {
  (void)state;
  broker_t ob = {0}, nb = {0};
  jrpcd_interest_t old, in;
  switch_over(&old, &ob, &in);
  /* Nothing is subscribed until a worker counts: the counts are not
   * copied. */
  assert_int_equal(jrpcd_interest_take(&in, apply, &nb), 0);
  /* The workers count t1 (held before) and t3 (not held before). */
  assert_int_equal(jrpcd_interest_change(&in, "m\0t1", 4, 1), 1);
  assert_int_equal(jrpcd_interest_change(&in, "m\0t3", 4, 1), 1);
  assert_int_equal(jrpcd_interest_take(&in, apply, &nb), 2);
  assert_int_equal(nb.again, 1);
  assert_int_equal(nb.subs, 1);
  /* t1 again, after its last subscriber and a new one: a plain subscribe,
   * the gap was told once. */
  assert_int_equal(jrpcd_interest_change(&in, "m\0t1", 4, -1), 1);
  assert_int_equal(jrpcd_interest_take(&in, apply, &nb), 1);
  assert_int_equal(jrpcd_interest_change(&in, "m\0t1", 4, 1), 1);
  assert_int_equal(jrpcd_interest_take(&in, apply, &nb), 1);
  assert_int_equal(nb.again, 1);
  assert_int_equal(nb.subs, 2);
  assert_int_equal(nb.unsubs, 1);
  /* Every worker has counted: t2, which none does, is forgotten, and a
   * first subscriber later is a plain one. */
  jrpcd_interest_forget_carried(&in);
  assert_int_equal(jrpcd_interest_change(&in, "m\0t2", 4, 1), 1);
  assert_int_equal(jrpcd_interest_take(&in, apply, &nb), 1);
  assert_int_equal(nb.again, 1);
  assert_int_equal(nb.subs, 3);
  /* The connection ends: each held subscription released once, then
   * none is held. */
  jrpcd_interest_let_go(&in, release, &nb);
  assert_int_equal(nb.released, 3);
  jrpcd_interest_let_go(&in, release, &nb);
  assert_int_equal(nb.released, 3);
  jrpcd_interest_let_go(&old, release, &ob);
  assert_int_equal(ob.released, 2);
  jrpcd_interest_free(&in);
  jrpcd_interest_free(&old);
}

/* A carried topic counted before the forget stays carried: the worker
 * that counted it is told of the gap when it is subscribed. */
static void test_forget_keeps_counted(void **state) {
  (void)state;
  broker_t ob = {0}, nb = {0};
  jrpcd_interest_t old, in;
  switch_over(&old, &ob, &in);
  assert_int_equal(jrpcd_interest_change(&in, "m\0t2", 4, 1), 1);
  jrpcd_interest_forget_carried(&in);
  assert_int_equal(jrpcd_interest_take(&in, apply, &nb), 1);
  assert_int_equal(nb.again, 1);
  jrpcd_interest_let_go(&in, release, &nb);
  jrpcd_interest_let_go(&old, release, &ob);
  jrpcd_interest_free(&in);
  jrpcd_interest_free(&old);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_carry_tells_held_topics_once),
      cmocka_unit_test(test_forget_keeps_counted),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
