/* test_frame.c - lib/frame.h: newline and length framing, decoded from
 * every possible split of the input, oversized frames, reply encoding. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "frame.h"
#include "outbuf_fx.h"

/* ------------------------------------------------------------------ */
/* The caller, simulated.                                              */
/* ------------------------------------------------------------------ */

typedef struct {
  int kind;     /* JRPC__FRAME_OK or JRPC__FRAME_TOO_LARGE */
  char *data;   /* OK: a copy of the payload */
  size_t n;     /* OK: payload length */
  uint64_t got; /* TOO_LARGE */
  int fatal;    /* TOO_LARGE */
  size_t fed;   /* input bytes fed when the event came out */
} ev_t;

#define MAX_EVENTS 64

typedef struct {
  jrpc__framer_t f;
  char *buf; /* unconsumed bytes */
  size_t len;
  size_t fed;
  int stopped; /* a fatal error was reported */
  ev_t ev[MAX_EVENTS];
  size_t count;
} sim_t;

static void sim_init(sim_t *s, jrpc__framing_t kind, uint32_t max) {
  memset(s, 0, sizeof *s);
  jrpc__framer_init(&s->f, kind, max);
}

static void sim_free(sim_t *s) {
  for (size_t i = 0; i < s->count; i++)
    free(s->ev[i].data);
  free(s->buf);
  s->buf = NULL;
  s->count = 0;
}

/* Calls jrpc__frame_next until MORE, dropping `consumed` after each call.
 * Every call sees a fresh heap copy of exactly the buffered bytes, so an
 * overread shows up under ASan. */
static void sim_pump(sim_t *s, int eof) {
  for (int guard = 0;; guard++) {
    assert_true(guard < 100000);
    if (s->stopped)
      return;
    char *tmp = malloc(s->len ? s->len : 1);
    assert_non_null(tmp);
    if (s->len)
      memcpy(tmp, s->buf, s->len);
    jrpc__frame_t fr;
    memset(&fr, 0, sizeof fr);
    int r = jrpc__frame_next(&s->f, tmp, s->len, eof, &fr);
    assert_true(r == JRPC__FRAME_MORE || r == JRPC__FRAME_OK ||
                r == JRPC__FRAME_TOO_LARGE);
    assert_true(fr.consumed <= s->len);
    if (r != JRPC__FRAME_MORE) {
      assert_true(s->count < MAX_EVENTS);
      ev_t *e = &s->ev[s->count++];
      memset(e, 0, sizeof *e);
      e->kind = r;
      e->fed = s->fed;
      if (r == JRPC__FRAME_OK) {
        if (fr.n) {
          assert_true(fr.p >= tmp && fr.p + fr.n <= tmp + s->len);
          /* The payload is consumed along with the frame. */
          assert_true(fr.p + fr.n <= tmp + fr.consumed);
        }
        e->n = fr.n;
        e->data = malloc(fr.n + 1);
        if (fr.n)
          memcpy(e->data, fr.p, fr.n);
        e->data[fr.n] = 0;
        assert_true(fr.consumed > 0);
      } else {
        e->got = fr.got;
        e->fatal = fr.fatal;
        if (fr.fatal)
          s->stopped = 1;
      }
    }
    memmove(s->buf, s->buf + fr.consumed, s->len - fr.consumed);
    s->len -= fr.consumed;
    free(tmp);
    if (r == JRPC__FRAME_MORE) {
      /* An oversized newline frame is skipped, never buffered. */
      if (s->f.kind == JRPC_FRAMING_NEWLINE && !eof)
        assert_true(s->len <= (size_t)s->f.max + 2);
      return;
    }
  }
}

static void sim_feed(sim_t *s, const char *p, size_t n) {
  s->buf = realloc(s->buf, s->len + n + 1);
  assert_non_null(s->buf);
  memcpy(s->buf + s->len, p, n);
  s->len += n;
  s->fed += n;
  sim_pump(s, 0);
}

static void sim_eof(sim_t *s) {
  sim_pump(s, 1);
}

