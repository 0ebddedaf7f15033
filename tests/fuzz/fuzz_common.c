/* fuzz_common.c - see fuzz.h. */
#include "fuzz.h"

#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "jrpc/jrpc.h"
#include "parser.h"
#include "stream.h"
#include "testutil.h"

const jrpc_module_info_t *math_module_info(void);

void fz_fail(const char *fmt, ...) {
  va_list ap;
  fputs("fuzz: invariant broken: ", stderr);
  va_start(ap, fmt);
  vfprintf(stderr, fmt, ap);
  va_end(ap);
  fputc('\n', stderr);
  fflush(stderr);
  abort();
}

int fz_known(const char *name) {
  static int strict = -1;
  static const char *seen[16];
  if (strict < 0) {
    const char *s = getenv("JRPC_FUZZ_STRICT");
    strict = s && *s && strcmp(s, "0") != 0;
  }
  if (strict)
    return 0;
  for (size_t i = 0; i < sizeof seen / sizeof seen[0]; i++) {
    if (seen[i] == name)
      return 1;
    if (!seen[i]) {
      seen[i] = name;
      fprintf(stderr,
              "fuzz: known bug \"%s\" let pass (JRPC_FUZZ_STRICT=1 "
              "to fail on it)\n",
              name);
      return 1;
    }
  }
  return 1;
}

/* ------------------------------------------------------------------ */
/* Generator                                                           */
/* ------------------------------------------------------------------ */

void fz_rng_seed(fz_rng_t *r, const uint8_t *data, size_t size, uint64_t salt) {
  /* FNV-1a over the input, then a splitmix step: a pure function of the
   * input, so that a crash input replays the same way. */
  uint64_t h = 1469598103934665603u ^ salt;
  for (size_t i = 0; i < size; i++) {
    h ^= data[i];
    h *= 1099511628211u;
  }
  r->s = h ? h : 0x9E3779B97F4A7C15u;
}

uint64_t fz_rng_next(fz_rng_t *r) {
  uint64_t z = (r->s += 0x9E3779B97F4A7C15u);
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9u;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBu;
  return z ^ (z >> 31);
}

size_t fz_rng_range(fz_rng_t *r, size_t lo, size_t hi) {
  if (hi <= lo)
    return lo;
  return lo + (size_t)(fz_rng_next(r) % (uint64_t)(hi - lo + 1));
}

size_t fz_read_into(jrpc__stream_t *s, fz_rng_t *r, int how, const char *in,
                    size_t n, size_t *off) {
  size_t room = 0;
  char *dst = jrpc__stream_rbuf(s, &room);
  FZ_CHECK(dst && room >= 1, "stream_rbuf gave no room");
  size_t k = how == 0   ? room
             : how == 1 ? 1
             : how == 2 ? fz_rng_range(r, 0, 16)
                        : fz_rng_range(r, 1, 5000);
  if (k > room)
    k = room;
  if (k > n - *off)
    k = n - *off;
  memcpy(dst, in + *off, k);
  *off += k;
  return k;
}

/* ------------------------------------------------------------------ */
/* Reference framing                                                   */
/* ------------------------------------------------------------------ */

static void push(fz_events_t *e, fz_event_t ev) {
  if (e->n == e->cap) {
    e->cap = e->cap ? 2 * e->cap : 16;
    e->ev = realloc(e->ev, e->cap * sizeof *e->ev);
    FZ_CHECK(e->ev, "out of memory");
  }
  e->ev[e->n++] = ev;
}

/* JSON whitespace, which is what makes a line blank. */
static int blank(const char *s, size_t n) {
  for (size_t i = 0; i < n; i++)
    if (s[i] != ' ' && s[i] != '\t' && s[i] != '\r' && s[i] != '\n')
      return 0;
  return 1;
}

