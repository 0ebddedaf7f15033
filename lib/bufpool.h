/* bufpool.h - per-thread pool of 64-byte aligned, padded buffers.
 *
 * Sizes come in power-of-two classes. A buffer of class size S offers
 * S - JRPC__PAD usable bytes; the last JRPC__PAD bytes are never handed out
 * for reads, so any frame inside the usable part has at least JRPC__PAD
 * readable bytes after it. Released buffers go on a per-class free list and
 * are reused; the pool keeps at most `retain` bytes of idle buffers. */
#ifndef JRPC_BUFPOOL_H
#define JRPC_BUFPOOL_H

#include <stddef.h>
#include <stdint.h>

/* 512 bytes: a deferred call's reply starts in one (async.c), so that
 * thousands in flight cost little; streams ask for 16 KiB and more. */
#define JRPC__BUF_MIN_SHIFT 9
#define JRPC__BUF_MAX_SHIFT 31 /* 2 GiB */
#define JRPC__BUF_CLASSES (JRPC__BUF_MAX_SHIFT - JRPC__BUF_MIN_SHIFT + 1)

typedef struct jrpc__bufpool {
  void *free[JRPC__BUF_CLASSES];
  size_t idle;      /* bytes on the free lists */
  size_t retain;    /* cap on idle bytes */
  size_t live;      /* bytes handed out and not yet returned */
  uint64_t mallocs; /* buffers ever allocated (for tests/bench) */
} jrpc__bufpool_t;

void jrpc__bufpool_init(jrpc__bufpool_t *p, size_t retain);
/* Frees idle buffers. Buffers still out are the caller's to return first. */
void jrpc__bufpool_free(jrpc__bufpool_t *p);

/* A buffer with at least `want` usable bytes (64-byte aligned; JRPC__PAD
 * readable bytes follow the usable ones). *cap receives the usable size.
 * NULL if `want` is too large or memory is exhausted. */
char *jrpc__bufpool_get(jrpc__bufpool_t *p, size_t want, size_t *cap);
/* Return a buffer; cap must be the value _get reported. */
void jrpc__bufpool_put(jrpc__bufpool_t *p, char *buf, size_t cap);

#endif
