/* parser.c - choosing a parser backend by name, and "auto": a backend that
 * hands each frame to jsmn or simdjson by its size (see parser_auto.c). */
#include <string.h>

#include "parser.h"

/* jrpc__val_put writes a view as its document and, in the upper half, its
 * index with a zero aux_. */
_Static_assert(sizeof(jrpc_val_t) == 16 && offsetof(jrpc_val_t, idx_) == 8 &&
                   offsetof(jrpc_val_t, aux_) == 12,
               "a view is its document, its index and aux_, in that order");

jrpc__parser_t *jrpc__parser_new(const char *name) {
  if (!name || strcmp(name, "jsmn") == 0)
    return jrpc__parser_jsmn_new(JRPC__JSMN_FUSED);
  if (strcmp(name, "native") == 0)
    return jrpc__parser_native_new();
#ifdef JRPC_HAVE_SIMDJSON
  if (strcmp(name, "simdjson") == 0)
    return jrpc__parser_simdjson_new();
#endif
  if (strcmp(name, "auto") == 0)
    return jrpc__parser_auto_new(JRPC__AUTO_MEASURED);
  return NULL;
}

const char *jrpc__parsers_built(void) {
#ifdef JRPC_HAVE_SIMDJSON
  return "native,jsmn,simdjson";
#else
  return "native,jsmn";
#endif
}
