/* interest.c - topics wanted from the broker, counted across workers; see
 * interest.h. */
#include "interest.h"

#include <stdlib.h>
#include <string.h>

struct jrpcd_topic_interest {
  jrpcd_topic_interest_t *next; /* in its bucket */
  jrpcd_topic_interest_t *next_pending;
  uint32_t hash;
  int count;    /* workers with a subscription on it */
  int held;     /* subscribed at the broker (the broker's thread's) */
  int marked;   /* on the pending list */
  int carried;  /* held by the connection this one replaced */
  void *handle; /* the broker's subscription (apply's) */
  size_t key_n;
  char key[];
};

#define FIRST_BUCKETS 64

int jrpcd_interest_init(jrpcd_interest_t *in) {
  memset(in, 0, sizeof *in);
  in->buckets = calloc(FIRST_BUCKETS, sizeof *in->buckets);
  if (!in->buckets)
    return -1;
  in->mask = FIRST_BUCKETS - 1;
  if (pthread_mutex_init(&in->lock, NULL) != 0) {
    free(in->buckets);
    in->buckets = NULL;
    return -1;
  }
  return 0;
}

void jrpcd_interest_free(jrpcd_interest_t *in) {
  if (!in->buckets)
    return;
  for (uint32_t b = 0; b <= in->mask; b++)
    for (jrpcd_topic_interest_t *t = in->buckets[b], *next; t; t = next) {
      next = t->next;
      free(t);
    }
  free(in->buckets);
  pthread_mutex_destroy(&in->lock);
  memset(in, 0, sizeof *in);
}

/* FNV-1a: the table is ours alone, keys come from subscribers' topics,
 * and its chains are only as long as the topics subscribed to. */
static uint32_t key_hash(const char *key, size_t n) {
  uint32_t h = 2166136261u;
  for (size_t i = 0; i < n; i++)
    h = (h ^ (unsigned char)key[i]) * 16777619u;
  return h;
}

/* Doubles the buckets when they average two entries; a failure keeps the
 * table as it is (longer chains, still right). */
static void maybe_grow(jrpcd_interest_t *in) {
  if (in->ntopics < 2 * ((size_t)in->mask + 1))
    return;
  uint32_t mask = in->mask * 2 + 1;
  jrpcd_topic_interest_t **b = calloc((size_t)mask + 1, sizeof *b);
  if (!b)
    return;
  for (uint32_t i = 0; i <= in->mask; i++)
    for (jrpcd_topic_interest_t *t = in->buckets[i], *next; t; t = next) {
      next = t->next;
      t->next = b[t->hash & mask];
      b[t->hash & mask] = t;
    }
  free(in->buckets);
  in->buckets = b;
  in->mask = mask;
}

static jrpcd_topic_interest_t *find(jrpcd_interest_t *in, const char *key,
                                    size_t key_n, uint32_t hash) {
  for (jrpcd_topic_interest_t *t = in->buckets[hash & in->mask]; t; t = t->next)
    if (t->hash == hash && t->key_n == key_n && memcmp(t->key, key, key_n) == 0)
      return t;
  return NULL;
}

static void unlink_topic(jrpcd_interest_t *in, jrpcd_topic_interest_t *t) {
  jrpcd_topic_interest_t **pp = &in->buckets[t->hash & in->mask];
  while (*pp != t)
    pp = &(*pp)->next;
  *pp = t->next;
  in->ntopics--;
  free(t);
}

/* The entry of key, made (count 0) if there is none; NULL out of memory.
 * Under the lock. */
static jrpcd_topic_interest_t *get(jrpcd_interest_t *in, const char *key,
                                   size_t key_n, uint32_t hash) {
  jrpcd_topic_interest_t *t = find(in, key, key_n, hash);
  if (t)
    return t;
  t = calloc(1, sizeof *t + key_n);
  if (!t)
    return NULL;
  t->hash = hash;
  t->key_n = key_n;
  memcpy(t->key, key, key_n);
  maybe_grow(in);
  t->next = in->buckets[hash & in->mask];
  in->buckets[hash & in->mask] = t;
  in->ntopics++;
  return t;
}

