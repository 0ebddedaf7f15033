/* introspect.h - what rpc.stats and GET /metrics show to the connection
 * that asks: the one place that decides it, so that no figure reaches a
 * caller by a path that forgot to ask.
 *
 * With its listener's `stats = full` (an operator's socket), everything:
 * every method of the generation and every slow call's peer. Otherwise
 * only the methods this connection may call (its view: not hidden by the
 * listener's `methods`, not denied to it by [access]) and, of the slow
 * calls, only those of such methods, with the peer only where it is the
 * caller's own. A denied method is left out like a hidden one: listing it
 * would tell a caller what exists and how much others use it, which is
 * what the denial keeps from it; -32006 says no more than that it exists,
 * and only to a caller who names it. */
#ifndef JRPCD_INTROSPECT_H
#define JRPCD_INTROSPECT_H

#include <string.h>
#include <sys/socket.h>

#include "peer.h"
#include "registry.h"
#include "slowcalls.h"
#include "server.h"

typedef struct jrpcd_scope {
  const jrpc__registry_t *all;  /* the generation's registry */
  const jrpc__registry_t *view; /* the caller's view of it */
  int full;                     /* its listener has stats = full */
  /* The caller's peer as slow calls record it (jrpcd_peer_text); empty
   * when it is not known, so that it matches nothing. */
  char own_peer[sizeof(((jrpcd_slow_entry_t *)0)->peer)];
} jrpcd_scope_t;

/* The scope of connection c, whose requests are looked up in view, a view
 * of all (or all itself). */
static inline void jrpcd_scope_init(jrpcd_scope_t *s, const jrpcd_conn_t *c,
                                    const jrpc__registry_t *all,
                                    const jrpc__registry_t *view) {
  const jrpc_peer_t *p = &c->st.peer;
  s->all = all;
  s->view = view;
  s->full = c->l->stats == JRPCD_STATS_FULL;
  s->own_peer[0] = '\0';
  /* A Unix peer without credentials, or a TCP one without an address,
   * has no identity to call its own. */
  if ((p->family == AF_UNIX && p->pid >= 0) || p->family == AF_INET ||
      p->family == AF_INET6)
    jrpcd_peer_text(p, s->own_peer, sizeof(s->own_peer));
}

/* Method `slot` of all: shown or not. */
static inline int jrpcd_scope_method(const jrpcd_scope_t *s, uint32_t slot) {
  if (s->full)
    return s->all->slots[slot].name && s->all->slots[slot].fn;
  /* the registry's own answer, the one rpc.discover asks too */
  return jrpc__registry_view_serves(s->all, s->view, slot);
}

/* A method known by its name only (a slow call's, which may be of an
 * earlier generation): shown if the current one has it and shows it. A
 * name cut short when recorded is not known for sure: full only. */
static inline int jrpcd_scope_named(const jrpcd_scope_t *s, const char *name,
                                    size_t len, int cut) {
  if (s->full)
    return 1;
  const jrpc__method_t *m = cut ? NULL : jrpc__registry_find(s->all, name, len);
  return m && jrpcd_scope_method(s, m->slot);
}

/* A peer as jrpcd_peer_text writes it: shown or not. */
static inline int jrpcd_scope_peer(const jrpcd_scope_t *s, const char *peer) {
  return s->full || (s->own_peer[0] && strcmp(peer, s->own_peer) == 0);
}

#endif
