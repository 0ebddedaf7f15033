/* testutil.h - shared helpers for the pipeline-level tests.
 *
 * Two independent parts:
 *  - a small, strict JSON reader of its own (RFC 8259: UTF-8 checked,
 *    surrogates paired, no raw control characters), used as the oracle for
 *    the library's replies. It shares no code with lib/, so a bug in the
 *    library's parser cannot hide itself here.
 *  - a fixture: a registry with the JSON-RPC 2.0 specification's handlers
 *    and a few that fail on purpose, an engine on the jsmn backend, and
 *    tu_run(), which pushes bytes through a jrpc__stream_t (framing, parse,
 *    rules, dispatch, writer) and copies out what would go to the socket. */
#ifndef JRPC_TESTUTIL_H
#define JRPC_TESTUTIL_H

#include <stddef.h>
#include <stdint.h>

#include "dispatch.h"
#include "frame.h"
#include "parser.h"
#include "registry.h"
#include "stream.h"

#include "jrpc/jrpc.h"

/* ------------------------------------------------------------------ */
/* JSON reader (the oracle)                                            */
/* ------------------------------------------------------------------ */

typedef enum tu_jtype {
  TU_J_NULL = 0,
  TU_J_FALSE,
  TU_J_TRUE,
  TU_J_NUMBER,
  TU_J_STRING,
  TU_J_ARRAY,
  TU_J_OBJECT,
} tu_jtype_t;

typedef struct tu_json {
  tu_jtype_t type;
  char *s;   /* number: its exact text; string: unescaped bytes (NUL-ended) */
  size_t n;  /* length of s */
  char *key; /* as a member of an object: the unescaped key (NUL-ended) */
  size_t key_n;
  struct tu_json **kids; /* elements / member values, in document order */
  size_t nkids;
} tu_json_t;

/* Parses exactly one JSON text (whitespace around it allowed). NULL when
 * the text is not valid JSON or nests deeper than 1000. */
tu_json_t *tu_json_parse(const char *s, size_t n);
void tu_json_free(tu_json_t *j);
/* 1 when s[0..n) is exactly one valid JSON text. */
int tu_json_valid(const char *s, size_t n);

/* Member `key` of an object (the first one with duplicates), or NULL. */
const tu_json_t *tu_json_get(const tu_json_t *j, const char *key);
/* Element i of an array (or the value of member i of an object), or NULL. */
const tu_json_t *tu_json_at(const tu_json_t *j, size_t i);

/* Structural equality of two JSON values: member order ignored (members
 * matched by key; with duplicate keys the multiset must match), array order
 * significant, numbers by exact text, strings by unescaped bytes. With
 * unordered_top_array, the elements of a top-level array may come in any
 * order (batch replies). 0 if either text is not valid JSON. */
int tu_json_equal(const char *a, size_t an, const char *b, size_t bn,
                  int unordered_top_array);
int tu_json_node_equal(const tu_json_t *a, const tu_json_t *b);

/* Compact re-serialisation of valid JSON text (whitespace outside strings
 * dropped, everything else byte-for-byte). Returns the length written into
 * out (NUL-terminated), or (size_t)-1 if invalid or cap is too small. */
size_t tu_json_minify(const char *s, size_t n, char *out, size_t cap);

/* ------------------------------------------------------------------ */
/* Reply helpers                                                       */
/* ------------------------------------------------------------------ */

/* 1 when j is a well-formed JSON-RPC 2.0 response object: exactly the
 * members "jsonrpc" (= "2.0"), one of "result"/"error", and "id" (string,
 * number or null); an error has an integer "code", a string "message" and
 * optionally "data", nothing else. */
int tu_response_ok(const tu_json_t *j);

/* For one response object (text): the error code, 0 for a result, or
 * INT32_MIN when the text is not a well-formed response. */
int32_t tu_reply_code(const char *s, size_t n);

/* Splits a framed output stream into its frames. Newline: every frame must
 * end with '\n'. Length: 4-byte big-endian length + payload. Returns the
 * frame count, or -1 when the stream is not well framed (trailing partial
 * frame, empty line, ...). At most max frames are described. */
int tu_unframe(int framing, const char *buf, size_t n, const char **fp,
               size_t *fn, int max);

/* Wraps payload p[0..n) in one frame: length header, or a trailing '\n'.
 * Returns bytes written into out (cap must suffice: asserted). */
size_t tu_frame(int framing, const char *p, size_t n, char *out, size_t cap);

/* ------------------------------------------------------------------ */
/* Fixture                                                             */
/* ------------------------------------------------------------------ */

typedef struct tu_fixture {
  jrpc__registry_t reg;
  jrpc__engine_t eng;
  jrpc__limits_t lim;
  size_t chunk;    /* tu_run: bytes per read (0 = as many as fit) */
  int last_rc;     /* tu_run: the last jrpc__stream_feed() result */
  int closed;      /* tu_run: feed returned JRPC__ECLOSE */
  uint64_t out_n;  /* tu_run: bytes the stream produced (may exceed cap) */
  size_t leftover; /* tu_run: input bytes never fed (after a close) */
} tu_fixture;

/* Counters the fixture's handlers bump, so that notifications can be seen
 * to run. Reset by tu_fixture_init. */
extern int tu_calls_update;
extern int tu_calls_notify_hello;
extern int tu_calls_fail;

/* The bytes the "ctl" handler writes as its result string: every C0
 * control character, DEL, '"', '\\', '/', and some non-ASCII UTF-8. */
extern const char tu_ctl_bytes[];
extern const size_t tu_ctl_len;