/* What a stream must decode to. */
typedef struct {
  int kind;
  const char *data; /* OK */
  size_t n;         /* OK */
  uint64_t got;     /* TOO_LARGE */
  int fatal;
} want_t;

#define OK(s)                                                                  \
  { JRPC__FRAME_OK, (s), sizeof(s) - 1, 0, 0 }
#define BIG(g, fat)                                                            \
  { JRPC__FRAME_TOO_LARGE, NULL, 0, (g), (fat) }

static void expect_events(const sim_t *s, const want_t *w, size_t nw) {
  if (s->count != nw) {
    for (size_t i = 0; i < s->count; i++)
      print_message("  event %zu: kind %d n %zu got %llu '%s'\n", i,
                    s->ev[i].kind, s->ev[i].n, (unsigned long long)s->ev[i].got,
                    s->ev[i].data ? s->ev[i].data : "");
  }
  assert_int_equal(s->count, nw);
  for (size_t i = 0; i < nw; i++) {
    assert_int_equal(s->ev[i].kind, w[i].kind);
    if (w[i].kind == JRPC__FRAME_OK) {
      assert_int_equal(s->ev[i].n, w[i].n);
      assert_memory_equal(s->ev[i].data, w[i].data, w[i].n);
    } else {
      assert_int_equal(s->ev[i].got, w[i].got);
      assert_int_equal(!!s->ev[i].fatal, w[i].fatal);
    }
  }
}

/* Decodes `in` fed whole, in two chunks split at every offset, and one
 * byte at a time; every way must give `w`. */
static void check_stream(jrpc__framing_t kind, uint32_t max, const char *in,
                         size_t n, const want_t *w, size_t nw) {
  sim_t s;

  sim_init(&s, kind, max);
  sim_feed(&s, in, n);
  sim_eof(&s);
  expect_events(&s, w, nw);
  sim_free(&s);

  for (size_t cut = 0; cut <= n; cut++) {
    sim_init(&s, kind, max);
    sim_feed(&s, in, cut);
    sim_feed(&s, in + cut, n - cut);
    sim_eof(&s);
    if (s.count != nw)
      print_message("split at %zu\n", cut);
    expect_events(&s, w, nw);
    sim_free(&s);
  }

  sim_init(&s, kind, max);
  for (size_t i = 0; i < n; i++)
    sim_feed(&s, in + i, 1);
  sim_eof(&s);
  expect_events(&s, w, nw);
  sim_free(&s);
}

#define CHECK_STREAM(kind, max, lit, ...)                                      \
  do {                                                                         \
    static const want_t w_[] = {__VA_ARGS__};                                  \
    check_stream((kind), (max), (lit), sizeof(lit) - 1, w_,                    \
                 sizeof w_ / sizeof w_[0]);                                    \
  } while (0)

/* One call on a fixed buffer. */
static int next1(jrpc__framer_t *f, const char *s, size_t n, int eof,
                 jrpc__frame_t *fr) {
  memset(fr, 0, sizeof *fr);
  return jrpc__frame_next(f, s, n, eof, fr);
}

/* ------------------------------------------------------------------ */
/* Newline framing.                                                    */
/* ------------------------------------------------------------------ */

static void test_nl_basic(void **state) {
  (void)state;
  CHECK_STREAM(JRPC_FRAMING_NEWLINE, 1 << 20, "a\nbc\n{\"x\":1}\n", OK("a"),
               OK("bc"), OK("{\"x\":1}"));
}

static void test_nl_crlf(void **state) {
  (void)state;
  CHECK_STREAM(JRPC_FRAMING_NEWLINE, 1 << 20, "a\r\nbc\r\n[1,2]\n", OK("a"),
               OK("bc"), OK("[1,2]"));
}

static void test_nl_blank_lines(void **state) {
  (void)state;
  CHECK_STREAM(JRPC_FRAMING_NEWLINE, 1 << 20,
               "\n\n{\"a\":1}\n\r\n  \n\t\t\n \r\n[1,2]\r\n\n\"x\"\n\n",
               OK("{\"a\":1}"), OK("[1,2]"), OK("\"x\""));
}

