/* e2e_load.c - the real daemon under load: 10,000 pipelined requests on one
 * connection, 50 concurrent connections, a client that never reads its
 * replies (bounded memory, others still served), and clients that vanish
 * in the middle of a frame or of a reply, and what idle connections cost. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <errno.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include "e2e.h"

/* ---- requests and the replies they must get ---- */

/* Request `seq` of a mixed stream: calls to math and echo, notifications,
 * and (with `deferred`) some sleep.ms calls whose replies come when they
 * finish. The id is `base + seq`. Writes the request into req and its
 * reply into rep ("" for a notification); returns 1 when the reply is
 * deferred. */
static int make_call(unsigned long base, unsigned seq, int deferred, char *req,
                     size_t reqcap, char *rep, size_t repcap) {
  unsigned long id = base + seq;
  rep[0] = '\0';
  if (deferred && seq % 25 == 7) {
    snprintf(req, reqcap,
             "{\"jsonrpc\":\"2.0\",\"method\":\"sleep.ms\",\"params\":[%u],"
             "\"id\":%lu}",
             seq % 3, id);
    snprintf(rep, repcap, "{\"jsonrpc\":\"2.0\",\"result\":%u,\"id\":%lu}",
             seq % 3, id);
    return 1;
  }
  switch (seq % 4) {
  case 0:
    snprintf(req, reqcap,
             "{\"jsonrpc\":\"2.0\",\"method\":\"math.add\",\"params\":[%u,1],"
             "\"id\":%lu}",
             seq, id);
    snprintf(rep, repcap, "{\"jsonrpc\":\"2.0\",\"result\":%u,\"id\":%lu}",
             seq + 1, id);
    break;
  case 1:
    snprintf(req, reqcap,
             "{\"jsonrpc\":\"2.0\",\"method\":\"echo\",\"params\":[\"s%u\","
             "{\"n\":%u}], \"id\":%lu}",
             seq, seq, id);
    snprintf(rep, repcap,
             "{\"jsonrpc\":\"2.0\",\"result\":[\"s%u\",{\"n\":%u}],\"id\":%lu}",
             seq, seq, id);
    break;
  case 2:
    snprintf(req, reqcap,
             "{\"jsonrpc\":\"2.0\",\"method\":\"math.multiply\",\"params\":"
             "{\"a\":%u,\"b\":2},\"id\":%lu}",
             seq, id);
    snprintf(rep, repcap, "{\"jsonrpc\":\"2.0\",\"result\":%u,\"id\":%lu}",
             seq * 2, id);
    break;
  default:
    snprintf(req, reqcap,
             "{\"jsonrpc\":\"2.0\",\"method\":\"math.add\",\"params\":[%u,%u]}",
             seq, seq);
    break;
  }
  return 0;
}

/* The number after the last "id": of a reply. */
static unsigned long reply_id(const char *p, size_t n) {
  for (size_t i = n; i-- > 5;)
    if (memcmp(p + i - 5, "\"id\":", 5) == 0)
      return strtoul(p + i, NULL, 10);
  return (unsigned long)-1;
}

/* One connection's stream of requests and what came back. */
#define WANT_MAX 128
typedef struct stream {
  unsigned long base;
  unsigned n;        /* requests */
  char *want;        /* [seq * WANT_MAX]: expected reply, "" if none */
  uint8_t *deferred; /* [seq] */
  uint8_t *seen;     /* [seq] */
  unsigned expected; /* replies due */
  unsigned got;
  long last_sync; /* seq of the last synchronous reply: they come in order */
} stream_t;

static void stream_init(stream_t *s, e2e_conn_t *c, unsigned long base,
                        unsigned n, int deferred) {
  memset(s, 0, sizeof(*s));
  s->base = base;
  s->n = n;
  s->want = e2e_calloc(n, WANT_MAX);
  s->deferred = e2e_calloc(n, 1);
  s->seen = e2e_calloc(n, 1);
  s->last_sync = -1;
  for (unsigned i = 0; i < n; i++) {
    char req[256];
    char *rep = s->want + (size_t)i * WANT_MAX;
    s->deferred[i] =
        (uint8_t)make_call(base, i, deferred, req, sizeof(req), rep, WANT_MAX);
    e2e_queue(c, req, strlen(req));
    if (rep[0])
      s->expected++;
  }
}

