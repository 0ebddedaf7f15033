/* writer.c - JSON output into the output chain; see writer.h. */
#include "writer.h"

#include <float.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bytescan.h"
#include "common.h"
#include "jsontext.h"

static const char hexdig[] = "0123456789abcdef";

int jrpc__json_str(jrpc__outbuf_t *o, const char *s, size_t n) {
  const unsigned char *p = (const unsigned char *)s, *end = p + n;
  const unsigned char *run = p;
  int rc = jrpc__out_byte(o, '"');
  while (p < end) {
    p = jrpc__plain_span(p, end);
    if (p == end)
      break;
    unsigned char c = *p;
    if (c >= 0x80) {
      size_t k = jrpc__utf8_seq(p, end);
      if (k) {
        p += k;
        continue;
      }
    }
    rc |= jrpc__out_put(o, run, (size_t)(p - run));
    char esc[6] = {'\\', 0, 0, 0, 0, 0};
    size_t en = 2;
    switch (c) {
    case '"':
      esc[1] = '"';
      break;
    case '\\':
      esc[1] = '\\';
      break;
    case '\b':
      esc[1] = 'b';
      break;
    case '\f':
      esc[1] = 'f';
      break;
    case '\n':
      esc[1] = 'n';
      break;
    case '\r':
      esc[1] = 'r';
      break;
    case '\t':
      esc[1] = 't';
      break;
    default:
      if (c < 0x20) {
        memcpy(esc, "\\u00", 4);
        esc[4] = hexdig[c >> 4];
        esc[5] = hexdig[c & 15];
        en = 6;
      } else {
        /* Not UTF-8: the output must stay valid JSON, so say U+FFFD. */
        memcpy(esc, "\\ufffd", 6);
        en = 6;
      }
    }
    rc |= jrpc__out_put(o, esc, en);
    p++;
    run = p;
  }
  rc |= jrpc__out_put(o, run, (size_t)(p - run));
  rc |= jrpc__out_byte(o, '"');
  return rc ? JRPC_ENOMEM : 0;
}

/* Decimal digits of v, written straight into the chain (no staging copy):
 * count them, then fill from the last. */
/* v's digits (after '-' when neg) at d, which has room for 21 bytes; the
 * end of the text. */
JRPC__INLINE char *digits(char *d, uint64_t v, int neg) {
  if (neg)
    *d++ = '-';
  if (v < 10) { /* counts, flags, small sums: the common result */
    *d = (char)('0' + v);
    return d + 1;
  }
  size_t n = 1;
  for (uint64_t t = v; t >= 10; t /= 10)
    n++;
  char *e = d + n;
  do {
    *--e = (char)('0' + v % 10);
    v /= 10;
  } while (v);
  return d + n;
}

JRPC__INLINE int num_text(jrpc__outbuf_t *o, uint64_t v, int neg) {
  char *d = jrpc__out_room(o, 21);
  if (!d)
    return JRPC_ENOMEM;
  o->p = digits(d, v, neg);
  return 0;
}

int jrpc__json_u64(jrpc__outbuf_t *o, uint64_t v) {
  return num_text(o, v, 0);
}

int jrpc__json_i64(jrpc__outbuf_t *o, int64_t v) {
  return num_text(o, v < 0 ? 0 - (uint64_t)v : (uint64_t)v, v < 0);
}

int jrpc__json_f64(jrpc__outbuf_t *o, double v) {
  if (!isfinite(v))
    return JRPC_EINVAL;
  /* Integral values that fit exactly print as integers, fast. */
  if (fabs(v) < 9007199254740992.0 && v == (double)(int64_t)v &&
      !(v == 0 && signbit(v)))
    return jrpc__json_i64(o, (int64_t)v);
  /* Shortest of %.15g..%.17g that reads back bit-exact; 17 always does.
   * Formatting follows LC_NUMERIC, so switch this thread to "C". */
  locale_t c = jrpc__c_locale();
  locale_t old = c ? uselocale(c) : (locale_t)0;
  char buf[320]; /* %g of any double fits; the compiler cannot know it is short
                  */
  int n = 0;
  if (fabs(v) >= DBL_MIN) {
    /* A normal double: any decimal of <= 15 digits survives the trip, so
     * %.15g (which drops trailing zeros) is the shortest when one that
     * short exists; otherwise 16, else 17 digits. */
    for (int prec = 15; prec <= 17; prec++) {
      n = snprintf(buf, sizeof(buf), "%.*g", prec, v);
      if (prec == 17 || strtod(buf, NULL) == v)
        break;
    }
  } else {
    /* Subnormals carry fewer digits: search the shortest precision that
     * round-trips (more digits never stop round-tripping). */
    int lo = 1, hi = 17;
    while (lo < hi) {
      int mid = (lo + hi) / 2;
      snprintf(buf, sizeof(buf), "%.*g", mid, v);
      if (strtod(buf, NULL) == v)
        hi = mid;
      else
        lo = mid + 1;
    }
    n = snprintf(buf, sizeof(buf), "%.*g", lo, v);
  }
  if (c)
    uselocale(old);
  return jrpc__out_put(o, buf, (size_t)n);
}

/* ---- the structured writer ---- */

static int misuse(jrpc__writer_t *w, const char *why) {
  if (!w->bad) {
    w->bad = 1;
    w->why = why;
  }
  return JRPC_EINVAL;
}

static inline int in_object(const jrpc__writer_t *w) {
  return (w->objbits >> (w->depth - 1)) & 1;
}

