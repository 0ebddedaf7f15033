/* parser_simdjson.cpp - the simdjson backend: an extern "C" shim behind the
 * same table as the jsmn backend (parser.h).
 *
 * simdjson's DOM parser validates the whole frame (structure, strings,
 * escapes, UTF-8, numbers, literals, depth) in one call and leaves a tape.
 * The On-Demand API would validate only what it visits, so the DOM it is.
 * The tape has no source positions, and jrpcd needs them: ids are echoed
 * byte for byte, jrpc_raw hands out exact JSON text, and keys are given
 * undecoded like the jsmn backend gives them. So one linear pass pairs each
 * tape entry with the structural index simdjson's first stage found for it
 * (the start of every value, in the same order as the tape); a value's
 * text runs from its structural to the next one, less whitespace.
 *
 * One parser per engine (per worker thread), reused, with room for 64 KiB
 * frames from the start; a larger frame doubles it (sj_grow). Frames are parsed
 * in place: the pooled buffers keep JRPC__PAD readable bytes after every frame,
 * which is simdjson's padding. */
#include <simdjson.h>

#include <cstdint>
#include <cstring>
#include <new>

extern "C" {
#include "jsontext.h"
#include "parser.h"
}

static_assert(simdjson::SIMDJSON_PADDING <= JRPC__PAD,
              "pooled buffers must leave simdjson's padding after a frame");

