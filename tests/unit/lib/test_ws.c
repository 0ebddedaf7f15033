/* test_ws.c - lib/ws.c and the upgrade to it in lib/http.c, in process:
 * the handshake's accept key (RFC 6455's own example) and SHA-1 (FIPS
 * 180's vectors), key checks, a stream switched from http by a handshake
 * with frames behind it in the same read (and byte by byte), masked
 * frames, fragments with a ping between them, each close code (1000 echoed,
 * 1002, 1007, 1008, 1009, 1001), reply headers of each size (2, 4 and 10
 * bytes), a deferred reply, the keepalive, the close of a stopping host
 * (1001), and the handshakes refused. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "dispatch.h"
#include "http.h"
#include "sha1.h"
#include "stream.h"
#include "testutil.h"
#include "ws.h"
#include "ws_mask.h"

#define MAX_FRAME 100000

static jrpc_call_t *stashed; /* the call "later" deferred */

static int later(jrpc_call_t *c, jrpc_val_t params, void *udata) {
  (void)params;
  (void)udata;
  stashed = jrpc_defer(c);
  return stashed ? JRPC_ASYNC : jrpc_error(c, JRPC_INTERNAL_ERROR, "no defer");
}

static void host_output(void *arg, jrpc__sink_t *sink) {
  (void)arg;
  (void)sink;
}
static const jrpc__host_t host = {.output = host_output};

/* The listener allows one origin. */
static const char *origin(void *arg, const char *o, size_t n) {
  (void)arg;
  static const char ok[] = "https://ok.example";
  if (n == sizeof(ok) - 1 && memcmp(o, ok, n) == 0)
    return "Access-Control-Allow-Origin: https://ok.example\r\n";
  return NULL;
}
static const jrpc__http_host_t http_host = {NULL, NULL, NULL, origin};

/* testutil's fixture (its echo among the standard handlers), "later",
 * and frames up to MAX_FRAME. */
static int setup(void **state) {
  tu_fixture *f = malloc(sizeof(*f));
  jrpc__limits_t lim = JRPC__LIMITS_DEFAULT;
  lim.max_frame_bytes = MAX_FRAME;
  tu_fixture_init(f, &lim);
  tu_fixture_add(f, "later", later, NULL);
  f->eng.host = &host;
  *state = f;
  stashed = NULL;
  return 0;
}
#define teardown tu_teardown

/* ---- bytes in and out ---- */

typedef struct buf {
  unsigned char b[1 << 18];
  size_t n;
} buf_t;

static void put(buf_t *b, const void *p, size_t n) {
  assert_true(b->n + n <= sizeof(b->b));
  memcpy(b->b + b->n, p, n);
  b->n += n;
}

/* A client frame: masked (with a fixed key) unless `unmasked`. */
static void frame(buf_t *b, int fin, int op, const void *p, size_t n,
                  int unmasked) {
  unsigned char h[14];
  size_t k = 0;
  h[k++] = (unsigned char)((fin ? 0x80 : 0) | op);
  unsigned char m = unmasked ? 0 : 0x80;
  if (n < 126) {
    h[k++] = (unsigned char)(m | n);
  } else if (n < 65536) {
    h[k++] = m | 126;
    h[k++] = (unsigned char)(n >> 8);
    h[k++] = (unsigned char)n;
  } else {
    h[k++] = m | 127;
    for (int i = 7; i >= 0; i--)
      h[k++] = (unsigned char)((uint64_t)n >> (8 * i));
  }
  static const unsigned char key[4] = {0x37, 0xfa, 0x21, 0x3d};
  if (!unmasked) {
    memcpy(h + k, key, 4);
    k += 4;
  }
  put(b, h, k);
  for (size_t i = 0; i < n; i++) {
    unsigned char c = ((const unsigned char *)p)[i];
    b->b[b->n++] = unmasked ? c : (unsigned char)(c ^ key[i % 4]);
  }
}
#define TEXT(b, s) frame(b, 1, 1, s, strlen(s), 0)

/* s as one text frame, or (cut > 0) as a text frame of its first cut
 * bytes and a final continuation of the rest. */
static void text_in_parts(buf_t *b, const char *s, size_t cut) {
  if (!cut) {
    TEXT(b, s);
    return;
  }
  frame(b, 0, 1, s, cut, 0);
  frame(b, 1, 0, s + cut, strlen(s) - cut, 0);
}

