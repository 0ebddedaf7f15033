/* strspan.h - the search at the heart of string scanning: the first byte
 * of string content that is not plain ASCII (a '"', a '\\', a control
 * byte or a byte >= 0x80), with SIMD where the CPU has it.
 *
 * On x86-64 SSE2 is always there: 16 bytes per step inline, and spans of
 * 64 bytes or more go to a kernel chosen once at start-up by cpuid (AVX2
 * where present, 32 bytes per step; packaged binaries run on any x86-64,
 * so nothing here needs -march). Elsewhere eight bytes per step in plain
 * integer arithmetic. */
#ifndef JRPC_STRSPAN_H
#define JRPC_STRSPAN_H

#include <stddef.h>
#include <stdint.h>
#include <string.h>

#if defined(__x86_64__) && defined(__SSE2__)
#include <emmintrin.h>
#define JRPC__SPAN_SSE2 1
#endif

/* Bytes that may stand verbatim in a JSON string: 0x20..0x7F except '"'
 * and '\\' (non-ASCII needs the UTF-8 check). */
extern const uint8_t jrpc__str_plain[256];

/* Non-zero when any of the 8 bytes in x is < 0x20, '"', '\\' or >= 0x80:
 * the bytes a JSON string cannot hold verbatim as plain ASCII. */
static inline uint64_t jrpc__swar_special(uint64_t x) {
  const uint64_t ones = 0x0101010101010101ull, high = 0x8080808080808080ull;
  uint64_t q = x ^ (ones * '"'), b = x ^ (ones * '\\');
  uint64_t lt20 = (x - ones * 0x20) & ~x;
  return (lt20 | ((q - ones) & ~q) | ((b - ones) & ~b) | x) & high;
}

/* The portable search, eight bytes at a time; bounded by end. */
static inline const unsigned char *
jrpc__plain_span_swar(const unsigned char *p, const unsigned char *end) {
  while (end - p >= 8) {
    uint64_t x;
    memcpy(&x, p, 8);
    uint64_t m = jrpc__swar_special(x);
#if __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
    /* A borrow can flag a byte above a special one, never below it: the
     * lowest flag is the first special byte. */
    if (m)
      return p + (__builtin_ctzll(m) >> 3);
#else
    if (m)
      break;
#endif
    p += 8;
  }
  while (p < end && jrpc__str_plain[*p])
    p++;
  return p;
}

/* The search over [p, end) by the kernel chosen for this CPU; meant for
 * spans of 64 bytes or more. Never reads past end. */
extern const unsigned char *(*jrpc__plain_span_long)(const unsigned char *p,
                                                     const unsigned char *end);

/* The kernel jrpc__plain_span_long uses: "avx2", "sse2" or "swar". */
const char *jrpc__strspan_kernel(void);
/* Use the named kernel from now on (tests); -1 if this CPU or build has
 * none of that name. */
int jrpc__strspan_force(const char *name);

#ifdef JRPC__SPAN_SSE2
/* A bit per byte of the 16 at p that is special. A signed compare with
 * 0x20 catches both the control bytes and every byte >= 0x80. */
static inline __attribute__((always_inline)) unsigned
jrpc__special16(const unsigned char *p) {
  __m128i x = _mm_loadu_si128((const __m128i *)(const void *)p);
  __m128i m =
      _mm_or_si128(_mm_cmpgt_epi8(_mm_set1_epi8(0x20), x),
                   _mm_or_si128(_mm_cmpeq_epi8(x, _mm_set1_epi8('"')),
                                _mm_cmpeq_epi8(x, _mm_set1_epi8('\\'))));
  return (unsigned)_mm_movemask_epi8(m);
}
#endif

/* The first byte in [p, end) that is not plain ASCII string content, or
 * end. Never reads past end. */
static inline const unsigned char *jrpc__plain_span(const unsigned char *p,
                                                    const unsigned char *end) {
#ifdef JRPC__SPAN_SSE2
  while (end - p >= 16) {
    unsigned m = jrpc__special16(p);
    if (m)
      return p + __builtin_ctz(m);
    p += 16;
    if (end - p >= 64)
      return jrpc__plain_span_long(p, end);
  }
#endif
  return jrpc__plain_span_swar(p, end);
}

#endif
