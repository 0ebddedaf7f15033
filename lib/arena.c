/* arena.c - per-thread bump allocator; see arena.h. */
#include "arena.h"

#include <stdlib.h>

static jrpc__arena_chunk_t *chunk_new(jrpc__arena_t *a, size_t size) {
  jrpc__arena_chunk_t *c = malloc(sizeof(*c) + size);
  if (!c)
    return NULL;
  c->next = NULL;
  c->size = size;
  a->total += size;
  a->mallocs++;
  return c;
}

static void chunk_list_free(jrpc__arena_t *a, jrpc__arena_chunk_t *c) {
  while (c) {
    jrpc__arena_chunk_t *next = c->next;
    a->total -= c->size;
    free(c);
    c = next;
  }
}

static void use_chunk(jrpc__arena_t *a, jrpc__arena_chunk_t *c) {
  c->next = a->head;
  a->head = c;
  a->cur = c->data;
  a->end = c->data + c->size;
}

void jrpc__arena_init(jrpc__arena_t *a, size_t first, size_t retain) {
  a->cur = a->end = NULL;
  a->head = a->spare = NULL;
  a->chunk_size = first < 1024 ? 1024 : first;
  a->total = 0;
  a->retain = retain < a->chunk_size ? a->chunk_size : retain;
  a->mallocs = 0;
}

void jrpc__arena_free(jrpc__arena_t *a) {
  chunk_list_free(a, a->head);
  chunk_list_free(a, a->spare);
  a->head = a->spare = NULL;
  a->cur = a->end = NULL;
}

void *jrpc__arena_alloc_slow(jrpc__arena_t *a, size_t n) {
  /* A spare chunk from an earlier rewind first, if it is big enough. */
  jrpc__arena_chunk_t **pp = &a->spare;
  while (*pp) {
    if ((*pp)->size >= n) {
      jrpc__arena_chunk_t *c = *pp;
      *pp = c->next;
      use_chunk(a, c);
      a->cur += n;
      return c->data;
    }
    pp = &(*pp)->next;
  }
  size_t size = a->chunk_size;
  while (size < n)
    size *= 2;
  jrpc__arena_chunk_t *c = chunk_new(a, size);
  if (!c)
    return NULL;
  /* Grow geometrically so a big cycle needs few chunks. */
  if (a->chunk_size < ((size_t)1 << 30))
    a->chunk_size = size * 2;
  use_chunk(a, c);
  a->cur += n;
  return c->data;
}

void jrpc__arena_rewind_slow(jrpc__arena_t *a, jrpc__arena_mark_t m) {
  while (a->head && a->head != m.chunk) {
    jrpc__arena_chunk_t *c = a->head;
    a->head = c->next;
    c->next = a->spare;
    a->spare = c;
  }
  if (m.chunk) {
    a->cur = m.cur;
    a->end = m.chunk->data + m.chunk->size;
  } else {
    a->cur = a->end = NULL;
  }
}

void jrpc__arena_reset_slow(jrpc__arena_t *a) {
  /* Several chunks were needed: replace them by one that fits them all
   * (capped by `retain`), so the next cycle like this one needs none. */
  size_t want = a->total;
  chunk_list_free(a, a->head);
  chunk_list_free(a, a->spare);
  a->head = a->spare = NULL;
  a->cur = a->end = NULL;
  if (want > a->retain)
    want = a->retain;
  if (want == 0)
    return;
  a->chunk_size = want;
  jrpc__arena_chunk_t *c = chunk_new(a, want);
  if (c)
    use_chunk(a, c);
}