static const char HANDSHAKE[] =
    "GET /rpc HTTP/1.1\r\nHost: t\r\n"
    "Upgrade: websocket\r\nConnection: Upgrade\r\n"
    "Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\n"
    "Sec-WebSocket-Version: 13\r\n";

typedef struct conn {
  jrpc__stream_t s;
  buf_t out;
  int rc;
} conn_t;

static conn_t *conn_new(jrpc__engine_t *e, int websocket) {
  conn_t *c = calloc(1, sizeof(*c));
  jrpc__stream_init(&c->s, e, JRPC_FRAMING_HTTP);
  jrpc__framing_conf_t conf = {
      .max_head = 1024, .websocket = (uint8_t)websocket, .host = &http_host};
  assert_int_equal(c->s.fx->init(&c->s, &conf), 0);
  return c;
}

static void take_output(conn_t *c) {
  size_t n = jrpc__out_copy(&c->s.out, (char *)c->out.b + c->out.n,
                            sizeof(c->out.b) - c->out.n);
  c->out.n += n;
  jrpc__out_consume(&c->s.out, (size_t)jrpc__out_pending(&c->s.out));
}

/* Feeds in reads of at most `chunk` bytes, through the stream's row (as
 * the daemon does: the upgrade switches it). */
static void conn_send(conn_t *c, const void *in, size_t n, size_t chunk) {
  size_t off = 0;
  while (off < n && c->rc == 0) {
    size_t room;
    char *dst = jrpc__stream_rbuf(&c->s, &room);
    assert_non_null(dst);
    size_t k = n - off < room ? n - off : room;
    if (k > chunk)
      k = chunk;
    memcpy(dst, (const char *)in + off, k);
    off += k;
    c->rc = c->s.fx->feed(&c->s, k, 0);
    take_output(c);
  }
}

static void conn_free(conn_t *c) {
  if (c->s.fx->free)
    c->s.fx->free(&c->s);
  jrpc__stream_free(&c->s);
  free(c);
}

/* The handshake (with `extra` header lines), then `frames`. */
static conn_t *open_with(jrpc__engine_t *e, const char *extra,
                         const buf_t *frames, size_t chunk) {
  conn_t *c = conn_new(e, 1);
  buf_t *in = calloc(1, sizeof(*in));
  put(in, HANDSHAKE, sizeof(HANDSHAKE) - 1);
  put(in, extra, strlen(extra));
  put(in, "\r\n", 2);
  if (frames)
    put(in, frames->b, frames->n);
  conn_send(c, in->b, in->n, chunk);
  free(in);
  return c;
}

/* The server frames after the 101's head: opcode, payload, into arrays. */
typedef struct sframe {
  int op;
  size_t n;
  const unsigned char *p;
  int hdr; /* header bytes */
} sframe_t;

static size_t frames_of(const conn_t *c, sframe_t *f, size_t max) {
  const unsigned char *b = c->out.b, *end = b + c->out.n;
  const char *body = strstr((const char *)b, "\r\n\r\n");
  assert_non_null(body);
  b = (const unsigned char *)body + 4;
  size_t k = 0;
  while (b < end && k < max) {
    assert_true(end - b >= 2);
    assert_int_equal(b[0] & 0x70, 0); /* no RSV bits */
    assert_int_equal(b[1] & 0x80, 0); /* a server never masks */
    int op = b[0] & 0x0f;
    uint64_t n = b[1] & 0x7f;
    int hdr = 2;
    if (n == 126) {
      n = (uint64_t)b[2] << 8 | b[3];
      hdr = 4;
      assert_true(n >= 126); /* the shortest length form */
    } else if (n == 127) {
      n = 0;
      for (int i = 0; i < 8; i++)
        n = n << 8 | b[2 + i];
      hdr = 10;
      assert_true(n >= 65536);
    }
    assert_true((uint64_t)(end - b) >= hdr + n);
    f[k].op = op;
    f[k].n = (size_t)n;
    f[k].p = b + hdr;
    f[k].hdr = hdr;
    k++;
    b += hdr + n;
  }
  return k;
}

