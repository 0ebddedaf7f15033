/* e2e_workers.c - handlers on several workers at once, against the real
 * daemon (issue 14, point 9):
 *  - kv hammered from connections spread over three workers: every reply
 *    what a table shared under a lock must answer, the per-worker
 *    counters (jrpc_worker_data) of each worker equal to what its
 *    connections sent, their sum to everything sent, the table's size to
 *    the keys left. A ThreadSanitizer build (-DJRPC_TSAN=ON) runs the same
 *    and fails on any report in the daemon's log.
 *  - the life of per-worker slots through a reload with a deferred call
 *    in flight, a reload whose per-worker init fails, and the stop (the
 *    fx_worker fixture writes each init and fini to a file): one init and
 *    one fini per slot, inits on the loading thread, finis on the
 *    worker's own thread, the old instance's slot kept for its deferred
 *    call, the module's fini after its slots'. */
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

/* ---- kv under load ---- */

#define NCONN 8     /* at least; more if they all land on one worker */
#define MAXCONN 32  /* connections tried before giving up on spreading */
#define OPS 2400    /* requests per connection */
#define OWN_KEYS 16 /* keys only one connection touches */
#define SHARED_KEYS 8

enum { C_SET, C_GET, C_HIT, C_DEL, C_N };
static const char *const cnames[C_N] = {"set", "get", "get_hits", "del"};

typedef struct client {
  e2e_conn_t *c;
  long worker;
  size_t next;       /* reply expected next (its id) */
  int own[OWN_KEYS]; /* value of each own key, -1 when absent */
  uint64_t n[C_N];   /* what the daemon should have counted */
} client_t;

typedef struct hammer {
  client_t cl[MAXCONN];
  size_t n;
  size_t done;
} hammer_t;

static char *kv_stats(e2e_conn_t *c) {
  return e2e_call_copy(c, REQ("kv.stats", "[]", "0"));
}

/* Request j of client i: set, get and del of its own keys (whose replies
 * are known exactly), set and get of keys every client writes. */
static void queue_op(e2e_conn_t *c, size_t i, size_t j) {
  unsigned own = (unsigned)(j % OWN_KEYS), shared = (unsigned)(j % SHARED_KEYS);
  switch (j % 5) {
  case 0:
    e2e_queuef(c, REQ("kv.set", "[\"c%zu-%u\",%zu]", "%zu"), i, own, j, j);
    break;
  case 1:
    e2e_queuef(c, REQ("kv.get", "{\"key\":\"c%zu-%u\"}", "%zu"), i,
               (unsigned)((j * 3) % OWN_KEYS), j);
    break;
  case 2:
    e2e_queuef(c,
               REQ("kv.set", "{\"key\":\"s-%u\",\"value\":\"%zu-%zu\"}", "%zu"),
               shared, i, j, j);
    break;
  case 3:
    e2e_queuef(c, REQ("kv.get", "[\"s-%u\"]", "%zu"), shared, j);
    break;
  default:
    e2e_queuef(c, REQ("kv.del", "[\"c%zu-%u\"]", "%zu"), i,
               (unsigned)((j * 7) % OWN_KEYS), j);
  }
}

static void expect(const char *p, size_t n, const char *want) {
  if (!e2e_same(p, n, want))
    fail();
}

