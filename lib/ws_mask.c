/* ws_mask.c - the unmasking kernels and the choice among them at
 * start-up; see ws_mask.h. Each kernel runs its widest steps over the
 * payload and covers what is left with one more step ending at the
 * payload's end (overlapping: nothing past the end is touched, the bytes
 * after it are the next frame's), payloads shorter than a step going to
 * the narrower kernel. */
#include "ws_mask.h"

#include <string.h>

/* The key for a run starting at byte i: its 4 bytes rotated by i % 4
 * (little-endian: the run's first byte meets the key's low byte). */
static inline uint32_t key_at(uint32_t k4, size_t i) {
  unsigned s = 8 * (unsigned)(i & 3);
  return k4 >> s | k4 << ((32 - s) & 31);
}

/* Under 8 bytes, one at a time: the OR of the bytes written. */
static inline uint64_t unmask_bytes(unsigned char *p, size_t n, uint32_t k4) {
  uint64_t high = 0;
  for (size_t i = 0; i < n; i++) {
    p[i] ^= (unsigned char)(k4 >> 8 * (i & 3));
    high |= p[i];
  }
  return high;
}

/* 8 bytes or more, 8 at a time; what is left is covered by one last word
 * ending at n, read (still masked) before the loop writes any of it and
 * written after, so the bytes it shares with the loop get the same value
 * twice: no byte loop. The OR of the words written. */
static inline uint64_t unmask_words(unsigned char *p, size_t n, uint32_t k4) {
  uint64_t k8 = (uint64_t)k4 << 32 | k4, last, high = 0;
  uint32_t kl = key_at(k4, n - 8);
  memcpy(&last, p + n - 8, 8);
  last ^= (uint64_t)kl << 32 | kl;
  for (size_t i = 0; i + 8 <= n; i += 8) {
    uint64_t w;
    memcpy(&w, p + i, 8);
    w ^= k8;
    high |= w;
    memcpy(p + i, &w, 8);
  }
  memcpy(p + n - 8, &last, 8);
  return high | last;
}

#define ASCII(high) (!((high)&0x8080808080808080ull))

static int unmask_swar(unsigned char *p, size_t n, uint32_t k4) {
  return ASCII(n < 8 ? unmask_bytes(p, n, k4) : unmask_words(p, n, k4));
}

#if defined(__x86_64__) && defined(__GNUC__)
#include <immintrin.h>

static inline __m128i xor_store16(unsigned char *p, __m128i k) {
  __m128i w =
      _mm_xor_si128(_mm_loadu_si128((const __m128i *)(const void *)p), k);
  _mm_storeu_si128((__m128i *)(void *)p, w);
  return w;
}

/* As unmask_words, 16 bytes at a time (under 16: unmask_swar). */
static inline int unmask_sse2(unsigned char *p, size_t n, uint32_t k4) {
  if (n < 16)
    return unmask_swar(p, n, k4);
  const __m128i k16 = _mm_set1_epi32((int)k4);
  __m128i last = _mm_xor_si128(
      _mm_loadu_si128((const __m128i *)(const void *)(p + n - 16)),
      _mm_set1_epi32((int)key_at(k4, n - 16)));
  __m128i high = last;
  for (size_t i = 0; i + 16 <= n; i += 16)
    high = _mm_or_si128(high, xor_store16(p + i, k16));
  _mm_storeu_si128((__m128i *)(void *)(p + n - 16), last);
  return !_mm_movemask_epi8(high);
}

#define AVX2 __attribute__((target("avx2")))

AVX2 static inline __m256i xor_store32(unsigned char *p, __m256i k) {
  __m256i w =
      _mm256_xor_si256(_mm256_loadu_si256((const __m256i *)(const void *)p), k);
  _mm256_storeu_si256((__m256i *)(void *)p, w);
  return w;
}

/* As unmask_words, two 32-byte vectors per step, then one (under 32:
 * unmask_sse2). */
AVX2 static int unmask_avx2(unsigned char *p, size_t n, uint32_t k4) {
  if (n < 32)
    return unmask_sse2(p, n, k4);
  const __m256i k32 = _mm256_set1_epi32((int)k4);
  __m256i last = _mm256_xor_si256(
      _mm256_loadu_si256((const __m256i *)(const void *)(p + n - 32)),
      _mm256_set1_epi32((int)key_at(k4, n - 32)));
  __m256i high = last;
  size_t i = 0;
  for (; i + 64 <= n; i += 64)
    high = _mm256_or_si256(high, _mm256_or_si256(xor_store32(p + i, k32),
                                                 xor_store32(p + i + 32, k32)));
  if (i + 32 <= n)
    high = _mm256_or_si256(high, xor_store32(p + i, k32));
  _mm256_storeu_si256((__m256i *)(void *)(p + n - 32), last);
  return !_mm256_movemask_epi8(high);
}
#endif

typedef struct kernel {
  int (*unmask)(unsigned char *, size_t, uint32_t);
  const char *name;
} kernel_t;

/* Narrowest first; kernels[n_usable - 1] is the best this CPU runs. */
static const kernel_t kernels[] = {
    {unmask_swar, "swar"},
#if defined(__x86_64__) && defined(__GNUC__)
    {unmask_sse2, "sse2"},
    {unmask_avx2, "avx2"},
#endif
};
static size_t n_usable = 1;
static const kernel_t *cur = &kernels[0];
int (*jrpc__ws_unmask_kernel)(unsigned char *, size_t, uint32_t) = unmask_swar;

static void use(const kernel_t *k) {
  cur = k;
  jrpc__ws_unmask_kernel = k->unmask;
}

/* Chosen before main (and before any worker thread exists), so `cur` is
 * never written while another thread reads it. */
__attribute__((constructor)) static void choose(void) {
#if defined(__x86_64__) && defined(__GNUC__)
  __builtin_cpu_init();
  n_usable = __builtin_cpu_supports("avx2") ? 3 : 2;
#endif
  use(&kernels[n_usable - 1]);
}

const char *jrpc__ws_mask_kernel(void) {
  return cur->name;
}

int jrpc__ws_mask_use(const char *name) {
  for (size_t i = 0; i < n_usable; i++)
    if (!name ? i == n_usable - 1 : !strcmp(name, kernels[i].name)) {
      use(&kernels[i]);
      return 0;
    }
  return -1;
}
