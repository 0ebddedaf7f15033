/* validate_fast.h - the fast path of validate_params, inlined into
 * dispatch (handle_one) for methods with a plan (validate.h).
 *
 * It says yes for the shapes clients send: a token backend's array, or an
 * object whose keys name the described params in their order, with every
 * count and type allowed. Per call that is a count range; per value a
 * type bit (from the token type, or a primitive's first byte) against the
 * param's accepted bits; per key a masked word (with the closing quote,
 * which says the length, for names of up to seven bytes). Whatever it
 * cannot say yes to (absent params, another backend, keys out of order or
 * with escapes, unknown names, a number with a fraction or an exponent
 * for an integer param, and every failure) goes to jrpc__validated_call,
 * the full check, which answers and gives the reason. So it never passes
 * params the full check refuses (tests/test_validate.c checks that).
 *
 * No calls on this path: a call would make the loop save registers on
 * every pass. */
#ifndef JRPC_VALIDATE_FAST_H
#define JRPC_VALIDATE_FAST_H

#include <stdint.h>
#include <string.h>

#include "common.h"
#include "tokdoc.h"
#include "validate.h"
#include "view.h"

/* A token's JRPC__VT_* bit: containers and strings by token type,
 * primitives by their first byte (numbers: NUMBER). In validate.c. */
extern const uint8_t jrpc__vt_container[JSMN_PRIMITIVE + 1];
extern const uint8_t jrpc__vt_primitive[256];

/* Whether value token t is of a type vp takes. */
JRPC__INLINE int jrpc__vfast_value(const jrpc__vparam_t *vp, const jsmntok_t *t,
                                   const char *js) {
  unsigned bit = t->type == JSMN_PRIMITIVE
                     ? jrpc__vt_primitive[(unsigned char)js[t->start]]
                     : jrpc__vt_container[t->type];
  if (JRPC__LIKELY(vp->accept & bit))
    return 1;
  if (bit != JRPC__VT_NUMBER || !(vp->accept & JRPC__VT_INTEGER))
    return 0;
  for (int i = t->start; i < t->end; i++)
    if (js[i] == '.' || js[i] == 'e' || js[i] == 'E')
      return 0; /* perhaps integral ("2.0"): the full check decides */
  return 1;
}

/* Whether key token t is vp's name byte for byte. The frame has
 * JRPC__PAD readable bytes after it, so the word load past a short key
 * stays inside the buffer. */
JRPC__INLINE int jrpc__vfast_key(const jrpc__vparam_t *vp, const jsmntok_t *t,
                                 const char *js) {
  const char *raw = js + t->start;
  uint64_t w;
  memcpy(&w, raw, 8);
  if ((uint32_t)(t->end - t->start) != vp->name_n || (w & vp->mask) != vp->word)
    return 0;
  for (uint32_t i = 8; i < vp->name_n; i++)
    if (raw[i] != vp->name[i])
      return 0;
  return 1;
}

/* The same for a name whose word includes its closing quote. */
JRPC__INLINE int jrpc__vfast_key_word(const jrpc__vparam_t *vp,
                                      const jsmntok_t *t, const char *js) {
  uint64_t w;
  memcpy(&w, js + t->start, 8);
  return (w & vp->mask) == vp->word;
}

/* 1: params pass; 0: the full check must decide. */
JRPC__INLINE int jrpc__vplan_pass(const jrpc__vplan_t *plan,
                                  jrpc_val_t params) {
  const jrpc__doc_t *d = JRPC__DOC(params);
  if (JRPC__UNLIKELY(!d || d->ops->raw != jrpc__tokdoc_raw))
    return 0;
  const jrpc__tokdoc_t *td = (const jrpc__tokdoc_t *)d;
  const char *js = td->hdr.buf;
  const jsmntok_t *c = &td->t[params.idx_];
  uint32_t size = (uint32_t)c->size;
  const jsmntok_t *t = c + 1;
  const jrpc__vparam_t *vp = plan->p;
  if (c->type == JSMN_ARRAY) {
    if (size - plan->pos_lo > plan->pos_span)
      return 0;
    for (uint32_t k = 0; k < size; k++, vp++) {
      if (!jrpc__vfast_value(vp, t, js))
        return 0;
      t = &td->t[t->parent]; /* skip link: the next element */
    }
    return 1;
  }
  if (c->type != JSMN_OBJECT || size - plan->name_lo > plan->name_span)
    return 0;
  if (JRPC__LIKELY(plan->word_keys)) {
    for (uint32_t k = 0; k < size; k++, vp++) {
      if (!jrpc__vfast_key_word(vp, t, js) || !jrpc__vfast_value(vp, t + 1, js))
        return 0;
      t = &td->t[t[1].parent]; /* past the value: the next key */
    }
    return 1;
  }
  for (uint32_t k = 0; k < size; k++, vp++) {
    if (!jrpc__vfast_key(vp, t, js) || !jrpc__vfast_value(vp, t + 1, js))
      return 0;
    t = &td->t[t[1].parent];
  }
  return 1;
}

#endif
