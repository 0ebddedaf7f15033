/* testutil.c - see testutil.h. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <cmocka.h>

#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "testutil.h"

/* ------------------------------------------------------------------ */
/* JSON reader                                                         */
/* ------------------------------------------------------------------ */

#define TU_MAX_DEPTH 1000

typedef struct jp {
  const unsigned char *s;
  size_t n;
  size_t i;
  int depth;
} jp_t;

typedef struct dbuf {
  char *p;
  size_t n;
  size_t cap;
} dbuf_t;

static int dbuf_put(dbuf_t *b, const void *s, size_t n) {
  if (b->n + n + 1 > b->cap) {
    size_t cap = b->cap ? b->cap : 16;
    while (cap < b->n + n + 1)
      cap *= 2;
    char *p = realloc(b->p, cap);
    if (!p)
      return -1;
    b->p = p;
    b->cap = cap;
  }
  memcpy(b->p + b->n, s, n);
  b->n += n;
  b->p[b->n] = '\0';
  return 0;
}

static void jp_ws(jp_t *p) {
  while (p->i < p->n && (p->s[p->i] == ' ' || p->s[p->i] == '\t' ||
                         p->s[p->i] == '\n' || p->s[p->i] == '\r'))
    p->i++;
}

static int hexval(int c) {
  if (c >= '0' && c <= '9')
    return c - '0';
  if (c >= 'a' && c <= 'f')
    return c - 'a' + 10;
  if (c >= 'A' && c <= 'F')
    return c - 'A' + 10;
  return -1;
}

static int jp_hex4(jp_t *p, unsigned *out) {
  unsigned v = 0;
  if (p->n - p->i < 4)
    return -1;
  for (int k = 0; k < 4; k++) {
    int h = hexval(p->s[p->i + k]);
    if (h < 0)
      return -1;
    v = v * 16 + (unsigned)h;
  }
  p->i += 4;
  *out = v;
  return 0;
}

static int utf8_put(dbuf_t *b, unsigned cp) {
  char u[4];
  size_t k;
  if (cp < 0x80) {
    u[0] = (char)cp;
    k = 1;
  } else if (cp < 0x800) {
    u[0] = (char)(0xC0 | (cp >> 6));
    u[1] = (char)(0x80 | (cp & 0x3F));
    k = 2;
  } else if (cp < 0x10000) {
    u[0] = (char)(0xE0 | (cp >> 12));
    u[1] = (char)(0x80 | ((cp >> 6) & 0x3F));
    u[2] = (char)(0x80 | (cp & 0x3F));
    k = 3;
  } else {
    u[0] = (char)(0xF0 | (cp >> 18));
    u[1] = (char)(0x80 | ((cp >> 12) & 0x3F));
    u[2] = (char)(0x80 | ((cp >> 6) & 0x3F));
    u[3] = (char)(0x80 | (cp & 0x3F));
    k = 4;
  }
  return dbuf_put(b, u, k);
}

/* Length of the well-formed UTF-8 sequence at s (1..4), or 0. */
static size_t utf8_len(const unsigned char *s, size_t n) {
  unsigned c = s[0];
  if (c < 0x80)
    return 1;
  if (c >= 0xC2 && c <= 0xDF)
    return n >= 2 && (s[1] & 0xC0) == 0x80 ? 2 : 0;
  if (c >= 0xE0 && c <= 0xEF) {
    if (n < 3 || (s[1] & 0xC0) != 0x80 || (s[2] & 0xC0) != 0x80)
      return 0;
    if (c == 0xE0 && s[1] < 0xA0)
      return 0; /* overlong */
    if (c == 0xED && s[1] >= 0xA0)
      return 0; /* UTF-16 surrogate */
    return 3;
  }
  if (c >= 0xF0 && c <= 0xF4) {
    if (n < 4 || (s[1] & 0xC0) != 0x80 || (s[2] & 0xC0) != 0x80 ||
        (s[3] & 0xC0) != 0x80)
      return 0;
    if (c == 0xF0 && s[1] < 0x90)
      return 0; /* overlong */
    if (c == 0xF4 && s[1] >= 0x90)
      return 0; /* above U+10FFFF */
    return 4;
  }
  return 0;
}

