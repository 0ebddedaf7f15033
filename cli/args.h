/* args.h - from command-line words to JSON-RPC params: bare JSON values
 * by position, httpie-style name=string and name:=JSON by name, checked
 * and converted against the method's OpenRPC description when there is
 * one. */
#ifndef JRPC_CLI_ARGS_H
#define JRPC_CLI_ARGS_H

#include <stdbool.h>

#include <jansson.h>

/* NAME=@FILE: a file larger than this is refused. */
#define JC_PARAM_FILE_MAX (16u << 20)

/* The params for ARGV[0..ARGC) (NULL: no params member) into *params:
 * a word that looks like JSON must be JSON; NAME=@FILE reads the value
 * from FILE (only when FILES: a batch file's words may come from
 * anywhere, and must not send local files away); a long option (--x) is
 * refused unless "--" came first.
 * DESC is the method's OpenRPC method object, or NULL. On a usage error
 * (mixed forms, a missing required param, a value the schema refuses),
 * writes the message into err and returns -1. */
int jc_build_params(const char *method, int argc, char **argv, bool files,
                    const json_t *desc, json_t **params, char *err,
                    size_t errlen);
/* A word as a JSON value: the JSON it is, else a string. */
json_t *jc_word_value(const char *word);
/* Splits LINE into words like a shell does: blanks separate, '...' is
 * literal, "..." allows \" and \\, a backslash quotes the next
 * character. Returns the number of words (argv NULL-terminated, free with
 * jc_free_words) or -1 with err set. */
int jc_split_words(const char *line, char ***argv, char *err, size_t errlen);
void jc_free_words(char **argv);

#endif
