/* params.h - jrpc_params_num(): a handler's numeric params in one call. */
#ifndef JRPC_PARAMS_H
#define JRPC_PARAMS_H

#include <stdint.h>

#include "jrpc/jrpc.h"

/* See jrpc_params_num in jrpc.h. */
int jrpc__params_num(jrpc_val_t params, const char *const *names, uint32_t n,
                     jrpc_num_t *out);

/* The same through the views whatever the backend (tests compare the
 * two). */
int jrpc__params_num_views(jrpc_val_t params, const char *const *names,
                           uint32_t n, jrpc_num_t *out);

#endif
