/* fuzz_request.c - the whole request path of one connection: a
 * jrpc__stream_t (input buffer, frame decoder, parser backend, JSON-RPC
 * rules, dispatch, handlers, writer, reply framing) on one backend.
 *
 * The backend is FUZZ_BACKEND (a compile definition: fuzz_request_jsmn is
 * this file built with FUZZ_BACKEND="jsmn"), or the environment variable
 * JRPC_FUZZ_BACKEND when set.
 *
 * Input: one flags byte, then the bytes a client sends.
 *   bit 0     framing: 0 newline, 1 length
 *   bits 1-2  reads: as much as fits, a byte at a time, 0..16 or 1..5000
 *             bytes (drawn from a generator seeded with the input)
 *   bits 3-4  limits: default; max_frame_bytes 64; max_batch 2 and
 *             max_response_bytes 64; all three small (300, 3, 200)
 *
 * Handlers: the math module (handlers/math, compiled in) and the fuzz
 * handlers of fuzz_common.c (echo, walk, vm, fail, fail_data, huge, defer).
 *
 * Checked:
 *  - the stream returns 0, or JRPC__ECLOSE with length framing only;
 *    its input buffer stays bounded by max_frame_bytes and is released
 *    when nothing is buffered;
 *  - the output is well framed and every reply is valid JSON (the strict
 *    reader of tests/testutil) and a well-formed response or batch of them;
 *  - it is byte for byte what the frames give when dispatched one by one
 *    from exact-size copies (padding hostile), as split by the reference
 *    splitter: replies do not depend on how the input was read;
 *  - per frame, the oracle: a frame that is not JSON (or nests deeper than
 *    128) gets exactly -32700 with id null, any other never gets -32700;
 *    only valid JSON may go unanswered; only a batch gets an array. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common.h"
#include "fuzz.h"
#include "parser.h"
#include "stream.h"

#ifndef FUZZ_BACKEND
#define FUZZ_BACKEND "jsmn"
#endif

static const jrpc__limits_t presets[4] = {
    {1048576u, 1000u, 16777216u},
    {64u, 1000u, 16777216u},
    {1048576u, 2u, 64u},
    {300u, 3u, 200u},
};

static jrpc__engine_t *eng;

static void setup(void) {
  const char *name = getenv("JRPC_FUZZ_BACKEND");
  eng = fz_engine(name && *name ? name : FUZZ_BACKEND);
}

typedef struct bytes {
  char *p;
  size_t n, cap;
} bytes_t;

static void append(bytes_t *b, const char *s, size_t n) {
  if (b->n + n + 1 > b->cap) {
    while (b->n + n + 1 > b->cap)
      b->cap = b->cap ? 2 * b->cap : 4096;
    b->p = realloc(b->p, b->cap);
    FZ_CHECK(b->p, "out of memory");
  }
  memcpy(b->p + b->n, s, n);
  b->n += n;
}

static void drain(jrpc__outbuf_t *o, bytes_t *b) {
  size_t n;
  char *s = fz_out_take(o, &n);
  append(b, s, n);
  free(s);
}

/* The stream as the daemon drives it. */
static void run_stream(int framing, int chunking, const char *in, size_t n,
                       fz_rng_t *rng, bytes_t *got) {
  const jrpc__limits_t *lim = &eng->lim;
  size_t max_cap = 2 * ((size_t)lim->max_frame_bytes + 4 + 4096 + JRPC__PAD);
  if (max_cap < JRPC__READ_MIN)
    max_cap = JRPC__READ_MIN;
  jrpc__stream_t s;
  jrpc__stream_init(&s, eng, (jrpc__framing_t)framing);
  size_t off = 0;
  for (;;) {
    size_t k = fz_read_into(&s, rng, chunking, in, n, &off);
    int eof = off == n;
    int rc = jrpc__stream_feed(&s, k, eof);
    drain(&s.out, got);
    if (rc == JRPC__ECLOSE) {
      FZ_CHECK(framing == JRPC_FRAMING_LENGTH,
               "newline framing closed the stream");
      break;
    }
    FZ_CHECK(rc == 0, "stream_feed returned %d", rc);
    FZ_CHECK(s.rd <= s.wr && s.wr <= s.cap,
             "stream offsets rd %zu wr %zu "
             "cap %zu",
             s.rd, s.wr, s.cap);
    FZ_CHECK(jrpc__stream_partial(&s) <= (size_t)lim->max_frame_bytes + 4,
             "%zu bytes buffered, max_frame_bytes %u", jrpc__stream_partial(&s),
             lim->max_frame_bytes);
    FZ_CHECK(s.cap <= max_cap, "input buffer of %zu bytes, max_frame_bytes %u",
             s.cap, lim->max_frame_bytes);
    FZ_CHECK(s.buf || jrpc__stream_partial(&s) == 0, "bytes without a buffer");
    FZ_CHECK(jrpc__stream_partial(&s) || !s.buf,
             "an idle stream keeps its input buffer");
    if (eof)
      break;
  }
  jrpc__stream_free(&s);
}

