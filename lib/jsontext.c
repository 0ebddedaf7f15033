/* jsontext.c - RFC 8259 checks and conversions on JSON text. */
#include "jsontext.h"

#include <locale.h>
#include <math.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "common.h"

int jrpc__num_valid(const char *s, size_t n) {
  const unsigned char *p = (const unsigned char *)s, *end = p + n;
  if (p < end && *p == '-')
    p++;
  if (p == end)
    return 0;
  if (*p == '0') {
    p++;
  } else if (*p >= '1' && *p <= '9') {
    while (p < end && *p >= '0' && *p <= '9')
      p++;
  } else {
    return 0;
  }
  if (p < end && *p == '.') {
    p++;
    if (p == end || *p < '0' || *p > '9')
      return 0;
    while (p < end && *p >= '0' && *p <= '9')
      p++;
  }
  if (p < end && (*p == 'e' || *p == 'E')) {
    p++;
    if (p < end && (*p == '+' || *p == '-'))
      p++;
    if (p == end || *p < '0' || *p > '9')
      return 0;
    while (p < end && *p >= '0' && *p <= '9')
      p++;
  }
  return p == end;
}

static int hexval(unsigned char c) {
  if (c >= '0' && c <= '9')
    return c - '0';
  c |= 0x20;
  if (c >= 'a' && c <= 'f')
    return c - 'a' + 10;
  return -1;
}

/* Four hex digits at p (n bytes available) -> code unit, or -1. */
static int32_t hex4(const unsigned char *p, size_t n) {
  if (n < 4)
    return -1;
  int32_t v = 0;
  for (int i = 0; i < 4; i++) {
    int h = hexval(p[i]);
    if (h < 0)
      return -1;
    v = (v << 4) | h;
  }
  return v;
}

/* Length of the well-formed UTF-8 sequence at p (Unicode table 3-7), or 0. */
size_t jrpc__utf8_seq(const unsigned char *p, const unsigned char *end) {
  unsigned char c = p[0];
  size_t avail = (size_t)(end - p);
  if (c >= 0xC2 && c <= 0xDF) {
    if (avail >= 2 && (p[1] & 0xC0) == 0x80)
      return 2;
    return 0;
  }
  if (c >= 0xE0 && c <= 0xEF) {
    if (avail < 3 || (p[2] & 0xC0) != 0x80)
      return 0;
    unsigned char lo = 0x80, hi = 0xBF;
    if (c == 0xE0)
      lo = 0xA0; /* overlong */
    if (c == 0xED)
      hi = 0x9F; /* UTF-16 surrogates */
    return (p[1] >= lo && p[1] <= hi) ? 3 : 0;
  }
  if (c >= 0xF0 && c <= 0xF4) {
    if (avail < 4 || (p[2] & 0xC0) != 0x80 || (p[3] & 0xC0) != 0x80)
      return 0;
    unsigned char lo = 0x80, hi = 0xBF;
    if (c == 0xF0)
      lo = 0x90; /* overlong */
    if (c == 0xF4)
      hi = 0x8F; /* > U+10FFFF */
    return (p[1] >= lo && p[1] <= hi) ? 4 : 0;
  }
  return 0;
}

/* Length of the valid escape at p (a backslash), a \u surrogate pair
 * counting as one, or 0. */
static size_t escape_len(const unsigned char *p, const unsigned char *end) {
  if (end - p < 2)
    return 0;
  switch (p[1]) {
  case '"':
  case '\\':
  case '/':
  case 'b':
  case 'f':
  case 'n':
  case 'r':
  case 't':
    return 2;
  case 'u':
    break;
  default:
    return 0;
  }
  int32_t u = hex4(p + 2, (size_t)(end - p - 2));
  if (u < 0 || (u >= 0xDC00 && u <= 0xDFFF))
    return 0; /* not hex, or a low surrogate with no high one before it */
  if (u < 0xD800 || u > 0xDBFF)
    return 6;
  p += 6;
  if (end - p < 6 || p[0] != '\\' || p[1] != 'u')
    return 0;
  int32_t lo = hex4(p + 2, (size_t)(end - p - 2));
  if (lo < 0xDC00 || lo > 0xDFFF)
    return 0;
  return 12;
}

/* One byte that is not plain ASCII content, other than '"': the length of
 * the valid UTF-8 sequence or escape that starts there, or 0. */
