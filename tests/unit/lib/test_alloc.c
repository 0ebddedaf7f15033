/* test_alloc.c - after warm-up, serving requests performs no malloc.
 *
 * malloc and friends are interposed in this binary (every call counts,
 * libc's own included). The pipeline runs each workload until its pools
 * and arena have grown, then once more with the counter armed: the count
 * must stay zero. Sanitizer builds replace malloc themselves: skipped. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "dispatch.h"
#include "engine_fx.h"
#include "module.h"
#include "testutil.h"
#include "http.h"
#include "stream.h"

#ifndef JRPC_SANITIZE
extern void *__libc_malloc(size_t);
extern void *__libc_calloc(size_t, size_t);
extern void *__libc_realloc(void *, size_t);
extern void *__libc_memalign(size_t, size_t);
static uint64_t n_alloc;
void *malloc(size_t n) {
  n_alloc++;
  return __libc_malloc(n);
}
void *calloc(size_t a, size_t b) {
  n_alloc++;
  return __libc_calloc(a, b);
}
void *realloc(void *p, size_t n) {
  n_alloc++;
  return __libc_realloc(p, n);
}
void *aligned_alloc(size_t al, size_t n) {
  n_alloc++;
  return __libc_memalign(al, n);
}
int posix_memalign(void **p, size_t al, size_t n) {
  n_alloc++;
  *p = __libc_memalign(al, n);
  return *p ? 0 : 12;
}
#endif

#ifdef JRPC_SANITIZE
#define raw_malloc malloc
#else
#define raw_malloc __libc_malloc
#endif

const jrpc_module_info_t *math_module_info(void);

/* Exercises views that may allocate: strings with escapes, keys. */
static int str_len(jrpc_call_t *c, jrpc_val_t params, void *udata) {
  size_t total = 0;
  for (jrpc_val_t v = jrpc_first(c, params); !jrpc_is_none(v);
       v = jrpc_next(c, v)) {
    const char *s;
    size_t n;
    if (jrpc_type(c, v) == JRPC_T_STRING && jrpc_as_str(c, v, &s, &n) == 0)
      total += n;
    if (jrpc_key(c, v, &s, &n) == 0)
      total += n;
    void *scratch = jrpc_alloc(c, 256);
    if (!scratch)
      return jrpc_error(c, JRPC_INTERNAL_ERROR, "no scratch");
  }
  jrpc_w_obj(c);
  jrpc_w_key(c, "total", 5);
  jrpc_w_u64(c, total);
  jrpc_w_key(c, "note", 4);
  jrpc_w_str(c, "tab\there \"quoted\"", 17);
  return jrpc_w_obj_end(c);
}

typedef struct fixture {
  jrpc__registry_t reg;
  jrpc__module_t math;
  jrpc__engine_t e;
} fixture_t;

static int setup(void **state) {
  fixture_t *f = calloc(1, sizeof(*f));
  char err[256];
  assert_int_equal(jrpc__registry_init(&f->reg), 0);
  assert_int_equal(jrpc__module_start(&f->math, math_module_info(), "math",
                                      &f->reg, NULL, err, sizeof(err)),
                   0);
  assert_int_equal(
      jrpc__registry_add(&f->reg, "str.len", str_len, NULL, NULL, NULL), 0);
  jrpc__limits_t lim = JRPC__LIMITS_DEFAULT;
  lim.max_frame_bytes = 4096;
  assert_int_equal(jrpc__engine_init(&f->e, &f->reg, &lim, tu_parser_new()), 0);
  *state = f;
  return 0;
}

static int teardown(void **state) {
  fixture_t *f = *state;
  jrpc__engine_free(&f->e);
  jrpc__module_stop(&f->math);
  jrpc__registry_free(&f->reg);
  free(f);
  return 0;
}

/* Feeds `in` through a stream in reads of `chunk` bytes, draining output;
 * returns the reply bytes. */
static size_t pump(jrpc__stream_t *s, const char *in, size_t n, size_t chunk) {
  size_t off = 0, out = 0;
  while (off < n) {
    size_t k = engine_fx_put(s, in + off, n - off, chunk);
    off += k;
    int rc = s->http ? jrpc__http_feed(s, k, 0) : jrpc__stream_feed(s, k, 0);
    assert_int_equal(rc, 0);
    size_t pend = (size_t)jrpc__out_pending(&s->out);
    out += pend;
    jrpc__out_consume(&s->out, pend);
  }
  return out;
}

static __attribute__((unused)) const char *const workloads[] = {
    "{\"jsonrpc\":\"2.0\",\"method\":\"math.add\",\"params\":[1,2],\"id\":1}\n",
    "{\"jsonrpc\":\"2.0\",\"method\":\"math.add\",\"params\":{\"a\":1,\"b\":2."
    "5},"
    "\"id\":\"x\"}\n",
    "{\"jsonrpc\":\"2.0\",\"method\":\"math.add\",\"params\":[1,2]}\n",
    "[{\"jsonrpc\":\"2.0\",\"method\":\"math.add\",\"params\":[1,2],\"id\":1},"
    "{\"jsonrpc\":\"2.0\",\"method\":\"math.divide\",\"params\":[1,0],\"id\":2}"
    ","
    "{\"jsonrpc\":\"2.0\",\"method\":\"nope\",\"id\":3},1]\n",
    "{\"jsonrpc\":\"2.0\",\"method\":\"str.len\",\"params\":{\"k\\u00e9y\":"
    "\"v\\n\\ud83d\\ude00\",\"b\":\"plain\"},\"id\":4}\n",
    "{\"jsonrpc\":\"2.0\",\"method\":\"math.add\",\"params\":[1,\"two\"],"
    "\"id\":5}\n",
    "{\"jsonrpc\":\"2.0\",\"method\":\"math.add\",\"params\":[1,2],\"id\":1\n",
    "[]\n",
    "[1,2,3]\n",
    "{\"jsonrpc\":\"2.0\",\"method\":\"math.multiply\",\"params\":[1e300,1e300]"
    ","
    "\"id\":6}\n",
};