void fz_ref_frames(int framing, uint32_t max, const char *in, size_t n,
                   fz_events_t *out) {
  memset(out, 0, sizeof *out);
  size_t pos = 0;
  if (framing == JRPC_FRAMING_LENGTH) {
    while (n - pos >= 4) {
      const unsigned char *h = (const unsigned char *)in + pos;
      uint32_t len = (uint32_t)h[0] << 24 | (uint32_t)h[1] << 16 |
                     (uint32_t)h[2] << 8 | h[3];
      if (len > max) {
        fz_event_t ev = {FZ_EV_TOO_LARGE, 0, 0, len, 1};
        push(out, ev);
        pos += 4;
        break;
      }
      if (n - pos - 4 < len)
        break; /* a partial frame: EOF drops it */
      fz_event_t ev = {FZ_EV_FRAME, pos + 4, len, 0, 0};
      push(out, ev);
      pos += 4 + (size_t)len;
    }
    out->end = pos;
    return;
  }
  /* Newline: "\n" ends a line, one "\r" before it is dropped, blank lines
   * are skipped, the last line needs no "\n". */
  while (pos < n) {
    const char *nl = memchr(in + pos, '\n', n - pos);
    size_t end = nl ? (size_t)(nl - in) : n;
    size_t len = end - pos;
    if (len && in[end - 1] == '\r')
      len--;
    if (!blank(in + pos, len)) {
      if (len > max) {
        fz_event_t ev = {FZ_EV_TOO_LARGE, 0, 0, len, 0};
        push(out, ev);
      } else {
        fz_event_t ev = {FZ_EV_FRAME, pos, len, 0, 0};
        push(out, ev);
      }
    }
    pos = nl ? end + 1 : n;
  }
  out->end = n;
}

void fz_events_free(fz_events_t *e) {
  free(e->ev);
  memset(e, 0, sizeof *e);
}

/* ------------------------------------------------------------------ */
/* Handlers                                                            */
/* ------------------------------------------------------------------ */

void fz_log_drop(void *arg, int level, const char *msg) {
  (void)arg;
  (void)level;
  (void)msg;
}

/* Bytes a writer must escape or replace: NUL, controls, quote, backslash,
 * DEL, U+2028, and invalid UTF-8 (overlong, surrogate, beyond U+10FFFF,
 * truncated). */
static const char weird[] = "a\0\x01\x1f\"\\/\x7f\xc3\xa9\xe2\x80\xa8\xff\xc0"
                            "\xaf\xed\xa0\x80\xf4\x90\x80\x80\xe2\x82";

/* echo: params back, byte for byte (absent: null). */
static int h_echo(jrpc_call_t *c, jrpc_val_t params, void *udata) {
  const char *s;
  size_t n;
  if (jrpc_raw(c, params, &s, &n) != 0)
    return jrpc_w_null(c);
  return jrpc_w_raw(c, s, n);
}

static void same_view(jrpc_call_t *c, jrpc_val_t a, jrpc_val_t b,
                      const char *what, uint32_t i) {
  const char *ra = NULL, *rb = NULL;
  size_t na = 0, nb = 0;
  int ea = jrpc_raw(c, a, &ra, &na), eb = jrpc_raw(c, b, &rb, &nb);
  FZ_CHECK(ea == eb && (ea != 0 || (ra == rb && na == nb)),
           "views: %s(%u) and iteration disagree (%d %d)", what, i, ea, eb);
}

/* Writes v back through every view operation, checking that they agree:
 * first/next against at() and len(), get() against key(), raw() against
 * the type, and the conversions against each other. The result is the
 * value re-serialised (numbers as [raw, i64 or "ERANGE", f64]), so that
 * backends that read the same document give the same bytes. */
