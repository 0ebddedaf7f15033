/* test_registry.c - lib/registry.h: add/find, duplicates, reserved names,
 * name slices, growth, removal by owner. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>

#include "registry.h"
#include "testutil.h"

static int owner_a, owner_b, owner_c;

static const jrpc__method_t *find(const jrpc__registry_t *r, const char *s) {
  return jrpc__registry_find(r, s, strlen(s));
}

static void test_add_find(void **state) {
  (void)state;
  jrpc__registry_t r;
  assert_int_equal(jrpc__registry_init(&r), 0);
  int ud = 0;
  char name[32];
  strcpy(name, "math.add");
  assert_int_equal(
      jrpc__registry_add(&r, name, tu_handler_a, &ud, &owner_a, NULL), 0);
  /* The registry keeps its own copy of the name. */
  memset(name, 'Z', 8);
  const jrpc__method_t *m = find(&r, "math.add");
  assert_non_null(m);
  assert_true(m->fn == tu_handler_a);
  assert_ptr_equal(m->udata, &ud);
  assert_ptr_equal(m->owner, &owner_a);
  assert_string_equal(m->name, "math.add");
  assert_int_equal(m->len, 8);
  assert_null(find(&r, "ZZZZZZZZ"));
  assert_null(find(&r, "math.sub"));
  assert_int_equal(r.count, 1);
  jrpc__registry_free(&r);
}

static void test_find_empty(void **state) {
  (void)state;
  jrpc__registry_t r;
  assert_int_equal(jrpc__registry_init(&r), 0);
  assert_null(find(&r, "x"));
  assert_null(jrpc__registry_find(&r, "", 0));
  jrpc__registry_free(&r);
}

static void test_duplicate(void **state) {
  (void)state;
  jrpc__registry_t r;
  assert_int_equal(jrpc__registry_init(&r), 0);
  int ud1 = 1, ud2 = 2;
  assert_int_equal(
      jrpc__registry_add(&r, "echo", tu_handler_a, &ud1, &owner_a, NULL), 0);
  const jrpc__method_t *ex = NULL;
  assert_int_equal(
      jrpc__registry_add(&r, "echo", tu_handler_b, &ud2, &owner_b, &ex),
      JRPC_EEXIST);
  assert_non_null(ex);
  assert_true(ex->fn == tu_handler_a);
  assert_ptr_equal(ex->udata, &ud1);
  assert_ptr_equal(ex->owner, &owner_a);
  assert_string_equal(ex->name, "echo");
  /* Without an out pointer as well. */
  assert_int_equal(
      jrpc__registry_add(&r, "echo", tu_handler_b, &ud2, &owner_a, NULL),
      JRPC_EEXIST);
  /* The first registration is unchanged. */
  const jrpc__method_t *m = find(&r, "echo");
  assert_non_null(m);
  assert_true(m->fn == tu_handler_a);
  assert_ptr_equal(m->udata, &ud1);
  assert_int_equal(r.count, 1);
  jrpc__registry_free(&r);
}

static void test_reserved_and_empty(void **state) {
  (void)state;
  jrpc__registry_t r;
  assert_int_equal(jrpc__registry_init(&r), 0);
  assert_int_equal(
      jrpc__registry_add(&r, "", tu_handler_a, NULL, &owner_a, NULL),
      JRPC_EINVAL);
  assert_int_equal(
      jrpc__registry_add(&r, "rpc.x", tu_handler_a, NULL, &owner_a, NULL),
      JRPC_EINVAL);
  assert_int_equal(
      jrpc__registry_add(&r, "rpc.", tu_handler_a, NULL, &owner_a, NULL),
      JRPC_EINVAL);
  assert_int_equal(jrpc__registry_add(&r, "rpc.discover", tu_handler_a, NULL,
                                      &owner_a, NULL),
                   JRPC_EINVAL);
  assert_int_equal(r.count, 0);
  assert_null(find(&r, "rpc.x"));
  /* Names that merely look similar are allowed. */
  assert_int_equal(
      jrpc__registry_add(&r, "rpcx", tu_handler_a, NULL, &owner_a, NULL), 0);
  assert_int_equal(
      jrpc__registry_add(&r, "rpc", tu_handler_b, NULL, &owner_a, NULL), 0);
  assert_int_equal(
      jrpc__registry_add(&r, "x.rpc.y", tu_handler_a, NULL, &owner_a, NULL), 0);
  assert_int_equal(
      jrpc__registry_add(&r, "rpc_x", tu_handler_a, NULL, &owner_a, NULL), 0);
  assert_true(find(&r, "rpcx")->fn == tu_handler_a);
  assert_true(find(&r, "rpc")->fn == tu_handler_b);
  assert_int_equal(r.count, 4);
  jrpc__registry_free(&r);
}

