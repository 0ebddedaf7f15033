/* fuzz_frame.c - the newline and length frame decoders (lib/frame.c).
 *
 * Input: one flags byte, then the byte stream.
 *   bit 0     framing: 0 newline, 1 length
 *   bits 1-3  max_frame_bytes: 0, 1, 2, 7, 64, 300, 65536, UINT32_MAX
 *   bits 4-5  how the stream arrives: all at once, a byte at a time, in
 *             reads of 0..16 or of 0..600 bytes (sizes drawn from a
 *             generator seeded with the input; 0 = a read of nothing)
 *
 * The decoder is driven the way jrpc__stream_t drives it (call until MORE,
 * drop `consumed`, append the next read), each time on an exact-size copy
 * of the buffered bytes so that AddressSanitizer sees any read past them.
 * Checked: consumed <= available; every frame lies inside the buffer and
 * inside what it consumes; no frame exceeds max; TOO_LARGE only above max,
 * fatal only with length framing; `need` is 0 or more than is buffered and
 * at most max + 4; a second call with nothing new returns MORE and
 * consumes nothing; and the sequence of frames is exactly the one of a
 * reference splitter (fuzz_common.c) written from frame.h's description,
 * whatever the read sizes. Finally every frame is encoded again with
 * jrpc__frame_begin/_end and the encoding must decode to the same frames. */
#include <stdlib.h>
#include <string.h>

#include "bufpool.h"
#include "frame.h"
#include "fuzz.h"
#include "outbuf.h"

static const uint32_t maxes[8] = {0, 1, 2, 7, 64, 300, 65536, UINT32_MAX};

static void check_event(const fz_events_t *ref, size_t k, int r,
                        const jrpc__frame_t *fr, const char *buf,
                        size_t buf_off, const char *in) {
  FZ_CHECK(k < ref->n, "decoder found more frames than the reference (%zu)",
           ref->n);
  const fz_event_t *e = &ref->ev[k];
  if (r == JRPC__FRAME_OK) {
    FZ_CHECK(e->kind == FZ_EV_FRAME, "event %zu: decoder frame, reference %d",
             k, e->kind);
    size_t at = buf_off + (size_t)(fr->p - buf);
    FZ_CHECK(at == e->off && fr->n == e->n &&
                 memcmp(fr->p, in + e->off, e->n) == 0,
             "event %zu: frame at %zu+%zu, reference at %zu+%zu", k, at, fr->n,
             e->off, e->n);
  } else {
    FZ_CHECK(e->kind == FZ_EV_TOO_LARGE && e->got == fr->got &&
                 e->fatal == fr->fatal,
             "event %zu: too large (got %llu fatal %d), reference kind %d got "
             "%llu fatal %d",
             k, (unsigned long long)fr->got, fr->fatal, e->kind,
             (unsigned long long)e->got, e->fatal);
  }
}

