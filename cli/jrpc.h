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

#include <getopt.h>
#include <stdbool.h>

#include <jansson.h>

#include "output.h"
#include "transport.h"

/* What the command line asked for, shared by every mode. */
typedef struct {
  jc_endpoint ep;
  jc_output out;
  json_t *id;     /* the request id (default 1) */
  json_t *params; /* --params: the whole params, or NULL */
  bool notify;    /* -n: no id, no reply */
  bool check;     /* ask rpc.discover and check params (off: --no-check) */
  bool verbose;   /* -v: the request on stderr as it is sent */
  bool dry_run;   /* --dry-run: the request on stdout, not sent */
  bool at_prompt; /* a line at the prompt, not the command line */
  bool follow;    /* --follow: METHOD subscribes, its notifications shown */
} jc_opts;

/* The call options (callopts.c), on the command line and at the prompt. */
enum {
  JC_OPT_ID = 256,
  JC_OPT_PARAMS,
  JC_OPT_COMPACT,
  JC_OPT_RAW,
  JC_OPT_DRY_RUN,
  JC_OPT_NO_CHECK,
  JC_OPT_FIRST_FREE, /* main.c's own options from here */
};
#define JC_CALL_SHORTS "nrv"
extern const struct option jc_call_longs[];
/* Option C (with its ARG) into O: 0; -1 after saying what is wrong; 1
 * when C is not a call option. */
int jc_call_option(jc_opts *o, int c, const char *arg);
/* The call options at the start of a prompt line's words into O: the
 * index of METHOD, or -1 after saying what is wrong. */
int jc_line_options(jc_opts *o, int argc, char **argv);

/* One "METHOD ARG..." call: discovery (when o->check), params, request,
 * reply printed. DOC, when not NULL, is used instead of asking the
 * server. On a new connection, or on KEEP when not NULL (HTTP keep-alive:
 * connected if it is not, left open unless something failed). Returns
 * the exit status. */
int jc_command(const jc_opts *o, jc_conn *keep, const json_t *doc, int argc,
               char **argv);
/* --follow: REQ (a subscription method's call) sent on C, the
 * notifications printed until SIGINT or SIGTERM, then the unsubscribe
 * DOC names (NULL: none known). Returns the exit status. */
int jc_follow(jc_conn *c, const json_t *req, const json_t *doc,
              const jc_opts *o);
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
