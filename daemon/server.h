/* server.h - the daemon as a whole: config, listeners, the current plugin
 * generation and the workers; the main thread runs signals on its own
 * loop. */
#ifndef JRPCD_SERVER_H
#define JRPCD_SERVER_H

#include <stdatomic.h>
#include <uv.h>

#include "accesslog.h"
#include "activation.h"
#include "config.h"
#include "listener.h"
#include "peercount.h"
#include "generation.h"
#include "worker.h"

typedef struct jrpcd_server {
  jrpcd_config_t conf;
  const char *conf_text; /* built-in config when no file was given */
  jrpcd_listener_t *listeners;
  size_t nlisteners;
  jrpcd_worker_t *workers;
  unsigned nworkers;
  jrpcd_gen_t *gen; /* the current generation (the server's hold) */
  unsigned gen_serial;
  uint64_t start_ns;            /* uv_hrtime at start, for rpc.stats */
  atomic_uint nconns;           /* all workers: for max_connections */
  jrpcd_peercount_t peers_open; /* for max_connections_per_peer */
  atomic_ullong conn_ids;
  _Atomic uint32_t live_calls;    /* deferred calls, all workers */
  _Atomic uint64_t subscriptions; /* server push: all workers' */
  uv_loop_t loop;                 /* main thread: signals */
  uv_signal_t sig[4];
  jrpcd_accesslog_t alog; /* [server] access_log, when alog_on */
  int alog_on;
  atomic_int draining; /* SIGTERM with drain_ms: /health answers 503 */
  uv_timer_t drain;    /* then the stop, drain_ms later */
  int loop_ready;
} jrpcd_server_t;

/* Takes over conf (freed by jrpcd_server_free). Loads plugins, opens
 * listeners and starts the workers. A section with a socket in act (which
 * may be NULL) serves that socket, which its listener takes over; the
 * others are bound here. -1 with err. */
int jrpcd_server_start(jrpcd_server_t *s, jrpcd_config_t *conf,
                       const char *conf_text, jrpcd_activation_t *act,
                       char *err, size_t errlen);
/* Runs until SIGTERM/SIGINT and a graceful stop; returns the exit code.
 * Tells the service manager (sdnotify.h) when it serves, reloads and
 * stops. */
int jrpcd_server_run(jrpcd_server_t *s);
void jrpcd_server_free(jrpcd_server_t *s);

#endif
