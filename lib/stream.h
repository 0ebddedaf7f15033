/* stream.h - one connection's protocol state, without the socket: an input
 * buffer from the pool, the frame decoder, and the output chain. The
 * daemon reads into jrpc__stream_rbuf(), calls jrpc__stream_feed(), and
 * writes out what the chain holds. */
#ifndef JRPC_STREAM_H
#define JRPC_STREAM_H

#include <stddef.h>
#include <stdint.h>

#include "dispatch.h"
#include "frame.h"
#include "framing.h"
#include "outbuf.h"

/* Usable bytes of the first input buffer: a 64 KiB pool class. */
#define JRPC__READ_MIN (65536 - JRPC__PAD)

typedef struct jrpc__stream {
  jrpc__engine_t *e;
  const jrpc__framing_ops_t *fx; /* its framing's row (framing.h) */
  jrpc__framer_t fr;
  jrpc__outbuf_t out;
  jrpc__sink_t sink; /* out, as deferred calls see it */
  jrpc_peer_t peer;
  char *buf;   /* input buffer from e->pool, or NULL while idle */
  size_t cap;  /* its usable size */
  size_t rd;   /* first unconsumed byte */
  size_t wr;   /* end of buffered bytes */
  size_t need; /* bytes the decoder asked for, 0 = unknown */
  int closing; /* a fatal framing error happened: flush then close */
  /* Frames wait in the buffer while sink.max_calls deferred calls of the
   * connection are unfinished; `held` says some wait. */
  int held;
  /* Hand back after this many frames of one feed (0: no limit) with
   * `more` set, so that the caller can send the replies so far while
   * frames are still waiting: feed 0 bytes to go on. */
  uint32_t frame_budget;
  int more;
  uint64_t nframes;        /* frames taken off the input so far, for timeouts */
  struct jrpc__http *http; /* the header framings' state (http.h), or NULL */
  struct jrpc__ws *ws;     /* the websocket framing's (ws.h), or NULL */
  /* Bytes of an incomplete frame the framing keeps out of buf (websocket:
   * inside wslay), for the frame clock. */
  size_t kept;
} jrpc__stream_t;

void jrpc__stream_init(jrpc__stream_t *s, jrpc__engine_t *e,
                       jrpc__framing_t framing);
/* Returns the input buffer (if any) and the output chain to the pool. */
void jrpc__stream_free(jrpc__stream_t *s);

/* Where the next read may go: *room >= 1 bytes. NULL when out of memory. */
char *jrpc__stream_rbuf(jrpc__stream_t *s, size_t *room);

/* n bytes were read into the buffer; eof: the peer will send nothing more.
 * Decodes and answers every complete frame (or, with sink.max_calls reached,
 * sets `held` and leaves the rest buffered: feed 0 bytes to go on). Returns 0,
 * JRPC__ECLOSE when framing is lost (flush the output, then close), or
 * JRPC_ENOMEM. */
int jrpc__stream_feed(jrpc__stream_t *s, size_t n, int eof);

/* Inside a feed, before the next frame: whether to hand back now, with
 * `more` (frame_budget frames done, more buffered) or `held` (the
 * connection's deferred calls at sink.max_calls) set. */
static inline int jrpc__stream_must_yield(jrpc__stream_t *s, uint32_t frames,
                                          int eof) {
  if (s->frame_budget && frames == s->frame_budget && s->wr > s->rd) {
    s->more = 1;
    return 1;
  }
  if (s->sink.max_calls && s->sink.calls >= s->sink.max_calls) {
    s->held = s->wr > s->rd || eof;
    return 1;
  }
  return 0;
}

/* The newline and length framings' timeout (framing.h): -32009. */
int jrpc__stream_timeout(jrpc__stream_t *s, uint32_t timeout_ms, uint64_t got);

/* Gives the input buffer back to the pool (nothing is buffered). */
void jrpc__stream_release_input(jrpc__stream_t *s);

/* Bytes buffered that do not form a complete frame yet. */
static inline size_t jrpc__stream_partial(const jrpc__stream_t *s) {
  return s->wr - s->rd + s->kept;
}

#endif
