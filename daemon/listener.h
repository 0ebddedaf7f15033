/* listener.h - the listening sockets of the [listen] sections, opened once
 * by the main thread before the workers start. Every worker accepts on
 * every listener through its own libuv handle over a dup() of the fd. */
#ifndef JRPCD_LISTENER_H
#define JRPCD_LISTENER_H

#include <stdatomic.h>
#include <stddef.h>
#include <sys/types.h>

#include "config.h"

typedef struct jrpcd_listener {
  char *name;
  int fd; /* bound and listening; -1 when closed */
  int is_unix;
  char *path; /* unix: the file our bind made, removed on close; NULL for a
                 passed socket, whose file belongs to the service manager */
  dev_t dev;  /* of the file our bind made: only that one is removed */
  ino_t ino;
  jrpc__framing_t framing;
  int stats;           /* JRPCD_STATS_*: rpc.stats answers unless off */
  uint8_t http_routes; /* framing = http: JRPC__HTTP_ROUTE_* answered */
  uint8_t websocket;   /* framing = http: the upgrade to WebSocket answered */
  /* framing = http: the origins allowed (origins), each with the header
   * lines of its replies after its NUL ("Access-Control-Allow-Origin: ...");
   * NULL-terminated, or NULL: none. */
  char **origins;
  int tls;        /* TLS as started (the generation holds the context) */
  int passed;     /* handed over by the service manager (activation.h) */
  char desc[160]; /* "unix:/run/jrpcd.sock" or "tcp:[::1]:7400" */
  /* TLS handshakes in progress on it, all workers (max_handshakes). */
  atomic_uint handshakes;
} jrpcd_listener_t;

/* Binds and listens. A Unix socket file left by a dead jrpcd is replaced;
 * one that still answers is never taken over. -1 with err on failure. */
int jrpcd_listener_open(jrpcd_listener_t *l, const jrpcd_listen_conf_t *c,
                        char *err, size_t errlen);

/* Serves the socket fd that the service manager passed for section c
 * instead of binding: it must be a listening stream socket of the kind the
 * section says (unix or tcp), else -1 with err naming the section and fd.
 * An address other than the section's is served all the same, with a
 * warning: the .socket unit decides where to listen. Takes fd on success
 * (closed by jrpcd_listener_close, whose file is never removed). */
int jrpcd_listener_adopt(jrpcd_listener_t *l, const jrpcd_listen_conf_t *c,
                         int fd, char *err, size_t errlen);

/* Closes the socket and removes its file (Unix) if jrpcd's bind made it. */
void jrpcd_listener_close(jrpcd_listener_t *l);

#endif
