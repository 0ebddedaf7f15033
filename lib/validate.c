/* validate.c - params checked before the handler; see validate.h.
 *
 * Compiling reads the description once with the native tokenizer and
 * the views; checking reads a token backend's params straight from its
 * tokens (tokdoc.h: skip links, key before value), and any other
 * backend's through the views. tests/unit/lib/test_validate.c runs both paths
 * side by side. */
#include "validate.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common.h"
#include "dispatch.h"
#include "jsontext.h"
#include "parser.h"
#include "tokdoc.h"
#include "view.h"

static const struct {
  const char *name;
  unsigned bit;
} type_names[] = {
    {"null", JRPC__VT_NULL},       {"boolean", JRPC__VT_BOOLEAN},
    {"integer", JRPC__VT_INTEGER}, {"number", JRPC__VT_NUMBER},
    {"string", JRPC__VT_STRING},   {"array", JRPC__VT_ARRAY},
    {"object", JRPC__VT_OBJECT},
};
#define NTYPES (sizeof(type_names) / sizeof(type_names[0]))

const char *jrpc__vtype_name(unsigned bit) {
  for (size_t i = 0; i < NTYPES; i++)
    if (type_names[i].bit == bit)
      return type_names[i].name;
  return "?";
}

/* ---- compiling ---- */

typedef struct compile {
  char *err;
  size_t errlen;
} compile_t;

__attribute__((format(printf, 2, 3))) static int fail(compile_t *cx,
                                                      const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(cx->err, cx->errlen, fmt, ap);
  va_end(ap);
  return JRPC_EINVAL;
}

/* A string member of obj as a NUL-terminated copy in a, or NULL (absent:
 * *present 0; another type: *present 1). */
static const char *str_member(jrpc_val_t obj, const char *key, jrpc__arena_t *a,
                              int *present) {
  jrpc_val_t v = jrpc__view_get(obj, key, strlen(key));
  const char *s = NULL;
  size_t n;
  *present = v.doc_ != NULL;
  if (jrpc__view_str(v, a, &s, &n) != 0)
    return NULL;
  return s;
}

static unsigned type_bit(const char *s) {
  for (size_t i = 0; i < NTYPES; i++)
    if (strcmp(s, type_names[i].name) == 0)
      return type_names[i].bit;
  return 0;
}

/* schema.type: a name or an array of names; absent: any (0). */
static int schema_types(compile_t *cx, jrpc_val_t schema, const char *param,
                        jrpc__arena_t *a, uint8_t *out) {
  *out = 0;
  jrpc_type_t st = jrpc__view_type(schema);
  if (st == JRPC_T_NONE || st == JRPC_T_TRUE)
    return 0; /* no schema, or `true`: anything */
  if (st != JRPC_T_OBJECT)
    return fail(cx, "param \"%s\": its schema is not an object", param);
  jrpc_val_t t = jrpc__view_get(schema, "type", 4);
  jrpc_type_t tt = jrpc__view_type(t);
  if (tt == JRPC_T_NONE)
    return 0;
  int one = tt == JRPC_T_STRING;
  if (!one && tt != JRPC_T_ARRAY)
    return fail(cx,
                "param \"%s\": schema \"type\" is neither a name nor an "
                "array of names",
                param);
  jrpc_val_t e = one ? t : jrpc__view_first(t);
  for (; e.doc_; e = one ? jrpc__val_none() : jrpc__view_next(e)) {
    const char *s;
    size_t n;
    unsigned bit;
    if (jrpc__view_str(e, a, &s, &n) != 0 || !(bit = type_bit(s)))
      return fail(cx,
                  "param \"%s\": schema \"type\" names no JSON Schema type "
                  "(null, boolean, integer, number, string, array, object)",
                  param);
    *out |= (uint8_t)bit;
  }
  if (!*out)
    return fail(cx, "param \"%s\": schema \"type\" is an empty array", param);
  return 0;
}

