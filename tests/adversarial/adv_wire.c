/* adv_wire.c - hostile bytes on the wire: garbage and resets mid-frame,
 * slow senders, half-close, deep nesting, huge and zero length prefixes,
 * invalid UTF-8, and frames that never complete (frame_timeout_ms).
 *
 * Each scenario ends with adv_check (see adv.h). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <arpa/inet.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "adversarial/adv.h"
#include "testutil.h"

#define PARSE_ERROR ERR("-32700", "Parse error", "null")
#define INVALID_NULL ERR("-32600", "Invalid Request", "null")
#define MAX_FRAME 1048576u

static int ep_is_len(e2e_ep_t ep) {
  return e2e_ep_framing(ep) == E2E_LENGTH;
}

/* The next reply within E2E_REPLY_MS, or the test fails. */
static const char *reply(e2e_conn_t *c, size_t *n, const char *what) {
  const char *p;
  int r = e2e_recv(c, &p, n, E2E_REPLY_MS);
  if (r != 1)
    fail_msg("%s: no reply (%s)", what, r == 0 ? "closed" : "timeout");
  return p;
}

/* A round trip proving the connection still serves. */
static void still_serves(e2e_conn_t *c, int id) {
  char req[128], want[128];
  snprintf(req, sizeof(req), REQ("math.add", "[%d,1]", "%d"), id, id);
  snprintf(want, sizeof(want), RES("%d", "%d"), id + 1, id);
  e2e_send(c, req);
  e2e_expect(c, want);
}

/* ---- garbage, and resets in the middle of a frame ---- */

static void garbage_and_resets(e2e_daemon_t *d) {
  uint32_t seed = 0x5eed1;
  char *buf = e2e_calloc(8192, 1);
  /* Connections that send garbage or half a frame, then vanish: a reset on
   * TCP (SO_LINGER 0), a close with unread replies on Unix. */
  for (int round = 0; round < 10; round++)
    for (e2e_ep_t ep = 0; ep < E2E_NEP; ep++) {
      e2e_conn_t *c = e2e_connect(d, ep);
      size_t n = 1 + adv_rand(&seed) % 4000, k = 0;
      if (ep_is_len(ep)) { /* a prefix promising more than follows */
        uint32_t len = htonl((uint32_t)n + 1 + adv_rand(&seed) % 5000);
        memcpy(buf, &len, 4);
        k = 4;
      }
      if (round % 3 == 0) { /* half of a valid request */
        static const char req[] = REQ("math.add", "[1,2]", "1");
        n = sizeof(req) / 2;
        memcpy(buf + k, req, n);
      } else {
        for (size_t i = 0; i < n; i++)
          buf[k + i] = (char)adv_rand(&seed);
      }
      e2e_send_raw(c, buf, k + n);
      if (round % 2)
        e2e_close_rst(c);
      else
        e2e_close(c);
    }
  /* Garbage read to the end: every bad frame gets exactly one -32700 and
   * the stream goes on. Lines start with '@', so none is blank or valid. */
  for (e2e_ep_t ep = 0; ep < E2E_NEP; ep++) {
    e2e_conn_t *c = e2e_connect(d, ep);
    for (int i = 0; i < 200; i++) {
      size_t n = 1 + adv_rand(&seed) % 300;
      buf[0] = '@';
      for (size_t j = 1; j < n; j++) {
        buf[j] = (char)adv_rand(&seed);
        if (!ep_is_len(ep) && buf[j] == '\n')
          buf[j] = '#';
      }
      e2e_queue(c, buf, n);
    }
    e2e_flush(c);
    for (int i = 0; i < 200; i++)
      e2e_expect(c, PARSE_ERROR);
    still_serves(c, 7);
    e2e_close(c);
  }
  e2e_free(buf);
}

/* ---- slow senders ---- */

/* Many clients each trickle a request a byte at a time, interleaved; a
 * fresh client is served meanwhile, and each trickled request is answered
 * once complete. */
