/* metrics.c - the Prometheus text exposition format (version 0.0.4) of
 * jrpcd's counters, for GET /metrics, and /health's state. The figures
 * are rpc.stats' (rpcstats.c): each read without locks from the worker
 * that counts it, so a scrape is a moment's snapshot. Per-method figures
 * are those of the current plugin generation (they start again at a
 * reload, as rpc.stats' do), of the methods the asking connection's
 * scope shows (introspect.h), as in rpc.stats. */
#include "metrics.h"

#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "cluster.h"
#include "conn_auth.h"
#include "introspect.h"
#include "parser.h"
#include "procstats.h"
#include "rpcstats.h"
#include "server.h"
#include "tls.h"

/* The host's arg is the connection that asks (conn.c). */
static int healthy(void *arg) {
  const jrpcd_conn_t *c = arg;
  if (atomic_load(&c->w->srv->draining))
    return 0;
  jrpcd_cluster_stats_t cs;
  jrpcd_cluster_stats(&cs);
  return cs.on && !cs.connected ? JRPC__HTTP_DEGRADED : 1;
}

__attribute__((format(printf, 2, 3))) static void put(jrpc__outbuf_t *o,
                                                      const char *fmt, ...) {
  char line[512];
  va_list ap;
  va_start(ap, fmt);
  int n = vsnprintf(line, sizeof(line), fmt, ap);
  va_end(ap);
  if (n > 0)
    jrpc__out_put(o, line,
                  (size_t)n < sizeof(line) ? (size_t)n : sizeof(line) - 1);
}

static void family(jrpc__outbuf_t *o, const char *name, const char *type,
                   const char *help) {
  put(o, "# HELP %s %s\n# TYPE %s %s\n", name, help, name, type);
}

/* A label value: backslash, double quote and newline escaped. */
static void put_label(jrpc__outbuf_t *o, const char *s, size_t n) {
  for (size_t i = 0; i < n; i++) {
    char c = s[i];
    if (c == '\\' || c == '"')
      jrpc__out_byte(o, '\\');
    if (c == '\n') {
      jrpc__out_put(o, "\\n", 2);
      continue;
    }
    jrpc__out_byte(o, c);
  }
}

typedef uint64_t (*worker_fig)(const jrpcd_worker_t *w);
static uint64_t w_conns(const jrpcd_worker_t *w) {
  return atomic_load(&((jrpcd_worker_t *)w)->load);
}
static uint64_t w_accepted(const jrpcd_worker_t *w) {
  return JRPC__STAT_GET(w->accepted);
}
static uint64_t w_calls(const jrpcd_worker_t *w) {
  return JRPC__STAT_GET(w->engine.stats.calls);
}
static uint64_t w_errors(const jrpcd_worker_t *w) {
  return JRPC__STAT_GET(w->engine.stats.errors);
}
static uint64_t w_in(const jrpcd_worker_t *w) {
  return JRPC__STAT_GET(w->bytes_in);
}
static uint64_t w_out(const jrpcd_worker_t *w) {
  return JRPC__STAT_GET(w->bytes_out);
}
static uint64_t w_unauthorized(const jrpcd_worker_t *w) {
  return JRPC__STAT_GET(w->auth_fail);
}

static const struct {
  const char *name, *type, *help;
  worker_fig fig;
} worker_families[] = {
    {"jrpcd_worker_connections", "gauge", "Client connections open.", w_conns},
    {"jrpcd_worker_accepted_connections_total", "counter",
     "Client connections accepted.", w_accepted},
    {"jrpcd_worker_calls_total", "counter",
     "Request objects received (batch elements and notifications included).",
     w_calls},
    {"jrpcd_worker_errors_total", "counter",
     "Error responses written, of any code.", w_errors},
    {"jrpcd_worker_received_bytes_total", "counter", "Bytes read from clients.",
     w_in},
    {"jrpcd_worker_sent_bytes_total", "counter", "Bytes written to clients.",
     w_out},
    {"jrpcd_worker_unauthorized_total", "counter",
     "HTTP requests answered 401 (no bearer token, or not a valid one).",
     w_unauthorized},
};

/* The per-method counters, each a row of jrpc__mstat_t. Timeouts and
 * cancellations are counted where a deferred call ends (lib/async.c's
 * call_ended), as rpc.stats shows them. */