static int walk_val(jrpc_call_t *c, jrpc_val_t v, int depth) {
  FZ_CHECK(depth <= JRPC__MAX_DEPTH + 1, "views: nesting %d", depth);
  jrpc_type_t t = jrpc_type(c, v);
  const char *raw = NULL, *s;
  size_t rn = 0, n;
  int64_t i64;
  double f64;
  int b, rc = jrpc_raw(c, v, &raw, &rn);
  if (t == JRPC_T_NONE) {
    FZ_CHECK(rc == JRPC_ENOENT && jrpc_is_none(v) && jrpc_len(c, v) == 0,
             "views: absent value has raw %d", rc);
    return jrpc_w_str(c, "(none)", 6);
  }
  FZ_CHECK(rc == 0 && rn > 0, "views: raw() failed (%d) on type %d", rc, t);
  if (t != JRPC_T_ARRAY && t != JRPC_T_OBJECT)
    FZ_CHECK(jrpc_len(c, v) == 0 && jrpc_is_none(jrpc_first(c, v)),
             "views: a scalar has elements");
  if (t != JRPC_T_NUMBER)
    FZ_CHECK(jrpc_as_i64(c, v, &i64) == JRPC_ETYPE &&
                 jrpc_as_f64(c, v, &f64) == JRPC_ETYPE,
             "views: as_i64/as_f64 on type %d", t);
  if (t != JRPC_T_STRING)
    FZ_CHECK(jrpc_as_str(c, v, &s, &n) == JRPC_ETYPE,
             "views: as_str on type %d", t);
  switch (t) {
  case JRPC_T_NULL:
    FZ_CHECK(rn == 4 && memcmp(raw, "null", 4) == 0, "views: null is %s",
             fz_show(raw, rn));
    return jrpc_w_null(c);
  case JRPC_T_TRUE:
  case JRPC_T_FALSE:
    FZ_CHECK(jrpc_as_bool(c, v, &b) == 0 && b == (t == JRPC_T_TRUE),
             "views: as_bool");
    FZ_CHECK(b ? rn == 4 && memcmp(raw, "true", 4) == 0
               : rn == 5 && memcmp(raw, "false", 5) == 0,
             "views: boolean is %s", fz_show(raw, rn));
    return jrpc_w_bool(c, b);
  case JRPC_T_NUMBER: {
    FZ_CHECK(raw[0] == '-' || (raw[0] >= '0' && raw[0] <= '9'),
             "views: number is %s", fz_show(raw, rn));
    FZ_CHECK(jrpc_as_bool(c, v, &b) == JRPC_ETYPE, "views: as_bool on number");
    int ri = jrpc_as_i64(c, v, &i64), rf = jrpc_as_f64(c, v, &f64);
    FZ_CHECK(ri == 0 || ri == JRPC_ERANGE, "views: as_i64 gave %d", ri);
    FZ_CHECK(rf == 0 || rf == JRPC_ERANGE, "views: as_f64 gave %d", rf);
    if (ri == 0)
      FZ_CHECK(rf == 0 && f64 == (double)i64,
               "views: %s is %lld as i64 but %.17g as f64", fz_show(raw, rn),
               (long long)i64, f64);
    jrpc_w_arr(c);
    jrpc_w_raw(c, raw, rn);
    if (ri == 0)
      jrpc_w_i64(c, i64);
    else
      jrpc_w_str(c, "ERANGE", 6);
    if (rf == 0 && isfinite(f64))
      jrpc_w_f64(c, f64);
    else
      jrpc_w_str(c, "ERANGE", 6);
    return jrpc_w_arr_end(c);
  }
  case JRPC_T_STRING:
    FZ_CHECK(rn >= 2 && raw[0] == '"' && raw[rn - 1] == '"',
             "views: string is %s", fz_show(raw, rn));
    rc = jrpc_as_str(c, v, &s, &n);
    if (rc == JRPC_ENOMEM)
      return rc;
    FZ_CHECK(rc == 0 && n <= rn - 2 && s[n] == '\0',
             "views: as_str gave %d for %s", rc, fz_show(raw, rn));
    return jrpc_w_str(c, s, n);
  case JRPC_T_ARRAY:
  case JRPC_T_OBJECT: {
    int obj = t == JRPC_T_OBJECT;
    FZ_CHECK(raw[0] == (obj ? '{' : '[') && raw[rn - 1] == (obj ? '}' : ']'),
             "views: container is %s", fz_show(raw, rn));
    uint32_t len = jrpc_len(c, v), k = 0;
    rc = obj ? jrpc_w_obj(c) : jrpc_w_arr(c);
    for (jrpc_val_t e = jrpc_first(c, v); !jrpc_is_none(e);
         e = jrpc_next(c, e), k++) {
      FZ_CHECK(k < len, "views: more than len() = %u elements", len);
      same_view(c, jrpc_at(c, v, k), e, "at", k);
      const char *e_raw;
      size_t e_rn;
      FZ_CHECK(jrpc_raw(c, e, &e_raw, &e_rn) == 0 && e_raw > raw &&
                   e_raw + e_rn < raw + rn,
               "views: element %u lies outside its container", k);
      if (obj) {
        const char *key;
        size_t kn;
        rc = jrpc_key(c, e, &key, &kn);
        if (rc == JRPC_ENOMEM)
          return rc;
        FZ_CHECK(rc == 0 && key[kn] == '\0', "views: key() gave %d", rc);
        /* get() finds the first member of that name: this one, or one
         * before it with the same key. */
        jrpc_val_t g = c->api->get(c, v, key, kn);
        const char *g_raw, *gk;
        size_t g_rn, gkn;
        FZ_CHECK(jrpc_raw(c, g, &g_raw, &g_rn) == 0 && g_raw <= e_raw,
                 "views: get(%s) misses member %u", fz_show(key, kn), k);
        FZ_CHECK(jrpc_key(c, g, &gk, &gkn) == 0 && gkn == kn &&
                     memcmp(gk, key, kn) == 0,
                 "views: get(%s) found another key", fz_show(key, kn));
        jrpc_w_key(c, key, kn);
      } else {
        rc = jrpc_key(c, e, &s, &n);
        FZ_CHECK(rc == JRPC_ENOENT,
                 "views: jrpc_key on an array element gave %d, not "
                 "JRPC_ENOENT",
                 rc);
      }
      rc = walk_val(c, e, depth + 1);
      if (rc == JRPC_ENOMEM)
        return rc;
    }
    FZ_CHECK(k == len, "views: len() = %u, iteration found %u", len, k);
    FZ_CHECK(jrpc_is_none(jrpc_at(c, v, len)), "views: at(len) exists");
    if (len <= 32) /* backwards: defeats at()'s cache of its last answer */
      for (uint32_t j = len; j-- > 0;)
        FZ_CHECK(!jrpc_is_none(jrpc_at(c, v, j)), "views: at(%u) absent", j);
    return obj ? jrpc_w_obj_end(c) : jrpc_w_arr_end(c);
  }
  case JRPC_T_NONE:
    break;
  }
  fz_fail("views: type %d", t);
}

