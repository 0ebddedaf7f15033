/* parser_jsmn.c - the jsmn backend, plus the validation jsmn lacks.
 *
 * jsmn (strict mode, parent links: without them closing a container scans
 * backwards and a large batch costs quadratic time) splits the frame into
 * tokens but accepts much that is not JSON: missing or doubled separators,
 * misspelt literals, bad numbers, raw control characters and invalid UTF-8
 * in strings, lone surrogate escapes. One walk over the tokens then does
 * three jobs at once: it checks every byte between tokens (only whitespace
 * and the one separator the grammar expects there), checks the text of
 * every string and primitive, and reads the JSON-RPC envelope of each
 * request. The walk also turns jsmn's parent links, no longer needed, into
 * "skip" links (index of the token after a value's subtree) so that views
 * step from element to element in O(1).
 *
 * jsmn's own work is linear only on sane input: see structure_ok(), which
 * refuses the frames that would make it quadratic before jsmn sees them.
 */
#define JSMN_STATIC
#define JSMN_STRICT
#define JSMN_PARENT_LINKS
#include <jsmn.h>

#include <stdlib.h>
#include <string.h>

#include "common.h"
#include "jsontext.h"
#include "parser.h"
#include "tokdoc.h"

typedef struct jsmn_backend {
  jrpc__parser_t base;
  jrpc__jsmn_mode_t mode;
  jrpc__tokdoc_t doc;
} jsmn_backend_t;

static const jrpc__parser_ops_t jsmn_ops;

static inline int primitive_ok(const char *s, size_t n) {
  /* Small integers are most numbers in requests: no call for them. */
  if (n <= 8 && s[0] >= '1' && s[0] <= '9') {
    size_t i = 1;
    while (i < n && s[i] >= '0' && s[i] <= '9')
      i++;
    if (i == n)
      return 1;
  }
  switch (s[0]) {
  case 't':
    return n == 4 && memcmp(s, "true", 4) == 0;
  case 'f':
    return n == 5 && memcmp(s, "false", 5) == 0;
  case 'n':
    return n == 4 && memcmp(s, "null", 4) == 0;
  default:
    return jrpc__num_valid(s, n);
  }
}

/* Where the walk stands: bytes before `cur` are accounted for. */
typedef struct walk_pos {
  size_t cur;
  int depth; /* open containers */
  int open;  /* innermost open container, -1 at the top */
} walk_pos_t;

/* The gap before a token starting at byte s: whitespace, the closing
 * brackets of containers ending there (each sets its container's skip
 * link to `next`), then the separator `sep` if one is due, then
 * whitespace. Compact JSON has exactly the separator, which the first test
 * settles. */
static inline __attribute__((always_inline)) int
gap_check(jsmntok_t *t, const char *js, walk_pos_t *w, size_t s, char sep,
          uint32_t next, int validate, int envelope) {
  size_t cur = w->cur;
  if (s == cur + (sep != 0) && (!sep || js[cur] == sep))
    return 1;
  size_t q = cur;
  int closed = 0;
  for (;;) {
    while (q < s && jrpc__is_ws((unsigned char)js[q]))
      q++;
    if (q < s && (js[q] == ']' || js[q] == '}') && w->open >= 0) {
      int pc = t[w->open].parent;
      if (envelope)
        t[w->open].parent = (int)next; /* skip link */
      w->open = pc >= 0 && t[pc].type == JSMN_STRING ? t[pc].parent : pc;
      w->depth--;
      closed++;
      q++;
      continue;
    }
    break;
  }
  if (!validate)
    return 1;
  if (sep) {
    if (q >= s || js[q] != sep || (sep == ':' && closed))
      return 0;
    q++;
    while (q < s && jrpc__is_ws((unsigned char)js[q]))
      q++;
  }
  return q == s;
}

/* The token's own text: strings and primitives checked, containers
 * opened. Moves the cursor past what it accounts for. */
static inline __attribute__((always_inline)) int
body_check(const jsmntok_t *tk, uint32_t i, const char *js, walk_pos_t *w,
           int validate, int want_esc, int *esc, const char **why) {
  const char *p = js + tk->start;
  size_t n = (size_t)(tk->end - tk->start);
  switch (tk->type) {
  case JSMN_STRING:
    if (validate) {
      if (!jrpc__str_valid_fast(p, n, esc)) {
        *why = "invalid string";
        return 0;
      }
    } else if (want_esc) {
      *esc = memchr(p, '\\', n) != NULL;
    }
    w->cur = (size_t)tk->end + 1;
    return 1;
  case JSMN_PRIMITIVE:
    if (validate && !primitive_ok(p, n)) {
      *why = "invalid number or literal";
      return 0;
    }
    w->cur = (size_t)tk->end;
    return 1;
  default:
    if (++w->depth > JRPC__MAX_DEPTH) {
      *why = "nested too deeply";
      return 0;
    }
    w->open = (int)i;
    w->cur = (size_t)tk->start + 1;
    return 1;
  }
}

