/* view.h - backend-neutral operations on jrpc_val_t views: absent values
 * handled once here, conversions shared by every backend. */
#ifndef JRPC_VIEW_H
#define JRPC_VIEW_H

#include "arena.h"
#include "parser.h"

#define JRPC__DOC(v) ((const jrpc__doc_t *)(v).doc_)

jrpc_type_t jrpc__view_type(jrpc_val_t v);
uint32_t jrpc__view_len(jrpc_val_t v);
jrpc_val_t jrpc__view_at(jrpc_val_t v, uint32_t i);
jrpc_val_t jrpc__view_get(jrpc_val_t v, const char *key, size_t n);
jrpc_val_t jrpc__view_first(jrpc_val_t v);
jrpc_val_t jrpc__view_next(jrpc_val_t v);
/* Decoded key of a member (into the arena). */
int jrpc__view_key(jrpc_val_t v, jrpc__arena_t *a, const char **s, size_t *n);
int jrpc__view_i64(jrpc_val_t v, int64_t *out);
int jrpc__view_f64(jrpc_val_t v, double *out);
int jrpc__view_bool(jrpc_val_t v, int *out);
/* Decoded, NUL-terminated string (into the arena). */
int jrpc__view_str(jrpc_val_t v, jrpc__arena_t *a, const char **s, size_t *n);
int jrpc__view_raw(jrpc_val_t v, const char **s, size_t *n);

#endif
