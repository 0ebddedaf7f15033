/* fuzz.h - what the fuzz targets share (fuzz_common.c).
 *
 * Every target is one file defining LLVMFuzzerTestOneInput. A broken
 * invariant is reported with fz_fail(), which prints what went wrong and
 * aborts: libFuzzer keeps the input as a crash, the replay main fails its
 * ctest. Nothing here uses cmocka; the JSON oracle is tests/testutil's
 * reader, which shares no code with lib/. */
#ifndef JRPC_FUZZ_H
#define JRPC_FUZZ_H

#include <stddef.h>
#include <stdint.h>

#include "dispatch.h"
#include "frame.h"
#include "module.h"
#include "registry.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* Prints "fuzz: <target>: <message>" and aborts. */
__attribute__((noreturn, format(printf, 1, 2))) void fz_fail(const char *fmt,
                                                             ...);
#define FZ_CHECK(cond, ...)                                                    \
  do {                                                                         \
    if (!(cond))                                                               \
      fz_fail(__VA_ARGS__);                                                    \
  } while (0)

/* Known bugs of lib/ or daemon/ that the fuzzers found and that are not
 * fixed yet (README.md, "Findings"): a check may let exactly that deviation
 * pass with `|| fz_known("name")`, so that CI stays green and fuzzing goes
 * on past it. fz_known() is 1 (and says so on stderr, once per name)
 * unless JRPC_FUZZ_STRICT=1 is set in the environment: then 0, the check
 * fails, and the input in regression/ reproduces the bug. When the bug is
 * fixed, its fz_known() call goes. None is open now. */
int fz_known(const char *name);

/* Small deterministic generator, seeded from the input. */
typedef struct fz_rng {
  uint64_t s;
} fz_rng_t;
void fz_rng_seed(fz_rng_t *r, const uint8_t *data, size_t size, uint64_t salt);
uint64_t fz_rng_next(fz_rng_t *r);
/* Uniform-ish in [lo, hi]. */
size_t fz_rng_range(fz_rng_t *r, size_t lo, size_t hi);
/* The next read of in[*off..n) into the stream's buffer, as a socket
 * would bring it: `how` 0 as much as fits, 1 a byte at a time, 2 0..16
 * bytes, 3 1..5000 (drawn from r). Advances *off; returns the bytes read
 * (aborts when the stream gives no room). */
struct jrpc__stream;
size_t fz_read_into(struct jrpc__stream *s, fz_rng_t *r, int how,
                    const char *in, size_t n, size_t *off);

/* ------------------------------------------------------------------ */
/* Reference model of the frame codecs (written from frame.h's comment, */
/* sharing no code with lib/frame.c)                                   */
/* ------------------------------------------------------------------ */

enum { FZ_EV_FRAME = 1, FZ_EV_TOO_LARGE = 2 };

typedef struct fz_event {
  int kind;     /* FZ_EV_* */
  size_t off;   /* FRAME: payload offset in the input */
  size_t n;     /* FRAME: payload length */
  uint64_t got; /* TOO_LARGE: the frame's size */
  int fatal;    /* TOO_LARGE: framing is lost (length framing) */
} fz_event_t;

typedef struct fz_events {
  fz_event_t *ev;
  size_t n, cap;
  size_t end; /* input bytes that form complete frames (the rest is a
                 partial length-framed frame, dropped at EOF) */
} fz_events_t;

/* Splits a complete input (EOF after the last byte) into its frames. */
void fz_ref_frames(int framing, uint32_t max, const char *in, size_t n,
                   fz_events_t *out);
void fz_events_free(fz_events_t *e);

/* ------------------------------------------------------------------ */
/* Handlers                                                            */
/* ------------------------------------------------------------------ */

/* Registers the fuzz handlers (see fuzz_common.c: echo, walk, vm, fail,
 * fail_data, huge, defer) and starts the math module (handlers/math,
 * compiled in as math_module_info) on reg. Returns 0 or aborts. */
void fz_handlers_init(jrpc__registry_t *reg, jrpc__module_t *math);
void fz_handlers_free(jrpc__registry_t *reg, jrpc__module_t *math);

/* An engine of `backend` on those handlers, made once per process (on
 * the first call) and freed at exit; every log line dropped. */
typedef struct fz_engine {
  int ready;
  jrpc__registry_t reg;
  jrpc__module_t math;
  jrpc__engine_t eng;
} fz_engine_t;
jrpc__engine_t *fz_engine(const char *backend);

/* A log sink that drops everything (handlers may call jrpc_log). */
void fz_log_drop(void *arg, int level, const char *msg);

/* ------------------------------------------------------------------ */
/* The oracle                                                          */
/* ------------------------------------------------------------------ */

/* What fz_check_reply found in one reply payload. */
typedef struct fz_reply {
  int batch;    /* an array of responses */
  size_t count; /* its length */
  int code;     /* a single response: its error code, 0 for a result */
  int id_null;  /* a single response: "id" is null */
} fz_reply_t;

/* Checks one reply payload: valid JSON (tests/testutil's strict reader),
 * a well-formed response or a non-empty array of them (aborts if not). */
void fz_check_reply(const char *r, size_t n, fz_reply_t *out);

/* The per-frame oracle: `reply` (NULL: no reply) answered the frame
 * in[0..n). A frame the oracle rejects as JSON gets exactly -32700 with id
 * null; one it accepts never gets -32700 and may go unanswered only then
 * (notifications); a batch reply is no longer than the batch, and only a
 * batch gets one. */
void fz_check_answer(const char *in, size_t n, const char *reply, size_t rn);

/* Is s[0..n) one JSON text jrpcd must accept: valid per the oracle and
 * nested at most JRPC__MAX_DEPTH deep? Also gives the top-level shape:
 * *top_array receives the element count of a top-level array, or -1. */
int fz_json_acceptable(const char *s, size_t n, long *top_array);

/* Splits a framed reply stream into payloads; aborts when the stream is
 * not well framed. Returns the count; fp/fn are malloc'ed (caller frees). */
size_t fz_unframe(int framing, const char *buf, size_t n, const char ***fp,
                  size_t **fn);

/* Copies every pending byte of o into a malloc'ed buffer (*n bytes) and
 * consumes them. */
char *fz_out_take(jrpc__outbuf_t *o, size_t *n);

/* A run's output, gathered read by read. */
typedef struct fz_bytes {
  char *p; /* NUL-terminated; NULL until something came */
  size_t n;
} fz_bytes_t;

/* Appends o's pending bytes to b and consumes them. */
void fz_out_gather(jrpc__outbuf_t *o, fz_bytes_t *b);

/* Printable excerpt for messages: at most 300 bytes, escaped. */
const char *fz_show(const char *s, size_t n);

#endif
