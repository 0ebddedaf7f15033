/* [cluster]'s topics: subjects that no topic can bend (subject.c), and the
 * interest in topics counted across workers (interest.c), under two
 * threads racing. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>
#include <pthread.h>

#include "interest.h"
#include "subject.h"

static int subject_of(const char *topic, size_t n, char *out, size_t cap) {
  return jrpcd_subject("jrpcd", "pubsub", 6, topic, n, out, cap);
}

/* Bytes a NATS subject token must not hold: separators, wildcards,
 * whitespace, control bytes. */
static int bad_byte(unsigned char c) {
  return c == '.' || c == '*' || c == '>' || c <= ' ' || c >= 0x7f;
}

static void check_subject_clean(const char *s, int n) {
  /* jrpcd . pubsub . TOKEN: exactly two dots, and they are ours. */
  int dots = 0;
  for (int i = 0; i < n; i++) {
    if (s[i] == '.') {
      dots++;
      continue;
    }
    if (bad_byte((unsigned char)s[i]))
      fail_msg("byte 0x%02x in subject \"%s\"", (unsigned char)s[i], s);
  }
  assert_int_equal(dots, 2);
  assert_true(s[n - 1] != '.');
}

static void test_subject_escapes(void **state) {
  (void)state;
  char s[JRPCD_SUBJECT_MAX + 1];
  assert_int_equal(subject_of("room-1_a", 8, s, sizeof s), 21);
  assert_string_equal(s, "jrpcd.pubsub.room-1_a");
  const char *hostile[] = {"a.b", "*",   ">",  "a b", "a\tb", "\n",
                           "~41", "a.>", "..", "~",   "é"};
  for (size_t i = 0; i < sizeof hostile / sizeof *hostile; i++) {
    int n = subject_of(hostile[i], strlen(hostile[i]), s, sizeof s);
    assert_true(n > 0);
    check_subject_clean(s, n);
  }
  int n = subject_of("a.>", 3, s, sizeof s);
  assert_string_equal(s, "jrpcd.pubsub.a~2E~3E");
  n = subject_of("", 0, s, sizeof s);
  assert_string_equal(s, "jrpcd.pubsub.~");
  check_subject_clean(s, n);
  /* A NUL inside a topic is a byte like another. */
  n = subject_of("a\0b", 3, s, sizeof s);
  assert_string_equal(s, "jrpcd.pubsub.a~00b");
}

/* Every topic of one or two bytes (all 65,536 + 256 + 1) has a subject of
 * its own that reads back to it: injective, and nothing but the two dots
 * of the form. */
static void test_subject_injective(void **state) {
  (void)state;
  static char seen[65536 + 256 + 1][8];
  size_t k = 0;
  char s[JRPCD_SUBJECT_MAX + 1], back[4], ns[16];
  for (int len = 0; len <= 2; len++) {
    int count = len == 0 ? 1 : len == 1 ? 256 : 65536;
    for (int v = 0; v < count; v++) {
      char topic[2] = {(char)(v & 0xff), (char)(v >> 8)};
      int n = subject_of(topic, (size_t)len, s, sizeof s);
      assert_true(n > 0);
      check_subject_clean(s, n);
      size_t ns_n, back_n;
      assert_int_equal(jrpcd_subject_parse(s + 6, (size_t)n - 6, ns, sizeof ns,
                                           &ns_n, back, sizeof back, &back_n),
                       0);
      assert_int_equal(ns_n, 6);
      assert_memory_equal(ns, "pubsub", 6);
      assert_int_equal(back_n, (size_t)len);
      assert_memory_equal(back, topic, (size_t)len);
      /* The escaped token is at most 6 bytes: keep it to compare. */
      assert_true(strlen(s + 13) < sizeof seen[0]);
      strcpy(seen[k++], s + 13);
    }
  }
  qsort(seen, k, sizeof seen[0], (int (*)(const void *, const void *))strcmp);
  for (size_t i = 1; i < k; i++)
    if (strcmp(seen[i - 1], seen[i]) == 0)
      fail_msg("two topics share the token %s", seen[i]);
}