/* The root object of the description, parsed into a (native tokens). */
static int parse_desc(const char *desc, jrpc__parser_t *p, jrpc__arena_t *a,
                      char **buf, jrpc_val_t *root) {
  size_t n = strlen(desc);
  *buf = calloc(1, n + JRPC__PAD);
  if (!*buf)
    return JRPC_ENOMEM;
  memcpy(*buf, desc, n);
  jrpc__parsed_t ps;
  if (p->ops->parse(p, *buf, n, a, 1, &ps) != 0)
    return JRPC_ENOMEM;
  if (ps.status != JRPC__PARSE_OK || ps.is_batch || ps.count != 1 ||
      !ps.env[0].params.doc_)
    return JRPC_EINVAL;
  /* The root object is token 0 of the document the params view is in. */
  *root = jrpc__val((const jrpc__doc_t *)ps.env[0].params.doc_, 0);
  return 0;
}

/* What the fast path reads: see jrpc__vplan_t and jrpc__vparam_t. */
static void fast_fields(jrpc__vplan_t *plan) {
  plan->simple = 1;
  for (uint32_t k = 0; k < plan->n; k++) {
    jrpc__vparam_t *vp = &plan->p[k];
    size_t n = vp->name_n;
    /* A raw key equal to such a name up to a quote is that name: it
     * cannot have an escaped quote there without a backslash before. */
    int quoted =
        n < 8 && !memchr(vp->name, '"', n) && !memchr(vp->name, '\\', n);
    unsigned char word[8] = {0}, ones[8] = {0};
    memcpy(word, vp->name, n < 8 ? n : 8);
    if (quoted)
      word[n] = '"';
    memset(ones, 0xff, quoted ? n + 1 : n < 8 ? n : 8);
    memcpy(&vp->word, word, sizeof(word));
    memcpy(&vp->mask, ones, sizeof(ones));
    /* An integer-only param makes the fast path look at number text. */
    if (!quoted ||
        ((vp->types & JRPC__VT_INTEGER) && !(vp->types & JRPC__VT_NUMBER)))
      plan->simple = 0;
    vp->accept = vp->types ? vp->types : (uint8_t)(JRPC__VT_OBJECT * 2 - 1);
  }
  plan->pos_lo = plan->name_lo = plan->min_pos;
  plan->pos_span = plan->name_span = plan->n - plan->min_pos;
  if (plan->structure == JRPC__PS_BY_NAME) {
    plan->pos_lo = UINT32_MAX;
    plan->pos_span = 0;
  } else if (plan->structure == JRPC__PS_BY_POSITION) {
    plan->name_lo = UINT32_MAX;
    plan->name_span = 0;
  }
}

