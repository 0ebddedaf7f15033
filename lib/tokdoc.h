/* tokdoc.h - a parsed frame as jsmn-format tokens: what the jsmn backend
 * and the native scanner both produce, with the views (jrpc_at, jrpc_get,
 * ...) and the envelope reading they share.
 *
 * Tokens are jsmn's (type, start, end, size, parent), with one change once
 * a frame is parsed: `parent` holds a skip link, the index of the token
 * after the value's subtree, so that views step from element to element in
 * O(1). String tokens span their content without the quotes; a container's
 * `end` is one past its closing bracket; an object's `size` counts its
 * members, and its tokens run key, value, key, value. */
#ifndef JRPC_TOKDOC_H
#define JRPC_TOKDOC_H

#ifndef JSMN_PARENT_LINKS
#define JSMN_PARENT_LINKS
#endif
#ifndef JSMN_H /* types only, unless the jsmn backend has it already */
#define JSMN_HEADER
#include <jsmn.h>
#undef JSMN_HEADER
#endif

#include <stdint.h>
#include <string.h>

#include "parser.h"

typedef struct jrpc__tokdoc {
  jrpc__doc_t hdr;
  jsmntok_t *t;
  uint32_t n;
  /* The last jrpc_at() answer, so that a loop of at(0), at(1), ... steps
   * from there instead of from the start each time (O(n), not O(n^2)). */
  uint32_t at_container, at_i, at_idx;
} jrpc__tokdoc_t;

/* Envelope members a request object's key can name. */
enum {
  JRPC__M_OTHER = 0,
  JRPC__M_JSONRPC,
  JRPC__M_METHOD,
  JRPC__M_PARAMS,
  JRPC__M_ID
};

static inline jrpc_type_t jrpc__tok_type(const jsmntok_t *t, const char *js) {
  switch (t->type) {
  case JSMN_OBJECT:
    return JRPC_T_OBJECT;
  case JSMN_ARRAY:
    return JRPC_T_ARRAY;
  case JSMN_STRING:
    return JRPC_T_STRING;
  default:
    switch (js[t->start]) {
    case 't':
      return JRPC_T_TRUE;
    case 'f':
      return JRPC_T_FALSE;
    case 'n':
      return JRPC_T_NULL;
    default:
      return JRPC_T_NUMBER;
    }
  }
}

/* Which envelope member a key names, from its raw text (no escapes).
 * Compares whole words: a memcmp call per candidate would cost more than
 * the rest of the lookup. */
static inline uint32_t jrpc__load32(const char *s) {
  uint32_t v;
  memcpy(&v, s, 4);
  return v;
}
#define JRPC__WORD4(a, b, c, d)                                                \
  ((uint32_t)(unsigned char)(a) | (uint32_t)(unsigned char)(b) << 8 |          \
   (uint32_t)(unsigned char)(c) << 16 | (uint32_t)(unsigned char)(d) << 24)

static inline int jrpc__tok_member_raw(const char *s, size_t n) {
  switch (n) {
  case 2:
    return s[0] == 'i' && s[1] == 'd' ? JRPC__M_ID : JRPC__M_OTHER;
  case 6: /* the two words overlap by two bytes */
    if (jrpc__load32(s) == JRPC__WORD4('m', 'e', 't', 'h') &&
        jrpc__load32(s + 2) == JRPC__WORD4('t', 'h', 'o', 'd'))
      return JRPC__M_METHOD;
    if (jrpc__load32(s) == JRPC__WORD4('p', 'a', 'r', 'a') &&
        jrpc__load32(s + 2) == JRPC__WORD4('r', 'a', 'm', 's'))
      return JRPC__M_PARAMS;
    return JRPC__M_OTHER;
  case 7:
    return jrpc__load32(s) == JRPC__WORD4('j', 's', 'o', 'n') &&
                   jrpc__load32(s + 3) == JRPC__WORD4('n', 'r', 'p', 'c')
               ? JRPC__M_JSONRPC
               : JRPC__M_OTHER;
  default:
    return JRPC__M_OTHER;
  }
}

/* The same for a key with escapes: it still names the member
 * ("m\u0065thod"). Decodes into the arena. */
int jrpc__tok_member_escaped(const char *s, size_t n, jrpc__arena_t *a);