static void slow_senders(e2e_daemon_t *d) {
  enum { N = 24 };
  e2e_conn_t *cs[N];
  char frames[N][128];
  size_t lens[N], maxlen = 0;
  for (int i = 0; i < N; i++) {
    e2e_ep_t ep = (e2e_ep_t)(i % E2E_NEP);
    cs[i] = e2e_connect(d, ep);
    char req[96];
    int n =
        snprintf(req, sizeof(req), REQ("math.add", "[%d,%d]", "%d"), i, i, i);
    size_t k = 0;
    if (ep_is_len(ep)) {
      uint32_t len = htonl((uint32_t)n);
      memcpy(frames[i], &len, 4);
      k = 4;
    }
    memcpy(frames[i] + k, req, (size_t)n);
    k += (size_t)n;
    if (!ep_is_len(ep))
      frames[i][k++] = '\n';
    lens[i] = k;
    if (k > maxlen)
      maxlen = k;
  }
  for (size_t b = 0; b < maxlen; b++) {
    for (int i = 0; i < N; i++)
      if (b < lens[i])
        e2e_send_raw(cs[i], frames[i] + b, 1);
    if (b == maxlen / 2) {
      e2e_conn_t *f = e2e_connect(d, E2E_TCP_NL);
      e2e_send(f, REQ("math.add", "[2,2]", "0"));
      const char *p;
      size_t n;
      if (e2e_recv(f, &p, &n, 1000) != 1 || !e2e_is(p, n, RES("4", "0")))
        fail_msg("a fresh client was not served within 1 s while %d "
                 "clients trickled",
                 N);
      e2e_close(f);
    }
    e2e_sleep_ms(5);
  }
  for (int i = 0; i < N; i++) {
    char want[96];
    snprintf(want, sizeof(want), RES("%d", "%d"), 2 * i, i);
    e2e_expect(cs[i], want);
    e2e_close(cs[i]);
  }
}

/* ---- half-close ---- */

static void half_close(e2e_daemon_t *d) {
  for (e2e_ep_t ep = 0; ep < E2E_NEP; ep++) {
    /* Everything sent before the half-close is answered, a deferred call
     * included, and then the daemon closes. */
    e2e_conn_t *c = e2e_connect(d, ep);
    static const char *const reqs[] = {
        REQ("math.add", "[1,2]", "1"), NOTE("math.add", "[1,1]"),
        REQ("sleep.ms", "[50]", "2"), REQ("math.add", "[2,3]", "3")};
    for (size_t i = 0; i < 4; i++)
      e2e_queue(c, reqs[i], strlen(reqs[i]));
    e2e_flush(c);
    assert_int_equal(shutdown(c->fd, SHUT_WR), 0);
    int seen = 0;
    for (int i = 0; i < 3; i++) {
      size_t n;
      const char *p = reply(c, &n, "half-close");
      if (e2e_is(p, n, RES("3", "1")))
        seen |= 1;
      else if (e2e_is(p, n, RES("50", "2")))
        seen |= 2;
      else if (e2e_is(p, n, RES("5", "3")))
        seen |= 4;
      else
        fail_msg("%s: unexpected reply %s", e2e_ep_name(ep), p);
    }
    assert_int_equal(seen, 7);
    e2e_expect_eof(c, E2E_REPLY_MS, 0);
    e2e_close(c);

    /* Half-close in the middle of a frame: newline framing takes the
     * unterminated last line as a frame; length framing cannot, and just
     * closes. Nothing partial comes back either way. */
    c = e2e_connect(d, ep);
    static const char req[] = REQ("math.add", "[4,4]", "4");
    if (ep_is_len(ep)) {
      uint32_t len = htonl((uint32_t)sizeof(req) - 1);
      e2e_send_raw(c, &len, 4);
      e2e_send_raw(c, req, 10);
    } else {
      e2e_send_raw(c, req, sizeof(req) - 1);
    }
    assert_int_equal(shutdown(c->fd, SHUT_WR), 0);
    if (!ep_is_len(ep))
      e2e_expect(c, RES("8", "4"));
    e2e_expect_eof(c, E2E_REPLY_MS, 0);
    e2e_close(c);
  }
}