/* Parses a string at p->i (at the opening quote) into b. */
static int jp_string(jp_t *p, dbuf_t *b) {
  if (p->i >= p->n || p->s[p->i] != '"')
    return -1;
  p->i++;
  if (dbuf_put(b, "", 0))
    return -1;
  for (;;) {
    if (p->i >= p->n)
      return -1;
    unsigned c = p->s[p->i];
    if (c == '"') {
      p->i++;
      return 0;
    }
    if (c < 0x20)
      return -1;
    if (c == '\\') {
      p->i++;
      if (p->i >= p->n)
        return -1;
      char e = (char)p->s[p->i++], o;
      switch (e) {
      case '"':
        o = '"';
        break;
      case '\\':
        o = '\\';
        break;
      case '/':
        o = '/';
        break;
      case 'b':
        o = '\b';
        break;
      case 'f':
        o = '\f';
        break;
      case 'n':
        o = '\n';
        break;
      case 'r':
        o = '\r';
        break;
      case 't':
        o = '\t';
        break;
      case 'u': {
        unsigned cp, lo;
        if (jp_hex4(p, &cp))
          return -1;
        if (cp >= 0xDC00 && cp <= 0xDFFF)
          return -1;
        if (cp >= 0xD800 && cp <= 0xDBFF) {
          if (p->n - p->i < 2 || p->s[p->i] != '\\' || p->s[p->i + 1] != 'u')
            return -1;
          p->i += 2;
          if (jp_hex4(p, &lo) || lo < 0xDC00 || lo > 0xDFFF)
            return -1;
          cp = 0x10000 + ((cp - 0xD800) << 10) + (lo - 0xDC00);
        }
        if (utf8_put(b, cp))
          return -1;
        continue;
      }
      default:
        return -1;
      }
      if (dbuf_put(b, &o, 1))
        return -1;
      continue;
    }
    size_t k = utf8_len(p->s + p->i, p->n - p->i);
    if (!k || dbuf_put(b, p->s + p->i, k))
      return -1;
    p->i += k;
  }
}

static int isdig(unsigned c) {
  return c >= '0' && c <= '9';
}

static int jp_number(jp_t *p, size_t *start, size_t *len) {
  size_t i = p->i;
  *start = i;
  if (i < p->n && p->s[i] == '-')
    i++;
  if (i >= p->n || !isdig(p->s[i]))
    return -1;
  if (p->s[i] == '0')
    i++;
  else
    while (i < p->n && isdig(p->s[i]))
      i++;
  if (i < p->n && p->s[i] == '.') {
    i++;
    if (i >= p->n || !isdig(p->s[i]))
      return -1;
    while (i < p->n && isdig(p->s[i]))
      i++;
  }
  if (i < p->n && (p->s[i] == 'e' || p->s[i] == 'E')) {
    i++;
    if (i < p->n && (p->s[i] == '+' || p->s[i] == '-'))
      i++;
    if (i >= p->n || !isdig(p->s[i]))
      return -1;
    while (i < p->n && isdig(p->s[i]))
      i++;
  }
  *len = i - *start;
  p->i = i;
  return 0;
}

static tu_json_t *node_new(tu_jtype_t t) {
  tu_json_t *j = calloc(1, sizeof *j);
  if (j)
    j->type = t;
  return j;
}

static int node_add(tu_json_t *j, tu_json_t *kid, size_t *cap) {
  if (j->nkids == *cap) {
    size_t c = *cap ? *cap * 2 : 4;
    tu_json_t **k = realloc(j->kids, c * sizeof *k);
    if (!k)
      return -1;
    j->kids = k;
    *cap = c;
  }
  j->kids[j->nkids++] = kid;
  return 0;
}

static tu_json_t *jp_value(jp_t *p);

static int jp_lit(jp_t *p, const char *w) {
  size_t k = strlen(w);
  if (p->n - p->i < k || memcmp(p->s + p->i, w, k) != 0)
    return -1;
  p->i += k;
  return 0;
}

static tu_json_t *jp_container(jp_t *p, int obj) {
  tu_json_t *j = node_new(obj ? TU_J_OBJECT : TU_J_ARRAY);
  size_t cap = 0;
  if (!j)
    return NULL;
  if (++p->depth > TU_MAX_DEPTH)
    goto fail;
  p->i++; /* '[' or '{' */
  jp_ws(p);
  if (p->i < p->n && p->s[p->i] == (obj ? '}' : ']')) {
    p->i++;
    p->depth--;
    return j;
  }
  for (;;) {
    dbuf_t key = {0};
    jp_ws(p);
    if (obj) {
      if (jp_string(p, &key))
        goto fail_key;
      jp_ws(p);
      if (p->i >= p->n || p->s[p->i] != ':')
        goto fail_key;
      p->i++;
    }
    tu_json_t *kid = jp_value(p);
    if (!kid)
      goto fail_key;
    kid->key = key.p;
    kid->key_n = key.n;
    if (node_add(j, kid, &cap)) {
      tu_json_free(kid);
      goto fail;
    }
    jp_ws(p);
    if (p->i >= p->n)
      goto fail;
    if (p->s[p->i] == ',') {
      p->i++;
      continue;
    }
    if (p->s[p->i] == (obj ? '}' : ']')) {
      p->i++;
      p->depth--;
      return j;
    }
    goto fail;
  fail_key:
    free(key.p);
    goto fail;
  }
fail:
  tu_json_free(j);
  return NULL;
}

