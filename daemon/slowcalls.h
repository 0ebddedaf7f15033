/* slowcalls.h - slow_call_ms: calls that took longer are logged (at most
 * a line a second per worker, with how many were not) and the last few of
 * each worker kept for rpc.stats, which merges them by time and shows
 * each caller those its scope allows (introspect.h). */
#ifndef JRPCD_SLOWCALLS_H
#define JRPCD_SLOWCALLS_H

#include <pthread.h>
#include <stdint.h>

#include "dispatch.h"

#define JRPCD_SLOW_KEEP 16 /* per worker, and in rpc.stats */

typedef struct jrpcd_slow_entry {
  uint64_t at_ms;  /* when it ended: ms since the Unix epoch */
  uint64_t ns;     /* how long it took */
  uint32_t calls;  /* synchronous calls of one read share a duration */
  uint8_t outcome; /* jrpc__outcome_t */
  uint8_t cut;     /* method is the start of a longer name */
  char method[64]; /* cut to fit */
  char peer[64];
} jrpcd_slow_entry_t;

/* One worker's: written by it, read by rpc.stats on any worker (under mu;
 * only slow calls take it). */
typedef struct jrpcd_slowcalls {
  pthread_mutex_t mu;
  jrpcd_slow_entry_t ring[JRPCD_SLOW_KEEP];
  uint64_t total; /* slow calls since start; ring[total % KEEP] is next */
  uint64_t logged_ms, unlogged; /* the log's rate limit (monotonic ms) */
} jrpcd_slowcalls_t;

void jrpcd_slowcalls_init(jrpcd_slowcalls_t *s);
void jrpcd_slowcalls_free(jrpcd_slowcalls_t *s);

/* The engine's hook (jrpc__slow_fn); arg is the worker's
 * jrpcd_slowcalls_t. */
void jrpcd_slowcalls_note(void *arg, const jrpc__slow_call_t *call);

/* "slow_calls": the last JRPCD_SLOW_KEEP of all n workers' rings that
 * scope shows, oldest first, as a member of the object being written; a
 * call's "peer" only where the scope shows it. */
struct jrpcd_scope;
int jrpcd_slowcalls_write(jrpc_call_t *c, jrpcd_slowcalls_t *const *rings,
                          unsigned n, const struct jrpcd_scope *scope);

#endif
