/* parser_native.c - jrpcd's own JSON tokenizer.
 *
 * One pass over the frame validates it completely (RFC 8259: structure,
 * separators, literals, numbers, strings with their escapes, surrogate
 * pairs and UTF-8, nesting depth) and writes jsmn-format tokens with their
 * skip links already set (tokdoc.h), so the jsmn backend's views work on
 * the result unchanged. The jsmn backend needs jsmn's pass and then a
 * second walk to validate what jsmn lets through and to link the tokens;
 * here both happen where each token is found, plain string bytes are
 * skipped by SIMD (strspan.h), and small integers need no number parser.
 * The envelope of each request is read in the same pass: a key of a
 * request object is recognised when it is scanned, and the member is
 * recorded when its value is complete, and requests of the usual shape
 * take shortcuts (native_tok.h) that write their tokens by the bytes. */
#include <stdlib.h>
#include <string.h>

#include "common.h"
#include "jsontext.h"
#include "native_tok.h"
#include "tokdoc.h"

typedef struct native_backend {
  jrpc__parser_t base;
  jrpc__tokdoc_t doc;
} native_backend_t;

static const jrpc__parser_ops_t native_ops;

/* Bytes that may continue a number; the grammar is checked on the span. */
static const uint8_t num_byte[256] = {
    ['0'] = 1, ['1'] = 1, ['2'] = 1, ['3'] = 1, ['4'] = 1,
    ['5'] = 1, ['6'] = 1, ['7'] = 1, ['8'] = 1, ['9'] = 1,
    ['-'] = 1, ['+'] = 1, ['.'] = 1, ['e'] = 1, ['E'] = 1};

typedef struct scan {
  jsmntok_t *t;
  uint32_t cap;
  size_t most; /* tokens a frame of this size can hold */
  jrpc__arena_t *a;
  /* The envelopes of the requests (the root object, or the elements of a
   * root array), filled as their members are scanned; env_cap entries,
   * the first env_ready of them zeroed or filled (an entry is zeroed when
   * its element starts, not when the array grows: clearing a large batch's
   * array in one memset costs more than its stores one by one). Batch
   * elements from max_batch on are not read: such a batch is refused
   * whole. */
  jrpc__envelope_t *env;
  uint32_t env_cap;
  uint32_t env_ready;
  uint32_t max_batch;
  const jrpc__doc_t *hdr;
} scan_t;

/* Doubles the token array (a token needs at least one byte of input, so
 * `most` always suffices). */
static int grow(scan_t *s, uint32_t n) {
  size_t ncap = (size_t)s->cap * 2;
  if (ncap > s->most)
    ncap = s->most;
  jsmntok_t *nt = jrpc__arena_alloc(s->a, ncap * sizeof(*nt));
  if (!nt)
    return JRPC_ENOMEM;
  memcpy(nt, s->t, n * sizeof(*nt));
  s->t = nt;
  s->cap = (uint32_t)ncap;
  return 0;
}

/* Room for envelope k + 1 (k < max_batch); the new entries are not
 * zeroed (env_at does that). */
static int grow_env(scan_t *s, uint32_t k) {
  size_t ncap = (size_t)s->env_cap * 2;
  if (ncap < 16)
    ncap = 16;
  if (ncap <= k)
    ncap = (size_t)k + 1;
  if (ncap > s->max_batch)
    ncap = s->max_batch;
  jrpc__envelope_t *ne = jrpc__arena_alloc(s->a, ncap * sizeof(*ne));
  if (!ne)
    return JRPC_ENOMEM;
  memcpy(ne, s->env, s->env_ready * sizeof(*ne));
  s->env = ne;
  s->env_cap = (uint32_t)ncap;
  return 0;
}

/* Zeroes one envelope. By four vector stores where there is SSE2: a
 * memset of the 64 bytes compiles to `rep stos`, slow to start. */
static inline void env_clear(jrpc__envelope_t *e) {
#ifdef JRPC__SPAN_SSE2
  _Static_assert(sizeof(*e) == 64, "four 16-byte stores clear an envelope");
  __m128i z = _mm_setzero_si128();
  __m128i *v = (__m128i *)(void *)e;
  _mm_storeu_si128(v, z);
  _mm_storeu_si128(v + 1, z);
  _mm_storeu_si128(v + 2, z);
  _mm_storeu_si128(v + 3, z);
#else
  memset(e, 0, sizeof(*e));
#endif
}