static const struct {
  const char *name, *help;
  size_t field; /* offset of its jrpc__counter_t in jrpc__mstat_t */
} method_families[] = {
    {"jrpcd_method_calls_total",
     "Calls of each method (requests and notifications), since the plugins "
     "were last loaded.",
     offsetof(jrpc__mstat_t, calls)},
    {"jrpcd_method_errors_total",
     "Error responses of each method, since the plugins were last loaded.",
     offsetof(jrpc__mstat_t, errors)},
    {"jrpcd_method_timeouts_total",
     "Deferred calls of each method answered -32004 when their timeout "
     "passed, since the plugins were last loaded.",
     offsetof(jrpc__mstat_t, timeouts)},
    {"jrpcd_method_cancellations_total",
     "Deferred calls of each method cancelled before they finished "
     "($/cancelRequest, or their connection closed), since the plugins were "
     "last loaded.",
     offsetof(jrpc__mstat_t, cancelled)},
};

static void per_method(jrpc__outbuf_t *o, jrpcd_gen_t *g,
                       const jrpcd_scope_t *scope, size_t f) {
  const jrpc__registry_t *r = &g->reg;
  const char *name = method_families[f].name;
  family(o, name, "counter", method_families[f].help);
  for (uint32_t i = 0; i <= r->mask; i++) {
    if (!jrpcd_scope_method(scope, i))
      continue;
    for (unsigned w = 0; w < g->nworkers; w++) {
      const char *row = (const char *)&jrpcd_stats_row(g, w)[i];
      const jrpc__counter_t *ctr =
          (const jrpc__counter_t *)(row + method_families[f].field);
      put(o, "%s{method=\"", name);
      put_label(o, r->slots[i].name, r->slots[i].len);
      put(o, "\",worker=\"%u\"} %llu\n", w,
          (unsigned long long)JRPC__STAT_GET(*ctr));
    }
  }
}

/* Each method's latency histogram (rpc.stats' p50/p99/max come from the
 * same counts), summed over workers. rpc.stats keeps finer buckets (four
 * per power of two, stats.h); the exposition gives one bound per power of
 * two, 1 us to about 33 s, so that a method costs 27 lines a scrape, the
 * same bounds every time. */
static void durations(jrpc__outbuf_t *o, jrpcd_gen_t *g,
                      const jrpcd_scope_t *scope) {
  const jrpc__registry_t *r = &g->reg;
  uint64_t h[JRPC__LAT_BUCKETS], sum_ns;
  for (uint32_t i = 0; i <= r->mask; i++) {
    if (!jrpcd_scope_method(scope, i))
      continue;
    uint64_t total = jrpcd_stats_latency(g, i, h, NULL, &sum_ns), below = 0;
    /* Bucket k holds calls of at least lower(k) and less than lower(k+1):
     * the calls under a bound lower(k) are those of buckets 0..k-1. */
    unsigned k = 0;
    for (unsigned bound = 1; bound < JRPC__LAT_BUCKETS;
         bound = bound < 4 ? bound * 2 : bound + 4) {
      while (k < bound)
        below += h[k++];
      put(o, "jrpcd_method_duration_seconds_bucket{method=\"");
      put_label(o, r->slots[i].name, r->slots[i].len);
      /* le is inclusive; our bounds exclusive: the difference is one
       * nanosecond, well under the clock's own resolution here. */
      put(o, "\",le=\"%.9g\"} %llu\n", (double)jrpc__lat_lower_ns(bound) / 1e9,
          (unsigned long long)below);
    }
    put(o, "jrpcd_method_duration_seconds_bucket{method=\"");
    put_label(o, r->slots[i].name, r->slots[i].len);
    put(o, "\",le=\"+Inf\"} %llu\n", (unsigned long long)total);
    put(o, "jrpcd_method_duration_seconds_sum{method=\"");
    put_label(o, r->slots[i].name, r->slots[i].len);
    put(o, "\"} %.9f\n", (double)sum_ns / 1e9);
    put(o, "jrpcd_method_duration_seconds_count{method=\"");
    put_label(o, r->slots[i].name, r->slots[i].len);
    put(o, "\"} %llu\n", (unsigned long long)total);
  }
}

