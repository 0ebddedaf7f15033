/* fuzz_http.c - the http and content-length framings (lib/http.c), driven
 * as the daemon drives them, with the math handlers behind.
 *
 * Input: one flags byte, then the byte stream.
 *   bit 0     framing: 0 http, 1 content-length
 *   bits 1-2  limits: max_frame_bytes / max_header_bytes of 1 MiB / 8 KiB,
 *             64 / 256, 300 / 64, 4096 / 1024
 *   bits 3-4  how the stream arrives: all at once, a byte at a time, in
 *             reads of 0..16 or of 1..5000 bytes (sizes drawn from a
 *             generator seeded with the input)
 *   bit 5     auth (tokens_file): the host lets "Bearer good" in, else 401
 *
 * Checked: the feed returns 0 or, once, JRPC__ECLOSE (then nothing more is
 * fed); the input buffer stays within head limit + body limit + a read;
 * an idle stream holds no buffer; the output is a sequence of whole
 * replies, each with a status of the documented set (http) and a
 * Content-Length equal to its body's length (204 and 100 without a body);
 * and the output is byte for byte the same whatever the read sizes (it is
 * compared with the one of the whole input in one read). */
#include <stdlib.h>
#include <string.h>

#include "dispatch.h"
#include "fuzz.h"
#include "http.h"
#include "stream.h"

static const struct {
  uint32_t frame, head;
} limits[4] = {{1048576u, 8192u}, {64u, 256u}, {300u, 64u}, {4096u, 1024u}};

static jrpc__engine_t *eng;

static int healthy(void *arg) {
  return 1;
}
static int metrics(void *arg, jrpc__outbuf_t *o) {
  return jrpc__out_put(o, "m 1\n", 4);
}
static int authorize(void *arg, jrpc__stream_t *s, const char *cred, size_t n,
                     const char **why) {
  if (cred && n == 11 && memcmp(cred, "Bearer good", 11) == 0)
    return 0;
  *why = "not good";
  return 401;
}
static const jrpc__http_host_t host = {healthy, metrics, authorize, NULL};

static int run(int framing, uint32_t head, int chunking, int auth,
               const char *in, size_t n, fz_rng_t *rng, fz_bytes_t *got) {
  size_t max_cap =
      2 * ((size_t)eng->lim.max_frame_bytes + head + 65536 + JRPC__PAD);
  jrpc__stream_t s;
  jrpc__http_t h;
  jrpc__stream_init(&s, eng, (jrpc__framing_t)framing);
  jrpc__http_init(&h, &s, head,
                  JRPC__HTTP_ROUTE_HEALTH | JRPC__HTTP_ROUTE_METRICS, &host,
                  NULL);
  jrpc__http_set_auth(&h, auth);
  size_t off = 0;
  int closed = 0;
  while (off < n) {
    size_t k = fz_read_into(&s, rng, chunking, in, n, &off);
    int rc = jrpc__http_feed(&s, k, 0);
    while (rc == 0 && s.more)
      rc = jrpc__http_feed(&s, 0, 0);
    fz_out_gather(&s.out, got);
    if (rc == JRPC__ECLOSE) {
      closed = 1;
      break;
    }
    FZ_CHECK(rc == 0, "http_feed returned %d", rc);
    FZ_CHECK(!s.held, "held without deferred calls");
    FZ_CHECK(s.rd <= s.wr && s.wr <= s.cap, "offsets rd %zu wr %zu cap %zu",
             s.rd, s.wr, s.cap);
    FZ_CHECK(s.cap <= max_cap, "input buffer of %zu bytes", s.cap);
    FZ_CHECK(s.buf || s.wr == s.rd, "bytes without a buffer");
    FZ_CHECK(s.wr > s.rd || !s.buf, "an idle stream keeps its buffer");
  }
  jrpc__http_free(&h);
  jrpc__stream_free(&s);
  return closed;
}

static size_t content_length(const char *head, size_t n) {
  const char *cl = memmem(head, n, "Content-Length:", 15);
  FZ_CHECK(cl, "a reply without Content-Length: %s", fz_show(head, n));
  return (size_t)strtoul(cl + 15, NULL, 10);
}

/* The output is whole replies, each as long as it says. */
static void check_replies(int framing, const fz_bytes_t *b) {
  static const char *const statuses[] = {"100", "200", "204", "400",
                                         "401", "403", "405", "408",
                                         "413", "415", "431", "503"};
  size_t i = 0;
  while (i < b->n) {
    const char *p = b->p + i;
    const char *end = memmem(p, b->n - i, "\r\n\r\n", 4);
    FZ_CHECK(end, "a reply head not ended: %s", fz_show(p, b->n - i));
    size_t hn = (size_t)(end - p) + 4;
    size_t body = 0;
    if (framing == JRPC_FRAMING_HTTP) {
      FZ_CHECK(hn > 12 && memcmp(p, "HTTP/1.1 ", 9) == 0,
               "not an HTTP/1.1 reply: %s", fz_show(p, hn));
      int known = 0;
      for (size_t k = 0; k < sizeof(statuses) / sizeof(statuses[0]); k++)
        known |= memcmp(p + 9, statuses[k], 3) == 0;
      FZ_CHECK(known, "status not of the documented set: %s", fz_show(p, hn));
      if (memcmp(p + 9, "204", 3) != 0 && memcmp(p + 9, "100", 3) != 0)
        body = content_length(p, hn);
    } else {
      FZ_CHECK(memcmp(p, "Content-Length: ", 16) == 0, "not a reply: %s",
               fz_show(p, hn));
      body = content_length(p, hn);
    }
    FZ_CHECK(b->n - i - hn >= body, "a body shorter than its Content-Length");
    i += hn + body;
  }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  if (!eng)
    eng = fz_engine("native");
  if (size < 1)
    return 0;
  int framing = (data[0] & 1) ? JRPC_FRAMING_CONTENT_LENGTH : JRPC_FRAMING_HTTP;
  int lim = (data[0] >> 1) & 3, chunking = (data[0] >> 3) & 3;
  int auth = framing == JRPC_FRAMING_HTTP && (data[0] >> 5) & 1;
  eng->lim.max_frame_bytes = limits[lim].frame;
  const char *in = (const char *)data + 1;
  size_t n = size - 1;
  fz_rng_t rng;
  fz_rng_seed(&rng, data, size, 0x487474);
  fz_bytes_t whole = {NULL, 0}, split = {NULL, 0};
  int c1 = run(framing, limits[lim].head, 0, auth, in, n, &rng, &whole);
  int c2 = run(framing, limits[lim].head, chunking, auth, in, n, &rng, &split);
  check_replies(framing, &whole);
  FZ_CHECK(c1 == c2 && whole.n == split.n &&
               (whole.n == 0 || memcmp(whole.p, split.p, whole.n) == 0),
           "the reads changed the output (closed %d/%d):\n%s\n---\n%s", c1, c2,
           fz_show(whole.p ? whole.p : "", whole.n),
           fz_show(split.p ? split.p : "", split.n));
  free(whole.p);
  free(split.p);
  return 0;
}
