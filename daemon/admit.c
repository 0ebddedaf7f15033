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
#include "admit.h"

#include <errno.h>
#include <limits.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>

#include "conn_auth.h"
#include "log.h"
#include "server.h"
#include "transport.h"

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

/* Room for what an identity points to. Most peers' groups fit in
 * `groups`; a peer in more (Linux allows NGROUPS_MAX, 65536) gets `more`,
 * allocated to fit and freed by ident_release. */
typedef struct ident_buf {
  uint32_t groups[256];
  uint32_t *more;
  const char *sans[32];
  char names[2048];
} ident_buf_t;

static void ident_release(ident_buf_t *b) {
  free(b->more);
  b->more = NULL;
}

/* An ident_buf_t released when it goes out of scope, whichever return
 * leaves it. */
#define IDENT_BUF(name)                                                        \
  ident_buf_t name __attribute__((cleanup(ident_release))) = {.more = NULL}

/* -1, logged: a Unix peer whose groups cannot be read (only memory
 * running out or a kernel fault gets here) is not let in, rather than
 * judged by fewer groups than it has. */
static int groups_unread(jrpcd_conn_t *c, const jrpcd_identity_t *id,
                         const char *why) {
  jrpcd_warn("%s: the supplementary groups of uid %u cannot be read (%s): "
             "closed at once",
             c->l->desc, id->uid, why);
  return -1;
}

/* The Unix peer's supplementary groups, as they were at connect (Linux
 * 4.13+), all of them. 0, or -1 (groups_unread). */
static int peer_groups(jrpcd_conn_t *c, int fd, jrpcd_identity_t *id,
                       ident_buf_t *b) {
  uint32_t *groups = b->groups;
  socklen_t n = (socklen_t)sizeof(b->groups);
  if (getsockopt(fd, SOL_SOCKET, SO_PEERGROUPS, groups, &n) != 0) {
    if (errno == ENOPROTOOPT)
      return 0; /* a kernel before 4.13: by uid and primary gid alone */
    if (errno != ERANGE)
      return groups_unread(c, id, strerror(errno));
    /* ERANGE: n is now the size the groups need. */
    if (n <= sizeof(b->groups) || n > NGROUPS_MAX * sizeof(uint32_t))
      return groups_unread(c, id, "a group count out of range");
    if (!(groups = b->more = malloc(n)))
      return groups_unread(c, id, "out of memory");
    if (getsockopt(fd, SOL_SOCKET, SO_PEERGROUPS, groups, &n) != 0)
      return groups_unread(c, id, strerror(errno));
  }
  id->groups = groups;
  id->ngroups = n / sizeof(*groups);
  return 0;
}

/* Reads the peer's identity off the socket: credentials and (when asked)
 * supplementary groups on Unix sockets, the address on TCP, and on TLS
 * the verified certificate's CN and DNS names, and on HTTP the bearer
 * token its requests bring. 0, or -1 when the peer cannot be known (gone
 * already). b is an IDENT_BUF. */
static int conn_identity(jrpcd_conn_t *c, jrpcd_identity_t *id, ident_buf_t *b,
                         int want_groups) {
  memset(id, 0, sizeof(*id));
  id->token = jrpcd_conn_token(c); /* a bearer token's name (conn_auth.c) */
  int fd = -1;
  uv_fileno(&c->h.h, &fd);
  if (c->l->is_unix) {
    const jrpc_peer_t *p = &c->st.peer;
    id->family = AF_UNIX;
    id->has_cred = p->pid >= 0;
    id->uid = (uint32_t)p->uid;
    id->gid = (uint32_t)p->gid;
    return want_groups ? peer_groups(c, fd, id, b) : 0;
  }
  struct sockaddr_storage ss;
  int n = sizeof(ss);
  if (uv_tcp_getpeername(&c->h.tcp, (struct sockaddr *)&ss, &n) != 0)
    return -1;
  jrpcd_identity_set_addr(id, (const struct sockaddr *)&ss);
  if (c->tr->identity) /* a TLS client certificate, once verified */
    c->tr->identity(c, id, b->sans, 32, b->names, sizeof(b->names));
  return 0;
}

/* One log line per second at most for peers turned away. */
static void turned_away(jrpcd_conn_t *c) {
  JRPC__STAT_INC(c->w->refused[JRPCD_REFUSED_PEERS]);
  char pt[96];
  uint64_t n = jrpcd_conn_log_due(c, &c->w->peers_log, pt, sizeof(pt));
  if (n)
    jrpcd_warn("%s: %s is not among its peers: closed at once (%llu "
               "connection%s turned away since the last such line)",
               c->l->desc, pt, (unsigned long long)n, n == 1 ? "" : "s");
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
  JRPC__STAT_INC(w->refused[JRPCD_REFUSED_PER_PEER]);
  char pt[96];
  uint64_t n = jrpcd_conn_log_due(c, &w->per_peer_log, pt, sizeof(pt));
  if (n)
    jrpcd_warn("%s: %s has %u connections open, max_connections_per_peer: "
               "closed at once (%llu turned away since the last such line)",
               c->l->desc, pt, open, (unsigned long long)n);
  return 0;
}

