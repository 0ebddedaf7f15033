/* frame.h - frame codecs: find the next complete frame in buffered input,
 * and wrap replies in the same framing.
 *
 *  newline: one JSON text per line. "\n" ends a frame, a "\r" before it is
 *           dropped, blank (whitespace-only) lines are skipped, and at EOF
 *           a final unterminated line is still a frame. A line longer than
 *           max_frame_bytes is reported once it ends (its bytes are skipped
 *           as they arrive, never buffered), and the stream goes on.
 *  length:  a 4-byte big-endian payload length, then the payload. A length
 *           above max_frame_bytes is reported at once and is fatal: framing
 *           is lost.
 *
 * The decoder is incremental: call jrpc__frame_next() with all buffered,
 * unconsumed bytes; drop `consumed` bytes from the front afterwards; call
 * again (with more bytes appended) until it returns JRPC__FRAME_MORE. */
#ifndef JRPC_FRAME_H
#define JRPC_FRAME_H

#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "common.h"
#include "outbuf.h"

typedef enum jrpc__framing {
  JRPC_FRAMING_NEWLINE = 0,
  JRPC_FRAMING_LENGTH = 1,
  /* The header framings (http.h): their own decoder, and replies written
   * like newline frames here, the head put before them by http.c. */
  JRPC_FRAMING_HTTP = 2,
  JRPC_FRAMING_CONTENT_LENGTH = 3,
  /* Entered from http by the upgrade handshake (ws.h), never configured
   * as a listener's framing: replies written like newline frames, their
   * header put in front by ws.c. */
  JRPC_FRAMING_WEBSOCKET = 4,
  JRPC__FRAMINGS /* how many: the rows of framing.c's table */
} jrpc__framing_t;

/* As jrpcd.conf spells it (framing.c). */
const char *jrpc__framing_name(jrpc__framing_t k);

typedef struct jrpc__framer {
  jrpc__framing_t kind;
  uint32_t max;     /* max_frame_bytes (payload) */
  size_t scanned;   /* newline: bytes known to hold no '\n' */
  uint64_t skipped; /* newline: bytes of an oversized line skipped so far */
  int skipping;     /* newline: inside an oversized line */
  int skip_cr;      /* newline: the last skipped byte was '\r' */
  int skip_blank;   /* newline: the skipped bytes are all whitespace */
} jrpc__framer_t;

enum {
  JRPC__FRAME_MORE = 0,      /* no complete frame yet */
  JRPC__FRAME_OK = 1,        /* a frame: payload [p, p + n) */
  JRPC__FRAME_TOO_LARGE = 2, /* a frame over max: `got` bytes (fatal?) */
};

typedef struct jrpc__frame {
  const char *p;   /* payload (points into the buffer) */
  size_t n;        /* payload length */
  size_t consumed; /* bytes to drop from the front of the buffer */
  size_t need;     /* with MORE: total buffered bytes wanted, 0 = unknown */
  uint64_t got;    /* with TOO_LARGE: the frame's size */
  int fatal;       /* with TOO_LARGE: framing is lost, close after reply */
} jrpc__frame_t;

void jrpc__framer_init(jrpc__framer_t *f, jrpc__framing_t kind, uint32_t max);
/* Every case; jrpc__frame_next takes the common one inline. */
int jrpc__frame_next_slow(jrpc__framer_t *f, const char *buf, size_t len,
                          int eof, jrpc__frame_t *out);

/* Newline framing's common case inline: a complete line of acceptable size
 * that starts with a non-blank byte (so it is not a blank line). All else,
 * the length framing included, goes the full way. */
static inline int jrpc__frame_next(jrpc__framer_t *f, const char *buf,
                                   size_t len, int eof, jrpc__frame_t *out) {
  if (f->kind == JRPC_FRAMING_NEWLINE && !f->skipping && f->scanned < len) {
    const char *nl =
        (const char *)memchr(buf + f->scanned, '\n', len - f->scanned);
    if (nl) {
      size_t line = (size_t)(nl - buf);
      size_t n = line - (line && buf[line - 1] == '\r');
      unsigned char c0 = (unsigned char)buf[0];
      if (n && n <= f->max && c0 != ' ' && c0 != '\t' && c0 != '\r' &&
          c0 != '\n') {
        f->scanned = 0;
        out->p = buf;
        out->n = n;
        out->consumed = line + 1;
        out->need = 0;
        out->got = 0;
        out->fatal = 0;
        return JRPC__FRAME_OK;
      }
    } else {
      f->scanned = len; /* no '\n' in there: the full way need not look */
    }
  }
  return jrpc__frame_next_slow(f, buf, len, eof, out);
}

/* Reply framing: begin before writing a reply, end after. end() with
 * `empty` set (nothing was written) removes the header again. */
typedef struct jrpc__frame_enc {
  jrpc__outmark_t start;
  char *hdr;
} jrpc__frame_enc_t;

int jrpc__frame_begin_length(jrpc__outbuf_t *o, jrpc__frame_enc_t *enc);

struct jrpc__sink;
/* The newline and length framings' deliver (framing.h): src's bytes onto
 * the sink's output as one frame, or nothing when memory runs out. */
void jrpc__frame_deliver(struct jrpc__sink *sink, jrpc__outbuf_t *src);
int jrpc__frame_end_length(jrpc__outbuf_t *o, jrpc__frame_enc_t *enc);

/* Inline: once per frame, and newline framing needs only a mark. */
static inline int jrpc__frame_begin(jrpc__framing_t kind, jrpc__outbuf_t *o,
                                    jrpc__frame_enc_t *enc) {
  enc->start = jrpc__out_mark(o);
  enc->hdr = NULL;
  return kind == JRPC_FRAMING_LENGTH ? jrpc__frame_begin_length(o, enc) : 0;
}

static inline int jrpc__frame_end(jrpc__framing_t kind, jrpc__outbuf_t *o,
                                  jrpc__frame_enc_t *enc) {
  if (kind == JRPC_FRAMING_LENGTH)
    return jrpc__frame_end_length(o, enc);
  if (jrpc__out_pos(o) == enc->start.pos) {
    jrpc__out_truncate(o, enc->start);
    return 0;
  }
  if (o->oom)
    return JRPC_ENOMEM;
  return jrpc__out_byte(o, '\n');
}

#endif
