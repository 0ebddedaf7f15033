/* listener.h - the listening sockets of the [listen] sections, opened once
 * by the main thread before the workers start. Every worker accepts on
 * every listener through its own libuv handle over a dup() of the fd. */
#ifndef JRPCD_LISTENER_H
#define JRPCD_LISTENER_H

#include <stddef.h>
#include <sys/types.h>

#include "config.h"

typedef struct jrpcd_listener {
  char *name;
  int fd; /* bound and listening; -1 when closed */
  int is_unix;
  char *path; /* unix: the socket file, removed on close */
  dev_t dev;  /* of the file our bind made: only that one is removed */
  ino_t ino;
  jrpc__framing_t framing;
  int stats;      /* rpc.stats is answered on this listener */
  char desc[160]; /* "unix:/run/jrpcd.sock" or "tcp:[::1]:7400" */
} jrpcd_listener_t;

/* Binds and listens. A Unix socket file left by a dead jrpcd is replaced;
 * one that still answers is never taken over. -1 with err on failure. */
int jrpcd_listener_open(jrpcd_listener_t *l, const jrpcd_listen_conf_t *c,
                        char *err, size_t errlen);

/* Closes the socket and removes its file (Unix). */
void jrpcd_listener_close(jrpcd_listener_t *l);

#endif