/* Envelope k (k < env_cap), zeroed with those before it not yet used. */
static inline __attribute__((always_inline)) jrpc__envelope_t *
env_at(scan_t *s, uint32_t k) {
  if (s->env_ready <= k) {
    if (k > s->env_ready) /* scalar elements before this one */
      memset(&s->env[s->env_ready], 0, (k - s->env_ready) * sizeof(*s->env));
    env_clear(&s->env[k]);
    s->env_ready = k + 1;
  }
  return &s->env[k];
}

/* A batch of len bytes: room for the envelopes of as many elements as
 * such a batch usually has (a request is rarely under 32 bytes), so that
 * the array seldom grows (each growth copies it). */
static int presize_env(scan_t *s, size_t len) {
  size_t want = len / 32 + 16;
  if (want > s->max_batch)
    want = s->max_batch;
  if (want <= s->env_cap)
    return 0;
  return grow_env(s, (uint32_t)want - 1);
}

/* The byte at e is readable (JRPC__PAD): compact JSON, where the next byte
 * is never whitespace, pays one compare per gap, the bound is looked at
 * only for a byte that may be whitespace. */
#define SKIP_WS()                                                              \
  while (JRPC__UNLIKELY(*p <= ' ') && p < e && jrpc__is_ws(*p))                \
  p++
#define FAIL(msg)                                                              \
  do {                                                                         \
    *why = (msg);                                                              \
    return 0;                                                                  \
  } while (0)
#define NEED_TOKEN()                                                           \
  do {                                                                         \
    if (sized && JRPC__UNLIKELY(n == s->cap)) {                                \
      if (grow(s, n))                                                          \
        return JRPC_ENOMEM;                                                    \
      t = s->t;                                                                \
    }                                                                          \
  } while (0)
/* Token n is the small integer from v to q (small_int's answer), the last
 * element of its container when `closing` follows, else the scan goes on
 * after the ','. */
#define SMALL_INT_ELEMENT(v, q, closing)                                       \
  do {                                                                         \
    NEED_TOKEN();                                                              \
    int_token(&t[n], base, v, q, n);                                           \
    n++;                                                                       \
    if (*(q) == (closing)) {                                                   \
      p = (q);                                                                 \
      goto close;                                                              \
    }                                                                          \
    elems++;                                                                   \
    p = (q) + 1;                                                               \
  } while (0)
/* The params value read whole from the params shortcut: its container
 * token c opened at p; closed with k elements (p just past it), the
 * envelope's params set; or handed over to the general code with k
 * elements read, as if that had opened it (element k + 1 next). */
#define PARAMS_OPEN(c, jtype)                                                  \
  do {                                                                         \
    NEED_TOKEN();                                                              \
    t[c].type = (jtype);                                                       \
    t[c].start = (int)(p - base);                                              \
    n++;                                                                       \
    p++;                                                                       \
  } while (0)
#define PARAMS_CLOSED(c, k, ty)                                                \
  do {                                                                         \
    t[c].size = (int)(k);                                                      \
    t[c].end = (int)(p - base);                                                \
    t[c].parent = (int)n;                                                      \
    jrpc__env_record(env, JRPC__M_PARAMS, (ty), s->hdr, (c), t[c].start,       \
                     t[c].end, 0);                                             \
    goto after;                                                                \
  } while (0)
/* The next small integer, v to w, of the container; it closes it when
 * `closing` follows. */
#define PARAMS_INT(v, w, c, k, closing, ty)                                    \
  do {                                                                         \
    NEED_TOKEN();                                                              \
    int_token(&t[n], base, v, w, n);                                           \
    n++;                                                                       \
    k++;                                                                       \
    p = (w) + 1;                                                               \
    if (*(w) == (closing))                                                     \
      PARAMS_CLOSED(c, k, ty);                                                 \
  } while (0)
#define PARAMS_HAND_OVER(c, k, obj)                                            \
  do {                                                                         \
    t[top].size = elems;                                                       \
    cmember = JRPC__M_PARAMS;                                                  \
    top = (c);                                                                 \
    stack[depth++] = (c);                                                      \
    in_obj = (obj);                                                            \
    elems = (int)(k) + 1;                                                      \
  } while (0)