static int close_code(const sframe_t *f) {
  assert_int_equal(f->op, 8);
  assert_true(f->n >= 2);
  return f->p[0] << 8 | f->p[1];
}

#define CALL1                                                                  \
  "{\"jsonrpc\":\"2.0\",\"method\":\"echo\",\"params\":[1],\"id\":1}"
#define REPLY1 "{\"jsonrpc\":\"2.0\",\"result\":[1],\"id\":1}"

static void assert_text(const sframe_t *f, const char *want) {
  assert_int_equal(f->op, 1);
  assert_int_equal(f->n, strlen(want));
  assert_memory_equal(f->p, want, f->n);
}

/* ---- the tests ---- */

static void test_accept_key(void **state) {
  (void)state;
  char out[JRPC__WS_ACCEPT_LEN + 1] = {0};
  /* RFC 6455, 1.3 */
  jrpc__ws_accept("dGhlIHNhbXBsZSBub25jZQ==", 24, out);
  assert_string_equal(out, "s3pPLMBiTxaQ9kYGzzhZRbK+xOo=");
  /* FIPS 180-2's examples: one block, and two (the padding spills). */
  uint8_t d[JRPC__SHA1_LEN];
  static const uint8_t abc[] = {0xa9, 0x99, 0x3e, 0x36, 0x47, 0x06, 0x81,
                                0x6a, 0xba, 0x3e, 0x25, 0x71, 0x78, 0x50,
                                0xc2, 0x6c, 0x9c, 0xd0, 0xd8, 0x9d};
  jrpc__sha1_2("a", 1, "bc", 2, d);
  assert_memory_equal(d, abc, sizeof(abc));
  static const char two[] =
      "abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq";
  static const uint8_t two_d[] = {0x84, 0x98, 0x3e, 0x44, 0x1c, 0x3b, 0xd2,
                                  0x6e, 0xba, 0xae, 0x4a, 0xa1, 0xf9, 0x51,
                                  0x29, 0xe5, 0xe5, 0x46, 0x70, 0xf1};
  jrpc__sha1_2(two, sizeof(two) - 1, "", 0, d);
  assert_memory_equal(d, two_d, sizeof(two_d));
  char b64[8] = {0};
  assert_int_equal(jrpc__base64((const uint8_t *)"ab", 2, b64), 4);
  assert_string_equal(b64, "YWI=");
}

static void test_key_valid(void **state) {
  (void)state;
  assert_true(jrpc__ws_key_valid("dGhlIHNhbXBsZSBub25jZQ==", 24));
  assert_false(jrpc__ws_key_valid("dGhlIHNhbXBsZSBub25jZQ=", 23));
  assert_false(jrpc__ws_key_valid("dGhlIHNhbXBsZSBub25jZQ==x", 25));
  assert_false(jrpc__ws_key_valid("dGhlIHNhbXBsZSBub25jZ!==", 24));
  /* the last character's low bits are padding, zero */
  assert_false(jrpc__ws_key_valid("dGhlIHNhbXBsZSBub25jZR==", 24));
  assert_false(jrpc__ws_key_valid("", 0));
}

/* The handshake and two calls in one read, and byte by byte: the same. */
static void test_upgrade_then_frames(void **state) {
  tu_fixture *f = *state;
  buf_t *fr = calloc(1, sizeof(*fr));
  TEXT(fr, CALL1);
  frame(fr, 1, 2, "[" CALL1 "]", strlen(CALL1) + 2, 0); /* binary: a batch */
  conn_t *a = open_with(&f->eng, "", fr, 1 << 20);
  conn_t *b = open_with(&f->eng, "", fr, 1);
  assert_int_equal(a->rc, 0);
  assert_int_equal(b->rc, 0);
  assert_int_equal(a->out.n, b->out.n);
  assert_memory_equal(a->out.b, b->out.b, a->out.n);
  assert_ptr_equal(a->s.fx, &jrpc__framings[JRPC_FRAMING_WEBSOCKET]);
  assert_null(a->s.http);
  static const char head[] = "HTTP/1.1 101 Switching Protocols\r\n"
                             "Upgrade: websocket\r\nConnection: Upgrade\r\n"
                             "Sec-WebSocket-Accept: "
                             "s3pPLMBiTxaQ9kYGzzhZRbK+xOo=\r\n\r\n";
  assert_memory_equal(a->out.b, head, sizeof(head) - 1);
  sframe_t s[4];
  assert_int_equal(frames_of(a, s, 4), 2);
  assert_text(&s[0], REPLY1);
  assert_text(&s[1], "[" REPLY1 "]");
  assert_int_equal(s[0].hdr, 2);
  conn_free(a);
  conn_free(b);
  free(fr);
}

