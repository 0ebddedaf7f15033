/* discover.h - the server's OpenRPC document (rpc.discover): listing
 * methods, describing one, and the method objects args.c checks against. */
#ifndef JRPC_CLI_DISCOVER_H
#define JRPC_CLI_DISCOVER_H

#include <jansson.h>

#include "output.h"
#include "transport.h"

/* Calls rpc.discover on C. JC_OK with *doc the document, or NULL and
 * *code the error code when the server answered with an error (-32601:
 * it has no rpc.discover); otherwise the transport's status. */
int jc_discover(jc_conn *c, json_t **doc, long long *code, char **message);
/* The method object named NAME in DOC, or NULL. */
const json_t *jc_find_method(const json_t *doc, const char *name);
/* The same, for checking arguments: NULL also when its description says
 * it takes any params ("x-jrpcd-params": "any", as jrpcd says of methods
 * nobody described). */
const json_t *jc_checked_method(const json_t *doc, const char *name);
/* "NAME  SUMMARY" per method, names aligned, in the document's order. */
void jc_list_methods(const json_t *doc, FILE *f);
/* NAME's summary, description, params, result and examples. */
void jc_describe_method(const json_t *m, FILE *f);

#endif