static void stream_free(stream_t *s) {
  e2e_free(s->want);
  e2e_free(s->deferred);
  e2e_free(s->seen);
}

static void stream_reply(stream_t *s, const char *p, size_t n) {
  unsigned long id = reply_id(p, n);
  if (id < s->base || id - s->base >= s->n ||
      !s->want[(id - s->base) * WANT_MAX]) {
    fprintf(stderr, "reply: %.*s\n", (int)(n > 300 ? 300 : n), p);
    fail_msg("a reply with an id nobody asked for (stream %lu)", s->base);
  }
  unsigned seq = (unsigned)(id - s->base);
  if (s->seen[seq])
    fail_msg("two replies for id %lu", id);
  s->seen[seq] = 1;
  if (!e2e_same(p, n, s->want + (size_t)seq * WANT_MAX))
    fail_msg("wrong reply for id %lu", id);
  if (!s->deferred[seq]) {
    if ((long)seq < s->last_sync)
      fail_msg("reply %u came after reply %ld: out of order", seq,
               s->last_sync);
    s->last_sync = seq;
  }
  s->got++;
}

typedef struct streams {
  stream_t *s;
  size_t n;
} streams_t;

static void on_frame(void *arg, size_t i, const char *p, size_t n) {
  streams_t *ss = arg;
  stream_reply(&ss->s[i], p, n);
}

static int all_done(void *arg) {
  streams_t *ss = arg;
  for (size_t i = 0; i < ss->n; i++)
    if (ss->s[i].got < ss->s[i].expected)
      return 0;
  return 1;
}

static const e2e_pump_ops_t stream_ops = {on_frame, NULL, all_done};

/* ---- 2. 10,000 pipelined requests on one connection ---- */

static void test_pipelined_10000(void **state) {
  e2e_daemon_t *d = *state;
  e2e_start(d, NULL);
  static const e2e_ep_t eps[] = {E2E_UNIX_NL, E2E_TCP_LEN};
  for (size_t k = 0; k < 2; k++) {
    e2e_conn_t *c = e2e_connect(d, eps[k]);
    stream_t s;
    /* All of them queued at once; the pump writes as the socket takes them
     * and reads replies meanwhile, so neither side can block the other. */
    stream_init(&s, c, 1, 10000, 0);
    streams_t ss = {&s, 1};
    e2e_pump(&c, 1, &stream_ops, &ss, E2E_REPLY_MS);
    assert_int_equal(s.got, 7500);
    /* Nothing more: the next reply is this one's. */
    e2e_send(c, "{\"jsonrpc\":\"2.0\",\"method\":\"math.add\","
                "\"params\":[1,1],\"id\":0}");
    e2e_expect(c, "{\"jsonrpc\":\"2.0\",\"result\":2,\"id\":0}");
    stream_free(&s);
    e2e_close(c);
  }
  e2e_stop(d);
}

/* ---- 3. 50 concurrent connections ---- */

#define NCONC 50
#define PER_CONN 300

static void test_concurrent_connections(void **state) {
  e2e_daemon_t *d = *state;
  e2e_opts_t o = {.workers = 2};
  e2e_start(d, &o);
  e2e_conn_t **cs = e2e_calloc(NCONC, sizeof(*cs));
  stream_t *s = e2e_calloc(NCONC, sizeof(*s));
  for (size_t i = 0; i < NCONC; i++) {
    cs[i] = e2e_connect(d, (e2e_ep_t)(i % E2E_NEP));
    stream_init(&s[i], cs[i], (unsigned long)(i + 1) * 100000, PER_CONN, 1);
  }
  streams_t ss = {s, NCONC};
  e2e_pump(cs, NCONC, &stream_ops, &ss, E2E_REPLY_MS);
  for (size_t i = 0; i < NCONC; i++) {
    assert_int_equal(s[i].got, s[i].expected);
    stream_free(&s[i]);
    e2e_close(cs[i]);
  }
  e2e_free(s);
  e2e_free(cs);
  e2e_stop(d);
}