static int h_walk(jrpc_call_t *c, jrpc_val_t params, void *udata) {
  /* params is no member of anything: no key, no sibling. */
  const char *s;
  size_t n;
  int rc = jrpc_key(c, params, &s, &n);
  FZ_CHECK(rc == JRPC_ENOENT,
           "views: jrpc_key on params gave %d, not "
           "JRPC_ENOENT",
           rc);
  FZ_CHECK(jrpc_is_none(jrpc_next(c, params)), "views: params has a sibling");
  rc = walk_val(c, params, 1);
  return rc == JRPC_ENOMEM ? jrpc_error(c, JRPC_INTERNAL_ERROR, "oom") : 0;
}

static const double f64s[] = {
    0.0,     -0.0,   0.1,  1e308,    5e-324,
    1e21,    1e-7,   -2.5, 123456.0, 9007199254740993.0,
    1.5e300, 1e-300, NAN,  INFINITY, -INFINITY};
/* Never -32700: the oracle takes that code to mean "not JSON". */
static const int codes[] = {
    0,    JRPC_INVALID_REQUEST, 1, -32000, INT32_MIN, INT32_MAX,
    4242, JRPC_INVALID_PARAMS};
static const char *const msgs[] = {
    "",
    "plain",
    "quote \" backslash \\ tab \t nl \n",
    "\xff\xfe bad utf-8",
    "\xe2\x80\xa8 line separator",
    ("a long message, a long message, a long message, a long message, a "
     "long message, a long message, a long message, a long message")};