static int compile_params(compile_t *cx, jrpc_val_t root, jrpc__arena_t *a,
                          jrpc__vplan_t **out) {
  int present;
  const char *any = str_member(root, "x-jrpcd-params", a, &present);
  if (any && strcmp(any, "any") == 0)
    return 0; /* takes anything by its own account: nothing to check */
  const char *ps = str_member(root, "paramStructure", a, &present);
  uint8_t structure = JRPC__PS_EITHER;
  if (present) {
    if (ps && strcmp(ps, "by-name") == 0)
      structure = JRPC__PS_BY_NAME;
    else if (ps && strcmp(ps, "by-position") == 0)
      structure = JRPC__PS_BY_POSITION;
    else if (!ps || strcmp(ps, "either") != 0)
      return fail(cx, "paramStructure is not \"by-name\", \"by-position\" or "
                      "\"either\"");
  }
  jrpc_val_t params = jrpc__view_get(root, "params", 6);
  if (jrpc__view_type(params) != JRPC_T_ARRAY)
    return fail(cx, "\"params\" is not an array");
  uint32_t n = jrpc__view_len(params);
  if (n > JRPC__VPLAN_MAX_PARAMS)
    return fail(cx, "more than %d params", JRPC__VPLAN_MAX_PARAMS);
  /* First pass: the names' total size, and whether it can be checked. */
  size_t names = 0;
  for (jrpc_val_t d = jrpc__view_first(params); d.doc_;
       d = jrpc__view_next(d)) {
    if (jrpc__view_type(d) != JRPC_T_OBJECT)
      return fail(cx, "a param is not an object");
    if (jrpc__view_get(d, "$ref", 4).doc_) {
      fail(cx, "a param is a $ref, which jrpcd does not resolve");
      return 1;
    }
    const char *name = str_member(d, "name", a, &present);
    if (!name || !*name)
      return fail(cx, "a param has no name");
    names += strlen(name) + 1;
  }
  jrpc__vplan_t *plan =
      calloc(1, sizeof(*plan) + n * sizeof(plan->p[0]) + names);
  if (!plan)
    return JRPC_ENOMEM;
  char *store = (char *)&plan->p[n];
  plan->structure = structure;
  plan->n = n;
  jrpc_val_t ex = jrpc__view_get(root, "x-jrpcd-extra-params", 20);
  plan->extra_names = jrpc__view_type(ex) == JRPC_T_TRUE;
  uint32_t k = 0;
  for (jrpc_val_t d = jrpc__view_first(params); d.doc_;
       d = jrpc__view_next(d), k++) {
    jrpc__vparam_t *vp = &plan->p[k];
    const char *name = str_member(d, "name", a, &present);
    size_t len = strlen(name);
    for (uint32_t j = 0; j < k; j++)
      if (plan->p[j].name_n == len && memcmp(plan->p[j].name, name, len) == 0) {
        free(plan);
        return fail(cx, "param \"%s\" is described twice", name);
      }
    memcpy(store, name, len + 1);
    vp->name = store;
    vp->name_n = (uint32_t)len;
    store += len + 1;
    jrpc_type_t rt = jrpc__view_type(jrpc__view_get(d, "required", 8));
    if (rt != JRPC_T_NONE && rt != JRPC_T_TRUE && rt != JRPC_T_FALSE) {
      free(plan);
      return fail(cx, "param \"%s\": \"required\" is not a boolean", name);
    }
    vp->required = rt == JRPC_T_TRUE;
    if (vp->required) {
      plan->required |= UINT64_C(1) << k;
      plan->min_pos = k + 1;
    }
    if (schema_types(cx, jrpc__view_get(d, "schema", 6), name, a, &vp->types) !=
        0) {
      free(plan);
      return JRPC_EINVAL;
    }
  }
  fast_fields(plan);
  *out = plan;
  return 0;
}

int jrpc__vplan_compile(const char *desc, jrpc__vplan_t **out, char *err,
                        size_t errlen) {
  compile_t cx = {err, errlen};
  *out = NULL;
  if (errlen)
    err[0] = '\0';
  jrpc__parser_t *p = jrpc__parser_new("native");
  if (!p)
    return JRPC_ENOMEM;
  jrpc__arena_t a;
  jrpc__arena_init(&a, 4096, 0);
  char *buf = NULL;
  jrpc_val_t root;
  int rc = parse_desc(desc, p, &a, &buf, &root);
  if (rc == JRPC_EINVAL)
    rc = fail(&cx, "not a JSON object with \"params\"");
  else if (rc == JRPC_ENOMEM)
    fail(&cx, "out of memory");
  else
    rc = compile_params(&cx, root, &a, out);
  if (rc == 1)
    rc = 0; /* not checkable: no plan, err says why */
  jrpc__arena_free(&a);
  jrpc__parser_destroy(p);
  free(buf);
  return rc;
}

void jrpc__vplan_free(jrpc__vplan_t *plan) {
  free(plan);
}

/* ---- checking ---- */

/* 1 if number text has no fractional part ("2", "2.0", "1e3"). */
static JRPC__NOINLINE int integral_slow(const char *s, size_t n) {
  double d;
  if (jrpc__num_to_f64(s, n, &d) != 0)
    return 0; /* beyond a double: no integer a schema can mean */
  if (!(d > -9e18 && d < 9e18))
    return 1; /* a double this large has no fraction bits left */
  return d == (double)(int64_t)d;
}

JRPC__INLINE int integral(const char *s, size_t n) {
  for (size_t i = 0; i < n; i++)
    if (s[i] == '.' || s[i] == 'e' || s[i] == 'E')
      return integral_slow(s, n);
  return 1;
}

