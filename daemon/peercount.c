/* peercount.c - connections per peer; see peercount.h. An open-addressing
 * table with linear probing, rebuilt (tombstones dropped) as it grows or
 * fills with them. */
#include "peercount.h"

#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>

typedef struct jrpcd_peerslot {
  jrpcd_peerkey_t key;
  uint32_t count; /* 0: empty, or a tombstone when `gone` */
  uint8_t gone;
} slot_t;

#define FIRST_CAP 64

void jrpcd_peercount_init(jrpcd_peercount_t *pc, uint32_t limit,
                          unsigned prefix_v6) {
  memset(pc, 0, sizeof(*pc));
  pthread_mutex_init(&pc->mu, NULL);
  pc->limit = limit;
  pc->prefix_v6 = prefix_v6 >= 1 && prefix_v6 <= 128 ? prefix_v6 : 128;
}

void jrpcd_peerkey_uid(jrpcd_peerkey_t *k, uint32_t uid) {
  memset(k, 0, sizeof(*k));
  k->family = AF_UNIX;
  k->id = uid;
}

void jrpcd_peerkey_addr(const jrpcd_peercount_t *pc, jrpcd_peerkey_t *k,
                        int family, const uint8_t addr[16]) {
  memset(k, 0, sizeof(*k));
  k->family = (uint8_t)family;
  if (family == AF_INET) {
    memcpy(k->addr, addr, 4);
    return;
  }
  unsigned full = pc->prefix_v6 / 8, rest = pc->prefix_v6 % 8;
  memcpy(k->addr, addr, full);
  if (rest)
    k->addr[full] = (uint8_t)(addr[full] & (0xFF << (8 - rest)));
}

void jrpcd_peercount_free(jrpcd_peercount_t *pc) {
  free(pc->slots);
  pc->slots = NULL;
  pc->cap = pc->used = 0;
  pthread_mutex_destroy(&pc->mu);
}

static int same(const jrpcd_peerkey_t *a, const jrpcd_peerkey_t *b) {
  return a->family == b->family && a->id == b->id &&
         memcmp(a->addr, b->addr, sizeof(a->addr)) == 0;
}

/* FNV-1a over the key's fields (not its padding). */
static size_t hash(const jrpcd_peerkey_t *k) {
  uint64_t h = 1469598103934665603u;
  uint8_t b[sizeof(k->addr) + 5];
  b[0] = k->family;
  memcpy(b + 1, k->addr, sizeof(k->addr));
  memcpy(b + 1 + sizeof(k->addr), &k->id, 4);
  for (size_t i = 0; i < sizeof(b); i++)
    h = (h ^ b[i]) * 1099511628211u;
  return (size_t)h;
}

/* The slot holding k, or the first free one of its probe sequence. */
static slot_t *find(slot_t *slots, size_t cap, const jrpcd_peerkey_t *k,
                    int for_insert) {
  slot_t *reuse = NULL;
  for (size_t i = hash(k) & (cap - 1), n = 0; n < cap;
       i = (i + 1) & (cap - 1), n++) {
    slot_t *s = &slots[i];
    if (s->count && same(&s->key, k))
      return s;
    if (!s->count && !s->gone)
      return for_insert && reuse ? reuse : (for_insert ? s : NULL);
    if (s->gone && !reuse)
      reuse = s;
  }
  return for_insert ? reuse : NULL;
}

/* Room for one more peer: a table twice the live peers (at least the
 * first size), tombstones left behind. */
static int make_room(jrpcd_peercount_t *pc) {
  if (pc->cap && (pc->used + pc->tombs + 1) * 4 <= pc->cap * 3)
    return 0;
  size_t cap = FIRST_CAP;
  while (cap < (pc->used + 1) * 2)
    cap *= 2;
  slot_t *slots = calloc(cap, sizeof(*slots));
  if (!slots)
    return -1;
  for (size_t i = 0; i < pc->cap; i++)
    if (pc->slots[i].count)
      *find(slots, cap, &pc->slots[i].key, 1) = pc->slots[i];
  free(pc->slots);
  pc->slots = slots;
  pc->cap = cap;
  pc->tombs = 0;
  return 0;
}

int jrpcd_peercount_take(jrpcd_peercount_t *pc, const jrpcd_peerkey_t *k,
                         uint32_t *open) {
  *open = 0;
  if (!pc->limit)
    return 1;
  pthread_mutex_lock(&pc->mu);
  slot_t *s = pc->cap ? find(pc->slots, pc->cap, k, 0) : NULL;
  int ok = 1;
  if (s) {
    *open = s->count;
    if (s->count >= pc->limit)
      ok = 0;
    else
      *open = ++s->count;
  } else if (make_room(pc) != 0) {
    ok = 0;
  } else {
    s = find(pc->slots, pc->cap, k, 1);
    if (s->gone)
      pc->tombs--;
    s->key = *k;
    s->count = 1;
    s->gone = 0;
    pc->used++;
    *open = 1;
  }
  pthread_mutex_unlock(&pc->mu);
  return ok;
}

void jrpcd_peercount_give(jrpcd_peercount_t *pc, const jrpcd_peerkey_t *k) {
  if (!pc->limit)
    return;
  pthread_mutex_lock(&pc->mu);
  slot_t *s = pc->cap ? find(pc->slots, pc->cap, k, 0) : NULL;
  if (s && --s->count == 0) {
    s->gone = 1;
    pc->used--;
    pc->tombs++;
  }
  pthread_mutex_unlock(&pc->mu);
}