/* Records one member of a request object: its value is token i, of type
 * ty, spanning js[start, end) (a string without its quotes). */
static inline __attribute__((always_inline)) void
jrpc__env_record(jrpc__envelope_t *e, int member, jrpc_type_t ty,
                 const jrpc__doc_t *hdr, uint32_t i, int start, int end,
                 int esc) {
  const char *js = hdr->buf;
  uint8_t *slot;
  switch (member) {
  case JRPC__M_JSONRPC:
    slot = &e->jsonrpc_t;
    e->jsonrpc_esc = (uint8_t)esc;
    e->jsonrpc = js + start;
    e->jsonrpc_n = (uint32_t)(end - start);
    break;
  case JRPC__M_METHOD:
    slot = &e->method_t;
    e->method_esc = (uint8_t)esc;
    e->method = js + start;
    e->method_n = (uint32_t)(end - start);
    break;
  case JRPC__M_PARAMS:
    slot = &e->params_t;
    jrpc__val_put(&e->params, hdr, i);
    break;
  case JRPC__M_ID:
    slot = &e->id_t;
    if (ty == JRPC_T_STRING) {
      e->id = js + start - 1;
      e->id_n = (uint32_t)(end - start + 2);
    } else {
      e->id = js + start;
      e->id_n = (uint32_t)(end - start);
    }
    break;
  default:
    return;
  }
  if (*slot != JRPC_T_NONE)
    e->duplicate = 1;
  *slot = (uint8_t)ty;
}

static inline __attribute__((always_inline)) void
jrpc__tok_record_member(jrpc__envelope_t *e, int member, jrpc__tokdoc_t *d,
                        uint32_t i, int esc) {
  const jsmntok_t *t = &d->t[i];
  jrpc__env_record(e, member, jrpc__tok_type(t, d->hdr.buf), &d->hdr, i,
                   t->start, t->end, esc);
}

/* The start of every parse: d emptied for the frame js[0..len), out set to
 * "valid, nothing yet". 0, or -1 (out says why) when the frame is too
 * large for int offsets. */
static inline int jrpc__tokdoc_begin(jrpc__tokdoc_t *d, const char *js,
                                     size_t len, jrpc__parsed_t *out) {
  d->hdr.buf = js;
  d->hdr.len = len;
  d->t = NULL;
  d->n = 0;
  d->at_container = 0; /* no at() answer cached for this document */
  out->status = JRPC__PARSE_OK;
  out->is_batch = 0;
  out->count = 0;
  out->env = NULL;
  out->why = NULL;
  if (len > (size_t)INT32_MAX) {
    out->status = JRPC__PARSE_INVALID;
    out->why = "frame too large for this parser";
    return -1;
  }
  return 0;
}

/* ops->destroy of a backend allocated in one piece with malloc. */
void jrpc__tokdoc_parser_free(jrpc__parser_t *p);

/* The views over a jrpc__tokdoc_t (jrpc__parser_ops_t order). */
jrpc_type_t jrpc__tokdoc_type(const jrpc__doc_t *d, uint32_t idx);
uint32_t jrpc__tokdoc_len(const jrpc__doc_t *d, uint32_t idx);
jrpc_val_t jrpc__tokdoc_at(const jrpc__doc_t *d, uint32_t idx, uint32_t i);
jrpc_val_t jrpc__tokdoc_get(const jrpc__doc_t *d, uint32_t idx, const char *key,
                            size_t n);
jrpc_val_t jrpc__tokdoc_first(const jrpc__doc_t *d, uint32_t idx);
jrpc_val_t jrpc__tokdoc_next(const jrpc__doc_t *d, jrpc_val_t v);
int jrpc__tokdoc_key(const jrpc__doc_t *d, jrpc_val_t v, const char **s,
                     size_t *n);
jrpc_type_t jrpc__tokdoc_raw(const jrpc__doc_t *d, uint32_t idx, const char **s,
                             size_t *n);

#define JRPC__TOKDOC_VIEWS                                                     \
  jrpc__tokdoc_type, jrpc__tokdoc_len, jrpc__tokdoc_at, jrpc__tokdoc_get,      \
      jrpc__tokdoc_first, jrpc__tokdoc_next, jrpc__tokdoc_key,                 \
      jrpc__tokdoc_raw

#endif