/* A request object that starts with canon_head at p, env its envelope,
 * opened as token n (pushed, the innermost container), its head and
 * method read; the scan goes on after the method. */
#define OPEN_CANON()                                                           \
  do {                                                                         \
    tk = &t[n];                                                                \
    tk->type = JSMN_OBJECT;                                                    \
    tk->start = (int)(p - base);                                               \
    env->is_object = 1;                                                        \
    top = n;                                                                   \
    stack[depth++] = top;                                                      \
    in_obj = 1;                                                                \
    const unsigned char *mq = canon_method(t, n + 1, base, p, e, env);         \
    if (!mq)                                                                   \
      FAIL("invalid string");                                                  \
    n += 5;                                                                    \
    elems = 2;                                                                 \
    p = mq + 1;                                                                \
    goto method_done;                                                          \
  } while (0)

/* The one pass. Returns 0 with *why NULL for valid JSON (tokens in s->t,
 * their number in *count), 0 with *why set for invalid input, or
 * JRPC_ENOMEM. The innermost open container is kept in locals (its token,
 * whether it is an object, its element count so far); the stack holds the
 * outer ones, whose counts wait in their tokens' `size`. */
static inline __attribute__((always_inline)) int
scan_frame(scan_t *s, const char *js, size_t len, uint32_t *count,
           const char **why, const int sized) {
  const unsigned char *const base = (const unsigned char *)js;
  const unsigned char *p = base, *const e = base + len;
  uint32_t stack[JRPC__MAX_DEPTH]; /* open containers, outermost first */
  int depth = 0;
  uint32_t n = 0;
  jsmntok_t *t = s->t;
  jsmntok_t *tk;
  uint32_t top = 0; /* innermost open container (when depth > 0) */
  int in_obj = 0;   /* ...is an object */
  int elems = 0;    /* ...has this many elements so far */
  int esc;
  jrpc_type_t ty;
  /* Request objects are the root object (their keys at depth 1) or the
   * root array's elements (keys at depth 2); `env` is the one being read.
   * The envelope member its current key names waits in `member` until
   * the value is scanned; if the value is a container, in `cmember` until
   * the container closes. */
  int req_depth = 1;
  jrpc__envelope_t *env = NULL;
  int member = 0, cmember = 0;

  if (len > CANON_HEAD_LEN && (!sized || s->cap >= 6) && canon_head_at(p)) {
    /* The usual request: its object opened here, the value code skipped. */
    env = s->env;
    OPEN_CANON();
  }

value:
  SKIP_WS();
  if (p == e)
    FAIL(n ? "incomplete JSON" : "empty frame");
  NEED_TOKEN();
  tk = &t[n];
  switch (*p) {
  case '{':
  case '[':
  open:
    if (depth == JRPC__MAX_DEPTH)
      FAIL("nested too deeply");
    if (depth)
      t[top].size = elems;
    in_obj = *p == '{';
    tk->type = in_obj ? JSMN_OBJECT : JSMN_ARRAY;
    tk->start = (int)(p - base);
    if (depth == 0 && in_obj) {
      env = s->env;
      env->is_object = 1;
    } else if (depth == 0) {
      req_depth = 2;
      if (presize_env(s, len))
        return JRPC_ENOMEM;
    } else if (depth == 1 && req_depth == 2) {
      uint32_t k = (uint32_t)elems - 1; /* the batch element this is */
      env = NULL;
      if (in_obj && k < s->max_batch) {
        if (k >= s->env_cap && grow_env(s, k))
          return JRPC_ENOMEM;
        env = env_at(s, k);
        env->is_object = 1;
      }
    }
    if (JRPC__UNLIKELY(member)) { /* the value of an envelope member */
      cmember = member;
      member = 0;
    }
    top = n++;
    stack[depth++] = top;
    elems = 0;
    if (in_obj && env && depth == req_depth && e - p > CANON_HEAD_LEN &&
        (!sized || s->cap - n >= 5) && canon_head_at(p)) {
      const unsigned char *q = canon_method(t, n, base, p, e, env);
      if (!q)
        FAIL("invalid string");
      n += 4;
      elems = 2;
      p = q + 1;
    method_done:
      if (canon_params_at(p, e)) {
        /* ,"params": next, as usual: its key token, and its value is the
         * envelope's params. */
        set_token(&t[n], JSMN_STRING, (int)(p + 2 - base), (int)(p + 8 - base),
                  STR_KEY, (int)n + 1);
        n++;
        elems = 3;
        p += 10;
        if (e - p > 1 && *p == '{' && p[1] == '"') {
          /* {"a":1,"b":2}: members "key":N, the usual named params, read
           * whole here as the array below. */
          uint32_t obj = n, k = 0;
          PARAMS_OPEN(obj, JSMN_OBJECT);
          for (const unsigned char *kq, *v, *w;
               *p == '"' && (w = small_member(p, e, &kq, &v));) {
            NEED_TOKEN();
            string_token(&t[n], base, p, kq, STR_KEY);
            t[n].parent = (int)n + 1;
            n++;
            PARAMS_INT(v, w, obj, k, '}', JRPC_T_OBJECT);
          }
          /* Another kind of member: the general code goes on inside. */
          PARAMS_HAND_OVER(obj, k, 1);
          SKIP_WS();
          goto key;
        }
        if (e - p > 1 && *p == '[' && (unsigned)(p[1] - '1') <= 8) {
          /* [1,2]: an array of small integers, the usual positional
           * params, read whole here without going on the stack. */
          uint32_t arr = n, k = 0;
          PARAMS_OPEN(arr, JSMN_ARRAY);
          for (const unsigned char *v;
               (unsigned)(*p - '1') <= 8 && (v = small_int(p, e, ']'));) {
            PARAMS_INT(p, v, arr, k, ']', JRPC_T_ARRAY);
          }
          /* Something else in it: the general code goes on inside the
           * array, as if it had opened it (element k + 1 next). */
          PARAMS_HAND_OVER(arr, k, 0);
          goto value;
        }
        member = JRPC__M_PARAMS;
        if (p < e && (*p == '[' || *p == '{')) { /* open it here */
          NEED_TOKEN();
          tk = &t[n];
          goto open;
        }
        goto value;
      }
      goto after;
    }
    p++;
    SKIP_WS();
    if (p == e)
      FAIL("incomplete JSON");
    if (*p == (in_obj ? '}' : ']'))
      goto close;
    elems = 1;
    if (in_obj) {
      /* Members "key":N (named params): a short plain key and a small
       * integer followed by ',' or the '}' are written here, as the run
       * of integers below. Not in a request object, whose keys the
       * envelope needs; any other member ends the run. */
      if (depth != req_depth || !env)
        for (const unsigned char *kq, *v, *q;
             *p == '"' && (q = small_member(p, e, &kq, &v));) {
          NEED_TOKEN();
          string_token(&t[n], base, p, kq, STR_KEY);
          t[n].parent = (int)n + 1;
          n++;
          SMALL_INT_ELEMENT(v, q, '}');
        }
      SKIP_WS();
      goto key;
    }
    /* A run of small integers ([1,2], ids, offsets): each is complete
     * where a ',' or the ']' follows its digits, and is written here
     * without the round trip through the value and separator code. Any
     * other element ends the run and goes there. */
    for (const unsigned char *q;
         (unsigned)(*p - '1') <= 8 && (q = small_int(p, e, ']'));) {
      SMALL_INT_ELEMENT(p, q, ']');
    }
    goto value;
  case '"': {
    const unsigned char *q = scan_string(p, e, &esc);
    if (!q)
      FAIL("invalid string");
    string_token(tk, base, p, q, esc ? STR_ESC : 0);
    p = q + 1;
    ty = JRPC_T_STRING;
    break;
  }
  case 't':
  case 'f':
  case 'n': {
    const char *word = *p == 't' ? "true" : *p == 'f' ? "false" : "null";
    size_t wn = *p == 'f' ? 5 : 4;
    if ((size_t)(e - p) < wn || memcmp(p, word, wn) != 0)
      FAIL("invalid literal");
    ty = *p == 't' ? JRPC_T_TRUE : *p == 'f' ? JRPC_T_FALSE : JRPC_T_NULL;
    tk->type = JSMN_PRIMITIVE;
    tk->start = (int)(p - base);
    p += wn;
    tk->end = (int)(p - base);
    esc = 0;
    break;
  }
  default: {
    /* 1 to 9 then digits only, up to a byte that cannot continue a number:
     * valid as it stands. Anything else has its whole span checked. */
    const unsigned char *q = p;
    if ((unsigned)(*p - '1') <= 8)
      for (q++; q < e && (unsigned)(*q - '0') <= 9;)
        q++;
    if (JRPC__UNLIKELY(q == p || (q < e && num_byte[*q]))) {
      if (*p != '-' && (unsigned)(*p - '0') > 9)
        FAIL("invalid JSON");
      while (q < e && num_byte[*q])
        q++;
      if (!jrpc__num_valid((const char *)p, (size_t)(q - p)))
        FAIL("invalid number");
    }
    tk->type = JSMN_PRIMITIVE;
    tk->start = (int)(p - base);
    tk->end = (int)(q - base);
    p = q;
    ty = JRPC_T_NUMBER;
    esc = 0;
  }
  }
  if (JRPC__UNLIKELY(member)) {
    jrpc__env_record(env, member, ty, s->hdr, n, tk->start, tk->end, esc);
    member = 0;
  }
  tk->parent = (int)n + 1; /* skip link of a scalar */
  n++;

after:
  SKIP_WS();
  if (depth == 0) {
    if (p != e)
      FAIL("trailing characters after the JSON value");
    *count = n;
    *why = NULL;
    return 0;
  }
  if (p == e)
    FAIL("incomplete JSON");
  if (*p == ',') {
    elems++;
    if (in_obj) {
      if (depth == req_depth && env && e - p >= 6 &&
          jrpc__load32((const char *)p) == jrpc__load32(canon_id) &&
          p[4] == '"' && p[5] == ':') {
        /* ,"id": in a request object: its key token, the value next; a
         * small integer that ends the object (the usual last member) is
         * recorded and closes it here. */
        NEED_TOKEN();
        set_token(&t[n], JSMN_STRING, (int)(p + 2 - base), (int)(p + 4 - base),
                  STR_KEY, (int)n + 1);
        n++;
        p += 6;
        const unsigned char *q;
        if ((unsigned)(*p - '1') <= 8 && (q = small_int(p, e, '}')) &&
            *q == '}') {
          NEED_TOKEN();
          int_token(&t[n], base, p, q, n);
          jrpc__env_record(env, JRPC__M_ID, JRPC_T_NUMBER, s->hdr, n,
                           (int)(p - base), (int)(q - base), 0);
          n++;
          /* The request object closes (nothing of it is on the stack
           * above it); in a batch, a next request object that follows
           * at once is opened without the separator and value code. */
          t[top].size = elems;
          t[top].end = (int)(q + 1 - base);
          t[top].parent = (int)n;
          p = q + 1;
          if (--depth == 0)
            goto after;
          top = stack[depth - 1];
          in_obj = 0; /* the root array */
          elems = t[top].size;
          if (e - p > 1 && p[0] == ',' && p[1] == '{') {
            elems++;
            p++;
            uint32_t k = (uint32_t)elems - 1; /* its batch element */
            if (k < s->env_cap && e - p > CANON_HEAD_LEN &&
                (!sized || s->cap - n >= 6) && canon_head_at(p)) {
              /* A usual request again: opened as the root one is. */
              t[top].size = elems;
              env = env_at(s, k);
              OPEN_CANON();
            }
            NEED_TOKEN();
            tk = &t[n];
            goto open;
          }
          goto after;
        }
        member = JRPC__M_ID;
        goto value;
      }
      p++;
      SKIP_WS();
      goto key;
    }
    p++;
    goto value;
  }
  if (*p != (in_obj ? '}' : ']'))
    FAIL("missing or misplaced separator");

close:
  t[top].size = elems;
  t[top].end = (int)(p + 1 - base);
  t[top].parent = (int)n; /* skip link: the token after the subtree */
  p++;
  if (JRPC__UNLIKELY(cmember) && depth == req_depth + 1) {
    jrpc__env_record(env, cmember, in_obj ? JRPC_T_OBJECT : JRPC_T_ARRAY,
                     s->hdr, top, t[top].start, t[top].end, 0);
    cmember = 0;
  }
  if (--depth) {
    top = stack[depth - 1];
    in_obj = t[top].type == JSMN_OBJECT;
    elems = t[top].size;
  }
  goto after;

key:
  if (p == e || *p != '"')
    FAIL("object member without a string key");
  NEED_TOKEN();
  tk = &t[n];
  {
    const unsigned char *q = scan_string(p, e, &esc);
    if (!q)
      FAIL("invalid string");
    string_token(tk, base, p, q, STR_KEY | (esc ? STR_ESC : 0));
    tk->parent = (int)n + 1;
    n++;
    if (depth == req_depth && env) { /* a member of a request object */
      const char *ks = (const char *)p + 1;
      size_t kn = (size_t)(q - p - 1);
      member = esc ? jrpc__tok_member_escaped(ks, kn, s->a)
                   : jrpc__tok_member_raw(ks, kn);
    }
    p = q + 1;
  }
  if (JRPC__UNLIKELY(p == e || *p != ':')) {
    SKIP_WS();
    if (p == e || *p != ':')
      FAIL("missing ':' after an object key");
  }
  p++;
  goto value;
}