static tu_json_t *jp_value(jp_t *p) {
  jp_ws(p);
  if (p->i >= p->n)
    return NULL;
  switch (p->s[p->i]) {
  case '{':
    return jp_container(p, 1);
  case '[':
    return jp_container(p, 0);
  case '"': {
    dbuf_t b = {0};
    if (jp_string(p, &b)) {
      free(b.p);
      return NULL;
    }
    tu_json_t *j = node_new(TU_J_STRING);
    if (!j) {
      free(b.p);
      return NULL;
    }
    j->s = b.p;
    j->n = b.n;
    return j;
  }
  case 't':
    return jp_lit(p, "true") ? NULL : node_new(TU_J_TRUE);
  case 'f':
    return jp_lit(p, "false") ? NULL : node_new(TU_J_FALSE);
  case 'n':
    return jp_lit(p, "null") ? NULL : node_new(TU_J_NULL);
  default: {
    size_t st, len;
    if (jp_number(p, &st, &len))
      return NULL;
    tu_json_t *j = node_new(TU_J_NUMBER);
    if (!j)
      return NULL;
    j->s = malloc(len + 1);
    if (!j->s) {
      free(j);
      return NULL;
    }
    memcpy(j->s, p->s + st, len);
    j->s[len] = '\0';
    j->n = len;
    return j;
  }
  }
}

tu_json_t *tu_json_parse(const char *s, size_t n) {
  jp_t p = {(const unsigned char *)s, n, 0, 0};
  tu_json_t *j = jp_value(&p);
  if (!j)
    return NULL;
  jp_ws(&p);
  if (p.i != n) {
    tu_json_free(j);
    return NULL;
  }
  return j;
}

void tu_json_free(tu_json_t *j) {
  if (!j)
    return;
  for (size_t i = 0; i < j->nkids; i++)
    tu_json_free(j->kids[i]);
  free(j->kids);
  free(j->s);
  free(j->key);
  free(j);
}

int tu_json_valid(const char *s, size_t n) {
  tu_json_t *j = tu_json_parse(s, n);
  tu_json_free(j);
  return j != NULL;
}

const tu_json_t *tu_json_get(const tu_json_t *j, const char *key) {
  size_t k = strlen(key);
  if (!j || j->type != TU_J_OBJECT)
    return NULL;
  for (size_t i = 0; i < j->nkids; i++)
    if (j->kids[i]->key_n == k && memcmp(j->kids[i]->key, key, k) == 0)
      return j->kids[i];
  return NULL;
}

const tu_json_t *tu_json_at(const tu_json_t *j, size_t i) {
  if (!j || (j->type != TU_J_ARRAY && j->type != TU_J_OBJECT) || i >= j->nkids)
    return NULL;
  return j->kids[i];
}

/* Matches the children of a and b as multisets (with keys if objects). */
static int kids_match_unordered(const tu_json_t *a, const tu_json_t *b,
                                int with_keys) {
  if (a->nkids != b->nkids)
    return 0;
  char *used = calloc(b->nkids + 1, 1);
  int ok = 1;
  if (!used)
    return 0;
  for (size_t i = 0; i < a->nkids && ok; i++) {
    const tu_json_t *x = a->kids[i];
    int found = 0;
    for (size_t k = 0; k < b->nkids && !found; k++) {
      const tu_json_t *y = b->kids[k];
      if (used[k])
        continue;
      if (with_keys &&
          (x->key_n != y->key_n || memcmp(x->key, y->key, x->key_n) != 0))
        continue;
      if (tu_json_node_equal(x, y)) {
        used[k] = 1;
        found = 1;
      }
    }
    ok = found;
  }
  free(used);
  return ok;
}

int tu_json_node_equal(const tu_json_t *a, const tu_json_t *b) {
  if (!a || !b || a->type != b->type)
    return 0;
  switch (a->type) {
  case TU_J_NUMBER:
  case TU_J_STRING:
    return a->n == b->n && memcmp(a->s, b->s, a->n) == 0;
  case TU_J_ARRAY:
    if (a->nkids != b->nkids)
      return 0;
    for (size_t i = 0; i < a->nkids; i++)
      if (!tu_json_node_equal(a->kids[i], b->kids[i]))
        return 0;
    return 1;
  case TU_J_OBJECT:
    return kids_match_unordered(a, b, 1);
  default:
    return 1;
  }
}

int tu_json_equal(const char *a, size_t an, const char *b, size_t bn,
                  int unordered_top_array) {
  tu_json_t *x = tu_json_parse(a, an), *y = tu_json_parse(b, bn);
  int eq;
  if (!x || !y)
    eq = 0;
  else if (unordered_top_array && x->type == TU_J_ARRAY &&
           y->type == TU_J_ARRAY)
    eq = kids_match_unordered(x, y, 0);
  else
    eq = tu_json_node_equal(x, y);
  tu_json_free(x);
  tu_json_free(y);
  return eq;
}

