/* jrpc_bench_net.h - the address jrpc-bench connects to, and connecting. */
#ifndef JRPC_BENCH_NET_H
#define JRPC_BENCH_NET_H

#include <sys/socket.h>

#include "jrpc_bench_opts.h"

typedef struct bench_addr {
  struct sockaddr_storage sa;
  socklen_t len;
  int is_unix;
  int websocket;  /* -f websocket: the upgrade handshake after connecting */
  char desc[300]; /* the path or HOST:PORT, as given */
} bench_addr_t;

/* From -u or -t. 0, or -1 after printing why. */
int bench_addr_from_opts(bench_addr_t *a, const bench_opts_t *o);

/* A connected, non-blocking socket (TCP with Nagle off), or -1 with
 * errno set. */
int bench_connect(const bench_addr_t *a);

#endif
