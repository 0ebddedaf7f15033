/* jrpc_bench_opts.h - jrpc-bench's command line, read into bench_opts_t. */
#ifndef JRPC_BENCH_OPTS_H
#define JRPC_BENCH_OPTS_H

#include <stddef.h>
#include <stdint.h>

typedef enum {
  FRAMING_NEWLINE,
  FRAMING_LENGTH,
  FRAMING_HTTP,
  FRAMING_WEBSOCKET /* an http listener with websocket = yes */
} bench_framing_t;

typedef enum {
  WL_SMALL,
  WL_NAMED,
  WL_NOTIFY,
  WL_BATCH,
  WL_LARGE,
  WL_TEMPLATE
} bench_wl_kind_t;

typedef struct bench_opts {
  const char *unix_path; /* -u */
  const char *tcp;       /* -t HOST:PORT as given */
  bench_framing_t framing;
  unsigned connections;
  unsigned window;
  double duration;   /* seconds; 0 = not given */
  uint64_t requests; /* 0 = not given */
  double warmup;
  bench_wl_kind_t workload;
  uint64_t wl_arg;     /* batch:N -> N, large:K -> K */
  const char *method;  /* -m, or NULL for the workload's default */
  char *template_text; /* -T, or --template-file's contents (owned) */
  long pid;            /* -p, 0 = none */
  int quiet;
  uint64_t reconnect; /* --reconnect K, 0 = never */
  size_t max_frame;
  int allow_errors;
  double timeout;        /* --timeout: longest wait for a reply */
  const char *http_path; /* --http-path, default "/" */
  int allow_lost;        /* --allow-lost */
} bench_opts_t;

/* Fills o from argv. Returns 0, or 2 after printing why (bad options, with
 * the usage), or 1 after -h printed the usage on stdout: exit with it. */
int bench_opts_parse(bench_opts_t *o, int argc, char **argv);
void bench_opts_free(bench_opts_t *o);

#endif
