/* server.c - start-up, signals, reload and the orderly stop; see
 * server.h. */
#include "server.h"

#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "config_keys.h"
#include "gen_tls.h"
#include "cluster.h"
#include "hub.h"
#include "log.h"
#include "privs.h"
#include "rpcstats.h"
#include "sdnotify.h"

static void free_listeners(jrpcd_server_t *s) {
  for (size_t i = 0; i < s->nlisteners; i++)
    jrpcd_listener_close(&s->listeners[i]);
  free(s->listeners);
  s->listeners = NULL;
  s->nlisteners = 0;
}

static void on_signal(uv_signal_t *h, int signum);

static void watch_signals(jrpcd_server_t *s) {
  static const int signums[4] = {SIGTERM, SIGINT, SIGHUP, SIGUSR1};
  uv_timer_init(&s->loop, &s->drain);
  s->drain.data = s;
  for (int i = 0; i < 4; i++) {
    uv_signal_init(&s->loop, &s->sig[i]);
    s->sig[i].data = s;
    uv_signal_start(&s->sig[i], on_signal, signums[i]);
  }
}

/* After a failed start the watchers are still open; after a run, stop()
 * has closed them. */
static void unwatch_signals(jrpcd_server_t *s) {
  for (int i = 0; i < 4; i++)
    if (!uv_is_closing((uv_handle_t *)&s->sig[i]))
      uv_close((uv_handle_t *)&s->sig[i], NULL);
  if (!uv_is_closing((uv_handle_t *)&s->drain))
    uv_close((uv_handle_t *)&s->drain, NULL);
}

int jrpcd_server_start(jrpcd_server_t *s, jrpcd_config_t *conf,
                       const char *conf_text, jrpcd_activation_t *act,
                       char *err, size_t errlen) {
  memset(s, 0, sizeof(*s));
  s->conf = *conf;
  memset(conf, 0, sizeof(*conf));
  s->conf_text = conf_text;
  jrpcd_peercount_init(&s->peers_open, s->conf.max_connections_per_peer,
                       s->conf.peer_prefix_v6);
  s->gen_serial = 1;
  s->start_ns = uv_hrtime();
  /* libuv sizes its thread pool (jrpc_queue_work's) from this variable,
   * once, at the first work queued: that comes later, from a worker. */
  char pool[16];
  snprintf(pool, sizeof(pool), "%u", s->conf.thread_pool);
  setenv("UV_THREADPOOL_SIZE", pool, 1);
  /* A socket unit naming no section is a deployment mistake: say so
   * before plugins load, not after. */
  if (act && jrpcd_activation_check(act, &s->conf, err, errlen))
    return -1;
  jrpcd_hub_start(s); /* plugins may take their publisher in init */
  /* Before the workers, whose subscriptions it counts. */
  if (jrpcd_cluster_start(s, err, errlen))
    return -1;
  if (jrpcd_gen_load(&s->gen, &s->conf, s->gen_serial, err, errlen) ||
      jrpcd_gen_tls_load(s->gen, &s->conf, NULL, err, errlen))
    return -1;
  /* The signal watchers exist before any socket is bound: a client may
   * connect from then on, and a SIGTERM it sends (or a service manager's)
   * must stop jrpcd in order rather than kill it with the default action.
   * They are seen once jrpcd_server_run runs the loop. */
  if (uv_loop_init(&s->loop) != 0) {
    snprintf(err, errlen, "cannot create the main event loop");
    return -1;
  }
  s->loop_ready = 1;
  watch_signals(s);
  s->listeners = calloc(s->conf.nlistens, sizeof(*s->listeners));
  if (!s->listeners) {
    snprintf(err, errlen, "out of memory");
    return -1;
  }
  for (size_t i = 0; i < s->conf.nlistens; i++) {
    const jrpcd_listen_conf_t *lc = &s->conf.listens[i];
    jrpcd_passed_t *p = act ? jrpcd_activation_find(act, lc->name) : NULL;
    if (p ? jrpcd_listener_adopt(&s->listeners[i], lc, p->fd, err, errlen)
          : jrpcd_listener_open(&s->listeners[i], lc, err, errlen))
      return -1;
    if (p)
      p->taken = 1;
    s->nlisteners++;
  }
  s->workers = calloc(s->conf.workers, sizeof(*s->workers));
  if (!s->workers) {
    snprintf(err, errlen, "out of memory");
    return -1;
  }
  /* Opened while jrpcd may still be root, as the sockets are; a reopen
   * (SIGUSR1) later is the serving user's, in the same directory. */
  if (s->conf.access_log) {
    char why[512];
    if (jrpcd_accesslog_open(&s->alog, s->conf.access_log,
                             s->conf.access_log_format, s->conf.workers, why,
                             sizeof(why))) {
      snprintf(err, errlen, "%s: [server] access_log: %s", s->conf.file, why);
      return -1;
    }
    s->alog_on = 1;
  }
  /* Sockets are bound and plugins loaded: root (if it was) is not needed
   * any more, and the worker threads start as the user to serve as. */
  if (jrpcd_drop_privileges(s->conf.user, s->conf.group, err, errlen) != 0)
    return -1;
  if (s->conf.user || s->conf.group)
    jrpcd_info("serving as uid %u, gid %u", (unsigned)getuid(),
               (unsigned)getgid());
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
    /* Published with release: the workers already running hand
     * connections only to workers whose set-up they can see whole
     * (least_loaded in conn.c). */
    __atomic_store_n(&s->nworkers, s->nworkers + 1, __ATOMIC_RELEASE);
  }
  return 0;
}

