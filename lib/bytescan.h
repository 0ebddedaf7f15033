/* bytescan.h - the first line break in a run of bytes (the reply writer
 * turns CR and LF in raw values into spaces), with the widest vectors the
 * running CPU has: SSE2 (every x86-64), AVX2 when the CPU reports it
 * (chosen once, at start-up; the build never assumes more than the
 * baseline ISA). Elsewhere, eight bytes at a time. Never reads outside
 * [p, end). The same for string content is strspan.h. */
#ifndef JRPC_BYTESCAN_H
#define JRPC_BYTESCAN_H

#include <stddef.h>

/* The first '\n' or '\r' in [p, end), or end. */
const char *jrpc__scan_crlf(const char *p, const char *end);

/* Which kernel the scans use: "avx2", "sse2" or "swar" (for jrpcd -t and
 * the tests). */
const char *jrpc__scan_kernel(void);

/* Tests only (not thread-safe): use the kernel `name` ("swar", "sse2",
 * "avx2"), or the CPU's best with NULL. -1 when this CPU lacks it. */
int jrpc__scan_use(const char *name);

#endif
