/* server.c - start-up, signals, reload and the orderly stop; see
 * server.h. */
#include "server.h"

#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "log.h"

static void free_listeners(jrpcd_server_t *s) {
  for (size_t i = 0; i < s->nlisteners; i++)
    jrpcd_listener_close(&s->listeners[i]);
  free(s->listeners);
  s->listeners = NULL;
  s->nlisteners = 0;
}

int jrpcd_server_start(jrpcd_server_t *s, jrpcd_config_t *conf,
                       const char *conf_text, char *err, size_t errlen) {
  memset(s, 0, sizeof(*s));
  s->conf = *conf;
  memset(conf, 0, sizeof(*conf));
  s->conf_text = conf_text;
  s->gen_serial = 1;
  s->start_ns = uv_hrtime();
  if (jrpcd_gen_load(&s->gen, &s->conf, s->gen_serial, err, errlen))
    return -1;
  s->listeners = calloc(s->conf.nlistens, sizeof(*s->listeners));
  if (!s->listeners) {
    snprintf(err, errlen, "out of memory");
    return -1;
  }
  for (size_t i = 0; i < s->conf.nlistens; i++) {
    if (jrpcd_listener_open(&s->listeners[i], &s->conf.listens[i], err, errlen))
      return -1;
    s->nlisteners++;
  }
  if (uv_loop_init(&s->loop) != 0) {
    snprintf(err, errlen, "cannot create the main event loop");
    return -1;
  }
  s->loop_ready = 1;
  s->workers = calloc(s->conf.workers, sizeof(*s->workers));
  if (!s->workers) {
    snprintf(err, errlen, "out of memory");
    return -1;
  }
  for (unsigned i = 0; i < s->conf.workers; i++) {
    if (jrpcd_worker_start(&s->workers[i], s, i, err, errlen)) {
      /* The half-made worker has no thread yet; the others stop. */
      jrpcd_worker_free(&s->workers[i]);
      for (unsigned k = 0; k < s->nworkers; k++)
        jrpcd_worker_stop(&s->workers[k]);
      for (unsigned k = 0; k < s->nworkers; k++)
        jrpcd_worker_join(&s->workers[k]);
      return -1;
    }
    s->nworkers++;
  }
  return 0;
}

/* SIGHUP: the plugins of the config file as it is now, in a new registry;
 * connections stay, and calls still running keep their old modules. */
static void reload(jrpcd_server_t *s) {
  jrpcd_config_t c;
  char err[1024];
  int rc = s->conf_text ? jrpcd_config_load_string(
                              &c, s->conf_text, s->conf.file, err, sizeof(err))
                        : jrpcd_config_load(&c, s->conf.file, err, sizeof(err));
  if (rc) {
    jrpcd_error("reload failed, still serving the previous plugins: %s", err);
    return;
  }
  jrpcd_gen_t *g;
  c.workers = s->conf.workers; /* not reloaded; sizes the method counters */
  if (jrpcd_gen_load(&g, &c, s->gen_serial + 1, err, sizeof(err))) {
    jrpcd_error("reload failed, still serving the previous plugins: %s", err);
    jrpcd_config_free(&c);
    return;
  }
  s->gen_serial++;
  for (unsigned i = 0; i < s->nworkers; i++)
    jrpcd_worker_use(&s->workers[i], g);
  jrpcd_gen_release(s->gen);
  s->gen = g;
  jrpcd_log_set_level(c.log_level);
  /* Only plugins and the log level change on reload: listeners, workers
   * and limits stay as started. */
  jrpcd_info("reloaded %s: %zu plugins, %u methods (generation %u)",
             s->conf.file, g->nplugins, g->reg.count, g->serial);
  jrpcd_config_free(&c);
}

static void on_signal(uv_signal_t *h, int signum) {
  jrpcd_server_t *s = h->data;
  if (signum == SIGHUP) {
    reload(s);
    return;
  }
  jrpcd_info("%s: stopping (finishing calls in flight, up to %u ms)",
             strsignal(signum), s->conf.shutdown_timeout_ms);
  for (unsigned i = 0; i < s->nworkers; i++)
    jrpcd_worker_stop(&s->workers[i]);
  /* The loop ends once the signal handles are closed; a second signal
   * meanwhile gets its default action. */
  for (int i = 0; i < 3; i++)
    uv_close((uv_handle_t *)&s->sig[i], NULL);
}

int jrpcd_server_run(jrpcd_server_t *s) {
  static const int signums[3] = {SIGTERM, SIGINT, SIGHUP};
  for (int i = 0; i < 3; i++) {
    uv_signal_init(&s->loop, &s->sig[i]);
    s->sig[i].data = s;
    uv_signal_start(&s->sig[i], on_signal, signums[i]);
  }
  for (size_t i = 0; i < s->nlisteners; i++)
    jrpcd_info("listening on %s (%s framing)", s->listeners[i].desc,
               s->listeners[i].framing == JRPC_FRAMING_LENGTH ? "length"
                                                              : "newline");
  jrpcd_info("serving %u methods from %zu plugins with %u workers",
             s->gen->reg.count, s->gen->nplugins, s->nworkers);
  uv_run(&s->loop, UV_RUN_DEFAULT);
  int abandoned = 0;
  for (unsigned i = 0; i < s->nworkers; i++) {
    jrpcd_worker_join(&s->workers[i]);
    abandoned |= s->workers[i].abandoned;
  }
  if (abandoned) {
    /* Handler tasks still run on the thread pool: unloading plugins or
     * freeing their calls now would pull memory from under them. The
     * replies are sent and the sockets closed; leave at once. */
    free_listeners(s);
    jrpcd_info("stopped (thread-pool tasks abandoned)");
    _exit(0);
  }
  jrpcd_info("stopped");
  return 0;
}

void jrpcd_server_free(jrpcd_server_t *s) {
  /* Plugins go first (their threads may still hold deferred calls),
   * then the workers' engines, which own those calls' memory. */
  jrpcd_gen_release(s->gen);
  s->gen = NULL;
  for (unsigned i = 0; i < s->nworkers; i++)
    jrpcd_worker_free(&s->workers[i]);
  free(s->workers);
  s->workers = NULL;
  free_listeners(s);
  if (s->loop_ready) {
    uv_run(&s->loop, UV_RUN_NOWAIT);
    uv_loop_close(&s->loop);
  }
  jrpcd_config_free(&s->conf);
}
