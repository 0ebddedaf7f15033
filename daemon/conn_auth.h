/* conn_auth.h - bearer tokens on an HTTP listener with tokens_file (see
 * conn_auth.c for how a connection's token is fixed and checked), and the
 * browser origins it allows. */
#ifndef JRPCD_CONN_AUTH_H
#define JRPCD_CONN_AUTH_H

#include <stddef.h>

#include "conn.h"

/* conn_auth.c: jrpcd_http_host's authorize (http.h), for listeners with a
 * tokens_file; and whether c's requests must bring a token, set at accept
 * and at each reload: -1 when c (a WebSocket) holds a token that is no
 * longer valid and must close. */
int jrpcd_conn_authorize(void *arg, jrpc__stream_t *s, const char *cred,
                         size_t n, const char **why);
int jrpcd_conn_auth_update(jrpcd_conn_t *c);
/* jrpcd_http_host's origin (http.h): the reply lines for an Origin the
 * connection's listener allows (origins), or NULL: refused (403), and
 * counted and logged as a refusal. */
const char *jrpcd_conn_origin(void *arg, const char *origin, size_t n);
/* The name of the token c's requests bring, or NULL. */
const char *jrpcd_conn_token(const jrpcd_conn_t *c);

#endif
