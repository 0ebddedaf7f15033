/* output.h - how jrpc shows JSON: indented or on one line, coloured on a
 * terminal, and JSON-RPC errors as "error CODE: message". */
#ifndef JRPC_CLI_OUTPUT_H
#define JRPC_CLI_OUTPUT_H

#include <stdbool.h>
#include <stdio.h>

#include <jansson.h>

typedef struct {
  bool compact;    /* one line instead of indented */
  bool raw;        /* the response's bytes as received */
  bool raw_output; /* -r: a string result as its text, unquoted */
  bool color;      /* ANSI colours (decided by jc_output_init) */
} jc_output;

/* Colour when stdout is a terminal, NO_COLOR is unset or empty and
 * TERM is not "dumb"; --color/--no-color (force: 1 or 0) override. */
void jc_output_init(jc_output *o, int force);
/* V followed by a newline. */
void jc_print_json(FILE *f, const json_t *v, const jc_output *o);
/* A checked response: its result on stdout (or RAW, when o->raw), or its
 * error on stderr. Returns the exit status (0 result, 1 error). */
int jc_print_response(const json_t *resp, const char *raw, const jc_output *o);

#endif
