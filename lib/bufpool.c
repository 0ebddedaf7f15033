/* bufpool.c - pooled, aligned, padded buffers; see bufpool.h. */
#include "bufpool.h"

#include <stdlib.h>

#include "common.h"

/* The smallest class whose size holds `total` bytes (a power of two at
 * least 1 << MIN_SHIFT), or -1 beyond the largest. */
static int size_class(size_t total) {
  if (total <= ((size_t)1 << JRPC__BUF_MIN_SHIFT))
    return 0;
  /* ceil(log2(total)) for total >= 2 */
  int k = (int)(sizeof(unsigned long long) * 8) - __builtin_clzll(total - 1);
  return k <= JRPC__BUF_MAX_SHIFT ? k - JRPC__BUF_MIN_SHIFT : -1;
}

void jrpc__bufpool_init(jrpc__bufpool_t *p, size_t retain) {
  for (int i = 0; i < JRPC__BUF_CLASSES; i++)
    p->free[i] = NULL;
  p->idle = 0;
  p->retain = retain;
  p->live = 0;
  p->mallocs = 0;
}

void jrpc__bufpool_free(jrpc__bufpool_t *p) {
  for (int i = 0; i < JRPC__BUF_CLASSES; i++) {
    void *b = p->free[i];
    while (b) {
      void *next = *(void **)b;
      free(b);
      b = next;
    }
    p->free[i] = NULL;
  }
  p->idle = 0;
}

char *jrpc__bufpool_get(jrpc__bufpool_t *p, size_t want, size_t *cap) {
  if (want > ((size_t)1 << JRPC__BUF_MAX_SHIFT) - JRPC__PAD)
    return NULL;
  int k = size_class(want + JRPC__PAD);
  if (k < 0)
    return NULL;
  size_t size = (size_t)1 << (k + JRPC__BUF_MIN_SHIFT);
  char *b = p->free[k];
  if (b) {
    p->free[k] = *(void **)b;
    p->idle -= size;
  } else {
    b = aligned_alloc(64, size);
    if (!b)
      return NULL;
    p->mallocs++;
  }
  p->live += size;
  *cap = size - JRPC__PAD;
  return b;
}

void jrpc__bufpool_put(jrpc__bufpool_t *p, char *buf, size_t cap) {
  if (!buf)
    return;
  size_t size = cap + JRPC__PAD;
  int k = size_class(size);
  p->live -= size;
  if (k < 0 || p->idle + size > p->retain) {
    free(buf);
    return;
  }
  *(void **)buf = p->free[k];
  p->free[k] = buf;
  p->idle += size;
}