/* The walk, in token order, using jsmn's parent links (jsmn has already
 * checked bracket balance and type). Between two tokens only whitespace,
 * the closing brackets of containers that end there, and then the one
 * separator the grammar expects may stand: ':' before a member value, ','
 * before any element or key but the first of its container. An object's
 * key and its value are handled in one step: the value's place is known
 * from the key. VALIDATE and ENVELOPE are constants at every call site, so
 * the compiler emits one specialised copy per mode. */
static inline __attribute__((always_inline)) int
walk(jrpc__tokdoc_t *d, jrpc__parsed_t *out, jrpc__arena_t *a, int validate,
     int envelope) {
  const char *js = d->hdr.buf;
  jsmntok_t *t = d->t;
  const uint32_t n = d->n;
  walk_pos_t w = {0, 0, -1};
  int req = -1;       /* the request object being read */
  int32_t env_k = -1; /* its envelope */
  uint32_t elem = 0;  /* batch elements seen */
  const int batch = out->is_batch;
  jrpc__envelope_t *env = envelope ? out->env : NULL;

  for (uint32_t i = 0; i < n; i++) {
    jsmntok_t *tk = &t[i];
    const int p = tk->parent;
    const int type = tk->type;
    int is_key = 0;
    char sep = 0;
    if (p < 0) {
      if (validate && i != 0) {
        out->why = "more than one JSON value";
        return 0;
      }
    } else {
      const int ptype = t[p].type;
      sep = (uint32_t)p + 1 == i ? 0 : ',';
      if (ptype == JSMN_OBJECT) {
        is_key = 1;
        if (validate && (type != JSMN_STRING || tk->size != 1 || i + 1 >= n)) {
          out->why = "object member without a string key and a value";
          return 0;
        }
      } else if (ptype != JSMN_ARRAY) {
        /* Member values are taken with their keys: anything else hanging
         * off a string or primitive came from a stray ':'. */
        out->why = "':' outside an object";
        return 0;
      }
    }
    if (!gap_check(t, js, &w, (size_t)tk->start - (type == JSMN_STRING), sep, i,
                   validate, envelope)) {
      out->why = "missing or misplaced separator";
      return 0;
    }

    if (is_key) {
      /* The key... */
      int member = JRPC__M_OTHER, esc = 0;
      int req_key = env && p == req;
      if (req_key) {
        /* spelt exactly "method" (etc.), it is plain ASCII: valid as it
         * stands, and there is no escape to decode. */
        member =
            jrpc__tok_member_raw(js + tk->start, (size_t)(tk->end - tk->start));
      }
      if (member == JRPC__M_OTHER) {
        if (!body_check(tk, i, js, &w, validate, req_key, &esc, &out->why))
          return 0;
        if (req_key && esc)
          member = jrpc__tok_member_escaped(js + tk->start,
                                            (size_t)(tk->end - tk->start), a);
      } else {
        w.cur = (size_t)tk->end + 1;
      }
      /* ...and its value, the next token. */
      uint32_t j = i + 1;
      if (j >= n)
        break;
      jsmntok_t *vt = &t[j];
      if (validate && vt->parent != (int)i) {
        out->why = "object member without a value";
        return 0;
      }
      if (!gap_check(t, js, &w, (size_t)vt->start - (vt->type == JSMN_STRING),
                     ':', j, validate, envelope)) {
        out->why = "missing or misplaced ':'";
        return 0;
      }
      esc = 0;
      if (!body_check(vt, j, js, &w, validate, req_key, &esc, &out->why))
        return 0;
      if (req_key)
        jrpc__tok_record_member(&env[env_k], member, d, j, esc);
      if (envelope && vt->type != JSMN_OBJECT && vt->type != JSMN_ARRAY)
        vt->parent = (int)j + 1; /* skip link of a scalar */
      i = j;
      continue;
    }

    int esc = 0;
    if (!body_check(tk, i, js, &w, validate, 0, &esc, &out->why))
      return 0;
    if (env) {
      if (p < 0) {
        if (type == JSMN_OBJECT) {
          req = 0;
          env_k = 0;
          env[0].is_object = 1;
        }
      } else if (batch && p == 0) {
        /* An element of the batch: a request if it is an object. */
        uint32_t k = elem++;
        env[k].is_object = type == JSMN_OBJECT;
        if (type == JSMN_OBJECT) {
          req = (int)i;
          env_k = (int32_t)k;
        }
      }
    }
    if (envelope && type != JSMN_OBJECT && type != JSMN_ARRAY)
      tk->parent = (int)i + 1; /* skip link of a scalar */
  }

  /* The trailing gap: the closers of every container still open, then
   * whitespace. */
  if (!gap_check(t, js, &w, d->hdr.len, 0, n, validate, envelope) ||
      (validate && w.open >= 0)) {
    out->why = "trailing characters after the JSON value";
    return 0;
  }
  return 1;
}