/* A notification that did not go out is worth a line, not a failure:
 * jrpcd serves all the same. */
static void notified(int rc, const char *what) {
  if (rc)
    jrpcd_warn("cannot tell the service manager %s: %s", what, strerror(-rc));
}

/* What failed, for STATUS=: one line, since a newline (a plugin's init
 * message may hold one) would start another KEY= of the notification. */
static void reload_failed(char *status, size_t n, const char *err) {
  jrpcd_error("reload failed, still serving the previous plugins: %s", err);
  snprintf(status, n, "reload failed, still serving the previous plugins: %s",
           err);
  for (char *p = status; *p; p++)
    if (*p == '\n' || *p == '\r')
      *p = ' ';
}

/* Logs each key marked restart in the table whose setting in NOW differs
 * from the one WAS started with, and each new listener: a reload applies
 * neither, and an operator who changed one must hear so. */
static void warn_not_applied(const jrpcd_config_t *was,
                             const jrpcd_config_t *now) {
  for (size_t i = 0; i < jrpcd_nkeys; i++) {
    const jrpcd_key_t *k = &jrpcd_keys[i];
    if (!k->restart)
      continue;
    if (k->section == JRPCD_SEC_SERVER && !jrpcd_key_same(k, was, now))
      jrpcd_warn("%s: [%s] %s changed, but it takes effect only at a "
                 "restart: not applied",
                 now->file, jrpcd_section_name(k->section), k->name);
    for (size_t j = 0; k->section == JRPCD_SEC_LISTEN && j < now->nlistens; j++)
      for (size_t w = 0; w < was->nlistens; w++)
        if (strcmp(was->listens[w].name, now->listens[j].name) == 0 &&
            !jrpcd_key_same(k, &was->listens[w], &now->listens[j]))
          jrpcd_warn("%s: [listen %s] %s changed, but it takes effect only "
                     "at a restart: not applied",
                     now->file, now->listens[j].name, k->name);
  }
  for (size_t j = 0; j < now->nlistens; j++) {
    size_t w = 0;
    while (w < was->nlistens &&
           strcmp(was->listens[w].name, now->listens[j].name) != 0)
      w++;
    if (w == was->nlistens)
      jrpcd_warn("%s: [listen %s] is new, but listeners change only at a "
                 "restart: not applied",
                 now->file, now->listens[j].name);
  }
}