/* ---- deep nesting ---- */

/* open^depth + mid + close^depth, in e2e_calloc memory. */
static char *nest(const char *open, const char *mid, const char *close,
                  size_t depth, size_t *len) {
  size_t o = strlen(open), m = strlen(mid), c = strlen(close);
  size_t n = depth * (o + c) + m;
  char *p = e2e_calloc(n + 1, 1), *w = p;
  for (size_t i = 0; i < depth; i++, w += o)
    memcpy(w, open, o);
  memcpy(w, mid, m);
  w += m;
  for (size_t i = 0; i < depth; i++, w += c)
    memcpy(w, close, c);
  *len = n;
  return p;
}

static void deep_nesting(e2e_daemon_t *d) {
  for (e2e_ep_t ep = 0; ep < E2E_NEP; ep++) {
    e2e_conn_t *c = e2e_connect(d, ep);
    size_t n;
    /* 128 levels is the documented limit: an array that deep is a batch
     * whose one element is not a request; one level more is not JSON
     * jrpcd accepts. */
    char *a = nest("[", "", "]", 128, &n);
    e2e_send_frame(c, a, n);
    e2e_expect(c, "[" INVALID_NULL "]");
    e2e_free(a);
    a = nest("[", "", "]", 129, &n);
    e2e_send_frame(c, a, n);
    e2e_expect(c, PARSE_ERROR);
    e2e_free(a);
    a = nest("{\"a\":", "1", "}", 128, &n);
    e2e_send_frame(c, a, n);
    e2e_expect(c, INVALID_NULL);
    e2e_free(a);
    a = nest("{\"a\":", "1", "}", 129, &n);
    e2e_send_frame(c, a, n);
    e2e_expect(c, PARSE_ERROR);
    e2e_free(a);
    /* Params at the limit are served: the request object is level 1. */
    char *params = nest("[", "7", "]", 127, &n);
    char *req = e2e_calloc(n + 128, 1), *want = e2e_calloc(n + 128, 1);
    snprintf(req, n + 128, REQ("echo", "%s", "5"), params);
    snprintf(want, n + 128, RES("%s", "5"), params);
    e2e_send(c, req);
    e2e_expect(c, want);
    e2e_free(params);
    e2e_free(req);
    e2e_free(want);
    /* Nesting as deep as a frame allows, closed or not, in a string's
     * disguise or not: refused at the same small cost. */
    a = nest("[", "", "]", (MAX_FRAME - 2) / 2, &n);
    e2e_send_frame(c, a, n);
    e2e_expect(c, PARSE_ERROR);
    e2e_free(a);
    a = nest("[{\"\":", "", "", (MAX_FRAME - 1) / 6, &n);
    e2e_send_frame(c, a, n);
    e2e_expect(c, PARSE_ERROR);
    e2e_free(a);
    still_serves(c, 9);
    e2e_close(c);
  }
}

/* ---- length prefixes: zero, huge, at the limit ---- */

static void expect_too_large(e2e_conn_t *c, unsigned long long got) {
  char want[256];
  snprintf(
      want, sizeof(want),
      ERRD("-32001", "Frame too large", "{\"limit\":%u,\"got\":%llu}", "null"),
      MAX_FRAME, got);
  e2e_expect(c, want);
}