size_t tu_json_minify(const char *s, size_t n, char *out, size_t cap) {
  size_t o = 0;
  int in_str = 0;
  if (!tu_json_valid(s, n))
    return (size_t)-1;
  for (size_t i = 0; i < n; i++) {
    char c = s[i];
    if (in_str) {
      if (c == '\\') {
        if (o + 2 >= cap)
          return (size_t)-1;
        out[o++] = c;
        out[o++] = s[++i];
        continue;
      }
      if (c == '"')
        in_str = 0;
    } else if (c == ' ' || c == '\t' || c == '\n' || c == '\r') {
      continue;
    } else if (c == '"') {
      in_str = 1;
    }
    if (o + 1 >= cap)
      return (size_t)-1;
    out[o++] = c;
  }
  out[o] = '\0';
  return o;
}

/* ------------------------------------------------------------------ */
/* Reply helpers                                                       */
/* ------------------------------------------------------------------ */

static int is_integer_text(const tu_json_t *j) {
  if (j->type != TU_J_NUMBER)
    return 0;
  for (size_t i = 0; i < j->n; i++)
    if (!(isdig((unsigned char)j->s[i]) || (i == 0 && j->s[i] == '-')))
      return 0;
  return 1;
}

int tu_response_ok(const tu_json_t *j) {
  if (!j || j->type != TU_J_OBJECT)
    return 0;
  const tu_json_t *v = tu_json_get(j, "jsonrpc");
  const tu_json_t *res = tu_json_get(j, "result");
  const tu_json_t *err = tu_json_get(j, "error");
  const tu_json_t *id = tu_json_get(j, "id");
  if (!v || v->type != TU_J_STRING || strcmp(v->s, "2.0") != 0)
    return 0;
  if (!id || !(id->type == TU_J_STRING || id->type == TU_J_NUMBER ||
               id->type == TU_J_NULL))
    return 0;
  if (!!res == !!err || j->nkids != 3)
    return 0;
  if (err) {
    const tu_json_t *code = tu_json_get(err, "code");
    const tu_json_t *msg = tu_json_get(err, "message");
    const tu_json_t *data = tu_json_get(err, "data");
    if (err->type != TU_J_OBJECT || !code || !is_integer_text(code) || !msg ||
        msg->type != TU_J_STRING)
      return 0;
    if (err->nkids != 2u + (data != NULL))
      return 0;
  }
  return 1;
}

int32_t tu_reply_code(const char *s, size_t n) {
  tu_json_t *j = tu_json_parse(s, n);
  int32_t code = INT32_MIN;
  if (tu_response_ok(j)) {
    const tu_json_t *err = tu_json_get(j, "error");
    code = err ? (int32_t)strtol(tu_json_get(err, "code")->s, NULL, 10) : 0;
  }
  tu_json_free(j);
  return code;
}

int tu_unframe(int framing, const char *buf, size_t n, const char **fp,
               size_t *fn, int max) {
  size_t i = 0;
  int count = 0;
  while (i < n) {
    const char *p;
    size_t len;
    if (framing == JRPC_FRAMING_NEWLINE) {
      const char *nl = memchr(buf + i, '\n', n - i);
      if (!nl || nl == buf + i)
        return -1;
      p = buf + i;
      len = (size_t)(nl - p);
      i += len + 1;
    } else {
      if (n - i < 4)
        return -1;
      const unsigned char *h = (const unsigned char *)buf + i;
      len = ((size_t)h[0] << 24) | ((size_t)h[1] << 16) | ((size_t)h[2] << 8) |
            h[3];
      if (n - i - 4 < len)
        return -1;
      p = buf + i + 4;
      i += 4 + len;
    }
    if (count < max) {
      fp[count] = p;
      fn[count] = len;
    }
    count++;
  }
  return count;
}

size_t tu_frame(int framing, const char *p, size_t n, char *out, size_t cap) {
  assert_true(cap >= n + 4);
  if (framing == JRPC_FRAMING_NEWLINE) {
    assert_null(memchr(p, '\n', n));
    memcpy(out, p, n);
    out[n] = '\n';
    return n + 1;
  }
  out[0] = (char)(n >> 24);
  out[1] = (char)(n >> 16);
  out[2] = (char)(n >> 8);
  out[3] = (char)n;
  memcpy(out + 4, p, n);
  return n + 4;
}

/* ------------------------------------------------------------------ */
/* Handlers: public jrpc.h API only                                    */
/* ------------------------------------------------------------------ */

int tu_calls_update;
int tu_calls_notify_hello;
int tu_calls_fail;

static int bad_params(jrpc_call_t *c) {
  return jrpc_error(c, JRPC_INVALID_PARAMS, "Invalid params");
}

