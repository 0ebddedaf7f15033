/* accept.c - a worker's listening handles, and what happens when accepting
 * fails.
 *
 * Every worker listens on a dup of every listener's socket. When accept(2)
 * fails for want of descriptors (EMFILE, ENFILE) or memory, libuv calls
 * back with the error and tries again at once, in the same loop turn, for
 * as long as connections wait in the backlog: a worker that does nothing
 * about it never gets back to its loop (no replies, no signals) and spins.
 * libuv's one reserve descriptor per loop does not save a daemon with
 * several loops, since another thread may take the descriptor the reserve
 * frees. So on such an error this worker closes its handle on that
 * listener, which ends libuv's retry loop, keeps serving the connections
 * it has, and listens again from a timer, backing off from 10 to 100 ms
 * while the error persists. The log says so at most once a second. */
#include "accept.h"

#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "log.h"
#include "server.h"

#define BACKOFF_FIRST_MS 10
#define BACKOFF_MAX_MS 100
#define CALM_MS 1000 /* a pause this long after the last starts afresh */

static void on_handle_closed(uv_handle_t *h) {}

static void on_paused(uv_handle_t *h) {
  jrpcd_acceptor_t *a = (jrpcd_acceptor_t *)(void *)h;
  if (a->state == JRPCD_ACC_CLOSING)
    a->state = JRPCD_ACC_PAUSED;
}

static void on_connection(uv_stream_t *server, int status);

/* Opens a handle on a dup of a->l's socket and listens. On failure the
 * dup is closed, a handle already initialised is being closed (CLOSING)
 * or none was (PAUSED), and err says why. */
static int listen_one(jrpcd_worker_t *w, jrpcd_acceptor_t *a, char *err,
                      size_t errlen) {
  const jrpcd_listener_t *l = a->l;
  a->state = JRPCD_ACC_PAUSED;
  int fd = fcntl(l->fd, F_DUPFD_CLOEXEC, 0);
  if (fd < 0) {
    snprintf(err, errlen, "%s: worker %u: dup: %s", l->desc, w->index,
             strerror(errno));
    return -1;
  }
  int rc = l->is_unix ? uv_pipe_init(&w->loop, &a->h.pipe, 0)
                      : uv_tcp_init(&w->loop, &a->h.tcp);
  if (rc) {
    close(fd);
    goto fail;
  }
  a->h.h.data = (void *)l;
  rc = l->is_unix ? uv_pipe_open(&a->h.pipe, fd) : uv_tcp_open(&a->h.tcp, fd);
  if (rc)
    close(fd);
  else
    rc = uv_listen(&a->h.s, 1024, on_connection);
  if (rc) {
    a->state = JRPCD_ACC_CLOSING;
    uv_close(&a->h.h, on_paused);
    goto fail;
  }
  a->state = JRPCD_ACC_LISTENING;
  return 0;
fail:
  snprintf(err, errlen, "%s: worker %u cannot listen: %s", l->desc, w->index,
           uv_strerror(rc));
  return -1;
}

/* One line a second at most, however often accept fails. */
static void log_failure(jrpcd_worker_t *w, const jrpcd_listener_t *l,
                        int status) {
  uint64_t n = jrpcd_ratelog_due(&w->accept_log, uv_now(&w->loop));
  if (!n)
    return;
  jrpcd_warn("%s: worker %u cannot accept: %s (%llu time%s since the last "
             "such line); new connections wait %u ms, those open are served",
             l->desc, w->index, uv_strerror(status), (unsigned long long)n,
             n == 1 ? "" : "s", w->accept_backoff_ms);
}

static void backoff_longer(jrpcd_worker_t *w) {
  w->accept_backoff_ms *= 2;
  if (w->accept_backoff_ms > BACKOFF_MAX_MS)
    w->accept_backoff_ms = BACKOFF_MAX_MS;
}

/* Listens again on every paused listener; those that still fail (no
 * descriptor for the dup, say) are tried again after a longer wait. */
static void on_retry(uv_timer_t *t) {
  jrpcd_worker_t *w = t->data;
  if (w->stopping)
    return;
  char err[256];
  int again = 0;
  for (size_t i = 0; i < w->nservers; i++) {
    jrpcd_acceptor_t *a = &w->servers[i];
    if (a->state == JRPCD_ACC_CLOSING)
      again = 1; /* its close completes in this loop turn */
    else if (a->state == JRPCD_ACC_PAUSED && listen_one(w, a, err, sizeof(err)))
      again = 1;
  }
  w->accept_resumed = uv_now(&w->loop);
  if (again) {
    backoff_longer(w);
    uv_timer_start(&w->accept_retry, on_retry, w->accept_backoff_ms, 0);
  }
}

static void pause_accepting(jrpcd_worker_t *w, jrpcd_acceptor_t *a,
                            int status) {
  /* A failure soon after listening again waits longer than the last one;
   * one after a calm spell starts from the shortest wait. */
  uint64_t now = uv_now(&w->loop);
  if (!w->accept_backoff_ms || now - w->accept_resumed > CALM_MS)
    w->accept_backoff_ms = BACKOFF_FIRST_MS;
  else if (!uv_is_active((uv_handle_t *)&w->accept_retry))
    backoff_longer(w);
  log_failure(w, a->l, status);
  /* Closing the handle closes its descriptor, which ends libuv's accept
   * loop for it as soon as this callback returns. */
  a->state = JRPCD_ACC_CLOSING;
  uv_close(&a->h.h, on_paused);
  if (!uv_is_active((uv_handle_t *)&w->accept_retry))
    uv_timer_start(&w->accept_retry, on_retry, w->accept_backoff_ms, 0);
}

static void on_connection(uv_stream_t *server, int status) {
  jrpcd_worker_t *w = server->loop->data;
  jrpcd_acceptor_t *a = (jrpcd_acceptor_t *)(void *)server;
  if (status < 0) {
    pause_accepting(w, a, status);
    return;
  }
  jrpcd_conn_accept(w, server, a->l);
}

int jrpcd_accept_start(jrpcd_worker_t *w, char *err, size_t errlen) {
  jrpcd_server_t *srv = w->srv;
  w->servers =
      calloc(srv->nlisteners ? srv->nlisteners : 1, sizeof(*w->servers));
  if (!w->servers) {
    snprintf(err, errlen, "out of memory");
    return -1;
  }
  for (size_t i = 0; i < srv->nlisteners; i++) {
    jrpcd_acceptor_t *a = &w->servers[i];
    a->l = &srv->listeners[i];
    w->nservers++;
    if (listen_one(w, a, err, errlen) != 0)
      return -1;
  }
  return 0;
}

void jrpcd_accept_stop(jrpcd_worker_t *w) {
  uv_timer_stop(&w->accept_retry);
  for (size_t i = 0; i < w->nservers; i++) {
    jrpcd_acceptor_t *a = &w->servers[i];
    if (a->state == JRPCD_ACC_LISTENING)
      uv_close(&a->h.h, on_handle_closed);
    /* CLOSING: its callback is still due, and then nothing reopens it. */
    if (a->state != JRPCD_ACC_CLOSING)
      a->state = JRPCD_ACC_OFF;
  }
}
