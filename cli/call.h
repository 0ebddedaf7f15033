/* call.h - JSON-RPC over a jc_conn: encoding requests with jansson,
 * parsing replies and checking them against what was asked. */
#ifndef JRPC_CLI_CALL_H
#define JRPC_CLI_CALL_H

#include <stdbool.h>

#include <jansson.h>

#include "transport.h"

/* {"jsonrpc":"2.0","method":METHOD[,"params":PARAMS][,"id":ID]}; takes
 * the references to params and id (either may be NULL: no member). */
json_t *jc_request(const char *method, json_t *params, json_t *id);
/* Sends a request or batch, compact, as one frame. */
int jc_send_json(jc_conn *c, const json_t *msg);
/* The next frame parsed as JSON (a new reference); *raw, when not NULL,
 * gets a copy of the frame's bytes. An EOF is JC_EOF, silently. */
int jc_recv_json(jc_conn *c, json_t **msg, char **raw);
/* 0 when RESP is a well-formed response object with id ID (NULL: any);
 * otherwise says what is wrong on stderr and returns -1. */
int jc_check_response(const json_t *resp, const json_t *id);
/* Sends REQ (one request with an id) and receives its checked response
 * into *resp (and its bytes into *raw when not NULL). */
int jc_call(jc_conn *c, const json_t *req, json_t **resp, char **raw);
/* The first bytes of P[0..N), printable (others as \xHH), into OUT. */
void jc_excerpt(const char *p, size_t n, char *out, size_t cap);
/* A notification (a method and no id) said on stderr, one line: true;
 * false for anything else. A call's progress reports come so. */
bool jc_show_notification(const json_t *msg);
/* The error object's code, or 0 if RESP is a result. */
long long jc_error_code(const json_t *resp);

#endif