/* subtract: [minuend, subtrahend] or {"minuend":M,"subtrahend":S}. */
static int h_subtract(jrpc_call_t *c, jrpc_val_t p, void *u) {
  int64_t a, b;
  jrpc_val_t va, vb;
  (void)u;
  switch (jrpc_type(c, p)) {
  case JRPC_T_ARRAY:
    if (jrpc_len(c, p) != 2)
      return bad_params(c);
    va = jrpc_at(c, p, 0);
    vb = jrpc_at(c, p, 1);
    break;
  case JRPC_T_OBJECT:
    va = jrpc_get(c, p, "minuend");
    vb = jrpc_get(c, p, "subtrahend");
    break;
  default:
    return bad_params(c);
  }
  if (jrpc_as_i64(c, va, &a) || jrpc_as_i64(c, vb, &b))
    return bad_params(c);
  return jrpc_w_i64(c, a - b);
}

static int h_sum(jrpc_call_t *c, jrpc_val_t p, void *u) {
  int64_t s = 0, x;
  (void)u;
  if (jrpc_type(c, p) != JRPC_T_ARRAY)
    return bad_params(c);
  for (jrpc_val_t e = jrpc_first(c, p); !jrpc_is_none(e); e = jrpc_next(c, e)) {
    if (jrpc_as_i64(c, e, &x))
      return bad_params(c);
    s += x;
  }
  return jrpc_w_i64(c, s);
}

static int h_update(jrpc_call_t *c, jrpc_val_t p, void *u) {
  (void)c;
  (void)p;
  (void)u;
  tu_calls_update++;
  return 0;
}

static int h_notify_hello(jrpc_call_t *c, jrpc_val_t p, void *u) {
  (void)c;
  (void)p;
  (void)u;
  tu_calls_notify_hello++;
  return 0;
}

static int h_get_data(jrpc_call_t *c, jrpc_val_t p, void *u) {
  int rc;
  (void)p;
  (void)u;
  if ((rc = jrpc_w_arr(c)) || (rc = jrpc_w_str(c, "hello", 5)) ||
      (rc = jrpc_w_i64(c, 5)) || (rc = jrpc_w_arr_end(c)))
    return rc;
  return 0;
}

/* echo: params written back verbatim (null when absent). */
static int h_echo(jrpc_call_t *c, jrpc_val_t p, void *u) {
  const char *s;
  size_t n;
  (void)u;
  if (jrpc_type(c, p) == JRPC_T_NONE)
    return jrpc_w_null(c);
  if (jrpc_raw(c, p, &s, &n))
    return jrpc_error(c, JRPC_INTERNAL_ERROR, "raw failed");
  return jrpc_w_raw(c, s, n);
}

/* echo_str: ["s"] -> "s", through as_str and w_str (unescape, escape). */
static int h_echo_str(jrpc_call_t *c, jrpc_val_t p, void *u) {
  const char *s;
  size_t n;
  (void)u;
  if (jrpc_as_str(c, jrpc_at(c, p, 0), &s, &n))
    return bad_params(c);
  return jrpc_w_str(c, s, n);
}

/* ptype: the jrpc_type_t of params, as a number. */
static int h_ptype(jrpc_call_t *c, jrpc_val_t p, void *u) {
  (void)u;
  return jrpc_w_i64(c, (int64_t)jrpc_type(c, p));
}

/* fail: a fixed application error whose message needs escaping. */
static int h_fail(jrpc_call_t *c, jrpc_val_t p, void *u) {
  (void)p;
  (void)u;
  tu_calls_fail++;
  return jrpc_error(c, 4242, "it \"broke\"\n\ttwice \xc3\xa9");
}

/* fail_code: [code, "message"] -> that error. */
static int h_fail_code(jrpc_call_t *c, jrpc_val_t p, void *u) {
  int64_t code;
  const char *msg;
  size_t n;
  (void)u;
  if (jrpc_as_i64(c, jrpc_at(c, p, 0), &code) ||
      jrpc_as_str(c, jrpc_at(c, p, 1), &msg, &n))
    return bad_params(c);
  return jrpc_error(c, (int)code, msg);
}

/* fail_data: -32602 with data {"field":"a","why":[1,2,null]}; with params,
 * data is the params verbatim instead. */
static int h_fail_data(jrpc_call_t *c, jrpc_val_t p, void *u) {
  (void)u;
  if (jrpc_error_begin(c, JRPC_INVALID_PARAMS, "Invalid params") != 0)
    return JRPC_EFAIL;
  if (jrpc_type(c, p) != JRPC_T_NONE) {
    const char *s;
    size_t n;
    if (jrpc_raw(c, p, &s, &n) == 0)
      jrpc_w_raw(c, s, n);
    return JRPC_EFAIL;
  }
  jrpc_w_obj(c);
  jrpc_w_key(c, "field", 5);
  jrpc_w_str(c, "a", 1);
  jrpc_w_key(c, "why", 3);
  jrpc_w_arr(c);
  jrpc_w_i64(c, 1);
  jrpc_w_i64(c, 2);
  jrpc_w_null(c);
  jrpc_w_arr_end(c);
  jrpc_w_obj_end(c);
  return JRPC_EFAIL;
}