static void test_find_slice(void **state) {
  (void)state;
  jrpc__registry_t r;
  assert_int_equal(jrpc__registry_init(&r), 0);
  assert_int_equal(
      jrpc__registry_add(&r, "math.add", tu_handler_a, NULL, NULL, NULL), 0);
  assert_int_equal(
      jrpc__registry_add(&r, "math", tu_handler_b, NULL, NULL, NULL), 0);
  /* The name inside a larger, not NUL-terminated buffer. */
  const char buf[] = {'m', 'a', 't', 'h', '.', 'a', 'd', 'd', 'X', 'Y'};
  const jrpc__method_t *m = jrpc__registry_find(&r, buf, 8);
  assert_non_null(m);
  assert_true(m->fn == tu_handler_a);
  m = jrpc__registry_find(&r, buf, 4);
  assert_non_null(m);
  assert_true(m->fn == tu_handler_b);
  /* Prefixes and extensions are other names. */
  assert_null(jrpc__registry_find(&r, buf, 7));
  assert_null(jrpc__registry_find(&r, buf, 9));
  assert_null(jrpc__registry_find(&r, buf, 5));
  assert_null(jrpc__registry_find(&r, buf, 1));
  assert_null(jrpc__registry_find(&r, buf, 0));
  assert_null(find(&r, "math.addd"));
  assert_null(find(&r, "math.ad"));
  assert_null(find(&r, "Math.add"));
  /* An embedded NUL makes another name. */
  assert_null(jrpc__registry_find(&r, "math\0add", 8));
  jrpc__registry_free(&r);
}

/* Names of every length from 1 to 40 (each hash branch: bytes, 4-byte and
 * 8-byte words, the walk over the middle), found by name and by their
 * hash; a name that differs in one byte at any position is not found. */
static void test_every_length(void **state) {
  (void)state;
  jrpc__registry_t r;
  assert_int_equal(jrpc__registry_init(&r), 0);
  char names[41][48];
  for (int n = 1; n <= 40; n++) {
    for (int i = 0; i < n; i++)
      names[n][i] = (char)('a' + (i * 7 + n) % 26);
    names[n][n] = 0;
    assert_int_equal(jrpc__registry_add(&r, names[n], tu_handler_a,
                                        (void *)(intptr_t)n, NULL, NULL),
                     0);
  }
  for (int n = 1; n <= 40; n++) {
    const jrpc__method_t *m = find(&r, names[n]);
    assert_non_null(m);
    assert_int_equal((intptr_t)m->udata, n);
    /* The per-method counters' row, right after every growth. */
    assert_int_equal(m->slot, (uint32_t)(m - r.slots));
    assert_ptr_equal(
        jrpc__registry_find_hashed(&r, names[n], (size_t)n,
                                   jrpc__name_hash(names[n], (size_t)n)),
        m);
    for (int i = 0; i < n; i++) {
      char other[48];
      memcpy(other, names[n], (size_t)n + 1);
      other[i] = 'Z';
      assert_null(find(&r, other));
      /* The comparison alone: the hash usually tells these apart first. */
      assert_false(jrpc__same_name(names[n], other, (size_t)n));
    }
    char copy[48];
    memcpy(copy, names[n], (size_t)n + 1);
    assert_true(jrpc__same_name(names[n], copy, (size_t)n));
  }
  jrpc__registry_free(&r);
}

