/* params.c - jrpc_params_num(): n numbers from positional or named params.
 *
 * Documents of the token backends (native, jsmn) are read straight from
 * their tokens (the layout tokdoc.h documents: skip links, key before
 * value, string tokens spanning their content), which saves the view
 * calls per number; any other backend goes through the views. Both paths
 * give the same answers: tests/unit/lib/test_params.c runs them side by side.
 */
#include "params.h"

#include <string.h>

#include "common.h"
#include "jsontext.h"
#include "tokdoc.h"
#include "view.h"

/* A number's text as jrpc_num_t says, by the shared conversions: an
 * integer when it has no fraction or exponent and fits int64_t, else a
 * double. */
static JRPC__NOINLINE void num_text_slow(const char *s, size_t n,
                                         jrpc_num_t *out) {
  out->is_int = 0;
  if (jrpc__num_to_i64(s, n, &out->i) == 0) {
    out->status = 0;
    out->is_int = 1;
    out->d = (double)out->i;
    return;
  }
  out->status = jrpc__num_to_f64(s, n, &out->d);
}

/* The same, with short integers (the common case) read inline. */
JRPC__INLINE void num_text(const char *s, size_t n, jrpc_num_t *out) {
  const char *p = s + (n && *s == '-'), *end = s + n;
  if (end - p >= 1 && end - p <= 18) {
    uint64_t v = 0;
    for (; p < end; p++) {
      unsigned d = (unsigned char)*p - '0';
      if (d > 9)
        break;
      v = v * 10 + d;
    }
    if (p == end) {
      out->status = 0;
      out->is_int = 1;
      out->i = *s == '-' ? -(int64_t)v : (int64_t)v;
      out->d = (double)out->i;
      return;
    }
  }
  num_text_slow(s, n, out);
}

static void num_view(jrpc_val_t v, jrpc_num_t *out) {
  const char *s;
  size_t n;
  out->is_int = 0;
  out->status = jrpc__view_text(v, JRPC_T_NUMBER, &s, &n);
  if (!out->status)
    num_text(s, n, out);
}

/* ---- any backend: through the views ---- */

static JRPC__NOINLINE int by_views(jrpc_val_t params, const char *const *names,
                                   uint32_t n, jrpc_num_t *out) {
  switch (jrpc__view_type(params)) {
  case JRPC_T_ARRAY: {
    if (jrpc__view_len(params) != n)
      return JRPC_EINVAL;
    jrpc_val_t v = jrpc__view_first(params);
    for (uint32_t k = 0; k < n; k++) {
      if (k)
        v = jrpc__view_next(v);
      num_view(v, &out[k]);
    }
    return 0;
  }
  case JRPC_T_OBJECT:
    if (!names)
      return JRPC_ETYPE;
    for (uint32_t k = 0; k < n; k++)
      num_view(jrpc__view_get(params, names[k], strlen(names[k])), &out[k]);
    return 0;
  default:
    return JRPC_ETYPE;
  }
}

/* ---- token backends: straight from the tokens ---- */

JRPC__INLINE void num_tok(const jrpc__tokdoc_t *d, const jsmntok_t *t,
                          jrpc_num_t *out) {
  /* A positive integer of up to 18 digits (the usual operand) is read
   * here; only such a number token starts with 1-9 and has no other
   * bytes than digits. */
  const char *s = d->hdr.buf + t->start;
  size_t n = (size_t)(t->end - t->start), j = 1;
  if (t->type == JSMN_PRIMITIVE && (unsigned char)(*s - '1') <= 8 && n <= 18) {
    uint64_t v = (unsigned char)*s - '0';
    for (; j < n && (unsigned char)(s[j] - '0') <= 9; j++)
      v = v * 10 + (unsigned char)(s[j] - '0');
    if (j == n) {
      out->status = 0;
      out->is_int = 1;
      out->i = (int64_t)v;
      out->d = (double)v;
      return;
    }
  }
  out->is_int = 0;
  if (jrpc__tok_type(t, d->hdr.buf) != JRPC_T_NUMBER) {
    out->status = JRPC_ETYPE;
    return;
  }
  num_text(d->hdr.buf + t->start, (size_t)(t->end - t->start), out);
}

/* Whether a key token (raw bytes, never NUL) names `name`. Raw bytes
 * first, against the NUL-terminated name (no strlen: names are short and
 * usually differ at once); a raw key with an escape may still decode to
 * the name ("\u0061" is "a"). */
JRPC__INLINE int key_is(const char *raw, size_t rn, const char *name) {
  size_t i = 0;
  while (i < rn && raw[i] == name[i])
    i++;
  if (i == rn)
    return name[rn] == '\0';
  for (size_t j = 0; j < rn; j++)
    if (raw[j] == '\\')
      return jrpc__str_equals(raw, rn, name, strlen(name));
  return 0;
}

