/* native_tok.h - the native scanner's pieces that look at a few bytes
 * and write tokens: strings, small integers, and the shape nearly every
 * request has ({"jsonrpc":"2.0","method":"...","params":...,"id":...}),
 * recognised by its bytes. parser_native.c's scan uses them.
 *
 * String tokens carry two flags in `size`, which views never read for
 * strings: bit 0 marks an object key (as jsmn's size 1 does), bit 1 a
 * backslash in the content. */
#ifndef JRPC_NATIVE_TOK_H
#define JRPC_NATIVE_TOK_H

#include <stdint.h>
#include <string.h>

#include "common.h"
#include "jsontext.h"
#include "parser.h"
#include "strspan.h"
#include "tokdoc.h"

#define STR_KEY 1
#define STR_ESC 2

/* p is at an opening quote. On success returns the closing quote's
 * position and sets *esc; NULL when the string is unterminated or its
 * content invalid. The first 16 bytes of content are looked at in one SSE2
 * step (the frame has JRPC__PAD readable bytes after it): keys and short
 * values end there. Anything else (longer, escapes, non-ASCII) goes to
 * jrpc__str_scan, which checks as it goes and scans plain runs by SIMD. */
static inline __attribute__((always_inline)) const unsigned char *
scan_string(const unsigned char *p, const unsigned char *e, int *esc) {
  p++;
#ifdef JRPC__SPAN_SSE2
  unsigned m = jrpc__special16(p);
  if (JRPC__LIKELY(m)) {
    const unsigned char *q = p + __builtin_ctz(m);
    if (JRPC__LIKELY(q < e && *q == '"')) {
      *esc = 0;
      return q;
    }
  }
#endif
  int has_esc = 0; /* a local: *esc may then live in a register */
  const unsigned char *q = jrpc__str_scan(p, e, &has_esc);
  *esc = has_esc;
  return q;
}

/* The string between the quotes at p and q. */
static inline void string_token(jsmntok_t *tk, const unsigned char *base,
                                const unsigned char *p, const unsigned char *q,
                                int flags) {
  tk->type = JSMN_STRING;
  tk->start = (int)(p + 1 - base);
  tk->end = (int)(q - base);
  tk->size = flags;
}

/* The way nearly every request starts. A request object that starts with
 * these 27 bytes exactly gets its first three tokens (two keys and "2.0")
 * written at once and its envelope's jsonrpc member set, and the scan
 * resumes at the method string: the bytes are valid JSON by construction,
 * so nothing about validation changes. */
static const char canon_head[] = "{\"jsonrpc\":\"2.0\",\"method\":\"";
#define CANON_HEAD_LEN 27
static const char canon_params[] = ",\"params\":";
static const char canon_id[] = ",\"id";

static inline uint64_t load64(const void *p) {
  uint64_t v;
  memcpy(&v, p, 8);
  return v;
}

/* p has at least CANON_HEAD_LEN bytes: compared as two overlapping
 * vectors, or four overlapping words. */
static inline int canon_head_at(const unsigned char *p) {
#ifdef JRPC__SPAN_SSE2
  /* Two overlapping vectors, bytes 0-15 and 11-26. */
  __m128i a = _mm_loadu_si128((const __m128i *)(const void *)p);
  __m128i b = _mm_loadu_si128((const __m128i *)(const void *)(p + 11));
  __m128i x = _mm_loadu_si128((const __m128i *)(const void *)canon_head);
  __m128i y = _mm_loadu_si128((const __m128i *)(const void *)(canon_head + 11));
  return _mm_movemask_epi8(_mm_and_si128(_mm_cmpeq_epi8(a, x),
                                         _mm_cmpeq_epi8(b, y))) == 0xFFFF;
#else
  return ((load64(p) ^ load64(canon_head)) |
          (load64(p + 8) ^ load64(canon_head + 8)) |
          (load64(p + 16) ^ load64(canon_head + 16)) |
          (load64(p + 19) ^ load64(canon_head + 19))) == 0;
#endif
}

static inline void set_token(jsmntok_t *tk, jsmntype_t type, int start, int end,
                             int size, int parent) {
  tk->type = type;
  tk->start = start;
  tk->end = end;
  tk->size = size;
  tk->parent = parent;
}