/* Checks reply j of client i against what the table must hold. */
static void on_reply(void *arg, size_t i, const char *p, size_t n) {
  hammer_t *h = arg;
  client_t *cl = &h->cl[i];
  size_t j = cl->next++;
  char want[256];
  switch (j % 5) {
  case 0: {
    int *v = &cl->own[j % OWN_KEYS];
    snprintf(want, sizeof(want), RES("{\"created\":%s}", "%zu"),
             *v < 0 ? "true" : "false", j);
    expect(p, n, want);
    *v = (int)j;
    cl->n[C_SET]++;
    break;
  }
  case 1: {
    unsigned k = (unsigned)((j * 3) % OWN_KEYS);
    if (cl->own[k] < 0)
      snprintf(want, sizeof(want),
               ERRD("1002", "No such key", "{\"key\":\"c%zu-%u\"}", "%zu"), i,
               k, j);
    else
      snprintf(want, sizeof(want), RES("%d", "%zu"), cl->own[k], j);
    expect(p, n, want);
    cl->n[C_GET]++;
    cl->n[C_HIT] += cl->own[k] >= 0;
    break;
  }
  case 2: {
    /* Another client may have made it first. */
    char a[96], b[96];
    snprintf(a, sizeof(a), RES("{\"created\":true}", "%zu"), j);
    snprintf(b, sizeof(b), RES("{\"created\":false}", "%zu"), j);
    if (!e2e_is(p, n, a) && !e2e_is(p, n, b))
      fail_msg("kv.set of a shared key: %.*s", (int)n, p);
    cl->n[C_SET]++;
    break;
  }
  case 3: {
    /* Some client's value ("I-J"), whole, or not set by anyone yet. */
    char head[64], miss[128];
    unsigned k = (unsigned)(j % SHARED_KEYS);
    snprintf(miss, sizeof(miss),
             ERRD("1002", "No such key", "{\"key\":\"s-%u\"}", "%zu"), k, j);
    size_t ci, cj;
    int used = 0;
    int hit = sscanf(p, "{\"jsonrpc\":\"2.0\",\"result\":\"%zu-%zu\",%n", &ci,
                     &cj, &used) == 2 &&
              used > 0;
    snprintf(head, sizeof(head), "\"id\":%zu}", j);
    if (hit ? !(ci < h->n && cj % 5 == 2 && cj % SHARED_KEYS == k &&
                e2e_is(p + used, n - (size_t)used, head))
            : !e2e_is(p, n, miss))
      fail_msg("kv.get of a shared key: %.*s", (int)n, p);
    cl->n[C_GET]++;
    cl->n[C_HIT] += hit;
    break;
  }
  default: {
    int *v = &cl->own[(j * 7) % OWN_KEYS];
    snprintf(want, sizeof(want), RES("{\"deleted\":%s}", "%zu"),
             *v >= 0 ? "true" : "false", j);
    expect(p, n, want);
    *v = -1;
    cl->n[C_DEL]++;
  }
  }
  if (cl->next == OPS)
    h->done++;
}

static int all_done(void *arg) {
  hammer_t *h = arg;
  return h->done == h->n;
}

static void test_kv_hammer(void **state) {
  e2e_daemon_t *d = *state;
  e2e_opts_t o = {.workers = 3,
                  .plugins = "[plugin kv]\npath = kv.so\nmax_keys = 1000\n"};
  e2e_start(d, &o);
  hammer_t *h = e2e_calloc(1, sizeof(*h));
  /* Connections until there are NCONN, on two workers at least. */
  long first = -1;
  int spread = 0;
  while (h->n < MAXCONN && (h->n < NCONN || !spread)) {
    client_t *cl = &h->cl[h->n];
    cl->c = e2e_connect(d, h->n % 2 ? E2E_TCP_NL : E2E_UNIX_NL);
    cl->worker = e2e_num_after(kv_stats(cl->c), "\"result\"", "worker");
    if (first < 0)
      first = cl->worker;
    spread |= cl->worker != first;
    for (int k = 0; k < OWN_KEYS; k++)
      cl->own[k] = -1;
    h->n++;
  }
  assert_true(spread);
  e2e_conn_t *cs[MAXCONN];
  for (size_t i = 0; i < h->n; i++) {
    for (size_t j = 0; j < OPS; j++)
      queue_op(h->cl[i].c, i, j);
    cs[i] = h->cl[i].c;
  }
  e2e_pump_ops_t ops = {on_reply, NULL, all_done};
  e2e_pump(cs, h->n, &ops, h, E2E_REPLY_MS);

  /* Quiet now: each worker's counts are those of its connections. */
  uint64_t total[C_N] = {0};
  long own_keys = 0;
  for (size_t i = 0; i < h->n; i++) {
    for (int k = 0; k < C_N; k++)
      total[k] += h->cl[i].n[k];
    for (int k = 0; k < OWN_KEYS; k++)
      own_keys += h->cl[i].own[k] >= 0;
  }
  for (size_t i = 0; i < h->n; i++) {
    const char *st = kv_stats(h->cl[i].c);
    assert_int_equal(e2e_num_after(st, "\"result\"", "worker"),
                     h->cl[i].worker);
    for (int k = 0; k < C_N; k++) {
      uint64_t mine = 0;
      for (size_t x = 0; x < h->n; x++)
        if (h->cl[x].worker == h->cl[i].worker)
          mine += h->cl[x].n[k];
      if ((uint64_t)e2e_num_after(st, "\"this_worker\"", cnames[k]) != mine ||
          (uint64_t)e2e_num_after(st, "\"all_workers\"", cnames[k]) != total[k])
        fail_msg("%s: worker %ld should have %llu of %llu: %s", cnames[k],
                 h->cl[i].worker, (unsigned long long)mine,
                 (unsigned long long)total[k], st);
    }
    assert_int_equal(e2e_num_after(st, "\"result\"", "keys"),
                     own_keys + SHARED_KEYS);
  }
  /* The worker kv's slots say each connection is on is the one the
   * daemon counted its requests on: two kv.stats and OPS each, and this
   * rpc.stats on the first. */
  e2e_send(h->cl[0].c, REQ("rpc.stats", "[]", "0"));
  const char *p;
  size_t n;
  assert_int_equal(e2e_recv(h->cl[0].c, &p, &n, E2E_REPLY_MS), 1);
  for (long w = 0; w < 3; w++) {
    long sent = 0;
    for (size_t i = 0; i < h->n; i++)
      sent += h->cl[i].worker == w ? OPS + 2 + (i == 0) : 0;
    char scope[32];
    snprintf(scope, sizeof(scope), "{\"worker\":%ld,", w);
    assert_int_equal(e2e_num_after(p, scope, "calls"), sent);
  }
  e2e_stop(d);
}