static void test_growth(void **state) {
  (void)state;
  jrpc__registry_t r;
  assert_int_equal(jrpc__registry_init(&r), 0);
  char name[32];
  for (uintptr_t i = 0; i < 10000; i++) {
    snprintf(name, sizeof name, "m.%lu", (unsigned long)i);
    assert_int_equal(jrpc__registry_add(&r, name,
                                        (i % 2) ? tu_handler_a : tu_handler_b,
                                        (void *)(i + 1), &owner_a, NULL),
                     0);
  }
  assert_int_equal(r.count, 10000);
  /* The table keeps free slots. */
  assert_true((uint64_t)r.mask + 1 > r.count);
  for (uintptr_t i = 0; i < 10000; i++) {
    snprintf(name, sizeof name, "m.%lu", (unsigned long)i);
    const jrpc__method_t *m = find(&r, name);
    assert_non_null(m);
    assert_ptr_equal(m->udata, (void *)(i + 1));
    assert_true(m->fn == ((i % 2) ? tu_handler_a : tu_handler_b));
    assert_string_equal(m->name, name);
  }
  for (uintptr_t i = 10000; i < 10100; i++) {
    snprintf(name, sizeof name, "m.%lu", (unsigned long)i);
    assert_null(find(&r, name));
  }
  /* Duplicates are still detected after growth. */
  assert_int_equal(
      jrpc__registry_add(&r, "m.1234", tu_handler_a, NULL, &owner_b, NULL),
      JRPC_EEXIST);
  jrpc__registry_free(&r);
}

static void test_remove_owner(void **state) {
  (void)state;
  jrpc__registry_t r;
  assert_int_equal(jrpc__registry_init(&r), 0);
  char name[32];
  const void *owners[3] = {&owner_a, &owner_b, &owner_c};
  for (uintptr_t i = 0; i < 3000; i++) {
    snprintf(name, sizeof name, "svc%lu.call", (unsigned long)i);
    assert_int_equal(jrpc__registry_add(&r, name, tu_handler_a, (void *)(i + 1),
                                        owners[i % 3], NULL),
                     0);
  }
  assert_int_equal(r.count, 3000);
  jrpc__registry_remove_owner(&r, &owner_b);
  assert_int_equal(r.count, 2000);
  for (uintptr_t i = 0; i < 3000; i++) {
    snprintf(name, sizeof name, "svc%lu.call", (unsigned long)i);
    const jrpc__method_t *m = find(&r, name);
    if (i % 3 == 1) {
      assert_null(m);
    } else {
      assert_non_null(m);
      assert_ptr_equal(m->udata, (void *)(i + 1));
      assert_ptr_equal(m->owner, owners[i % 3]);
      assert_int_equal(m->slot, (uint32_t)(m - r.slots)); /* rebuilt */
    }
  }
  /* Removing an owner with nothing registered changes nothing. */
  jrpc__registry_remove_owner(&r, &owner_b);
  jrpc__registry_remove_owner(&r, &r);
  assert_int_equal(r.count, 2000);

  /* The removed names can be registered again, by anyone. */
  for (uintptr_t i = 1; i < 3000; i += 3) {
    snprintf(name, sizeof name, "svc%lu.call", (unsigned long)i);
    assert_int_equal(jrpc__registry_add(&r, name, tu_handler_b, (void *)(i + 7),
                                        &owner_c, NULL),
                     0);
  }
  assert_int_equal(r.count, 3000);
  for (uintptr_t i = 0; i < 3000; i++) {
    snprintf(name, sizeof name, "svc%lu.call", (unsigned long)i);
    const jrpc__method_t *m = find(&r, name);
    assert_non_null(m);
    if (i % 3 == 1) {
      assert_true(m->fn == tu_handler_b);
      assert_ptr_equal(m->udata, (void *)(i + 7));
    } else {
      assert_true(m->fn == tu_handler_a);
    }
  }
  /* Removing everything leaves an empty, still usable registry. */
  jrpc__registry_remove_owner(&r, &owner_a);
  jrpc__registry_remove_owner(&r, &owner_c);
  assert_int_equal(r.count, 0);
  assert_null(find(&r, "svc0.call"));
  assert_int_equal(
      jrpc__registry_add(&r, "svc0.call", tu_handler_a, NULL, NULL, NULL), 0);
  assert_non_null(find(&r, "svc0.call"));
  jrpc__registry_free(&r);
}

/* Removing an owner in the middle of collision chains keeps the other
 * entries of those chains reachable (no lost entries behind a hole). */
