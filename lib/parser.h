/* parser.h - the parser backend interface.
 *
 * A backend parses one frame in place (the frame has >= JRPC__PAD readable
 * bytes after it), validates all of it, and reads the JSON-RPC envelope of
 * each request in one call: jrpc__parsed_t lists, per request object, the
 * members request.c needs. Handlers then read params through by-value views
 * (jrpc_val_t) whose operations go through the same backend table, so
 * request and dispatch code never know which backend ran. */
#ifndef JRPC_PARSER_H
#define JRPC_PARSER_H

#include <stddef.h>
#include <stdint.h>
#if defined(__x86_64__) && defined(__SSE2__)
#include <emmintrin.h>
#endif

#include "arena.h"
#include "common.h"

/* Deepest nesting accepted (arrays/objects), in every backend. */
#define JRPC__MAX_DEPTH 128

typedef struct jrpc__parser jrpc__parser_t;
typedef struct jrpc__doc jrpc__doc_t;

/* The members of one request object, as found in the document. A member
 * that is absent has type JRPC_T_NONE. Strings are given as their raw
 * content between the quotes (escapes not yet decoded). */
typedef struct jrpc__envelope {
  /* jrpc__request_check_fast reads the first eight bytes as one word. The
   * scan writes them early (with the method), and params_t and id_t, set
   * last, are kept out of them: a load that spans bytes of stores still in
   * flight cannot take its data from them and waits until they are done. */
  uint8_t is_object; /* 0: the element is not an object at all */
  uint8_t duplicate; /* a member of the envelope occurs twice */
  uint8_t jsonrpc_t; /* jrpc_type_t of each member */
  uint8_t method_t;
  uint8_t jsonrpc_esc; /* the string holds a backslash escape */
  uint8_t method_esc;
  uint8_t zero_[2]; /* always 0 */
  uint8_t params_t;
  uint8_t id_t;
  uint8_t unused_[2];
  uint32_t jsonrpc_n;
  uint32_t method_n;
  uint32_t id_n;
  const char *jsonrpc; /* string content, if a string */
  const char *method;  /* string content, if a string */
  const char *id;      /* the id's exact JSON bytes */
  jrpc_val_t params;
} jrpc__envelope_t;

enum {
  JRPC__PARSE_OK = 0,
  JRPC__PARSE_INVALID = 1,         /* not valid JSON */
  JRPC__PARSE_BATCH_TOO_LARGE = 2, /* valid, but a batch over max_batch */
};

typedef struct jrpc__parsed {
  int status;            /* JRPC__PARSE_* */
  int is_batch;          /* the root is an array */
  uint32_t count;        /* requests (batch elements), or batch size */
  jrpc__envelope_t *env; /* count entries, in the arena */
  const char *why;       /* with INVALID: a short reason (for logs/tests) */
} jrpc__parsed_t;

/* The document header every backend's document starts with; view handles
 * point at it. */
struct jrpc__doc {
  const struct jrpc__parser_ops *ops;
  const char *buf;
  size_t len;
};

typedef struct jrpc__parser_ops {
  const char *name;
  void (*destroy)(jrpc__parser_t *p);
  /* Parse and validate buf[0..len); fill *out. Allocations go to the arena
   * (reset by the caller per frame). JRPC_ENOMEM or 0. */
  int (*parse)(jrpc__parser_t *p, const char *buf, size_t len, jrpc__arena_t *a,
               uint32_t max_batch, jrpc__parsed_t *out);
  /* Views. idx is backend-defined; the wrappers in view.h handle NONE. */
  jrpc_type_t (*type)(const jrpc__doc_t *d, uint32_t idx);
  uint32_t (*len)(const jrpc__doc_t *d, uint32_t idx);
  jrpc_val_t (*at)(const jrpc__doc_t *d, uint32_t idx, uint32_t i);
  jrpc_val_t (*get)(const jrpc__doc_t *d, uint32_t idx, const char *key,
                    size_t n);
  jrpc_val_t (*first)(const jrpc__doc_t *d, uint32_t idx);
  /* next and key need the view as first/at/get returned it. */
  jrpc_val_t (*next)(const jrpc__doc_t *d, jrpc_val_t v);
  /* Raw key content (between quotes) of the member whose value is v. */
  int (*key)(const jrpc__doc_t *d, jrpc_val_t v, const char **s, size_t *n);
  /* Exact JSON bytes of the value, and its type (one call serves both
   * for the conversions). */
  jrpc_type_t (*raw)(const jrpc__doc_t *d, uint32_t idx, const char **s,
                     size_t *n);
} jrpc__parser_ops_t;