namespace {

enum : uint8_t {
  T_ROOT = 'r',
  T_ARR = '[',
  T_OBJ = '{',
  T_ARR_END = ']',
  T_OBJ_END = '}',
  T_STR = '"',
  T_I64 = 'l',
  T_U64 = 'u',
  T_F64 = 'd',
  T_TRUE = 't',
  T_FALSE = 'f',
  T_NULL = 'n',
};

struct sj_doc {
  jrpc__doc_t hdr;
  const simdjson::dom::document *sdoc; /* for the decoded strings */
  const uint64_t *tape;
  const uint32_t *si; /* structural indexes of simdjson's stage 1 */
  uint32_t nsi;
  uint32_t *sidx; /* tape index -> structural number of its value */
  uint32_t ntape;
  /* The last jrpc_at() answer (see the jsmn backend): loops over at(i)
   * stay linear. */
  uint32_t at_container, at_i, at_idx;
};

struct sj_backend {
  jrpc__parser_t base;
  simdjson::dom::parser parser;
  sj_doc doc;
  /* For numbers simdjson will not hold (integers past 64 bits, exponents
   * past double): valid JSON all the same, which jsmn takes as text. */
  jrpc__parser_t *numbers;
};

inline uint8_t tag(const sj_doc *d, uint32_t i) {
  return (uint8_t)(d->tape[i] >> 56);
}
inline uint64_t payload(const sj_doc *d, uint32_t i) {
  return d->tape[i] & 0x00FFFFFFFFFFFFFFull;
}

/* The entry after the value at i (its end, for containers). */
inline uint32_t after(const sj_doc *d, uint32_t i) {
  switch (tag(d, i)) {
  case T_ARR:
  case T_OBJ:
    return (uint32_t)payload(d, i);
  case T_I64:
  case T_U64:
  case T_F64:
    return i + 2;
  default:
    return i + 1;
  }
}

inline bool is_ws(char c) {
  return c == ' ' || c == '\t' || c == '\n' || c == '\r';
}

/* Source text of the value at tape index i. */
void text(const sj_doc *d, uint32_t i, const char **s, size_t *n) {
  const char *buf = d->hdr.buf;
  uint32_t k = d->sidx[i];
  size_t start = d->si[k], end;
  uint8_t t = tag(d, i);
  if (t == T_ARR || t == T_OBJ) {
    /* The matching end entry's structural is the closing bracket. */
    end = d->si[d->sidx[(uint32_t)payload(d, i) - 1]] + 1;
  } else {
    end = k + 1 < d->nsi ? d->si[k + 1] : d->hdr.len;
    if (end > d->hdr.len)
      end = d->hdr.len;
    while (end > start && is_ws(buf[end - 1]))
      end--;
  }
  *s = buf + start;
  *n = end - start;
}

jrpc_type_t type_of(uint8_t t) {
  switch (t) {
  case T_OBJ:
    return JRPC_T_OBJECT;
  case T_ARR:
    return JRPC_T_ARRAY;
  case T_STR:
    return JRPC_T_STRING;
  case T_I64:
  case T_U64:
  case T_F64:
    return JRPC_T_NUMBER;
  case T_TRUE:
    return JRPC_T_TRUE;
  case T_FALSE:
    return JRPC_T_FALSE;
  case T_NULL:
    return JRPC_T_NULL;
  default:
    return JRPC_T_NONE;
  }
}

/* Decoded key (simdjson unescaped it into its string buffer). */
inline void decoded(const simdjson::dom::document &doc, uint64_t word,
                    const char **s, uint32_t *n) {
  const uint8_t *p = doc.string_buf.get() + (word & 0x00FFFFFFFFFFFFFFull);
  uint32_t len;
  std::memcpy(&len, p, sizeof(len));
  *s = (const char *)p + sizeof(len);
  *n = len;
}

enum { M_OTHER = 0, M_JSONRPC, M_METHOD, M_PARAMS, M_ID };

inline int member_of(const char *k, uint32_t n) {
  switch (n) {
  case 2:
    return std::memcmp(k, "id", 2) == 0 ? M_ID : M_OTHER;
  case 6:
    if (std::memcmp(k, "method", 6) == 0)
      return M_METHOD;
    return std::memcmp(k, "params", 6) == 0 ? M_PARAMS : M_OTHER;
  case 7:
    return std::memcmp(k, "jsonrpc", 7) == 0 ? M_JSONRPC : M_OTHER;
  default:
    return M_OTHER;
  }
}

/* The envelope members of the request object at tape index o. */
void envelope(sj_backend *b, uint32_t o, jrpc__envelope_t *env) {
  sj_doc *d = &b->doc;
  std::memset(env, 0, sizeof(*env));
  if (tag(d, o) != T_OBJ) {
    env->params = jrpc__val_none();
    return;
  }
  env->is_object = 1;
  env->params = jrpc__val_none();
  uint8_t seen = 0;
  uint32_t end = (uint32_t)payload(d, o) - 1;
  for (uint32_t k = o + 1; k < end;) {
    uint32_t v = k + 1;
    const char *key;
    uint32_t kn;
    decoded(*d->sdoc, d->tape[k], &key, &kn);
    int m = member_of(key, kn);
    if (m != M_OTHER) {
      if (seen & (1u << m))
        env->duplicate = 1;
      seen |= (uint8_t)(1u << m);
      uint8_t t = (uint8_t)type_of(tag(d, v));
      const char *s;
      size_t n;
      switch (m) {
      case M_JSONRPC:
      case M_METHOD:
        text(d, v, &s, &n);
        if (t == JRPC_T_STRING) {
          s++; /* content between the quotes */
          n -= 2;
        }
        if (m == M_JSONRPC) {
          env->jsonrpc_t = t;
          env->jsonrpc = s;
          env->jsonrpc_n = (uint32_t)n;
          env->jsonrpc_esc = t == JRPC_T_STRING && std::memchr(s, '\\', n);
        } else {
          env->method_t = t;
          env->method = s;
          env->method_n = (uint32_t)n;
          env->method_esc = t == JRPC_T_STRING && std::memchr(s, '\\', n);
        }
        break;
      case M_ID:
        text(d, v, &s, &n);
        env->id_t = t;
        env->id = s;
        env->id_n = (uint32_t)n;
        break;
      default:
        env->params_t = t;
        jrpc__val_put(&env->params, &d->hdr, v);
      }
    }
    k = after(d, v);
  }
}

/* simdjson sizes its buffers to the frame at hand, so frames that grow by
 * a few bytes at a time (ids gaining digits) would reallocate again and
 * again; doubling keeps that to a few times over a worker's life. */
int sj_grow(sj_backend *b, size_t len) {
  size_t cap = b->parser.capacity() * 2;
  if (cap < len)
    cap = len;
  if (cap > b->parser.max_capacity())
    cap = len; /* over the maximum, parse() reports it */
  if (b->parser.allocate(cap, JRPC__MAX_DEPTH + 1) != simdjson::SUCCESS ||
      b->parser.doc.allocate(cap) != simdjson::SUCCESS)
    return -1;
  return 0;
}

int sj_parse(jrpc__parser_t *p, const char *buf, size_t len, jrpc__arena_t *a,
             uint32_t max_batch, jrpc__parsed_t *out) {
  sj_backend *b = reinterpret_cast<sj_backend *>(p);
  sj_doc *d = &b->doc;
  out->status = JRPC__PARSE_OK;
  out->is_batch = 0;
  out->count = 0;
  out->env = nullptr;
  out->why = nullptr;
  d->hdr.buf = buf;
  d->hdr.len = len;
  d->at_container = 0;
  d->ntape = 0;

  if (JRPC__UNLIKELY(len > b->parser.capacity()) && sj_grow(b, len) != 0)
    return JRPC_ENOMEM;
  simdjson::dom::element root;
  auto err = b->parser.parse(reinterpret_cast<const uint8_t *>(buf), len, false)
                 .get(root);
  if (err == simdjson::MEMALLOC)
    return JRPC_ENOMEM;
  if (err == simdjson::NUMBER_ERROR || err == simdjson::NUMBER_OUT_OF_RANGE) {
    /* Rare: such a frame is answered exactly as the jsmn backend answers
     * it, so the two backends never differ on big numbers. */
    if (!b->numbers)
      b->numbers = jrpc__parser_jsmn_new(JRPC__JSMN_FUSED);
    if (!b->numbers)
      return JRPC_ENOMEM;
    return b->numbers->ops->parse(b->numbers, buf, len, a, max_batch, out);
  }
  if (err) {
    out->status = JRPC__PARSE_INVALID;
    out->why = simdjson::error_message(err);
    return 0;
  }
  d->sdoc = &b->parser.doc;
  d->tape = b->parser.doc.tape.get();
  d->ntape = (uint32_t)(payload(d, 0) + 1); /* root ... root */
  d->si = b->parser.implementation->structural_indexes.get();
  d->nsi = b->parser.implementation->n_structural_indexes;

  /* Pair every tape entry with its structural: the tape lists values (and
   * container ends) in source order, the structurals add ':' and ','. */
  uint32_t *sidx =
      static_cast<uint32_t *>(jrpc__arena_alloc(a, d->ntape * sizeof(*sidx)));
  if (!sidx)
    return JRPC_ENOMEM;
  d->sidx = sidx;
  uint32_t s = 0, depth = 0;
  for (uint32_t i = 1; i + 1 < d->ntape;) {
    while (s < d->nsi && (buf[d->si[s]] == ':' || buf[d->si[s]] == ','))
      s++;
    sidx[i] = s++;
    uint8_t t = tag(d, i);
    /* The depth limit as every backend counts it: containers only
     * (simdjson's own limit also counts the scalar inside the deepest
     * one, so it is set one higher). */
    if (t == T_ARR || t == T_OBJ) {
      if (++depth > JRPC__MAX_DEPTH) {
        out->status = JRPC__PARSE_INVALID;
        out->why = "nested too deeply";
        return 0;
      }
    } else if (t == T_ARR_END || t == T_OBJ_END) {
      depth--;
    }
    i += (t == T_I64 || t == T_U64 || t == T_F64) ? 2 : 1;
  }

  uint32_t top = 1;
  if (tag(d, top) == T_ARR) {
    out->is_batch = 1;
    uint32_t n = (uint32_t)(payload(d, top) >> 32) & 0xFFFFFF;
    if (n == 0xFFFFFF) { /* saturated: count them */
      n = 0;
      for (uint32_t k = top + 1, end = (uint32_t)payload(d, top) - 1; k < end;
           k = after(d, k))
        n++;
    }
    out->count = n;
    if (n > max_batch) {
      out->status = JRPC__PARSE_BATCH_TOO_LARGE;
      return 0;
    }
  } else {
    out->count = 1;
  }
  if (!out->count)
    return 0;
  out->env = static_cast<jrpc__envelope_t *>(
      jrpc__arena_alloc(a, out->count * sizeof(*out->env)));
  if (!out->env)
    return JRPC_ENOMEM;
  if (!out->is_batch) {
    envelope(b, top, &out->env[0]);
    return 0;
  }
  uint32_t k = top + 1;
  for (uint32_t i = 0; i < out->count; i++, k = after(d, k))
    envelope(b, k, &out->env[i]);
  return 0;
}

/* ---- views ---- */

inline const sj_doc *DOC(const jrpc__doc_t *d) {
  return reinterpret_cast<const sj_doc *>(d);
}

jrpc_type_t sj_type(const jrpc__doc_t *d, uint32_t idx) {
  return type_of(tag(DOC(d), idx));
}

uint32_t sj_len(const jrpc__doc_t *hd, uint32_t idx) {
  const sj_doc *d = DOC(hd);
  uint8_t t = tag(d, idx);
  if (t != T_ARR && t != T_OBJ)
    return 0;
  uint32_t n = (uint32_t)(payload(d, idx) >> 32) & 0xFFFFFF;
  if (n < 0xFFFFFF)
    return n;
  n = 0;
  uint32_t end = (uint32_t)payload(d, idx) - 1;
  for (uint32_t k = idx + 1; k < end; k = after(d, k + (t == T_OBJ)))
    n++;
  return n;
}

/* The first element (array) or member value (object) of a container. */
jrpc_val_t sj_first(const jrpc__doc_t *hd, uint32_t idx) {
  const sj_doc *d = DOC(hd);
  uint8_t t = tag(d, idx);
  if ((t != T_ARR && t != T_OBJ) || idx + 1 == (uint32_t)payload(d, idx) - 1)
    return jrpc__val_none();
  jrpc_val_t v = jrpc__val(hd, t == T_OBJ ? idx + 2 : idx + 1);
  v.aux_ = idx; /* the container, for next */
  return v;
}

jrpc_val_t sj_next(const jrpc__doc_t *hd, jrpc_val_t v) {
  const sj_doc *d = DOC(hd);
  uint32_t c = v.aux_;
  uint8_t t = tag(d, c);
  if (t != T_ARR && t != T_OBJ)
    return jrpc__val_none();
  uint32_t n = after(d, v.idx_);
  if (n >= (uint32_t)payload(d, c) - 1)
    return jrpc__val_none();
  jrpc_val_t w = jrpc__val(hd, t == T_OBJ ? n + 1 : n);
  w.aux_ = c;
  return w;
}

jrpc_val_t sj_at(const jrpc__doc_t *hd, uint32_t idx, uint32_t i) {
  sj_doc *d = const_cast<sj_doc *>(DOC(hd));
  jrpc_val_t v;
  uint32_t from = 0;
  if (d->at_container == idx + 1 && d->at_i <= i) {
    v = jrpc__val(hd, d->at_idx);
    v.aux_ = idx;
    from = d->at_i;
  } else {
    v = sj_first(hd, idx);
  }
  for (uint32_t k = from; k < i && v.doc_; k++)
    v = sj_next(hd, v);
  if (v.doc_) {
    d->at_container = idx + 1;
    d->at_i = i;
    d->at_idx = v.idx_;
  }
  return v;
}

jrpc_val_t sj_get(const jrpc__doc_t *hd, uint32_t idx, const char *key,
                  size_t n) {
  const sj_doc *d = DOC(hd);
  if (tag(d, idx) != T_OBJ)
    return jrpc__val_none();
  /* Keys compare decoded, as the jsmn backend compares them. */
  uint32_t end = (uint32_t)payload(d, idx) - 1;
  for (uint32_t k = idx + 1; k < end; k = after(d, k + 1)) {
    const char *s;
    uint32_t sn;
    decoded(*d->sdoc, d->tape[k], &s, &sn);
    if (sn == n && std::memcmp(s, key, n) == 0) {
      jrpc_val_t v = jrpc__val(hd, k + 1);
      v.aux_ = idx;
      return v;
    }
  }
  return jrpc__val_none();
}

int sj_key(const jrpc__doc_t *hd, jrpc_val_t v, const char **s, size_t *n) {
  const sj_doc *d = DOC(hd);
  if (tag(d, v.aux_) != T_OBJ)
    return JRPC_ENOENT; /* not a member: as the jsmn backend says */
  text(d, v.idx_ - 1, s, n);
  (*s)++; /* content between the quotes */
  *n -= 2;
  return 0;
}

jrpc_type_t sj_raw(const jrpc__doc_t *hd, uint32_t idx, const char **s,
                   size_t *n) {
  text(DOC(hd), idx, s, n);
  return sj_type(hd, idx);
}

void sj_destroy(jrpc__parser_t *p) {
  sj_backend *b = reinterpret_cast<sj_backend *>(p);
  jrpc__parser_destroy(b->numbers);
  b->~sj_backend();
  ::operator delete(b, std::nothrow);
}

const jrpc__parser_ops_t sj_ops = {
    "simdjson", sj_destroy, sj_parse, sj_type, sj_len, sj_at,
    sj_get,     sj_first,   sj_next,  sj_key,  sj_raw,
};

} // namespace

extern "C" jrpc__parser_t *jrpc__parser_simdjson_new(void) {
  void *mem = ::operator new(sizeof(sj_backend), std::nothrow);
  if (!mem)
    return nullptr;
  sj_backend *b = new (mem) sj_backend();
  b->base.ops = &sj_ops;
  b->doc.hdr.ops = &sj_ops;
  /* Room for the depth limit of every backend (checked exactly in
   * sj_parse); a first capacity that covers ordinary frames. */
  if (b->parser.allocate(64 * 1024, JRPC__MAX_DEPTH + 1) != simdjson::SUCCESS ||
      b->parser.doc.allocate(64 * 1024) != simdjson::SUCCESS) {
    sj_destroy(&b->base);
    return nullptr;
  }
  return &b->base;
}

extern "C" const char *jrpc__simdjson_kernel(void) {
  return simdjson::get_active_implementation()->name().c_str();
}