/* ---- slot life ---- */

typedef struct ev {
  char kind[8];
  long inst, a, b, c;
} ev_t;

/* The fixture's log, one event per line: those of process pid. */
static size_t read_events(const char *path, long pid, ev_t *ev, size_t cap) {
  FILE *f = fopen(path, "r");
  assert_non_null(f);
  size_t n = 0;
  char buf[160];
  while (n < cap && fgets(buf, sizeof(buf), f)) {
    ev_t *e = &ev[n];
    long from = 0;
    e->a = e->b = e->c = -1;
    if (sscanf(buf, "%7s %ld %ld %ld %ld %ld", e->kind, &from, &e->inst, &e->a,
               &e->b, &e->c) >= 4 &&
        from == pid)
      n++;
  }
  fclose(f);
  return n;
}

static size_t count_ev(const ev_t *ev, size_t n, const char *kind, long inst,
                       long worker) {
  size_t k = 0;
  for (size_t i = 0; i < n; i++)
    k += strcmp(ev[i].kind, kind) == 0 && ev[i].inst == inst &&
         (worker < 0 || ev[i].a == worker);
  return k;
}

/* The reply of the deferred call (id 7) when it came in while where()
 * waited for its own. */
static char later_reply[128];

static long where(e2e_conn_t *c, long *worker) {
  e2e_send(c, REQ("fx_worker.where", "[]", "1"));
  const char *p;
  size_t n;
  for (;;) {
    assert_int_equal(e2e_recv(c, &p, &n, E2E_REPLY_MS), 1);
    if (!strstr(p, "\"id\":7}"))
      break;
    assert_true(n < sizeof(later_reply) && !later_reply[0]);
    memcpy(later_reply, p, n + 1);
  }
  long inst;
  if (sscanf(p, "{\"jsonrpc\":\"2.0\",\"result\":[%ld,%ld]", &inst, worker) !=
      2)
    fail_msg("fx_worker.where: %s", p);
  return inst;
}

static void plugins_conf(char *buf, size_t n, const char *log,
                         const char *extra) {
  snprintf(buf, n, "[plugin fx_worker]\npath = %s/fx_worker.so\nlog = %s\n%s",
           JRPC_FIXTURE_DIR, log, extra);
}