/* fail_bare: a negative return without jrpc_error -> -32000. */
static int h_fail_bare(jrpc_call_t *c, jrpc_val_t p, void *u) {
  (void)c;
  (void)p;
  (void)u;
  return JRPC_EINVAL;
}

/* fail_after_write: a partial result, then an error: the error wins and
 * nothing of the partial result may leak. */
static int h_fail_after_write(jrpc_call_t *c, jrpc_val_t p, void *u) {
  (void)p;
  (void)u;
  jrpc_w_obj(c);
  jrpc_w_key(c, "partial", 7);
  jrpc_w_arr(c);
  jrpc_w_str(c, "LEAK", 4);
  return jrpc_error(c, 77, "late");
}

/* misuse: ["kind"] misuses the writer in one way, then returns 0. */
static int h_misuse(jrpc_call_t *c, jrpc_val_t p, void *u) {
  const char *k;
  size_t n;
  (void)u;
  if (jrpc_as_str(c, jrpc_at(c, p, 0), &k, &n))
    k = "key";
  if (!strcmp(k, "key")) { /* a key outside an object */
    jrpc_w_key(c, "a", 1);
    jrpc_w_i64(c, 1);
  } else if (!strcmp(k, "unclosed")) {
    jrpc_w_arr(c);
    jrpc_w_i64(c, 1);
  } else if (!strcmp(k, "two")) { /* two top-level values */
    jrpc_w_i64(c, 1);
    jrpc_w_i64(c, 2);
  } else if (!strcmp(k, "end")) { /* closing what was never opened */
    jrpc_w_arr_end(c);
  } else if (!strcmp(k, "nokey")) { /* a value in an object without key */
    jrpc_w_obj(c);
    jrpc_w_i64(c, 1);
    jrpc_w_obj_end(c);
  } else if (!strcmp(k, "mismatch")) { /* [ closed by } */
    jrpc_w_arr(c);
    jrpc_w_obj_end(c);
  } else if (!strcmp(k, "dangling")) { /* a key without its value */
    jrpc_w_obj(c);
    jrpc_w_key(c, "a", 1);
    jrpc_w_obj_end(c);
  }
  return 0;
}

/* huge: [n] -> a string of n 'x'; [n, "arr"] -> an array of n numbers. */
static int h_huge(jrpc_call_t *c, jrpc_val_t p, void *u) {
  int64_t n = 1 << 20;
  const char *kind = "str";
  size_t kn;
  (void)u;
  jrpc_as_i64(c, jrpc_at(c, p, 0), &n);
  if (jrpc_type(c, jrpc_at(c, p, 1)) == JRPC_T_STRING)
    jrpc_as_str(c, jrpc_at(c, p, 1), &kind, &kn);
  if (!strcmp(kind, "arr")) {
    jrpc_w_arr(c);
    for (int64_t i = 0; i < n; i++)
      jrpc_w_i64(c, 1000000 + i);
    return jrpc_w_arr_end(c);
  }
  char *s = jrpc_alloc(c, (size_t)n);
  if (!s)
    return jrpc_error(c, JRPC_INTERNAL_ERROR, "alloc failed");
  memset(s, 'x', (size_t)n);
  return jrpc_w_str(c, s, (size_t)n);
}

/* The string h_ctl writes: every C0 control, DEL, quote, backslash,
 * slash, and some non-ASCII UTF-8. */
const char tu_ctl_bytes[] =
    "\x00\x01\x02\x03\x04\x05\x06\x07\x08\x09\x0a\x0b\x0c\x0d\x0e\x0f"
    "\x10\x11\x12\x13\x14\x15\x16\x17\x18\x19\x1a\x1b\x1c\x1d\x1e\x1f"
    "\x7f\"\\/\xc3\xa9\xe2\x82\xac\xf0\x9f\x98\x80 end";
const size_t tu_ctl_len = sizeof tu_ctl_bytes - 1;

static int h_ctl(jrpc_call_t *c, jrpc_val_t p, void *u) {
  (void)p;
  (void)u;
  return jrpc_w_str(c, tu_ctl_bytes, tu_ctl_len);
}

/* bad_utf8: {"k<0xff>":"a<0xff><0xed 0xa0 0x80>b<0xc3>"}: invalid UTF-8
 * handed to the writer, which must still produce valid JSON. */
