/* jsontext.h - checks and conversions on JSON text (RFC 8259), shared by
 * the parser backends and the views: number grammar, string contents
 * (escapes, surrogate pairs, UTF-8, control characters), unescaping, and
 * number conversion. */
#ifndef JRPC_JSONTEXT_H
#define JRPC_JSONTEXT_H

#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <locale.h>

#include "arena.h"
#include "strspan.h"

/* JSON whitespace: space, tab, LF, CR. */
static inline int jrpc__is_ws(unsigned char c) {
  return c == ' ' || c == '\n' || c == '\r' || c == '\t';
}

/* 1 if s[0..n) is exactly one RFC 8259 number. */
int jrpc__num_valid(const char *s, size_t n);

/* 1 if s[0..n) (between the quotes) is valid string content: escapes
 * well-formed, \u surrogates paired, UTF-8 well-formed (no overlongs, no
 * encoded surrogates, <= U+10FFFF), no raw control characters, no raw '"'.
 * *has_escape is set when a backslash occurs. */
int jrpc__str_valid(const char *s, size_t n, int *has_escape);

/* Where string content may continue: after the plain run that starts at
 * p (anything but plain ASCII stops it), each escape checked, UTF-8 checked
 * by sequence, until the closing quote. Returns the closing quote's
 * position, or NULL when the content is invalid or end comes first.
 * *has_escape is set when a backslash occurs (left alone otherwise). */
const unsigned char *jrpc__str_scan(const unsigned char *p,
                                    const unsigned char *end, int *has_escape);

/* jrpc__str_valid with a fast path for short plain-ASCII strings, the
 * common case for keys, method names and small values. */
static inline int jrpc__str_valid_fast(const char *s, size_t n,
                                       int *has_escape) {
  if (n <= 32) {
    const unsigned char *p = (const unsigned char *)s;
    size_t i = 0;
    while (i < n && jrpc__str_plain[p[i]])
      i++;
    if (i == n) {
      *has_escape = 0;
      return 1;
    }
    return jrpc__str_valid(s + i, n - i, has_escape);
  }
  return jrpc__str_valid(s, n, has_escape);
}

/* Unescapes valid string content into dst (room for n + 1 bytes always
 * suffices); NUL-terminates; returns the length. */
size_t jrpc__str_unescape(const char *s, size_t n, char *dst);

/* 1 if valid string content s[0..n), unescaped, equals key[0..kn).
 * Decodes as it compares: no buffer, no length limit. */
int jrpc__str_equals(const char *s, size_t n, const char *key, size_t kn);

/* Valid string content -> an unescaped, NUL-terminated copy in the arena.
 * NULL when out of memory. */
const char *jrpc__str_decode(const char *s, size_t n, jrpc__arena_t *a,
                             size_t *out_n);

/* Number text (already valid) -> int64: JRPC_ERANGE for fractions,
 * exponents or overflow. */
int jrpc__num_to_i64(const char *s, size_t n, int64_t *out);
/* Number text (already valid) -> double, independent of the C locale.
 * JRPC_ERANGE when it overflows to infinity. */
int jrpc__num_to_f64(const char *s, size_t n, double *out);

/* Length of the well-formed UTF-8 sequence starting at p, or 0. */
size_t jrpc__utf8_seq(const unsigned char *p, const unsigned char *end);

/* A "C" locale for number conversions that must not follow LC_NUMERIC. */
locale_t jrpc__c_locale(void);

#endif
