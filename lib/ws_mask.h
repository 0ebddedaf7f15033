/* ws_mask.h - a WebSocket client's masking (RFC 6455, 5.3) undone in
 * place, with whether every byte is ASCII found in the same pass, with the
 * widest vectors the running CPU has: SSE2 (every x86-64), AVX2 when the
 * CPU reports it (chosen once, at start-up, as bytescan.h's kernels).
 * Elsewhere, eight bytes at a time. Never touches a byte outside
 * [p, p + n). */
#ifndef JRPC_WS_MASK_H
#define JRPC_WS_MASK_H

#include <stddef.h>
#include <stdint.h>
#include <string.h>

/* The kernel in use (key: the 4 key bytes as they lie in memory). */
extern int (*jrpc__ws_unmask_kernel)(unsigned char *p, size_t n, uint32_t key);

/* The n bytes at p XORed with the 4-byte key (byte i with key[i % 4]);
 * 1 if every byte after it is below 0x80 (ASCII, so UTF-8 too). Inline:
 * one indirect call per frame. */
static inline int jrpc__ws_unmask(unsigned char *p, size_t n,
                                  const unsigned char key[4]) {
  uint32_t k4;
  memcpy(&k4, key, 4);
  return jrpc__ws_unmask_kernel(p, n, k4);
}

/* Which kernel unmasks: "avx2", "sse2" or "swar". */
const char *jrpc__ws_mask_kernel(void);

/* Tests only (not thread-safe): use the kernel `name`, or the CPU's best
 * with NULL. -1 when this CPU lacks it. */
int jrpc__ws_mask_use(const char *name);

#endif