/* The standard handlers (public jrpc.h API only):
 *   subtract      [a,b] or {"minuend":a,"subtrahend":b} -> a-b
 *   sum           [n...] -> sum;  update, notify_hello: count, write nothing
 *   get_data      -> ["hello",5]
 *   echo          params verbatim through jrpc_raw/jrpc_w_raw (absent: null)
 *   echo_str      ["s"] -> "s" through jrpc_as_str/jrpc_w_str
 *   ptype         -> jrpc_type(params) as a number (0 = absent)
 *   fail          error 4242, message "it \"broke\"\n\ttwice é"
 *   fail_code     [code,"msg"] -> that error
 *   fail_data     -32602 "Invalid params" with data {"field":"a",
 *                 "why":[1,2,null]}, or params verbatim as data if given
 *   fail_bare     returns JRPC_EINVAL without an error (-> -32000)
 *   fail_after_write  partial result, then error 77 "late"
 *   misuse        ["key"|"unclosed"|"two"|"end"|"nokey"|"mismatch"|
 *                 "dangling"] misuses the writer, returns 0 (-> -32000)
 *   huge          [n] -> string of n 'x'; [n,"arr"] -> n numbers
 *   ctl           -> tu_ctl_bytes as a string
 *   nothing       returns 0 without writing (-> "result":null)
 *   bad_utf8      writes a key and a string holding invalid UTF-8
 *
 * Registers the standard handlers and starts an engine on
 * the "jsmn" backend with `lim` (NULL: JRPC__LIMITS_DEFAULT). Asserts. */
/* The parser backend tests run on: $JRPC_TEST_PARSER, else "jsmn". ctest
 * runs the backend-neutral tests once per backend. */
const char *tu_parser_name(void);
/* A new parser of that backend (tu_parser.c). "auto" gets a threshold of
 * TU_AUTO_THRESHOLD bytes instead of the CPU's measured one, so that small
 * frames go to native and larger ones to simdjson in every run, and counts
 * which backend parsed each frame. NULL if unavailable. */
#define TU_AUTO_THRESHOLD 100
jrpc__parser_t *tu_parser_new(void);
/* A prerequisite the machine lacks (tu_skip.c): prints `what` and returns
 * the exit status for main: TU_EXIT_SKIP (ctest: skipped), or 1 when
 * CI=true. */
#define TU_EXIT_SKIP 77
int tu_missing(const char *what);
/* cmocka test, last in a backend-neutral test's list: with "auto", both
 * backends parsed frames in this process (skipped on other backends). */
void tu_test_auto_switched(void **state);

void tu_fixture_init(tu_fixture *f, const jrpc__limits_t *lim);
void tu_fixture_free(tu_fixture *f);
/* Registers one more handler (asserts success). */
void tu_fixture_add(tu_fixture *f, const char *name, jrpc_handler_fn fn,
                    void *udata);

/* Two handlers that do nothing useful (they return 1 and 2), told apart by
 * their addresses: for tests of which handler a slot holds. */
int tu_handler_a(jrpc_call_t *c, jrpc_val_t params, void *udata);
int tu_handler_b(jrpc_call_t *c, jrpc_val_t params, void *udata);

/* cmocka group setup/teardown that put a default fixture in *state. */
int tu_setup(void **state);
int tu_teardown(void **state);

/* Feeds in[0..n) through a fresh jrpc__stream_t with `framing`
 * (JRPC_FRAMING_NEWLINE / JRPC_FRAMING_LENGTH), eof on the last read,
 * and copies everything the stream produced into out (NUL-terminated if
 * room). Returns the bytes copied; asserts that they all fit. */
size_t tu_run(tu_fixture *f, int framing, const char *in, size_t n, char *out,
              size_t cap);

/* One request payload in, its single reply payload out: frames the payload,
 * runs it, and asserts that at most one frame came back. Returns the reply
 * payload length (0 = no frame at all); the payload is NUL-terminated in
 * out. Every reply is checked to be valid JSON and (as an object, or each
 * element of an array) a well-formed response. */
size_t tu_call(tu_fixture *f, int framing, const char *payload, size_t n,
               char *out, size_t cap);
/* tu_call with a NUL-terminated payload and length framing. */
size_t tu_calls(tu_fixture *f, const char *payload, char *out, size_t cap);

/* Asserts that the reply payload r[0..rn) equals `expected` as JSON
 * (batch arrays order-free), printing both when not. */
#define tu_assert_json(r, rn, expected)                                        \
  tu_assert_json_((r), (rn), (expected), __FILE__, __LINE__)
void tu_assert_json_(const char *r, size_t rn, const char *expected,
                     const char *file, int line);

/* Asserts that r[0..rn) is one response with error code `code`. */
#define tu_assert_code(r, rn, code)                                            \
  tu_assert_code_((r), (rn), (code), __FILE__, __LINE__)
void tu_assert_code_(const char *r, size_t rn, int32_t code, const char *file,
                     int line);

/* The params of a request frame {"jsonrpc":"2.0","method":"m","params":
 * TEXT,"id":1} parsed by p (text NULL: no params member), written into
 * buf, which must stay alive while the view is used. Asserts. */
jrpc_val_t tu_params_of(jrpc__parser_t *p, jrpc__arena_t *a, const char *text,
                        char *buf, size_t cap);

/* Runs fn(backend, i, params, arg) for each of the n params texts (NULL:
 * no params member) on every parser backend of the build (native, jsmn,
 * simdjson), params being texts[i] as that backend parsed it
 * (tu_params_of). Asserts that at least two backends ran. */
typedef void (*tu_backend_case_fn)(const char *backend, size_t i,
                                   jrpc_val_t params, void *arg);
void tu_each_backend(const char *const *texts, size_t n, tu_backend_case_fn fn,
                     void *arg);

/* Bytes of a big or odd string, for test inputs: a heap copy of s. */
char *tu_strdup(const char *s);

#endif
