/* jrpc_bench.c - jrpc-bench, a JSON-RPC load generator in the manner of
 * redis-benchmark: C connections, each with W requests in flight, over a
 * Unix socket or TCP, newline or length framing or HTTP/1.1; every reply's id
 * is checked against the requests in flight, and the figures (req/s, calls/s,
 * MB/s, latency percentiles, the server's CPU time with -p) end with one
 * machine-readable RESULT line.
 *
 * main: options, the request, the connections, the run and the report.
 * Files: jrpc_bench_opts (command line), jrpc_bench_workload (the request
 * and its ids), jrpc_bench_net (addresses, connect), jrpc_bench_run (the
 * event loop), jrpc_bench_reply (frames and reply ids), jrpc_bench_http
 * (HTTP request heads and responses), jrpc_bench_hist
 * (latency histogram). */
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#include "jrpc_bench_hist.h"
#include "jrpc_bench_net.h"
#include "jrpc_bench_opts.h"
#include "jrpc_bench_run.h"
#include "jrpc_bench_workload.h"

static double per_s(double v, double secs) {
  return secs > 0 ? v / secs : 0;
}

static double us(const bench_hist_t *h, double q) {
  return (double)hist_quantile(h, q) / 1e3;
}

static const char *framing_name(bench_framing_t f) {
  return f == FRAMING_LENGTH      ? "length"
         : f == FRAMING_HTTP      ? "http"
         : f == FRAMING_WEBSOCKET ? "websocket"
                                  : "newline";
}

static void report(const bench_opts_t *o, const bench_workload_t *wl,
                   const bench_addr_t *addr, const bench_result_t *r) {
  double secs = r->elapsed;
  double calls = (double)r->requests * wl->calls;
  double req_s = per_s((double)r->requests, secs);
  double calls_s = per_s(calls, secs);
  double mb_in = per_s((double)r->bytes_in / 1e6, secs);
  double mb_out = per_s((double)r->bytes_out / 1e6, secs);
  const bench_hist_t *h = &r->hist;
  printf("jrpc-bench: %s %s, %s framing, %s, %u connection%s x %u in "
         "flight%s\n",
         addr->is_unix ? "unix" : "tcp", addr->desc, framing_name(o->framing),
         wl->desc, o->connections, o->connections == 1 ? "" : "s", o->window,
         r->interrupted ? " (interrupted)" : "");
  printf("  requests    %llu", (unsigned long long)r->requests);
  if (wl->calls != 1)
    printf(" (%u calls each: %.0f calls)", wl->calls, calls);
  printf("\n  duration    %.3f s", secs);
  if (o->warmup > 0)
    printf(" (after %.3g s of warm-up)", o->warmup);
  printf("\n  req/s       %.0f\n", req_s);
  if (wl->calls != 1)
    printf("  calls/s     %.0f\n", calls_s);
  printf("  sent        %.2f MB/s (%llu bytes)\n", mb_out,
         (unsigned long long)r->bytes_out);
  printf("  received    %.2f MB/s (%llu bytes)\n", mb_in,
         (unsigned long long)r->bytes_in);
  printf("  latency us  p50 %.1f  p90 %.1f  p99 %.1f  p99.9 %.1f  max %.1f\n",
         us(h, 0.5), us(h, 0.9), us(h, 0.99), us(h, 0.999),
         (double)h->max / 1e3);
  printf("  errors      %llu (error replies: %llu)\n",
         (unsigned long long)r->errors, (unsigned long long)r->err_replies);
  if (o->reconnect || o->allow_lost)
    printf("  reconnects  %llu\n", (unsigned long long)r->reconnects);
  if (o->allow_lost)
    printf("  lost        %llu (in flight when the server closed)\n",
           (unsigned long long)r->lost);
  char cpu_s[32] = "-", ns_req[32] = "-", req_cpu[32] = "-";
  if (r->have_cpu) {
    snprintf(cpu_s, sizeof(cpu_s), "%.3f", r->cpu_s);
    if (r->requests) {
      snprintf(ns_req, sizeof(ns_req), "%.0f",
               r->cpu_s * 1e9 / (double)r->requests);
    }
    if (r->cpu_s > 0)
      snprintf(req_cpu, sizeof(req_cpu), "%.0f",
               (double)r->requests / r->cpu_s);
    printf("  server cpu  %s s (pid %ld): %s ns/request, %s requests per "
           "cpu-second\n",
           cpu_s, o->pid, ns_req, req_cpu);
  }
  printf("RESULT req_s=%.0f calls_s=%.0f mb_s_in=%.3f mb_s_out=%.3f "
         "p50_us=%.1f p90_us=%.1f p99_us=%.1f p999_us=%.1f max_us=%.1f "
         "requests=%llu errors=%llu err_replies=%llu cpu_s=%s "
         "ns_per_req_cpu=%s req_per_cpu_s=%s reconnects=%llu lost=%llu\n",
         req_s, calls_s, mb_in, mb_out, us(h, 0.5), us(h, 0.9), us(h, 0.99),
         us(h, 0.999), (double)h->max / 1e3, (unsigned long long)r->requests,
         (unsigned long long)r->errors, (unsigned long long)r->err_replies,
         cpu_s, ns_req, req_cpu, (unsigned long long)r->reconnects,
         (unsigned long long)r->lost);
  fflush(stdout);
}

int main(int argc, char **argv) {
  bench_opts_t o;
  bench_workload_t wl = {0};
  bench_addr_t addr;
  bench_run_t *run = NULL;
  bench_result_t *res = NULL;
  /* A server that closes while requests are being written: write() then
   * fails with EPIPE, counted like any other close, instead of killing
   * the run before it reports. */
  signal(SIGPIPE, SIG_IGN);
  int status = bench_opts_parse(&o, argc, argv);
  if (status) {
    status = status < 0 ? 0 : status;
    goto out;
  }
  status = 2;
  uint64_t slots = 1;
  while (slots < o.window)
    slots *= 2;
  if (bench_workload_build(&wl, &o, slots) || bench_addr_from_opts(&addr, &o))
    goto out;
  if (o.pid) {
    char path[64];
    snprintf(path, sizeof(path), "/proc/%ld/stat", o.pid);
    if (access(path, R_OK) != 0) {
      fprintf(stderr, "jrpc-bench: -p %ld: no such process\n", o.pid);
      goto out;
    }
  }
  res = malloc(sizeof(*res));
  if (!res) {
    fprintf(stderr, "jrpc-bench: out of memory\n");
    goto out;
  }
  if ((status = bench_run_open(&run, &o, &wl, &addr)) != 0)
    goto out;
  bench_run_go(run, res);
  report(&o, &wl, &addr, res);
  status = res->errors || (res->err_replies && !o.allow_errors) ? 1 : 0;
out:
  bench_run_close(run);
  free(res);
  bench_workload_free(&wl);
  bench_opts_free(&o);
  return status;
}