/* A reply of each header size: under 126, to 65535, and beyond. */
static void test_reply_sizes(void **state) {
  tu_fixture *f = *state;
  static const size_t sizes[] = {60, 300, 70000};
  for (size_t i = 0; i < 3; i++) {
    size_t n = sizes[i];
    char *call = malloc(n + 100);
    int k = sprintf(call, "{\"jsonrpc\":\"2.0\",\"method\":\"echo\","
                          "\"params\":[\"");
    memset(call + k, 'x', n);
    sprintf(call + k + n, "\"],\"id\":2}");
    buf_t *fr = calloc(1, sizeof(*fr));
    TEXT(fr, call);
    conn_t *c = open_with(&f->eng, "", fr, 1 << 20);
    sframe_t s[2];
    assert_int_equal(frames_of(c, s, 2), 1);
    assert_int_equal(s[0].op, 1);
    assert_int_equal(s[0].hdr, n < 100 ? 2 : n < 65000 ? 4 : 10);
    assert_int_equal(s[0].n, n + 38);
    assert_memory_equal(s[0].p + s[0].n - 9, "\"],\"id\":2}" + 1, 9);
    conn_free(c);
    free(fr);
    free(call);
  }
}

/* Fragments with a ping between them: the pong first, then the reply. */
static void test_fragments(void **state) {
  tu_fixture *f = *state;
  buf_t *fr = calloc(1, sizeof(*fr));
  frame(fr, 0, 1, CALL1, 10, 0);
  frame(fr, 1, 9, "hi", 2, 0);
  frame(fr, 0, 0, CALL1 + 10, 20, 0);
  frame(fr, 1, 0, CALL1 + 30, strlen(CALL1) - 30, 0);
  conn_t *c = open_with(&f->eng, "", fr, 7);
  assert_int_equal(c->rc, 0);
  sframe_t s[4];
  assert_int_equal(frames_of(c, s, 4), 2);
  assert_int_equal(s[0].op, 10);
  assert_int_equal(s[0].n, 2);
  assert_memory_equal(s[0].p, "hi", 2);
  assert_text(&s[1], REPLY1);
  conn_free(c);
  free(fr);
}

/* Frames that end the connection with a status, and nothing after. */
static void expect_close(jrpc__engine_t *e, const buf_t *fr, int code) {
  conn_t *c = open_with(e, "", fr, 1 << 20);
  assert_int_equal(c->rc, JRPC__ECLOSE);
  assert_true(c->s.closing);
  sframe_t s[4];
  size_t k = frames_of(c, s, 4);
  assert_true(k >= 1);
  assert_int_equal(close_code(&s[k - 1]), code);
  /* Later input is not read. */
  buf_t more = {.n = 0};
  TEXT(&more, CALL1);
  size_t before = c->out.n;
  c->rc = 0;
  conn_send(c, more.b, more.n, 1 << 20);
  assert_int_equal(c->out.n, before);
  conn_free(c);
}

static void test_close_codes(void **state) {
  tu_fixture *f = *state;
  buf_t *fr = calloc(1, sizeof(*fr));
  /* the close handshake: the client's status echoed */
  frame(fr, 1, 8, "\x03\xe8", 2, 0);
  expect_close(&f->eng, fr, 1000);
  /* unmasked */
  fr->n = 0;
  frame(fr, 1, 1, CALL1, strlen(CALL1), 1);
  expect_close(&f->eng, fr, 1002);
  /* not UTF-8, in a text message (in a binary one it is a parse error) */
  fr->n = 0;
  frame(fr, 1, 1, "\"\xff\"", 3, 0);
  expect_close(&f->eng, fr, 1007);
  /* over max_frame_bytes in fragments none of which is */
  fr->n = 0;
  char *half = malloc(MAX_FRAME / 2 + 10);
  memset(half, ' ', MAX_FRAME / 2 + 10);
  frame(fr, 0, 1, half, MAX_FRAME / 2 + 10, 0);
  frame(fr, 1, 0, half, MAX_FRAME / 2 + 10, 0);
  free(half);
  expect_close(&f->eng, fr, 1009);
  /* a continuation with nothing to continue */
  fr->n = 0;
  frame(fr, 1, 0, "x", 1, 0);
  expect_close(&f->eng, fr, 1002);
  /* refused by wslay's frame reader: a reserved opcode, a fragmented
   * control frame (fuzz_ws found the first closed without a status) */
  fr->n = 0;
  frame(fr, 1, 0xf, "x", 1, 0);
  expect_close(&f->eng, fr, 1002);
  fr->n = 0;
  frame(fr, 0, 9, "x", 1, 0);
  expect_close(&f->eng, fr, 1002);
  free(fr);
}

