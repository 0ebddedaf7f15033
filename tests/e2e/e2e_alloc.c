/* e2e_alloc.c - no heap allocation per request over real sockets: the
 * daemon runs with a counting allocator preloaded (malloc_count.so), one
 * connection keeps 64 requests in flight through a mix of shapes (calls
 * with positional and named params, echo, errors, a batch, notifications),
 * and the daemon's allocation count after 1,000,000 requests must equal
 * its count after the first 10,000. Every reply is checked byte for byte.
 *
 * Run on each parser backend (jsmn, native, simdjson, auto). E2E_ALLOC_REQUESTS
 * overrides the 1,000,000. Skipped in sanitizer builds, whose runtime owns
 * malloc.
 *
 * It found one: simdjson sized its document to each new longest frame, so
 * ids gaining digits reallocated it again and again (lib/parser_simdjson's
 * sj_grow now doubles). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "e2e.h"

#ifndef MALLOC_COUNT_SO
#error "MALLOC_COUNT_SO must name the counting allocator"
#endif

#define WINDOW 64
#define WARM 10000u

typedef struct load {
  unsigned long sent, answered, target;
  char want[WINDOW][160]; /* expected reply of frame k, at k % WINDOW */
} load_t;

/* Frame `k` (one reply each) into c, its expected reply into want. */
static void make(e2e_conn_t *c, unsigned long k, char *want, size_t cap) {
  unsigned long a = k % 1000;
  switch (k % 6) {
  case 0:
    e2e_queuef(c, REQ("math.add", "[%lu,1]", "%lu"), a, k);
    snprintf(want, cap, RES("%lu", "%lu"), a + 1, k);
    break;
  case 1:
    e2e_queuef(c, REQ("math.multiply", "{\"a\":%lu,\"b\":3}", "%lu"), a, k);
    snprintf(want, cap, RES("%lu", "%lu"), a * 3, k);
    break;
  case 2:
    e2e_queuef(c, REQ("echo", "[\"s%lu\",{\"n\":[%lu,null]}]", "\"k%lu\""), a,
               a, k);
    snprintf(want, cap, RES("[\"s%lu\",{\"n\":[%lu,null]}]", "\"k%lu\""), a, a,
             k);
    break;
  case 3:
    e2e_queuef(c,
               "[" REQ("math.add", "[%lu,2]", "%lu") "," NOTE(
                   "math.add", "[1,1]") "," REQ("math.subtract", "[%lu,1]",
                                                "\"b%lu\"") "]",
               a, k, a + 1, k);
    snprintf(want, cap, "[" RES("%lu", "%lu") "," RES("%lu", "\"b%lu\"") "]",
             a + 2, k, a, k);
    break;
  case 4: /* a notification, then a call that fails */
    e2e_queuef(c, NOTE("math.add", "[%lu,1]"), a);
    e2e_queuef(c, REQ("math.divide", "[%lu,0]", "%lu"), a, k);
    snprintf(want, cap,
             ERRD("-32602", "Invalid params",
                  "{\"param\":\"b\",\"reason\":\"division by zero\"}", "%lu"),
             k);
    break;
  default:
    e2e_queuef(c, REQ("no.such.method", "[]", "%lu"), k);
    snprintf(want, cap, ERR("-32601", "Method not found", "%lu"), k);
    break;
  }
}

static void on_frame(void *arg, size_t i, const char *p, size_t n) {
  (void)i;
  load_t *l = arg;
  const char *want = l->want[l->answered % WINDOW];
  if (!e2e_is(p, n, want))
    fail_msg("reply %lu: got %.*s, expected %s", l->answered, (int)n, p, want);
  l->answered++;
}

static void refill(void *arg, size_t i, e2e_conn_t *c) {
  (void)i;
  load_t *l = arg;
  while (l->sent < l->target && l->sent - l->answered < WINDOW) {
    make(c, l->sent, l->want[l->sent % WINDOW], sizeof(l->want[0]));
    l->sent++;
  }
}

