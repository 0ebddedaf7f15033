/* outbuf.h - the output chain: replies are appended into a list of pooled
 * segments and handed to the socket as one vectored write per loop turn.
 *
 * Appending never moves bytes already written, so a pointer into the chain
 * (a length prefix to patch, a mark to truncate to) stays valid until the
 * chain is consumed past it. */
#ifndef JRPC_OUTBUF_H
#define JRPC_OUTBUF_H

#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "bufpool.h"

#define JRPC__SEG_SIZE 16384 /* usable bytes asked of the pool per segment */

typedef struct jrpc__seg {
  struct jrpc__seg *next;
  size_t cap; /* usable bytes of data[] */
  size_t off; /* bytes already consumed (written to the socket) */
  size_t len; /* bytes filled; for the tail, synced from outbuf.p */
  char data[];
} jrpc__seg_t;

typedef struct jrpc__outbuf {
  jrpc__bufpool_t *pool;
  /* tail and p apart: jrpc__out_mark reads both, and side by side they
   * were one 16-byte load, which waits when p was stored just before
   * (a length prefix's room): a load cannot take its data from a smaller
   * store still in flight. */
  jrpc__seg_t *tail;
  jrpc__seg_t *head;
  char *p;          /* write cursor inside tail */
  char *end;        /* end of tail's capacity */
  uint64_t flushed; /* bytes in segments before tail (sealed) */
  /* flushed - (address of tail's data), modulo 2^64 (0 without a tail):
   * the position of o->p is then one add, and positions are taken several
   * times per call. Kept by every change to tail or flushed. */
  uint64_t origin;
  size_t seg_want; /* bytes asked of the pool for each new segment */
  int oom;         /* sticky: a segment could not be had */
} jrpc__outbuf_t;

/* A position in the chain to truncate back to. */
typedef struct jrpc__outmark {
  jrpc__seg_t *seg;
  char *p;
  uint64_t pos;
} jrpc__outmark_t;

void jrpc__out_init(jrpc__outbuf_t *o, jrpc__bufpool_t *pool);
/* Segments of the pool's smallest class (512 bytes), doubling as the
 * chain grows: for chains that hold one reply for a while (deferred
 * calls), where 16 KiB each would add up. */
void jrpc__out_small_segments(jrpc__outbuf_t *o);
/* Returns every segment to the pool. */
void jrpc__out_free(jrpc__outbuf_t *o);

/* Appends bytes spanning segments as needed; JRPC_ENOMEM (sticky) when a
 * segment cannot be had. */
int jrpc__out_put_slow(jrpc__outbuf_t *o, const void *s, size_t n);
/* At least n (<= 64) contiguous writable bytes at o->p, or NULL. */
char *jrpc__out_room_slow(jrpc__outbuf_t *o, size_t n);

static inline int jrpc__out_put(jrpc__outbuf_t *o, const void *s, size_t n) {
  if ((size_t)(o->end - o->p) >= n) {
    memcpy(o->p, s, n);
    o->p += n;
    return 0;
  }
  return jrpc__out_put_slow(o, s, n);
}

/* jrpc__out_put for a few bytes of unknown count (an id, a number's
 * digits): up to 16 are copied as overlapping words, without a call. */
/* Copies n <= 16 bytes as overlapping words; d has 16 bytes of room. */
static inline void jrpc__copy_short(char *d, const char *s, size_t n) {
  if (n >= 8) {
    uint64_t a, b;
    memcpy(&a, s, 8);
    memcpy(&b, s + n - 8, 8);
    memcpy(d, &a, 8);
    memcpy(d + n - 8, &b, 8);
  } else if (n >= 4) {
    uint32_t a, b;
    memcpy(&a, s, 4);
    memcpy(&b, s + n - 4, 4);
    memcpy(d, &a, 4);
    memcpy(d + n - 4, &b, 4);
  } else if (n) {
    d[0] = s[0];
    d[n / 2] = s[n / 2];
    d[n - 1] = s[n - 1];
  }
}

static inline int jrpc__out_put_short(jrpc__outbuf_t *o, const void *src,
                                      size_t n) {
  char *d = o->p;
  if (n > 16 || (size_t)(o->end - d) < 16)
    return jrpc__out_put(o, src, n);
  jrpc__copy_short(d, (const char *)src, n);
  o->p = d + n;
  return 0;
}

static inline int jrpc__out_byte(jrpc__outbuf_t *o, char c) {
  if (o->p < o->end) {
    *o->p++ = c;
    return 0;
  }
  return jrpc__out_put_slow(o, &c, 1);
}

/* Contiguous room for a short item (numbers); advance o->p yourself. */
static inline char *jrpc__out_room(jrpc__outbuf_t *o, size_t n) {
  if ((size_t)(o->end - o->p) >= n)
    return o->p;
  return jrpc__out_room_slow(o, n);
}

/* Total bytes appended since init (consumed ones included). */
static inline uint64_t jrpc__out_pos(const jrpc__outbuf_t *o) {
  return (uint64_t)(uintptr_t)o->p + o->origin;
}

static inline jrpc__outmark_t jrpc__out_mark(const jrpc__outbuf_t *o) {
  jrpc__outmark_t m = {o->tail, o->p, jrpc__out_pos(o)};
  return m;
}

/* With nothing pending, gives every segment back to the pool, so that an
 * idle connection holds no pooled memory. No mark taken before survives. */
void jrpc__out_release_idle(jrpc__outbuf_t *o);

/* Drops everything appended after m. Does not clear `oom`: bytes may be
 * missing before m too; only the caller that truncates to before the whole
 * reply may clear it. */
void jrpc__out_truncate(jrpc__outbuf_t *o, jrpc__outmark_t m);

/* Moves src's pending bytes to the end of dst; JRPC_ENOMEM when dst
 * could not take them all. */
int jrpc__out_append(jrpc__outbuf_t *dst, jrpc__outbuf_t *src);
/* Pending (unconsumed) bytes. */
uint64_t jrpc__out_pending(const jrpc__outbuf_t *o);

/* Fills up to max (ptr, len) pairs describing pending bytes in order;
 * returns how many were filled. */
size_t jrpc__out_iov(jrpc__outbuf_t *o, const char **ptrs, size_t *lens,
                     size_t max);

/* Marks n pending bytes as written; fully written segments go back to the
 * pool (the tail is kept and rewound when empty). */
void jrpc__out_consume(jrpc__outbuf_t *o, size_t n);

/* Copies all pending bytes into dst (at most cap); returns the count. For
 * tests and in-process callers. */
size_t jrpc__out_copy(jrpc__outbuf_t *o, char *dst, size_t cap);

#endif
