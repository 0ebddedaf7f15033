/* test_push.c - server push in the engine (lib/push.c, lib/pushq.c): the
 * inbox (order, a full inbox refusing, eight producers at once), and the
 * subscription table behind a newline stream: subscribe answers an id,
 * a published message reaches its topic's subscriptions only, once each
 * and in order, on one line whatever line breaks its JSON had; a module's
 * topics are its own; max_bytes drops and the
 * drained connection gets one rpc.lagged per subscription with the exact
 * count; the host's lag (a [cluster] broker lost) told at once, local
 * delivery going on; unsubscribe answers true, then false; the per-connection
 * limit answers -32011; closing the stream ends its subscriptions, and so does
 * a reload's view that no longer serves their method (its module gone, or
 * the method hidden or denied to the connection); HTTP POST answers
 * -32010. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common.h"
#include "dispatch.h"
#include "http.h"
#include "module.h"
#include "push.h"
#include "pushq.h"
#include "stream.h"
#include "testutil.h"

/* ---- the inbox ---- */

static jrpc__pubmsg_t *msg(const char *topic, const char *json) {
  jrpc__pubmsg_t *m =
      jrpc__pubmsg_new("mod", 3, topic, strlen(topic), json, strlen(json), 1);
  assert_non_null(m);
  return m;
}

static void test_inbox_order_and_full(void **state) {
  (void)state;
  jrpc__inbox_t q;
  assert_int_equal(jrpc__inbox_init(&q, 5), 0); /* rounded up to 8 */
  jrpc__pubmsg_t *m[9];
  for (int i = 0; i < 9; i++) {
    char j[8];
    snprintf(j, sizeof(j), "%d", i);
    m[i] = msg("t", j);
  }
  for (int i = 0; i < 8; i++)
    assert_int_equal(jrpc__inbox_push(&q, m[i]), 0);
  assert_int_equal(jrpc__inbox_push(&q, m[8]), JRPC_E2BIG);
  for (int i = 0; i < 4; i++)
    assert_ptr_equal(jrpc__inbox_pop(&q), m[i]);
  assert_int_equal(jrpc__inbox_push(&q, m[8]), 0); /* room again */
  for (int i = 4; i < 9; i++) {
    jrpc__pubmsg_t *got = jrpc__inbox_pop(&q);
    assert_ptr_equal(got, m[i]);
    assert_int_equal(got->json_n, 1);
    assert_memory_equal(jrpc__pubmsg_json(got), (char[]){(char)('0' + i)}, 1);
  }
  assert_null(jrpc__inbox_pop(&q));
  for (int i = 0; i < 4; i++)
    jrpc__pubmsg_unref(m[i]);
  jrpc__inbox_push(&q, m[4]); /* left for free to let go of */
  for (int i = 5; i < 9; i++)
    jrpc__pubmsg_unref(m[i]);
  jrpc__inbox_free(&q);
}

#define PRODUCERS 8
#define PER_PRODUCER 20000

typedef struct producer {
  jrpc__inbox_t *q;
  jrpc__pubmsg_t *m;
  unsigned id;
  unsigned refused;
} producer_t;

/* Each message carries (producer, sequence) in its hash field. */
static void *produce(void *arg) {
  producer_t *p = arg;
  for (unsigned k = 0; k < PER_PRODUCER; k++) {
    jrpc__pubmsg_t *m = jrpc__pubmsg_new("m", 1, "t", 1, "0", 1, 1);
    m->hash = p->id << 24 | k;
    while (jrpc__inbox_push(p->q, m) != 0)
      p->refused++; /* full: refused at once, never a wait */
  }
  return NULL;
}

