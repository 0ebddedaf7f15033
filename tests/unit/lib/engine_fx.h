/* engine_fx.h - the engine set-up the in-process stream tests share
 * (test_stream.c, test_http.c; test_alloc.c feeds with it): a registry of
 * the test's own handlers with an engine over it, and input copied into a
 * stream's read buffer in bounded reads, as a connection would. */
#ifndef JRPC_TESTS_ENGINE_FX_H
#define JRPC_TESTS_ENGINE_FX_H

#include <stddef.h>
#include <stdint.h>

#include "dispatch.h"
#include "stream.h"

typedef struct engine_fx_method {
  const char *name;
  jrpc_handler_fn fn;
} engine_fx_method_t;

typedef struct engine_fx {
  jrpc__registry_t reg;
  jrpc__engine_t e;
} engine_fx_t;

/* The n methods registered (no udata), and an engine with the default
 * limits but max_frame_bytes on the named parser backend. Fails the test
 * on any error. Free it with engine_fx_teardown. */
engine_fx_t *engine_fx_new(const engine_fx_method_t *methods, size_t n,
                           uint32_t max_frame_bytes, const char *parser);

/* cmocka tear-down for an engine_fx_t in *state. */
int engine_fx_teardown(void **state);

/* A handler that answers with its params as they were sent (null without
 * params). */
int engine_fx_echo(jrpc_call_t *c, jrpc_val_t params, void *udata);

/* Copies the first bytes of in (at most n, at most chunk, at most the room
 * the stream offers) into s's read buffer; returns how many. The caller
 * feeds them to its framing. */
size_t engine_fx_put(jrpc__stream_t *s, const char *in, size_t n, size_t chunk);

#endif
