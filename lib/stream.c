/* stream.c - one connection's input buffer, decoder and output; see
 * stream.h. */
#include "stream.h"

#include <string.h>

#include "common.h"
#include "push.h"

/* Below this much free room, compact or grow before the next read. */
#define READ_ROOM_MIN 4096

void jrpc__stream_init(jrpc__stream_t *s, jrpc__engine_t *e,
                       jrpc__framing_t framing) {
  s->e = e;
  s->fx = &jrpc__framings[framing];
  jrpc__framer_init(&s->fr, framing, e->lim.max_frame_bytes);
  jrpc__out_init(&s->out, &e->pool);
  jrpc__sink_init(&s->sink, &s->out, framing);
  s->peer = e->no_peer;
  s->buf = NULL;
  s->cap = s->rd = s->wr = s->need = 0;
  s->closing = 0;
  s->held = 0;
  s->frame_budget = 0; /* the host sets it after init, if at all */
  s->more = 0;
  s->nframes = 0;
  s->http = NULL;
  s->ws = NULL;
  s->kept = 0;
}

static void release_input(jrpc__stream_t *s) {
  jrpc__bufpool_put(&s->e->pool, s->buf, s->cap);
  s->buf = NULL;
  s->cap = s->rd = s->wr = 0;
}

void jrpc__stream_release_input(jrpc__stream_t *s) {
  release_input(s);
}

void jrpc__stream_free(jrpc__stream_t *s) {
  jrpc__sink_detach(&s->sink);
  if (s->sink.push)
    jrpc__push_detach(s->e->push, &s->sink); /* its subscriptions end */
  if (s->buf)
    release_input(s);
  jrpc__out_free(&s->out);
}

char *jrpc__stream_rbuf(jrpc__stream_t *s, size_t *room) {
  if (!s->buf) {
    s->buf = jrpc__bufpool_get(&s->e->pool, JRPC__READ_MIN, &s->cap);
    if (!s->buf)
      return NULL;
    s->rd = s->wr = 0;
  }
  size_t pending = s->wr - s->rd;
  /* Room for the rest of a frame of known size, else a useful read. */
  size_t want = pending + READ_ROOM_MIN;
  if (s->need > want)
    want = s->need;
  if (s->cap - s->wr < READ_ROOM_MIN || s->cap - s->rd < want) {
    if (want <= s->cap) {
      memmove(s->buf, s->buf + s->rd, pending);
    } else {
      /* The decoder bounds `need` and `pending` by max_frame_bytes, so
       * growth stops there. */
      size_t cap;
      char *nb = jrpc__bufpool_get(&s->e->pool, want, &cap);
      if (!nb)
        return NULL;
      memcpy(nb, s->buf + s->rd, pending);
      jrpc__bufpool_put(&s->e->pool, s->buf, s->cap);
      s->buf = nb;
      s->cap = cap;
    }
    s->rd = 0;
    s->wr = pending;
  }
  *room = s->cap - s->wr;
  return s->buf + s->wr;
}

int jrpc__stream_timeout(jrpc__stream_t *s, uint32_t timeout_ms, uint64_t got) {
  return jrpc__dispatch_frame_timeout(s->e, s->fr.kind, &s->out, timeout_ms,
                                      got);
}

int jrpc__stream_feed(jrpc__stream_t *s, size_t n, int eof) {
  jrpc__engine_t *e = s->e;
  int rc = 0;
  s->wr += n;
  if (s->closing)
    return JRPC__ECLOSE;
  s->held = 0;
  s->more = 0;
  uint32_t frames = 0;
  for (;;) {
    if (jrpc__stream_must_yield(s, frames, eof))
      break;
    jrpc__frame_t f;
    const char *base = s->buf ? s->buf + s->rd : "";
    int r = jrpc__frame_next(&s->fr, base, s->wr - s->rd, eof, &f);
    s->rd += f.consumed;
    if (r == JRPC__FRAME_MORE) {
      s->need = f.need;
      break;
    }
    s->nframes++;
    if (r == JRPC__FRAME_TOO_LARGE) {
      rc = jrpc__dispatch_too_large(e, s->fr.kind, &s->out, f.got);
      if (rc)
        break;
      if (f.fatal) {
        s->closing = 1;
        rc = JRPC__ECLOSE;
        break;
      }
      continue;
    }
    rc = jrpc__dispatch_frame(e, &s->sink, f.p, f.n, &s->peer);
    jrpc__arena_reset(&e->arena);
    frames++;
    if (rc)
      break;
  }
  if (s->buf && s->rd == s->wr)
    release_input(s); /* idle connections hold no input memory */
  return rc;
}
