/* rpcstats.c - rpc.stats; see rpcstats.h. Counters are bumped by their
 * own worker without locks (lib/stats.h); this method reads every
 * worker's, so the figures are a moment's snapshot, not a transaction. */
#include "rpcstats.h"

#include <stdlib.h>
#include <string.h>

#include "cluster.h"
#include "dispatch.h"
#include "introspect.h"
#include "log.h"
#include "procstats.h"
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

const char *const jrpcd_refusal_names[JRPCD_REFUSALS] = {
    [JRPCD_REFUSED_PEERS] = "peers",
    [JRPCD_REFUSED_PER_PEER] = "per_peer_limit",
    [JRPCD_REFUSED_MAX_CONNECTIONS] = "max_connections",
    [JRPCD_REFUSED_MAX_HANDSHAKES] = "max_handshakes",
    [JRPCD_REFUSED_TLS_HANDSHAKE] = "tls_handshake",
};

uint64_t jrpcd_stats_refused(const jrpcd_server_t *srv, unsigned why) {
  uint64_t n = 0;
  for (unsigned i = 0; i < srv->nworkers; i++)
    n += JRPC__STAT_GET(srv->workers[i].refused[why]);
  return n;
}

/* Connections refused, by reason: every reason, 0 included. */
static void w_refused(jrpc_call_t *c, const jrpcd_server_t *srv) {
  jrpc_w_key(c, "refused", 7);
  jrpc_w_obj(c);
  for (unsigned r = 0; r < JRPCD_REFUSALS; r++)
    w_num(c, jrpcd_refusal_names[r], jrpcd_stats_refused(srv, r));
  jrpc_w_obj_end(c);
}

/* The process's CPU time, memory and descriptors (procstats.h). */
static void w_process(jrpc_call_t *c) {
  jrpcd_procstats_t p;
  jrpcd_procstats_read(&p);
  jrpc_w_key(c, "process", 7);
  jrpc_w_obj(c);
  w_num(c, "cpu_us", p.cpu_us);
  if (p.have_mem) {
    w_num(c, "rss_bytes", p.rss_bytes);
    w_num(c, "vm_bytes", p.vm_bytes);
  }
  if (p.have_fds)
    w_num(c, "open_fds", p.open_fds);
  w_num(c, "max_fds", p.max_fds);
  jrpc_w_obj_end(c);
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
    w_num(c, "unauthorized", JRPC__STAT_GET(w->auth_fail));
    jrpc_w_obj_end(c);
  }
  jrpc_w_arr_end(c);
}

uint64_t jrpcd_stats_latency(jrpcd_gen_t *g, uint32_t slot,
                             uint64_t out[JRPC__LAT_BUCKETS], uint64_t *max_ns,
                             uint64_t *sum_ns) {
  uint64_t total = 0, max = 0, sum = 0;
  memset(out, 0, JRPC__LAT_BUCKETS * sizeof(out[0]));
  for (unsigned w = 0; w < g->nworkers; w++) {
    const jrpc__mstat_t *m = &jrpcd_stats_row(g, w)[slot];
    for (unsigned k = 0; k < JRPC__LAT_BUCKETS; k++) {
      uint64_t v = JRPC__STAT_GET(m->lat[k]);
      out[k] += v;
      total += v;
    }
    uint64_t mx = JRPC__STAT_GET(m->max_ns);
    max = mx > max ? mx : max;
    sum += JRPC__STAT_GET(m->sum_ns);
  }
  if (max_ns)
    *max_ns = max;
  if (sum_ns)
    *sum_ns = sum;
  return total;
}

/* Microseconds, rounded up: a call of 1 ns took "1 us", not 0. */
static uint64_t us_up(uint64_t ns) {
  return ns / 1000 + (ns % 1000 != 0);
}

/* p50, p99 and the longest call, in microseconds, of calls that ended;
 * the quantiles are their bucket's upper bound (within 25%, stats.h). */
static void w_latency(jrpc_call_t *c, jrpcd_gen_t *g, uint32_t slot) {
  uint64_t h[JRPC__LAT_BUCKETS], max_ns;
  uint64_t total = jrpcd_stats_latency(g, slot, h, &max_ns, NULL);
  w_num(c, "p50_us", us_up(jrpc__lat_quantile_ns(h, total, 0.50, max_ns)));
  w_num(c, "p99_us", us_up(jrpc__lat_quantile_ns(h, total, 0.99, max_ns)));
  w_num(c, "max_us", us_up(max_ns));
}

/* The methods the caller's scope shows, summed over workers, sorted by
 * name. */