/* The JRPC__VT_* bit of a JSON type (numbers: NUMBER). */
JRPC__INLINE unsigned vt_of(jrpc_type_t t) {
  switch (t) {
  case JRPC_T_NULL:
    return JRPC__VT_NULL;
  case JRPC_T_TRUE:
  case JRPC_T_FALSE:
    return JRPC__VT_BOOLEAN;
  case JRPC_T_NUMBER:
    return JRPC__VT_NUMBER;
  case JRPC_T_STRING:
    return JRPC__VT_STRING;
  case JRPC_T_ARRAY:
    return JRPC__VT_ARRAY;
  default:
    return JRPC__VT_OBJECT;
  }
}

/* Whether a value of type t (number text s[0..n) when a number) is one
 * that types allows; 0 fills why. */
JRPC__INLINE int type_ok(const jrpc__vparam_t *vp, jrpc_type_t t, const char *s,
                         size_t n, jrpc__vfail_t *why) {
  unsigned bit = vt_of(t);
  if (JRPC__LIKELY(!vp->types || (vp->types & bit)))
    return 1;
  if (bit == JRPC__VT_NUMBER && (vp->types & JRPC__VT_INTEGER) &&
      integral(s, n))
    return 1;
  why->reason = JRPC__VR_TYPE;
  why->param = vp;
  why->got_type = (uint8_t)bit;
  return 0;
}

/* Names are short: compared inline, no call. */
JRPC__INLINE int same_raw(const jrpc__vparam_t *vp, const char *raw,
                          size_t rn) {
  if (vp->name_n != rn)
    return 0;
  for (size_t i = 0; i < rn; i++)
    if (vp->name[i] != raw[i])
      return 0;
  return 1;
}

/* A key with escapes may still name a param ("\u0061" is "a"). */
static JRPC__NOINLINE int find_escaped(const jrpc__vplan_t *plan,
                                       const char *raw, size_t rn) {
  if (memchr(raw, '\\', rn))
    for (uint32_t k = 0; k < plan->n; k++)
      if (jrpc__str_equals(raw, rn, plan->p[k].name, plan->p[k].name_n))
        return (int)k;
  return -1;
}

/* The param named by a raw key, or -1. The m-th member is most often the
 * m-th param (clients write them in the documented order): tried first. */
JRPC__INLINE int find_name(const jrpc__vplan_t *plan, const char *raw,
                           size_t rn, uint32_t m) {
  if (m < plan->n && same_raw(&plan->p[m], raw, rn))
    return (int)m;
  for (uint32_t k = 0; k < plan->n; k++)
    if (same_raw(&plan->p[k], raw, rn))
      return (int)k;
  return find_escaped(plan, raw, rn);
}

static int structure_fail(jrpc__vfail_t *why, unsigned want, unsigned got) {
  why->reason = JRPC__VR_STRUCTURE;
  why->want_type = (uint8_t)want;
  why->got_type = (uint8_t)got;
  return 0;
}

static int positional_count(const jrpc__vplan_t *plan, uint32_t got,
                            jrpc__vfail_t *why) {
  if (got > plan->n) {
    why->reason = JRPC__VR_TOO_MANY;
    why->got_n = got;
    return 0;
  }
  if (got < plan->min_pos) {
    /* The first required param not given. */
    uint32_t k = got;
    while (!plan->p[k].required)
      k++;
    why->reason = JRPC__VR_MISSING;
    why->param = &plan->p[k];
    return 0;
  }
  return 1;
}

static int missing(const jrpc__vplan_t *plan, uint64_t seen,
                   jrpc__vfail_t *why) {
  uint64_t lack = plan->required & ~seen;
  if (JRPC__LIKELY(!lack))
    return 1;
  why->reason = JRPC__VR_MISSING;
  why->param = &plan->p[__builtin_ctzll(lack)];
  return 0;
}

static int unknown(jrpc__vfail_t *why, const char *raw, size_t rn) {
  why->reason = JRPC__VR_UNKNOWN;
  why->name = raw;
  why->name_n = (uint32_t)rn;
  return 0;
}

