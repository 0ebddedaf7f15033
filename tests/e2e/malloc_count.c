/* malloc_count.c - an LD_PRELOAD library that counts a process's heap
 * allocations (malloc, calloc, realloc, the aligned family) and frees,
 * passing each on to glibc's own allocator. On SIGUSR2 (jrpcd's SIGUSR1
 * reopens its access log) it writes
 * "allocs N frees M\n" to the file named by $MALLOC_COUNT_OUT: first to
 * FILE.tmp, then renamed, so a reader that waits for FILE never sees half
 * of it. Used by e2e_alloc to show that serving requests over real sockets
 * allocates nothing once warm. Not for sanitizer builds (they own malloc). */
#include <fcntl.h>
#include <signal.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

extern void *__libc_malloc(size_t n);
extern void *__libc_calloc(size_t k, size_t n);
extern void *__libc_realloc(void *p, size_t n);
extern void *__libc_memalign(size_t align, size_t n);
extern void __libc_free(void *p);

static atomic_ulong allocs, frees;
static char out_path[512];

static void bump(atomic_ulong *c) {
  atomic_fetch_add_explicit(c, 1, memory_order_relaxed);
}

void *malloc(size_t n) {
  bump(&allocs);
  return __libc_malloc(n);
}

void *calloc(size_t k, size_t n) {
  bump(&allocs);
  return __libc_calloc(k, n);
}

void *realloc(void *p, size_t n) {
  bump(&allocs);
  return __libc_realloc(p, n);
}

void free(void *p) {
  if (p)
    bump(&frees);
  __libc_free(p);
}

void *memalign(size_t align, size_t n) {
  bump(&allocs);
  return __libc_memalign(align, n);
}

void *aligned_alloc(size_t align, size_t n) {
  bump(&allocs);
  return __libc_memalign(align, n);
}

int posix_memalign(void **out, size_t align, size_t n) {
  bump(&allocs);
  void *p = __libc_memalign(align, n);
  if (!p)
    return 12; /* ENOMEM */
  *out = p;
  return 0;
}

/* Decimal digits of v at the end of buf; returns where they start. */
static char *digits(char *end, unsigned long v) {
  do {
    *--end = (char)('0' + v % 10);
    v /= 10;
  } while (v);
  return end;
}

static void put(int fd, const char *s, size_t n) {
  while (n > 0) {
    ssize_t k = write(fd, s, n);
    if (k <= 0)
      return;
    s += k;
    n -= (size_t)k;
  }
}

/* Only async-signal-safe calls below. */
static void on_usr2(int sig) {
  (void)sig;
  if (!out_path[0])
    return;
  char tmp[sizeof(out_path) + 8];
  size_t n = strlen(out_path);
  memcpy(tmp, out_path, n);
  memcpy(tmp + n, ".tmp", 5);
  int fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC, 0600);
  if (fd < 0)
    return;
  char b1[24], b2[24];
  char *a = digits(b1 + sizeof(b1), atomic_load(&allocs));
  char *f = digits(b2 + sizeof(b2), atomic_load(&frees));
  put(fd, "allocs ", 7);
  put(fd, a, (size_t)(b1 + sizeof(b1) - a));
  put(fd, " frees ", 7);
  put(fd, f, (size_t)(b2 + sizeof(b2) - f));
  put(fd, "\n", 1);
  close(fd);
  rename(tmp, out_path);
}

__attribute__((constructor)) static void start(void) {
  const char *p = getenv("MALLOC_COUNT_OUT");
  if (!p || strlen(p) >= sizeof(out_path))
    return;
  memcpy(out_path, p, strlen(p) + 1);
  struct sigaction sa;
  memset(&sa, 0, sizeof(sa));
  sa.sa_handler = on_usr2;
  sa.sa_flags = SA_RESTART;
  sigemptyset(&sa.sa_mask);
  sigaction(SIGUSR2, &sa, NULL);
}