static void length_prefixes(e2e_daemon_t *d) {
  static const uint32_t huge[] = {0xffffffffu, 0x80000000u, MAX_FRAME + 1};
  for (e2e_ep_t ep = E2E_UNIX_LEN; ep <= E2E_TCP_LEN; ep += 2) {
    /* Zero-length payloads are empty JSON texts, the stream goes on. */
    e2e_conn_t *c = e2e_connect(d, ep);
    static const char zeros[16];
    e2e_send_raw(c, zeros, sizeof(zeros));
    for (int i = 0; i < 4; i++)
      e2e_expect(c, PARSE_ERROR);
    still_serves(c, 1);
    /* A payload of exactly max_frame_bytes is served. */
    size_t n = MAX_FRAME;
    char *big = e2e_calloc(n + 1, 1);
    int h = snprintf(big, n,
                     "{\"jsonrpc\":\"2.0\",\"id\":2,\"method\":"
                     "\"echo\",\"params\":[\"");
    memset(big + h, 'x', n - (size_t)h - 3);
    memcpy(big + n - 3, "\"]}", 3);
    e2e_send_frame(c, big, n);
    size_t rn;
    const char *p = reply(c, &rn, "frame at the limit");
    static const char head[] = "{\"jsonrpc\":\"2.0\",\"result\":[\"xxx";
    if (rn != n - (size_t)h + 35 || memcmp(p, head, sizeof(head) - 1))
      fail_msg("frame at the limit: a %zu-byte reply: %.80s", rn, p);
    e2e_free(big);
    e2e_close(c);
    /* A prefix over the limit is refused before any payload, then the
     * connection closes: whatever follows is never read as a frame. */
    for (size_t i = 0; i < sizeof(huge) / sizeof(huge[0]); i++) {
      c = e2e_connect(d, ep);
      /* One write: the daemon may close as soon as it has the prefix. */
      char buf[24];
      uint32_t be = htonl(huge[i]);
      memcpy(buf, &be, 4);
      memcpy(buf + 4, REQ("math.add", "[1,2]", "1"), 20);
      e2e_send_raw(c, buf, sizeof(buf));
      expect_too_large(c, huge[i]);
      e2e_expect_eof(c, E2E_REPLY_MS, 1);
      e2e_close(c);
    }
  }
  /* Newline framing: a line far over the limit is skipped as it comes. */
  for (e2e_ep_t ep = E2E_UNIX_NL; ep <= E2E_TCP_NL; ep += 2) {
    e2e_conn_t *c = e2e_connect(d, ep);
    size_t n = 3 * MAX_FRAME;
    char *big = e2e_calloc(n, 1);
    memset(big, '[', n);
    e2e_send_frame(c, big, n);
    expect_too_large(c, n);
    e2e_free(big);
    still_serves(c, 3);
    e2e_close(c);
  }
}

/* ---- invalid UTF-8 ---- */

static void invalid_utf8(e2e_daemon_t *d) {
  static const char *const bad[] = {
      "\xc0\xaf",         /* overlong '/' */
      "\xe0\x80\xaf",     /* overlong, 3 bytes */
      "\xf0\x80\x80\xaf", /* overlong, 4 bytes */
      "\xed\xa0\x80",     /* a UTF-16 surrogate */
      "\xed\xbf\xbf",     /* another */
      "\xf4\x90\x80\x80", /* past U+10FFFF */
      "\xf5\x80\x80\x80", /* no such lead byte */
      "\xff",
      "\xfe",
      "\x80",         /* lone continuation */
      "\xbf\xbf",     /* two of them */
      "\xc3",         /* truncated before the quote */
      "\xe2\x82",     /* truncated 3-byte sequence */
      "\xf0\x9f\x98", /* truncated 4-byte sequence */
      "\xc3\x28",     /* a lead byte followed by ASCII */
  };
  /* Where the bytes go: a string value, a key, the method name, the id. */
  static const char *const forms[] = {
      REQ("echo", "[\"a%sb\"]", "1"),
      "{\"jsonrpc\":\"2.0\",\"method\":\"echo\",\"params\":{\"%s\":1},"
      "\"id\":1}",
      REQ("ec%sho", "[]", "1"),
      REQ("echo", "[]", "\"%s\""),
  };
  char frame[256];
  for (e2e_ep_t ep = 0; ep < E2E_NEP; ep++) {
    e2e_conn_t *c = e2e_connect(d, ep);
    int sent = 0;
    for (size_t f = 0; f < sizeof(forms) / sizeof(forms[0]); f++)
      for (size_t b = 0; b < sizeof(bad) / sizeof(bad[0]); b++) {
        int n = snprintf(frame, sizeof(frame), forms[f], bad[b]);
        e2e_queue(c, frame, (size_t)n);
        sent++;
      }
    e2e_flush(c);
    for (int i = 0; i < sent; i++)
      e2e_expect(c, PARSE_ERROR);
      /* Valid multi-byte text around them is echoed byte for byte. */
#define VALID_UTF8 "\"\xc3\xa9\xe2\x82\xac\xf0\x9f\x98\x80\xf4\x8f\xbf\xbf\""
    e2e_send(c, REQ("echo", "[" VALID_UTF8 "]", "2"));
    e2e_expect(c, RES("[" VALID_UTF8 "]", "2"));
    e2e_close(c);
  }
}

