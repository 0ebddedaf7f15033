/* jrpc.h - what the parts of the jrpc command-line client share: exit
 * statuses and the message helpers. */
#ifndef JRPC_CLI_H
#define JRPC_CLI_H

/* Exit statuses (jrpc(1), EXIT STATUS). */
enum {
  JC_EXIT_OK = 0,      /* a result (or a notification sent) */
  JC_EXIT_RPC = 1,     /* a JSON-RPC error reply */
  JC_EXIT_USAGE = 2,   /* usage, connection or protocol error */
  JC_EXIT_TIMEOUT = 3, /* no complete reply within --timeout */
};

#include <stdbool.h>

#include <jansson.h>

#include "output.h"
#include "transport.h"

/* What the command line asked for, shared by every mode. */
typedef struct {
  jc_endpoint ep;
  jc_output out;
  json_t *id;  /* the request id (default 1) */
  bool notify; /* -n: no id, no reply */
  bool check;  /* ask rpc.discover and check params (off: --no-check) */
} jc_opts;

/* One "METHOD ARG..." call: discovery (when o->check), params, request,
 * reply printed. DOC, when not NULL, is used instead of asking the
 * server. On a new connection, or on KEEP when not NULL (HTTP keep-alive:
 * connected if it is not, left open unless something failed). Returns
 * the exit status. */
int jc_command(const jc_opts *o, jc_conn *keep, const json_t *doc, int argc,
               char **argv);
/* --batch FILE ("-": stdin): "METHOD ARG..." lines as one batch. */
int jc_batch(const jc_opts *o, const char *file);
/* --stdin: JSON requests line by line, replies paired by id. */
int jc_passthrough(const jc_opts *o);
/* -l and -d METHOD (NULL for -l). */
int jc_discovery(const jc_opts *o, const char *method);
/* The prompt, on a terminal. */
int jc_interactive(const jc_opts *o);
/* The server's OpenRPC document, or NULL (no rpc.discover, or an error,
 * reported when QUIET is false); on KEEP as jc_command has it. */
json_t *jc_fetch_doc(const jc_opts *o, jc_conn *keep, bool quiet);

/* "jrpc: " + the message + "\n" on stderr. */
void jc_warn(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

#endif