static void test_remove_dense(void **state) {
  (void)state;
  jrpc__registry_t r;
  assert_int_equal(jrpc__registry_init(&r), 0);
  char name[32];
  for (int round = 0; round < 20; round++) {
    for (uintptr_t i = 0; i < 200; i++) {
      snprintf(name, sizeof name, "r%d.%lu", round, (unsigned long)i);
      assert_int_equal(jrpc__registry_add(&r, name, tu_handler_a, NULL,
                                          (i % 2) ? &owner_a : &owner_b, NULL),
                       0);
    }
    jrpc__registry_remove_owner(&r, &owner_b);
    for (uintptr_t i = 0; i < 200; i++) {
      snprintf(name, sizeof name, "r%d.%lu", round, (unsigned long)i);
      if (i % 2)
        assert_non_null(find(&r, name));
      else
        assert_null(find(&r, name));
    }
  }
  assert_int_equal(r.count, 20 * 100);
  for (int round = 0; round < 20; round++)
    for (uintptr_t i = 1; i < 200; i += 2) {
      snprintf(name, sizeof name, "r%d.%lu", round, (unsigned long)i);
      assert_non_null(find(&r, name));
    }
  jrpc__registry_free(&r);
}

/* A view: the same lookups, slots at the same index, and what the view
 * hides or redirects changes nothing in the registry it was made from. */
static void test_view(void **state) {
  (void)state;
  jrpc__registry_t r, v;
  assert_int_equal(jrpc__registry_init(&r), 0);
  assert_int_equal(
      jrpc__registry_add(&r, "math.add", tu_handler_a, NULL, NULL, NULL), 0);
  assert_int_equal(
      jrpc__registry_add(&r, "echo", tu_handler_b, NULL, NULL, NULL), 0);
  for (int i = 0; i < 40; i++) { /* past the first table size */
    char name[16];
    snprintf(name, sizeof(name), "m.%d", i);
    assert_int_equal(
        jrpc__registry_add(&r, name, tu_handler_a, NULL, NULL, NULL), 0);
  }
  assert_int_equal(jrpc__registry_view_init(&v, &r), 0);
  const jrpc__method_t *a = jrpc__registry_find(&v, "math.add", 8);
  assert_non_null(a);
  assert_int_equal(a->slot, jrpc__registry_find(&r, "math.add", 8)->slot);
  /* What a method carries besides its handler, to see it go. */
  static char desc[] = "{\"params\":[]}";
  int owner;
  uint32_t add = a->slot;
  jrpc__method_t *full = &r.slots[add];
  full->desc = desc;
  full->owner = &owner;
  full->timeout_ms = 5;
  full->vplan = (struct jrpc__vplan *)desc; /* a pointer to see cleared */
  jrpc__registry_view_free(&v);
  assert_int_equal(jrpc__registry_view_init(&v, &r), 0);
  assert_true(jrpc__registry_view_serves(&r, &v, add));
  /* Hidden in the view: not found there, still found in the registry. */
  uint32_t echo = jrpc__registry_find(&v, "echo", 4)->slot;
  jrpc__registry_view_withhold(&v, echo, NULL, NULL);
  assert_null(jrpc__registry_find(&v, "echo", 4));
  assert_ptr_equal(jrpc__registry_find(&r, "echo", 4)->fn, tu_handler_b);
  assert_false(jrpc__registry_view_serves(&r, &v, echo));
  /* Denied in the view only: found, with nothing of the method left. */
  jrpc__registry_view_withhold(&v, add, tu_handler_b, &owner);
  const jrpc__method_t *d = jrpc__registry_find(&v, "math.add", 8);
  assert_ptr_equal(d->fn, tu_handler_b);
  assert_ptr_equal(d->udata, &owner);
  assert_null(d->vplan);
  assert_null(d->desc);
  assert_null(d->owner);
  assert_int_equal(d->timeout_ms, 0);
  assert_int_equal(d->slot, add);
  assert_false(jrpc__registry_view_serves(&r, &v, add));
  assert_ptr_equal(jrpc__registry_find(&r, "math.add", 8)->fn, tu_handler_a);
  assert_non_null(jrpc__registry_find(&r, "math.add", 8)->vplan);
  assert_non_null(jrpc__registry_find(&v, "m.39", 4));
  full->desc = NULL;
  full->vplan = NULL;
  jrpc__registry_view_free(&v);
  assert_null(v.slots);
  jrpc__registry_free(&r); /* the names were the registry's alone */
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_add_find),
      cmocka_unit_test(test_find_empty),
      cmocka_unit_test(test_duplicate),
      cmocka_unit_test(test_reserved_and_empty),
      cmocka_unit_test(test_find_slice),
      cmocka_unit_test(test_every_length),
      cmocka_unit_test(test_growth),
      cmocka_unit_test(test_remove_owner),
      cmocka_unit_test(test_remove_dense),
      cmocka_unit_test(test_view),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
