/* transport.h - one connection to a JSON-RPC server: a Unix or TCP socket,
 * newline, length, HTTP or content-length framing, and one deadline for
 * the whole exchange. */
#ifndef JRPC_CLI_TRANSPORT_H
#define JRPC_CLI_TRANSPORT_H

#include <stdbool.h>
#include <stddef.h>
#include <time.h>

/* The framings, as jc_framings' rows (framing.c) are indexed. */
typedef enum {
  JC_NEWLINE,
  JC_LENGTH,
  JC_HTTP,
  JC_CONTENT_LENGTH,
  JC_WEBSOCKET,
  JC_FRAMINGS
} jc_framing;

/* A reply larger than this is refused rather than buffered. */
#define JC_MAX_FRAME (256u << 20)

/* Set by --follow's SIGINT and SIGTERM handler: a wait then ends with
 * JC_STOPPED instead of going on. */
extern volatile int jc_stop;

typedef struct {
  const char *unix_path; /* exactly one of unix_path and tcp is set */
  const char *tcp;       /* "HOST:PORT" or "[V6]:PORT" */
  /* The http:// or https:// URL the endpoint came from, for messages;
   * NULL when it was given as -u or -t. */
  const char *url;
  /* unix_path is a default, not the user's choice: who made the socket
   * file is checked before connecting (common/default_socket.h). */
  bool default_path;
  jc_framing framing;
  int timeout_ms; /* for everything from connecting to the last reply */
  /* --wait: how long to keep trying while nothing listens (0: once). */
  int wait_ms;
  /* TLS (tcp only: tls://, https://, or -t with --cafile): the server's
   * certificate must verify against cafile, else the system's trust
   * store, for servername, else the host connected to; insecure: not
   * checked at all. cert and key (key defaults to cert) are ours. */
  bool tls, insecure;
  const char *cafile, *servername, *cert, *key;
  /* HTTP framing: the request target ("/" unless the URL has a path), the
   * Host header's value, and more header lines (-H, each ending in CRLF;
   * NULL: none). */
  const char *path, *host, *headers;
  /* A bearer token (--token-file, $JRPC_TOKEN), sent on every HTTP request
   * as Authorization: Bearer; other framings carry none. NULL: none. */
  const char *token;
} jc_endpoint;

typedef struct {
  int fd;
  const jc_endpoint *ep;
  struct timespec deadline;
  char *buf; /* bytes received and not yet handed out */
  size_t len, cap;
  size_t consumed;    /* bytes of buf handed out by the last jc_recv */
  struct ssl_st *ssl; /* the TLS session (tls.c), or NULL */
  /* HTTP (http.c): the response at the start of buf once read whole
   * (kind 0: not yet), the requests not answered yet, whether one was
   * answered on this connection, and whether the server will close it
   * (Connection: close) so that the next request needs a new one. */
  struct {
    int kind;
    size_t body, len, total;
  } resp;
  unsigned pending;
  bool used, closing;
  bool done; /* jc_send_done: no more requests */
  /* --wait: until when a refused connect is tried again, quietly; and
   * whether the last connect found nothing listening. */
  struct timespec wait_until;
  bool retrying, nobody;
  /* TLS: the server asked for a client certificate and we had none. */
  bool cert_asked;
  /* --follow: waits have no deadline (forever), and SIGINT and SIGTERM,
   * blocked otherwise, are let through only while waiting (sigmask). */
  bool forever;
  const void *sigmask;
  /* WebSocket (websocket.c): the handshake done, our close sent, the
   * server's received. */
  struct {
    bool open, close_sent, close_seen;
  } ws;
} jc_conn;

/* Results of the calls below; errors have been reported on stderr. */
enum {
  JC_OK = 0,
  JC_EOF = 1,      /* jc_recv: the server closed between frames */
  JC_ERR = -1,     /* connection or framing error */
  JC_TIMEOUT = -2, /* the deadline passed */
  JC_STOPPED = -3, /* SIGINT or SIGTERM while waiting (--follow) */
};

/* "unix:PATH", "tcp:HOST:PORT" or the URL, for messages. */
const char *jc_endpoint_desc(const jc_endpoint *ep);
int jc_connect(jc_conn *c, const jc_endpoint *ep);
/* Sends one frame (the framing's prefix or newline is added here). */
int jc_send(jc_conn *c, const char *data, size_t n);
/* No more requests (once; later calls do nothing): the writing half shut
 * down, or what the framing's row says. OWED: replies are still due (a
 * WebSocket then waits for them before it closes: call again once they
 * are in). */
void jc_send_done(jc_conn *c, bool owed);
/* The next frame; *frame stays valid until the next jc_recv or jc_close. */
int jc_recv(jc_conn *c, const char **frame, size_t *n);
void jc_close(jc_conn *c);
/* The deadline again at timeout_ms from now, and what is left of it. */
void jc_rearm(jc_conn *c);
int jc_remaining_ms(const jc_conn *c);
/* Whether a whole frame (or a framing error) waits in the buffer, so
 * that jc_recv returns without reading. */
bool jc_buffered_frame(jc_conn *c);
/* What a JC_EOF from jc_recv means, where a reply was due: the server
 * closed the connection, or (HTTP) answered 204 No Content. */