static int h_bad_utf8(jrpc_call_t *c, jrpc_val_t p, void *u) {
  (void)p;
  (void)u;
  jrpc_w_obj(c);
  jrpc_w_key(c, "k\xff", 2);
  jrpc_w_str(c,
             "a\xff\xed\xa0\x80"
             "b\xc3",
             7);
  return jrpc_w_obj_end(c);
}

static int h_nothing(jrpc_call_t *c, jrpc_val_t p, void *u) {
  (void)c;
  (void)p;
  (void)u;
  return 0;
}

static const struct {
  const char *name;
  jrpc_handler_fn fn;
} std_handlers[] = {
    {"subtract", h_subtract},
    {"sum", h_sum},
    {"update", h_update},
    {"notify_hello", h_notify_hello},
    {"get_data", h_get_data},
    {"echo", h_echo},
    {"echo_str", h_echo_str},
    {"ptype", h_ptype},
    {"fail", h_fail},
    {"fail_code", h_fail_code},
    {"fail_data", h_fail_data},
    {"fail_bare", h_fail_bare},
    {"fail_after_write", h_fail_after_write},
    {"misuse", h_misuse},
    {"huge", h_huge},
    {"ctl", h_ctl},
    {"nothing", h_nothing},
    {"bad_utf8", h_bad_utf8},
};

/* ------------------------------------------------------------------ */
/* Fixture                                                             */
/* ------------------------------------------------------------------ */

void tu_fixture_init(tu_fixture *f, const jrpc__limits_t *lim) {
  jrpc__limits_t def = JRPC__LIMITS_DEFAULT;
  memset(f, 0, sizeof *f);
  f->lim = lim ? *lim : def;
  tu_calls_update = tu_calls_notify_hello = tu_calls_fail = 0;
  assert_int_equal(jrpc__registry_init(&f->reg), 0);
  for (size_t i = 0; i < sizeof std_handlers / sizeof std_handlers[0]; i++)
    tu_fixture_add(f, std_handlers[i].name, std_handlers[i].fn, NULL);
  jrpc__parser_t *p = tu_parser_new();
  assert_non_null(p);
  assert_int_equal(jrpc__engine_init(&f->eng, &f->reg, &f->lim, p), 0);
}

void tu_fixture_free(tu_fixture *f) {
  jrpc__engine_free(&f->eng);
  jrpc__registry_free(&f->reg);
}

void tu_fixture_add(tu_fixture *f, const char *name, jrpc_handler_fn fn,
                    void *udata) {
  assert_int_equal(jrpc__registry_add(&f->reg, name, fn, udata, NULL, NULL), 0);
}

int tu_setup(void **state) {
  tu_fixture *f = malloc(sizeof *f);
  if (!f)
    return -1;
  tu_fixture_init(f, NULL);
  *state = f;
  return 0;
}

int tu_teardown(void **state) {
  tu_fixture *f = *state;
  if (f) {
    tu_fixture_free(f);
    free(f);
  }
  return 0;
}

size_t tu_run(tu_fixture *f, int framing, const char *in, size_t n, char *out,
              size_t cap) {
  jrpc__stream_t s;
  size_t off = 0, got;

  jrpc__stream_init(&s, &f->eng, (jrpc__framing_t)framing);
  f->last_rc = 0;
  f->closed = 0;
  for (;;) {
    size_t room = 0;
    char *dst = jrpc__stream_rbuf(&s, &room);
    assert_non_null(dst);
    assert_true(room >= 1);
    size_t k = n - off;
    if (k > room)
      k = room;
    if (f->chunk && k > f->chunk)
      k = f->chunk;
    memcpy(dst, in + off, k);
    off += k;
    int eof = off == n;
    int rc = jrpc__stream_feed(&s, k, eof);
    f->last_rc = rc;
    if (rc == JRPC__ECLOSE) {
      f->closed = 1;
      break;
    }
    assert_int_equal(rc, 0);
    if (eof)
      break;
  }
  f->leftover = n - off;
  f->out_n = jrpc__out_pending(&s.out);
  if (f->out_n > cap)
    print_error("tu_run: %llu output bytes, room for %zu\n",
                (unsigned long long)f->out_n, cap);
  assert_true(f->out_n <= cap);
  got = jrpc__out_copy(&s.out, out, cap);
  assert_int_equal(got, f->out_n);
  if (got < cap)
    out[got] = '\0';
  jrpc__stream_free(&s);
  jrpc__arena_reset(&f->eng.arena);
  return got;
}