static void test_nl_eof_final_line(void **state) {
  (void)state;
  CHECK_STREAM(JRPC_FRAMING_NEWLINE, 1 << 20, "a\n\n{\"b\":2}", OK("a"),
               OK("{\"b\":2}"));
  CHECK_STREAM(JRPC_FRAMING_NEWLINE, 1 << 20, "1\n2\n3", OK("1"), OK("2"),
               OK("3"));
  /* Trailing blank or whitespace-only text at EOF is no frame. */
  CHECK_STREAM(JRPC_FRAMING_NEWLINE, 1 << 20, "a\n  \t", OK("a"));
  CHECK_STREAM(JRPC_FRAMING_NEWLINE, 1 << 20, "a\n\r\n", OK("a"));
}

static void test_nl_unterminated_without_eof(void **state) {
  (void)state;
  jrpc__framer_t f;
  jrpc__frame_t fr;
  jrpc__framer_init(&f, JRPC_FRAMING_NEWLINE, 1 << 20);
  const char in[] = "{\"a\":1}\n[1,";
  assert_int_equal(next1(&f, in, sizeof in - 1, 0, &fr), JRPC__FRAME_OK);
  assert_int_equal(fr.n, 7);
  assert_memory_equal(fr.p, "{\"a\":1}", 7);
  assert_int_equal(fr.consumed, 8);
  assert_int_equal(next1(&f, in + 8, 3, 0, &fr), JRPC__FRAME_MORE);
  assert_int_equal(fr.consumed, 0);
  /* More bytes arrive; the line completes. */
  const char more[] = "[1,2]\n";
  assert_int_equal(next1(&f, more, 6, 0, &fr), JRPC__FRAME_OK);
  assert_int_equal(fr.n, 5);
  assert_memory_equal(fr.p, "[1,2]", 5);
  assert_int_equal(fr.consumed, 6);
  assert_int_equal(next1(&f, more + 6, 0, 0, &fr), JRPC__FRAME_MORE);
}

static void test_nl_nothing(void **state) {
  (void)state;
  jrpc__framer_t f;
  jrpc__frame_t fr;
  jrpc__framer_init(&f, JRPC_FRAMING_NEWLINE, 1 << 20);
  assert_int_equal(next1(&f, "", 0, 0, &fr), JRPC__FRAME_MORE);
  assert_int_equal(next1(&f, "", 0, 1, &fr), JRPC__FRAME_MORE);
  jrpc__framer_init(&f, JRPC_FRAMING_NEWLINE, 1 << 20);
  assert_int_equal(next1(&f, "   ", 3, 1, &fr), JRPC__FRAME_MORE);
  check_stream(JRPC_FRAMING_NEWLINE, 1 << 20, "\n\n\r\n \n", 6, NULL, 0);
}

static void test_nl_exactly_max(void **state) {
  (void)state;
  /* max = 16: a 16-byte line is fine with LF, CRLF and at EOF. */
  CHECK_STREAM(JRPC_FRAMING_NEWLINE, 16,
               "0123456789abcdef\n0123456789abcdef\r\n0123456789abcdef",
               OK("0123456789abcdef"), OK("0123456789abcdef"),
               OK("0123456789abcdef"));
}

static void test_nl_too_large(void **state) {
  (void)state;
  CHECK_STREAM(JRPC_FRAMING_NEWLINE, 16,
               "short\n"
               "0123456789abcdefXYZ\n" /* 19 */
               "next\n"
               "0123456789abcdefg\r\n" /* 17, CRLF */
               "0123456789abcdef\r\n"  /* exactly 16 */
               "0123456789abcdef\rX\n" /* 18: a lone CR is payload */
               "ok\r\n"
               "0123456789012345678901234567890123456789\n" /* 40 */
               "\n"
               "tail",
               OK("short"), BIG(19, 0), OK("next"), BIG(17, 0),
               OK("0123456789abcdef"), BIG(18, 0), OK("ok"), BIG(40, 0),
               OK("tail"));
}

