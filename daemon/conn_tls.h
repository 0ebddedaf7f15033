/* conn_tls.h - a client connection on a TLS listener: ciphertext is read
 * into a per-thread buffer and fed to the session (tls.h), plaintext is
 * taken into the stream's read buffer as a plain read's would be, and the
 * replies are encrypted on their way out, the ciphertext sent with the
 * same try-then-uv_write as plain output. conn.c calls these only where
 * c->tls is set, so a plain connection pays one pointer test. */
#ifndef JRPCD_CONN_TLS_H
#define JRPCD_CONN_TLS_H

#include "peercount.h"
#include "worker.h"

/* Starts the session with the listener's context in the worker's
 * generation. -1 (logged): close the connection. */
int jrpcd_conn_tls_start(jrpcd_conn_t *c);
/* uv_read_start's callbacks for a TLS connection. */
void jrpcd_conn_tls_alloc(uv_handle_t *h, size_t hint, uv_buf_t *buf);
void jrpcd_conn_tls_read(uv_stream_t *s, ssize_t nread, const uv_buf_t *buf);
/* Decrypts what the session holds into the stream while it may take
 * more: after a read, and when reading resumes after a pause. */
void jrpcd_conn_tls_pump(jrpcd_conn_t *c);
/* Encrypts the pending output and sends the ciphertext. 0, or -1 when the
 * connection was closed. */
int jrpcd_conn_tls_send(jrpcd_conn_t *c);
/* The handshake is past its time: logged and closed, 1; else 0. */
int jrpcd_conn_tls_expired(jrpcd_conn_t *c, uint64_t now, uint64_t frame_ms);
/* Before uv_close: a close_notify (or a pending alert) goes out if the
 * socket takes it at once. */
void jrpcd_conn_tls_close(jrpcd_conn_t *c);
/* After uv_close: frees the session. */
void jrpcd_conn_tls_free(jrpcd_conn_t *c);
/* 1 if a client certificate can be verified on c's listener (its context
 * asks for one): only then can a cert: or san: principal match. */
int jrpcd_conn_tls_asks_cert(const jrpcd_conn_t *c);
/* The verified client certificate's CN and DNS SANs into id (sans and buf
 * are the caller's, for the pointers). */
void jrpcd_conn_tls_identity(jrpcd_conn_t *c, jrpcd_identity_t *id,
                             const char **sans, size_t max, char *buf,
                             size_t buflen);

/* conn.c's, for this file. */
void jrpcd_conn_input(jrpcd_conn_t *c, size_t n, int eof);
void jrpcd_conn_eof(jrpcd_conn_t *c);
const char *jrpcd_conn_peer_text(const jrpcd_conn_t *c, char *buf, size_t n);

#endif