/* Absent params: an empty array or object, whichever the plan takes. */
static int absent(const jrpc__vplan_t *plan, jrpc__vfail_t *why) {
  if (plan->structure == JRPC__PS_BY_NAME)
    return missing(plan, 0, why);
  return positional_count(plan, 0, why);
}

JRPC__INLINE int by_tokens(const jrpc__vplan_t *plan, const jrpc__tokdoc_t *d,
                           uint32_t idx, jrpc__vfail_t *why) {
  const jsmntok_t *c = &d->t[idx];
  const char *js = d->hdr.buf;
  if (c->type == JSMN_ARRAY) {
    if (plan->structure == JRPC__PS_BY_NAME)
      return structure_fail(why, JRPC__VT_OBJECT, JRPC__VT_ARRAY);
    if (!positional_count(plan, (uint32_t)c->size, why))
      return 0;
    uint32_t i = idx + 1;
    for (int k = 0; k < c->size; k++) {
      const jsmntok_t *t = &d->t[i];
      if (!type_ok(&plan->p[k], jrpc__tok_type(t, js), js + t->start,
                   (size_t)(t->end - t->start), why))
        return 0;
      i = (uint32_t)t->parent; /* skip link: the next element */
    }
    return 1;
  }
  if (plan->structure == JRPC__PS_BY_POSITION)
    return structure_fail(why, JRPC__VT_ARRAY, JRPC__VT_OBJECT);
  uint64_t seen = 0;
  uint32_t key = idx + 1;
  for (int m = 0; m < c->size; m++) {
    const jsmntok_t *kt = &d->t[key], *vt = &d->t[key + 1];
    const char *raw = js + kt->start;
    size_t rn = (size_t)(kt->end - kt->start);
    int k = find_name(plan, raw, rn, (uint32_t)m);
    if (k < 0) {
      if (!plan->extra_names)
        return unknown(why, raw, rn);
    } else {
      if (!type_ok(&plan->p[k], jrpc__tok_type(vt, js), js + vt->start,
                   (size_t)(vt->end - vt->start), why))
        return 0;
      seen |= UINT64_C(1) << k;
    }
    key = (uint32_t)vt->parent; /* past the value */
  }
  return missing(plan, seen, why);
}

/* A value's type and, for a number, its text (the views). */
static jrpc_type_t view_text(jrpc_val_t v, const char **s, size_t *n) {
  const jrpc__doc_t *d = JRPC__DOC(v);
  return d->ops->raw(d, v.idx_, s, n);
}

int jrpc__vplan_check_views(const jrpc__vplan_t *plan, jrpc_val_t params,
                            jrpc__vfail_t *why) {
  why->reason = JRPC__VR_OK;
  const char *s;
  size_t n;
  switch (jrpc__view_type(params)) {
  case JRPC_T_NONE:
    return absent(plan, why);
  case JRPC_T_ARRAY: {
    if (plan->structure == JRPC__PS_BY_NAME)
      return structure_fail(why, JRPC__VT_OBJECT, JRPC__VT_ARRAY);
    if (!positional_count(plan, jrpc__view_len(params), why))
      return 0;
    uint32_t k = 0;
    for (jrpc_val_t v = jrpc__view_first(params); v.doc_;
         v = jrpc__view_next(v), k++) {
      jrpc_type_t t = view_text(v, &s, &n);
      if (!type_ok(&plan->p[k], t, s, n, why))
        return 0;
    }
    return 1;
  }
  case JRPC_T_OBJECT: {
    if (plan->structure == JRPC__PS_BY_POSITION)
      return structure_fail(why, JRPC__VT_ARRAY, JRPC__VT_OBJECT);
    uint64_t seen = 0;
    uint32_t m = 0;
    for (jrpc_val_t v = jrpc__view_first(params); v.doc_;
         v = jrpc__view_next(v), m++) {
      const char *raw;
      size_t rn;
      JRPC__DOC(v)->ops->key(JRPC__DOC(v), v, &raw, &rn);
      int k = find_name(plan, raw, rn, m);
      if (k < 0) {
        if (!plan->extra_names)
          return unknown(why, raw, rn);
        continue;
      }
      jrpc_type_t t = view_text(v, &s, &n);
      if (!type_ok(&plan->p[k], t, s, n, why))
        return 0;
      seen |= UINT64_C(1) << k;
    }
    return missing(plan, seen, why);
  }
  default: /* request.c answers other params -32600 before here */
    return structure_fail(why, JRPC__VT_ARRAY | JRPC__VT_OBJECT,
                          vt_of(jrpc__view_type(params)));
  }
}

