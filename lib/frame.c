/* frame.c - newline and length-prefix frame codecs; see frame.h. */
#include "frame.h"

#include <string.h>

#include "async.h"
#include "common.h"
#include "jsontext.h"

void jrpc__framer_init(jrpc__framer_t *f, jrpc__framing_t kind, uint32_t max) {
  f->kind = kind;
  f->max = max;
  f->scanned = 0;
  f->skipped = 0;
  f->skipping = 0;
  f->skip_cr = 0;
  f->skip_blank = 0;
}

static int is_blank(const char *p, size_t n) {
  for (size_t i = 0; i < n; i++)
    if (!jrpc__is_ws((unsigned char)p[i]))
      return 0;
  return 1;
}

static int newline_next(jrpc__framer_t *f, const char *buf, size_t len, int eof,
                        jrpc__frame_t *out) {
  size_t start = 0;
  for (;;) {
    const char *base = buf + start;
    size_t avail = len - start;
    size_t from = f->scanned;
    const char *nl =
        from < avail ? memchr(base + from, '\n', avail - from) : NULL;
    if (f->skipping) {
      /* Inside an oversized line: drop bytes until it ends. */
      if (!nl && !eof) {
        f->skipped += avail;
        if (avail)
          f->skip_cr = base[avail - 1] == '\r';
        if (f->skip_blank)
          f->skip_blank = is_blank(base, avail);
        f->scanned = 0;
        out->consumed = len;
        return JRPC__FRAME_MORE;
      }
      size_t line = nl ? (size_t)(nl - base) : avail;
      if (f->skip_blank && is_blank(base, line)) {
        /* A long run of whitespace is a blank line, not a frame. */
        f->skipping = 0;
        f->skipped = 0;
        f->scanned = 0;
        start += line + (nl ? 1 : 0);
        if (!nl) {
          out->consumed = len;
          return JRPC__FRAME_MORE;
        }
        continue;
      }
      uint64_t got = f->skipped + line;
      /* A '\r' before the '\n' is not part of the frame, even when it
       * arrived in an earlier read. */
      if (line ? base[line - 1] == '\r' : f->skip_cr)
        got--;
      f->skipping = 0;
      f->skipped = 0;
      f->scanned = 0;
      out->consumed = start + line + (nl ? 1 : 0);
      out->got = got;
      out->fatal = 0;
      return JRPC__FRAME_TOO_LARGE;
    }
    if (!nl) {
      if (avail > (size_t)f->max + 1 && !eof) {
        /* No newline within max (+1 for a '\r') bytes: the line is too
         * large whatever comes next. Skip instead of buffering it. */
        f->skipping = 1;
        f->skipped = avail;
        f->skip_cr = base[avail - 1] == '\r';
        f->skip_blank = is_blank(base, avail);
        f->scanned = 0;
        out->consumed = len;
        return JRPC__FRAME_MORE;
      }
      if (eof && avail && !is_blank(base, avail)) {
        size_t n = avail;
        if (base[n - 1] == '\r')
          n--;
        f->scanned = 0;
        if (n > f->max) {
          out->consumed = len;
          out->got = n;
          out->fatal = 0;
          return JRPC__FRAME_TOO_LARGE;
        }
        out->p = base;
        out->n = n;
        out->consumed = len;
        return JRPC__FRAME_OK;
      }
      if (eof) {
        f->scanned = 0;
        out->consumed = len;
        return JRPC__FRAME_MORE;
      }
      f->scanned = avail;
      out->consumed = start;
      out->need = 0;
      return JRPC__FRAME_MORE;
    }
    size_t line = (size_t)(nl - base);
    size_t n = line;
    if (n && base[n - 1] == '\r')
      n--;
    f->scanned = 0;
    if (is_blank(base, n)) {
      start += line + 1;
      continue;
    }
    if (n > f->max) {
      out->consumed = start + line + 1;
      out->got = n;
      out->fatal = 0;
      return JRPC__FRAME_TOO_LARGE;
    }
    out->p = base;
    out->n = n;
    out->consumed = start + line + 1;
    return JRPC__FRAME_OK;
  }
}

static int length_next(jrpc__framer_t *f, const char *buf, size_t len, int eof,
                       jrpc__frame_t *out) {
  if (len < 4) {
    out->need = 4;
    return JRPC__FRAME_MORE;
  }
  const unsigned char *h = (const unsigned char *)buf;
  uint32_t n = ((uint32_t)h[0] << 24) | ((uint32_t)h[1] << 16) |
               ((uint32_t)h[2] << 8) | (uint32_t)h[3];
  if (n > f->max) {
    out->consumed = 4;
    out->got = n;
    out->fatal = 1;
    return JRPC__FRAME_TOO_LARGE;
  }
  if (len - 4 < n) {
    out->need = (size_t)n + 4;
    return JRPC__FRAME_MORE;
  }
  out->p = buf + 4;
  out->n = n;
  out->consumed = (size_t)n + 4;
  return JRPC__FRAME_OK;
}

int jrpc__frame_next_slow(jrpc__framer_t *f, const char *buf, size_t len,
                          int eof, jrpc__frame_t *out) {
  out->p = NULL;
  out->n = 0;
  out->consumed = 0;
  out->need = 0;
  out->got = 0;
  out->fatal = 0;
  if (f->kind == JRPC_FRAMING_LENGTH)
    return length_next(f, buf, len, eof, out);
  return newline_next(f, buf, len, eof, out);
}

int jrpc__frame_begin_length(jrpc__outbuf_t *o, jrpc__frame_enc_t *enc) {
  char *h = jrpc__out_room(o, 4);
  if (!h)
    return JRPC_ENOMEM;
  /* The mark must point at the header, which may have moved to a fresh
   * segment. */
  enc->start = jrpc__out_mark(o);
  enc->hdr = h;
  o->p += 4;
  return 0;
}

int jrpc__frame_end_length(jrpc__outbuf_t *o, jrpc__frame_enc_t *enc) {
  uint64_t body = jrpc__out_pos(o) - enc->start.pos - 4;
  if (body == 0) {
    jrpc__out_truncate(o, enc->start);
    return 0;
  }
  if (o->oom)
    return JRPC_ENOMEM;
  uint32_t n = (uint32_t)body;
  enc->hdr[0] = (char)(n >> 24);
  enc->hdr[1] = (char)(n >> 16);
  enc->hdr[2] = (char)(n >> 8);
  enc->hdr[3] = (char)n;
  return 0;
}

void jrpc__frame_deliver(jrpc__sink_t *sink, jrpc__outbuf_t *src) {
  jrpc__frame_enc_t enc;
  jrpc__outbuf_t *o = sink->out;
  if (jrpc__frame_begin(sink->framing, o, &enc) != 0)
    return;
  jrpc__out_append(o, src);
  if (o->oom || jrpc__frame_end(sink->framing, o, &enc) != 0 || o->oom) {
    jrpc__out_truncate(o, enc.start);
    o->oom = 0;
  }
}