static void test_nl_too_large_at_eof(void **state) {
  (void)state;
  CHECK_STREAM(JRPC_FRAMING_NEWLINE, 8, "a\n0123456789012345678901234", OK("a"),
               BIG(25, 0));
  CHECK_STREAM(JRPC_FRAMING_NEWLINE, 8, "012345678", BIG(9, 0));
  /* Back-to-back oversized lines. */
  CHECK_STREAM(JRPC_FRAMING_NEWLINE, 8, "0123456789\n0123456789ab\r\nz\n",
               BIG(10, 0), BIG(12, 0), OK("z"));
}

/* A whitespace-only line is skipped however long it is and however it
 * arrives; whitespace before text counts towards the line's size. */
static void test_nl_long_blank_line(void **state) {
  (void)state;
  CHECK_STREAM(JRPC_FRAMING_NEWLINE, 8,
               "a\n"
               "                    \n" /* 20 spaces */
               "b\n"
               " \t \t \t \t \t \t\r\n" /* 12 blanks, CRLF */
               "c\n"
               "          x\n" /* 11: too large */
               "d",
               OK("a"), OK("b"), OK("c"), BIG(11, 0), OK("d"));
  /* ... and at EOF. */
  CHECK_STREAM(JRPC_FRAMING_NEWLINE, 8, "a\n                    ", OK("a"));
}

/* Called with far more than max bytes of one line, the decoder consumes
 * them instead of asking for the rest of the line to be buffered. */
static void test_nl_too_large_not_buffered(void **state) {
  (void)state;
  jrpc__framer_t f;
  jrpc__frame_t fr;
  jrpc__framer_init(&f, JRPC_FRAMING_NEWLINE, 100);
  static char big[10000];
  memset(big, 'x', sizeof big);
  size_t left = 0;
  for (int round = 0; round < 50; round++) {
    /* The caller keeps `left` unconsumed bytes and appends 5000 more. */
    int r = next1(&f, big, left + 5000, 0, &fr);
    assert_int_equal(r, JRPC__FRAME_MORE);
    assert_true(left + 5000 - fr.consumed <= 102);
    left = left + 5000 - fr.consumed;
  }
  /* The line ends: one TOO_LARGE with the full length. */
  char *tail = malloc(left + 5);
  memset(tail, 'x', left);
  memcpy(tail + left, "\nok\n", 4);
  assert_int_equal(next1(&f, tail, left + 4, 0, &fr), JRPC__FRAME_TOO_LARGE);
  assert_int_equal(fr.got, 50 * 5000);
  assert_int_equal(fr.fatal, 0);
  size_t c = fr.consumed;
  assert_int_equal(next1(&f, tail + c, left + 4 - c, 0, &fr), JRPC__FRAME_OK);
  assert_int_equal(fr.n, 2);
  assert_memory_equal(fr.p, "ok", 2);
  free(tail);
}

/* ------------------------------------------------------------------ */
/* Length framing.                                                     */
/* ------------------------------------------------------------------ */

static void test_len_basic(void **state) {
  (void)state;
  CHECK_STREAM(JRPC_FRAMING_LENGTH, 1 << 20,
               "\0\0\0\3abc"
               "\0\0\0\0"
               "\0\0\0\x0d{\"x\":[1,2,3]}"
               "\0\0\0\0"
               "\0\0\0\1z",
               OK("abc"), OK(""), OK("{\"x\":[1,2,3]}"), OK(""), OK("z"));
}

