/* peer.c - a connection's peer as text; see peer.h. */
#include "peer.h"

#include <stdio.h>
#include <sys/socket.h>

const char *jrpcd_peer_text(const jrpc_peer_t *p, char *buf, size_t n) {
  if (p->family == AF_UNIX)
    snprintf(buf, n, "pid %d uid %d", (int)p->pid, (int)p->uid);
  else if (p->family == AF_INET6)
    snprintf(buf, n, "[%s]:%u", p->addr, p->port);
  else if (p->family == AF_INET)
    snprintf(buf, n, "%s:%u", p->addr, p->port);
  else
    snprintf(buf, n, "in-process");
  return buf;
}