static int all_done(void *arg) {
  const load_t *l = arg;
  return l->answered == l->target;
}

/* The daemon's allocation and free counts, from malloc_count.so. */
static void counts(e2e_daemon_t *d, const char *file, unsigned long *allocs,
                   unsigned long *frees) {
  unlink(file);
  e2e_signal(d, SIGUSR2);
  for (int i = 0; i < 500; i++) {
    FILE *f = fopen(file, "r");
    if (f) {
      int got = fscanf(f, "allocs %lu frees %lu", allocs, frees);
      fclose(f);
      assert_int_equal(got, 2);
      return;
    }
    e2e_sleep_ms(10);
  }
  fail_msg("malloc_count.so wrote nothing to %s (was it preloaded?)", file);
}

static void run(void **state, const char *parser) {
#ifdef JRPC_SANITIZE
  (void)state;
  (void)parser;
  (void)on_frame;
  (void)refill;
  (void)all_done;
  (void)counts;
  skip();
#else
  e2e_daemon_t *d = *state;
  const char *env = getenv("E2E_ALLOC_REQUESTS");
  unsigned long total = env ? strtoul(env, NULL, 10) : 1000000ul;
  if (total < WARM)
    total = WARM;
  char file[] = "/tmp/jrpcd-malloc-XXXXXX";
  int fd = mkstemp(file);
  assert_true(fd >= 0);
  close(fd);
  setenv("MALLOC_COUNT_OUT", file, 1);
  setenv("LD_PRELOAD", MALLOC_COUNT_SO, 1);
  char server[64];
  snprintf(server, sizeof(server), "parser = %s\n", parser);
  e2e_opts_t o = {.workers = 1, .server = server};
  e2e_start(d, &o);
  unsetenv("LD_PRELOAD");
  unsetenv("MALLOC_COUNT_OUT");

  e2e_conn_t *c = e2e_connect(d, E2E_UNIX_NL);
  static load_t l;
  memset(&l, 0, sizeof(l));
  const e2e_pump_ops_t ops = {on_frame, refill, all_done};
  l.target = WARM;
  e2e_pump(&c, 1, &ops, &l, E2E_REPLY_MS);
  unsigned long a1, f1, a2, f2;
  counts(d, file, &a1, &f1);
  l.target = total;
  e2e_pump(&c, 1, &ops, &l, E2E_REPLY_MS);
  counts(d, file, &a2, &f2);
  print_message(
      "parser = %s: daemon heap: after %u requests %lu allocations, %lu frees; "
      "after %lu: %lu allocations, %lu frees\n",
      parser, WARM, a1, f1, total, a2, f2);
  assert_true(a1 > 0); /* the counter was really in place */
  assert_int_equal(a2, a1);
  assert_int_equal(f2, f1);
  e2e_close(c);
  e2e_stop(d);
  unlink(file);
#endif
}

static void test_jsmn(void **state) {
  run(state, "jsmn");
}

static void test_native(void **state) {
  run(state, "native");
}

static void test_simdjson(void **state) {
#ifdef E2E_NO_SIMDJSON
  (void)state;
  skip(); /* built without simdjson */
#else
  run(state, "simdjson");
#endif
}

/* The default: both backends, chosen per frame by size. */
static void test_auto(void **state) {
  run(state, "auto");
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test_setup_teardown(test_jsmn, e2e_setup, e2e_teardown),
      cmocka_unit_test_setup_teardown(test_native, e2e_setup, e2e_teardown),
      cmocka_unit_test_setup_teardown(test_simdjson, e2e_setup, e2e_teardown),
      cmocka_unit_test_setup_teardown(test_auto, e2e_setup, e2e_teardown),
  };
  return cmocka_run_group_tests_name("e2e_alloc", tests, NULL, NULL);
}