static void test_len_big_endian(void **state) {
  (void)state;
  /* 0x0000012c = 300 bytes: the header is big-endian, not little. */
  char in[4 + 300 + 4 + 1];
  in[0] = 0, in[1] = 0, in[2] = 0x01, in[3] = 0x2c;
  for (int i = 0; i < 300; i++)
    in[4 + i] = (char)('a' + i % 26);
  memcpy(in + 304, "\0\0\0\1q", 5);
  want_t w[2] = {{JRPC__FRAME_OK, in + 4, 300, 0, 0},
                 {JRPC__FRAME_OK, "q", 1, 0, 0}};
  check_stream(JRPC_FRAMING_LENGTH, 300, in, sizeof in, w, 2);
}

static void test_len_zero(void **state) {
  (void)state;
  jrpc__framer_t f;
  jrpc__frame_t fr;
  jrpc__framer_init(&f, JRPC_FRAMING_LENGTH, 100);
  assert_int_equal(next1(&f, "\0\0\0\0", 4, 0, &fr), JRPC__FRAME_OK);
  assert_int_equal(fr.n, 0);
  assert_int_equal(fr.consumed, 4);
}

static void test_len_need(void **state) {
  (void)state;
  jrpc__framer_t f;
  jrpc__frame_t fr;
  jrpc__framer_init(&f, JRPC_FRAMING_LENGTH, 100);
  assert_int_equal(next1(&f, "\0\0\0\5ab", 6, 0, &fr), JRPC__FRAME_MORE);
  assert_int_equal(fr.consumed, 0);
  assert_int_equal(fr.need, 9);
  assert_int_equal(next1(&f, "\0\0\0\5", 4, 0, &fr), JRPC__FRAME_MORE);
  assert_int_equal(fr.need, 9);
  /* Not even a header: the need is unknown or the header's size. */
  assert_int_equal(next1(&f, "\0\0", 2, 0, &fr), JRPC__FRAME_MORE);
  assert_true(fr.need == 0 || fr.need == 4);
  assert_int_equal(next1(&f, "\0\0\0\5abcde", 9, 0, &fr), JRPC__FRAME_OK);
  assert_int_equal(fr.n, 5);
  assert_memory_equal(fr.p, "abcde", 5);
  assert_int_equal(fr.consumed, 9);

  /* A length at the 32-bit limit must not wrap around. */
  jrpc__framer_init(&f, JRPC_FRAMING_LENGTH, UINT32_MAX);
  assert_int_equal(next1(&f, "\xff\xff\xff\xff", 4, 0, &fr), JRPC__FRAME_MORE);
  assert_true(fr.need == (size_t)4 + UINT32_MAX);
}

static void test_len_exactly_max(void **state) {
  (void)state;
  CHECK_STREAM(JRPC_FRAMING_LENGTH, 3, "\0\0\0\3abc\0\0\0\2de", OK("abc"),
               OK("de"));
}

static void test_len_too_large(void **state) {
  (void)state;
  jrpc__framer_t f;
  jrpc__frame_t fr;
  /* Only the 4 header bytes: reported at once, before any payload. */
  jrpc__framer_init(&f, JRPC_FRAMING_LENGTH, 10);
  assert_int_equal(next1(&f, "\0\0\0\x0b", 4, 0, &fr), JRPC__FRAME_TOO_LARGE);
  assert_int_equal(fr.got, 11);
  assert_int_equal(fr.fatal, 1);

  jrpc__framer_init(&f, JRPC_FRAMING_LENGTH, 10);
  assert_int_equal(next1(&f, "\x80\0\0\1", 4, 0, &fr), JRPC__FRAME_TOO_LARGE);
  assert_int_equal(fr.got, 0x80000001u);
  assert_int_equal(fr.fatal, 1);

  jrpc__framer_init(&f, JRPC_FRAMING_LENGTH, 10);
  assert_int_equal(next1(&f, "\xff\xff\xff\xff", 4, 0, &fr),
                   JRPC__FRAME_TOO_LARGE);
  assert_int_equal(fr.got, 0xffffffffu);
  assert_int_equal(fr.fatal, 1);

  /* The same inside a stream, whatever the split: a good frame, then the
   * fatal one and nothing after it. */
  CHECK_STREAM(JRPC_FRAMING_LENGTH, 10,
               "\0\0\0\3abc\0\0\1\0xxxxxxxxxxxxxxxx\0\0\0\1z", OK("abc"),
               BIG(256, 1));

  /* Fed byte by byte, it comes out when the 4th header byte arrives. */
  sim_t s;
  sim_init(&s, JRPC_FRAMING_LENGTH, 10);
  const char in[] = "\0\0\0\3abc\0\0\1\0xxxxxxxx";
  for (size_t i = 0; i < sizeof in - 1; i++)
    sim_feed(&s, in + i, 1);
  assert_int_equal(s.count, 2);
  assert_int_equal(s.ev[1].kind, JRPC__FRAME_TOO_LARGE);
  assert_int_equal(s.ev[1].fed, 11);
  sim_free(&s);
}