/* As an HTTP request: the line's JSON as a Content-Length body, or (odd
 * lines of a workload) a chunked one in two chunks. */
static __attribute__((unused)) char *http_request(const char *line,
                                                  int chunked) {
  size_t n = strlen(line) - 1; /* without the '\n' */
  char *r = raw_malloc(n + 200);
  if (chunked)
    sprintf(r,
            "POST / HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n"
            "1\r\n%.1s\r\n%zx\r\n%.*s\r\n0\r\n\r\n",
            line, n - 1, (int)(n - 1), line + 1);
  else
    sprintf(r,
            "POST / HTTP/1.1\r\nContent-Type: application/json\r\n"
            "Content-Length: %zu\r\n\r\n%.*s",
            n, (int)n, line);
  return r;
}

static __attribute__((unused)) void run_framed(fixture_t *f, const char *one,
                                               size_t chunk,
                                               jrpc__framing_t framing) {
  /* 200 copies, so the arena and pools see a realistic stream. */
  size_t n1 = strlen(one), n = n1 * 200;
  char *in = raw_malloc(n);
  for (size_t i = 0; i < 200; i++)
    memcpy(in + i * n1, one, n1);
  jrpc__stream_t s;
  jrpc__http_t h;
  jrpc__stream_init(&s, &f->e, framing);
  if (framing == JRPC_FRAMING_HTTP)
    jrpc__http_init(&h, &s, 8192, 0, NULL, NULL);
  size_t warm1 = pump(&s, in, n, chunk);
  size_t warm2 = pump(&s, in, n, chunk);
#ifdef JRPC_SANITIZE
  uint64_t before = 0;
#else
  uint64_t before = n_alloc;
#endif
  size_t measured = pump(&s, in, n, chunk);
#ifdef JRPC_SANITIZE
  uint64_t mallocs = 0 * before;
#else
  uint64_t mallocs = n_alloc - before;
#endif
  if (framing == JRPC_FRAMING_HTTP)
    jrpc__http_free(&h);
  jrpc__stream_free(&s);
  free(in);
  if (mallocs)
    print_error("workload %.60s: %llu mallocs after warm-up\n", one,
                (unsigned long long)mallocs);
  assert_int_equal(mallocs, 0);
  assert_int_equal(warm1, measured);
  assert_int_equal(warm2, measured);
}

static __attribute__((unused)) void run_workload(fixture_t *f, const char *one,
                                                 size_t chunk) {
  run_framed(f, one, chunk, JRPC_FRAMING_NEWLINE);
}

static void test_counter_counts(void **state) {
#ifdef JRPC_SANITIZE
  skip();
#else
  /* The interposer must see allocations, or the next tests prove nothing. */
  uint64_t before = n_alloc;
  void *volatile p = malloc(100);
  free(p);
  assert_true(n_alloc > before);
  /* And a pipeline with a cold pool must allocate. */
  fixture_t *f = *state;
  jrpc__engine_t cold;
  jrpc__engine_init(&cold, &f->reg, NULL, tu_parser_new());
  jrpc__stream_t s;
  jrpc__stream_init(&s, &cold, JRPC_FRAMING_NEWLINE);
  before = n_alloc;
  pump(&s, workloads[0], strlen(workloads[0]), 65536);
  assert_true(n_alloc > before);
  jrpc__stream_free(&s);
  jrpc__engine_free(&cold);
#endif
}

static void test_zero_malloc_per_request(void **state) {
#ifdef JRPC_SANITIZE
  skip();
#else
  fixture_t *f = *state;
  for (size_t i = 0; i < sizeof(workloads) / sizeof(workloads[0]); i++) {
    run_workload(f, workloads[i], 65536);
    run_workload(f, workloads[i], 7); /* frames split across reads */
  }
#endif
}

/* framing = http: heads parsed, bodies gathered (chunked ones too), heads
 * written before the replies, 204s: no malloc either. */
static void test_zero_malloc_http(void **state) {
#ifdef JRPC_SANITIZE
  skip();
#else
  fixture_t *f = *state;
  for (size_t i = 0; i < sizeof(workloads) / sizeof(workloads[0]); i++) {
    char *req = http_request(workloads[i], (int)(i & 1));
    run_framed(f, req, 65536, JRPC_FRAMING_HTTP);
    run_framed(f, req, 7, JRPC_FRAMING_HTTP);
    free(req);
  }
#endif
}

static void test_zero_malloc_oversized_line(void **state) {
#ifdef JRPC_SANITIZE
  skip();
#else
  fixture_t *f = *state;
  /* max_frame_bytes is 4096 here: a 10 KB line is refused and skipped. */
  size_t n = 10000;
  char *line = raw_malloc(n + 2);
  memset(line, ' ', n);
  line[0] = '[';
  line[n - 1] = ']';
  line[n] = '\n';
  line[n + 1] = 0;
  run_workload(f, line, 65536);
  free(line);
#endif
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_counter_counts),
      cmocka_unit_test(test_zero_malloc_per_request),
      cmocka_unit_test(test_zero_malloc_http),
      cmocka_unit_test(test_zero_malloc_oversized_line),
#ifndef JRPC_SANITIZE /* no frames parsed there: the tests skip */
      cmocka_unit_test(tu_test_auto_switched),
#endif
  };
  return cmocka_run_group_tests(tests, setup, teardown);
}
