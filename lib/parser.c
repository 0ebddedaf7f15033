/* parser.c - choosing a parser backend by name. */
#include <string.h>

#include "parser.h"

jrpc__parser_t *jrpc__parser_new(const char *name) {
  /* Until a second backend exists, "auto" means jsmn. */
  if (!name || strcmp(name, "jsmn") == 0 || strcmp(name, "auto") == 0)
    return jrpc__parser_jsmn_new(JRPC__JSMN_FUSED);
  return NULL;
}
