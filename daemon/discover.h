/* discover.h - the built-in rpc.discover (OpenRPC), one per generation. */
#ifndef JRPCD_DISCOVER_H
#define JRPCD_DISCOVER_H

#include "generation.h"

/* Registers rpc.discover in g's registry: 0, or -1 out of memory. */
int jrpcd_discover_attach(jrpcd_gen_t *g);

#endif