/* SIGHUP: the plugins of the config file as it is now, in a new registry;
 * connections stay, and calls still running keep their old modules. The
 * outcome goes to the log and, in one line, to status. */
static void reload(jrpcd_server_t *s, char *status, size_t n) {
  jrpcd_config_t c;
  char err[1024];
  int rc = s->conf_text ? jrpcd_config_load_string(
                              &c, s->conf_text, s->conf.file, err, sizeof(err))
                        : jrpcd_config_load(&c, s->conf.file, err, sizeof(err));
  if (rc) {
    reload_failed(status, n, err);
    return;
  }
  jrpcd_gen_t *g;
  unsigned workers = c.workers;
  c.workers = s->conf.workers; /* not reloaded; sizes the method counters */
  if (jrpcd_gen_load(&g, &c, s->gen_serial + 1, err, sizeof(err))) {
    reload_failed(status, n, err);
    jrpcd_config_free(&c);
    return;
  }
  /* Certificates that fail to load keep the previous ones (logged): the
   * plugins still reload. */
  if (jrpcd_gen_tls_load(g, &c, s->gen, err, sizeof(err))) {
    reload_failed(status, n, err);
    jrpcd_gen_release(g);
    jrpcd_config_free(&c);
    return;
  }
  /* Listeners stay as started, but who they let in comes from the new
   * config: one whose section is gone would be left with no rule. */
  for (size_t i = 0; i < s->nlisteners; i++)
    if (!jrpcd_gen_policy(g, s->listeners[i].name)) {
      snprintf(err, sizeof(err),
               "%s: [listen %s] is gone; listeners change only on a restart",
               s->conf.file, s->listeners[i].name);
      reload_failed(status, n, err);
      jrpcd_gen_release(g);
      jrpcd_config_free(&c);
      return;
    }
  /* Last of what may fail: the broker connection kept, or replaced. */
  if (jrpcd_cluster_reload(s, &c, err, sizeof(err))) {
    reload_failed(status, n, err);
    jrpcd_gen_release(g);
    jrpcd_config_free(&c);
    return;
  }
  /* A socket's protocol is fixed at start, like its address. */
  for (size_t i = 0; i < s->nlisteners; i++)
    if (!s->listeners[i].tls && jrpcd_gen_tls(g, s->listeners[i].name))
      jrpcd_warn("[listen %s]: tls_cert is new, but TLS changes only on a "
                 "restart: it stays plain",
                 s->listeners[i].name);
  s->gen_serial++;
  for (unsigned i = 0; i < s->nworkers; i++)
    jrpcd_worker_use(&s->workers[i], g);
  jrpcd_gen_release(s->gen);
  s->gen = g;
  jrpcd_log_set_level(c.log_level);
  c.workers = workers; /* as the file has it, for the comparison */
  warn_not_applied(&s->conf, &c);
  /* Only plugins, the log level, the listeners' peers and [cluster]
   * change on reload: listeners, workers and limits stay as started. */
  jrpcd_info("reloaded %s: %zu plugins, %u methods (generation %u)",
             s->conf.file, g->nplugins, g->reg.count, g->serial);
  snprintf(status, n, "reloaded: serving %u methods from %zu plugins",
           g->reg.count, g->nplugins);
  jrpcd_config_free(&c);
}

static void stop(jrpcd_server_t *s, const char *why) {
  notified(jrpcd_notify("STOPPING=1\nSTATUS=stopping: finishing calls in "
                        "flight"),
           "STOPPING=1");
  jrpcd_info("%s: stopping (finishing calls in flight, up to %u ms)", why,
             s->conf.shutdown_timeout_ms);
  for (unsigned i = 0; i < s->nworkers; i++)
    jrpcd_worker_stop(&s->workers[i]);
  /* The loop ends once the signal handles are closed; a second signal
   * meanwhile gets its default action. */
  for (int i = 0; i < 4; i++)
    uv_close((uv_handle_t *)&s->sig[i], NULL);
  uv_close((uv_handle_t *)&s->drain, NULL);
}