/* UTF-8 as RFC 3629 has it, in a text message: each good one echoed, each
 * bad one closed with 1007 (the fast path's own check, 8 ASCII bytes at a
 * time, and wslay's for a fragmented message). */
static void test_utf8(void **state) {
  tu_fixture *f = *state;
  static const char *const good[] = {"\xc3\xa9",         "\xe2\x82\xac",
                                     "\xef\xbf\xbf",     "\xf0\x9f\x98\x80",
                                     "\xf4\x8f\xbf\xbf", "abcdefgh\xc3\xa9"};
  static const char *const bad[] = {"\xc0\x80",         /* overlong */
                                    "\xe0\x80\xaf",     /* overlong */
                                    "\xed\xa0\x80",     /* a surrogate */
                                    "\xf4\x90\x80\x80", /* past U+10FFFF */
                                    "\xf5\x80\x80\x80", "\xc3",    "\xe2\x82",
                                    "abcdefgh\x80",     "\xc3\x28"};
  char call[128];
  for (size_t i = 0; i < sizeof(good) / sizeof(good[0]); i++) {
    snprintf(call, sizeof(call),
             "{\"jsonrpc\":\"2.0\",\"method\":\"echo\",\"params\":[\"%s\"],"
             "\"id\":1}",
             good[i]);
    for (int frag = 0; frag < 2; frag++) {
      buf_t fr = {.n = 0};
      text_in_parts(&fr, call, frag ? 3 : 0);
      conn_t *c = open_with(&f->eng, "", &fr, 1 << 20);
      sframe_t s[2];
      assert_int_equal(frames_of(c, s, 2), 1);
      assert_int_equal(s[0].op, 1);
      assert_non_null(memmem(s[0].p, s[0].n, good[i], strlen(good[i])));
      conn_free(c);
    }
  }
  for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
    snprintf(call, sizeof(call), "[\"%s\"]", bad[i]);
    for (int frag = 0; frag < 2; frag++) {
      buf_t fr = {.n = 0};
      text_in_parts(&fr, call, frag ? 2 : 0);
      expect_close(&f->eng, &fr, 1007);
    }
  }
}

static const char *const mask_kernels[] = {"swar", "sse2", "avx2"};
#define N_MASK_KERNELS (sizeof(mask_kernels) / sizeof(mask_kernels[0]))

/* Each unmasking kernel against a byte-at-a-time XOR, at every length up
 * to past two 64-byte steps: the bytes restored, none touched outside the
 * payload, and "all ASCII" false for a high bit at any one position (so
 * across each 8-, 16-, 32- and 64-byte step's edges). */
static void test_unmask_kernels(void **state) {
  (void)state;
  static const unsigned char key[4] = {0x9b, 0x05, 0xe3, 0x71};
  unsigned char want[200], got[200 + 16];
  for (size_t i = 0; i < sizeof(want); i++)
    want[i] = (unsigned char)(0x21 + (i * 37) % 94);
  for (size_t k = 0; k < N_MASK_KERNELS; k++) {
    if (jrpc__ws_mask_use(mask_kernels[k]) != 0) {
      printf("# this CPU has no %s: not tested\n", mask_kernels[k]);
      continue;
    }
    for (size_t n = 0; n <= 140; n++)
      for (size_t bad = 0; bad <= n; bad++) { /* bad == n: none */
        memset(got, 0xee, sizeof(got));
        for (size_t i = 0; i < n; i++)
          got[8 + i] =
              (unsigned char)((want[i] | (i == bad ? 0x80 : 0)) ^ key[i % 4]);
        int ascii = jrpc__ws_unmask(got + 8, n, key);
        assert_int_equal(ascii, bad == n);
        for (size_t i = 0; i < n; i++)
          assert_int_equal(got[8 + i], want[i] | (i == bad ? 0x80 : 0));
        for (size_t i = 0; i < 8; i++) {
          assert_int_equal(got[i], 0xee);
          assert_int_equal(got[8 + n + i], 0xee);
        }
      }
  }
  assert_int_equal(jrpc__ws_mask_use(NULL), 0);
}