static int w_methods(jrpc_call_t *c, jrpcd_gen_t *g,
                     const jrpcd_scope_t *scope) {
  const jrpc__registry_t *r = &g->reg;
  method_ref_t *refs = jrpc_alloc(c, (r->count + 1) * sizeof(*refs));
  if (!refs)
    return JRPC_ENOMEM;
  uint32_t n = 0;
  for (uint32_t i = 0; i <= r->mask; i++)
    if (jrpcd_scope_method(scope, i))
      refs[n++] = (method_ref_t){r->slots[i].name, r->slots[i].len, i};
  qsort(refs, n, sizeof(*refs), by_name);
  jrpc_w_key(c, "methods", 7);
  jrpc_w_obj(c);
  for (uint32_t k = 0; k < n; k++) {
    uint64_t calls = 0, errors = 0, timeouts = 0, cancelled = 0;
    for (unsigned w = 0; w < g->nworkers; w++) {
      const jrpc__mstat_t *m = &jrpcd_stats_row(g, w)[refs[k].slot];
      calls += JRPC__STAT_GET(m->calls);
      errors += JRPC__STAT_GET(m->errors);
      timeouts += JRPC__STAT_GET(m->timeouts);
      cancelled += JRPC__STAT_GET(m->cancelled);
    }
    jrpc_w_key(c, refs[k].name, refs[k].len);
    jrpc_w_obj(c);
    w_num(c, "calls", calls);
    w_num(c, "errors", errors);
    w_num(c, "timeouts", timeouts);
    w_num(c, "cancelled", cancelled);
    w_latency(c, g, refs[k].slot);
    jrpc_w_obj_end(c);
  }
  jrpc_w_obj_end(c);
  return 0;
}

/* The last slow calls of all workers that the scope shows, merged by
 * time. */
static int w_slow(jrpc_call_t *c, const jrpcd_server_t *srv,
                  const jrpcd_scope_t *scope) {
  jrpcd_slowcalls_t **rings =
      jrpc_alloc(c, (srv->nworkers + 1) * sizeof(*rings));
  if (!rings)
    return JRPC_ENOMEM;
  for (unsigned i = 0; i < srv->nworkers; i++)
    rings[i] = &srv->workers[i].slow;
  return jrpcd_slowcalls_write(c, rings, srv->nworkers, scope);
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
  jrpcd_scope_t scope;
  jrpcd_scope_init(&scope, conn, &g->reg, e->reg);
  jrpc_w_obj(c);
  w_num(c, "uptime_ms", (uv_hrtime() - srv->start_ns) / 1000000u);
  w_num(c, "generation", g->serial);
  w_num(c, "connections", atomic_load(&srv->nconns));
  w_num(c, "calls_in_flight", atomic_load(&srv->live_calls));
  w_refused(c, srv);
  w_process(c);
  if (srv->alog_on)
    w_num(c, "access_log_dropped", jrpcd_accesslog_dropped(&srv->alog));
  w_workers(c, srv);
  jrpc_w_key(c, "push", 4);
  jrpc_w_obj(c);
  for (size_t f = 0; f < jrpcd_push_nfigs; f++) {
    uint64_t sum = 0;
    for (unsigned i = 0; i < srv->nworkers; i++)
      sum += jrpcd_push_fig_get(&srv->workers[i], &jrpcd_push_figs[f]);
    w_num(c, jrpcd_push_figs[f].key, sum);
  }
  jrpc_w_obj_end(c);
  jrpcd_cluster_stats_t cs;
  jrpcd_cluster_stats(&cs);
  if (cs.on) { /* [cluster]: the broker connection */
    jrpc_w_key(c, "cluster", 7);
    jrpc_w_obj(c);
    jrpc_w_key(c, "broker", 6);
    jrpc_w_str(c, cs.connected ? "connected" : "away", cs.connected ? 9 : 4);
    w_num(c, "published", cs.published);
    w_num(c, "received", cs.received);
    w_num(c, "dropped", cs.dropped);
    w_num(c, "reconnects", cs.reconnects);
    w_num(c, "invalid", cs.invalid);
    jrpc_w_obj_end(c);
  }
  int rc = w_methods(c, g, &scope);
  if (!rc)
    rc = w_slow(c, srv, &scope);
  if (rc)
    return rc;
  jrpc_w_obj_end(c);
  return 0;
}

int jrpcd_stats_attach(jrpcd_gen_t *g, unsigned nworkers) {
  if (jrpc__registry_add_builtin(&g->reg, "rpc.stats", rpc_stats, NULL) != 0)
    return -1;
  /* The registry is final now: size the rows for its slots. Each entry
   * is on cache lines of its own (stats.h), so workers never share one. */
  g->mstride = (size_t)g->reg.mask + 1;
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
