/* http.h - the two header framings, parsed by Debian's libhttp-parser:
 *
 *  http:           JSON-RPC over HTTP/1.1 (and 1.0) POST: keep-alive,
 *                  pipelining, Content-Length and chunked bodies, and the
 *                  GET (and HEAD) routes /health and /metrics when the host
 *                  turns them on. Replies go out in request order: while a
 *                  request's reply waits for deferred calls, the requests
 *                  behind it wait unparsed in the buffer (`held`).
 *  content-length: the framing of LSP and vscode-jsonrpc: a header block
 *                  ("Content-Length: N\r\n\r\n", other headers ignored)
 *                  then N bytes of body; replies are framed the same way.
 *                  The header block is parsed by the same parser, behind a
 *                  request line of our own that never reaches the wire.
 *
 * Bodies stay in the stream's pooled input buffer: a Content-Length body
 * where it was read, a chunked one gathered in place over its chunk
 * headers. Each body then goes down the same jrpc__dispatch_frame as a
 * newline frame, whose reply (written like a newline frame's) gets its
 * head put before it here. The newline and length framings never come
 * here: jrpc__stream_feed and the frame codecs are untouched by this.
 *
 * Statuses (http): 200 with the JSON-RPC response (JSON-RPC errors
 * included), 204 for a request of notifications only, 400 for a malformed
 * request, 405 for a method other than POST (other than GET or HEAD on
 * the routes), 408 for a request not whole after frame_timeout_ms, 413 for a
 * body over max_frame_bytes, 415 for a Content-Type that is not JSON, 431
 * for a head over max_header_bytes, 503 from /health while draining. 400,
 * 408, 413 and 431 close the connection (the stream's framing is lost or
 * its client too slow); the others keep it. A header folded over lines
 * (RFC 7230's obs-fold) is a 400: read as one line, a folded
 * Content-Length or Transfer-Encoding would frame the body otherwise than
 * a proxy in front may have. With `auth` (a listener's tokens_file), the
 * host judges each head's Authorization before anything else is: 401
 * (with WWW-Authenticate: Bearer) closes the connection before any byte
 * of the body is read. */
#ifndef JRPC_HTTP_H
#define JRPC_HTTP_H

#include <http_parser.h>
#include <stddef.h>
#include <stdint.h>

#include "outbuf.h"
#include "stream.h"

/* The GET routes an http stream answers, and how (the host: the daemon). */
enum {
  JRPC__HTTP_ROUTE_HEALTH = 1,
  JRPC__HTTP_ROUTE_METRICS = 2,
  /* Not GET routes of the host's but answered the same way, by http.c:
   * a CORS preflight, and a websocket handshake found good. */
  JRPC__HTTP_ROUTE_PREFLIGHT = 4,
  JRPC__HTTP_ROUTE_UPGRADE = 8,
};

/* The longest Origin a listener may allow (jrpcd.conf's origins): its
 * reply lines fit head_begin's buffer. */
#define JRPC__HTTP_ORIGIN_MAX 200

/* The longest head kept by the memo: most clients' are 100-250 bytes. */
#define JRPC__HTTP_MEMO_MAX 256

#define JRPC__HTTP_DEGRADED 2

typedef struct jrpc__http_host {
  /* 1 while serving, 0 while draining (/health answers 503), and
   * JRPC__HTTP_DEGRADED while serving without a part it depends on (200,
   * "degraded": balancers keep it). */
  int (*healthy)(void *arg);
  /* Appends the Prometheus text exposition to o; 0 or JRPC_ENOMEM. */
  int (*metrics)(void *arg, jrpc__outbuf_t *o);
  /* For a stream with `auth` set, once per request head (but /health's):
   * the Authorization header's value (cred NULL when there is none, or
   * when there is more than one). 0 lets the request in; otherwise the
   * status that answers it (401, or 503) with why, a short reason for the
   * client, and the connection closes. */
  int (*authorize)(void *arg, jrpc__stream_t *s, const char *cred, size_t n,
                   const char **why);
  /* A request with an Origin header (a browser's, cross-origin: jrpcd
   * serves no pages): the header lines its replies carry when the origin
   * is one the listener allows (Access-Control-Allow-Origin, Vary), or
   * NULL, and the request is refused with 403. NULL: none is allowed. */
  const char *(*origin)(void *arg, const char *origin, size_t n);
} jrpc__http_host_t;