/* The checks, inlined into the stand-in handler. */
JRPC__INLINE int check(const jrpc__vplan_t *plan, jrpc_val_t params,
                       jrpc__vfail_t *why) {
  if (JRPC__LIKELY(params.doc_ != NULL)) {
    const jrpc__doc_t *d = JRPC__DOC(params);
    if (d->ops->raw == jrpc__tokdoc_raw) {
      why->reason = JRPC__VR_OK;
      return by_tokens(plan, (const jrpc__tokdoc_t *)d, params.idx_, why);
    }
  }
  return jrpc__vplan_check_views(plan, params, why);
}

/* ---- the fast path ----
 *
 * It says yes for the shapes clients send: a token backend's array, or an
 * object whose keys name the described params in their order, with every
 * count and type allowed. Per call that is a count range; per value a
 * type bit (from the token type, or a primitive's first byte) against the
 * param's accepted bits; per key a masked word (with the closing quote,
 * which says the length, for names of up to seven bytes). Whatever it
 * cannot say yes to (absent params, another backend, keys out of order or
 * with escapes, unknown names, a number with a fraction or an exponent
 * for an integer param, and every failure) goes to the full check, which
 * answers and gives the reason; so it never passes params the full check
 * refuses (tests/unit/lib/test_validate.c checks that). No calls on this path,
 * so that it saves no registers. */

/* A primitive token's JRPC__VT_* bit by its first byte; containers' and
 * strings' by their token type. */
static const uint8_t vt_primitive[256] = {
    ['-'] = JRPC__VT_NUMBER,  ['0'] = JRPC__VT_NUMBER, ['1'] = JRPC__VT_NUMBER,
    ['2'] = JRPC__VT_NUMBER,  ['3'] = JRPC__VT_NUMBER, ['4'] = JRPC__VT_NUMBER,
    ['5'] = JRPC__VT_NUMBER,  ['6'] = JRPC__VT_NUMBER, ['7'] = JRPC__VT_NUMBER,
    ['8'] = JRPC__VT_NUMBER,  ['9'] = JRPC__VT_NUMBER, ['t'] = JRPC__VT_BOOLEAN,
    ['f'] = JRPC__VT_BOOLEAN, ['n'] = JRPC__VT_NULL,
};
static const uint8_t vt_container[JSMN_PRIMITIVE + 1] = {
    [JSMN_OBJECT] = JRPC__VT_OBJECT,
    [JSMN_ARRAY] = JRPC__VT_ARRAY,
    [JSMN_STRING] = JRPC__VT_STRING,
};

/* Whether number text s[0..n) has neither fraction nor exponent: an
 * integer for sure (else the full check decides, "2.0" being one too). */
JRPC__INLINE int plain_integer(const char *s, int n) {
  for (int i = 0; i < n; i++)
    if (s[i] == '.' || s[i] == 'e' || s[i] == 'E')
      return 0;
  return 1;
}

/* Whether value token *tp is of a type vp takes; then *tp steps past it
 * (a value without children is followed by the next token, a container
 * by its skip link). ints: some param takes integers but not numbers, so
 * a number needs its text looked at (a constant: the loops below come in
 * a copy without that look). */