/* Every token starts at a byte of its own, so a frame of len bytes has at
 * most len + 1 of them: small frames get that many at once and the scan
 * never checks for room; larger ones start smaller and grow. Up to 8 KiB
 * (a batch of 100 small calls is 6 KB): at most 160 KiB of the worker's
 * arena, which keeps it from frame to frame (no malloc once grown). */
#define UNSIZED_MAX 8192

static int scan_small(scan_t *s, const char *js, size_t len, uint32_t *count,
                      const char **why) {
  return scan_frame(s, js, len, count, why, 0);
}

static int scan_large(scan_t *s, const char *js, size_t len, uint32_t *count,
                      const char **why) {
  return scan_frame(s, js, len, count, why, 1);
}

static int native_parse(jrpc__parser_t *p, const char *js, size_t len,
                        jrpc__arena_t *a, uint32_t max_batch,
                        jrpc__parsed_t *out) {
  native_backend_t *b = (native_backend_t *)p;
  jrpc__tokdoc_t *d = &b->doc;
  if (jrpc__tokdoc_begin(d, js, len, out) != 0)
    return 0;

  scan_t s;
  s.most = len + 1;
  size_t cap = len <= UNSIZED_MAX ? s.most : len / 4 + 16;
  s.cap = (uint32_t)(cap > s.most ? s.most : cap);
  s.a = a;
  /* The first envelope and the tokens in one allocation. */
  s.env = jrpc__arena_alloc(a, sizeof(*s.env) + s.cap * sizeof(*s.t));
  if (!s.env)
    return JRPC_ENOMEM;
  s.t = (jsmntok_t *)(void *)(s.env + 1);
  env_clear(s.env);
  s.env_cap = 1;
  s.env_ready = 1;
  s.max_batch = max_batch;
  s.hdr = &d->hdr;
  uint32_t n = 0;
  int rc = len <= UNSIZED_MAX ? scan_small(&s, js, len, &n, &out->why)
                              : scan_large(&s, js, len, &n, &out->why);
  if (rc)
    return rc;
  if (out->why) {
    out->status = JRPC__PARSE_INVALID;
    return 0;
  }
  d->t = s.t;
  d->n = n;

  const jsmntok_t *t = s.t;
  if (t[0].type != JSMN_ARRAY) {
    /* One request: its envelope was read during the scan. */
    out->count = 1;
    out->env = s.env;
    return 0;
  }
  out->is_batch = 1;
  out->count = (uint32_t)t[0].size;
  if (out->count > max_batch) {
    out->status = JRPC__PARSE_BATCH_TOO_LARGE;
    return 0;
  }
  if (out->count == 0)
    return 0;
  /* Elements after the last object have no entry yet. */
  if (out->count > s.env_cap && grow_env(&s, out->count - 1))
    return JRPC_ENOMEM;
  env_at(&s, out->count - 1);
  out->env = s.env;
  return 0;
}

static const jrpc__parser_ops_t native_ops = {
    "native",
    jrpc__tokdoc_parser_free,
    native_parse,
    JRPC__TOKDOC_VIEWS,
};

jrpc__parser_t *jrpc__parser_native_new(void) {
  native_backend_t *b = calloc(1, sizeof(*b));
  if (!b)
    return NULL;
  b->base.ops = &native_ops;
  b->doc.hdr.ops = &native_ops;
  return &b->base;
}
