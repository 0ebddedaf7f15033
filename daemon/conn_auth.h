/* conn_auth.h - bearer tokens on an HTTP listener with tokens_file (see
 * conn_auth.c for how a connection's token is fixed and checked). */
#ifndef JRPCD_CONN_AUTH_H
#define JRPCD_CONN_AUTH_H

#include <stddef.h>

#include "stream.h"

struct jrpcd_conn;

/* jrpcd_http_host's authorize (http.h), for listeners with a tokens_file:
 * 0 to let the request in, else the HTTP status to answer (401, 503)
 * with why. */
int jrpcd_conn_authorize(void *arg, jrpc__stream_t *s, const char *cred,
                         size_t n, const char **why);
/* Whether c's requests must bring a token, set at accept and at each
 * reload. */
void jrpcd_conn_auth_update(struct jrpcd_conn *c);
/* The name of the token c's requests bring, or NULL. */
const char *jrpcd_conn_token(const struct jrpcd_conn *c);

#endif