/* Bytes that matter to nesting: brackets and the quote. */
static const uint8_t nest_byte[256] = {
    ['['] = 1, ['{'] = 1, [']'] = 2, ['}'] = 2, ['"'] = 3, [':'] = 4};

/* The last byte before p (not before `start`) that is not whitespace, or
 * '[' at the start of the frame (where a value may begin). */
static inline unsigned char prev_byte(const unsigned char *start,
                                      const unsigned char *p) {
  while (p > start && jrpc__is_ws(p[-1]))
    p--;
  return p > start ? p[-1] : '[';
}

/* Counts occurrences of c in [p, end), stopping once past `limit`. */
static size_t count_upto(const char *p, const char *end, char c, size_t limit) {
  size_t k = 0;
  while (k <= limit && (p = memchr(p, c, (size_t)(end - p))) != NULL) {
    k++;
    p++;
  }
  return k;
}

/* Frames above this size always get the exact structural scan below. */
#define PRESCAN_ALWAYS 4096

/* Refuses, before jsmn sees them, the frames on which jsmn spends more
 * than linear time: jsmn closes a container by walking up parent links
 * from the last token, so nesting D deep costs D^2/2 steps, and a ':'
 * after a non-key (which strict mode allows) hangs the following tokens in
 * a chain that every closing bracket walks again.
 *
 * Nesting deeper than the limit needs that many opening brackets, and
 * counting them with memchr costs little. Chains need length, and their
 * cost needs closing brackets, of which a small frame can hold few. So
 * the exact scan runs for frames with more brackets than the limit, or
 * larger than PRESCAN_ALWAYS; others cost jsmn at most a small factor
 * over their size. Returns 1 when jsmn may go ahead (the walk after it
 * still decides validity). */
static int structure_ok(const char *js, size_t len) {
  const char *end = js + len;
  if (len <= PRESCAN_ALWAYS) {
    size_t opens = count_upto(js, end, '[', JRPC__MAX_DEPTH);
    if (opens <= JRPC__MAX_DEPTH)
      opens += count_upto(js, end, '{', JRPC__MAX_DEPTH - opens);
    if (opens <= JRPC__MAX_DEPTH)
      return 1;
  }
  /* The exact scan has to see the structure jsmn will see. jsmn starts a
   * string only where a value may start; inside a primitive a quote is just
   * another character (and the frame is invalid). So a quote after
   * anything but whitespace, '[', '{', ',' or ':' ends the scan: the frame
   * is not JSON, and skipping "to the closing quote" would hide brackets
   * that jsmn does nest. An unterminated string is not JSON either, and
   * neither is a ':' that does not follow a string. */
  const unsigned char *p = (const unsigned char *)js;
  const unsigned char *e = (const unsigned char *)end;
  const unsigned char *start = p;
  int depth = 0;
  for (;;) {
    while (p < e && !nest_byte[*p])
      p++;
    if (p == e)
      return 1;
    unsigned char c;
    switch (nest_byte[*p]) {
    case 1:
      if (++depth > JRPC__MAX_DEPTH)
        return 0;
      p++;
      break;
    case 2:
      depth--;
      p++;
      break;
    case 4:
      if (prev_byte(start, p) != '"')
        return 0;
      p++;
      break;
    default:
      c = prev_byte(start, p);
      if (c != '[' && c != '{' && c != ',' && c != ':')
        return 0;
      /* Skip the string: to the next quote not escaped by an odd run of
       * backslashes. */
      p++;
      for (;;) {
        const unsigned char *q = memchr(p, '"', (size_t)(e - p));
        if (!q)
          return 0;
        const unsigned char *b = q;
        while (b > p && b[-1] == '\\')
          b--;
        p = q + 1;
        if (((q - b) & 1) == 0)
          break;
      }
    }
  }
}

/* A frame whose value is not an object, array or string: jsmn's strict
 * mode refuses bare primitives at the top, but they are valid JSON (and
 * then an invalid request, not a parse error). */
