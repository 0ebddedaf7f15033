/* outbuf_fx.c - the output tests' shared pool fixture; see outbuf_fx.h. */
#include "outbuf_fx.h"

#include <setjmp.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdlib.h>

#include <cmocka.h>

jrpc__bufpool_t fx_pool;

int fx_pool_setup(void **state) {
  (void)state;
  jrpc__bufpool_init(&fx_pool, 1 << 24);
  return 0;
}

int fx_pool_teardown(void **state) {
  (void)state;
  assert_int_equal(fx_pool.live, 0);
  jrpc__bufpool_free(&fx_pool);
  return 0;
}

char *fx_out_take(jrpc__outbuf_t *o, size_t *n) {
  size_t p = (size_t)jrpc__out_pending(o);
  char *d = malloc(p + 1);
  assert_non_null(d);
  *n = jrpc__out_copy(o, d, p + 1);
  assert_int_equal(*n, p);
  d[p] = 0;
  return d;
}