static void test_subject_bounds(void **state) {
  (void)state;
  char s[JRPCD_SUBJECT_MAX + 1];
  char big[JRPCD_SUBJECT_MAX];
  memset(big, '.', sizeof big);
  /* Each '.' is three bytes escaped: too long, refused, not cut. */
  assert_int_equal(subject_of(big, 400, s, sizeof s), -1);
  assert_true(subject_of(big, 300, s, sizeof s) > 0);
  char small[16];
  assert_int_equal(subject_of("abc", 3, small, 16), -1);
  assert_int_equal(subject_of("abc", 3, small, 17 - 1), -1);
  /* Parsing refuses what the writer never writes. */
  char ns[8], t[8];
  size_t a, b;
  const char *bad[] = {"x.a~41", "x.a~4", "x.", ".a", "x.a.b", "x.a*", "x.~~"};
  for (size_t i = 0; i < sizeof bad / sizeof *bad; i++)
    if (jrpcd_subject_parse(bad[i], strlen(bad[i]), ns, sizeof ns, &a, t,
                            sizeof t, &b) == 0)
      fail_msg("\"%s\" read as a subject", bad[i]);
}

/* ---- interest ---- */

typedef struct broker {
  int subs, unsubs, held, twice;
} broker_t;

static int apply(void *arg, const char *key, size_t key_n, int subscribe,
                 void **handle) {
  (void)key;
  (void)key_n;
  (void)handle;
  broker_t *b = arg;
  if (subscribe == b->held)
    b->twice++; /* subscribed twice or unsubscribed twice */
  b->held = subscribe;
  if (subscribe)
    b->subs++;
  else
    b->unsubs++;
  return 0;
}

/* Each interest test's table and broker, made before it and freed after
 * (cmocka's set-up and tear-down). */
typedef struct interest_fx {
  jrpcd_interest_t in;
  broker_t b;
} interest_fx_t;

static int interest_setup(void **state) {
  interest_fx_t *f = calloc(1, sizeof(*f));
  if (!f || jrpcd_interest_init(&f->in) != 0) {
    free(f);
    return -1;
  }
  *state = f;
  return 0;
}

static int interest_teardown(void **state) {
  interest_fx_t *f = *state;
  jrpcd_interest_free(&f->in);
  free(f);
  return 0;
}

static void test_interest_counts(void **state) {
  interest_fx_t *f = *state;
  jrpcd_interest_t *in = &f->in;
  broker_t *b = &f->b;
  /* First worker: subscribe; second: nothing more; both gone: unsubscribe. */
  assert_int_equal(jrpcd_interest_change(in, "m\0t", 3, 1), 1);
  assert_int_equal(jrpcd_interest_change(in, "m\0t", 3, 1), 0);
  assert_int_equal(jrpcd_interest_take(in, apply, b), 1);
  assert_int_equal(b->subs, 1);
  assert_int_equal(jrpcd_interest_change(in, "m\0t", 3, -1), 0);
  assert_int_equal(jrpcd_interest_take(in, apply, b), 0);
  assert_int_equal(jrpcd_interest_change(in, "m\0t", 3, -1), 1);
  assert_int_equal(jrpcd_interest_take(in, apply, b), 1);
  assert_int_equal(b->unsubs, 1);
  assert_int_equal(b->held, 0);
  assert_int_equal(in->ntopics, 0);
  /* Up and down before the broker's thread looks: nothing to do. */
  assert_int_equal(jrpcd_interest_change(in, "m\0u", 3, 1), 1);
  assert_int_equal(jrpcd_interest_change(in, "m\0u", 3, -1), 0);
  assert_int_equal(jrpcd_interest_take(in, apply, b), 0);
  assert_int_equal(in->ntopics, 0);
  /* Many topics (the table grows), each its own count. */
  char key[32];
  for (int i = 0; i < 1000; i++) {
    int n = snprintf(key, sizeof key, "m%c%d", 0, i);
    assert_int_equal(jrpcd_interest_change(in, key, (size_t)n, 1), 1);
  }
  broker_t many = {0};
  many.held = -1; /* many topics: only count */
  assert_int_equal(jrpcd_interest_take(in, apply, &many), 1000);
  assert_int_equal(many.subs, 1000);
  for (int i = 0; i < 1000; i++) {
    int n = snprintf(key, sizeof key, "m%c%d", 0, i);
    assert_int_equal(jrpcd_interest_change(in, key, (size_t)n, -1), 1);
  }
  assert_int_equal(jrpcd_interest_take(in, apply, &many), 1000);
  assert_int_equal(in->ntopics, 0);
}

