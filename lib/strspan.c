/* strspan.c - the long-span kernels of string scanning and the choice
 * among them at start-up; see strspan.h. */
#include "strspan.h"

#include <string.h>

const uint8_t jrpc__str_plain[256] = {
    [0x20 ... 0x21] = 1, [0x23 ... 0x5B] = 1, [0x5D ... 0x7F] = 1};

static const unsigned char *span_swar(const unsigned char *p,
                                      const unsigned char *end) {
  return jrpc__plain_span_swar(p, end);
}

#ifdef JRPC__SPAN_SSE2
#include <immintrin.h>

static const unsigned char *span_sse2(const unsigned char *p,
                                      const unsigned char *end) {
  /* Four vectors per step: one branch per 64 bytes. */
  while (end - p >= 64) {
    unsigned a = jrpc__special16(p), b = jrpc__special16(p + 16);
    unsigned c = jrpc__special16(p + 32), d = jrpc__special16(p + 48);
    uint64_t m =
        (uint64_t)a | (uint64_t)b << 16 | (uint64_t)c << 32 | (uint64_t)d << 48;
    if (m)
      return p + __builtin_ctzll(m);
    p += 64;
  }
  /* Under 64 bytes left: the inline search never calls back here. */
  return jrpc__plain_span(p, end);
}

__attribute__((target("avx2"))) static inline uint32_t
special32(const unsigned char *p) {
  __m256i x = _mm256_loadu_si256((const __m256i *)(const void *)p);
  /* Signed: x < 0x20 holds for control bytes and for every byte >= 0x80. */
  __m256i m = _mm256_or_si256(
      _mm256_cmpgt_epi8(_mm256_set1_epi8(0x20), x),
      _mm256_or_si256(_mm256_cmpeq_epi8(x, _mm256_set1_epi8('"')),
                      _mm256_cmpeq_epi8(x, _mm256_set1_epi8('\\'))));
  return (uint32_t)_mm256_movemask_epi8(m);
}

__attribute__((target("avx2"))) static const unsigned char *
span_avx2(const unsigned char *p, const unsigned char *end) {
  while (end - p >= 64) {
    uint64_t m = special32(p) | (uint64_t)special32(p + 32) << 32;
    if (m)
      return p + __builtin_ctzll(m);
    p += 64;
  }
  if (end - p >= 32) {
    uint32_t m = special32(p);
    if (m)
      return p + __builtin_ctz(m);
    p += 32;
  }
  /* Under 64 bytes left: the inline search never calls back here. */
  return jrpc__plain_span(p, end);
}
#endif

static const struct {
  const char *name;
  const unsigned char *(*fn)(const unsigned char *, const unsigned char *);
} kernels[] = {
#ifdef JRPC__SPAN_SSE2
    {"avx2", span_avx2},
    {"sse2", span_sse2},
#endif
    {"swar", span_swar},
};
#define NKERNELS (sizeof(kernels) / sizeof(kernels[0]))

static int supported(size_t i) {
#ifdef JRPC__SPAN_SSE2
  if (kernels[i].fn == span_avx2)
    return __builtin_cpu_supports("avx2");
#endif
  (void)i;
  return 1;
}

/* Until the constructor below has run, the kernel every CPU of the
 * architecture has. */
#ifdef JRPC__SPAN_SSE2
#define BASELINE span_sse2
#else
#define BASELINE span_swar
#endif
const unsigned char *(*jrpc__plain_span_long)(const unsigned char *,
                                              const unsigned char *) = BASELINE;

__attribute__((constructor)) static void choose_kernel(void) {
#ifdef JRPC__SPAN_SSE2
  __builtin_cpu_init();
#endif
  for (size_t i = 0; i < NKERNELS; i++)
    if (supported(i)) {
      jrpc__plain_span_long = kernels[i].fn;
      return;
    }
}

const char *jrpc__strspan_kernel(void) {
  for (size_t i = 0; i < NKERNELS; i++)
    if (kernels[i].fn == jrpc__plain_span_long)
      return kernels[i].name;
  return "?";
}

int jrpc__strspan_force(const char *name) {
  for (size_t i = 0; i < NKERNELS; i++)
    if (strcmp(kernels[i].name, name) == 0 && supported(i)) {
      jrpc__plain_span_long = kernels[i].fn;
      return 0;
    }
  return -1;
}