static void test_inbox_eight_producers(void **state) {
  (void)state;
  jrpc__inbox_t q;
  assert_int_equal(jrpc__inbox_init(&q, 64), 0);
  producer_t p[PRODUCERS];
  pthread_t t[PRODUCERS];
  for (unsigned i = 0; i < PRODUCERS; i++) {
    p[i] = (producer_t){.q = &q, .id = i};
    assert_int_equal(pthread_create(&t[i], NULL, produce, &p[i]), 0);
  }
  unsigned next[PRODUCERS] = {0};
  unsigned got = 0;
  while (got < PRODUCERS * PER_PRODUCER) {
    jrpc__pubmsg_t *m = jrpc__inbox_pop(&q);
    if (!m)
      continue;
    unsigned who = m->hash >> 24, seq = m->hash & 0xffffff;
    assert_true(who < PRODUCERS);
    assert_int_equal(seq, next[who]); /* each producer's order kept */
    next[who]++;
    got++;
    jrpc__pubmsg_unref(m);
  }
  for (unsigned i = 0; i < PRODUCERS; i++)
    pthread_join(t[i], NULL);
  assert_null(jrpc__inbox_pop(&q));
  jrpc__inbox_free(&q);
}

/* ---- subscriptions behind a stream ---- */

static int sub_handler(jrpc_call_t *c, jrpc_val_t params, void *udata) {
  (void)udata;
  const char *topic;
  size_t n;
  if (jrpc_as_str(c, jrpc_at(c, params, 0), &topic, &n) != 0)
    return jrpc_error(c, JRPC_INVALID_PARAMS, "topic");
  return jrpc_subscribe_accept(c, topic, n);
}

typedef struct world {
  jrpc__registry_t reg;
  jrpc_module_info_t info[2];
  jrpc__module_t mod[2];
  jrpc__engine_t e;
  jrpc__push_t push;
  jrpc__host_t host;
  _Atomic uint64_t total;
  unsigned ids;
  int outputs;
} world_t;

static world_t *W;

static int host_random(void *arg, void *buf, size_t n) {
  world_t *w = arg;
  memset(buf, 0, n);
  memcpy(buf, &(unsigned){++w->ids}, sizeof(unsigned));
  ((unsigned char *)buf)[n - 1] = 0xab;
  return 0;
}
static void host_output(void *arg, jrpc__sink_t *s) {
  (void)s;
  ((world_t *)arg)->outputs++;
}

static void world_init(world_t *w, uint64_t max_bytes, uint32_t per_conn) {
  memset(w, 0, sizeof(*w));
  assert_int_equal(jrpc__registry_init(&w->reg), 0);
  const char *names[2] = {"kv", "other"};
  const char *methods[2][3] = {{"kv.watch", "kv.unwatch", "kv.changed"},
                               {"o.watch", "o.unwatch", "o.changed"}};
  for (int i = 0; i < 2; i++) {
    w->info[i].name = names[i];
    w->mod[i].info = &w->info[i];
    jrpc__regctx_t ctx;
    jrpc__regctx_init(&ctx, &w->reg, &w->mod[i], NULL);
    assert_int_equal(jrpc_subscription(&ctx.pub, methods[i][0], methods[i][1],
                                       methods[i][2], sub_handler, NULL),
                     0);
  }
  jrpc__limits_t lim = JRPC__LIMITS_DEFAULT;
  assert_int_equal(jrpc__engine_init(&w->e, &w->reg, &lim, tu_parser_new()), 0);
  w->host.random = host_random;
  w->host.output = host_output;
  w->e.host = &w->host;
  w->e.host_arg = w;
  jrpc__push_limits_t pl = {.max_bytes = max_bytes,
                            .max_per_conn = per_conn,
                            .total = &w->total,
                            .max_total = 1000};
  assert_int_equal(jrpc__push_init(&w->push, &w->e, &pl), 0);
  w->e.push = &w->push;
}

static void world_free(world_t *w) {
  jrpc__push_free(&w->push);
  jrpc__engine_free(&w->e);
  jrpc__registry_free(&w->reg);
}

/* Feeds text to s and returns everything it has to send (then consumed). */
static char *io(jrpc__stream_t *s, const char *text) {
  static char out[1 << 16];
  if (text) {
    size_t room, n = strlen(text);
    char *d = jrpc__stream_rbuf(s, &room);
    assert_true(room >= n);
    memcpy(d, text, n);
    assert_int_equal(jrpc__stream_feed(s, n, 0), 0);
  }
  size_t got = jrpc__out_copy(&s->out, out, sizeof(out) - 1);
  jrpc__out_consume(&s->out, got);
  out[got] = '\0';
  return out;
}

