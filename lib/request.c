/* request.c - the JSON-RPC 2.0 rules and the shape of response objects. */
#include "request.h"

#include <string.h>

#include "common.h"
#include "jsontext.h"
#include "writer.h"

static const char null_id[] = "null";

int jrpc__request_check(const jrpc__envelope_t *env, jrpc__arena_t *a,
                        jrpc__request_t *req) {
  req->kind = JRPC__REQ_INVALID;
  req->method = NULL;
  req->method_n = 0;
  req->params = jrpc__val_none();
  req->id = null_id;
  req->id_n = 4;
  req->why = NULL;

  if (!env->is_object) {
    req->why = "request is not an object";
    return 0;
  }
  if (env->duplicate) {
    /* Which of two ids would be the right one to echo is unknowable. */
    req->why = "a request member occurs twice";
    return 0;
  }
  /* The id is echoed even when another rule fails, when it is usable:
   * the client can then match the error to its request. */
  int id_ok = env->id_t == JRPC_T_STRING || env->id_t == JRPC_T_NUMBER ||
              env->id_t == JRPC_T_NULL;
  if (id_ok) {
    req->id = env->id;
    req->id_n = env->id_n;
  }
  if (env->jsonrpc_t != JRPC_T_STRING ||
      !(env->jsonrpc_esc
            ? jrpc__str_equals(env->jsonrpc, env->jsonrpc_n, "2.0", 3)
            : env->jsonrpc_n == 3 && memcmp(env->jsonrpc, "2.0", 3) == 0)) {
    req->why = "\"jsonrpc\" must be \"2.0\"";
    return 0;
  }
  if (env->method_t != JRPC_T_STRING) {
    req->why = "\"method\" must be a string";
    return 0;
  }
  if (env->params_t != JRPC_T_NONE && env->params_t != JRPC_T_ARRAY &&
      env->params_t != JRPC_T_OBJECT) {
    req->why = "\"params\" must be an array or an object";
    return 0;
  }
  if (env->id_t != JRPC_T_NONE && !id_ok) {
    req->why = "\"id\" must be a string, a number or null";
    return 0;
  }
  if (env->method_esc) {
    req->method =
        jrpc__str_decode(env->method, env->method_n, a, &req->method_n);
    if (!req->method)
      return JRPC_ENOMEM;
  } else {
    req->method = env->method;
    req->method_n = env->method_n;
  }
  req->params = env->params;
  req->kind = env->id_t == JRPC_T_NONE ? JRPC__REQ_NOTIFY : JRPC__REQ_CALL;
  return 0;
}

#define LIT JRPC__LIT

int jrpc__reply_error_open(jrpc__outbuf_t *o, int code, const char *msg) {
  int rc = LIT(o, "{\"jsonrpc\":\"2.0\",\"error\":{\"code\":");
  rc |= jrpc__json_i64(o, code);
  rc |= LIT(o, ",\"message\":");
  if (!msg)
    msg = jrpc__error_message(code);
  rc |= jrpc__json_str(o, msg, strlen(msg));
  return rc ? JRPC_ENOMEM : 0;
}

int jrpc__reply_error_close(jrpc__outbuf_t *o) {
  return jrpc__out_byte(o, '}');
}

int jrpc__reply_error(jrpc__outbuf_t *o, int code, const char *msg,
                      const char *data, size_t data_n, const char *id,
                      size_t id_n) {
  int rc = jrpc__reply_error_open(o, code, msg);
  if (data) {
    rc |= LIT(o, ",\"data\":");
    rc |= jrpc__out_put(o, data, data_n);
  }
  rc |= jrpc__reply_error_close(o);
  rc |= jrpc__reply_close(o, id ? id : null_id, id ? id_n : 4);
  return rc ? JRPC_ENOMEM : 0;
}

const char *jrpc__error_message(int code) {
  switch (code) {
  case JRPC_PARSE_ERROR:
    return "Parse error";
  case JRPC_INVALID_REQUEST:
    return "Invalid Request";
  case JRPC_METHOD_NOT_FOUND:
    return "Method not found";
  case JRPC_INVALID_PARAMS:
    return "Invalid params";
  case JRPC_INTERNAL_ERROR:
    return "Internal error";
  case JRPC_HANDLER_FAILED:
    return "Handler failed";
  case JRPC_FRAME_TOO_LARGE:
    return "Frame too large";
  case JRPC_BATCH_TOO_LARGE:
    return "Batch too large";
  case JRPC_RESPONSE_TOO_LARGE:
    return "Response too large";
  case JRPC_TIMED_OUT:
    return "Timed out";
  case JRPC_BUSY:
    return "Server busy";
  case JRPC_ACCESS_DENIED:
    return "Access denied";
  case JRPC_SHUTTING_DOWN:
    return "Shutting down";
  case JRPC_CANCELLED:
    return "Cancelled";
  case JRPC_FRAME_TIMEOUT:
    return "Frame timeout";
  case JRPC_REQUEST_CANCELLED:
    return "Request cancelled";
  default:
    return "Server error";
  }
}