JRPC__INLINE int fast_value(const jrpc__vparam_t *vp, const jsmntok_t **tp,
                            const jsmntok_t *base, const char *js, int ints) {
  const jsmntok_t *t = *tp;
  if (JRPC__LIKELY(t->type == JSMN_PRIMITIVE)) {
    unsigned bit = vt_primitive[(unsigned char)js[t->start]];
    *tp = t + 1;
    if (JRPC__LIKELY(vp->accept & bit))
      return 1;
    return ints && bit == JRPC__VT_NUMBER && (vp->accept & JRPC__VT_INTEGER) &&
           plain_integer(js + t->start, t->end - t->start);
  }
  *tp = t->type == JSMN_STRING ? t + 1 : &base[t->parent];
  return (vp->accept & vt_container[t->type]) != 0;
}

/* Whether key token t is vp's name byte for byte. The frame has JRPC__PAD
 * readable bytes after it, so the word load past a short key stays in the
 * buffer. words: every name's word ends with its closing quote. */
JRPC__INLINE int fast_key(const jrpc__vparam_t *vp, const jsmntok_t *t,
                          const char *js, int words) {
  const char *raw = js + t->start;
  uint64_t w;
  memcpy(&w, raw, 8);
  if ((w & vp->mask) != vp->word)
    return 0;
  if (JRPC__LIKELY(words))
    return 1;
  if ((uint32_t)(t->end - t->start) != vp->name_n)
    return 0;
  for (uint32_t i = 8; i < vp->name_n; i++)
    if (raw[i] != vp->name[i])
      return 0;
  return 1;
}

JRPC__INLINE int fast_elements(const jrpc__vparam_t *vp, const jsmntok_t *t,
                               const jsmntok_t *base, const char *js,
                               uint32_t left, int ints) {
  for (; left; left--, vp++)
    if (!fast_value(vp, &t, base, js, ints))
      return 0;
  return 1;
}

/* simple: every name's word ends with its closing quote and no number
 * needs its text looked at (jrpc__vplan_t.simple). */
JRPC__INLINE int fast_members(const jrpc__vparam_t *vp, const jsmntok_t *t,
                              const jsmntok_t *base, const char *js,
                              uint32_t left, int simple) {
  for (; left; left--, vp++) {
    if (!fast_key(vp, t, js, simple))
      return 0;
    t++;
    if (!fast_value(vp, &t, base, js, !simple))
      return 0;
  }
  return 1;
}

/* The containers of a token document's params, and which copy of the
 * loops they take (simple: the one without the rare looks). */
JRPC__INLINE int fast_tokens(const jrpc__vplan_t *plan,
                             const jrpc__tokdoc_t *td, uint32_t idx,
                             int simple) {
  const char *js = td->hdr.buf;
  const jsmntok_t *base = td->t, *c = &base[idx], *t = c + 1;
  uint32_t left = (uint32_t)c->size;
  if (c->type == JSMN_ARRAY)
    return left - plan->pos_lo <= plan->pos_span &&
           fast_elements(plan->p, t, base, js, left, !simple);
  return c->type == JSMN_OBJECT && left - plan->name_lo <= plan->name_span &&
         fast_members(plan->p, t, base, js, left, simple);
}

/* Plans with an integer-only param or a long or odd name: out of line,
 * so that the usual loops need no more registers than the call gives. */
static JRPC__NOINLINE int fast_rare(const jrpc__vplan_t *plan,
                                    const jrpc__tokdoc_t *td, uint32_t idx) {
  return fast_tokens(plan, td, idx, 0);
}

int jrpc__vplan_fast(const jrpc__vplan_t *plan, jrpc_val_t params) {
  const jrpc__doc_t *d = JRPC__DOC(params);
  if (JRPC__UNLIKELY(!d || d->ops->raw != jrpc__tokdoc_raw))
    return 0;
  const jrpc__tokdoc_t *td = (const jrpc__tokdoc_t *)d;
  if (JRPC__UNLIKELY(!plan->simple))
    return fast_rare(plan, td, params.idx_);
  return fast_tokens(plan, td, params.idx_, 1);
}

int jrpc__vplan_check(const jrpc__vplan_t *plan, jrpc_val_t params,
                      jrpc__vfail_t *why) {
  if (jrpc__vplan_fast(plan, params)) {
    why->reason = JRPC__VR_OK;
    return 1;
  }
  return check(plan, params, why);
}

