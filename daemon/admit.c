/* admit.c - who a connection's peer is, whether it may stay, and what it
 * may call. At accept (and again when a reload brings a new generation)
 * the peer's identity is read from the socket once: a listener's `peers`
 * may turn it away, max_connections_per_peer may (on TLS both before the
 * handshake, by address; cert: and san: once it is done), and the
 * listener's `methods` and the [access] rules decide, per method, whether
 * it is served, hidden (-32601, as if absent) or denied (-32006). Those
 * decisions become a view of the generation's registry that the
 * connection's requests are looked up in, so a call pays nothing for them;
 * connections with the same decisions share one view. */
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>

#include "conn_tls.h"
#include "log.h"
#include "server.h"

/* The most distinct views one generation keeps (each is a copy of the
 * method table): past it, connections are refused rather than let
 * memory grow. Distinct views come only from distinct decisions, which the
 * config bounds; this is a backstop. */
#define MAX_VIEWS 4096

enum { SERVE = 0, HIDE = 1, DENY = 2 };

typedef struct jrpcd_view {
  struct jrpcd_view *next;
  const jrpcd_policy_t *pol; /* for whom (same decisions, same view) */
  jrpc__registry_t reg;
  uint8_t decide[]; /* per slot */
} jrpcd_view_t;

/* Room for what an identity points to. */
typedef struct ident_buf {
  uint32_t groups[256];
  const char *sans[32];
  char names[2048];
} ident_buf_t;

/* Reads the peer's identity off the socket: credentials and (when asked)
 * supplementary groups on Unix sockets, the address on TCP, and on TLS
 * the verified certificate's CN and DNS names. 0, or -1 when the peer
 * cannot be known (gone already). */
static int conn_identity(jrpcd_conn_t *c, jrpcd_identity_t *id, ident_buf_t *b,
                         int want_groups) {
  uint32_t *groups = b->groups;
  size_t cap = sizeof(b->groups) / sizeof(b->groups[0]);
  memset(id, 0, sizeof(*id));
  int fd = -1;
  uv_fileno(&c->h.h, &fd);
  if (c->l->is_unix) {
    const jrpc_peer_t *p = &c->st.peer;
    id->family = AF_UNIX;
    id->has_cred = p->pid >= 0;
    id->uid = (uint32_t)p->uid;
    id->gid = (uint32_t)p->gid;
    socklen_t n = (socklen_t)(cap * sizeof(*groups));
    /* As they were at connect (Linux 4.13+); a peer in more groups than
     * fit is judged by these. */
    if (want_groups &&
        getsockopt(fd, SOL_SOCKET, SO_PEERGROUPS, groups, &n) == 0) {
      id->groups = groups;
      id->ngroups = n / sizeof(*groups);
    }
    return 0;
  }
  struct sockaddr_storage ss;
  int n = sizeof(ss);
  if (uv_tcp_getpeername(&c->h.tcp, (struct sockaddr *)&ss, &n) != 0)
    return -1;
  jrpcd_identity_set_addr(id, (const struct sockaddr *)&ss);
  if (c->tls)
    jrpcd_conn_tls_identity(c, id, b->sans, 32, b->names, sizeof(b->names));
  return 0;
}

/* One log line per second at most for peers turned away. */
static void turned_away(jrpcd_conn_t *c) {
  jrpcd_worker_t *w = c->w;
  uint64_t n = jrpcd_ratelog_due(&w->peers_log, uv_now(&w->loop));
  if (!n)
    return;
  char pt[96];
  jrpcd_warn("%s: %s is not among its peers: closed at once (%llu "
             "connection%s turned away since the last such line)",
             c->l->desc, jrpcd_conn_peer_text(c, pt, sizeof(pt)),
             (unsigned long long)n, n == 1 ? "" : "s");
}

/* max_connections_per_peer: 1 if c may stay (and now counts), 0 if its
 * peer has as many open already (logged at most once a second). */