/* Checks that a value may come now and writes the separator before it. */
static int value_begin(jrpc__writer_t *w) {
  if (w->bad)
    return JRPC_EINVAL;
  if (w->depth == 0)
    return w->done ? misuse(w, "more than one result value") : 0;
  if (in_object(w)) {
    if (!w->after_key)
      return misuse(w, "object member without a key");
    w->after_key = 0;
    return 0;
  }
  if (w->need_comma)
    return jrpc__out_byte(w->out, ',');
  return 0;
}

static int value_end(jrpc__writer_t *w, int rc) {
  if (rc)
    return rc == JRPC_ENOMEM ? (w->bad = 1, w->why = "out of memory", rc)
                             : misuse(w, "invalid value");
  if (w->depth == 0)
    w->done = 1;
  else
    w->need_comma = 1;
  return 0;
}

static int open_container(jrpc__writer_t *w, char c, int is_obj) {
  int rc = value_begin(w);
  if (rc)
    return rc;
  if (w->depth >= JRPC__WRITER_MAX_DEPTH)
    return misuse(w, "result nested too deeply");
  if (jrpc__out_byte(w->out, c))
    return value_end(w, JRPC_ENOMEM);
  if (is_obj)
    w->objbits |= (uint64_t)1 << w->depth;
  else
    w->objbits &= ~((uint64_t)1 << w->depth);
  w->depth++;
  w->need_comma = 0;
  w->after_key = 0;
  return 0;
}

static int close_container(jrpc__writer_t *w, char c, int is_obj) {
  if (w->bad)
    return JRPC_EINVAL;
  if (w->depth == 0 || in_object(w) != is_obj)
    return misuse(w, is_obj ? "object end without an open object"
                            : "array end without an open array");
  if (w->after_key)
    return misuse(w, "key without a value");
  w->depth--;
  return value_end(w, jrpc__out_byte(w->out, c));
}

int jrpc__writer_obj(jrpc__writer_t *w) {
  return open_container(w, '{', 1);
}
int jrpc__writer_arr(jrpc__writer_t *w) {
  return open_container(w, '[', 0);
}
int jrpc__writer_obj_end(jrpc__writer_t *w) {
  return close_container(w, '}', 1);
}
int jrpc__writer_arr_end(jrpc__writer_t *w) {
  return close_container(w, ']', 0);
}

int jrpc__writer_key(jrpc__writer_t *w, const char *s, size_t n) {
  if (w->bad)
    return JRPC_EINVAL;
  if (w->depth == 0 || !in_object(w))
    return misuse(w, "key outside an object");
  if (w->after_key)
    return misuse(w, "key after key");
  int rc = 0;
  if (w->need_comma)
    rc |= jrpc__out_byte(w->out, ',');
  rc |= jrpc__json_str(w->out, s ? s : "", s ? n : 0);
  rc |= jrpc__out_byte(w->out, ':');
  w->after_key = 1;
  if (rc) {
    w->bad = 1;
    w->why = "out of memory";
    return JRPC_ENOMEM;
  }
  return 0;
}

int jrpc__writer_str(jrpc__writer_t *w, const char *s, size_t n) {
  int rc = value_begin(w);
  return rc ? rc : value_end(w, jrpc__json_str(w->out, s ? s : "", s ? n : 0));
}
static JRPC__NOINLINE int writer_i64_slow(jrpc__writer_t *w, int64_t v) {
  int rc = value_begin(w);
  return rc ? rc : value_end(w, jrpc__json_i64(w->out, v));
}
/* The usual use, the whole result is this one number and the segment has
 * room, calls nothing (so it saves no registers); the rest is
 * writer_i64_slow's, by a tail call. */
int jrpc__writer_i64(jrpc__writer_t *w, int64_t v) {
  jrpc__outbuf_t *o = w->out;
  if (JRPC__LIKELY(!(w->depth | w->done | w->bad) &&
                   (size_t)(o->end - o->p) >= 21)) {
    o->p = digits(o->p, v < 0 ? 0 - (uint64_t)v : (uint64_t)v, v < 0);
    w->done = 1;
    return 0;
  }
  return writer_i64_slow(w, v);
}
int jrpc__writer_u64(jrpc__writer_t *w, uint64_t v) {
  int rc = value_begin(w);
  return rc ? rc : value_end(w, jrpc__json_u64(w->out, v));
}
int jrpc__writer_f64(jrpc__writer_t *w, double v) {
  if (!isfinite(v))
    return misuse(w, "NaN or infinity has no JSON form");
  int rc = value_begin(w);
  return rc ? rc : value_end(w, jrpc__json_f64(w->out, v));
}
int jrpc__writer_bool(jrpc__writer_t *w, int v) {
  int rc = value_begin(w);
  return rc ? rc
            : value_end(w, v ? jrpc__out_put(w->out, "true", 4)
                             : jrpc__out_put(w->out, "false", 5));
}
int jrpc__writer_null(jrpc__writer_t *w) {
  int rc = value_begin(w);
  return rc ? rc : value_end(w, jrpc__out_put(w->out, "null", 4));
}

int jrpc__writer_raw(jrpc__writer_t *w, const char *s, size_t n) {
  if (!s || n == 0)
    return misuse(w, "empty raw value");
  int rc = value_begin(w);
  if (rc)
    return rc;
  return value_end(w, jrpc__out_put_oneline(w->out, s, n));
}

int jrpc__writer_finish(jrpc__writer_t *w, int *empty) {
  *empty = 0;
  if (w->bad)
    return JRPC_EINVAL;
  if (w->depth)
    return misuse(w, "result has an unclosed array or object");
  if (!w->done)
    *empty = 1;
  return 0;
}