static void publish(world_t *w, const char *ns, const char *topic,
                    const char *json) {
  jrpc__pubmsg_t *m = jrpc__pubmsg_new(ns, strlen(ns), topic, strlen(topic),
                                       json, strlen(json), 1);
  jrpc__push_fanout(&w->push, m);
  jrpc__pubmsg_unref(m);
  jrpc__push_flush(&w->push);
}

#define ID(k) "0" #k "0000000000000000000000000000ab"
#define SUB(m, topic, id)                                                      \
  "{\"jsonrpc\":\"2.0\",\"method\":\"" m "\",\"params\":[\"" topic             \
  "\"],\"id\":" #id "}\n"
#define NOTE(m, id, result)                                                    \
  "{\"jsonrpc\":\"2.0\",\"method\":\"" m                                       \
  "\",\"params\":{\"subscription\":\"" id "\",\"result\":" result "}}\n"

/* A world without tight limits, and two newline streams in it. */
static world_t *world_of_two(jrpc__stream_t *a, jrpc__stream_t *b) {
  world_t *w = W;
  world_init(w, 1 << 20, 16);
  jrpc__stream_init(a, &w->e, JRPC_FRAMING_NEWLINE);
  jrpc__stream_init(b, &w->e, JRPC_FRAMING_NEWLINE);
  return w;
}

static void test_fanout(void **state) {
  (void)state;
  jrpc__stream_t a, b;
  world_t *w = world_of_two(&a, &b);
  assert_string_equal(
      io(&a, SUB("kv.watch", "k", 1)),
      "{\"jsonrpc\":\"2.0\",\"result\":\"" ID(1) "\",\"id\":1}\n");
  io(&b, SUB("kv.watch", "k", 1) SUB("o.watch", "k", 2));
  /* kv's topic "k": a and b's kv subscriptions; other's "k" is not it */
  publish(w, "kv", "k", "{\"v\":1}");
  publish(w, "kv", "k", "{\"v\":2}");
  publish(w, "kv", "nobody", "3");
  assert_string_equal(io(&a, NULL), NOTE("kv.changed", ID(1), "{\"v\":1}")
                                        NOTE("kv.changed", ID(1), "{\"v\":2}"));
  assert_string_equal(io(&b, NULL), NOTE("kv.changed", ID(2), "{\"v\":1}")
                                        NOTE("kv.changed", ID(2), "{\"v\":2}"));
  /* a module's JSON over lines stays one line (newline framing) */
  publish(w, "kv", "k", "[1,\r\n2]");
  assert_string_equal(io(&a, NULL), NOTE("kv.changed", ID(1), "[1,  2]"));
  io(&b, NULL);
  publish(w, "other", "k", "4");
  assert_string_equal(io(&a, NULL), "");
  assert_string_equal(io(&b, NULL), NOTE("o.changed", ID(3), "4"));
  /* unsubscribe: only the owner, only through its kind's method */
  assert_string_equal(
      io(&b, "{\"jsonrpc\":\"2.0\",\"method\":\"kv.unwatch\",\"params\":[\"" ID(
                 1) "\"],\"id\":5}\n"),
      "{\"jsonrpc\":\"2.0\",\"result\":false,\"id\":5}\n");
  assert_string_equal(
      io(&a, "{\"jsonrpc\":\"2.0\",\"method\":\"o.unwatch\",\"params\":[\"" ID(
                 1) "\"],\"id\":6}\n"),
      "{\"jsonrpc\":\"2.0\",\"result\":false,\"id\":6}\n");
  assert_string_equal(
      io(&a, "{\"jsonrpc\":\"2.0\",\"method\":\"kv.unwatch\",\"params\":{"
             "\"subscription\":\"" ID(1) "\"},\"id\":7}\n"),
      "{\"jsonrpc\":\"2.0\",\"result\":true,\"id\":7}\n");
  assert_string_equal(
      io(&a, "{\"jsonrpc\":\"2.0\",\"method\":\"kv.unwatch\",\"params\":[\"" ID(
                 1) "\"],\"id\":8}\n"),
      "{\"jsonrpc\":\"2.0\",\"result\":false,\"id\":8}\n");
  publish(w, "kv", "k", "9");
  assert_string_equal(io(&a, NULL), "");
  assert_string_equal(io(&b, NULL), NOTE("kv.changed", ID(2), "9"));
  assert_int_equal(JRPC__STAT_GET(w->push.stats.live), 2);
  /* a module gone with a reload: its subscriptions end, kv's stay */
  jrpc__registry_t only_kv;
  assert_int_equal(jrpc__registry_init(&only_kv), 0);
  jrpc__regctx_t ctx;
  jrpc__regctx_init(&ctx, &only_kv, &w->mod[0], NULL);
  assert_int_equal(jrpc_subscription(&ctx.pub, "kv.watch", "kv.unwatch",
                                     "kv.changed", sub_handler, NULL),
                   0);
  jrpc__push_review(&w->push, &b.sink, &only_kv);
  assert_int_equal(JRPC__STAT_GET(w->push.stats.live), 1);
  publish(w, "other", "k", "10");
  assert_string_equal(io(&b, NULL), "");
  /* a view that hides kv.watch from b, then one that denies it: its kv
   * subscription ends too (a view that still serves it keeps it) */
  jrpc__registry_t view;
  assert_int_equal(jrpc__registry_view_init(&view, &only_kv), 0);
  jrpc__push_review(&w->push, &b.sink, &view);
  assert_int_equal(JRPC__STAT_GET(w->push.stats.live), 1);
  const jrpc__method_t *watch = jrpc__registry_find(&view, "kv.watch", 8);
  jrpc__registry_view_withhold(&view, watch->slot, sub_handler, NULL);
  jrpc__push_review(&w->push, &b.sink, &view);
  assert_int_equal(JRPC__STAT_GET(w->push.stats.live), 0);
  jrpc__registry_view_free(&view);
  jrpc__registry_free(&only_kv);
  publish(w, "kv", "k", "11");
  assert_string_equal(io(&b, NULL), "");
  jrpc__stream_free(&b); /* its connection closes */
  assert_int_equal(JRPC__STAT_GET(w->push.stats.live), 0);
  assert_int_equal(w->total, 0);
  jrpc__stream_free(&a);
  world_free(w);
}