typedef struct jrpc__http {
  http_parser p;
  jrpc__stream_t *s;
  const jrpc__http_host_t *host;
  void *host_arg;
  uint32_t max_head; /* max_header_bytes */
  uint8_t routes;    /* JRPC__HTTP_ROUTE_* answered */
  uint8_t websocket; /* GET with Upgrade: websocket switches to ws.h */
  /* The message at s->rd: bytes of it given to the parser so far, where
   * its body starts and how much of it is gathered. */
  size_t parsed;
  size_t head_len; /* 0 until the head is whole */
  size_t body_len;
  uint8_t fresh;     /* no byte of the next message parsed yet */
  uint8_t complete;  /* the parser paused at the message's end */
  uint8_t head_done; /* ... or at the head's end */
  uint16_t status;   /* an error status decided while parsing, or 0 */
  uint8_t route;     /* the GET route asked for, or 0 */
  uint8_t auth;      /* every request asks host->authorize (set_auth) */
  uint8_t auth_seen; /* Authorization headers in this head (with auth) */
  uint32_t auth_at;  /* the first one's value: its offset in the head */
  uint32_t auth_n;   /* ... and its length */
  const char *why;   /* the host's reason for an error status, or NULL */
  /* Browsers' requests: the Origin header (its value's offset and length
   * in the head, how many were sent), and the header lines the replies
   * carry for it (host->origin) or NULL. */
  uint32_t origin_at;
  uint32_t origin_n;
  uint8_t origin_seen;
  const char *cors;
  /* The websocket handshake (ws.h): Upgrade: websocket was asked for,
   * Sec-WebSocket-Version: 13 was sent, the key. A good one is answered 101
   * (route JRPC__HTTP_ROUTE_UPGRADE), after which the stream switches. */
  uint8_t ws_asked;
  uint8_t ws_version13;
  uint8_t ws_key_n;
  char ws_key[24];
  uint8_t bad_type; /* a Content-Type that is not JSON */
  uint8_t expect;   /* Expect: 100-continue */
  uint8_t field;    /* the header being read: one of http.c's FIELD_* */
  uint8_t field_n;
  char field_name[24]; /* sec-websocket-version is the longest looked at */
  uint16_t value_n;
  char value[64];
  uint16_t url_n;
  char url[16];
  /* Replies finished during a dispatch go here first (http.c). */
  jrpc__outbuf_t *aside;
  /* The reply of the last request waits for deferred calls. */
  uint8_t awaiting;
  uint8_t close_after; /* ... and the connection closes after it */
  uint8_t http10;      /* ... to an HTTP/1.0 client */
  /* The memo (http.c): the last head the parser read, when it was a plain
   * POST with a Content-Length, kept so that the same head again is not
   * parsed again. Allocated at the first head kept, so that connections
   * of other framings (which embed this) pay nothing for it. */
  uint32_t clen_at;     /* the Content-Length value's offset in the head */
  uint8_t memo_hit;     /* the message at rd has the memo's head */
  uint8_t memo_ndigits; /* the number of Content-Length digits in memo */
  uint16_t memo_digits; /* where they are in memo */
  uint16_t memo_len;    /* bytes of memo; 0: none */
  size_t memo_body;     /* the body length of the message that matched */
  uint64_t memo_hits;   /* heads the memo served (for the tests) */
  char *memo;           /* JRPC__HTTP_MEMO_MAX bytes */
} jrpc__http_t;

/* s was set up by jrpc__stream_init with JRPC_FRAMING_HTTP or
 * JRPC_FRAMING_CONTENT_LENGTH; h lives as long as s. */
void jrpc__http_init(jrpc__http_t *h, jrpc__stream_t *s, uint32_t max_head,
                     uint8_t routes, const jrpc__http_host_t *host,
                     void *host_arg);

/* framing.h's init and free for these framings: h made for s and owned
 * by it (JRPC_ENOMEM when there is no memory for it), and let go again. */
int jrpc__http_open(jrpc__stream_t *s, const jrpc__framing_conf_t *conf);
void jrpc__http_close(jrpc__stream_t *s);

/* Whether every request must pass host->authorize (a listener's
 * tokens_file, which a reload may add or remove). Turning it on drops the
 * memo: a head it kept was never asked about. */
void jrpc__http_set_auth(jrpc__http_t *h, int on);

/* What h holds of its own (the memo): before s's jrpc__stream_free. */
void jrpc__http_free(jrpc__http_t *h);

/* jrpc__stream_feed for a stream with h: the same contract (0,
 * JRPC__ECLOSE once the reply that ends the connection is written, or
 * JRPC_ENOMEM; `held` and `more` as there). */
int jrpc__http_feed(jrpc__stream_t *s, size_t n, int eof);

/* A deferred reply (or a batch's) for sink, framed with its head: the
 * sink's deliver (framing.h) for these framings. */
void jrpc__http_deliver(jrpc__sink_t *sink, jrpc__outbuf_t *src);
/* content-length's notify (framing.h): a message of the server's own. */
void jrpc__http_notify(jrpc__sink_t *sink, jrpc__outbuf_t *src);

/* The reply for a request still incomplete after timeout_ms (408, or
 * -32009 on content-length); the stream closes after it. */
int jrpc__http_timeout(jrpc__stream_t *s, uint32_t timeout_ms, uint64_t got);

/* Bytes of an incomplete message buffered (for the frame clock). */
static inline int jrpc__http_midway(const jrpc__stream_t *s) {
  return s->wr > s->rd;
}

#endif