/* Encodes the reference frames again and decodes the result. */
static void roundtrip(int kind, const char *in, const fz_events_t *ref) {
  jrpc__bufpool_t pool;
  jrpc__outbuf_t o;
  jrpc__bufpool_init(&pool, 1 << 20);
  jrpc__out_init(&o, &pool);
  size_t *want = malloc((ref->n + 1) * sizeof *want), nwant = 0;
  FZ_CHECK(want, "out of memory");
  for (size_t i = 0; i < ref->n; i++) {
    const fz_event_t *e = &ref->ev[i];
    if (e->kind != FZ_EV_FRAME)
      continue;
    /* Not representable: an empty length frame (end() drops an empty
     * reply), a newline payload ending in '\r' (the decoder drops it). */
    if (e->n == 0 ||
        (kind == JRPC_FRAMING_NEWLINE && in[e->off + e->n - 1] == '\r'))
      continue;
    jrpc__frame_enc_t enc;
    FZ_CHECK(jrpc__frame_begin(kind, &o, &enc) == 0, "frame_begin");
    FZ_CHECK(jrpc__out_put(&o, in + e->off, e->n) == 0, "out_put");
    FZ_CHECK(jrpc__frame_end(kind, &o, &enc) == 0, "frame_end");
    want[nwant++] = i;
    /* An empty reply leaves no trace. */
    uint64_t before = jrpc__out_pos(&o);
    FZ_CHECK(jrpc__frame_begin(kind, &o, &enc) == 0, "frame_begin");
    FZ_CHECK(jrpc__frame_end(kind, &o, &enc) == 0, "frame_end");
    FZ_CHECK(jrpc__out_pos(&o) == before, "an empty reply left %llu bytes",
             (unsigned long long)(jrpc__out_pos(&o) - before));
  }
  size_t en;
  char *enc_bytes = fz_out_take(&o, &en);
  fz_events_t back;
  fz_ref_frames(kind, UINT32_MAX, enc_bytes, en, &back);
  FZ_CHECK(back.n == nwant && back.end == en, "encoded %zu frames, decoded %zu",
           nwant, back.n);
  for (size_t i = 0; i < nwant; i++) {
    const fz_event_t *a = &ref->ev[want[i]], *b = &back.ev[i];
    FZ_CHECK(b->kind == FZ_EV_FRAME && a->n == b->n &&
                 memcmp(in + a->off, enc_bytes + b->off, a->n) == 0,
             "frame %zu changed in an encode/decode round trip", i);
  }
  fz_events_free(&back);
  free(enc_bytes);
  free(want);
  jrpc__out_free(&o);
  jrpc__bufpool_free(&pool);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  if (size < 1)
    return 0;
  int kind = data[0] & 1 ? JRPC_FRAMING_LENGTH : JRPC_FRAMING_NEWLINE;
  uint32_t max = maxes[(data[0] >> 1) & 7];
  int chunking = (data[0] >> 4) & 3;
  const char *in = (const char *)data + 1;
  size_t n = size - 1;
  fz_rng_t rng;
  fz_rng_seed(&rng, data, size, 1);

  fz_events_t ref;
  fz_ref_frames(kind, max, in, n, &ref);

  jrpc__framer_t f;
  jrpc__framer_init(&f, (jrpc__framing_t)kind, max);
  char *pend = malloc(n + 1);
  FZ_CHECK(pend, "out of memory");
  size_t plen = 0, off = 0, pend_off = 0, k = 0;
  int stopped = 0, eof = 0;
  while (!eof && !stopped) {
    size_t step;
    switch (chunking) {
    case 0:
      step = n;
      break;
    case 1:
      step = 1;
      break;
    case 2:
      step = fz_rng_range(&rng, 0, 16);
      break;
    default:
      step = fz_rng_range(&rng, 0, 600);
      break;
    }
    if (step > n - off)
      step = n - off;
    memcpy(pend + plen, in + off, step);
    plen += step;
    off += step;
    eof = off == n;
    for (;;) {
      char *buf = malloc(plen ? plen : 1);
      FZ_CHECK(buf, "out of memory");
      memcpy(buf, pend, plen);
      jrpc__frame_t fr;
      memset(&fr, 0xA5, sizeof fr);
      int r = jrpc__frame_next(&f, buf, plen, eof, &fr);
      FZ_CHECK(fr.consumed <= plen, "consumed %zu of %zu bytes", fr.consumed,
               plen);
      switch (r) {
      case JRPC__FRAME_OK:
        FZ_CHECK(fr.p >= buf && fr.n <= plen &&
                     (size_t)(fr.p - buf) <= plen - fr.n,
                 "frame of %zu bytes outside the buffer of %zu", fr.n, plen);
        FZ_CHECK((size_t)(fr.p - buf) + fr.n <= fr.consumed,
                 "frame not inside the consumed bytes");
        FZ_CHECK(fr.n <= max, "frame of %zu bytes, max %u", fr.n, max);
        check_event(&ref, k++, r, &fr, buf, pend_off, in);
        break;
      case JRPC__FRAME_TOO_LARGE:
        FZ_CHECK(fr.got > max, "too large at %llu, max %u",
                 (unsigned long long)fr.got, max);
        FZ_CHECK(fr.fatal == (kind == JRPC_FRAMING_LENGTH),
                 "fatal %d with framing %d", fr.fatal, kind);
        check_event(&ref, k++, r, &fr, buf, pend_off, in);
        stopped = fr.fatal;
        break;
      case JRPC__FRAME_MORE:
        if (kind == JRPC_FRAMING_LENGTH)
          FZ_CHECK(fr.need == 0 || (fr.need > plen - fr.consumed &&
                                    fr.need <= (uint64_t)max + 4),
                   "need %zu with %zu buffered, max %u", fr.need, plen, max);
        else
          FZ_CHECK(fr.need == 0, "newline need %zu", fr.need);
        break;
      default:
        fz_fail("frame_next returned %d", r);
      }
      memmove(pend, pend + fr.consumed, plen - fr.consumed);
      plen -= fr.consumed;
      pend_off += fr.consumed;
      free(buf);
      if (r == JRPC__FRAME_MORE && !eof) {
        /* Asked again with nothing new: still nothing. */
        buf = malloc(plen ? plen : 1);
        FZ_CHECK(buf, "out of memory");
        memcpy(buf, pend, plen);
        int r2 = jrpc__frame_next(&f, buf, plen, 0, &fr);
        FZ_CHECK(r2 == JRPC__FRAME_MORE && fr.consumed == 0,
                 "a repeated call gave %d, consumed %zu", r2, fr.consumed);
        free(buf);
      }
      if (r == JRPC__FRAME_MORE || stopped)
        break;
    }
  }
  FZ_CHECK(k == ref.n, "decoder found %zu frames, the reference %zu", k, ref.n);
  if (!stopped)
    FZ_CHECK(pend_off == ref.end,
             "decoder consumed %zu bytes by EOF, the reference %zu", pend_off,
             ref.end);
  free(pend);
  roundtrip(kind, in, &ref);
  fz_events_free(&ref);
  return 0;
}