/* A text message that is not UTF-8 at any one byte of 100 (a stray
 * continuation byte, a lead byte cut short by ASCII) closes with 1007, with
 * each kernel: the ASCII answer and the UTF-8 check agree at every edge. */
static void test_utf8_each_position(void **state) {
  tu_fixture *f = *state;
  static const char *const bad[] = {"\x80",
                                    "\xc3"
                                    "a",
                                    "\xe2\x82"
                                    "a"};
  char msg[100];
  for (size_t k = 0; k < N_MASK_KERNELS; k++) {
    if (jrpc__ws_mask_use(mask_kernels[k]) != 0)
      continue;
    for (size_t b = 0; b < sizeof(bad) / sizeof(bad[0]); b++)
      for (size_t pos = 0; pos + strlen(bad[b]) <= sizeof(msg); pos++) {
        memset(msg, 'a', sizeof(msg));
        memcpy(msg + pos, bad[b], strlen(bad[b]));
        buf_t fr = {.n = 0};
        frame(&fr, 1, 1, msg, sizeof(msg), 0);
        expect_close(&f->eng, &fr, 1007);
      }
  }
  assert_int_equal(jrpc__ws_mask_use(NULL), 0);
}

/* A connection past the handshake that was sent one frame and took it
 * without error. */
static conn_t *open_one(tu_fixture *f, int fin, int op, const char *p,
                        size_t n) {
  buf_t fr = {.n = 0};
  frame(&fr, fin, op, p, n, 0);
  conn_t *c = open_with(&f->eng, "", &fr, 1 << 20);
  assert_int_equal(c->rc, 0);
  return c;
}

static void test_binary_not_utf8(void **state) {
  tu_fixture *f = *state;
  conn_t *c = open_one(f, 1, 2, "\"\xff\"", 3);
  sframe_t s[2];
  assert_int_equal(frames_of(c, s, 2), 1);
  assert_int_equal(s[0].op, 1);
  assert_non_null(memmem(s[0].p, s[0].n, "-32700", 6));
  conn_free(c);
}

/* A stalled message: the frame clock sees it (kept), the timeout closes
 * with 1008. */
static void test_timeout(void **state) {
  tu_fixture *f = *state;
  conn_t *c = open_one(f, 0, 1, "[1,", 3);
  assert_true(jrpc__stream_partial(&c->s) > 0);
  assert_int_equal(c->s.fx->timeout(&c->s, 100, 3), JRPC__ECLOSE);
  take_output(c);
  sframe_t s[2];
  assert_int_equal(frames_of(c, s, 2), 1);
  assert_int_equal(close_code(&s[0]), 1008);
  conn_free(c);
  /* A whole message and a ping leave nothing partial. */
  buf_t fr = {.n = 0};
  TEXT(&fr, CALL1);
  frame(&fr, 1, 9, "", 0, 0);
  c = open_with(&f->eng, "", &fr, 1 << 20);
  assert_int_equal(jrpc__stream_partial(&c->s), 0);
  conn_free(c);
}

static void test_deferred(void **state) {
  tu_fixture *f = *state;
  buf_t fr = {.n = 0};
  TEXT(&fr, "{\"jsonrpc\":\"2.0\",\"method\":\"later\",\"id\":9}");
  TEXT(&fr, CALL1);
  conn_t *c = open_with(&f->eng, "", &fr, 1 << 20);
  assert_non_null(stashed);
  jrpc_w_u64(stashed, 5);
  jrpc_finish(stashed);
  take_output(c);
  sframe_t s[3];
  assert_int_equal(frames_of(c, s, 3), 2);
  assert_text(&s[0], REPLY1); /* as they finish: not in order */
  assert_text(&s[1], "{\"jsonrpc\":\"2.0\",\"result\":5,\"id\":9}");
  conn_free(c);
}

