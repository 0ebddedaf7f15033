/* pushq.h - what a publish hands to the workers: the message, copied once
 * and shared by reference, and each worker's inbox, a bounded queue that
 * any thread may put into without a lock and only its worker takes from.
 * A full inbox refuses at once: a publisher never waits. */
#ifndef JRPC_PUSHQ_H
#define JRPC_PUSHQ_H

#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>

/* One published message. data holds the topic's key (the publishing
 * module's name, a NUL, the topic) and then the result's JSON. */
typedef struct jrpc__pubmsg {
  atomic_uint refs;
  uint32_t hash; /* of the key (jrpc__name_hash) */
  uint32_t key_n;
  uint32_t json_n;
  char data[];
} jrpc__pubmsg_t;

/* NULL without memory, or when a part is longer than 4 GiB. */
jrpc__pubmsg_t *jrpc__pubmsg_new(const char *ns, size_t ns_n, const char *topic,
                                 size_t topic_n, const char *json,
                                 size_t json_n, unsigned refs);
static inline const char *jrpc__pubmsg_json(const jrpc__pubmsg_t *m) {
  return m->data + m->key_n;
}
/* Lets go of one reference; the last frees it. Any thread. */
void jrpc__pubmsg_unref(jrpc__pubmsg_t *m);

typedef struct jrpc__inbox_cell {
  atomic_size_t seq;
  jrpc__pubmsg_t *msg;
} jrpc__inbox_cell_t;

/* A bounded queue of many producers and one consumer: each cell's
 * sequence number says whether it is free for the producer at that
 * position or filled for the consumer (after D. Vyukov's bounded queue). */
typedef struct jrpc__inbox {
  jrpc__inbox_cell_t *cells;
  size_t mask;
  _Alignas(64) atomic_size_t head; /* producers' next position */
  _Alignas(64) size_t tail;        /* the consumer's next position */
} jrpc__inbox_t;

/* cap is rounded up to a power of two. 0 or JRPC_ENOMEM. */
int jrpc__inbox_init(jrpc__inbox_t *q, size_t cap);
/* Lets go of every message still queued. No producer may be running. */
void jrpc__inbox_free(jrpc__inbox_t *q);
/* Any thread: 0, or JRPC_E2BIG when the inbox is full (m not taken). */
int jrpc__inbox_push(jrpc__inbox_t *q, jrpc__pubmsg_t *m);
/* The consumer's thread: the oldest message, or NULL. */
jrpc__pubmsg_t *jrpc__inbox_pop(jrpc__inbox_t *q);

#endif