static void test_lagged(void **state) {
  (void)state;
  world_t *w = W;
  world_init(w, 300, 16);
  jrpc__stream_t a;
  jrpc__stream_init(&a, &w->e, JRPC_FRAMING_NEWLINE);
  io(&a, SUB("kv.watch", "k", 1));
  /* two fit under 300 bytes, the third would not: dropped, and every
   * one after it too until the connection has drained */
  for (int i = 0; i < 6; i++)
    publish(w, "kv", "k", "\"0123456789\"");
  assert_int_equal(JRPC__STAT_GET(w->push.stats.delivered), 2);
  assert_int_equal(JRPC__STAT_GET(w->push.stats.dropped), 4);
  io(&a, NULL); /* the client reads: drained */
  jrpc__push_drained(&w->push, &a.sink);
  assert_string_equal(
      io(&a, NULL),
      "{\"jsonrpc\":\"2.0\",\"method\":\"rpc.lagged\","
      "\"params\":{\"subscription\":\"" ID(1) "\","
                                              "\"dropped\":4}}\n");
  jrpc__push_drained(&w->push, &a.sink); /* once only */
  assert_string_equal(io(&a, NULL), "");
  publish(w, "kv", "k", "1");
  assert_string_equal(io(&a, NULL), NOTE("kv.changed", ID(1), "1"));
  jrpc__stream_free(&a);
  world_free(w);
}

/* The hash bucket of a module's topic, as lost and lag counts go. */
static uint32_t bucket_of(const char *ns, const char *topic) {
  jrpc__pubmsg_t *m =
      jrpc__pubmsg_new(ns, strlen(ns), topic, strlen(topic), "0", 1, 1);
  assert_non_null(m);
  uint32_t k = m->hash % JRPC__PUSH_LOST_BUCKETS;
  jrpc__pubmsg_unref(m);
  return k;
}

#define LAGGED(id, n)                                                          \
  "{\"jsonrpc\":\"2.0\",\"method\":\"rpc.lagged\",\"params\":{"                \
  "\"subscription\":\"" id "\",\"dropped\":" #n "}}\n"

