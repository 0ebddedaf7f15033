/* view.h - backend-neutral operations on jrpc_val_t views: absent values
 * handled once here, conversions shared by every backend. Inline: each is
 * a thin step between the API table and the backend. */
#ifndef JRPC_VIEW_H
#define JRPC_VIEW_H

#include "arena.h"
#include "common.h"
#include "jsontext.h"
#include "parser.h"

#define JRPC__DOC(v) ((const jrpc__doc_t *)(v).doc_)

static inline jrpc_type_t jrpc__view_type(jrpc_val_t v) {
  return v.doc_ ? JRPC__DOC(v)->ops->type(JRPC__DOC(v), v.idx_) : JRPC_T_NONE;
}

static inline uint32_t jrpc__view_len(jrpc_val_t v) {
  return v.doc_ ? JRPC__DOC(v)->ops->len(JRPC__DOC(v), v.idx_) : 0;
}

static inline jrpc_val_t jrpc__view_at(jrpc_val_t v, uint32_t i) {
  return v.doc_ ? JRPC__DOC(v)->ops->at(JRPC__DOC(v), v.idx_, i)
                : jrpc__val_none();
}

static inline jrpc_val_t jrpc__view_get(jrpc_val_t v, const char *key,
                                        size_t n) {
  if (!v.doc_ || !key)
    return jrpc__val_none();
  return JRPC__DOC(v)->ops->get(JRPC__DOC(v), v.idx_, key, n);
}

static inline jrpc_val_t jrpc__view_first(jrpc_val_t v) {
  return v.doc_ ? JRPC__DOC(v)->ops->first(JRPC__DOC(v), v.idx_)
                : jrpc__val_none();
}

static inline jrpc_val_t jrpc__view_next(jrpc_val_t v) {
  return v.doc_ ? JRPC__DOC(v)->ops->next(JRPC__DOC(v), v) : jrpc__val_none();
}

static inline int jrpc__view_key(jrpc_val_t v, jrpc__arena_t *a, const char **s,
                                 size_t *n) {
  const char *raw;
  size_t rn;
  if (!v.doc_)
    return JRPC_ENOENT;
  int rc = JRPC__DOC(v)->ops->key(JRPC__DOC(v), v, &raw, &rn);
  if (rc)
    return rc;
  *s = jrpc__str_decode(raw, rn, a, n);
  return *s ? 0 : JRPC_ENOMEM;
}

/* The raw text of a value of the wanted type. */
static inline int jrpc__view_text(jrpc_val_t v, jrpc_type_t want,
                                  const char **s, size_t *n) {
  if (!v.doc_)
    return JRPC_ENOENT;
  const jrpc__doc_t *d = JRPC__DOC(v);
  return d->ops->raw(d, v.idx_, s, n) == want ? 0 : JRPC_ETYPE;
}

static inline int jrpc__view_i64(jrpc_val_t v, int64_t *out) {
  const char *s;
  size_t n;
  int rc = jrpc__view_text(v, JRPC_T_NUMBER, &s, &n);
  return rc ? rc : jrpc__num_to_i64(s, n, out);
}

static inline int jrpc__view_f64(jrpc_val_t v, double *out) {
  const char *s;
  size_t n;
  int rc = jrpc__view_text(v, JRPC_T_NUMBER, &s, &n);
  return rc ? rc : jrpc__num_to_f64(s, n, out);
}

static inline int jrpc__view_bool(jrpc_val_t v, int *out) {
  jrpc_type_t t = jrpc__view_type(v);
  if (t == JRPC_T_NONE)
    return JRPC_ENOENT;
  if (t != JRPC_T_TRUE && t != JRPC_T_FALSE)
    return JRPC_ETYPE;
  *out = t == JRPC_T_TRUE;
  return 0;
}

static inline int jrpc__view_str(jrpc_val_t v, jrpc__arena_t *a, const char **s,
                                 size_t *n) {
  const char *raw;
  size_t rn;
  int rc = jrpc__view_text(v, JRPC_T_STRING, &raw, &rn);
  if (rc)
    return rc;
  *s = jrpc__str_decode(raw + 1, rn - 2, a, n);
  return *s ? 0 : JRPC_ENOMEM;
}

static inline int jrpc__view_raw(jrpc_val_t v, const char **s, size_t *n) {
  if (!v.doc_)
    return JRPC_ENOENT;
  JRPC__DOC(v)->ops->raw(JRPC__DOC(v), v.idx_, s, n);
  return 0;
}

#endif