/* -32006 with the method's name as data; udata is that name. It stands
 * in a view's slot for a method the view denies (view_of), so it runs
 * before anything of the method is looked at, params included. Dispatch
 * counts it as a call of the method and an error (rpc.stats); the log
 * says so at most once a second per worker, with how many since. */
static int denied(jrpc_call_t *c, jrpc_val_t params, void *udata) {
  (void)params;
  const char *name = udata;
  jrpc__call_t *call = (jrpc__call_t *)c;
  /* Always a synchronous call of a connection's frame: the sink is its. */
  jrpcd_conn_t *conn = jrpcd_conn_of_sink(call->e->sink);
  char pt[96];
  uint64_t n = jrpcd_conn_log_due(conn, &conn->w->denied_log, pt, sizeof(pt));
  if (n)
    jrpcd_warn("%s: %s denied to %s by [access] (%llu call%s denied since "
               "the last such line)",
               conn->l->desc, name, pt, (unsigned long long)n,
               n == 1 ? "" : "s");
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
      /* The listing of what this caller may call (and no more) stays
       * callable wherever the listener's discover key allows it. */
      if (!m->owner && m->len == 12 && memcmp(m->name, "rpc.discover", 12) == 0)
        d = pol->discover ? SERVE : HIDE;
      else if (pol->methods.n &&
               !jrpcd_globs_match(&pol->methods, m->name, m->len))
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
        if (want[i] == HIDE)
          jrpc__registry_view_withhold(&v->reg, (uint32_t)i, NULL, NULL);
        else if (want[i] == DENY)
          jrpc__registry_view_withhold(&v->reg, (uint32_t)i, denied,
                                       v->reg.slots[i].name);
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
  if (!pol || (!pol->methods.n && !g->has_access && pol->discover))
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

/* Admission at accept (verified 0: what the socket says, before a byte is
 * read) or again once a TLS client certificate is known (verified 1):
 * `peers`, the per-peer count (at accept only) and the view of the
 * methods. 0 if the connection may not stay (the log says why). */
static int admit(jrpcd_conn_t *c, int verified) {
  jrpcd_worker_t *w = c->w;
  const jrpcd_policy_t *pol = jrpcd_gen_policy(w->gen, c->l->name);
  int peers = pol && pol->peers.n;
  int want_views = pol && (pol->methods.n || w->gen->has_access);
  /* On TLS the views wait for the certificate: no frame is read before
   * it. */
  int views = want_views && (verified || !c->l->tls);
  int count = !verified && w->srv->peers_open.limit;
  /* Fails closed: where a view is wanted, lookups find nothing until it
   * is made. */
  c->reg = want_views ? NULL : &w->gen->reg;
  if (!peers && !views && !count)
    return 1; /* nothing to know of the peer */
  jrpcd_identity_t id;
  IDENT_BUF(buf);
  int want_groups =
      !verified && ((pol && pol->want_groups) || w->gen->has_access);
  if (conn_identity(c, &id, &buf, want_groups) != 0)
    return 0; /* gone already, or unknown: not let in */
  /* At accept the address decides, before a byte of a TLS handshake is
   * read. A TLS peer whose address is not let in may still be by a cert:
   * or san: principal of the list, where a client certificate is asked
   * for: it gets its handshake (bounded by max_handshakes and
   * frame_timeout_ms), and the whole list is matched again once its
   * certificate is known. */
  if (peers && !jrpcd_plist_match(&pol->peers, &id) &&
      !(!verified && c->l->tls && names_certs(&pol->peers) &&
        jrpcd_conn_tls_asks_cert(c))) {
    turned_away(c);
    return 0;
  }
  if (count && !count_peer(c, &id))
    return 0;
  if (views && !(c->reg = lookup_for(c, w->gen, pol, &id)))
    return 0;
  return 1;
}

int jrpcd_conn_admit(jrpcd_conn_t *c) {
  return admit(c, 0);
}

int jrpcd_conn_admit_verified(jrpcd_conn_t *c) {
  return admit(c, 1);
}

int jrpcd_conn_review(jrpcd_conn_t *c) {
  jrpcd_worker_t *w = c->w;
  const jrpcd_policy_t *pol = jrpcd_gen_policy(w->gen, c->l->name);
  if (!pol || (!pol->methods.n && !w->gen->has_access)) {
    c->reg = &w->gen->reg;
    return 0;
  }
  jrpcd_identity_t id;
  IDENT_BUF(buf);
  const jrpc__registry_t *r = NULL;
  if (conn_identity(c, &id, &buf, 1) == 0)
    r = lookup_for(c, w->gen, pol, &id);
  if (!r)
    return -1;
  c->reg = r;
  return 0;
}

void jrpcd_conn_regen(jrpcd_conn_t *c) {
  if (jrpcd_conn_auth_update(c) != 0) {
    jrpcd_conn_close(c, "its bearer token is no longer valid");
    return;
  }
  c->reg = NULL; /* nothing found until the new view is made */
  if (jrpcd_conn_review(c) != 0)
    jrpcd_conn_close(c, "no view of the reloaded methods");
}