struct jrpc__parser {
  const jrpc__parser_ops_t *ops;
};

/* Validation strategies of the jsmn backend, for measurement: FUSED is the
 * default (validation inside the envelope walk); SEPARATE validates in a
 * walk of its own first; NONE skips validation (not conforming: bench
 * only). */
typedef enum jrpc__jsmn_mode {
  JRPC__JSMN_FUSED = 0,
  JRPC__JSMN_SEPARATE = 1,
  JRPC__JSMN_NONE = 2,
} jrpc__jsmn_mode_t;

jrpc__parser_t *jrpc__parser_jsmn_new(jrpc__jsmn_mode_t mode);

/* jrpcd's own tokenizer (parser_native.c): validation and token links in
 * the pass that finds the tokens. */
jrpc__parser_t *jrpc__parser_native_new(void);

/* simdjson (DOM); only in builds with JRPC_SIMDJSON. The kernel simdjson
 * chose for this CPU at run time: "icelake", "haswell", "westmere",
 * "fallback", ... */
jrpc__parser_t *jrpc__parser_simdjson_new(void);
const char *jrpc__simdjson_kernel(void);

/* Per frame: native below `threshold` bytes, simdjson from there on.
 * JRPC__AUTO_MEASURED picks the threshold measured for the running kernel
 * (parser_auto.c); without simdjson in the build, it is native for
 * everything. */
#define JRPC__AUTO_MEASURED ((size_t)-2)
jrpc__parser_t *jrpc__parser_auto_new(size_t threshold);
/* The threshold an auto parser uses (SIZE_MAX: never simdjson). */
size_t jrpc__parser_auto_threshold(const jrpc__parser_t *p);
/* Why it uses that threshold: the evidence measured for this kernel, or
 * the configuration's override (a static string). */
const char *jrpc__parser_auto_why(const jrpc__parser_t *p);

/* By name: "native", "jsmn", "simdjson" (NULL in a build without it), "auto";
 * NULL if unknown. */
jrpc__parser_t *jrpc__parser_new(const char *name);

/* The backends this build has, comma-separated ("native,jsmn,simdjson"),
 * for /metrics' jrpcd_build_info. */
const char *jrpc__parsers_built(void);

static inline void jrpc__parser_destroy(jrpc__parser_t *p) {
  if (p)
    p->ops->destroy(p);
}

static inline jrpc_val_t jrpc__val(const jrpc__doc_t *d, uint32_t idx) {
  jrpc_val_t v = {d, idx, 0};
  return v;
}
/* *dst = jrpc__val(d, idx), where there is SSE2 as one 16-byte store. The
 * request path copies an envelope's params right after the scan with one
 * 16-byte load, and a load cannot take its data from several smaller
 * stores still in flight: it waits until they are done (perf showed that
 * wait as a tenth of the dispatch's time). */
static inline void jrpc__val_put(jrpc_val_t *dst, const jrpc__doc_t *d,
                                 uint32_t idx) {
#if defined(__x86_64__) && defined(__SSE2__)
  _mm_storeu_si128((__m128i *)(void *)dst,
                   _mm_set_epi64x((long long)idx, (long long)(intptr_t)d));
#else
  *dst = jrpc__val(d, idx);
#endif
}
static inline jrpc_val_t jrpc__val_none(void) {
  jrpc_val_t v = {NULL, 0, 0};
  return v;
}

#endif
