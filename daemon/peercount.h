/* peercount.h - connections open per peer, over every listener and
 * worker, for max_connections_per_peer: a peer is a uid on Unix sockets,
 * an address on IPv4 and an address prefix (peer_prefix_v6 bits) on IPv6,
 * where one host is commonly given a whole /64 and could otherwise take
 * a slot per address. Taken at accept and given back at close, under one
 * lock: never on the request path. */
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
  unsigned prefix_v6;           /* IPv6 bits that name one peer (1..128) */
} jrpcd_peercount_t;

void jrpcd_peercount_init(jrpcd_peercount_t *pc, uint32_t limit,
                          unsigned prefix_v6);
void jrpcd_peercount_free(jrpcd_peercount_t *pc);

/* The key of a uid (AF_UNIX) or of an address (AF_INET: addr's first 4
 * bytes; AF_INET6: its first pc->prefix_v6 bits, the rest zeroed). */
void jrpcd_peerkey_uid(jrpcd_peerkey_t *k, uint32_t uid);
void jrpcd_peerkey_addr(const jrpcd_peercount_t *pc, jrpcd_peerkey_t *k,
                        int family, const uint8_t addr[16]);
void jrpcd_peercount_free(jrpcd_peercount_t *pc);

/* One more connection of k: 1 if it may stay (and was counted), 0 at the
 * limit (or without memory for a new peer: refused, not left uncounted).
 * *open receives the peer's count as it is now. */
int jrpcd_peercount_take(jrpcd_peercount_t *pc, const jrpcd_peerkey_t *k,
                         uint32_t *open);
/* A counted connection of k has closed. */
void jrpcd_peercount_give(jrpcd_peercount_t *pc, const jrpcd_peerkey_t *k);

#endif
