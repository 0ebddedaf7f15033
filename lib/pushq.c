/* pushq.c - published messages and the workers' inboxes; see pushq.h. */
#include "pushq.h"

#include <stdlib.h>
#include <string.h>

#include "bytescan.h"
#include "jrpc/jrpc.h"
#include "registry.h"

jrpc__pubmsg_t *jrpc__pubmsg_new(const char *ns, size_t ns_n, const char *topic,
                                 size_t topic_n, const char *json,
                                 size_t json_n, unsigned refs) {
  size_t key_n = ns_n + 1 + topic_n;
  if (key_n > UINT32_MAX || json_n > UINT32_MAX)
    return NULL;
  jrpc__pubmsg_t *m = malloc(sizeof(*m) + key_n + json_n);
  if (!m)
    return NULL;
  atomic_init(&m->refs, refs);
  memcpy(m->data, ns, ns_n);
  m->data[ns_n] = '\0';
  memcpy(m->data + ns_n + 1, topic, topic_n);
  /* CR and LF as spaces, so every notification of it stays on one line
   * (newline framing) without a scan per subscription: both are
   * whitespace outside JSON strings and invalid inside them. */
  char *copy = m->data + key_n, *end = copy + json_n;
  memcpy(copy, json, json_n);
  for (char *q = copy; (q = (char *)jrpc__scan_crlf(q, end)) < end; q++)
    *q = ' ';
  m->key_n = (uint32_t)key_n;
  m->json_n = (uint32_t)json_n;
  m->hash = jrpc__name_hash(m->data, key_n);
  return m;
}

void jrpc__pubmsg_unref(jrpc__pubmsg_t *m) {
  if (atomic_fetch_sub_explicit(&m->refs, 1, memory_order_acq_rel) == 1)
    free(m);
}

int jrpc__inbox_init(jrpc__inbox_t *q, size_t cap) {
  size_t n = 2;
  while (n < cap)
    n *= 2;
  q->cells = calloc(n, sizeof(*q->cells));
  if (!q->cells)
    return JRPC_ENOMEM;
  for (size_t i = 0; i < n; i++)
    atomic_init(&q->cells[i].seq, i);
  q->mask = n - 1;
  atomic_init(&q->head, 0);
  q->tail = 0;
  return 0;
}

void jrpc__inbox_free(jrpc__inbox_t *q) {
  if (!q->cells)
    return;
  jrpc__pubmsg_t *m;
  while ((m = jrpc__inbox_pop(q)) != NULL)
    jrpc__pubmsg_unref(m);
  free(q->cells);
  q->cells = NULL;
}

int jrpc__inbox_push(jrpc__inbox_t *q, jrpc__pubmsg_t *m) {
  size_t pos = atomic_load_explicit(&q->head, memory_order_relaxed);
  for (;;) {
    jrpc__inbox_cell_t *c = &q->cells[pos & q->mask];
    size_t seq = atomic_load_explicit(&c->seq, memory_order_acquire);
    intptr_t diff = (intptr_t)seq - (intptr_t)pos;
    if (diff == 0) {
      /* The cell is free at pos: claim pos, or learn the new head. */
      if (atomic_compare_exchange_weak_explicit(&q->head, &pos, pos + 1,
                                                memory_order_relaxed,
                                                memory_order_relaxed)) {
        c->msg = m;
        atomic_store_explicit(&c->seq, pos + 1, memory_order_release);
        return 0;
      }
    } else if (diff < 0) {
      return JRPC_E2BIG; /* the consumer has not freed this cell yet */
    } else {
      pos = atomic_load_explicit(&q->head, memory_order_relaxed);
    }
  }
}

jrpc__pubmsg_t *jrpc__inbox_pop(jrpc__inbox_t *q) {
  jrpc__inbox_cell_t *c = &q->cells[q->tail & q->mask];
  size_t seq = atomic_load_explicit(&c->seq, memory_order_acquire);
  if (seq != q->tail + 1)
    return NULL; /* empty, or its producer is still writing it */
  jrpc__pubmsg_t *m = c->msg;
  atomic_store_explicit(&c->seq, q->tail + q->mask + 1, memory_order_release);
  q->tail++;
  return m;
}