/* The same frames, cut by the reference splitter and dispatched one by
 * one from exact-size copies; each reply is checked against the oracle. */
static void run_reference(int framing, const char *in, size_t n,
                          bytes_t *want) {
  static const char hostile[] = "\"\\]}\",:[{1e";
  fz_events_t ref;
  fz_ref_frames(framing, eng->lim.max_frame_bytes, in, n, &ref);
  jrpc__outbuf_t o;
  jrpc__sink_t sink;
  jrpc__out_init(&o, &eng->pool);
  jrpc__sink_init(&sink, &o, (jrpc__framing_t)framing);
  for (size_t i = 0; i < ref.n; i++) {
    const fz_event_t *e = &ref.ev[i];
    int rc;
    char *copy = NULL;
    if (e->kind == FZ_EV_FRAME) {
      copy = malloc(e->n + JRPC__PAD);
      FZ_CHECK(copy, "out of memory");
      memcpy(copy, in + e->off, e->n);
      for (size_t k = 0; k < JRPC__PAD; k++)
        copy[e->n + k] = hostile[k % (sizeof hostile - 1)];
      rc = jrpc__dispatch_frame(eng, &sink, copy, e->n, NULL);
      jrpc__arena_reset(&eng->arena);
    } else {
      rc = jrpc__dispatch_too_large(eng, (jrpc__framing_t)framing, &o, e->got);
    }
    FZ_CHECK(rc == 0, "dispatch returned %d", rc);
    size_t rn;
    char *r = fz_out_take(&o, &rn);
    const char **fp;
    size_t *fn;
    size_t nf = fz_unframe(framing, r, rn, &fp, &fn);
    FZ_CHECK(nf <= 1, "%zu reply frames for one frame", nf);
    if (e->kind == FZ_EV_FRAME) {
      fz_check_answer(copy, e->n, nf ? fp[0] : NULL, nf ? fn[0] : 0);
    } else {
      fz_reply_t rep;
      FZ_CHECK(nf == 1, "no reply to an oversized frame");
      fz_check_reply(fp[0], fn[0], &rep);
      FZ_CHECK(!rep.batch && rep.code == JRPC_FRAME_TOO_LARGE && rep.id_null,
               "oversized frame answered %d", rep.code);
    }
    append(want, r, rn);
    free(fp);
    free(fn);
    free(r);
    free(copy);
  }
  jrpc__sink_detach(&sink);
  jrpc__out_free(&o);
  fz_events_free(&ref);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  if (!eng)
    setup();
  if (size < 1)
    return 0;
  int framing = data[0] & 1 ? JRPC_FRAMING_LENGTH : JRPC_FRAMING_NEWLINE;
  int chunking = (data[0] >> 1) & 3;
  eng->lim = presets[(data[0] >> 3) & 3];
  const char *in = (const char *)data + 1;
  size_t n = size - 1;
  fz_rng_t rng;
  fz_rng_seed(&rng, data, size, 2);

  bytes_t got = {0}, want = {0};
  run_stream(framing, chunking, in, n, &rng, &got);
  run_reference(framing, in, n, &want);

  /* Every frame of the stream's output was checked above, as part of the
   * reference output it must equal. */
  if (got.n != want.n || (got.n && memcmp(got.p, want.p, got.n) != 0)) {
    size_t i = 0;
    while (i < got.n && i < want.n && got.p[i] == want.p[i])
      i++;
    size_t from = i > 40 ? i - 40 : 0;
    fprintf(stderr, "stream output (%zu bytes) from %zu: %s\n", got.n, from,
            fz_show(got.p + from, got.n - from));
    fz_fail("frames one by one give %zu bytes, differing at %zu: %s", want.n, i,
            fz_show(want.p + from, want.n - from));
  }
  free(got.p);
  free(want.p);
  return 0;
}
