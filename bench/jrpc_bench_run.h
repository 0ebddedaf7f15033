/* jrpc_bench_run.h - the measured run of jrpc-bench: one thread, one epoll
 * set, every connection non-blocking.
 *
 * Each connection has `window` request slots. A loop turn reads once from
 * each readable connection, checks every complete reply against the slot
 * its id names, and then writes, in one write(), a request for every slot
 * that is free (bounded by -n and --reconnect). A request's latency runs
 * from the clock read just before the write() that starts carrying it (a
 * request the socket does not take at once waits in the connection's
 * output, and that wait counts) to the clock read just after the read()
 * that brought its reply. One clock read serves a whole read and the write
 * that follows it. */
#ifndef JRPC_BENCH_RUN_H
#define JRPC_BENCH_RUN_H

#include <stdint.h>

#include "jrpc_bench_hist.h"
#include "jrpc_bench_net.h"
#include "jrpc_bench_opts.h"
#include "jrpc_bench_workload.h"

typedef struct bench_result {
  uint64_t requests;            /* measured requests answered */
  uint64_t err_replies;         /* error responses among them (one per call) */
  uint64_t errors;              /* wrong ids, non-replies, closes, timeouts */
  uint64_t bytes_out, bytes_in; /* while measuring */
  uint64_t reconnects;
  uint64_t lost;  /* --allow-lost: in flight when the server closed */
  double elapsed; /* seconds from the start of measuring to the last reply */
  int have_cpu;   /* -p given and read at both ends */
  double cpu_s;   /* CPU seconds the -p process used while measuring */
  int interrupted;
  bench_hist_t hist; /* latency in ns */
} bench_result_t;

typedef struct bench_run bench_run_t;

/* Connects every connection. 0; or 2 after printing why (the exit
 * status for a connection that cannot be made or memory). */
int bench_run_open(bench_run_t **run, const bench_opts_t *o,
                   const bench_workload_t *wl, const bench_addr_t *addr);
/* Runs until -d or -n is reached and every reply is in, the connections
 * are all gone, or SIGINT. */
void bench_run_go(bench_run_t *run, bench_result_t *res);
void bench_run_close(bench_run_t *run);

#endif
