/* conn_auth.c - bearer tokens on an HTTP listener with tokens_file.
 *
 * lib/http.c asks jrpcd_conn_authorize once per request head, before
 * anything else of the request is looked at (GET /health excepted, for
 * balancers). The [access] decision is per connection (admit.c's views),
 * while HTTP sends credentials per request; so the first request with a
 * good token fixes the connection's token, and with it its identity
 * (token:NAME) and its view of the methods, and every later request on
 * that connection must bring the same token: another one, even a valid
 * one, is answered 401 and the connection closes. Each request is checked
 * against the tokens of the generation serving now, so a token removed by
 * a reload is refused from the next request on, on open connections too.
 *
 * A refusal is counted (rpc.stats' and /metrics' unauthorized), logged at
 * most once a second per worker, and never with the token. */
#include "conn_auth.h"

#include <string.h>
#include <strings.h>

#include "admit.h"
#include "http.h"
#include "log.h"
#include "server.h"

static const jrpcd_tokens_t *tokens_of(const jrpcd_conn_t *c) {
  return jrpcd_gen_tokens(c->w->gen, c->l->name);
}

int jrpcd_conn_auth_update(jrpcd_conn_t *c) {
  if (c->st.http) {
    jrpc__http_set_auth(c->st.http,
                        c->l->framing == JRPC_FRAMING_HTTP && tokens_of(c));
    return 0;
  }
  /* A WebSocket brought its token once, at the upgrade: one that a reload
   * removed ends it, as it would refuse its next POST. */
  return c->token_set && tokens_of(c) && !jrpcd_conn_token(c) ? -1 : 0;
}

const char *jrpcd_conn_token(const jrpcd_conn_t *c) {
  const jrpcd_tokens_t *t = c->token_set ? tokens_of(c) : NULL;
  const jrpcd_token_t *e = t ? jrpcd_tokens_find(t, c->token_digest) : NULL;
  return e ? e->name : NULL;
}

static void refused(jrpcd_conn_t *c, const char *status, const char *why) {
  JRPC__STAT_INC(c->w->auth_fail);
  char pt[96];
  uint64_t n = jrpcd_conn_log_due(c, &c->w->auth_log, pt, sizeof(pt));
  if (n)
    jrpcd_warn("%s: %s: %s, %s (%llu refused since the last such line)",
               c->l->desc, pt, status, why, (unsigned long long)n);
}

/* Every browser request of the listener (POST, the CORS preflight, the
 * WebSocket upgrade) is judged here and only here, by http.c's head. */
const char *jrpcd_conn_origin(void *arg, const char *origin, size_t n) {
  jrpcd_conn_t *c = arg; /* the HTTP host's arg is the connection */
  for (char **o = c->l->origins; o && *o; o++)
    if (strlen(*o) == n && strncasecmp(*o, origin, n) == 0)
      return *o + n + 1; /* its reply lines, after its NUL */
  refused(c, "403 Forbidden", "an Origin the listener does not allow");
  return NULL;
}

int jrpcd_conn_authorize(void *arg, jrpc__stream_t *s, const char *cred,
                         size_t n, const char **why) {
  (void)s;
  jrpcd_conn_t *c = arg; /* the HTTP host's arg is the connection */
  jrpcd_worker_t *w = c->w;
  const jrpcd_tokens_t *t = tokens_of(c);
  const jrpcd_token_t *e = NULL;
  const char *tok;
  size_t tn;
  uint8_t d[JRPCD_TOKEN_DIGEST];
  if (!t) {
    *why = "no tokens to check against"; /* auth is cleared with them */
  } else if (jrpcd_bearer_token(cred, n, &tok, &tn) != 0) {
    *why = cred ? "not a bearer token" : "a bearer token is required";
  } else {
    jrpcd_token_digest(tok, tn, d);
    e = jrpcd_tokens_find(t, d);
    if (!e) {
      *why = "the token is not valid";
    } else if (c->token_set &&
               memcmp(c->token_digest, d, JRPCD_TOKEN_DIGEST) != 0) {
      e = NULL;
      *why = "not the token of this connection's first request";
    }
  }
  if (!e) {
    refused(c, "401 Unauthorized", *why);
    return 401;
  }
  if (c->token_set)
    return 0;
  memcpy(c->token_digest, d, sizeof(d));
  c->token_set = 1;
  if (jrpcd_conn_review(c) != 0) {
    *why = "no view of the methods for this token";
    return 503;
  }
  /* The read under way looks its calls up in the view made now. */
  w->engine.reg = c->reg;
  if (jrpcd_log_enabled(JRPC_LOG_DEBUG))
    jrpcd_debug("connection %llu: bearer token %s", (unsigned long long)c->id,
                e->name);
  return 0;
}
