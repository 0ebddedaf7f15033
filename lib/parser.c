/* parser.c - choosing a parser backend by name, and "auto": a backend that
 * hands each frame to jsmn or simdjson by its size (see parser_auto.c). */
#include <string.h>

#include "parser.h"

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
