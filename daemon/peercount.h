/* peercount.h - connections open per peer, over every listener and
 * worker, for max_connections_per_peer: a peer is a uid on Unix sockets
 * and an address on TCP. Taken at accept and given back at close, under
 * one lock: never on the request path. */
#ifndef JRPCD_PEERCOUNT_H
#define JRPCD_PEERCOUNT_H

#include <pthread.h>
#include <stddef.h>
#include <stdint.h>

typedef struct jrpcd_peerkey {
  uint8_t family;   /* AF_UNIX (uid in id), AF_INET, AF_INET6 */
  uint8_t addr[16]; /* AF_INET: the first 4 */
  uint32_t id;
} jrpcd_peerkey_t;

typedef struct jrpcd_peercount {
  pthread_mutex_t mu;
  struct jrpcd_peerslot *slots; /* open addressing, a power of two */
  size_t cap, used, tombs;      /* slots with a count; left by peers gone */
  uint32_t limit;               /* 0: no limit (and nothing is counted) */
} jrpcd_peercount_t;

void jrpcd_peercount_init(jrpcd_peercount_t *pc, uint32_t limit);
void jrpcd_peercount_free(jrpcd_peercount_t *pc);

/* One more connection of k: 1 if it may stay (and was counted), 0 at the
 * limit (or without memory for a new peer: refused, not left uncounted).
 * *open receives the peer's count as it is now. */
int jrpcd_peercount_take(jrpcd_peercount_t *pc, const jrpcd_peerkey_t *k,
                         uint32_t *open);
/* A counted connection of k has closed. */
void jrpcd_peercount_give(jrpcd_peercount_t *pc, const jrpcd_peerkey_t *k);

#endif