/* ---- frames that never complete ---- */

#define FRAME_TIMEOUT_MS 400

/* A reply is the documented frame timeout: -32009 "Frame timeout", id
 * null, data {"timeout_ms":400,"got":G} with G the bytes of the frame the
 * daemon had, 1 to `sent`. */
static void check_frame_timeout(const char *p, size_t n, uint64_t sent,
                                const char *what) {
  tu_json_t *j = tu_json_parse(p, n);
  const tu_json_t *id = j ? tu_json_get(j, "id") : NULL;
  const tu_json_t *err = j ? tu_json_get(j, "error") : NULL;
  const tu_json_t *code = err ? tu_json_get(err, "code") : NULL;
  const tu_json_t *msg = err ? tu_json_get(err, "message") : NULL;
  const tu_json_t *data = err ? tu_json_get(err, "data") : NULL;
  const tu_json_t *tmo = data ? tu_json_get(data, "timeout_ms") : NULL;
  const tu_json_t *got = data ? tu_json_get(data, "got") : NULL;
  uint64_t g = got && got->type == TU_J_NUMBER ? strtoull(got->s, NULL, 10) : 0;
  int ok = j && tu_response_ok(j) && id->type == TU_J_NULL && code &&
           !strcmp(code->s, "-32009") && msg &&
           !strcmp(msg->s, "Frame timeout") && tmo && !strcmp(tmo->s, "400") &&
           data->nkids == 2 && g >= 1 && g <= sent;
  tu_json_free(j);
  if (!ok)
    fail_msg("%s: not the frame timeout for %llu bytes sent: %.300s", what,
             (unsigned long long)sent, p);
}

/* How the daemon's log names this client's end of c. */
static void peer_name(const e2e_conn_t *c, e2e_ep_t ep, char *out, size_t n) {
  if (ep == E2E_UNIX_NL || ep == E2E_UNIX_LEN) {
    snprintf(out, n, "pid %d ", (int)getpid());
    return;
  }
  struct sockaddr_in sa;
  socklen_t sl = sizeof(sa);
  assert_int_equal(getsockname(c->fd, (struct sockaddr *)&sa, &sl), 0);
  snprintf(out, n, "127.0.0.1:%u", ntohs(sa.sin_port));
}