/* ---- 5. a client that sends but never reads ---- */

#define PUSH_PARAM 16384           /* bytes of the echoed string */
#define PUSH_CAP (256u << 20)      /* give up pushing after this much */
#define RSS_GROWTH_MAX (64u << 10) /* KiB */
#define STALL_MS 1500              /* no write progress: reading paused */

typedef struct pusher {
  e2e_conn_t *c;
  unsigned sent_reqs; /* requests written completely */
  size_t req_len;
  uint64_t sent;
} pusher_t;

/* {"jsonrpc":"2.0","method":"echo","id":ID,"params":["ccc..."]} with a
 * string of `param` bytes; *n is its length (not NUL-terminated). */
static char *echo_request(size_t param, unsigned id, size_t *n) {
  char head[96];
  int h = snprintf(head, sizeof(head),
                   "{\"jsonrpc\":\"2.0\",\"method\":\"echo\",\"id\":%u,"
                   "\"params\":[\"",
                   id);
  *n = (size_t)h + param + 3;
  char *p = e2e_calloc(*n, 1);
  memcpy(p, head, (size_t)h);
  memset(p + h, 'a' + (int)(id % 26), param);
  memcpy(p + h + param, "\"]}", 3);
  return p;
}

static void probe_roundtrip(e2e_conn_t *b, unsigned *k) {
  char req[128], want[128];
  snprintf(req, sizeof(req),
           "{\"jsonrpc\":\"2.0\",\"method\":\"math.add\",\"params\":[%u,1],"
           "\"id\":%u}",
           *k, *k);
  snprintf(want, sizeof(want), "{\"jsonrpc\":\"2.0\",\"result\":%u,\"id\":%u}",
           *k + 1, *k);
  e2e_send(b, req);
  e2e_expect(b, want);
  (*k)++;
}

/* Writes requests on p->c without reading until the daemon stops taking
 * them, checking meanwhile that its memory stays bounded and that client b
 * is answered. */
static void push_until_stalled(e2e_daemon_t *d, pusher_t *p, e2e_conn_t *b,
                               unsigned *probe, uint64_t rss0) {
  uint64_t last_progress = e2e_now_ms(), last_probe = 0, peak = rss0;
  unsigned next_id = 1;
  for (;;) {
    if (p->c->out_off == p->c->out_len) {
      size_t n;
      char *r = echo_request(PUSH_PARAM, next_id++, &n);
      p->req_len = n;
      e2e_queue(p->c, r, n);
      e2e_free(r);
    }
    ssize_t k = send(p->c->fd, p->c->out + p->c->out_off,
                     p->c->out_len - p->c->out_off, MSG_NOSIGNAL);
    uint64_t now = e2e_now_ms();
    if (k > 0) {
      p->c->out_off += (size_t)k;
      p->sent += (uint64_t)k;
      if (p->c->out_off == p->c->out_len)
        p->sent_reqs++;
      last_progress = now;
    } else if (k < 0 && errno != EAGAIN && errno != EINTR) {
      fail_msg("non-reader: send: %s", strerror(errno));
    } else {
      struct pollfd pf = {p->c->fd, POLLOUT, 0};
      poll(&pf, 1, 20);
    }
    if (now - last_probe >= 50) {
      probe_roundtrip(b, probe);
      uint64_t rss = e2e_rss_kib(d);
      if (rss > peak)
        peak = rss;
      if (rss > rss0 + RSS_GROWTH_MAX)
        fail_msg("jrpcd's memory grew from %llu to %llu KiB while a client "
                 "sent %llu bytes and read nothing (output_high_water = 1 "
                 "MiB is not holding it back)",
                 (unsigned long long)rss0, (unsigned long long)rss,
                 (unsigned long long)p->sent);
      last_probe = e2e_now_ms();
    }
    if (now - last_progress > STALL_MS)
      break; /* the daemon stopped reading this connection */
    if (p->sent > PUSH_CAP)
      fail_msg("jrpcd read %llu bytes from a client that reads nothing",
               (unsigned long long)p->sent);
  }
  print_message("non-reader: %llu bytes (%u requests) taken before reading "
                "paused; daemon RSS %llu -> peak %llu KiB\n",
                (unsigned long long)p->sent, p->sent_reqs,
                (unsigned long long)rss0, (unsigned long long)peak);
}