/* A broker call that fails leaves the topic for the next look. */
static int refuse(void *arg, const char *key, size_t key_n, int subscribe,
                  void **handle) {
  (void)arg;
  (void)handle;
  (void)key;
  (void)key_n;
  (void)subscribe;
  return -1;
}

static void test_interest_retry(void **state) {
  interest_fx_t *f = *state;
  jrpcd_interest_t *in = &f->in;
  broker_t *b = &f->b;
  assert_int_equal(jrpcd_interest_change(in, "m\0t", 3, 1), 1);
  assert_int_equal(jrpcd_interest_take(in, refuse, NULL), 0);
  assert_int_equal(jrpcd_interest_take(in, apply, b), 1);
  assert_int_equal(b->held, 1);
}

/* A worker subscribes again while the broker's thread is unsubscribing
 * (the lock is let go for the broker call): the topic ends held. */
static jrpcd_interest_t *racing_in;
static int apply_while_resubscribed(void *arg, const char *key, size_t key_n,
                                    int subscribe, void **handle) {
  if (!subscribe)
    assert_int_equal(jrpcd_interest_change(racing_in, key, key_n, 1), 0);
  return apply(arg, key, key_n, subscribe, handle);
}

static void test_interest_change_during_apply(void **state) {
  interest_fx_t *f = *state;
  jrpcd_interest_t *in = &f->in;
  broker_t *b = &f->b;
  racing_in = in;
  jrpcd_interest_change(in, "m\0t", 3, 1);
  assert_int_equal(jrpcd_interest_take(in, apply, b), 1);
  jrpcd_interest_change(in, "m\0t", 3, -1);
  jrpcd_interest_take(in, apply_while_resubscribed, b);
  assert_int_equal(b->held, 1);
  assert_int_equal(b->twice, 0);
  assert_int_equal(b->subs, 2);
}

typedef struct racer {
  jrpcd_interest_t *in;
  int rounds;
} racer_t;

static void *race(void *arg) {
  racer_t *r = arg;
  for (int i = 0; i < r->rounds; i++) {
    jrpcd_interest_change(r->in, "m\0t", 3, 1);
    jrpcd_interest_change(r->in, "m\0t", 3, -1);
  }
  /* Each racer ends holding one subscription: the broker must too. */
  jrpcd_interest_change(r->in, "m\0t", 3, 1);
  return NULL;
}

/* Two workers subscribing and unsubscribing while the broker's thread
 * takes: never two subscribes or unsubscribes in a row, and at the end
 * the broker holds the topic that both still count. Then both leave: it
 * is let go. */
static void test_interest_race(void **state) {
  interest_fx_t *f = *state;
  jrpcd_interest_t *in = &f->in;
  broker_t *b = &f->b;
  racer_t r = {in, 200000};
  pthread_t t1, t2;
  assert_int_equal(pthread_create(&t1, NULL, race, &r), 0);
  assert_int_equal(pthread_create(&t2, NULL, race, &r), 0);
  for (int i = 0; i < 20000; i++)
    jrpcd_interest_take(in, apply, b);
  pthread_join(t1, NULL);
  pthread_join(t2, NULL);
  jrpcd_interest_take(in, apply, b);
  assert_int_equal(b->twice, 0);
  assert_int_equal(b->held, 1);
  assert_int_equal(b->subs, b->unsubs + 1);
  jrpcd_interest_change(in, "m\0t", 3, -1);
  jrpcd_interest_change(in, "m\0t", 3, -1);
  jrpcd_interest_take(in, apply, b);
  assert_int_equal(b->held, 0);
  assert_int_equal(b->twice, 0);
  assert_int_equal(in->ntopics, 0);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_subject_escapes),
      cmocka_unit_test(test_subject_injective),
      cmocka_unit_test(test_subject_bounds),
      cmocka_unit_test_setup_teardown(test_interest_counts, interest_setup,
                                      interest_teardown),
      cmocka_unit_test_setup_teardown(test_interest_retry, interest_setup,
                                      interest_teardown),
      cmocka_unit_test_setup_teardown(test_interest_change_during_apply,
                                      interest_setup, interest_teardown),
      cmocka_unit_test_setup_teardown(test_interest_race, interest_setup,
                                      interest_teardown),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
