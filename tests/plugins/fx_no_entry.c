/* fx_no_entry.c - a shared object that loads fine but is no jrpcd module:
 * it exports a function, just not jrpc_module_info. */
#include <jrpc/jrpc.h>

JRPC_EXPORT int fx_not_a_module(void);
JRPC_EXPORT int fx_not_a_module(void) {
  return 42;
}