const char *jc_no_reply(const jc_conn *c);
/* The exit status for a JC_ERR or JC_TIMEOUT result. */
int jc_exit_for(int status);
/* Waits for EVENTS on the socket until the deadline (JC_OK, JC_ERR or
 * JC_TIMEOUT, said on stderr). */
int jc_wait(jc_conn *c, short events, const char *doing);
/* Writes all N bytes (through TLS when on), within the deadline. */
int jc_write_all(jc_conn *c, const char *p, size_t n);
/* Closes the socket and connects again to the same endpoint, within what
 * is left of the deadline; nothing may be buffered. */
int jc_reconnect(jc_conn *c);
/* Reads what comes next onto the end of c->buf, waiting within the
 * deadline (DOING says for what): the number of bytes, 0 at the end, or
 * JC_ERR, JC_TIMEOUT or JC_STOPPED (errors said on stderr). */
long jc_read_more(jc_conn *c, const char *doing);

/* A framing as a row of operations: its -f name, what is said on a new
 * connection before any request (NULL: nothing; WebSocket's handshake),
 * how one request goes out (its prefix, newline or head added), what
 * ends the requests (NULL: shutting down the writing half), what is
 * said before the connection closes (NULL: nothing), and how a whole
 * reply is found
 * at the start of c->buf: 1 with the payload at *skip, *n bytes long, the
 * frame *total bytes in all; 2 an HTTP response without a reply (204); 0
 * not whole yet; -1 an error said on stderr. AT_EOF: the server closed,
 * which ends an HTTP body that has no length. */
typedef struct {
  const char *name;
  int (*open)(jc_conn *c);
  int (*send)(jc_conn *c, const char *data, size_t n);
  void (*done)(jc_conn *c, bool owed);
  void (*close)(jc_conn *c);
  int (*frame)(jc_conn *c, bool at_eof, size_t *skip, size_t *n, size_t *total);
} jc_framing_ops;
extern const jc_framing_ops jc_framings[JC_FRAMINGS];
/* The framing -f NAME names, or JC_FRAMINGS. */
jc_framing jc_framing_named(const char *name);
/* A frame's header line at buf[*pos..len) without its CRLF (or LF) in
 * *line, *n; *pos moves past it. false when no whole line is there. */
bool jc_next_line(const jc_conn *c, size_t *pos, const char **line, size_t *n);

/* http.c: HTTP/1.1 framing. jc_http_send POSTs one request (connecting
 * again first when the server closed or will close the connection);
 * jc_http_frame reads the response at the start of c->buf: 1 a body (at
 * c->resp.body, c->resp.len bytes), 2 a response without one (204), 0 not
 * whole yet, -1 an error said on stderr (a status other than 2xx among
 * them: 401 explained in terms of the token). AT_EOF: the server closed,
 * which ends a body that has no length. */
int jc_http_send(jc_conn *c, const char *body, size_t n);
/* Nothing: each request has its own response; the connection stays. */
void jc_http_done(jc_conn *c, bool owed);
int jc_http_frame(jc_conn *c, bool at_eof);
/* jc_http_frame as the framing row has it. */
int jc_http_complete(jc_conn *c, bool at_eof, size_t *skip, size_t *n,
                     size_t *total);
/* An http://, https://, ws:// or wss:// URL into EP (tcp, tls, path,
 * host, framing: HTTP or WebSocket): 0, or -1 with the reason in err.
 * The strings are allocated and live as long as the program. */
int jc_http_url(const char *url, jc_endpoint *ep, char *err, size_t errlen);
/* Whether WORD starts like a URL jc_http_url takes. */
bool jc_is_http_url(const char *word);
/* The head of a request (GET's or POST's) up to its blank line: the
 * request line METHOD ep->path, Host, User-Agent, then EXTRA (lines
 * ending in CRLF), -H's headers and the bearer token. Allocated (NULL
 * after saying why); *n its length. The caller wipes it (the token). */
char *jc_http_head(const jc_endpoint *ep, const char *method, const char *extra,
                   size_t *n);

/* websocket.c: the ws:// and wss:// framing's row's operations. */
int jc_ws_open(jc_conn *c);
int jc_ws_send(jc_conn *c, const char *data, size_t n);
void jc_ws_done(jc_conn *c, bool owed);
void jc_ws_close(jc_conn *c);
int jc_ws_frame(jc_conn *c, bool at_eof, size_t *skip, size_t *n,
                size_t *total);

/* content_length.c: the content-length framing's row's operations. */
int jc_cl_send(jc_conn *c, const char *data, size_t n);
int jc_cl_frame(jc_conn *c, bool at_eof, size_t *skip, size_t *n,
                size_t *total);

/* tls.c: the client side of TLS on c's connected socket. jc_tls_built:
 * whether this jrpc has it (said before connecting where ep asks for it). */
bool jc_tls_built(void);
int jc_tls_start(jc_conn *c, const char *host);
int jc_tls_write_all(jc_conn *c, const char *p, size_t n);
/* Bytes read, 0 at the end, or JC_ERR / JC_TIMEOUT. */
long jc_tls_read(jc_conn *c, char *buf, size_t cap);
bool jc_tls_pending(const jc_conn *c);
void jc_tls_shutdown(jc_conn *c);
void jc_tls_free(jc_conn *c);

#endif