int jrpcd_interest_change(jrpcd_interest_t *in, const char *key, size_t key_n,
                          int delta) {
  uint32_t hash = key_hash(key, key_n);
  int wake = 0;
  pthread_mutex_lock(&in->lock);
  jrpcd_topic_interest_t *t = find(in, key, key_n, hash);
  if (!t && delta < 0) { /* never counted up: nothing to undo */
    pthread_mutex_unlock(&in->lock);
    return 0;
  }
  if (!t && !(t = get(in, key, key_n, hash))) {
    pthread_mutex_unlock(&in->lock);
    return -1;
  }
  int was = t->count > 0;
  t->count += delta;
  if (t->count < 0)
    t->count = 0;
  if (was != (t->count > 0) && !t->marked) {
    t->marked = 1;
    t->next_pending = in->pending;
    in->pending = t;
    wake = 1;
  }
  pthread_mutex_unlock(&in->lock);
  return wake;
}

size_t jrpcd_interest_take(jrpcd_interest_t *in,
                           int (*apply)(void *arg, const char *key,
                                        size_t key_n, int subscribe,
                                        void **handle),
                           void *arg) {
  size_t applied = 0;
  pthread_mutex_lock(&in->lock);
  jrpcd_topic_interest_t *list = in->pending, *retry = NULL;
  in->pending = NULL;
  while (list) {
    jrpcd_topic_interest_t *t = list;
    list = t->next_pending;
    int want = t->count > 0;
    if (want != t->held) {
      /* Only this thread changes held or frees an entry, so t stays while
       * the lock is let go for the broker call. */
      int how = want && t->carried ? JRPCD_INTEREST_AGAIN : want;
      pthread_mutex_unlock(&in->lock);
      int rc = apply(arg, t->key, t->key_n, how, &t->handle);
      pthread_mutex_lock(&in->lock);
      if (rc == 0) {
        t->held = want;
        t->carried = 0;
        applied++;
      } else {
        t->next_pending = retry;
        retry = t;
        continue;
      }
    }
    /* A worker that crossed zero again meanwhile found t marked and left
     * it to us: look once more. */
    if ((t->count > 0) != t->held) {
      t->next_pending = list;
      list = t;
      continue;
    }
    t->marked = 0;
    if (t->count == 0 && !t->held)
      unlink_topic(in, t);
  }
  for (jrpcd_topic_interest_t *t = retry, *next; t; t = next) {
    next = t->next_pending;
    t->next_pending = in->pending;
    in->pending = t;
  }
  pthread_mutex_unlock(&in->lock);
  return applied;
}

void jrpcd_interest_each_held(jrpcd_interest_t *in,
                              void (*each)(void *arg, const char *key,
                                           size_t key_n),
                              void *arg) {
  pthread_mutex_lock(&in->lock);
  for (uint32_t b = 0; b <= in->mask; b++)
    for (jrpcd_topic_interest_t *t = in->buckets[b]; t; t = t->next)
      if (t->held)
        each(arg, t->key, t->key_n);
  pthread_mutex_unlock(&in->lock);
}

int jrpcd_interest_carry(jrpcd_interest_t *to, jrpcd_interest_t *from) {
  int rc = 0;
  pthread_mutex_lock(&from->lock);
  pthread_mutex_lock(&to->lock);
  for (uint32_t b = 0; b <= from->mask; b++)
    for (jrpcd_topic_interest_t *t = from->buckets[b]; t; t = t->next) {
      if (!t->held)
        continue;
      jrpcd_topic_interest_t *u = get(to, t->key, t->key_n, t->hash);
      if (u)
        u->carried = 1;
      else
        rc = -1;
    }
  pthread_mutex_unlock(&to->lock);
  pthread_mutex_unlock(&from->lock);
  return rc;
}

void jrpcd_interest_forget_carried(jrpcd_interest_t *in) {
  pthread_mutex_lock(&in->lock);
  for (uint32_t b = 0; b <= in->mask; b++)
    for (jrpcd_topic_interest_t *t = in->buckets[b], *next; t; t = next) {
      next = t->next;
      if (t->carried && t->count == 0 && !t->held && !t->marked)
        unlink_topic(in, t);
    }
  pthread_mutex_unlock(&in->lock);
}

void jrpcd_interest_let_go(jrpcd_interest_t *in,
                           void (*release)(void *arg, void *handle),
                           void *arg) {
  pthread_mutex_lock(&in->lock);
  for (uint32_t b = 0; b <= in->mask; b++)
    for (jrpcd_topic_interest_t *t = in->buckets[b]; t; t = t->next)
      if (t->held) {
        release(arg, t->handle);
        t->handle = NULL;
        t->held = 0;
      }
  pthread_mutex_unlock(&in->lock);
}