static int top_scalar(const char *js, size_t len, jrpc__parsed_t *out) {
  size_t b = 0, e = len;
  while (b < e && jrpc__is_ws((unsigned char)js[b]))
    b++;
  while (e > b && jrpc__is_ws((unsigned char)js[e - 1]))
    e--;
  if (b == e || !primitive_ok(js + b, e - b)) {
    out->status = JRPC__PARSE_INVALID;
    out->why = b == e ? "empty frame" : "invalid JSON";
  }
  return 0;
}

static int jsmn_parse_frame(jrpc__parser_t *p, const char *js, size_t len,
                            jrpc__arena_t *a, uint32_t max_batch,
                            jrpc__parsed_t *out) {
  jsmn_backend_t *b = (jsmn_backend_t *)p;
  jrpc__tokdoc_t *d = &b->doc;
  if (jrpc__tokdoc_begin(d, js, len, out) != 0)
    return 0;
  size_t first = 0;
  while (first < len && jrpc__is_ws((unsigned char)js[first]))
    first++;
  if (first == len ||
      (js[first] != '{' && js[first] != '[' && js[first] != '"')) {
    out->count = 1;
    int rc = top_scalar(js, len, out);
    if (out->status == JRPC__PARSE_OK) {
      out->env = jrpc__arena_alloc(a, sizeof(*out->env));
      if (!out->env)
        return JRPC_ENOMEM;
      memset(out->env, 0, sizeof(*out->env));
    }
    return rc;
  }

  /* A frame shorter than the depth limit can neither nest too deep nor
   * chain enough tokens to matter. */
  if (len > JRPC__MAX_DEPTH && !structure_ok(js + first, len - first)) {
    out->status = JRPC__PARSE_INVALID;
    out->why = "nested too deeply, or malformed";
    return 0;
  }

  /* Tokens: a guess from the frame size, doubled from the arena when jsmn
   * runs out (it resumes where it stopped). A token needs at least one
   * byte of input, so len + 1 always suffices: no fixed cap. */
  size_t cap = len / 4 + 16;
  if (cap > len + 1)
    cap = len + 1;
  jsmntok_t *t = jrpc__arena_alloc(a, cap * sizeof(*t));
  if (!t)
    return JRPC_ENOMEM;
  jsmn_parser jp;
  jsmn_init(&jp);
  int r;
  while ((r = jsmn_parse(&jp, js, len, t, (unsigned)cap)) == JSMN_ERROR_NOMEM) {
    size_t ncap = cap * 2 > len + 1 ? len + 1 : cap * 2;
    jsmntok_t *nt = jrpc__arena_alloc(a, ncap * sizeof(*t));
    if (!nt)
      return JRPC_ENOMEM;
    memcpy(nt, t, jp.toknext * sizeof(*t));
    t = nt;
    cap = ncap;
  }
  if (r < 0 || jp.toknext == 0) {
    out->status = JRPC__PARSE_INVALID;
    out->why = r == JSMN_ERROR_PART ? "incomplete JSON" : "invalid JSON";
    return 0;
  }
  d->t = t;
  d->n = jp.toknext;

  if (t[0].type == JSMN_ARRAY) {
    out->is_batch = 1;
    out->count = (uint32_t)t[0].size;
    if (out->count > max_batch)
      out->status = JRPC__PARSE_BATCH_TOO_LARGE;
  } else {
    out->count = 1;
  }
  if (out->status == JRPC__PARSE_OK && out->count) {
    out->env = jrpc__arena_alloc(a, out->count * sizeof(*out->env));
    if (!out->env)
      return JRPC_ENOMEM;
    memset(out->env, 0, out->count * sizeof(*out->env));
  }

  int ok;
  switch (b->mode) {
  case JRPC__JSMN_SEPARATE:
    ok = walk(d, out, a, 1, 0) && walk(d, out, a, 0, 1);
    break;
  case JRPC__JSMN_NONE:
    ok = walk(d, out, a, 0, 1);
    break;
  default:
    ok = walk(d, out, a, 1, 1);
  }
  if (!ok) {
    out->status = JRPC__PARSE_INVALID;
    out->env = NULL;
    out->count = 0;
  }
  return 0;
}

static const jrpc__parser_ops_t jsmn_ops = {
    "jsmn",
    jrpc__tokdoc_parser_free,
    jsmn_parse_frame,
    JRPC__TOKDOC_VIEWS,
};

jrpc__parser_t *jrpc__parser_jsmn_new(jrpc__jsmn_mode_t mode) {
  jsmn_backend_t *b = calloc(1, sizeof(*b));
  if (!b)
    return NULL;
  b->base.ops = &jsmn_ops;
  b->mode = mode;
  b->doc.hdr.ops = &jsmn_ops;
  return &b->base;
}
