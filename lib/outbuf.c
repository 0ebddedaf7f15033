/* outbuf.c - the output chain; see outbuf.h. */
#include "outbuf.h"

#include "common.h"

static void sync_origin(jrpc__outbuf_t *o) {
  o->origin = o->tail ? o->flushed - (uint64_t)(uintptr_t)o->tail->data : 0;
}

void jrpc__out_init(jrpc__outbuf_t *o, jrpc__bufpool_t *pool) {
  o->pool = pool;
  o->head = o->tail = NULL;
  o->p = o->end = NULL;
  o->flushed = 0;
  o->origin = 0;
  o->oom = 0;
  o->seg_want = JRPC__SEG_SIZE - JRPC__PAD;
}

void jrpc__out_small_segments(jrpc__outbuf_t *o) {
  o->seg_want = ((size_t)1 << JRPC__BUF_MIN_SHIFT) - JRPC__PAD;
}

static void seg_release(jrpc__outbuf_t *o, jrpc__seg_t *s) {
  jrpc__bufpool_put(o->pool, (char *)s, s->cap + sizeof(*s));
}

void jrpc__out_free(jrpc__outbuf_t *o) {
  jrpc__seg_t *s = o->head;
  while (s) {
    jrpc__seg_t *next = s->next;
    seg_release(o, s);
    s = next;
  }
  o->head = o->tail = NULL;
  o->p = o->end = NULL;
  o->origin = 0;
}

/* Seals the tail and appends a fresh segment. */
static int seg_append(jrpc__outbuf_t *o) {
  size_t cap;
  char *b = jrpc__bufpool_get(o->pool, o->seg_want, &cap);
  if (!b) {
    o->oom = 1;
    return JRPC_ENOMEM;
  }
  jrpc__seg_t *s = (jrpc__seg_t *)b;
  s->next = NULL;
  s->cap = cap - sizeof(*s);
  s->off = 0;
  s->len = 0;
  if (o->tail) {
    o->tail->len = (size_t)(o->p - o->tail->data);
    o->flushed += o->tail->len;
    o->tail->next = s;
  } else {
    o->head = s;
  }
  o->tail = s;
  o->p = s->data;
  o->end = s->data + s->cap;
  sync_origin(o);
  /* Small segments (a deferred call's reply) double as the reply grows,
   * up to the usual size, so that a large result is no long chain. */
  if (JRPC__UNLIKELY(o->seg_want < JRPC__SEG_SIZE - JRPC__PAD)) {
    size_t next = 2 * (o->seg_want + JRPC__PAD) - JRPC__PAD;
    o->seg_want =
        next < JRPC__SEG_SIZE - JRPC__PAD ? next : JRPC__SEG_SIZE - JRPC__PAD;
  }
  return 0;
}

int jrpc__out_put_slow(jrpc__outbuf_t *o, const void *src, size_t n) {
  const char *s = src;
  if (o->oom)
    return JRPC_ENOMEM;
  while (n) {
    size_t room = (size_t)(o->end - o->p);
    if (room == 0) {
      if (seg_append(o))
        return JRPC_ENOMEM;
      continue;
    }
    size_t k = n < room ? n : room;
    memcpy(o->p, s, k);
    o->p += k;
    s += k;
    n -= k;
  }
  return 0;
}

char *jrpc__out_room_slow(jrpc__outbuf_t *o, size_t n) {
  if (o->oom || n > 64)
    return NULL;
  /* Leaves the few bytes at the end of the tail unused: items asking for
   * contiguous room are short, and a segment holds thousands of bytes. */
  if (seg_append(o))
    return NULL;
  return o->p;
}

void jrpc__out_release_idle(jrpc__outbuf_t *o) {
  if (o->head && jrpc__out_pending(o) == 0) {
    jrpc__out_free(o);
    o->flushed = 0; /* as fresh: positions start again at 0 */
  }
}

void jrpc__out_truncate(jrpc__outbuf_t *o, jrpc__outmark_t m) {
  if (!m.seg) {
    /* Marked before the first segment existed: drop everything pending. */
    jrpc__out_free(o);
    o->flushed = 0;
    return;
  }
  jrpc__seg_t *s = m.seg->next;
  while (s) {
    jrpc__seg_t *next = s->next;
    seg_release(o, s);
    s = next;
  }
  m.seg->next = NULL;
  if (o->tail != m.seg) {
    o->tail = m.seg;
    o->end = m.seg->data + m.seg->cap;
    /* m.pos counts every byte before the mark, m.p - data of them are in
     * the marked segment. */
    o->flushed = m.pos - (uint64_t)(m.p - m.seg->data);
    sync_origin(o);
  }
  o->p = m.p;
}

uint64_t jrpc__out_pending(const jrpc__outbuf_t *o) {
  uint64_t n = 0;
  for (const jrpc__seg_t *s = o->head; s; s = s->next) {
    size_t len = s == o->tail ? (size_t)(o->p - s->data) : s->len;
    n += len - s->off;
  }
  return n;
}

size_t jrpc__out_iov(jrpc__outbuf_t *o, const char **ptrs, size_t *lens,
                     size_t max) {
  size_t k = 0;
  for (jrpc__seg_t *s = o->head; s && k < max; s = s->next) {
    size_t len = s == o->tail ? (size_t)(o->p - s->data) : s->len;
    if (len == s->off)
      continue;
    ptrs[k] = s->data + s->off;
    lens[k] = len - s->off;
    k++;
  }
  return k;
}

void jrpc__out_consume(jrpc__outbuf_t *o, size_t n) {
  while (n && o->head) {
    jrpc__seg_t *s = o->head;
    size_t len = s == o->tail ? (size_t)(o->p - s->data) : s->len;
    size_t avail = len - s->off;
    size_t k = n < avail ? n : avail;
    s->off += k;
    n -= k;
    if (s->off < len)
      break;
    if (s == o->tail) {
      /* Rewind the emptied tail rather than return it: the next reply
       * reuses it. */
      o->flushed += len;
      s->off = 0;
      o->p = s->data;
      sync_origin(o);
      break;
    }
    o->head = s->next;
    seg_release(o, s);
  }
}

size_t jrpc__out_copy(jrpc__outbuf_t *o, char *dst, size_t cap) {
  size_t n = 0;
  for (jrpc__seg_t *s = o->head; s; s = s->next) {
    size_t len = s == o->tail ? (size_t)(o->p - s->data) : s->len;
    size_t k = len - s->off;
    if (k > cap - n)
      k = cap - n;
    memcpy(dst + n, s->data + s->off, k);
    n += k;
  }
  return n;
}

int jrpc__out_append(jrpc__outbuf_t *dst, jrpc__outbuf_t *src) {
  const char *ptrs[16];
  size_t lens[16];
  int rc = 0;
  for (;;) {
    size_t k = jrpc__out_iov(src, ptrs, lens, 16), total = 0;
    if (k == 0)
      break;
    for (size_t i = 0; i < k; i++) {
      rc |= jrpc__out_put(dst, ptrs[i], lens[i]);
      total += lens[i];
    }
    jrpc__out_consume(src, total);
  }
  return rc ? JRPC_ENOMEM : 0;
}