/* What a non-reader on a Unix socket got the daemon to take is bounded
 * by output_high_water: the daemon stops reading once that much output
 * waits, so beyond `high` it has taken at most what fits in the kernel's
 * buffers of the two directions (each bounded by a socket's send buffer,
 * the default size on both ends), one read's overshoot (at most one such
 * buffer) and a frame or two. A looser mark lets it take more. */
static void expect_taken_near(const pusher_t *p, uint64_t high) {
  int sndbuf = 0;
  socklen_t len = sizeof(sndbuf);
  assert_int_equal(getsockopt(p->c->fd, SOL_SOCKET, SO_SNDBUF, &sndbuf, &len),
                   0);
  uint64_t bound = high + 3 * (uint64_t)sndbuf + (256u << 10);
  if (p->sent > bound)
    fail_msg("jrpcd took %llu bytes from a client that reads nothing; with "
             "output_high_water = %llu it should stop by %llu",
             (unsigned long long)p->sent, (unsigned long long)high,
             (unsigned long long)bound);
}

typedef struct catchup {
  pusher_t *p;
  unsigned got, due;
  uint8_t *seen;
} catchup_t;

static void catchup_frame(void *arg, size_t i, const char *r, size_t n) {
  catchup_t *cu = arg;
  unsigned long id = reply_id(r, n);
  if (id < 1 || id > cu->due || cu->seen[id])
    fail_msg("catch-up: unexpected reply id %lu", id);
  if (id != (unsigned long)cu->got + 1)
    fail_msg("catch-up: reply %lu after %u: out of order", id, cu->got);
  size_t qn;
  char *q = echo_request(PUSH_PARAM, (unsigned)id, &qn);
  /* The echo of the request's params: exactly the bytes after "params":. */
  const char *params = strstr(q, "\"params\":") + 9;
  size_t pn = qn - (size_t)(params - q) - 1;
  char tail[32];
  int tn = snprintf(tail, sizeof(tail), ",\"id\":%lu}", id);
  static const char head[] = "{\"jsonrpc\":\"2.0\",\"result\":";
  int ok = n == sizeof(head) - 1 + pn + (size_t)tn &&
           memcmp(r, head, sizeof(head) - 1) == 0 &&
           memcmp(r + sizeof(head) - 1, params, pn) == 0 &&
           memcmp(r + sizeof(head) - 1 + pn, tail, (size_t)tn) == 0;
  e2e_free(q);
  if (!ok)
    fail_msg("catch-up: wrong reply for id %lu", id);
  cu->seen[id] = 1;
  cu->got++;
}

static int catchup_done(void *arg) {
  catchup_t *cu = arg;
  return cu->got == cu->due;
}

