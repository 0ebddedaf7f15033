/* request.h - the JSON-RPC 2.0 rules: what makes a request valid, what is
 * a notification, how an id is echoed, and how error objects look. */
#ifndef JRPC_REQUEST_H
#define JRPC_REQUEST_H

#include <stddef.h>
#include <stdint.h>

#include "arena.h"
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

/* {"jsonrpc":"2.0","result": ... the caller writes the value ... */
int jrpc__reply_result_open(jrpc__outbuf_t *o);
/* {"jsonrpc":"2.0","error":{"code":C,"message":"M"  (left open for data) */
int jrpc__reply_error_open(jrpc__outbuf_t *o, int code, const char *msg);
/* Closes the error object: "}" */
int jrpc__reply_error_close(jrpc__outbuf_t *o);
/* ,"id":ID}  (closes the response object) */
int jrpc__reply_close(jrpc__outbuf_t *o, const char *id, size_t id_n);
/* A whole error response with optional raw JSON data. */
int jrpc__reply_error(jrpc__outbuf_t *o, int code, const char *msg,
                      const char *data, size_t data_n, const char *id,
                      size_t id_n);
/* The standard message for a code ("Parse error", ...). */
const char *jrpc__error_message(int code);

#endif