static int count_peer(jrpcd_conn_t *c, const jrpcd_identity_t *id) {
  jrpcd_peerkey_t *k = &c->pkey;
  jrpcd_worker_t *w = c->w;
  if (id->family == AF_UNIX)
    jrpcd_peerkey_uid(k, id->uid);
  else
    jrpcd_peerkey_addr(&w->srv->peers_open, k, id->family, id->addr);
  uint32_t open;
  if (jrpcd_peercount_take(&w->srv->peers_open, k, &open)) {
    c->peer_counted = 1;
    return 1;
  }
  uint64_t n = jrpcd_ratelog_due(&w->per_peer_log, uv_now(&w->loop));
  if (n) {
    char pt[96];
    jrpcd_warn("%s: %s has %u connections open, max_connections_per_peer: "
               "closed at once (%llu turned away since the last such line)",
               c->l->desc, jrpcd_conn_peer_text(c, pt, sizeof(pt)), open,
               (unsigned long long)n);
  }
  return 0;
}

/* -32006 with the method's name as data; udata is that name. */
static int denied(jrpc_call_t *c, jrpc_val_t params, void *udata) {
  (void)params;
  const char *name = udata;
  if (jrpcd_log_enabled(JRPC_LOG_DEBUG)) {
    const jrpc_peer_t *p = jrpc_peer(c);
    if (p->family == AF_UNIX)
      jrpcd_debug("%s denied to uid %d ([access])", name, (int)p->uid);
    else
      jrpcd_debug("%s denied to %s ([access])", name, p->addr);
  }
  jrpc_error_begin(c, JRPC_ACCESS_DENIED, NULL);
  jrpc_w_str(c, name, strlen(name));
  return JRPC_EFAIL;
}

/* What this peer gets of each of g's methods; 1 if anything is other
 * than served. */
static int decide(const jrpcd_gen_t *g, const jrpcd_policy_t *pol,
                  const jrpcd_identity_t *id, uint8_t *out) {
  const jrpc__registry_t *r = &g->reg;
  int any = 0;
  for (uint32_t i = 0; i <= r->mask; i++) {
    const jrpc__method_t *m = &r->slots[i];
    uint8_t d = SERVE;
    if (m->name && m->fn) {
      if (pol->methods.n && !jrpcd_globs_match(&pol->methods, m->name, m->len))
        d = HIDE;
      else if (g->has_access &&
               !jrpcd_access_allows(&g->access, m->name, m->len, id))
        d = DENY;
    }
    out[i] = d;
    any |= d != SERVE;
  }
  return any;
}

/* The view with these decisions, made on first use; NULL when out of
 * memory or views. */
static const jrpc__registry_t *
view_of(jrpcd_gen_t *g, const jrpcd_policy_t *pol, const uint8_t *want) {
  size_t n = (size_t)g->reg.mask + 1;
  pthread_mutex_lock(&g->views_mu);
  jrpcd_view_t *v = g->views;
  while (v && (v->pol != pol || memcmp(v->decide, want, n) != 0))
    v = v->next;
  if (!v && g->nviews < MAX_VIEWS && (v = malloc(sizeof(*v) + n))) {
    if (jrpc__registry_view_init(&v->reg, &g->reg) != 0) {
      free(v);
      v = NULL;
    } else {
      v->pol = pol;
      memcpy(v->decide, want, n);
      for (size_t i = 0; i < n; i++) {
        jrpc__method_t *m = &v->reg.slots[i];
        if (want[i] == HIDE) {
          m->fn = NULL;
        } else if (want[i] == DENY) {
          m->fn = denied;
          m->udata = m->name;
        }
      }
      v->next = g->views;
      g->views = v;
      g->nviews++;
    }
  }
  pthread_mutex_unlock(&g->views_mu);
  return v ? &v->reg : NULL;
}

void jrpcd_views_free(jrpcd_gen_t *g) {
  while (g->views) {
    jrpcd_view_t *v = g->views;
    g->views = v->next;
    jrpc__registry_view_free(&v->reg);
    free(v);
  }
  g->nviews = 0;
}

/* Where c's requests are looked up under g: g's registry, or the view of
 * it that c's decisions call for. NULL when none can be had. */
