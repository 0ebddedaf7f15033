/* interest.h - which topics this instance needs from the broker
 * ([cluster]), counted across the workers (interest.c). A worker counts a
 * topic up when it gets its first subscription on it and down after its
 * last; the broker's thread then asks which topics to subscribe to or
 * unsubscribe from. A topic whose count crosses zero is marked, and the
 * broker's thread compares the count with what it holds at the broker
 * when it looks, so that any interleaving of workers ends with the broker
 * subscribed exactly to the topics some worker counts, and never
 * subscribed twice or unsubscribed twice. */
#ifndef JRPCD_INTEREST_H
#define JRPCD_INTEREST_H

#include <pthread.h>
#include <stddef.h>
#include <stdint.h>

typedef struct jrpcd_topic_interest jrpcd_topic_interest_t;

typedef struct jrpcd_interest {
  pthread_mutex_t lock;
  jrpcd_topic_interest_t **buckets;
  uint32_t mask;                   /* buckets - 1 */
  size_t ntopics;                  /* entries, counted or held */
  jrpcd_topic_interest_t *pending; /* crossed zero since the last take */
} jrpcd_interest_t;

int jrpcd_interest_init(jrpcd_interest_t *in);
void jrpcd_interest_free(jrpcd_interest_t *in);

/* Any thread: the topic KEY (module, NUL, topic; key_n bytes) gains
 * (delta 1) or loses (-1) one worker's interest. 1 when the broker's
 * thread has work to do now (wake it), 0 when not, -1 out of memory (the
 * count unchanged). */
int jrpcd_interest_change(jrpcd_interest_t *in, const char *key, size_t key_n,
                          int delta);

/* apply's subscribe for a topic the connection this one replaced held
 * (jrpcd_interest_carry): its subscribers may have lost messages between
 * the two. */
#define JRPCD_INTEREST_AGAIN 2

/* The broker's thread: for each topic marked since the last call whose
 * wish differs from what the broker holds, apply(arg, key, key_n,
 * subscribe, handle) (1 or JRPCD_INTEREST_AGAIN: subscribe, 0:
 * unsubscribe; *handle is the
 * topic's, for apply to keep its subscription in); apply returns 0 when done,
 * -1 if it could not (the topic stays marked for the next call). Returns
 * how many it applied. apply runs without the lock held. */
size_t jrpcd_interest_take(jrpcd_interest_t *in,
                           int (*apply)(void *arg, const char *key,
                                        size_t key_n, int subscribe,
                                        void **handle),
                           void *arg);

/* The broker's thread: each(arg, key, key_n) for every topic held at
 * the broker (after a reconnect, or to resubscribe elsewhere). */
void jrpcd_interest_each_held(jrpcd_interest_t *in,
                              void (*each)(void *arg, const char *key,
                                           size_t key_n),
                              void *arg);

/* A new broker connection (a reload's) takes over from another: every
 * topic FROM holds at its broker is marked in TO, so that TO's first
 * subscription to it is applied as JRPCD_INTEREST_AGAIN. The counts are
 * not copied: the workers count into TO anew. 0; -1 out of memory (some
 * topics not marked). */
int jrpcd_interest_carry(jrpcd_interest_t *to, jrpcd_interest_t *from);
/* Once every worker has counted into the table: the topics carried that
 * no worker counts (their subscribers left during the switch) go, so
 * that a later first subscriber is not told of a loss. */
void jrpcd_interest_forget_carried(jrpcd_interest_t *in);
/* The connection is closed: release(arg, handle) for every topic held at
 * the broker, which then holds none. */
void jrpcd_interest_let_go(jrpcd_interest_t *in,
                           void (*release)(void *arg, void *handle), void *arg);

#endif
