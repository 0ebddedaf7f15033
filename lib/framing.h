/* framing.h - the framings as a table of operations, one row each
 * (framing.c), indexed by jrpc__framing_t: how a stream's input is cut into
 * frames and fed to the engine, how a deferred reply is wrapped on its
 * way to the sink, what a too-slow frame is answered, and what the
 * framing holds of its own. The host (the daemon) and the engine (async.c)
 * reach a framing only through its row, so that a new framing is a new
 * file, a row here and a config value. */
#ifndef JRPC_FRAMING_H
#define JRPC_FRAMING_H

#include <stddef.h>
#include <stdint.h>

#include "frame.h"
#include "outbuf.h"

struct jrpc__stream;
struct jrpc__sink;
struct jrpc__http_host;

/* What a framing with state of its own is made with (the header
 * framings: max_header_bytes, the GET routes, and the host's callbacks). */
typedef struct jrpc__framing_conf {
  uint32_t max_head;
  uint8_t routes;
  uint8_t websocket; /* http: the upgrade to websocket is answered */
  const struct jrpc__http_host *host;
  void *host_arg;
} jrpc__framing_conf_t;

typedef struct jrpc__framing_ops {
  const char *name; /* as jrpcd.conf spells it */
  /* After jrpc__stream_init: the framing's own state, if it has any. 0
   * or JRPC_ENOMEM. NULL: none. */
  int (*init)(struct jrpc__stream *s, const jrpc__framing_conf_t *conf);
  /* n bytes were read into the stream's buffer: jrpc__stream_feed's
   * contract (0, JRPC__ECLOSE or JRPC_ENOMEM; `held` and `more`). */
  int (*feed)(struct jrpc__stream *s, size_t n, int eof);
  /* A deferred reply (or a batch's) onto the sink's output, framed: the
   * sink carries it (jrpc__sink_t.deliver), so the engine calls no
   * framing by name. */
  void (*deliver)(struct jrpc__sink *sink, jrpc__outbuf_t *src);
  /* A message of the server's own (a notification: push.h) onto the
   * sink's output, framed like a reply but answering nothing. NULL: the
   * framing cannot carry one (HTTP POST, where every response answers a
   * request), and subscribing is refused with -32010. */
  void (*notify)(struct jrpc__sink *sink, jrpc__outbuf_t *src);
  /* The reply to a frame still incomplete after timeout_ms. */
  int (*timeout)(struct jrpc__stream *s, uint32_t timeout_ms, uint64_t got);
  /* What init made, before jrpc__stream_free. NULL: nothing. */
  void (*free)(struct jrpc__stream *s);
  /* Called by the host every so often with its clock: a keepalive ping
   * after ping_ms without a word from the peer, and the end of a peer
   * that leaves one unanswered as long. 0, 1 (output to send),
   * JRPC__ECLOSE (flush, then close) or JRPC_ENOMEM. NULL: none. */
  int (*keepalive)(struct jrpc__stream *s, uint64_t now_ms, uint32_t ping_ms);
  /* The host is stopping and has nothing left to send on s: the
   * framing's last word before the connection ends (websocket: a close,
   * 1001, going away, which clients tell from a broken connection). 1:
   * output to send, then it is called again; 0: nothing (more). NULL:
   * none. */
  int (*goodbye)(struct jrpc__stream *s);
  /* Replies go out in request order: while one waits for deferred calls,
   * nothing behind it is read. */
  uint8_t in_order;
} jrpc__framing_ops_t;

extern const jrpc__framing_ops_t jrpc__framings[JRPC__FRAMINGS];

/* The stream goes on in another framing (http's upgrade to websocket):
 * the old row's state is freed, the new row's made with conf, and the
 * sink delivers the new way. What is buffered stays, for the new row's
 * feed. 0 or JRPC_ENOMEM. */
int jrpc__stream_switch(struct jrpc__stream *s, jrpc__framing_t to,
                        const jrpc__framing_conf_t *conf);

#endif