static const jrpc__registry_t *lookup_for(jrpcd_conn_t *c, jrpcd_gen_t *g,
                                          const jrpcd_policy_t *pol,
                                          const jrpcd_identity_t *id) {
  if (!pol || (!pol->methods.n && !g->has_access))
    return &g->reg;
  uint8_t *want = malloc((size_t)g->reg.mask + 1);
  if (!want)
    return NULL;
  const jrpc__registry_t *r =
      decide(g, pol, id, want) ? view_of(g, pol, want) : &g->reg;
  free(want);
  if (!r) {
    char pt[96];
    jrpcd_error("%s: %s: no view of the methods could be made (out of "
                "memory, or %d distinct ones already): closing it",
                c->l->desc, jrpcd_conn_peer_text(c, pt, sizeof(pt)), MAX_VIEWS);
  }
  return r;
}

/* Whether some principal of l can be known only from a verified client
 * certificate (cert:, san:). */
static int names_certs(const jrpcd_plist_t *l) {
  for (size_t i = 0; i < l->n; i++)
    if (l->v[i].kind == JRPCD_PRIN_CERT || l->v[i].kind == JRPCD_PRIN_SAN)
      return 1;
  return 0;
}

int jrpcd_conn_admit(jrpcd_conn_t *c) {
  jrpcd_worker_t *w = c->w;
  const jrpcd_policy_t *pol = jrpcd_gen_policy(w->gen, c->l->name);
  int peers = pol && pol->peers.n;
  /* On TLS the views wait for the certificate (jrpcd_conn_admit_verified):
   * no frame is read before it. */
  int views = !c->l->tls && pol && (pol->methods.n || w->gen->has_access);
  c->reg = &w->gen->reg;
  if (!peers && !views && !w->srv->peers_open.limit)
    return 1; /* nothing to know of the peer */
  jrpcd_identity_t id;
  ident_buf_t buf;
  int want_groups = (pol && pol->want_groups) || w->gen->has_access;
  if (conn_identity(c, &id, &buf, want_groups) != 0)
    return 0; /* gone already, or unknown: not let in */
  /* The address decides now, before a byte of a TLS handshake is read.
   * A TLS peer whose address is not let in may still be by a cert: or
   * san: principal of the list, where a client certificate is asked for:
   * it gets its handshake (bounded by max_handshakes and
   * frame_timeout_ms), and the whole list is matched again once its
   * certificate is known. */
  if (peers && !jrpcd_plist_match(&pol->peers, &id) &&
      !(c->l->tls && names_certs(&pol->peers) && jrpcd_conn_tls_asks_cert(c))) {
    turned_away(c);
    return 0;
  }
  if (w->srv->peers_open.limit && !count_peer(c, &id))
    return 0;
  if (views && !(c->reg = lookup_for(c, w->gen, pol, &id)))
    return 0;
  return 1;
}

int jrpcd_conn_admit_verified(jrpcd_conn_t *c) {
  jrpcd_worker_t *w = c->w;
  const jrpcd_policy_t *pol = jrpcd_gen_policy(w->gen, c->l->name);
  int peers = pol && pol->peers.n;
  int views = pol && (pol->methods.n || w->gen->has_access);
  c->reg = &w->gen->reg;
  if (!peers && !views)
    return 1;
  jrpcd_identity_t id;
  ident_buf_t buf;
  if (conn_identity(c, &id, &buf, 0) != 0)
    return 0;
  if (peers && !jrpcd_plist_match(&pol->peers, &id)) {
    turned_away(c);
    return 0;
  }
  if (views && !(c->reg = lookup_for(c, w->gen, pol, &id)))
    return 0;
  return 1;
}

void jrpcd_conn_regen(jrpcd_conn_t *c) {
  jrpcd_worker_t *w = c->w;
  const jrpcd_policy_t *pol = jrpcd_gen_policy(w->gen, c->l->name);
  c->reg = &w->gen->reg;
  if (!pol || (!pol->methods.n && !w->gen->has_access))
    return;
  jrpcd_identity_t id;
  ident_buf_t buf;
  const jrpc__registry_t *r = NULL;
  if (conn_identity(c, &id, &buf, 1) == 0)
    r = lookup_for(c, w->gen, pol, &id);
  if (r)
    c->reg = r;
  else
    jrpcd_conn_close(c, "no view of the reloaded methods");
}
