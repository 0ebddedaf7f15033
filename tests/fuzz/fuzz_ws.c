/* fuzz_ws.c - the websocket handshake (lib/http.c) and framing (lib/ws.c),
 * driven as the daemon drives them, with the math handlers behind.
 *
 * Input: one flags byte, then the byte stream.
 *   bits 0-1  max_frame_bytes: 1 MiB, 64, 300, 4096
 *   bits 2-3  how the stream arrives: all at once, a byte at a time, in
 *             reads of 0..16 or of 1..5000 bytes (fuzz_common.c)
 *   bit 4     a good handshake is put before the stream (so that the
 *             fuzzer spends its time on frames); else the stream is all
 *   bit 5     the keepalive ticks between reads (ping_ms 1, a clock that
 *             moves 1 ms a read)
 *
 * Checked: the feed returns 0 or, once, JRPC__ECLOSE (then nothing more is
 * fed), never JRPC_ENOMEM; the input buffer stays within the frame limit
 * and a read; the output is HTTP replies (each as long as its
 * Content-Length says) until a 101, and after it server frames only: FIN
 * set, no RSV bit, unmasked, opcode text, close, ping or pong, the
 * shortest length form, nothing after a close, a close's status one of
 * those documented; and the output is byte for byte the same whatever the
 * read sizes. */
#include <stdlib.h>
#include <string.h>

#include "dispatch.h"
#include "fuzz.h"
#include "http.h"
#include "stream.h"

static const uint32_t limits[4] = {1048576u, 64u, 300u, 4096u};

static jrpc__engine_t *eng;

static const char *origin(void *arg, const char *o, size_t n) {
  (void)arg;
  if (n == 18 && memcmp(o, "https://ok.example", 18) == 0)
    return "Access-Control-Allow-Origin: https://ok.example\r\n";
  return NULL;
}
static const jrpc__http_host_t host = {NULL, NULL, NULL, origin};

static const char handshake[] =
    "GET / HTTP/1.1\r\nUpgrade: websocket\r\n"
    "Connection: Upgrade\r\n"
    "Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\n"
    "Sec-WebSocket-Version: 13\r\n\r\n";

static int run(int chunking, int ticks, const char *in, size_t n, fz_rng_t *rng,
               fz_bytes_t *got) {
  size_t max_cap =
      2 * ((size_t)eng->lim.max_frame_bytes + 8192 + 65536 + JRPC__PAD);
  jrpc__stream_t s;
  jrpc__stream_init(&s, eng, JRPC_FRAMING_HTTP);
  jrpc__framing_conf_t conf = {.max_head = 8192, .websocket = 1, .host = &host};
  FZ_CHECK(s.fx->init(&s, &conf) == 0, "no memory for the http state");
  size_t off = 0;
  int closed = 0;
  uint64_t now = 1;
  while (off < n) {
    size_t k = fz_read_into(&s, rng, chunking, in, n, &off);
    int rc = s.fx->feed(&s, k, 0);
    while (rc == 0 && s.more)
      rc = s.fx->feed(&s, 0, 0);
    if (rc == 0 && ticks && s.fx->keepalive) {
      rc = s.fx->keepalive(&s, now++, 1);
      rc = rc == 1 ? 0 : rc;
    }
    fz_out_gather(&s.out, got);
    if (rc == JRPC__ECLOSE) {
      closed = 1;
      break;
    }
    FZ_CHECK(rc == 0, "feed returned %d", rc);
    FZ_CHECK(s.rd <= s.wr && s.wr <= s.cap, "offsets rd %zu wr %zu cap %zu",
             s.rd, s.wr, s.cap);
    FZ_CHECK(s.cap <= max_cap, "input buffer of %zu bytes", s.cap);
    FZ_CHECK(s.buf || s.wr == s.rd, "bytes without a buffer");
  }
  if (s.fx->free)
    s.fx->free(&s);
  jrpc__stream_free(&s);
  return closed;
}