static const int rets[] = {0, JRPC_EFAIL, JRPC_EINVAL, JRPC_ASYNC, -34, 7};
/* Sizes past JRPC__ARENA_MAX are refused before malloc; sizes between
 * 1 MiB and that limit are left out: malloc is asked for them, which a
 * fuzzer's memory limit takes for a leak of memory, not the library. */
static const size_t allocs[] = {
    0, 1, 16, 4096, 1 << 20, ((size_t)1 << 40) + 1, SIZE_MAX};
#define COUNT(a) (sizeof(a) / sizeof((a)[0]))

/* vm: params is a program. Each integer element is one writer/API
 * operation (element % 24, argument element / 24); other elements are
 * written as values. Whatever the program does, the reply must stay
 * valid JSON: misuse becomes -32000. */
static int h_vm(jrpc_call_t *c, jrpc_val_t params, void *udata) {
  uint32_t steps = 0;
  for (jrpc_val_t v = jrpc_first(c, params); !jrpc_is_none(v) && steps < 256;
       v = jrpc_next(c, v), steps++) {
    int64_t x;
    const char *s;
    size_t n;
    if (jrpc_as_i64(c, v, &x) != 0) {
      if (jrpc_as_str(c, v, &s, &n) == 0)
        jrpc_w_str(c, s, n);
      else if (jrpc_raw(c, v, &s, &n) == 0)
        jrpc_w_raw(c, s, n);
      continue;
    }
    uint64_t ux = (uint64_t)x, arg = ux / 24;
    switch (ux % 24) {
    case 0:
      jrpc_w_obj(c);
      break;
    case 1:
      jrpc_w_obj_end(c);
      break;
    case 2:
      jrpc_w_arr(c);
      break;
    case 3:
      jrpc_w_arr_end(c);
      break;
    case 4:
      jrpc_w_key(c, "k", 1);
      break;
    case 5:
      jrpc_w_key(c, weird, sizeof weird - 1);
      break;
    case 6:
      jrpc_w_str(c, weird + arg % 8, sizeof weird - 1 - arg % 8);
      break;
    case 7:
      jrpc_w_i64(c, x);
      break;
    case 8:
      jrpc_w_u64(c, UINT64_MAX - arg);
      break;
    case 9:
      jrpc_w_f64(c, f64s[arg % COUNT(f64s)]);
      break;
    case 10:
      jrpc_w_bool(c, (int)(arg & 1));
      break;
    case 11:
      jrpc_w_null(c);
      break;
    case 12:
      if (jrpc_raw(c, params, &s, &n) == 0)
        jrpc_w_raw(c, s, n);
      break;
    case 13:
      jrpc_error(c, codes[arg % COUNT(codes)], msgs[(arg / 8) % COUNT(msgs)]);
      break;
    case 14:
      jrpc_error_begin(c, codes[arg % COUNT(codes)],
                       msgs[(arg / 8) % COUNT(msgs)]);
      break;
    case 15: {
      size_t want = allocs[arg % COUNT(allocs)];
      char *p = jrpc_alloc(c, want);
      if (p && want <= (1 << 20))
        memset(p, 0xA5, want);
      FZ_CHECK(p || want > (1 << 20), "jrpc_alloc(%zu) failed", want);
      break;
    }
    case 16:
      /* No event loop behind this engine: defer must refuse. */
      FZ_CHECK(jrpc_defer(c) == NULL, "jrpc_defer without a host");
      break;
    case 17:
      return rets[arg % COUNT(rets)];
    case 18:
      jrpc_w_raw(c, "[1,\r\n 2 ,\n\"\\n\"]", 15);
      break;
    case 19:
      jrpc_log(c, (int)(arg % 5) - 1, msgs[arg % COUNT(msgs)]);
      break;
    case 20:
      FZ_CHECK(jrpc_peer(c) != NULL, "jrpc_peer is NULL");
      jrpc_w_i64(c, jrpc_peer(c)->family);
      break;
    case 21: {
      size_t want = arg % 2000;
      char *p = jrpc_alloc(c, want ? want : 1);
      if (p) {
        memset(p, 'y', want);
        jrpc_w_str(c, p, want);
      }
      break;
    }
    case 22:
      jrpc_w_key(c, "a\0b", 3);
      break;
    default:
      jrpc_w_f64(c, (double)x / 7.0);
      break;
    }
  }
  return 0;
}

