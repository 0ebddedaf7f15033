/* jrpc_bench_reply.h - finding reply frames in what jrpc-bench reads, and
 * the few members of a reply it checks, without a JSON parser.
 *
 * A member is found by its key: an unescaped '"', the name, '"', optional
 * blanks and ':'. In valid JSON that byte pattern can only be a key (inside
 * a string a '"' is escaped, and a closing '"' cannot be followed by a
 * name), but the scan does not track depth, so a key "id" or "error" inside
 * a result is taken like a top-level one. Hence the assumptions:
 *   - a single reply's id is its LAST "id" key: jrpcd writes "id" last, as
 *     do the baselines; results that hold objects with an "id" key need a
 *     server that writes the id last too;
 *   - whether it is an error is decided by the FIRST "result" or "error"
 *     key (jrpcd writes them before the id, so a result's contents never
 *     come first);
 *   - in a batch reply every "id" key is one response's id, and every
 *     "error" key one error response.
 * Ids are the unsigned decimal integers jrpc-bench sends; any other id
 * (string, null, fraction, sign) is not one of ours. */
#ifndef JRPC_BENCH_REPLY_H
#define JRPC_BENCH_REPLY_H

#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "jrpc_bench_opts.h"

enum { REPLY_NEED_MORE = 0, REPLY_FRAME = 1, REPLY_TOO_BIG = -1 };

/* The next frame in buf[*pos, len). Newline framing: blank lines are
 * skipped, a trailing '\r' is dropped, and *scan (>= *pos) is where the
 * search for '\n' resumes, so a long partial line is scanned once.
 * REPLY_FRAME with the frame in *f, *n and *pos past it; REPLY_NEED_MORE;
 * or REPLY_TOO_BIG when the frame would exceed max_frame. */
int reply_next_frame(bench_framing_t framing, const char *buf, size_t len,
                     size_t *pos, size_t *scan, size_t max_frame,
                     const char **f, size_t *n);

enum {
  REPLY_OK = 0,
  REPLY_NOT_REPLY = -1, /* not an object with "id" and "result"/"error" */
  REPLY_BAD_ID = -2     /* an id that is not an unsigned integer */
};

/* A single reply (an object): its id and whether it is an error reply. */
int reply_single(const char *f, size_t n, uint64_t *id, int *is_error);

static inline uint64_t reply_load8(const char *p) {
  uint64_t v;
  memcpy(&v, p, 8);
  return v;
}

/* Eight ASCII digits at p as a number, all at once: 0, or -1 when one of
 * them is not a digit. */
static inline int reply_digits8(const char *p, uint32_t *out) {
  uint64_t x = reply_load8(p);
  /* Each byte 0x30..0x39: its high nibble is 3, and still 3 plus 6 (no
   * carry crosses bytes once every one is below 0x40). */
  if ((x & 0xF0F0F0F0F0F0F0F0ull) != 0x3030303030303030ull ||
      ((x + 0x0606060606060606ull) & 0xF0F0F0F0F0F0F0F0ull) !=
          0x3030303030303030ull)
    return -1;
  x -= 0x3030303030303030ull; /* the first digit is the lowest byte */
  x = (x * 10 + (x >> 8)) & 0x00FF00FF00FF00FFull;
  x = (x * 100 + (x >> 16)) & 0x0000FFFF0000FFFFull;
  x = (x * 10000 + (x >> 32)) & 0xFFFFFFFFull;
  *out = (uint32_t)x;
  return 0;
}

/* The shape jrpcd and the baselines answer a call with,
 *   {"jsonrpc":"2.0","result":...,"id":DIGITS}
 * with an id of exactly `digits` digits: 1 and the id, or 0 for anything
 * else (reply_single decides those). The '"' of "id" follows a ',', so it
 * is a key, and it is the last one. */
static inline int reply_fast(const char *f, size_t n, unsigned digits,
                             uint64_t *id) {
  static const char head[] = "{\"jsonrpc\":\"2.0\",\"result\":";
  size_t tail = digits + 7; /* ,"id":  DIGITS  } */
  if (n < 26 + tail || f[n - 1] != '}' || reply_load8(f) != reply_load8(head) ||
      reply_load8(f + 8) != reply_load8(head + 8) ||
      reply_load8(f + 16) != reply_load8(head + 16) ||
      memcmp(f + 24, head + 24, 2) != 0 ||
      memcmp(f + n - tail, ",\"id\":", 6) != 0)
    return 0;
  const char *d = f + n - 1 - digits;
  uint64_t v;
  if (digits == 9) {
    unsigned c = (unsigned)(unsigned char)d[0] - '0';
    uint32_t lo;
    if (c > 9 || reply_digits8(d + 1, &lo))
      return 0;
    v = (uint64_t)c * 100000000 + lo;
  } else {
    uint32_t hi, lo;
    if (digits != 16 || reply_digits8(d, &hi) || reply_digits8(d + 8, &lo))
      return 0;
    v = (uint64_t)hi * 100000000 + lo;
  }
  *id = v;
  return 1;
}

/* A batch reply (an array): up to cap ids into ids[], their count in
 * *nids (counted on past cap), error responses in *nerr. REPLY_OK,
 * REPLY_NOT_REPLY (not an array) or REPLY_BAD_ID. */
int reply_batch(const char *f, size_t n, uint64_t *ids, size_t cap,
                size_t *nids, size_t *nerr);

#endif
