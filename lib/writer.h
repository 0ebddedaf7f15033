/* writer.h - streaming JSON writer into the output chain.
 *
 * Two layers: jrpc__json_* append one JSON token (escaped string, number,
 * literal) with no state; jrpc__writer_t adds the structure a handler's
 * result needs (commas, keys only inside objects, balanced containers) and
 * turns misuse into a sticky error instead of invalid JSON on the wire. */
#ifndef JRPC_WRITER_H
#define JRPC_WRITER_H

#include <stddef.h>
#include <stdint.h>

#include "bytescan.h"
#include "outbuf.h"

/* Escaped, quoted JSON string. Invalid UTF-8 is replaced by U+FFFD. */
int jrpc__json_str(jrpc__outbuf_t *o, const char *s, size_t n);
int jrpc__json_i64(jrpc__outbuf_t *o, int64_t v);
int jrpc__json_u64(jrpc__outbuf_t *o, uint64_t v);
/* Shortest round-trip text; JRPC_EINVAL for NaN/inf (nothing written). */
int jrpc__json_f64(jrpc__outbuf_t *o, double v);

#define JRPC__WRITER_MAX_DEPTH 64

typedef struct jrpc__writer {
  jrpc__outbuf_t *out;
  uint64_t objbits;   /* bit d set: level d+1 is an object */
  uint32_t depth;     /* open containers */
  uint8_t need_comma; /* a value/member precedes at this level */
  uint8_t after_key;  /* inside an object, a key awaits its value */
  uint8_t done;       /* the one top-level value is complete */
  uint8_t bad;        /* sticky: misuse or failure; reply becomes an error */
  const char *why;    /* first misuse, for the error's data */
} jrpc__writer_t;

/* Inline: once per call. */
static inline void jrpc__writer_init(jrpc__writer_t *w, jrpc__outbuf_t *out) {
  w->out = out;
  w->objbits = 0;
  w->depth = 0;
  w->need_comma = 0;
  w->after_key = 0;
  w->done = 0;
  w->bad = 0;
  w->why = NULL;
}
/* Returns 0 when exactly one complete value was written (or none: then
 * *empty is set), else the misuse. */
int jrpc__writer_finish(jrpc__writer_t *w, int *empty);

int jrpc__writer_obj(jrpc__writer_t *w);
int jrpc__writer_obj_end(jrpc__writer_t *w);
int jrpc__writer_arr(jrpc__writer_t *w);
int jrpc__writer_arr_end(jrpc__writer_t *w);
int jrpc__writer_key(jrpc__writer_t *w, const char *s, size_t n);
int jrpc__writer_str(jrpc__writer_t *w, const char *s, size_t n);
int jrpc__writer_i64(jrpc__writer_t *w, int64_t v);
int jrpc__writer_u64(jrpc__writer_t *w, uint64_t v);
int jrpc__writer_f64(jrpc__writer_t *w, double v);
int jrpc__writer_bool(jrpc__writer_t *w, int v);
int jrpc__writer_null(jrpc__writer_t *w);
/* Trusted JSON bytes; CR/LF in them (whitespace in valid JSON) become
 * spaces so a newline-framed reply can never be split. */
int jrpc__writer_raw(jrpc__writer_t *w, const char *s, size_t n);

/* n raw JSON bytes onto o with each CR and LF as a space, so that a value
 * stays on one line (the newline framing) and means the same: both are
 * whitespace outside strings and invalid inside them. Nonzero when o
 * could not take them. Inline: jrpc__writer_raw's loop, and a
 * notification's result's (push.c). */
static inline int jrpc__out_put_oneline(jrpc__outbuf_t *o, const char *s,
                                        size_t n) {
  int rc = 0;
  const char *p = s, *end = s + n;
  while (p < end && !rc) {
    const char *q = jrpc__scan_crlf(p, end);
    if (q > p) /* a chain not yet begun has no cursor to copy 0 bytes to */
      rc |= jrpc__out_put(o, p, (size_t)(q - p));
    if (q < end)
      rc |= jrpc__out_byte(o, ' ');
    p = q + (q < end);
  }
  return rc;
}

#endif
