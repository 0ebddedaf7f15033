/* rpcstats.h - the built-in method rpc.stats: per-worker counters
 * (connections, calls, errors, bytes in and out), per-method calls and
 * errors and the last slow calls, answered on listeners whose `stats` is
 * not off, each caller shown what its scope allows (introspect.h). */
#ifndef JRPCD_RPCSTATS_H
#define JRPCD_RPCSTATS_H

#include "generation.h"

/* Registers rpc.stats in g and sizes its per-method counters for
 * nworkers. 0, or -1 when out of memory. */
int jrpcd_stats_attach(jrpcd_gen_t *g, unsigned nworkers);

/* The per-method counter row of worker `index` in g. */
static inline jrpc__mstat_t *jrpcd_stats_row(jrpcd_gen_t *g, unsigned index) {
  return g->mstats + (size_t)index * g->mstride;
}

/* Each jrpcd_refusal_t's name, as rpc.stats' `refused` and /metrics'
 * reason label give it. */
extern const char *const jrpcd_refusal_names[];

/* Connections refused for `why`, summed over srv's workers. */
struct jrpcd_server;
uint64_t jrpcd_stats_refused(const struct jrpcd_server *srv, unsigned why);

/* At the stop, once the workers are joined: logs the calls served since
 * the start (info) and each method's calls in the current generation
 * (debug), so that a rolling restart can tell what each instance answered
 * (tests/scale). */
void jrpcd_stats_log_final(struct jrpcd_server *srv);

/* Method `slot`'s latency histogram (lib/stats.h) summed over g's
 * workers into out[JRPC__LAT_BUCKETS]: out[k] calls took at least
 * jrpc__lat_lower_ns(k) and less than jrpc__lat_lower_ns(k + 1). Returns
 * the calls counted; *max_ns, if given, gets the longest and *sum_ns
 * their total time. For rpc.stats
 * and a Prometheus exporter alike; lock-free reads of counters that their
 * workers keep bumping, so a moment's snapshot. */
uint64_t jrpcd_stats_latency(jrpcd_gen_t *g, uint32_t slot,
                             uint64_t out[JRPC__LAT_BUCKETS], uint64_t *max_ns,
                             uint64_t *sum_ns);

#endif