/* The process collector's series, named and explained as Prometheus's
 * client libraries and node_exporter's have them, so that dashboards made
 * for those read jrpcd's. */
static void process(jrpc__outbuf_t *o, const jrpcd_server_t *srv) {
  jrpcd_procstats_t p;
  jrpcd_procstats_read(&p);
  family(o, "process_cpu_seconds_total", "counter",
         "Total user and system CPU time spent in seconds.");
  put(o, "process_cpu_seconds_total %.6f\n", (double)p.cpu_us / 1e6);
  if (p.have_mem) {
    family(o, "process_resident_memory_bytes", "gauge",
           "Resident memory size in bytes.");
    put(o, "process_resident_memory_bytes %llu\n",
        (unsigned long long)p.rss_bytes);
    family(o, "process_virtual_memory_bytes", "gauge",
           "Virtual memory size in bytes.");
    put(o, "process_virtual_memory_bytes %llu\n",
        (unsigned long long)p.vm_bytes);
  }
  if (p.have_fds) {
    family(o, "process_open_fds", "gauge", "Number of open file descriptors.");
    put(o, "process_open_fds %llu\n", (unsigned long long)p.open_fds);
  }
  family(o, "process_max_fds", "gauge",
         "Maximum number of open file descriptors.");
  put(o, "process_max_fds %llu\n", (unsigned long long)p.max_fds);
  /* The start as wall-clock time: now less the (monotonic) uptime. */
  struct timespec now;
  clock_gettime(CLOCK_REALTIME, &now);
  double up = (double)(uv_hrtime() - srv->start_ns) / 1e9;
  double start = (double)now.tv_sec + (double)now.tv_nsec / 1e9 - up;
  family(o, "process_start_time_seconds", "gauge",
         "Start time of the process since the Unix epoch in seconds.");
  put(o, "process_start_time_seconds %.3f\n", start);
}

/* What this jrpcd is: the constant-1 gauge of Prometheus's convention,
 * its labels the facts. */
static void build_info(jrpc__outbuf_t *o) {
  const char *tls = jrpcd_tls_library();
  family(o, "jrpcd_build_info", "gauge",
         "jrpcd's version, handler ABI, parser backends and TLS library "
         "(\"no\": built without TLS); always 1.");
  put(o, "jrpcd_build_info{version=\"");
  put_label(o, JRPCD_VERSION, strlen(JRPCD_VERSION));
  put(o, "\",abi=\"%u.%u\",parsers=\"%s\",tls=\"", JRPC_ABI_MAJOR,
      JRPC_ABI_MINOR, jrpc__parsers_built());
  tls = tls ? tls : "no";
  put_label(o, tls, strlen(tls));
  put(o, "\"} 1\n");
}

/* Connections turned away as they came, by reason, summed over workers;
 * and the deferred calls not answered yet. */
static void refusals(jrpc__outbuf_t *o, const jrpcd_server_t *srv) {
  family(o, "jrpcd_connections_refused_total", "counter",
         "Client connections closed as they came, by reason: peers, "
         "per_peer_limit, max_connections, max_handshakes, tls_handshake "
         "(failed, abandoned or timed out).");
  for (unsigned r = 0; r < JRPCD_REFUSALS; r++)
    put(o, "jrpcd_connections_refused_total{reason=\"%s\"} %llu\n",
        jrpcd_refusal_names[r],
        (unsigned long long)jrpcd_stats_refused(srv, r));
  family(o, "jrpcd_calls_in_flight", "gauge",
         "Deferred calls not answered yet, in all.");
  put(o, "jrpcd_calls_in_flight %u\n", atomic_load(&srv->live_calls));
}