static void test_keepalive(void **state) {
  tu_fixture *f = *state;
  conn_t *c = open_with(&f->eng, "", NULL, 1 << 20);
  const jrpc__framing_ops_t *fx = c->s.fx;
  assert_int_equal(fx->keepalive(&c->s, 1000, 0), 0); /* off */
  assert_int_equal(fx->keepalive(&c->s, 1000, 500), 0);
  assert_int_equal(fx->keepalive(&c->s, 1400, 500), 0);
  assert_int_equal(fx->keepalive(&c->s, 1500, 500), 1);
  take_output(c);
  sframe_t s[3];
  assert_int_equal(frames_of(c, s, 3), 1);
  assert_int_equal(s[0].op, 9);
  /* answered: no close, and no ping again until quiet again */
  buf_t fr = {.n = 0};
  frame(&fr, 1, 10, "", 0, 0);
  conn_send(c, fr.b, fr.n, 1 << 20);
  assert_int_equal(fx->keepalive(&c->s, 1900, 500), 0);
  assert_int_equal(fx->keepalive(&c->s, 2300, 500), 0);
  assert_int_equal(fx->keepalive(&c->s, 2400, 500), 1);
  /* not answered: closed, 1001 */
  assert_int_equal(fx->keepalive(&c->s, 2800, 500), 0);
  assert_int_equal(fx->keepalive(&c->s, 2900, 500), JRPC__ECLOSE);
  take_output(c);
  assert_int_equal(frames_of(c, s, 3), 3);
  assert_int_equal(close_code(&s[2]), 1001);
  conn_free(c);
}

/* The host stopping: one close, 1001 with its reason, then nothing more
 * (a notification after it would break the protocol). */
static void test_goodbye(void **state) {
  tu_fixture *f = *state;
  conn_t *c = open_with(&f->eng, "", NULL, 1 << 20);
  const jrpc__framing_ops_t *fx = c->s.fx;
  assert_int_equal(fx->goodbye(&c->s), 1);
  assert_int_equal(fx->goodbye(&c->s), 0); /* said already */
  take_output(c);
  sframe_t s[2];
  assert_int_equal(frames_of(c, s, 2), 1);
  assert_int_equal(close_code(&s[0]), 1001);
  assert_int_equal(s[0].n, 2 + strlen("server stopping"));
  assert_memory_equal(s[0].p + 2, "server stopping", s[0].n - 2);
  conn_free(c);
}

/* The first line of the reply to a handshake with extra lines. */
static void expect_status(jrpc__engine_t *e, int websocket, const char *hs,
                          const char *line) {
  conn_t *c = conn_new(e, websocket);
  conn_send(c, hs, strlen(hs), 1 << 20);
  assert_true(c->out.n > strlen(line));
  assert_memory_equal(c->out.b, line, strlen(line));
  assert_ptr_equal(c->s.fx, &jrpc__framings[JRPC_FRAMING_HTTP]);
  conn_free(c);
}

