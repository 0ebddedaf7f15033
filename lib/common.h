/* common.h - small internal helpers shared by libjrpc's files. */
#ifndef JRPC_COMMON_H
#define JRPC_COMMON_H

#include <stddef.h>
#include <stdint.h>

#include "jrpc/jrpc.h"

/* Bytes kept readable after the end of every input frame (simdjson reads
 * up to 64 bytes past the end; so may our own SWAR scans). */
#define JRPC__PAD 64

#if defined(__GNUC__)
#define JRPC__LIKELY(x) __builtin_expect(!!(x), 1)
#define JRPC__UNLIKELY(x) __builtin_expect(!!(x), 0)
#define JRPC__INLINE static inline __attribute__((always_inline))
#define JRPC__NOINLINE __attribute__((noinline))
#else
#define JRPC__LIKELY(x) (x)
#define JRPC__UNLIKELY(x) (x)
#define JRPC__INLINE static inline
#define JRPC__NOINLINE
#endif

/* Internal status codes beyond the public JRPC_E* set. */
enum {
  JRPC__ECLOSE = -5001, /* the connection must be closed after flushing */
};

/* The function table handed to handlers and modules (api.c). */
extern const struct jrpc_api jrpc__api;

/* Internal, non-static names carry the jrpc__ prefix (docs/architecture.md,
 * "Conventions"). */

#endif