/* fail: ["message", code] -> that error. */
static int h_fail(jrpc_call_t *c, jrpc_val_t params, void *udata) {
  const char *msg = "failed";
  size_t n;
  int64_t code = 4242;
  jrpc_as_str(c, jrpc_at(c, params, 0), &msg, &n);
  jrpc_as_i64(c, jrpc_at(c, params, 1), &code);
  if (code == JRPC_PARSE_ERROR) /* reserved for the oracle: not JSON */
    code = JRPC_INVALID_REQUEST;
  return jrpc_error(c, (int)code, msg);
}

/* fail_data: params become the data of a -32602. */
static int h_fail_data(jrpc_call_t *c, jrpc_val_t params, void *udata) {
  const char *s;
  size_t n;
  jrpc_error_begin(c, JRPC_INVALID_PARAMS, "Invalid params");
  if (jrpc_raw(c, params, &s, &n) == 0)
    jrpc_w_raw(c, s, n);
  return JRPC_EFAIL;
}

/* huge: [n] -> a string of n 'x'; [n, 1] -> n numbers (n <= 2^16). */
static int h_huge(jrpc_call_t *c, jrpc_val_t params, void *udata) {
  int64_t n = 0, kind = 0;
  jrpc_as_i64(c, jrpc_at(c, params, 0), &n);
  jrpc_as_i64(c, jrpc_at(c, params, 1), &kind);
  if (n < 0 || n > (1 << 16))
    return jrpc_error(c, JRPC_INVALID_PARAMS, "n out of range");
  if (kind != 1) {
    char *p = jrpc_alloc(c, (size_t)n + 1);
    if (!p)
      return jrpc_error(c, JRPC_INTERNAL_ERROR, "no memory");
    memset(p, 'x', (size_t)n);
    return jrpc_w_str(c, p, (size_t)n);
  }
  jrpc_w_arr(c);
  for (int64_t i = 0; i < n; i++)
    jrpc_w_i64(c, i * 1000003);
  return jrpc_w_arr_end(c);
}

/* defer: returns JRPC_ASYNC, but without a host jrpc_defer gives NULL. */
static int h_defer(jrpc_call_t *c, jrpc_val_t params, void *udata) {
  FZ_CHECK(jrpc_defer(c) == NULL, "jrpc_defer without a host");
  return JRPC_ASYNC;
}