static void on_drained(uv_timer_t *t) {
  stop(t->data, "drain_ms over");
}

static void on_signal(uv_signal_t *h, int signum) {
  jrpcd_server_t *s = h->data;
  if (signum == SIGUSR1) { /* logrotate has moved the access log */
    if (s->alog_on)
      jrpcd_accesslog_reopen(&s->alog);
    return;
  }
  if (signum == SIGHUP) {
    /* systemd holds the unit in "reloading" from RELOADING=1 until the
     * next READY=1, which comes whether the reload worked or not: jrpcd
     * serves either way, and STATUS says which. */
    notified(jrpcd_notify_reloading(), "RELOADING=1");
    char status[512];
    reload(s, status, sizeof(status));
    notified(jrpcd_notify("READY=1\nSTATUS=%s", status), "READY=1");
    return;
  }
  if (signum == SIGTERM && s->conf.drain_ms && !atomic_load(&s->draining)) {
    /* A rolling restart: the balancer sees /health at 503 and sends no
     * more, while what it still sends is served; the stop comes after. */
    atomic_store(&s->draining, 1);
    notified(jrpcd_notify("STATUS=draining: /health answers 503 for %u ms",
                          s->conf.drain_ms),
             "STATUS");
    jrpcd_info("%s: draining for %u ms (/health answers 503), then stopping",
               strsignal(signum), s->conf.drain_ms);
    uv_timer_start(&s->drain, on_drained, s->conf.drain_ms, 0);
    return;
  }
  stop(s, strsignal(signum));
}

int jrpcd_server_run(jrpcd_server_t *s) {
  for (size_t i = 0; i < s->nlisteners; i++) {
    const jrpcd_listener_t *l = &s->listeners[i];
    const char *framing = jrpc__framing_name(l->framing);
    char tls[128];
    jrpcd_gen_tls_describe(s->gen, l->name, tls, sizeof(tls));
    if (l->passed)
      jrpcd_info("listening on %s (%s framing%s) for [listen %s], passed by "
                 "the service manager as fd %d",
                 l->desc, framing, tls, l->name, l->fd);
    else
      jrpcd_info("listening on %s (%s framing%s)", l->desc, framing, tls);
  }
  jrpcd_info("serving %u methods from %zu plugins with %u workers",
             s->gen->reg.count, s->gen->nplugins, s->nworkers);
  /* Only now: the workers accept on every listener and SIGHUP reloads
   * rather than kills, so systemd may start what depends on us and send
   * ExecReload's signal. */
  notified(jrpcd_notify("READY=1\nSTATUS=serving %u methods from %zu "
                        "plugins with %u workers",
                        s->gen->reg.count, s->gen->nplugins, s->nworkers),
           "READY=1");
  uv_run(&s->loop, UV_RUN_DEFAULT);
  int abandoned = 0;
  for (unsigned i = 0; i < s->nworkers; i++) {
    jrpcd_worker_join(&s->workers[i]);
    abandoned |= s->workers[i].abandoned;
  }
  /* The workers have written their last lines (calls ended by the stop
   * included): what is buffered goes to the file now. */
  if (s->alog_on)
    jrpcd_accesslog_close(&s->alog);
  s->alog_on = 0;
  jrpcd_stats_log_final(s);
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
  jrpcd_hub_stop();
  /* No publisher is left, and no worker serves: the broker goes last. */
  jrpcd_cluster_stop();
  for (unsigned i = 0; i < s->nworkers; i++)
    jrpcd_worker_free(&s->workers[i]);
  free(s->workers);
  /* A start that failed after opening it. */
  if (s->alog_on)
    jrpcd_accesslog_close(&s->alog);
  s->alog_on = 0;
  s->workers = NULL;
  free_listeners(s);
  if (s->loop_ready) {
    unwatch_signals(s);
    uv_run(&s->loop, UV_RUN_NOWAIT);
    uv_loop_close(&s->loop);
  }
  jrpcd_config_free(&s->conf);
  jrpcd_peercount_free(&s->peers_open);
}
