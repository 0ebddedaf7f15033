/* request.h - the JSON-RPC 2.0 rules: what makes a request valid, what is
 * a notification, how an id is echoed, and how error objects look. */
#ifndef JRPC_REQUEST_H
#define JRPC_REQUEST_H

#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "arena.h"
#include "common.h"
#include "outbuf.h"
#include "parser.h"

typedef enum jrpc__req_kind {
  JRPC__REQ_CALL = 0,   /* answer it */
  JRPC__REQ_NOTIFY = 1, /* run it, never answer */
  JRPC__REQ_INVALID = 2 /* answer -32600 */
} jrpc__req_kind_t;

typedef struct jrpc__request {
  jrpc__req_kind_t kind;
  const char *method; /* decoded name (may point into the frame) */
  size_t method_n;
  jrpc_val_t params; /* JRPC_T_NONE when omitted */
  const char *id;    /* exact JSON bytes to echo ("null" when unknown) */
  size_t id_n;
  const char *why; /* with INVALID: which rule failed */
} jrpc__request_t;

/* Applies the rules to one envelope. JRPC_ENOMEM or 0. */
int jrpc__request_check(const jrpc__envelope_t *env, jrpc__arena_t *a,
                        jrpc__request_t *req);

/* jrpc__request_check_fast reads the envelope's one-byte flags and the
 * types of jsonrpc and method as its first eight bytes, the rest zero. */
_Static_assert(offsetof(jrpc__envelope_t, method_esc) == 5 &&
                   offsetof(jrpc__envelope_t, params_t) == 8,
               "the envelope's flags and early types are its first eight "
               "bytes");

/* The same, with the common case inline: an object with "jsonrpc":"2.0"
 * and a method, neither escaped, params absent or a container, and an id
 * absent, null, a number or a string. Anything else takes the full rules
 * (which also say why a request is invalid). */
static inline int jrpc__request_check_fast(const jrpc__envelope_t *env,
                                           jrpc__arena_t *a,
                                           jrpc__request_t *req) {
  /* Bit t set: type t is allowed there. */
  const unsigned params_ok =
      1u << JRPC_T_NONE | 1u << JRPC_T_ARRAY | 1u << JRPC_T_OBJECT;
  const unsigned id_ok = 1u << JRPC_T_NONE | 1u << JRPC_T_NULL |
                         1u << JRPC_T_NUMBER | 1u << JRPC_T_STRING;
  /* The envelope's first eight bytes (flags, jsonrpc's and method's
   * types) against the usual values at once; '&' rather than '&&': one
   * branch for the lot. */
  static const jrpc__envelope_t usual = {
      .is_object = 1, .jsonrpc_t = JRPC_T_STRING, .method_t = JRPC_T_STRING};
  uint64_t head, want;
  memcpy(&head, env, 8);
  memcpy(&want, &usual, 8);
  if (__builtin_expect((head == want) & (env->jsonrpc_n == 3) &
                               (params_ok >> (env->params_t & 31)) &
                               (id_ok >> (env->id_t & 31)) &&
                           memcmp(env->jsonrpc, "2.0", 3) == 0,
                       1)) {
    req->kind = env->id_t == JRPC_T_NONE ? JRPC__REQ_NOTIFY : JRPC__REQ_CALL;
    req->method = env->method;
    req->method_n = env->method_n;
    req->params = env->params;
    if (env->id_t == JRPC_T_NONE) {
      req->id = "null";
      req->id_n = 4;
    } else {
      req->id = env->id;
      req->id_n = env->id_n;
    }
    req->why = NULL;
    return 0;
  }
  return jrpc__request_check(env, a, req);
}

#define JRPC__LIT(o, s) jrpc__out_put((o), (s), sizeof(s) - 1)

/* {"jsonrpc":"2.0","result": ... the caller writes the value ... */
static inline int jrpc__reply_result_open(jrpc__outbuf_t *o) {
  return JRPC__LIT(o, "{\"jsonrpc\":\"2.0\",\"result\":");
}
/* {"jsonrpc":"2.0","error":{"code":C,"message":"M"  (left open for data) */
int jrpc__reply_error_open(jrpc__outbuf_t *o, int code, const char *msg);
/* Closes the error object: "}" */
int jrpc__reply_error_close(jrpc__outbuf_t *o);
/* ,"id":ID}  (closes the response object) */
JRPC__INLINE int jrpc__reply_close(jrpc__outbuf_t *o, const char *id,
                                   size_t id_n) {
  char *d = o->p;
  if (JRPC__LIKELY(id_n <= 16 && (size_t)(o->end - d) >= 6 + 16 + 1)) {
    /* The usual short id with room to spare: one bound check. */
    memcpy(d, ",\"id\":", 6);
    jrpc__copy_short(d + 6, id, id_n);
    d[6 + id_n] = '}';
    o->p = d + 6 + id_n + 1;
    return 0;
  }
  int rc = JRPC__LIT(o, ",\"id\":");
  rc |= jrpc__out_put_short(o, id, id_n);
  rc |= jrpc__out_byte(o, '}');
  return rc ? JRPC_ENOMEM : 0;
}
/* A whole error response with optional raw JSON data. */
int jrpc__reply_error(jrpc__outbuf_t *o, int code, const char *msg,
                      const char *data, size_t data_n, const char *id,
                      size_t id_n);
/* The standard message for a code ("Parse error", ...). */
const char *jrpc__error_message(int code);

#endif
