/* test_bytescan.c - lib/bytescan.h: every kernel this CPU runs finds the
 * same first line break as a plain loop, at every position and run length
 * (the vector kernels have separate paths for whole vectors, the last
 * overlapping vector and runs shorter than a vector), never reading past
 * the end (the runs end at a page the test makes unreadable). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include <cmocka.h>

#include "bytescan.h"

static const char *const kernel_names[] = {"swar", "sse2", "avx2"};

static int is_crlf(unsigned char c) {
  return c == '\n' || c == '\r';
}

/* A buffer whose last byte is followed by an unreadable page. */
typedef struct fence {
  unsigned char *map;
  size_t page;
} fence_t;

static unsigned char *fence_end(fence_t *f) {
  f->page = (size_t)sysconf(_SC_PAGESIZE);
  f->map = mmap(NULL, 2 * f->page, PROT_READ | PROT_WRITE,
                MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  assert_true(f->map != MAP_FAILED);
  assert_int_equal(mprotect(f->map + f->page, f->page, PROT_NONE), 0);
  return f->map + f->page;
}

/* For each kernel: runs of 0..200 plain bytes, then the same runs with one
 * byte of each interesting kind at every position (a second one later, to
 * check that the first is found). */
static void check_all(unsigned char plain, const unsigned char *hits,
                      size_t nhits) {
  fence_t f;
  unsigned char *end = fence_end(&f);
  int kernels = 0;
  for (size_t k = 0; k < 3; k++) {
    if (jrpc__scan_use(kernel_names[k]) != 0)
      continue;
    kernels++;
    for (size_t n = 0; n <= 200; n++) {
      unsigned char *p = end - n;
      for (size_t at = 0; at <= n; at++) {
        for (size_t h = 0; h < (at < n ? nhits : 1); h++) {
          memset(p, plain, n);
          if (at < n)
            p[at] = hits[h];
          if (at + 7 < n)
            p[at + 7] = hits[(h + 1) % nhits];
          const unsigned char *want = p;
          while (want < end && !is_crlf(*want))
            want++;
          const unsigned char *got = (const unsigned char *)jrpc__scan_crlf(
              (const char *)p, (const char *)end);
          if (got != want)
            fail_msg("kernel %s, run of %zu, byte 0x%02x at %zu: found %td, "
                     "want %td",
                     kernel_names[k], n, hits[h], at, got - p, want - p);
        }
      }
    }
  }
  jrpc__scan_use(NULL);
  assert_true(kernels >= 1);
  munmap(f.map, 2 * f.page);
}

static void test_crlf(void **state) {
  (void)state;
  static const unsigned char hits[] = {'\n', '\r'};
  check_all('a', hits, sizeof(hits));
  /* Bytes next to the ones searched for are not matches. */
  check_all('\x0b', hits, sizeof(hits));
  check_all('\x0c', hits, sizeof(hits));
  check_all(0xff, hits, sizeof(hits));
}

static void test_kernel_named(void **state) {
  (void)state;
  const char *best = jrpc__scan_kernel();
  assert_int_equal(jrpc__scan_use(best), 0);
  assert_int_equal(jrpc__scan_use("no such kernel"), -1);
  assert_int_equal(jrpc__scan_use(NULL), 0);
  assert_string_equal(jrpc__scan_kernel(), best);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_crlf),
      cmocka_unit_test(test_kernel_named),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
