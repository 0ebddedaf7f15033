/* engine_fx.c - the stream tests' shared engine set-up; see engine_fx.h. */
#include "engine_fx.h"

#include <setjmp.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

engine_fx_t *engine_fx_new(const engine_fx_method_t *methods, size_t n,
                           uint32_t max_frame_bytes, const char *parser) {
  engine_fx_t *f = calloc(1, sizeof(*f));
  assert_non_null(f);
  assert_int_equal(jrpc__registry_init(&f->reg), 0);
  for (size_t i = 0; i < n; i++)
    assert_int_equal(jrpc__registry_add(&f->reg, methods[i].name, methods[i].fn,
                                        NULL, NULL, NULL),
                     0);
  jrpc__limits_t lim = JRPC__LIMITS_DEFAULT;
  lim.max_frame_bytes = max_frame_bytes;
  assert_int_equal(
      jrpc__engine_init(&f->e, &f->reg, &lim, jrpc__parser_new(parser)), 0);
  return f;
}

int engine_fx_teardown(void **state) {
  engine_fx_t *f = *state;
  jrpc__engine_free(&f->e);
  jrpc__registry_free(&f->reg);
  free(f);
  return 0;
}

int engine_fx_echo(jrpc_call_t *c, jrpc_val_t params, void *udata) {
  (void)udata;
  const char *s;
  size_t n;
  if (jrpc_raw(c, params, &s, &n))
    return jrpc_w_null(c);
  return jrpc_w_raw(c, s, n);
}

size_t engine_fx_put(jrpc__stream_t *s, const char *in, size_t n,
                     size_t chunk) {
  size_t room;
  char *dst = jrpc__stream_rbuf(s, &room);
  assert_non_null(dst);
  assert_true(room > 0);
  size_t k = n < room ? n : room;
  if (k > chunk)
    k = chunk;
  memcpy(dst, in, k);
  return k;
}
