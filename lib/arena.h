/* arena.h - per-thread bump allocator for per-frame and per-call scratch.
 *
 * Allocation is a pointer bump. reset() makes all memory reusable; when the
 * last cycle needed more than one chunk, reset() replaces the chunks by one
 * big enough for all of them (up to `retain` bytes), so after warm-up a
 * steady workload allocates from a single chunk and never calls malloc. */
#ifndef JRPC_ARENA_H
#define JRPC_ARENA_H

#include <stddef.h>
#include <stdint.h>

#define JRPC__ARENA_ALIGN 16

typedef struct jrpc__arena_chunk jrpc__arena_chunk_t;
#ifndef __cplusplus /* C++ (the simdjson backend) needs only the calls */
struct jrpc__arena_chunk {
  jrpc__arena_chunk_t *next;
  size_t size; /* usable bytes after the header */
  /* Keeps data 16-byte aligned after the 16-byte header. */
  _Alignas(JRPC__ARENA_ALIGN) char data[];
};
#endif

typedef struct jrpc__arena {
  char *cur;                  /* next free byte in the current chunk */
  char *end;                  /* end of the current chunk */
  jrpc__arena_chunk_t *head;  /* chunk in use (newest first) */
  jrpc__arena_chunk_t *spare; /* chunks released by rewind, reused first */
  size_t chunk_size;          /* size for the next fresh chunk */
  size_t total;               /* bytes in all chunks */
  size_t retain;              /* at most this much survives a reset */
  uint64_t mallocs;           /* chunks ever allocated (for tests/bench) */
} jrpc__arena_t;

typedef struct jrpc__arena_mark {
  jrpc__arena_chunk_t *chunk;
  char *cur;
} jrpc__arena_mark_t;

/* first: size of the first chunk; retain: cap on memory kept by reset. */
void jrpc__arena_init(jrpc__arena_t *a, size_t first, size_t retain);
void jrpc__arena_free(jrpc__arena_t *a);
void *jrpc__arena_alloc_slow(jrpc__arena_t *a, size_t n);
void jrpc__arena_reset_slow(jrpc__arena_t *a);

/* Once per frame, so inline when one chunk served the whole cycle (the
 * steady state); otherwise the chunks are merged (see above). */
static inline void jrpc__arena_reset(jrpc__arena_t *a) {
#ifndef __cplusplus
  jrpc__arena_chunk_t *only = a->head;
  if (only && !only->next && !a->spare) {
    a->cur = only->data;
    a->end = only->data + only->size;
    return;
  }
#endif
  jrpc__arena_reset_slow(a);
}

/* Larger requests than this are refused (NULL): rounding and chunk
 * doubling must not overflow. */
#define JRPC__ARENA_MAX ((size_t)1 << 40)

static inline void *jrpc__arena_alloc(jrpc__arena_t *a, size_t n) {
  if (n > JRPC__ARENA_MAX)
    return NULL;
  n = (n + (JRPC__ARENA_ALIGN - 1)) & ~(size_t)(JRPC__ARENA_ALIGN - 1);
  if ((size_t)(a->end - a->cur) >= n) {
    void *p = a->cur;
    a->cur += n;
    return p;
  }
  return jrpc__arena_alloc_slow(a, n);
}

static inline jrpc__arena_mark_t jrpc__arena_mark(const jrpc__arena_t *a) {
  jrpc__arena_mark_t m = {a->head, a->cur};
  return m;
}

void jrpc__arena_rewind_slow(jrpc__arena_t *a, jrpc__arena_mark_t m);

/* Frees everything allocated since `m` (chunks stay, as spares). Inline
 * when no chunk was added since: a bump pointer moved back. */
static inline void jrpc__arena_rewind(jrpc__arena_t *a, jrpc__arena_mark_t m) {
  if (a->head == m.chunk)
    a->cur = m.cur;
  else
    jrpc__arena_rewind_slow(a, m);
}

#endif