/* Server frames from p to end, well formed. */
static void check_frames(const unsigned char *p, const unsigned char *end) {
  int closed = 0;
  while (p < end) {
    FZ_CHECK(!closed, "a frame after a close");
    FZ_CHECK(end - p >= 2, "a frame header cut short");
    FZ_CHECK((p[0] & 0xf0) == 0x80, "FIN clear or an RSV bit: %02x", p[0]);
    FZ_CHECK(!(p[1] & 0x80), "a masked server frame");
    int op = p[0] & 0x0f;
    FZ_CHECK(op == 1 || op == 8 || op == 9 || op == 10, "opcode %d", op);
    uint64_t len = p[1] & 0x7f;
    size_t hdr = 2;
    if (len == 126) {
      FZ_CHECK(end - p >= 4, "a header cut short");
      len = (uint64_t)p[2] << 8 | p[3];
      hdr = 4;
      FZ_CHECK(len >= 126, "a 16-bit length of %llu", (unsigned long long)len);
    } else if (len == 127) {
      FZ_CHECK(end - p >= 10, "a header cut short");
      len = 0;
      for (int i = 0; i < 8; i++)
        len = len << 8 | p[2 + i];
      hdr = 10;
      FZ_CHECK(len >= 65536, "a 64-bit length of %llu",
               (unsigned long long)len);
    }
    FZ_CHECK((uint64_t)(end - p) - hdr >= len, "a payload cut short");
    if (op == 8 && len) {
      /* No status is allowed (RFC 6455, 5.5.1: wslay echoes a client's
       * empty close, and answers a malformed one so); one byte is not. */
      FZ_CHECK(len >= 2, "a close with a one-byte body");
      int code = p[hdr] << 8 | p[hdr + 1];
      FZ_CHECK(code == 1000 || code == 1001 || code == 1002 || code == 1003 ||
                   code == 1007 || code == 1008 || code == 1009 ||
                   code == 1010 || code == 1011 ||
                   (code >= 3000 && code <= 4999),
               "close status %d", code);
    }
    closed |= op == 8;
    p += hdr + len;
  }
}

/* HTTP replies until a 101, then frames. */
static void check_output(const fz_bytes_t *b) {
  if (!b->n)
    return;
  const unsigned char *p = (const unsigned char *)b->p;
  const unsigned char *end = p + b->n;
  while (p < end) {
    const char *e = memmem(p, (size_t)(end - p), "\r\n\r\n", 4);
    FZ_CHECK(e, "a reply head not ended: %s",
             fz_show((const char *)p, (size_t)(end - p)));
    size_t hn = (size_t)(e - (const char *)p) + 4;
    FZ_CHECK(hn > 12 && memcmp(p, "HTTP/1.1 ", 9) == 0,
             "not an HTTP/1.1 reply: %s", fz_show((const char *)p, hn));
    if (memcmp(p + 9, "101", 3) == 0) {
      check_frames(p + hn, end);
      return;
    }
    size_t body = 0;
    if (memcmp(p + 9, "204", 3) != 0 && memcmp(p + 9, "100", 3) != 0) {
      const char *cl = memmem(p, hn, "Content-Length:", 15);
      FZ_CHECK(cl, "no Content-Length: %s", fz_show((const char *)p, hn));
      body = (size_t)strtoul(cl + 15, NULL, 10);
    }
    FZ_CHECK((size_t)(end - p) - hn >= body, "a body cut short");
    p += hn + body;
  }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  if (!eng)
    eng = fz_engine("native");
  if (size < 1)
    return 0;
  int chunking = (data[0] >> 2) & 3, ticks = (data[0] >> 5) & 1;
  eng->lim.max_frame_bytes = limits[data[0] & 3];
  size_t n = size - 1;
  char *in = malloc(sizeof(handshake) + n);
  FZ_CHECK(in, "out of memory");
  size_t pre = (data[0] >> 4) & 1 ? sizeof(handshake) - 1 : 0;
  memcpy(in, handshake, pre);
  memcpy(in + pre, data + 1, n);
  n += pre;
  fz_rng_t rng;
  fz_rng_seed(&rng, data, size, 0x7773);
  fz_bytes_t whole = {NULL, 0}, split = {NULL, 0};
  int c1 = run(0, ticks, in, n, &rng, &whole);
  check_output(&whole);
  /* Ticks come per read: with them the output depends on the reads. */
  if (!ticks) {
    int c2 = run(chunking, 0, in, n, &rng, &split);
    FZ_CHECK(c1 == c2 && whole.n == split.n &&
                 (whole.n == 0 || memcmp(whole.p, split.p, whole.n) == 0),
             "the reads changed the output (closed %d/%d):\n%s\n---\n%s", c1,
             c2, fz_show(whole.p ? whole.p : "", whole.n),
             fz_show(split.p ? split.p : "", split.n));
  }
  free(whole.p);
  free(split.p);
  free(in);
  return 0;
}