/* ------------------------------------------------------------------ */
/* Encoding.                                                           */
/* ------------------------------------------------------------------ */

static void encode(jrpc__framing_t kind, jrpc__outbuf_t *o, const char *s,
                   size_t n) {
  jrpc__frame_enc_t enc;
  assert_int_equal(jrpc__frame_begin(kind, o, &enc), 0);
  assert_int_equal(jrpc__out_put(o, s, n), 0);
  assert_int_equal(jrpc__frame_end(kind, o, &enc), 0);
}

static void test_enc_newline(void **state) {
  (void)state;
  jrpc__outbuf_t o;
  jrpc__out_init(&o, &fx_pool);
  encode(JRPC_FRAMING_NEWLINE, &o, "{\"x\":1}", 7);
  encode(JRPC_FRAMING_NEWLINE, &o, "[]", 2);
  size_t n;
  char *d = fx_out_take(&o, &n);
  assert_int_equal(n, 11);
  assert_memory_equal(d, "{\"x\":1}\n[]\n", 11);
  free(d);
  jrpc__out_free(&o);
}

static void test_enc_length(void **state) {
  (void)state;
  jrpc__outbuf_t o;
  jrpc__out_init(&o, &fx_pool);
  encode(JRPC_FRAMING_LENGTH, &o, "{\"x\":1}", 7);
  encode(JRPC_FRAMING_LENGTH, &o, "[]", 2);
  size_t n;
  char *d = fx_out_take(&o, &n);
  assert_int_equal(n, 4 + 7 + 4 + 2);
  assert_memory_equal(d, "\0\0\0\7{\"x\":1}\0\0\0\2[]", n);
  free(d);
  jrpc__out_free(&o);
}

static void test_enc_length_large(void **state) {
  (void)state;
  const size_t len = 100000; /* 0x000186a0, spans several segments */
  char *src = malloc(len);
  for (size_t i = 0; i < len; i++)
    src[i] = (char)('0' + i % 10);
  jrpc__outbuf_t o;
  jrpc__out_init(&o, &fx_pool);
  encode(JRPC_FRAMING_LENGTH, &o, src, len);
  size_t n;
  char *d = fx_out_take(&o, &n);
  assert_int_equal(n, 4 + len);
  assert_memory_equal(d, "\x00\x01\x86\xa0", 4);
  assert_memory_equal(d + 4, src, len);
  free(d);
  free(src);
  jrpc__out_free(&o);
}

/* The header lands at every position near the end of a segment. */
static void test_enc_length_at_segment_end(void **state) {
  (void)state;
  for (size_t k = 0; k <= 8; k++) {
    jrpc__outbuf_t o;
    jrpc__out_init(&o, &fx_pool);
    jrpc__out_byte(&o, '#');
    size_t room = (size_t)(o.end - o.p);
    size_t fill = room - k;
    char *filler = malloc(fill);
    memset(filler, '.', fill);
    jrpc__out_put(&o, filler, fill);
    encode(JRPC_FRAMING_LENGTH, &o, "hello", 5);
    size_t n;
    char *d = fx_out_take(&o, &n);
    assert_int_equal(n, 1 + fill + 4 + 5);
    assert_memory_equal(d + 1 + fill, "\0\0\0\5hello", 9);
    free(d);
    free(filler);
    jrpc__out_free(&o);
  }
}