/* Whether names[k] is one of names[0..k-1] (short: compared in line). */
JRPC__INLINE int named_before(const char *const *names, uint32_t k) {
  for (uint32_t j = 0; j < k; j++) {
    const char *a = names[j], *b = names[k];
    while (*a && *a == *b)
      a++, b++;
    if (*a == *b)
      return 1;
  }
  return 0;
}

/* The last `left` elements of an array, t being the first one's token. */
static JRPC__NOINLINE int elements_from(const jrpc__tokdoc_t *d,
                                        const jsmntok_t *t, jrpc_num_t *out,
                                        uint32_t left) {
  for (; left; left--, out++) {
    num_tok(d, t, out);
    t = &d->t[t->parent]; /* skip link: the next element */
  }
  return 0;
}

/* An array's elements. Short positive integers, the usual operands, are
 * read by a loop that calls nothing and fits the registers a call may
 * use (no saving, no stack frame); from the first other element on,
 * elements_from reads the rest (a tail call). Such an integer is a
 * primitive token, so the next element's token follows it. */
static JRPC__NOINLINE int positional(const jrpc__tokdoc_t *d,
                                     const char *const *names, uint32_t n,
                                     jrpc_num_t *out, const jsmntok_t *c) {
  (void)names;
  if ((uint32_t)c->size != n)
    return JRPC_EINVAL;
  const char *buf = d->hdr.buf;
  const jsmntok_t *t = c + 1, *stop = c + 1 + n;
  for (; t != stop; t++, out++) {
    const char *s = buf + t->start;
    uint32_t len = (uint32_t)(t->end - t->start);
    uint64_t v = (unsigned char)*s - (unsigned char)'0';
    if (t->type != JSMN_PRIMITIVE || v - 1 > 8 || len > 18)
      break;
    uint32_t j = 1;
    for (; j < len && (unsigned char)(s[j] - '0') <= 9; j++)
      v = v * 10 + (unsigned char)(s[j] - '0');
    if (j != len)
      break;
    out->status = 0;
    out->is_int = 1;
    out->i = (int64_t)v;
    out->d = (double)(int64_t)v; /* below 10^18: int64_t converts alike */
  }
  if (t == stop)
    return 0;
  return elements_from(d, t, out, (uint32_t)(stop - t));
}

static JRPC__NOINLINE int named(const jrpc__tokdoc_t *d, uint32_t idx,
                                const char *const *names, uint32_t n,
                                jrpc_num_t *out, const jsmntok_t *c) {
  if (c->type != JSMN_OBJECT || !names)
    return JRPC_ETYPE;
  const char *js = d->hdr.buf;
  /* Clients mostly write the members in the order of the names: while
   * they do, member k is tried for name k first (`next` is its key). It is
   * the first member of that name, as the scan below would find, when
   * members 0..k-1 were names 0..k-1 and name k is none of those. */
  uint32_t next = idx + 1;
  int follow = 1;
  for (uint32_t k = 0; k < n; k++) {
    out[k].status = JRPC_ENOENT;
    out[k].is_int = 0;
    if (follow && (int)k < c->size) {
      const jsmntok_t *kt = &d->t[next];
      if (key_is(js + kt->start, (size_t)(kt->end - kt->start), names[k]) &&
          !named_before(names, k)) {
        num_tok(d, &d->t[next + 1], &out[k]);
        next = (uint32_t)d->t[next + 1].parent; /* the next member's key */
        continue;
      }
    }
    follow = 0;
    uint32_t key = idx + 1;
    for (int m = 0; m < c->size; m++) {
      const jsmntok_t *kt = &d->t[key];
      if (key_is(js + kt->start, (size_t)(kt->end - kt->start), names[k])) {
        num_tok(d, &d->t[key + 1], &out[k]);
        break;
      }
      key = (uint32_t)d->t[key + 1].parent; /* past the value */
    }
  }
  return 0;
}

int jrpc__params_num(jrpc_val_t params, const char *const *names, uint32_t n,
                     jrpc_num_t *out) {
  /* Each shape goes by a tail call to its own function, so that the
   * registers one needs are not saved for the others; the arguments keep
   * their registers (c, the params' token, comes last). */
  const jrpc__doc_t *d = JRPC__DOC(params);
  if (!d || d->ops->raw != jrpc__tokdoc_raw)
    return by_views(params, names, n, out); /* no document: JRPC_ETYPE */
  const jrpc__tokdoc_t *td = (const jrpc__tokdoc_t *)d;
  const jsmntok_t *c = &td->t[params.idx_];
  if (c->type == JSMN_ARRAY)
    return positional(td, names, n, out, c);
  return named(td, params.idx_, names, n, out, c);
}

/* For tests: the view path on any document. */
int jrpc__params_num_views(jrpc_val_t params, const char *const *names,
                           uint32_t n, jrpc_num_t *out) {
  return by_views(params, names, n, out);
}