/* v is at a digit 1-9: the end of the integer there if a ',' or `close`
 * follows its digits within the frame (so that it is complete and valid
 * as it stands), else NULL. */
static inline __attribute__((always_inline)) const unsigned char *
small_int(const unsigned char *v, const unsigned char *e, unsigned char close) {
  const unsigned char *q = v + 1;
  /* One digit (a usual operand) costs one look. Longer ones (ids) are
   * scanned 8 bytes at a time: x = byte ^ '0' is 0-9 for a digit; x | (x +
   * 0x76) has its high bit set for any other byte. A carry out of such a
   * byte can only mark bytes after it, so the lowest mark is the first
   * non-digit. The load at q < e stays within the frame's JRPC__PAD. */
  if (q < e && (unsigned)(*q - '0') <= 9) {
    for (q++; q < e; q += 8) {
      uint64_t x = load64(q) ^ 0x3030303030303030ull;
      uint64_t other =
          (x | (x + 0x7676767676767676ull)) & 0x8080808080808080ull;
      if (other) {
        q += __builtin_ctzll(other) >> 3;
        break;
      }
    }
  }
  return q < e && (*q == ',' || *q == close) ? q : NULL;
}

/* The number between v and q, token n. */
static inline void int_token(jsmntok_t *tk, const unsigned char *base,
                             const unsigned char *v, const unsigned char *q,
                             uint32_t n) {
  tk->type = JSMN_PRIMITIVE;
  tk->start = (int)(v - base);
  tk->end = (int)(q - base);
  tk->parent = (int)n + 1;
}

/* The request object at p (token n - 1) starts with canon_head: its
 * first three tokens and the method string's (tokens n to n + 3) written,
 * its envelope's jsonrpc and method set. The method's closing quote, or
 * NULL if the method string is invalid. */
static inline __attribute__((always_inline)) const unsigned char *
canon_method(jsmntok_t *t, uint32_t n, const unsigned char *base,
             const unsigned char *p, const unsigned char *e,
             jrpc__envelope_t *env) {
  int o = (int)(p - base), esc;
  set_token(&t[n], JSMN_STRING, o + 2, o + 9, STR_KEY, (int)n + 1);
  set_token(&t[n + 1], JSMN_STRING, o + 12, o + 15, 0, (int)n + 2);
  set_token(&t[n + 2], JSMN_STRING, o + 18, o + 24, STR_KEY, (int)n + 3);
  p += CANON_HEAD_LEN - 1; /* the method's opening quote */
  const unsigned char *q = scan_string(p, e, &esc);
  if (!q)
    return NULL;
  jsmntok_t *tk = &t[n + 3];
  string_token(tk, base, p, q, esc ? STR_ESC : 0);
  tk->parent = (int)n + 4;
  env->jsonrpc_t = JRPC_T_STRING;
  env->jsonrpc = (const char *)base + o + 12;
  env->jsonrpc_n = 3;
  env->method_t = JRPC_T_STRING;
  env->method_esc = (uint8_t)esc;
  env->method = (const char *)p + 1;
  env->method_n = (uint32_t)(q - p - 1);
  return q;
}

/* ,"params": at p, within the frame. */
static inline int canon_params_at(const unsigned char *p,
                                  const unsigned char *e) {
  return e - p >= 10 && load64(p) == load64(canon_params) && p[8] == '"' &&
         p[9] == ':';
}

/* p is at a '"' in an object: a member "key":N, a plain key of up to 16
 * bytes (one SSE2 test) and a small integer followed by ',' or the '}'
 * within the frame? Then the end of the integer, with *kq at the key's
 * closing quote and *v at the integer; else NULL. */
static inline __attribute__((always_inline)) const unsigned char *
small_member(const unsigned char *p, const unsigned char *e,
             const unsigned char **kq, const unsigned char **v) {
#ifdef JRPC__SPAN_SSE2
  unsigned m = jrpc__special16(p + 1);
  *kq = p + 1 + __builtin_ctz(m | 0x10000u);
  *v = *kq + 2;
  if (*v >= e || **kq != '"' || (*kq)[1] != ':' || (unsigned)(**v - '1') > 8)
    return NULL;
  return small_int(*v, e, '}');
#else
  (void)p, (void)e, (void)kq, (void)v;
  return NULL;
#endif
}

#endif