/* [cluster]'s broker connection, when there is one. */
static void cluster(jrpc__outbuf_t *o) {
  jrpcd_cluster_stats_t cs;
  jrpcd_cluster_stats(&cs);
  if (!cs.on)
    return;
  static const struct {
    const char *name, *type, *help;
    size_t offset;
  } figs[] = {
      {"jrpcd_cluster_published_total", "counter",
       "Messages handed to the NATS broker.",
       offsetof(jrpcd_cluster_stats_t, published)},
      {"jrpcd_cluster_received_total", "counter",
       "Messages of other instances delivered here.",
       offsetof(jrpcd_cluster_stats_t, received)},
      {"jrpcd_cluster_dropped_total", "counter",
       "Broker-bound messages dropped: cluster_buffer_bytes was full.",
       offsetof(jrpcd_cluster_stats_t, dropped)},
      {"jrpcd_cluster_reconnects_total", "counter",
       "Broker connections made again after a loss.",
       offsetof(jrpcd_cluster_stats_t, reconnects)},
      {"jrpcd_cluster_invalid_total", "counter",
       "Messages from the broker that were not one JSON text: not "
       "delivered.",
       offsetof(jrpcd_cluster_stats_t, invalid)},
  };
  family(o, "jrpcd_cluster_connected", "gauge",
         "1 while the NATS broker is connected ([cluster]).");
  put(o, "jrpcd_cluster_connected %d\n", cs.connected);
  for (size_t f = 0; f < sizeof figs / sizeof figs[0]; f++) {
    family(o, figs[f].name, figs[f].type, figs[f].help);
    put(o, "%s %llu\n", figs[f].name,
        (unsigned long long)*(const uint64_t *)((const char *)&cs +
                                                figs[f].offset));
  }
}

static int metrics(void *arg, jrpc__outbuf_t *o) {
  const jrpcd_conn_t *c = arg;
  jrpcd_worker_t *self = c->w;
  const jrpcd_server_t *srv = self->srv;
  process(o, srv);
  build_info(o);
  family(o, "jrpcd_connections", "gauge", "Client connections open, in all.");
  put(o, "jrpcd_connections %u\n",
      atomic_load(&((jrpcd_server_t *)srv)->nconns));
  refusals(o, srv);
  family(o, "jrpcd_draining", "gauge",
         "1 while a SIGTERM drain (drain_ms) is under way.");
  put(o, "jrpcd_draining %d\n",
      atomic_load(&((jrpcd_server_t *)srv)->draining));
  if (srv->alog_on) {
    family(o, "jrpcd_access_log_dropped_total", "counter",
           "Access log lines dropped: the writer could not keep up, or the "
           "file refused them.");
    put(o, "jrpcd_access_log_dropped_total %llu\n",
        (unsigned long long)jrpcd_accesslog_dropped(&srv->alog));
  }
  cluster(o);
  jrpcd_gen_t *g = self->gen;
  jrpcd_scope_t scope;
  jrpcd_scope_init(&scope, c, &g->reg, c->reg);
  family(o, "jrpcd_generation", "gauge",
         "Plugin generation: 1 at start, +1 per reload.");
  put(o, "jrpcd_generation %u\n", g->serial);
  for (size_t f = 0; f < sizeof(worker_families) / sizeof(worker_families[0]);
       f++) {
    family(o, worker_families[f].name, worker_families[f].type,
           worker_families[f].help);
    for (unsigned i = 0; i < srv->nworkers; i++)
      put(o, "%s{worker=\"%u\"} %llu\n", worker_families[f].name, i,
          (unsigned long long)worker_families[f].fig(&srv->workers[i]));
  }
  for (size_t f = 0; f < jrpcd_push_nfigs; f++) { /* server push (hub.h) */
    const jrpcd_push_fig_t *fig = &jrpcd_push_figs[f];
    family(o, fig->metric, fig->type, fig->help);
    for (unsigned i = 0; i < srv->nworkers; i++)
      put(o, "%s{worker=\"%u\"} %llu\n", fig->metric, i,
          (unsigned long long)jrpcd_push_fig_get(&srv->workers[i], fig));
  }
  for (size_t f = 0; f < sizeof(method_families) / sizeof(method_families[0]);
       f++)
    per_method(o, g, &scope, f);
  family(o, "jrpcd_method_duration_seconds", "histogram",
         "Time from the read that brought a call to its answer, of calls "
         "that ended, summed over workers, since the plugins were last "
         "loaded.");
  durations(o, g, &scope);
  return o->oom ? JRPC_ENOMEM : 0;
}

const jrpc__http_host_t jrpcd_http_host = {
    healthy, metrics, jrpcd_conn_authorize, jrpcd_conn_origin};
