/* outbuf_fx.h - the fixture the engine's output tests share (test_outbuf.c,
 * test_writer.c, test_frame.c): one buffer pool for the whole cmocka group,
 * checked empty at the end (a leaked segment fails the group), and the
 * pending bytes of an outbuf copied out as a string. */
#ifndef JRPC_OUTBUF_FX_H
#define JRPC_OUTBUF_FX_H

#include <stddef.h>

#include "bufpool.h"
#include "outbuf.h"

extern jrpc__bufpool_t fx_pool;

/* cmocka group set-up and tear-down for fx_pool. */
int fx_pool_setup(void **state);
int fx_pool_teardown(void **state);

/* The pending bytes of o, NUL-terminated (malloc'd); *n gets their count.
 * o keeps them. */
char *fx_out_take(jrpc__outbuf_t *o, size_t *n);

#endif