static void check_reply(const char *r, size_t n) {
  tu_json_t *j = tu_json_parse(r, n);
  int ok = j != NULL;
  if (!ok) {
    print_error("reply is not valid JSON: %.*s\n", (int)(n > 2000 ? 2000 : n),
                r);
  } else if (j->type == TU_J_ARRAY) {
    ok = j->nkids > 0;
    for (size_t i = 0; i < j->nkids && ok; i++)
      ok = tu_response_ok(j->kids[i]);
    if (!ok)
      print_error("batch reply malformed: %.*s\n", (int)(n > 2000 ? 2000 : n),
                  r);
  } else {
    ok = tu_response_ok(j);
    if (!ok)
      print_error("reply malformed: %.*s\n", (int)(n > 2000 ? 2000 : n), r);
  }
  tu_json_free(j);
  assert_true(ok);
}

size_t tu_call(tu_fixture *f, int framing, const char *payload, size_t n,
               char *out, size_t cap) {
  char *in = malloc(n + 8), *raw = malloc(cap + 8);
  const char *fp[2];
  size_t fn[2];
  assert_non_null(in);
  assert_non_null(raw);
  size_t inn = tu_frame(framing, payload, n, in, n + 8);
  size_t rn = tu_run(f, framing, in, inn, raw, cap + 8);
  int k = tu_unframe(framing, raw, rn, fp, fn, 2);
  if (k != 0 && k != 1)
    print_error("expected at most one reply frame, got %d: %.*s\n", k,
                (int)(rn > 2000 ? 2000 : rn), raw);
  assert_true(k == 0 || k == 1);
  size_t len = 0;
  if (k == 1) {
    assert_true(fn[0] < cap);
    memcpy(out, fp[0], fn[0]);
    len = fn[0];
    check_reply(out, len);
  }
  out[len] = '\0';
  free(in);
  free(raw);
  return len;
}

size_t tu_calls(tu_fixture *f, const char *payload, char *out, size_t cap) {
  return tu_call(f, JRPC_FRAMING_LENGTH, payload, strlen(payload), out, cap);
}

void tu_assert_json_(const char *r, size_t rn, const char *expected,
                     const char *file, int line) {
  if (!tu_json_equal(r, rn, expected, strlen(expected), 1)) {
    print_error("JSON mismatch\n  got:      %.*s\n  expected: %s\n",
                (int)(rn > 2000 ? 2000 : rn), r, expected);
    _fail(file, line);
  }
}

void tu_assert_code_(const char *r, size_t rn, int32_t code, const char *file,
                     int line) {
  int32_t got = tu_reply_code(r, rn);
  if (got != code) {
    print_error("expected error code %d, got %d in: %.*s\n", (int)code,
                (int)got, (int)(rn > 2000 ? 2000 : rn), r);
    _fail(file, line);
  }
}

char *tu_strdup(const char *s) {
  size_t n = strlen(s) + 1;
  char *p = malloc(n);
  assert_non_null(p);
  memcpy(p, s, n);
  return p;
}

jrpc_val_t tu_params_of(jrpc__parser_t *p, jrpc__arena_t *a, const char *text,
                        char *buf, size_t cap) {
  int fn = text ? snprintf(buf, cap - JRPC__PAD,
                           "{\"jsonrpc\":\"2.0\",\"method\":\"m\","
                           "\"params\":%s,\"id\":1}",
                           text)
                : snprintf(buf, cap - JRPC__PAD,
                           "{\"jsonrpc\":\"2.0\",\"method\":\"m\",\"id\":1}");
  assert_true(fn > 0 && (size_t)fn < cap - JRPC__PAD);
  memset(buf + fn, 0, JRPC__PAD);
  jrpc__parsed_t ps;
  assert_int_equal(p->ops->parse(p, buf, (size_t)fn, a, 10, &ps), 0);
  assert_int_equal(ps.status, JRPC__PARSE_OK);
  return ps.env[0].params;
}

void tu_each_backend(const char *const *texts, size_t n, tu_backend_case_fn fn,
                     void *arg) {
  static const char *const backends[] = {"native", "jsmn", "simdjson"};
  int ran = 0;
  for (size_t b = 0; b < sizeof(backends) / sizeof(backends[0]); b++) {
    jrpc__parser_t *p = jrpc__parser_new(backends[b]);
    if (!p)
      continue; /* simdjson: not in this build */
    ran++;
    jrpc__arena_t a;
    jrpc__arena_init(&a, 1 << 16, 1 << 20);
    for (size_t i = 0; i < n; i++) {
      char buf[1024];
      fn(backends[b], i, tu_params_of(p, &a, texts[i], buf, sizeof(buf)), arg);
      jrpc__arena_reset(&a);
    }
    jrpc__arena_free(&a);
    jrpc__parser_destroy(p);
  }
  assert_true(ran >= 2);
}

int tu_handler_a(jrpc_call_t *c, jrpc_val_t params, void *udata) {
  (void)c;
  (void)params;
  (void)udata;
  return 1;
}

int tu_handler_b(jrpc_call_t *c, jrpc_val_t params, void *udata) {
  return tu_handler_a(c, params, udata) + 1;
}
