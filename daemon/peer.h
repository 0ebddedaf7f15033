/* peer.h - a connection's peer (jrpc_peer_t: who is at the other end of a
 * Unix or TCP socket) as the log, slow calls and rpc.stats write it. */
#ifndef JRPCD_PEER_H
#define JRPCD_PEER_H

#include <stddef.h>

#include "jrpc/jrpc.h"

/* The peer as the log says it: "pid P uid U", "ADDR:PORT", "[ADDR]:PORT",
 * or "in-process". Returns buf. */
const char *jrpcd_peer_text(const jrpc_peer_t *p, char *buf, size_t n);

#endif