static void test_slot_life(void **state) {
  e2e_daemon_t *d = *state;
  char log[160], plugins[512];
  /* Outside the daemon's folder, which is made as it starts. */
  snprintf(log, sizeof(log), "/tmp/e2e_workers.%ld.log", (long)getpid());
  unlink(log);
  plugins_conf(plugins, sizeof(plugins), log, "");
  e2e_opts_t o = {.workers = 2, .plugins = plugins};
  e2e_start(d, &o);
  e2e_conn_t *c = e2e_connect(d, E2E_UNIX_NL);
  long w, w2;
  assert_int_equal(where(c, &w), 1);
  /* A deferred call of instance 1 in flight across the reload. */
  e2e_send(c, REQ("fx_worker.later", "[700]", "7"));
  e2e_rewrite(d, &o, NULL);
  e2e_signal(d, SIGHUP);
  e2e_wait_log(d, "reloaded", 1, E2E_REPLY_MS);
  /* The worker takes the new instance at its next wake-up. */
  uint64_t until = e2e_now_ms() + E2E_REPLY_MS;
  while (where(c, &w2) != 2 && e2e_now_ms() < until)
    e2e_sleep_ms(5);
  assert_int_equal(where(c, &w2), 2);
  assert_int_equal(w2, w);
  const char *p = later_reply;
  size_t n = strlen(later_reply);
  if (!n)
    assert_int_equal(e2e_recv(c, &p, &n, E2E_REPLY_MS), 1);
  char want[64];
  snprintf(want, sizeof(want), RES("[1,%ld]", "7"), w);
  if (!e2e_same(p, n, want)) /* the slot of the instance that deferred it */
    fail();
  /* A reload whose init fails on worker 1: refused, instance 2 serves. */
  plugins_conf(plugins, sizeof(plugins), log, "fail_worker = 1\n");
  e2e_rewrite(d, &o, NULL);
  e2e_signal(d, SIGHUP);
  e2e_wait_log(d, "reload failed", 1, E2E_REPLY_MS);
  assert_int_equal(e2e_log_count(d, "fx_worker.so: worker 1: per-worker init "
                                    "failed: no connection for 1"),
                   1);
  assert_int_equal(where(c, &w2), 2);
  e2e_close(c);
  long pid = (long)d->pid; /* the main thread's id */
  e2e_stop(d);

  ev_t ev[64];
  size_t ne = read_events(log, pid, ev, 64);
  unlink(log);
  for (long in = 1; in <= 3; in++)
    assert_int_equal(count_ev(ev, ne, "modfini", in, -1), 1);
  for (long k = 0; k < 2; k++) {
    for (long in = 1; in <= 2; in++) {
      assert_int_equal(count_ev(ev, ne, "init", in, k), 1);
      assert_int_equal(count_ev(ev, ne, "fini", in, k), 1);
    }
    assert_int_equal(count_ev(ev, ne, "init", 3, k), k == 0);
    assert_int_equal(count_ev(ev, ne, "fini", 3, k), k == 0);
  }
  /* Every init on the main thread (the daemon's pid); every fini of a
   * slot that served calls on the thread that served them; each
   * module's fini after its slots'. */
  for (size_t i = 0; i < ne; i++) {
    if (strcmp(ev[i].kind, "init") == 0)
      assert_int_equal(ev[i].b, pid);
    if (strcmp(ev[i].kind, "fini") == 0 && ev[i].c > 0)
      assert_int_equal(ev[i].b, ev[i].c);
    if (strcmp(ev[i].kind, "fini") == 0)
      for (size_t k = 0; k < i; k++)
        assert_false(strcmp(ev[k].kind, "modfini") == 0 &&
                     ev[k].inst == ev[i].inst);
  }
  /* Both instances' slots of worker w served calls, so those finis ran
   * on worker w's thread, not the main one. */
  for (size_t i = 0; i < ne; i++)
    if (strcmp(ev[i].kind, "fini") == 0 && ev[i].a == w && ev[i].inst < 3)
      assert_true(ev[i].c > 0 && ev[i].b != pid);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test_setup_teardown(test_kv_hammer, e2e_setup, e2e_teardown),
      cmocka_unit_test_setup_teardown(test_slot_life, e2e_setup, e2e_teardown),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