/* The host's lag (jrpcd_hub_lag: [cluster]'s broker went or came back):
 * a subscription of the topic is told at once, in order with its
 * notifications, though its output has not drained, and goes on receiving
 * (jrpc__push_lost's rule, nothing more until drained, would drop local
 * messages for a loss elsewhere); one already behind counts it in the
 * notice it gets once drained. */
static void test_lag(void **state) {
  (void)state;
  jrpc__stream_t a, b;
  world_t *w = world_of_two(&a, &b);
  io(&a, SUB("o.watch", "k", 1));
  io(&b, SUB("o.watch", "j", 2));
  uint32_t k = bucket_of("other", "k"), j = bucket_of("other", "j");
  assert_int_not_equal(k, j);
  uint32_t counts[JRPC__PUSH_LOST_BUCKETS] = {0};
  counts[j] = 2; /* b: behind, two lost at its inbox */
  jrpc__push_lost(&w->push, counts);
  publish(w, "other", "k", "1"); /* a: queued, not read */
  counts[k] = counts[j] = 1;
  jrpc__push_lag(&w->push, counts);
  jrpc__push_flush(&w->push);
  publish(w, "other", "k", "2");
  publish(w, "other", "j", "3");
  assert_string_equal(io(&a, NULL),
                      NOTE("o.changed", ID(1), "1") LAGGED(ID(1), 1)
                          NOTE("o.changed", ID(1), "2"));
  assert_string_equal(io(&b, NULL), "");
  jrpc__push_drained(&w->push, &b.sink);
  assert_string_equal(io(&b, NULL), LAGGED(ID(2), 4));
  assert_int_equal(JRPC__STAT_GET(w->push.stats.lagged), 2);
  assert_int_equal(JRPC__STAT_GET(w->push.stats.delivered), 2);
  jrpc__stream_free(&a);
  jrpc__stream_free(&b);
  world_free(w);
}

static void test_limits_and_http(void **state) {
  (void)state;
  world_t *w = W;
  world_init(w, 1 << 20, 2);
  jrpc__stream_t a;
  jrpc__stream_init(&a, &w->e, JRPC_FRAMING_NEWLINE);
  io(&a, SUB("kv.watch", "x", 1) SUB("kv.watch", "y", 2));
  assert_string_equal(
      io(&a, SUB("kv.watch", "z", 3)),
      "{\"jsonrpc\":\"2.0\",\"error\":{\"code\":-32011,\"message\":\"too many "
      "subscriptions on this connection (max_subscriptions_per_connection = "
      "2)\"},\"id\":3}\n");
  assert_int_equal(JRPC__STAT_GET(w->push.stats.refused), 1);
  jrpc__stream_free(&a);
  /* HTTP POST: no notification could reach the subscriber */
  jrpc__stream_t h;
  jrpc__stream_init(&h, &w->e, JRPC_FRAMING_HTTP);
  jrpc__framing_conf_t fc = {.max_head = 8192};
  assert_int_equal(h.fx->init(&h, &fc), 0);
  const char *body = "{\"jsonrpc\":\"2.0\",\"method\":\"kv.watch\","
                     "\"params\":[\"x\"],\"id\":1}";
  char req[512];
  snprintf(req, sizeof(req),
           "POST / HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
           "Content-Length: %zu\r\n\r\n%s",
           strlen(body), body);
  size_t room;
  char *d = jrpc__stream_rbuf(&h, &room);
  memcpy(d, req, strlen(req));
  assert_int_equal(h.fx->feed(&h, strlen(req), 0), 0);
  char out[2048];
  size_t n = jrpc__out_copy(&h.out, out, sizeof(out) - 1);
  out[n] = '\0';
  assert_non_null(strstr(out, "\"code\":-32010"));
  assert_non_null(strstr(out, "streaming transport"));
  assert_int_equal(JRPC__STAT_GET(w->push.stats.live), 0);
  h.fx->free(&h);
  jrpc__stream_free(&h);
  world_free(w);
}

int main(void) {
  world_t w;
  W = &w;
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_inbox_order_and_full),
      cmocka_unit_test(test_inbox_eight_producers),
      cmocka_unit_test(test_fanout),
      cmocka_unit_test(test_lagged),
      cmocka_unit_test(test_lag),
      cmocka_unit_test(test_limits_and_http),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