void fz_handlers_init(jrpc__registry_t *reg, jrpc__module_t *math) {
  static const struct {
    const char *name;
    jrpc_handler_fn fn;
  } hs[] = {
      {"echo", h_echo},   {"walk", h_walk},           {"vm", h_vm},
      {"fail", h_fail},   {"fail_data", h_fail_data}, {"huge", h_huge},
      {"defer", h_defer},
  };
  char err[256];
  FZ_CHECK(jrpc__registry_init(reg) == 0, "registry_init");
  for (size_t i = 0; i < COUNT(hs); i++)
    FZ_CHECK(jrpc__registry_add(reg, hs[i].name, hs[i].fn, NULL, NULL, NULL) ==
                 0,
             "registry_add %s", hs[i].name);
  FZ_CHECK(jrpc__module_start(math, math_module_info(), "math", reg, NULL, err,
                              sizeof err) == 0,
           "math module: %s", err);
}

static fz_engine_t the_engine;

static void engine_free(void) {
  jrpc__engine_free(&the_engine.eng);
  fz_handlers_free(&the_engine.reg, &the_engine.math);
}

jrpc__engine_t *fz_engine(const char *backend) {
  fz_engine_t *g = &the_engine;
  if (g->ready)
    return &g->eng;
  fz_handlers_init(&g->reg, &g->math);
  jrpc__parser_t *p = jrpc__parser_new(backend);
  FZ_CHECK(p, "no parser backend \"%s\" in this build", backend);
  FZ_CHECK(jrpc__engine_init(&g->eng, &g->reg, NULL, p) == 0, "engine_init");
  g->eng.log = fz_log_drop;
  g->ready = 1;
  atexit(engine_free);
  return &g->eng;
}

void fz_handlers_free(jrpc__registry_t *reg, jrpc__module_t *math) {
  jrpc__module_stop(math);
  jrpc__registry_free(reg);
}

/* ------------------------------------------------------------------ */
/* Oracle                                                              */
/* ------------------------------------------------------------------ */

void fz_check_reply(const char *r, size_t n, fz_reply_t *out) {
  tu_json_t *j = tu_json_parse(r, n);
  FZ_CHECK(j, "reply is not valid JSON: %s", fz_show(r, n));
  memset(out, 0, sizeof *out);
  if (j->type == TU_J_ARRAY) {
    FZ_CHECK(j->nkids > 0, "empty batch reply");
    for (size_t i = 0; i < j->nkids; i++)
      FZ_CHECK(tu_response_ok(j->kids[i]), "batch element %zu malformed: %s", i,
               fz_show(r, n));
    out->batch = 1;
    out->count = j->nkids;
  } else {
    FZ_CHECK(tu_response_ok(j), "reply malformed: %s", fz_show(r, n));
    const tu_json_t *e = tu_json_get(j, "error");
    out->code = e ? (int)strtol(tu_json_get(e, "code")->s, NULL, 10) : 0;
    out->id_null = tu_json_get(j, "id")->type == TU_J_NULL;
  }
  tu_json_free(j);
}

static size_t depth_of(const tu_json_t *j) {
  size_t d = 0;
  for (size_t i = 0; i < j->nkids; i++) {
    size_t k = depth_of(j->kids[i]);
    if (k > d)
      d = k;
  }
  return j->type == TU_J_ARRAY || j->type == TU_J_OBJECT ? d + 1 : 0;
}

int fz_json_acceptable(const char *s, size_t n, long *top_array) {
  tu_json_t *j = tu_json_parse(s, n);
  *top_array = -1;
  if (!j)
    return 0;
  int ok = depth_of(j) <= JRPC__MAX_DEPTH;
  if (j->type == TU_J_ARRAY)
    *top_array = (long)j->nkids;
  tu_json_free(j);
  return ok;
}

void fz_check_answer(const char *in, size_t n, const char *reply, size_t rn) {
  long top;
  int ok = fz_json_acceptable(in, n, &top);
  if (!reply) {
    FZ_CHECK(ok, "no reply to invalid JSON: %s", fz_show(in, n));
    return;
  }
  fz_reply_t r;
  fz_check_reply(reply, rn, &r);
  if (!ok) {
    FZ_CHECK(!r.batch && r.code == JRPC_PARSE_ERROR && r.id_null,
             "invalid JSON not answered -32700 (id null): %s", fz_show(in, n));
    return;
  }
  FZ_CHECK(r.batch || r.code != JRPC_PARSE_ERROR,
           "valid JSON answered -32700: %s", fz_show(in, n));
  if (r.batch)
    FZ_CHECK(top > 0 && r.count <= (size_t)top,
             "a reply of %zu responses to %ld requests: %s", r.count, top,
             fz_show(in, n));
}

