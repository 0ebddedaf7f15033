/* rpcstats.c - rpc.stats; see rpcstats.h. Counters are bumped by their
 * own worker without locks (lib/stats.h); this method reads every
 * worker's, so the figures are a moment's snapshot, not a transaction. */
#include "rpcstats.h"

#include <stdlib.h>
#include <string.h>

#include "dispatch.h"
#include "log.h"
#include "server.h"

#define CACHE_LINE 64

typedef struct method_ref {
  const char *name;
  uint32_t len;
  uint32_t slot;
} method_ref_t;

static int by_name(const void *a, const void *b) {
  const method_ref_t *x = a, *y = b;
  return strcmp(x->name, y->name);
}

static void w_num(jrpc_call_t *c, const char *key, uint64_t v) {
  jrpc_w_key(c, key, strlen(key));
  jrpc_w_u64(c, v);
}

static void w_workers(jrpc_call_t *c, const jrpcd_server_t *srv) {
  jrpc_w_key(c, "workers", 7);
  jrpc_w_arr(c);
  for (unsigned i = 0; i < srv->nworkers; i++) {
    const jrpcd_worker_t *w = &srv->workers[i];
    jrpc_w_obj(c);
    w_num(c, "worker", i);
    w_num(c, "connections", atomic_load(&w->load));
    w_num(c, "accepted", JRPC__STAT_GET(w->accepted));
    w_num(c, "calls", JRPC__STAT_GET(w->engine.stats.calls));
    w_num(c, "errors", JRPC__STAT_GET(w->engine.stats.errors));
    w_num(c, "bytes_in", JRPC__STAT_GET(w->bytes_in));
    w_num(c, "bytes_out", JRPC__STAT_GET(w->bytes_out));
    jrpc_w_obj_end(c);
  }
  jrpc_w_arr_end(c);
}

/* Per method, summed over workers, sorted by name. */
/* The methods the caller's view serves (its listener's `methods`, the
 * [access] rules), summed over workers, sorted by name. */
static int w_methods(jrpc_call_t *c, jrpcd_gen_t *g,
                     const jrpc__registry_t *view) {
  const jrpc__registry_t *r = &g->reg;
  method_ref_t *refs = jrpc_alloc(c, (r->count + 1) * sizeof(*refs));
  if (!refs)
    return JRPC_ENOMEM;
  uint32_t n = 0;
  for (uint32_t i = 0; i <= r->mask; i++)
    if (r->slots[i].name && r->slots[i].fn &&
        view->slots[i].fn == r->slots[i].fn)
      refs[n++] = (method_ref_t){r->slots[i].name, r->slots[i].len, i};
  qsort(refs, n, sizeof(*refs), by_name);
  jrpc_w_key(c, "methods", 7);
  jrpc_w_obj(c);
  for (uint32_t k = 0; k < n; k++) {
    uint64_t calls = 0, errors = 0;
    for (unsigned w = 0; w < g->nworkers; w++) {
      const jrpc__mstat_t *m = &jrpcd_stats_row(g, w)[refs[k].slot];
      calls += JRPC__STAT_GET(m->calls);
      errors += JRPC__STAT_GET(m->errors);
    }
    jrpc_w_key(c, refs[k].name, refs[k].len);
    jrpc_w_obj(c);
    w_num(c, "calls", calls);
    w_num(c, "errors", errors);
    jrpc_w_obj_end(c);
  }
  jrpc_w_obj_end(c);
  return 0;
}

static int rpc_stats(jrpc_call_t *c, jrpc_val_t params, void *udata) {
  (void)params;
  (void)udata;
  jrpc__call_t *call = (jrpc__call_t *)c;
  jrpc__engine_t *e = call->e;
  /* Only a connection's own dispatch reaches here (never a deferred
   * call), so the sink is the caller's connection. */
  const jrpcd_conn_t *conn = jrpcd_conn_of_sink(e->sink);
  if (!conn->l->stats)
    return jrpc_error(c, JRPC_METHOD_NOT_FOUND, NULL);
  const jrpcd_server_t *srv = conn->w->srv;
  jrpcd_gen_t *g = jrpcd_gen_of(e->gen_reg);
  jrpc_w_obj(c);
  w_num(c, "uptime_ms", (uv_hrtime() - srv->start_ns) / 1000000u);
  w_num(c, "generation", g->serial);
  w_num(c, "connections", atomic_load(&srv->nconns));
  w_workers(c, srv);
  int rc = w_methods(c, g, e->reg);
  if (rc)
    return rc;
  jrpc_w_obj_end(c);
  return 0;
}

int jrpcd_stats_attach(jrpcd_gen_t *g, unsigned nworkers) {
  if (jrpc__registry_add_builtin(&g->reg, "rpc.stats", rpc_stats, NULL) != 0)
    return -1;
  /* The registry is final now: size the rows for its slots, each row on
   * its own cache lines so that workers never share one. */
  size_t per_line = CACHE_LINE / sizeof(jrpc__mstat_t);
  g->mstride = ((size_t)g->reg.mask + 1 + per_line - 1) / per_line * per_line;
  g->nworkers = nworkers;
  g->mstats =
      aligned_alloc(CACHE_LINE, g->mstride * nworkers * sizeof(jrpc__mstat_t));
  if (!g->mstats)
    return -1;
  memset(g->mstats, 0, g->mstride * nworkers * sizeof(jrpc__mstat_t));
  return 0;
}

void jrpcd_stats_log_final(jrpcd_server_t *srv) {
  uint64_t calls = 0, errors = 0, accepted = 0, in = 0;
  for (unsigned i = 0; i < srv->nworkers; i++) {
    const jrpcd_worker_t *w = &srv->workers[i];
    calls += JRPC__STAT_GET(w->engine.stats.calls);
    errors += JRPC__STAT_GET(w->engine.stats.errors);
    accepted += JRPC__STAT_GET(w->accepted);
    in += JRPC__STAT_GET(w->bytes_in);
  }
  jrpcd_info("served %llu calls (%llu error responses) on %llu connections "
             "since the start, from %llu bytes received",
             (unsigned long long)calls, (unsigned long long)errors,
             (unsigned long long)accepted, (unsigned long long)in);
  jrpcd_gen_t *g = srv->gen;
  if (!g || !jrpcd_log_enabled(JRPC_LOG_DEBUG))
    return;
  const jrpc__registry_t *r = &g->reg;
  for (uint32_t i = 0; i <= r->mask; i++) {
    if (!r->slots[i].name || !r->slots[i].fn)
      continue;
    uint64_t mc = 0, me = 0;
    for (unsigned w = 0; w < g->nworkers; w++) {
      const jrpc__mstat_t *m = &jrpcd_stats_row(g, w)[i];
      mc += JRPC__STAT_GET(m->calls);
      me += JRPC__STAT_GET(m->errors);
    }
    if (mc)
      jrpcd_debug("method %.*s: %llu calls, %llu errors since generation %u",
                  (int)r->slots[i].len, r->slots[i].name,
                  (unsigned long long)mc, (unsigned long long)me, g->serial);
  }
}