static void test_frame_timeout(void **state) {
  e2e_daemon_t *d = *state;
  adv_base_t base;
  adv_start_with(d, "frame_timeout_ms", FRAME_TIMEOUT_MS, &base);
  static const char req[] = REQ("math.add", "[1,2]", "1");
  for (e2e_ep_t ep = 0; ep < E2E_NEP; ep++) {
    /* Part of a frame, then nothing: the error, then the close, and an
     * info line naming the peer. */
    e2e_conn_t *c = e2e_connect(d, ep);
    char peer[64];
    peer_name(c, ep, peer, sizeof(peer));
    uint64_t sent = 12;
    if (ep_is_len(ep)) {
      uint32_t len = htonl((uint32_t)sizeof(req) - 1);
      e2e_send_raw(c, &len, 4);
      sent += 4;
    }
    e2e_send_raw(c, req, 12);
    size_t n;
    const char *p = reply(c, &n, "a frame left half-sent");
    check_frame_timeout(p, n, sent, e2e_ep_name(ep));
    e2e_expect_eof(c, E2E_REPLY_MS, 1);
    e2e_close(c);
    if (!adv_log_has_line(d, "frame", peer))
      fail_msg("%s: no log line about the frame naming the peer (%s)",
               e2e_ep_name(ep), peer);

    /* A sender that keeps trickling still runs out of time: the clock
     * starts at the frame's first byte. Bounded at 60 bytes x 50 ms. */
    c = e2e_connect(d, ep);
    if (ep_is_len(ep)) {
      uint32_t len = htonl(100000);
      e2e_send_raw(c, &len, 4);
    } else {
      e2e_send_raw(c, "[", 1);
    }
    sent = ep_is_len(ep) ? 4 : 1;
    int r = -1;
    for (int i = 0; i < 60 && r < 0; i++) {
      /* Unchecked: the daemon may have closed already. */
      sent += send(c->fd, " ", 1, MSG_NOSIGNAL) == 1;
      r = e2e_recv(c, &p, &n, 50);
    }
    if (r != 1)
      fail_msg("%s: a trickled frame was not timed out", e2e_ep_name(ep));
    check_frame_timeout(p, n, sent, "a trickled frame");
    e2e_close(c);

    /* Between frames a connection is idle, not late: no timeout. A frame
     * completed within the limit, even slowly, is served. */
    c = e2e_connect(d, ep);
    e2e_sleep_ms(FRAME_TIMEOUT_MS + 200);
    if (ep_is_len(ep)) {
      uint32_t len = htonl((uint32_t)sizeof(req) - 1);
      e2e_send_raw(c, &len, 4);
    }
    for (size_t i = 0; i < sizeof(req) - 1; i += 8) {
      e2e_send_raw(c, req + i,
                   sizeof(req) - 1 - i < 8 ? sizeof(req) - 1 - i : 8);
      e2e_sleep_ms(10);
    }
    if (!ep_is_len(ep))
      e2e_send_raw(c, "\n", 1);
    e2e_expect(c, RES("3", "1"));
    e2e_close(c);
  }
  adv_check(d, &base, "frame timeout");
  e2e_stop(d);
}

/* ---- the scenarios that need no special config share one daemon ---- */

static void test_hostile_wire(void **state) {
  static const struct {
    void (*run)(e2e_daemon_t *);
    const char *name;
  } scenarios[] = {
      {garbage_and_resets, "garbage and resets mid-frame"},
      {slow_senders, "slow senders"},
      {half_close, "half-close"},
      {deep_nesting, "deep nesting"},
      {length_prefixes, "huge and zero length prefixes"},
      {invalid_utf8, "invalid UTF-8"},
  };
  e2e_daemon_t *d = *state;
  adv_base_t base;
  adv_start(d, NULL, &base);
  for (size_t i = 0; i < sizeof(scenarios) / sizeof(scenarios[0]); i++) {
    scenarios[i].run(d);
    adv_check(d, &base, scenarios[i].name);
  }
  e2e_stop(d);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test_setup_teardown(test_hostile_wire, adv_setup,
                                      adv_teardown),
      cmocka_unit_test_setup_teardown(test_frame_timeout, adv_setup,
                                      adv_teardown),
  };
  adv_filter_from_env();
  return cmocka_run_group_tests(tests, NULL, NULL);
}