static inline size_t special_len(const unsigned char *p,
                                 const unsigned char *end, int *esc) {
  unsigned char c = *p;
  if (c >= 0x80)
    return jrpc__utf8_seq(p, end);
  if (c != '\\')
    return 0; /* a control byte */
  *esc = 1;
  return escape_len(p, end);
}

int jrpc__str_valid(const char *s, size_t n, int *has_escape) {
  const unsigned char *p = (const unsigned char *)s, *end = p + n;
  int esc = 0;
  while (p < end) {
    p = jrpc__plain_span(p, end);
    if (p == end)
      break;
    size_t k = *p == '"' ? 0 : special_len(p, end, &esc);
    if (!k)
      return 0;
    p += k;
  }
  if (has_escape)
    *has_escape = esc;
  return 1;
}

const unsigned char *jrpc__str_scan(const unsigned char *p,
                                    const unsigned char *end, int *has_escape) {
  for (;;) {
    p = jrpc__plain_span(p, end);
    if (p == end)
      return NULL;
    if (*p == '"')
      return p;
    size_t k = special_len(p, end, has_escape);
    if (!k)
      return NULL;
    p += k;
  }
}

static char *put_utf8(char *d, uint32_t cp) {
  if (cp < 0x80) {
    *d++ = (char)cp;
  } else if (cp < 0x800) {
    *d++ = (char)(0xC0 | (cp >> 6));
    *d++ = (char)(0x80 | (cp & 0x3F));
  } else if (cp < 0x10000) {
    *d++ = (char)(0xE0 | (cp >> 12));
    *d++ = (char)(0x80 | ((cp >> 6) & 0x3F));
    *d++ = (char)(0x80 | (cp & 0x3F));
  } else {
    *d++ = (char)(0xF0 | (cp >> 18));
    *d++ = (char)(0x80 | ((cp >> 12) & 0x3F));
    *d++ = (char)(0x80 | ((cp >> 6) & 0x3F));
    *d++ = (char)(0x80 | (cp & 0x3F));
  }
  return d;
}

size_t jrpc__str_unescape(const char *s, size_t n, char *dst) {
  const char *p = s, *end = s + n;
  char *d = dst;
  while (p < end) {
    const char *bs = memchr(p, '\\', (size_t)(end - p));
    if (!bs) {
      memcpy(d, p, (size_t)(end - p));
      d += end - p;
      break;
    }
    memcpy(d, p, (size_t)(bs - p));
    d += bs - p;
    p = bs + 1;
    char c = *p++;
    switch (c) {
    case 'b':
      *d++ = '\b';
      break;
    case 'f':
      *d++ = '\f';
      break;
    case 'n':
      *d++ = '\n';
      break;
    case 'r':
      *d++ = '\r';
      break;
    case 't':
      *d++ = '\t';
      break;
    case 'u': {
      uint32_t cp = (uint32_t)hex4((const unsigned char *)p, 4);
      p += 4;
      if (cp >= 0xD800 && cp <= 0xDBFF) {
        uint32_t lo = (uint32_t)hex4((const unsigned char *)p + 2, 4);
        p += 6;
        cp = 0x10000 + ((cp - 0xD800) << 10) + (lo - 0xDC00);
      }
      d = put_utf8(d, cp);
      break;
    }
    default: /* '"', '\\', '/' */
      *d++ = c;
    }
  }
  *d = '\0';
  return (size_t)(d - dst);
}

int jrpc__str_equals(const char *s, size_t n, const char *key, size_t kn) {
  const char *p = s, *end = s + n, *k = key, *kend = key + kn;
  while (p < end) {
    const char *bs = memchr(p, '\\', (size_t)(end - p));
    size_t run = (size_t)((bs ? bs : end) - p);
    if ((size_t)(kend - k) < run || memcmp(p, k, run) != 0)
      return 0;
    p += run;
    k += run;
    if (!bs)
      break;
    /* One escape (a surrogate pair is two): at most 12 bytes of input,
     * 4 of output. */
    const char *e = bs + 2;
    if (bs[1] == 'u') {
      e = bs + 6;
      if (hex4((const unsigned char *)bs + 2, 4) >= 0xD800 &&
          hex4((const unsigned char *)bs + 2, 4) <= 0xDBFF)
        e = bs + 12;
    }
    char tmp[8];
    size_t tn = jrpc__str_unescape(bs, (size_t)(e - bs), tmp);
    if ((size_t)(kend - k) < tn || memcmp(tmp, k, tn) != 0)
      return 0;
    k += tn;
    p = e;
  }
  return k == kend;
}

