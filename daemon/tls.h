/* tls.h - TLS for TCP listeners, on OpenSSL 3 through memory BIOs: the
 * connection reads and writes ciphertext on its own libuv stream, and this
 * turns it into the plaintext the request path reads and back, so the
 * pooled buffers and the event loop stay as they are.
 *
 * A context holds one listener's certificate, key and settings; a reload
 * builds a new one and swaps it in (jrpcd_tls_ctx_release), and sessions
 * already running keep the context they started with. Sessions resume
 * (session ids and tickets) within one context only: its cache and ticket
 * keys are its own, so a reload ends every resumption, and the session id
 * context is a hash of the client verification settings besides. Built without
 * TLS
 * (-DJRPC_TLS=OFF), jrpcd_tls_available() is 0 and nothing else exists. */
#ifndef JRPCD_TLS_H
#define JRPCD_TLS_H

#include <stddef.h>
#include <stdint.h>

int jrpcd_tls_available(void);
/* "OpenSSL 3.0.19 27 Jan 2026", or NULL without TLS: for jrpcd -V. */
const char *jrpcd_tls_library(void);

typedef struct jrpcd_tls_ctx jrpcd_tls_ctx_t;

#ifdef JRPC_HAVE_TLS

/* A listener's TLS settings, as the config gives them. */
typedef struct jrpcd_tls_conf {
  const char *cert;        /* PEM: the certificate (and its chain) */
  const char *key;         /* PEM: its private key */
  const char *client_ca;   /* PEM: CAs whose clients are let in; NULL: no
                              client certificate asked for */
  const char *min_version; /* "1.2" (default) or "1.3" */
  const char *ciphers;     /* TLS 1.2 cipher list; NULL: JRPCD_TLS_CIPHERS */
  unsigned verify_depth;   /* intermediate CAs above a client certificate */
} jrpcd_tls_conf_t;

/* TLS 1.2 suites offered when tls_ciphers is unset: AEAD only (AES-GCM,
 * ChaCha20-Poly1305), with forward secrecy (ECDHE, DHE); no CBC, no SHA-1
 * MAC, no static RSA key exchange. TLS 1.3's suites are all of that kind. */
#define JRPCD_TLS_CIPHERS                                                      \
  "ECDHE+AESGCM:ECDHE+CHACHA20:DHE+AESGCM:DHE+CHACHA20:!aNULL:!DSS"

/* Reads the files and checks that key and certificate belong together.
 * NULL with a message naming the file and OpenSSL's reason. */
jrpcd_tls_ctx_t *jrpcd_tls_ctx_new(const jrpcd_tls_conf_t *conf, char *err,
                                   size_t errlen);
/* Every session holds its context; the last release frees it. */
void jrpcd_tls_ctx_hold(jrpcd_tls_ctx_t *x);
void jrpcd_tls_ctx_release(jrpcd_tls_ctx_t *x);
/* 1 if the context asks clients for a certificate (tls_client_ca). */
int jrpcd_tls_ctx_asks_cert(const jrpcd_tls_ctx_t *x);
/* When the certificate in use stops being valid (time_t), for logs. */
long long jrpcd_tls_ctx_not_after(const jrpcd_tls_ctx_t *x);

/* One server-side session. */
typedef struct jrpcd_tls {
  void *ssl;            /* SSL */
  void *in, *out;       /* memory BIOs: ciphertext in, ciphertext out */
  jrpcd_tls_ctx_t *ctx; /* held */
  int handshaken;       /* the handshake has completed */
  int verified;         /* ... with a client certificate that verified */
  int closed;           /* close_notify seen, or a fatal error */
  int peer_done;        /* ... it was the peer's close_notify */
  char cn[256];         /* the verified client certificate's subject CN */
  char reason[160];     /* why the session failed, for the log */
} jrpcd_tls_t;

enum {
  JRPCD_TLS_OK = 0,     /* progress (or nothing to do) */
  JRPCD_TLS_ERROR = -1, /* fatal: send what is pending, then close */
};

int jrpcd_tls_start(jrpcd_tls_t *t, jrpcd_tls_ctx_t *ctx);
void jrpcd_tls_free(jrpcd_tls_t *t);

/* Ciphertext read from the socket. */
int jrpcd_tls_feed(jrpcd_tls_t *t, const char *p, size_t n);
/* Plaintext the peer sent, into buf: bytes read, 0 when none is ready
 * yet (the handshake runs here too), or JRPCD_TLS_ERROR. *eof is set
 * when the peer closed the session cleanly. */
long jrpcd_tls_read(jrpcd_tls_t *t, char *buf, size_t cap, int *eof);
/* Plaintext to send: all of it is encrypted into the outgoing ciphertext
 * (memory BIOs never push back), or JRPCD_TLS_ERROR. */
int jrpcd_tls_write(jrpcd_tls_t *t, const char *p, size_t n);
/* Outgoing ciphertext: *p and its length, then consume what was sent. */
size_t jrpcd_tls_out(jrpcd_tls_t *t, const char **p);
void jrpcd_tls_out_consume(jrpcd_tls_t *t, size_t n);
/* Queues a close_notify. */
void jrpcd_tls_shutdown(jrpcd_tls_t *t);

/* The verified client certificate's DNS subjectAltNames, or 0. Names go
 * into names[0..max) as pointers into buf. */
size_t jrpcd_tls_peer_sans(jrpcd_tls_t *t, const char **names, size_t max,
                           char *buf, size_t buflen);

#endif /* JRPC_HAVE_TLS */
#endif
