/* bytescan.c - the reply writer's search for line breaks in raw values;
 * see bytescan.h. */
#include "bytescan.h"

#include <stdint.h>
#include <string.h>

/* ---- portable: eight bytes at a time ---- */

static inline uint64_t has_byte(uint64_t x, unsigned char c) {
  const uint64_t ones = 0x0101010101010101ull, high = 0x8080808080808080ull;
  uint64_t y = x ^ (ones * c);
  return (y - ones) & ~y & high;
}

static const char *crlf_swar(const char *p, const char *end) {
  while (end - p >= 8) {
    uint64_t x;
    memcpy(&x, p, 8);
    if (has_byte(x, '\n') | has_byte(x, '\r'))
      break; /* the byte loop below finds which */
    p += 8;
  }
  while (p < end && *p != '\n' && *p != '\r')
    p++;
  return p;
}

#if defined(__x86_64__) && defined(__GNUC__)
#include <immintrin.h>

/* Each kernel scans whole vectors, then one last vector ending at `end`
 * (overlapping bytes already seen, which hold no match), so no byte loop
 * is left over; runs shorter than a vector go to the narrower kernel. */

static inline __m128i crlf_mask16(__m128i v) {
  return _mm_or_si128(_mm_cmpeq_epi8(v, _mm_set1_epi8('\n')),
                      _mm_cmpeq_epi8(v, _mm_set1_epi8('\r')));
}

#define SCAN16(name, mask, T, narrow)                                          \
  static const T *name(const T *p, const T *end) {                             \
    if (end - p < 16)                                                          \
      return narrow(p, end);                                                   \
    for (; end - p >= 16; p += 16) {                                           \
      unsigned m = (unsigned)_mm_movemask_epi8(                                \
          mask(_mm_loadu_si128((const __m128i *)(const void *)p)));            \
      if (m)                                                                   \
        return p + __builtin_ctz(m);                                           \
    }                                                                          \
    if (p == end)                                                              \
      return end;                                                              \
    unsigned m = (unsigned)_mm_movemask_epi8(                                  \
        mask(_mm_loadu_si128((const __m128i *)(const void *)(end - 16))));     \
    /* Bits of bytes before p were seen already and hold no match. */          \
    m >>= 16 - (end - p);                                                      \
    return m ? p + __builtin_ctz(m) : end;                                     \
  }

SCAN16(crlf_sse2, crlf_mask16, char, crlf_swar)

#define AVX2 __attribute__((target("avx2")))

AVX2 static inline __m256i crlf_mask32(__m256i v) {
  return _mm256_or_si256(_mm256_cmpeq_epi8(v, _mm256_set1_epi8('\n')),
                         _mm256_cmpeq_epi8(v, _mm256_set1_epi8('\r')));
}

/* Two vectors per step (one test for both), then one at a time. */
#define SCAN32(name, mask, T, narrow)                                          \
  AVX2 static const T *name(const T *p, const T *end) {                        \
    if (end - p < 32)                                                          \
      return narrow(p, end);                                                   \
    for (; end - p >= 64; p += 64) {                                           \
      __m256i a = mask(_mm256_loadu_si256((const __m256i *)(const void *)p));  \
      __m256i b =                                                              \
          mask(_mm256_loadu_si256((const __m256i *)(const void *)(p + 32)));   \
      if (!_mm256_testz_si256(_mm256_or_si256(a, b), _mm256_or_si256(a, b))) { \
        unsigned m = (unsigned)_mm256_movemask_epi8(a);                        \
        if (m)                                                                 \
          return p + __builtin_ctz(m);                                         \
        return p + 32 + __builtin_ctz((unsigned)_mm256_movemask_epi8(b));      \
      }                                                                        \
    }                                                                          \
    for (; end - p >= 32; p += 32) {                                           \
      unsigned m = (unsigned)_mm256_movemask_epi8(                             \
          mask(_mm256_loadu_si256((const __m256i *)(const void *)p)));         \
      if (m)                                                                   \
        return p + __builtin_ctz(m);                                           \
    }                                                                          \
    if (p == end)                                                              \
      return end;                                                              \
    unsigned m = (unsigned)_mm256_movemask_epi8(                               \
        mask(_mm256_loadu_si256((const __m256i *)(const void *)(end - 32))));  \
    m >>= 32 - (end - p);                                                      \
    return m ? p + __builtin_ctz(m) : end;                                     \
  }

SCAN32(crlf_avx2, crlf_mask32, char, crlf_sse2)

#endif

typedef struct kernel {
  const char *(*crlf)(const char *, const char *);
  const char *name;
} kernel_t;

/* Narrowest first; kernels[n_usable - 1] is the best this CPU runs. */
static const kernel_t kernels[] = {
    {crlf_swar, "swar"},
#if defined(__x86_64__) && defined(__GNUC__)
    {crlf_sse2, "sse2"},
    {crlf_avx2, "avx2"},
#endif
};
static size_t n_usable = 1;
static const kernel_t *cur = &kernels[0];

/* Chosen before main (and before any worker thread exists), so `cur` is
 * never written while another thread reads it. */
__attribute__((constructor)) static void choose(void) {
#if defined(__x86_64__) && defined(__GNUC__)
  __builtin_cpu_init();
  n_usable = __builtin_cpu_supports("avx2") ? 3 : 2;
#endif
  cur = &kernels[n_usable - 1];
}

const char *jrpc__scan_crlf(const char *p, const char *end) {
  return cur->crlf(p, end);
}

const char *jrpc__scan_kernel(void) {
  return cur->name;
}

int jrpc__scan_use(const char *name) {
  for (size_t i = 0; i < n_usable; i++)
    if (!name ? i == n_usable - 1 : !strcmp(name, kernels[i].name)) {
      cur = &kernels[i];
      return 0;
    }
  return -1;
}