const char *jrpc__str_decode(const char *s, size_t n, jrpc__arena_t *a,
                             size_t *out_n) {
  /* Unescaping never lengthens: \uXXXX (6 bytes) -> at most 3, and a
   * 12-byte surrogate pair -> 4. */
  char *d = jrpc__arena_alloc(a, n + 1);
  if (!d)
    return NULL;
  *out_n = jrpc__str_unescape(s, n, d);
  return d;
}

int jrpc__num_to_i64(const char *s, size_t n, int64_t *out) {
  const char *p = s, *end = s + n;
  int neg = 0;
  if (p < end && *p == '-') {
    neg = 1;
    p++;
  }
  if (p == end)
    return JRPC_ETYPE;
  uint64_t v = 0;
  if (end - p <= 18) {
    /* 18 digits cannot overflow: no limit check per digit. */
    for (; p < end; p++) {
      unsigned d = (unsigned char)*p - '0';
      if (d > 9)
        return JRPC_ERANGE; /* fraction or exponent */
      v = v * 10 + d;
    }
    *out = neg ? -(int64_t)v : (int64_t)v;
    return 0;
  }
  const uint64_t limit = neg ? (uint64_t)INT64_MAX + 1 : (uint64_t)INT64_MAX;
  for (; p < end; p++) {
    unsigned d = (unsigned char)*p - '0';
    if (d > 9)
      return JRPC_ERANGE; /* fraction or exponent */
    if (v > (limit - d) / 10)
      return JRPC_ERANGE;
    v = v * 10 + d;
  }
  *out = neg ? (int64_t)(0 - v) : (int64_t)v;
  return 0;
}

static locale_t c_locale;
static pthread_once_t c_locale_once = PTHREAD_ONCE_INIT;
static void c_locale_init(void) {
  c_locale = newlocale(LC_ALL_MASK, "C", (locale_t)0);
}

locale_t jrpc__c_locale(void) {
  pthread_once(&c_locale_once, c_locale_init);
  return c_locale;
}

/* Clinger's fast path: a number whose digits fit in 2^53 and whose decimal
 * exponent is within +-22 converts exactly with one multiply or divide,
 * since both operands are exact doubles and IEEE rounds the result
 * correctly. Most numbers in requests qualify; the rest go to strtod. */
static int f64_fast(const char *s, size_t n, double *out) {
  static const double pow10[] = {1e0,  1e1,  1e2,  1e3,  1e4,  1e5,  1e6,  1e7,
                                 1e8,  1e9,  1e10, 1e11, 1e12, 1e13, 1e14, 1e15,
                                 1e16, 1e17, 1e18, 1e19, 1e20, 1e21, 1e22};
  const char *p = s, *end = s + n;
  int neg = *p == '-';
  p += neg;
  uint64_t m = 0;
  int digits = 0, scale = 0;
  for (; p < end && *p >= '0' && *p <= '9'; p++, digits++)
    m = m * 10 + (uint64_t)(*p - '0');
  if (p < end && *p == '.') {
    for (p++; p < end && *p >= '0' && *p <= '9'; p++, digits++, scale--)
      m = m * 10 + (uint64_t)(*p - '0');
  }
  if (digits > 15)
    return 0;    /* m may exceed 2^53 (or even overflow): not exact */
  if (p < end) { /* exponent */
    p++;
    int eneg = *p == '-';
    p += *p == '-' || *p == '+';
    int e = 0;
    for (; p < end; p++) {
      if (e > 1000)
        return 0;
      e = e * 10 + (*p - '0');
    }
    scale += eneg ? -e : e;
  }
  if (scale < -22 || scale > 22)
    return 0;
  double v = (double)m;
  v = scale < 0 ? v / pow10[-scale] : v * pow10[scale];
  *out = neg ? -v : v;
  return 1;
}

int jrpc__num_to_f64(const char *s, size_t n, double *out) {
  if (f64_fast(s, n, out))
    return 0;
  /* strtod follows LC_NUMERIC, which a handler may have changed: use a
   * private "C" locale. The text needs a terminator, so copy it. */
  jrpc__c_locale();
  char small[128];
  char *buf = n < sizeof(small) ? small : malloc(n + 1);
  if (!buf)
    return JRPC_ENOMEM;
  memcpy(buf, s, n);
  buf[n] = '\0';
  double v = c_locale ? strtod_l(buf, NULL, c_locale) : strtod(buf, NULL);
  if (buf != small)
    free(buf);
  if (isinf(v))
    return JRPC_ERANGE;
  *out = v;
  return 0;
}