static void test_non_reader_bounded(void **state) {
  e2e_daemon_t *d = *state;
  enum { HIGH = 1048576 };
  e2e_opts_t o = {.server = "output_high_water = 1048576\n"};
  e2e_start(d, &o);
  unsigned probe = 1;
  e2e_conn_t *b = e2e_connect(d, E2E_TCP_LEN);
  for (int i = 0; i < 20; i++)
    probe_roundtrip(b, &probe);
  uint64_t rss0 = e2e_rss_kib(d);

  /* A non-reader that goes away without ever reading. */
  pusher_t p1;
  memset(&p1, 0, sizeof(p1));
  p1.c = e2e_connect(d, E2E_UNIX_NL);
  push_until_stalled(d, &p1, b, &probe, rss0);
  expect_taken_near(&p1, HIGH);
  e2e_close(p1.c);
  for (int i = 0; i < 10; i++)
    probe_roundtrip(b, &probe);

  /* A non-reader that catches up: reading resumes, and every request it
   * sent is answered, in order. */
  pusher_t p2;
  memset(&p2, 0, sizeof(p2));
  p2.c = e2e_connect(d, E2E_TCP_NL);
  push_until_stalled(d, &p2, b, &probe, rss0);
  catchup_t cu = {&p2, 0, p2.sent_reqs + (p2.c->out_off < p2.c->out_len), NULL};
  cu.seen = e2e_calloc(cu.due + 1, 1);
  e2e_pump_ops_t ops = {catchup_frame, NULL, catchup_done};
  e2e_pump(&p2.c, 1, &ops, &cu, E2E_REPLY_MS);
  e2e_free(cu.seen);
  probe_roundtrip(b, &probe);
  e2e_close(p2.c);

  /* A new connection is served as well. */
  e2e_conn_t *c = e2e_connect(d, E2E_UNIX_LEN);
  probe_roundtrip(c, &probe);
  e2e_close(c);
  e2e_close(b);
  e2e_stop(d);
}

/* ---- 6. clients that vanish mid-frame or mid-reply ---- */

static void test_vanishing_clients(void **state) {
  e2e_daemon_t *d = *state;
  e2e_opts_t o = {.server = "max_frame_bytes = 8388608\n"};
  e2e_start(d, &o);
  unsigned probe = 1;
  e2e_conn_t *b = e2e_connect(d, E2E_UNIX_LEN);
  probe_roundtrip(b, &probe);

  static const char half[] =
      "{\"jsonrpc\":\"2.0\",\"method\":\"math.add\",\"params\":[1,";
  size_t n;
  char *req = echo_request(4u << 20, 1, &n);
  for (e2e_ep_t ep = 0; ep < E2E_NEP; ep++) {
    /* Half a request, then gone. */
    e2e_conn_t *c = e2e_connect(d, ep);
    int length = c->framing == E2E_LENGTH;
    if (length) {
      static const unsigned char hdr[4] = {0, 0, 0, 100};
      e2e_send_raw(c, hdr, 4);
    }
    e2e_send_raw(c, half, sizeof(half) - 1);
    e2e_close(c);
    /* Half a length prefix, then a reset. */
    if (length) {
      c = e2e_connect(d, ep);
      e2e_send_raw(c, "\0\0", 2);
      e2e_close_rst(c);
    }
    probe_roundtrip(b, &probe);

    /* A 4 MB reply nobody reads: closed, and closed with a reset. */
    c = e2e_connect(d, ep);
    e2e_send_frame(c, req, n);
    e2e_sleep_ms(20); /* let the daemon start writing */
    e2e_close(c);
    c = e2e_connect(d, ep);
    e2e_send_frame(c, req, n);
    e2e_close_rst(c);
    probe_roundtrip(b, &probe);

    /* Gone while calls are deferred: their replies have nowhere to go. */
    c = e2e_connect(d, ep);
    e2e_send(c, "{\"jsonrpc\":\"2.0\",\"method\":\"sleep.ms\",\"params\":"
                "[100],\"id\":1}");
    e2e_send(c, "[{\"jsonrpc\":\"2.0\",\"method\":\"sleep.work_ms\",\"params\":"
                "[50],\"id\":2},{\"jsonrpc\":\"2.0\",\"method\":\"math.add\","
                "\"params\":[1,2],\"id\":3}]");
    e2e_close(c);
    probe_roundtrip(b, &probe);
  }
  e2e_free(req);
  /* Past every deferred call of the vanished clients: still serving. */
  e2e_send(b, "{\"jsonrpc\":\"2.0\",\"method\":\"sleep.ms\",\"params\":[300],"
              "\"id\":\"late\"}");
  e2e_expect(b, "{\"jsonrpc\":\"2.0\",\"result\":300,\"id\":\"late\"}");
  e2e_conn_t *c = e2e_connect(d, E2E_TCP_NL);
  probe_roundtrip(c, &probe);
  e2e_close(c);
  e2e_close(b);
  e2e_stop(d);
}