static void test_enc_empty(void **state) {
  (void)state;
  for (int kind = 0; kind < 2; kind++) {
    jrpc__outbuf_t o;
    jrpc__frame_enc_t enc;
    jrpc__out_init(&o, &fx_pool);
    assert_int_equal(jrpc__frame_begin((jrpc__framing_t)kind, &o, &enc), 0);
    assert_int_equal(jrpc__frame_end((jrpc__framing_t)kind, &o, &enc), 0);
    assert_int_equal(jrpc__out_pending(&o), 0);

    /* After other output: that output is left alone. */
    jrpc__out_put(&o, "abc", 3);
    assert_int_equal(jrpc__frame_begin((jrpc__framing_t)kind, &o, &enc), 0);
    assert_int_equal(jrpc__frame_end((jrpc__framing_t)kind, &o, &enc), 0);
    size_t n;
    char *d = fx_out_take(&o, &n);
    assert_int_equal(n, 3);
    assert_memory_equal(d, "abc", 3);
    free(d);

    /* And a real frame still follows correctly. */
    encode((jrpc__framing_t)kind, &o, "1", 1);
    d = fx_out_take(&o, &n);
    if (kind == JRPC_FRAMING_NEWLINE) {
      assert_int_equal(n, 5);
      assert_memory_equal(d, "abc1\n", 5);
    } else {
      assert_int_equal(n, 8);
      assert_memory_equal(d,
                          "abc\0\0\0\1"
                          "1",
                          8);
    }
    free(d);
    jrpc__out_free(&o);
  }
}

/* What the encoder writes, the decoder reads back. */
static void test_enc_roundtrip(void **state) {
  (void)state;
  static const char *replies[] = {"{\"jsonrpc\":\"2.0\",\"result\":1,\"id\":1}",
                                  "[1,2,3]", "\"s\"", "null"};
  for (int kind = 0; kind < 2; kind++) {
    jrpc__outbuf_t o;
    jrpc__out_init(&o, &fx_pool);
    for (int i = 0; i < 4; i++)
      encode((jrpc__framing_t)kind, &o, replies[i], strlen(replies[i]));
    size_t n;
    char *d = fx_out_take(&o, &n);
    want_t w[4];
    for (int i = 0; i < 4; i++) {
      w[i].kind = JRPC__FRAME_OK;
      w[i].data = replies[i];
      w[i].n = strlen(replies[i]);
    }
    check_stream((jrpc__framing_t)kind, 1 << 20, d, n, w, 4);
    free(d);
    jrpc__out_free(&o);
  }
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_nl_basic),
      cmocka_unit_test(test_nl_crlf),
      cmocka_unit_test(test_nl_blank_lines),
      cmocka_unit_test(test_nl_eof_final_line),
      cmocka_unit_test(test_nl_unterminated_without_eof),
      cmocka_unit_test(test_nl_nothing),
      cmocka_unit_test(test_nl_exactly_max),
      cmocka_unit_test(test_nl_too_large),
      cmocka_unit_test(test_nl_too_large_at_eof),
      cmocka_unit_test(test_nl_long_blank_line),
      cmocka_unit_test(test_nl_too_large_not_buffered),
      cmocka_unit_test(test_len_basic),
      cmocka_unit_test(test_len_big_endian),
      cmocka_unit_test(test_len_zero),
      cmocka_unit_test(test_len_need),
      cmocka_unit_test(test_len_exactly_max),
      cmocka_unit_test(test_len_too_large),
      cmocka_unit_test(test_enc_newline),
      cmocka_unit_test(test_enc_length),
      cmocka_unit_test(test_enc_length_large),
      cmocka_unit_test(test_enc_length_at_segment_end),
      cmocka_unit_test(test_enc_empty),
      cmocka_unit_test(test_enc_roundtrip),
  };
  return cmocka_run_group_tests(tests, fx_pool_setup, fx_pool_teardown);
}