static void test_refused(void **state) {
  tu_fixture *f = *state;
  char hs[1024];
  snprintf(hs, sizeof(hs), "%s\r\n", HANDSHAKE);
  expect_status(&f->eng, 0, hs, "HTTP/1.1 400 Bad Request\r\n");
  snprintf(hs, sizeof(hs), "%sOrigin: https://evil.example\r\n\r\n", HANDSHAKE);
  expect_status(&f->eng, 1, hs, "HTTP/1.1 403 Forbidden\r\n");
  /* Another version; a key that is not 16 bytes; no Connection: upgrade;
   * HTTP/1.0. */
  static const struct {
    const char *req, *status;
  } bad[] = {
      {"GET / HTTP/1.1\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"
       "Sec-WebSocket-Version: 12\r\nSec-WebSocket-Key: "
       "dGhlIHNhbXBsZSBub25jZQ==\r\n\r\n",
       "HTTP/1.1 426 Upgrade Required\r\n"},
      {"GET / HTTP/1.1\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"
       "Sec-WebSocket-Version: 13\r\nSec-WebSocket-Key: abc\r\n\r\n",
       "HTTP/1.1 400 Bad Request\r\n"},
      {"GET / HTTP/1.1\r\nUpgrade: websocket\r\n"
       "Sec-WebSocket-Version: 13\r\nSec-WebSocket-Key: "
       "dGhlIHNhbXBsZSBub25jZQ==\r\n\r\n",
       "HTTP/1.1 400 Bad Request\r\n"},
      {"GET / HTTP/1.0\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"
       "Sec-WebSocket-Version: 13\r\nSec-WebSocket-Key: "
       "dGhlIHNhbXBsZSBub25jZQ==\r\n\r\n",
       "HTTP/1.1 400 Bad Request\r\n"},
  };
  for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
    expect_status(&f->eng, 1, bad[i].req, bad[i].status);
  /* A listed origin: 101, with its line. */
  conn_t *c = open_with(&f->eng, "Origin: https://ok.example\r\n", NULL, 64);
  assert_non_null(memmem(c->out.b, c->out.n,
                         "\r\nAccess-Control-Allow-Origin: "
                         "https://ok.example\r\n\r\n",
                         52));
  assert_ptr_equal(c->s.fx, &jrpc__framings[JRPC_FRAMING_WEBSOCKET]);
  conn_free(c);
}

/* CORS on the http framing: preflight and POST by origin. */
static void test_cors(void **state) {
  tu_fixture *f = *state;
  expect_status(&f->eng, 0,
                "OPTIONS / HTTP/1.1\r\nOrigin: https://ok.example\r\n"
                "Access-Control-Request-Method: POST\r\n\r\n",
                "HTTP/1.1 204 No Content\r\n");
  expect_status(&f->eng, 0,
                "OPTIONS / HTTP/1.1\r\nOrigin: https://evil.example\r\n"
                "Access-Control-Request-Method: POST\r\n\r\n",
                "HTTP/1.1 403 Forbidden\r\n");
  char req[512];
  snprintf(req, sizeof(req),
           "POST / HTTP/1.1\r\nOrigin: https://evil.example\r\n"
           "Content-Type: application/json\r\nContent-Length: %zu\r\n\r\n%s",
           strlen(CALL1), CALL1);
  expect_status(&f->eng, 0, req, "HTTP/1.1 403 Forbidden\r\n");
  snprintf(req, sizeof(req),
           "POST / HTTP/1.1\r\nOrigin: https://ok.example\r\n"
           "Content-Type: application/json\r\nContent-Length: %zu\r\n\r\n%s",
           strlen(CALL1), CALL1);
  conn_t *c = conn_new(&f->eng, 0);
  conn_send(c, req, strlen(req), 1 << 20);
  assert_memory_equal(c->out.b, "HTTP/1.1 200 OK\r\n", 17);
  assert_non_null(memmem(c->out.b, c->out.n,
                         "Access-Control-Allow-Origin: https://ok.example",
                         47));
  assert_non_null(memmem(c->out.b, c->out.n, REPLY1, strlen(REPLY1)));
  conn_free(c);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_accept_key),
      cmocka_unit_test(test_key_valid),
      cmocka_unit_test_setup_teardown(test_upgrade_then_frames, setup,
                                      teardown),
      cmocka_unit_test_setup_teardown(test_reply_sizes, setup, teardown),
      cmocka_unit_test_setup_teardown(test_fragments, setup, teardown),
      cmocka_unit_test_setup_teardown(test_close_codes, setup, teardown),
      cmocka_unit_test_setup_teardown(test_utf8, setup, teardown),
      cmocka_unit_test(test_unmask_kernels),
      cmocka_unit_test_setup_teardown(test_utf8_each_position, setup, teardown),
      cmocka_unit_test_setup_teardown(test_binary_not_utf8, setup, teardown),
      cmocka_unit_test_setup_teardown(test_timeout, setup, teardown),
      cmocka_unit_test_setup_teardown(test_deferred, setup, teardown),
      cmocka_unit_test_setup_teardown(test_keepalive, setup, teardown),
      cmocka_unit_test_setup_teardown(test_goodbye, setup, teardown),
      cmocka_unit_test_setup_teardown(test_refused, setup, teardown),
      cmocka_unit_test_setup_teardown(test_cors, setup, teardown),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