/* ---- idle connections ---- */

/* An idle connection holds no pooled buffer, input or output: 2,000
 * connections that each made a call and went quiet cost the daemon at
 * most 2 KiB of resident memory apiece (its own struct is about 800
 * bytes). Not in sanitizer builds, whose allocator adds its own. Raw
 * sockets: more connections than the harness keeps. */
static void test_idle_connection_memory(void **state) {
#ifdef JRPC_SANITIZE
  (void)state;
  skip();
#else
  e2e_daemon_t *d = *state;
  e2e_opts_t o = {.workers = 1};
  e2e_start(d, &o);
  enum { N = 2000 };
  static int fds[N];
  /* Warm-up: the worker's pools and arenas are not connection cost. */
  e2e_conn_t *warm = e2e_connect(d, E2E_UNIX_NL);
  e2e_send(warm, REQ("math.add", "[1,1]", "0"));
  e2e_expect(warm, RES("2", "0"));
  e2e_sleep_ms(200);
  uint64_t before = e2e_rss_kib(d);
  struct sockaddr_un sa = {.sun_family = AF_UNIX};
  memcpy(sa.sun_path, d->sock[0], strlen(d->sock[0]));
  for (int i = 0; i < N; i++) {
    fds[i] = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
    assert_true(fds[i] >= 0);
    if (connect(fds[i], (struct sockaddr *)&sa, sizeof(sa)) != 0)
      fail_msg("connection %d: connect: %s", i, strerror(errno));
    char req[96], want[64], got[64];
    int n =
        snprintf(req, sizeof(req), REQ("math.add", "[%d,1]", "%d") "\n", i, i);
    int wn = snprintf(want, sizeof(want), RES("%d", "%d") "\n", i + 1, i);
    assert_int_equal(write(fds[i], req, (size_t)n), n);
    int have = 0;
    while (have < wn) {
      struct pollfd p = {fds[i], POLLIN, 0};
      if (poll(&p, 1, E2E_REPLY_MS) != 1)
        fail_msg("connection %d: no reply", i);
      ssize_t k = read(fds[i], got + have, sizeof(got) - (size_t)have);
      if (k <= 0)
        fail_msg("connection %d: closed", i);
      have += (int)k;
    }
    assert_memory_equal(got, want, (size_t)wn);
  }
  e2e_sleep_ms(200);
  uint64_t idle = e2e_rss_kib(d);
  uint64_t per = (idle - before) * 1024 / N;
  print_message("daemon VmRSS %llu KiB, %llu KiB with %d idle connections: "
                "%llu bytes each\n",
                (unsigned long long)before, (unsigned long long)idle, N,
                (unsigned long long)per);
  assert_true(per <= 2048);
  for (int i = 0; i < N; i++)
    close(fds[i]);
  e2e_close(warm);
  e2e_stop(d);
#endif
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test_setup_teardown(test_pipelined_10000, e2e_setup,
                                      e2e_teardown),
      cmocka_unit_test_setup_teardown(test_concurrent_connections, e2e_setup,
                                      e2e_teardown),
      cmocka_unit_test_setup_teardown(test_non_reader_bounded, e2e_setup,
                                      e2e_teardown),
      cmocka_unit_test_setup_teardown(test_idle_connection_memory, e2e_setup,
                                      e2e_teardown),
      cmocka_unit_test_setup_teardown(test_vanishing_clients, e2e_setup,
                                      e2e_teardown),
  };
  return cmocka_run_group_tests_name("e2e_load", tests, NULL, NULL);
}
