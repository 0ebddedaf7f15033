/* fx_push.c - fixture: publishing from many threads at once (server push,
 * ABI 1.5), for tests/cli/push.py and its ThreadSanitizer run.
 *
 *   fxpush.sub(topic) / fxpush.unsub(id)   a subscription; notifications
 *                                          are fxpush.msg
 *   fxpush.burst(threads, each)            starts `threads` threads that
 *                                          each publish `each` messages
 *                                          {"t":T,"k":K} on topic "b" as
 *                                          fast as they can, waits for
 *                                          them, answers how many
 *                                          jrpc_publish accepted */
#include <jrpc/jrpc.h>
#include <pthread.h>
#include <stdio.h>

#define MAX_THREADS 16

typedef struct burst {
  jrpc_pub_t *pub;
  int t, each, accepted;
} burst_t;

static int sub(jrpc_call_t *c, jrpc_val_t params, void *udata) {
  const char *topic;
  size_t n;
  if (jrpc_as_str(c, jrpc_at(c, params, 0), &topic, &n) != 0)
    return jrpc_error(c, JRPC_INVALID_PARAMS, "topic");
  return jrpc_subscribe_accept(c, topic, n);
}

static void *publisher(void *arg) {
  burst_t *b = arg;
  for (int k = 0; k < b->each; k++) {
    char json[48];
    int n = snprintf(json, sizeof(json), "{\"t\":%d,\"k\":%d}", b->t, k);
    b->accepted += jrpc_publish(b->pub, "b", json, (size_t)n) == 0;
  }
  return NULL;
}

static int burst(jrpc_call_t *c, jrpc_val_t params, void *pub) {
  int64_t threads, each;
  if (jrpc_as_i64(c, jrpc_at(c, params, 0), &threads) != 0 ||
      jrpc_as_i64(c, jrpc_at(c, params, 1), &each) != 0 || threads < 1 ||
      threads > MAX_THREADS || each < 0 || each > 1000000)
    return jrpc_error(c, JRPC_INVALID_PARAMS, "[threads, each]");
  burst_t b[MAX_THREADS];
  pthread_t t[MAX_THREADS];
  int started = 0;
  for (int i = 0; i < threads; i++) {
    b[i] = (burst_t){pub, i, (int)each, 0};
    started += pthread_create(&t[i], NULL, publisher, &b[i]) == 0;
  }
  int accepted = 0;
  for (int i = 0; i < started; i++) {
    pthread_join(t[i], NULL);
    accepted += b[i].accepted;
  }
  return jrpc_w_i64(c, accepted);
}

static int init(jrpc_reg_t *r, void **mod_data) {
  jrpc_pub_t *pub = jrpc_publisher(r);
  if (!pub)
    return jrpc_init_error(r, "no publisher");
  int rc =
      jrpc_subscription(r, "fxpush.sub", "fxpush.unsub", "fxpush.msg", sub, 0);
  return rc ? rc : jrpc_register(r, "fxpush.burst", burst, pub);
}

static void fini(void *mod_data) {}

JRPC_MODULE("fx_push", "1.0", init, fini)