/* ---- the stand-in handler ---- */

static void w_str(jrpc_call_t *c, const char *key, const char *s, size_t n) {
  jrpc_w_key(c, key, strlen(key));
  jrpc_w_str(c, s, n);
}

static void w_types(jrpc_call_t *c, const char *key, unsigned bits) {
  jrpc_w_key(c, key, strlen(key));
  int several = (bits & (bits - 1)) != 0;
  if (several)
    jrpc_w_arr(c);
  for (size_t i = 0; i < NTYPES; i++)
    if (bits & type_names[i].bit)
      jrpc_w_str(c, type_names[i].name, strlen(type_names[i].name));
  if (several)
    jrpc_w_arr_end(c);
}

static const char *const reasons[] = {
    [JRPC__VR_STRUCTURE] = "structure", [JRPC__VR_TOO_MANY] = "too many",
    [JRPC__VR_MISSING] = "missing",     [JRPC__VR_UNKNOWN] = "unknown",
    [JRPC__VR_TYPE] = "type",
};

/* -32602 with {"param":..,"reason":..} and what the reason adds. */
static JRPC__NOINLINE int refuse(jrpc_call_t *c, const jrpc__vplan_t *plan,
                                 const jrpc__vfail_t *why) {
  jrpc_error_begin(c, JRPC_INVALID_PARAMS, "Invalid params");
  jrpc_w_obj(c);
  if (why->param)
    w_str(c, "param", why->param->name, why->param->name_n);
  else if (why->reason == JRPC__VR_UNKNOWN) {
    const char *s;
    size_t n;
    jrpc__call_t *call = (jrpc__call_t *)c;
    s = jrpc__str_decode(why->name, why->name_n, call->arena, &n);
    if (s)
      w_str(c, "param", s, n);
  }
  const char *r = reasons[why->reason];
  w_str(c, "reason", r, strlen(r));
  switch (why->reason) {
  case JRPC__VR_TYPE:
    w_types(c, "expected", why->param->types);
    w_types(c, "got", why->got_type);
    break;
  case JRPC__VR_STRUCTURE:
    w_types(c, "expected", why->want_type);
    w_types(c, "got", why->got_type);
    break;
  case JRPC__VR_TOO_MANY:
    jrpc_w_key(c, "max", 3);
    jrpc_w_u64(c, plan->n);
    jrpc_w_key(c, "got", 3);
    jrpc_w_u64(c, why->got_n);
    break;
  default:
    break;
  }
  jrpc_w_obj_end(c);
  return JRPC_EFAIL;
}

/* Dispatch calls this when jrpc__vplan_fast cannot say yes: the full
 * check decides, and the reason goes into the error. What runs then is
 * m's fn, the slot dispatch found, never a handler of the plan's own. */
int jrpc__validated_method(jrpc_call_t *c, jrpc_val_t params,
                           const jrpc__method_t *m) {
  const jrpc__vplan_t *plan = m->vplan;
  jrpc__vfail_t why;
  why.param = NULL;
  if (!check(plan, params, &why))
    return refuse(c, plan, &why);
  return m->fn(c, params, m->udata);
}

int jrpc__validate_owner(jrpc__registry_t *r, const void *owner, char *err,
                         size_t errlen,
                         void (*skipped)(void *arg, const char *method,
                                         const char *why),
                         void *arg) {
  for (uint32_t i = 0; i <= r->mask; i++) {
    jrpc__method_t *m = &r->slots[i];
    if (!m->name || m->owner != owner || !m->desc || m->vplan)
      continue;
    char why[200];
    jrpc__vplan_t *plan;
    int rc = jrpc__vplan_compile(m->desc, &plan, why, sizeof(why));
    if (rc) {
      snprintf(err, errlen, "description of \"%s\": %s", m->name, why);
      return rc;
    }
    if (!plan) {
      if (skipped && why[0])
        skipped(arg, m->name, why);
      continue;
    }
    m->vplan = plan; /* dispatch checks before it calls m->fn */
  }
  return 0;
}
