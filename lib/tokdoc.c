/* tokdoc.c - the views over jsmn-format tokens, and decoding an escaped
 * envelope key; see tokdoc.h. */
#include "tokdoc.h"

#include <stdlib.h>

#include "jsontext.h"

void jrpc__tokdoc_parser_free(jrpc__parser_t *p) {
  free(p);
}

int jrpc__tok_member_escaped(const char *s, size_t n, jrpc__arena_t *a) {
  char *tmp = jrpc__arena_alloc(a, n + 1);
  if (!tmp)
    return JRPC__M_OTHER;
  n = jrpc__str_unescape(s, n, tmp);
  return jrpc__tok_member_raw(tmp, n);
}

#define DOC(d) ((const jrpc__tokdoc_t *)(d))

jrpc_type_t jrpc__tokdoc_type(const jrpc__doc_t *d, uint32_t idx) {
  return jrpc__tok_type(&DOC(d)->t[idx], d->buf);
}

uint32_t jrpc__tokdoc_len(const jrpc__doc_t *d, uint32_t idx) {
  const jsmntok_t *t = &DOC(d)->t[idx];
  return t->type == JSMN_ARRAY || t->type == JSMN_OBJECT ? (uint32_t)t->size
                                                         : 0;
}

/* Element views remember their container (aux_ = index + 1) for next(). */
static jrpc_val_t elem(const jrpc__doc_t *d, uint32_t container, uint32_t idx) {
  jrpc_val_t v = {d, idx, container + 1};
  return v;
}

jrpc_val_t jrpc__tokdoc_first(const jrpc__doc_t *d, uint32_t idx) {
  const jsmntok_t *t = &DOC(d)->t[idx];
  if ((t->type != JSMN_ARRAY && t->type != JSMN_OBJECT) || t->size == 0)
    return jrpc__val_none();
  return elem(d, idx, t->type == JSMN_OBJECT ? idx + 2 : idx + 1);
}

static jrpc_val_t next_in(const jrpc__doc_t *d, uint32_t container,
                          uint32_t idx) {
  const jrpc__tokdoc_t *jd = DOC(d);
  uint32_t j = (uint32_t)jd->t[idx].parent; /* skip link */
  const jsmntok_t *c = &jd->t[container];
  if (j >= jd->n || jd->t[j].start >= c->end)
    return jrpc__val_none();
  return elem(d, container, c->type == JSMN_OBJECT ? j + 1 : j);
}

jrpc_val_t jrpc__tokdoc_next(const jrpc__doc_t *d, jrpc_val_t v) {
  /* Only element views know their container; others have no siblings. */
  if (v.aux_ == 0)
    return jrpc__val_none();
  return next_in(d, v.aux_ - 1, v.idx_);
}

jrpc_val_t jrpc__tokdoc_at(const jrpc__doc_t *d, uint32_t idx, uint32_t i) {
  /* The cache lives in the per-worker document, which the views otherwise
   * only read. */
  jrpc__tokdoc_t *jd = (jrpc__tokdoc_t *)DOC(d);
  jrpc_val_t v;
  uint32_t k = 0;
  if (jd->at_container == idx + 1 && jd->at_i <= i) {
    v = elem(d, idx, jd->at_idx);
    k = jd->at_i;
  } else {
    v = jrpc__tokdoc_first(d, idx);
  }
  for (; v.doc_ && k < i; k++)
    v = next_in(d, idx, v.idx_);
  if (v.doc_) {
    jd->at_container = idx + 1;
    jd->at_i = i;
    jd->at_idx = v.idx_;
  }
  return v;
}

static int key_equals(const char *raw, size_t rn, const char *key, size_t n) {
  if (!memchr(raw, '\\', rn))
    return rn == n && memcmp(raw, key, n) == 0;
  return jrpc__str_equals(raw, rn, key, n);
}

jrpc_val_t jrpc__tokdoc_get(const jrpc__doc_t *d, uint32_t idx, const char *key,
                            size_t n) {
  const jrpc__tokdoc_t *jd = DOC(d);
  if (jd->t[idx].type != JSMN_OBJECT)
    return jrpc__val_none();
  for (jrpc_val_t v = jrpc__tokdoc_first(d, idx); v.doc_;
       v = next_in(d, idx, v.idx_)) {
    const jsmntok_t *k = &jd->t[v.idx_ - 1];
    if (key_equals(d->buf + k->start, (size_t)(k->end - k->start), key, n))
      return v;
  }
  return jrpc__val_none();
}

int jrpc__tokdoc_key(const jrpc__doc_t *d, jrpc_val_t v, const char **s,
                     size_t *n) {
  const jrpc__tokdoc_t *jd = DOC(d);
  /* Only a member view (from first/next/at/get on an object) has a key,
   * and in jsmn's token order the key directly precedes the value. */
  if (v.aux_ == 0 || jd->t[v.aux_ - 1].type != JSMN_OBJECT)
    return JRPC_ENOENT;
  const jsmntok_t *k = &jd->t[v.idx_ - 1];
  *s = d->buf + k->start;
  *n = (size_t)(k->end - k->start);
  return 0;
}

jrpc_type_t jrpc__tokdoc_raw(const jrpc__doc_t *d, uint32_t idx, const char **s,
                             size_t *n) {
  const jsmntok_t *t = &DOC(d)->t[idx];
  int str = t->type == JSMN_STRING;
  *s = d->buf + t->start - str;
  *n = (size_t)(t->end - t->start + 2 * str);
  return jrpc__tok_type(t, d->buf);
}