size_t fz_unframe(int framing, const char *buf, size_t n, const char ***fp,
                  size_t **fn) {
  size_t cap = 16, k = 0, pos = 0;
  *fp = malloc(cap * sizeof **fp);
  *fn = malloc(cap * sizeof **fn);
  FZ_CHECK(*fp && *fn, "out of memory");
  while (pos < n) {
    const char *p;
    size_t len;
    if (framing == JRPC_FRAMING_LENGTH) {
      FZ_CHECK(n - pos >= 4, "reply stream ends in a partial header");
      const unsigned char *h = (const unsigned char *)buf + pos;
      len = (size_t)((uint32_t)h[0] << 24 | (uint32_t)h[1] << 16 |
                     (uint32_t)h[2] << 8 | h[3]);
      FZ_CHECK(n - pos - 4 >= len, "reply frame of %zu bytes cut short", len);
      p = buf + pos + 4;
      pos += 4 + len;
    } else {
      const char *nl = memchr(buf + pos, '\n', n - pos);
      FZ_CHECK(nl, "reply stream ends without a newline: %s",
               fz_show(buf + pos, n - pos));
      p = buf + pos;
      len = (size_t)(nl - p);
      FZ_CHECK(!memchr(p, '\r', len), "raw CR in a newline reply");
      pos += len + 1;
    }
    FZ_CHECK(len > 0, "empty reply frame");
    if (k == cap) {
      cap *= 2;
      *fp = realloc(*fp, cap * sizeof **fp);
      *fn = realloc(*fn, cap * sizeof **fn);
      FZ_CHECK(*fp && *fn, "out of memory");
    }
    (*fp)[k] = p;
    (*fn)[k] = len;
    k++;
  }
  return k;
}

void fz_out_gather(jrpc__outbuf_t *o, fz_bytes_t *b) {
  size_t n;
  char *s = fz_out_take(o, &n);
  b->p = realloc(b->p, b->n + n + 1);
  FZ_CHECK(b->p, "out of memory");
  memcpy(b->p + b->n, s, n);
  b->n += n;
  b->p[b->n] = '\0';
  free(s);
}

char *fz_out_take(jrpc__outbuf_t *o, size_t *n) {
  uint64_t pending = jrpc__out_pending(o);
  char *b = malloc((size_t)pending + 1);
  FZ_CHECK(b, "out of memory");
  size_t got = jrpc__out_copy(o, b, (size_t)pending);
  FZ_CHECK(got == pending, "out_copy gave %zu of %llu", got,
           (unsigned long long)pending);
  jrpc__out_consume(o, got);
  b[got] = '\0';
  *n = got;
  return b;
}

const char *fz_show(const char *s, size_t n) {
  /* A few buffers in turn, so that one message may show two texts. */
  static char bufs[4][4 * 300 + 32];
  static unsigned turn;
  char *buf = bufs[turn++ % 4];
  size_t o = 0;
  for (size_t i = 0; i < n && i < 300; i++) {
    unsigned char ch = (unsigned char)s[i];
    if (ch >= 0x20 && ch < 0x7f && ch != '\\')
      buf[o++] = (char)ch;
    else
      o += (size_t)snprintf(buf + o, sizeof bufs[0] - o, "\\x%02x", ch);
  }
  if (n > 300)
    o += (size_t)snprintf(buf + o, sizeof bufs[0] - o, "...(%zu bytes)", n);
  buf[o] = '\0';
  return buf;
}
