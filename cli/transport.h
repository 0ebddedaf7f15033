/* transport.h - one connection to a JSON-RPC server: a Unix or TCP socket,
 * newline or length framing, and one deadline for the whole exchange. */
#ifndef JRPC_CLI_TRANSPORT_H
#define JRPC_CLI_TRANSPORT_H

#include <stdbool.h>
#include <stddef.h>
#include <time.h>

typedef enum { JC_NEWLINE, JC_LENGTH } jc_framing;

typedef struct {
  const char *unix_path; /* exactly one of unix_path and tcp is set */
  const char *tcp;       /* "HOST:PORT" or "[V6]:PORT" */
  /* unix_path is a default, not the user's choice: who made the socket
   * file is checked before connecting (common/default_socket.h). */
  bool default_path;
  jc_framing framing;
  int timeout_ms; /* for everything from connecting to the last reply */
  /* TLS (tcp only), on when cafile is set: the server's certificate must
   * verify against cafile; cert and key (key defaults to cert) are ours. */
  const char *cafile, *cert, *key;
  /* A bearer token (--token-file, $JRPC_TOKEN) for HTTP endpoints, which
   * jrpc cannot reach yet: checked, kept here, sent by none. NULL: none. */
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
} jc_conn;

/* Results of the calls below; errors have been reported on stderr. */
enum {
  JC_OK = 0,
  JC_EOF = 1,      /* jc_recv: the server closed between frames */
  JC_ERR = -1,     /* connection or framing error */
  JC_TIMEOUT = -2, /* the deadline passed */
};

/* "unix:PATH" or "tcp:HOST:PORT", for messages. */
const char *jc_endpoint_desc(const jc_endpoint *ep);
int jc_connect(jc_conn *c, const jc_endpoint *ep);
/* Sends one frame (the framing's prefix or newline is added here). */
int jc_send(jc_conn *c, const char *data, size_t n);
/* No more requests: shuts down the writing half. */
void jc_send_done(jc_conn *c);
/* The next frame; *frame stays valid until the next jc_recv or jc_close. */
int jc_recv(jc_conn *c, const char **frame, size_t *n);
void jc_close(jc_conn *c);
/* The deadline again at timeout_ms from now, and what is left of it. */
void jc_rearm(jc_conn *c);
int jc_remaining_ms(const jc_conn *c);
/* Whether a whole frame (or a framing error) waits in the buffer, so
 * that jc_recv returns without reading. */
bool jc_buffered_frame(jc_conn *c);
/* The exit status for a JC_ERR or JC_TIMEOUT result. */
int jc_exit_for(int status);
/* Waits for EVENTS on the socket until the deadline (JC_OK, JC_ERR or
 * JC_TIMEOUT, said on stderr). */
int jc_wait(jc_conn *c, short events, const char *doing);

/* tls.c: the client side of TLS on c's connected socket. */
int jc_tls_start(jc_conn *c, const char *host);
int jc_tls_write_all(jc_conn *c, const char *p, size_t n);
/* Bytes read, 0 at the end, or JC_ERR / JC_TIMEOUT. */
long jc_tls_read(jc_conn *c, char *buf, size_t cap);
bool jc_tls_pending(const jc_conn *c);
void jc_tls_shutdown(jc_conn *c);
void jc_tls_free(jc_conn *c);

#endif
