/* pipeline.c - in-process benchmark of the whole request path:
 * input buffer -> frame -> parse + validate -> dispatch -> math handler ->
 * reply encode -> output chain, through the same jrpc__stream_t the daemon
 * uses, with no sockets.
 *
 * For each workload it feeds a buffer of newline-framed requests in 64 KiB
 * reads (as a socket would deliver them), drains the output after each read,
 * and prints ns per request (min and median over trials), malloc calls
 * per request (malloc is interposed in this binary, so every call counts,
 * libc's own included), and the same frames' cost in bare jsmn
 * tokenizing, timed alongside: the "x floor" ratio is what to compare
 * across machines (these VMs drift 2x in speed within minutes).
 *
 * usage: bench_pipeline [--trials N] [--mode fused|separate|none]
 *                       [--only NAME] [--requests N]
 * --only with --requests runs one workload once: for callgrind, run it at
 * two request counts and divide the difference in instructions.
 */
#define JSMN_STATIC
#define JSMN_STRICT
#define JSMN_PARENT_LINKS
#include <jsmn.h>

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "dispatch.h"
#include "module.h"
#include "validate.h"
#include "parser.h"
#include "stream.h"

/* ---- malloc counting by interposition ---- */
extern void *__libc_malloc(size_t);
extern void *__libc_calloc(size_t, size_t);
extern void *__libc_realloc(void *, size_t);
extern void *__libc_memalign(size_t, size_t);
static uint64_t n_malloc;
void *malloc(size_t n) {
  n_malloc++;
  return __libc_malloc(n);
}
void *calloc(size_t a, size_t b) {
  n_malloc++;
  return __libc_calloc(a, b);
}
void *realloc(void *p, size_t n) {
  n_malloc++;
  return __libc_realloc(p, n);
}
void *aligned_alloc(size_t al, size_t n) {
  n_malloc++;
  return __libc_memalign(al, n);
}

/* The math and echo modules, linked statically from their own source. */
const jrpc_module_info_t *math_module_info(void);
const jrpc_module_info_t *echo_module_info(void);

/* Reads every member of an object (the 30-member workload). */
static int obj_count(jrpc_call_t *c, jrpc_val_t params, void *udata) {
  int64_t n = 0;
  for (jrpc_val_t v = jrpc_first(c, params); !jrpc_is_none(v);
       v = jrpc_next(c, v)) {
    const char *k;
    size_t kn;
    if (jrpc_key(c, v, &k, &kn))
      return jrpc_error(c, JRPC_INTERNAL_ERROR, "no key");
    switch (jrpc_type(c, v)) {
    case JRPC_T_NUMBER: {
      double d;
      jrpc_as_f64(c, v, &d);
      n += d != 0;
      break;
    }
    case JRPC_T_STRING: {
      const char *s;
      size_t sn;
      jrpc_as_str(c, v, &s, &sn);
      n += sn;
      break;
    }
    default:
      n++;
    }
  }
  return jrpc_w_i64(c, n);
}

static jrpc__parser_t *make_parser(const char *backend,
                                   jrpc__jsmn_mode_t mode) {
  return !strcmp(backend, "jsmn") ? jrpc__parser_jsmn_new(mode)
                                  : jrpc__parser_new(backend);
}

static double now_ns(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return ts.tv_sec * 1e9 + ts.tv_nsec;
}

static int cmp_double(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return x < y ? -1 : x > y;
}

typedef struct input {
  char *buf;
  size_t len;
  size_t requests; /* JSON-RPC calls in the buffer */
} input_t;

/* copies of one line, separated by '\n', up to about `target` requests */
static input_t make_input(const char *line, size_t calls_per_line,
                          size_t target) {
  input_t in;
  size_t ln = strlen(line);
  size_t lines = target / calls_per_line;
  if (lines == 0)
    lines = 1;
  in.len = lines * (ln + 1);
  in.buf = malloc(in.len);
  for (size_t i = 0; i < lines; i++) {
    memcpy(in.buf + i * (ln + 1), line, ln);
    in.buf[i * (ln + 1) + ln] = '\n';
  }
  in.requests = lines * calls_per_line;
  return in;
}

static char *make_batch(size_t n) {
  static const char one[] =
      "{\"jsonrpc\":\"2.0\",\"method\":\"math.add\",\"params\":[1,2],\"id\":1}";
  char *s = malloc(n * sizeof(one) + 3);
  size_t p = 0;
  s[p++] = '[';
  for (size_t i = 0; i < n; i++) {
    if (i)
      s[p++] = ',';
    memcpy(s + p, one, sizeof(one) - 1);
    p += sizeof(one) - 1;
  }
  s[p++] = ']';
  s[p] = 0;
  return s;
}

/* echo of one string of n characters, as jrpc-bench's large:n sends it */
static char *make_echo_request(size_t n) {
  static const char alphabet[] = "abcdefghijklmnopqrstuvwxyz0123456789";
  char *s = malloc(n + 128);
  size_t p = (size_t)sprintf(
      s, "{\"jsonrpc\":\"2.0\",\"method\":\"echo\",\"params\":[\"");
  for (size_t i = 0; i < n; i++)
    s[p++] = alphabet[i % (sizeof(alphabet) - 1)];
  sprintf(s + p, "\"],\"id\":1}");
  return s;
}

static char *make_object_request(void) {
  char *s = malloc(4096);
  size_t p = (size_t)sprintf(
      s, "{\"jsonrpc\":\"2.0\",\"method\":\"obj.count\",\"params\":{");
  for (int i = 0; i < 30; i++) {
    const char *vals[] = {"12345", "-3.25e2", "\"some text value\"", "true",
                          "null"};
    p += (size_t)sprintf(s + p, "%s\"member_%02d\":%s", i ? "," : "", i,
                         vals[i % 5]);
  }
  sprintf(s + p, "},\"id\":7}");
  return s;
}

/* One pass over the input through the stream; returns reply bytes. */
static size_t run_once(jrpc__stream_t *st, const input_t *in) {
  size_t off = 0, out_bytes = 0;
  while (off < in->len) {
    size_t room;
    char *dst = jrpc__stream_rbuf(st, &room);
    if (!dst) {
      fprintf(stderr, "out of memory\n");
      exit(1);
    }
    size_t k = in->len - off < room ? in->len - off : room;
    if (k > 65536)
      k = 65536;
    memcpy(dst, in->buf + off, k);
    off += k;
    if (jrpc__stream_feed(st, k, 0)) {
      fprintf(stderr, "stream error\n");
      exit(1);
    }
    size_t pend = (size_t)jrpc__out_pending(&st->out);
    out_bytes += pend;
    jrpc__out_consume(&st->out, pend);
  }
  return out_bytes;
}

typedef struct result {
  double min_ns, med_ns, mallocs;
  double floor_ns; /* median: bare jsmn tokenizing the same frames */
  double ratio;    /* median of per-trial pipeline / floor */
  size_t reply_bytes;
} result_t;

/* The floor: jsmn alone (strict, parent links) tokenizing every frame of
 * the input, no validation, no envelope, no reply. Timed right next to the
 * pipeline so that the ratio survives a machine whose speed drifts. */
static double floor_once(const input_t *in, jsmntok_t *tok, size_t cap) {
  double t0 = now_ns();
  const char *p = in->buf, *end = in->buf + in->len;
  while (p < end) {
    const char *nl = memchr(p, '\n', (size_t)(end - p));
    jsmn_parser jp;
    jsmn_init(&jp);
    if (jsmn_parse(&jp, p, (size_t)(nl - p), tok, (unsigned)cap) < 0)
      abort();
    p = nl + 1;
  }
  return (now_ns() - t0) / (double)in->requests;
}

static result_t measure(jrpc__engine_t *e, const input_t *in, int trials) {
  jrpc__stream_t st;
  jrpc__stream_init(&st, e, JRPC_FRAMING_NEWLINE);
  result_t r = {0, 0, 0, 0, 0, 0};
  r.reply_bytes = run_once(&st, in); /* warm-up: pools and arena grow */
  run_once(&st, in);
  size_t cap = 1 << 16;
  jsmntok_t *tok = malloc(cap * sizeof(*tok));
  double *t = malloc(sizeof(double) * (size_t)trials);
  double *fl = malloc(sizeof(double) * (size_t)trials);
  double *ra = malloc(sizeof(double) * (size_t)trials);
  uint64_t mallocs = 0;
  for (int i = 0; i < trials; i++) {
    fl[i] = floor_once(in, tok, cap);
    uint64_t m0 = n_malloc;
    double t0 = now_ns();
    run_once(&st, in);
    t[i] = (now_ns() - t0) / (double)in->requests;
    mallocs += n_malloc - m0;
    ra[i] = t[i] / fl[i];
  }
  r.mallocs = (double)mallocs / ((double)in->requests * trials);
  qsort(t, (size_t)trials, sizeof(double), cmp_double);
  qsort(fl, (size_t)trials, sizeof(double), cmp_double);
  qsort(ra, (size_t)trials, sizeof(double), cmp_double);
  r.min_ns = t[0];
  r.med_ns = t[trials / 2];
  r.floor_ns = fl[trials / 2];
  r.ratio = ra[trials / 2];
  free(t);
  free(fl);
  free(ra);
  free(tok);
  jrpc__stream_free(&st);
  return r;
}

/* Parse cost alone, per frame: raw jsmn (tokens only, the floor), then
 * the backend without validation, with validation in a separate walk, and
 * fused. Frames are copied into a padded buffer first, as the stream does. */
static void parse_table(const char *const *names, const char *const *frames,
                        size_t nf, int trials) {
  enum { REPS = 2000 };
  jrpc__parser_t *ps[3] = {jrpc__parser_jsmn_new(JRPC__JSMN_NONE),
                           jrpc__parser_jsmn_new(JRPC__JSMN_SEPARATE),
                           jrpc__parser_jsmn_new(JRPC__JSMN_FUSED)};
  jrpc__arena_t a;
  jrpc__arena_init(&a, 1 << 16, 1 << 26);
  printf("\nparse only: median ns per frame (min in brackets)\n");
  printf("%-14s %16s %16s %16s %16s %8s\n", "frame", "jsmn tokens",
         "no validation", "separate walk", "fused walk", "fused/jsmn");
  for (size_t f = 0; f < nf; f++) {
    size_t n = strlen(frames[f]);
    char *buf = aligned_alloc(64, (n + 64 + 63) / 64 * 64);
    memcpy(buf, frames[f], n);
    double med[4], mn[4];
    double *t[4];
    size_t cap = n + 1;
    jsmntok_t *tok = malloc(cap * sizeof(*tok));
    /* Variants interleaved trial by trial, so that drift in the machine's
     * speed hits them all alike. */
    for (int v = 0; v < 4; v++)
      t[v] = malloc(sizeof(double) * (size_t)trials);
    for (int k = 0; k < trials; k++) {
      for (int v = 0; v < 4; v++) {
        double t0 = now_ns();
        for (int r = 0; r < REPS; r++) {
          if (v == 0) {
            jsmn_parser jp;
            jsmn_init(&jp);
            if (jsmn_parse(&jp, buf, n, tok, (unsigned)cap) < 0)
              abort();
          } else {
            jrpc__parsed_t out;
            ps[v - 1]->ops->parse(ps[v - 1], buf, n, &a, 4096, &out);
            if (out.status != JRPC__PARSE_OK)
              abort();
            jrpc__arena_reset(&a);
          }
        }
        t[v][k] = (now_ns() - t0) / REPS;
      }
    }
    for (int v = 0; v < 4; v++) {
      qsort(t[v], (size_t)trials, sizeof(double), cmp_double);
      med[v] = t[v][trials / 2];
      mn[v] = t[v][0];
      free(t[v]);
    }
    printf("%-14s", names[f]);
    for (int v = 0; v < 4; v++)
      printf(" %7.1f [%6.1f]", med[v], mn[v]);
    printf(" %8.2f\n", med[3] / med[0]);
    free(tok);
    free(buf);
  }
  for (int v = 0; v < 3; v++)
    jrpc__parser_destroy(ps[v]);
  jrpc__arena_free(&a);
}

/* Frames built to make jsmn work superlinearly, and a plain frame of the
 * same size: all must cost about the same per byte (the pre-scan refuses
 * the hostile ones before jsmn runs). */
static void hostile_table(void) {
  enum { SIZE = 600000 };
  char *f[3];
  const char *names[3] = {"plain numbers", "nesting, quote", "':' chain"};
  for (int k = 0; k < 3; k++)
    f[k] = malloc(SIZE + 64);
  size_t n = 0;
  f[0][n++] = '[';
  while (n < SIZE - 3) {
    memcpy(f[0] + n, "12,", 3);
    n += 3;
  }
  f[0][n - 1] = ']';
  /* [1" then 299,996 '[' and as many ']' */
  memcpy(f[1], "[1\" ", 4);
  memset(f[1] + 4, '[', (SIZE - 5) / 2);
  memset(f[1] + 4 + (SIZE - 5) / 2, ']', SIZE - 4 - (SIZE - 5) / 2);
  n = 0;
  for (int i = 0; i < 100; i++)
    f[2][n++] = '[';
  while (n < SIZE - 101) {
    memcpy(f[2] + n, "1 :", 3);
    n += 3;
  }
  f[2][n++] = '1';
  while (n < SIZE)
    f[2][n++] = ']';
  jrpc__parser_t *p = jrpc__parser_jsmn_new(JRPC__JSMN_FUSED);
  jrpc__arena_t a;
  jrpc__arena_init(&a, 1 << 16, 1 << 26);
  printf("\nhostile frames (%d bytes): parse, ns per byte, median of 5\n",
         SIZE);
  for (int k = 0; k < 3; k++) {
    double t[5];
    for (int r = 0; r < 5; r++) {
      double t0 = now_ns();
      jrpc__parsed_t out;
      p->ops->parse(p, f[k], SIZE, &a, 1u << 30, &out);
      t[r] = (now_ns() - t0) / SIZE;
      jrpc__arena_reset(&a);
    }
    qsort(t, 5, sizeof(double), cmp_double);
    printf("%-16s %8.3f\n", names[k], t[2]);
    free(f[k]);
  }
  jrpc__parser_destroy(p);
  jrpc__arena_free(&a);
}

int main(int argc, char **argv) {
  int trials = 15;
  size_t input_requests = 20000;
  const char *only = NULL;
  size_t requests = 0;
  jrpc__jsmn_mode_t mode = JRPC__JSMN_FUSED;
  const char *backend = "jsmn"; /* or simdjson, auto */
  int validate = 0; /* math's params checked first, as validate_params */
  for (int i = 1; i < argc; i++) {
    if (!strcmp(argv[i], "--trials") && i + 1 < argc)
      trials = atoi(argv[++i]);
    else if (!strcmp(argv[i], "--only") && i + 1 < argc)
      only = argv[++i];
    else if (!strcmp(argv[i], "--requests") && i + 1 < argc)
      requests = input_requests = (size_t)atol(argv[++i]);
    else if (!strcmp(argv[i], "--validate"))
      validate = 1;
    else if (!strcmp(argv[i], "--parser") && i + 1 < argc)
      backend = argv[++i];
    else if (!strcmp(argv[i], "--mode") && i + 1 < argc) {
      const char *m = argv[++i];
      mode = !strcmp(m, "separate") ? JRPC__JSMN_SEPARATE
             : !strcmp(m, "none")   ? JRPC__JSMN_NONE
                                    : JRPC__JSMN_FUSED;
    } else {
      fprintf(stderr,
              "usage: %s [--trials N] [--parser jsmn|simdjson|auto] "
              "[--mode fused|separate|none] [--validate] "
              "[--only NAME [--requests N]]\n",
              argv[0]);
      return 2;
    }
  }
  if (trials < 1)
    trials = 1;

  jrpc__registry_t reg;
  jrpc__registry_init(&reg);
  jrpc__module_t math, echo;
  char err[256];
  if (jrpc__module_start(&math, math_module_info(), "math", &reg, NULL, err,
                         sizeof(err)) ||
      jrpc__module_start(&echo, echo_module_info(), "echo", &reg, NULL, err,
                         sizeof(err))) {
    fprintf(stderr, "%s\n", err);
    return 1;
  }
  if (validate &&
      jrpc__validate_owner(&reg, &math, err, sizeof(err), NULL, NULL) != 0) {
    fprintf(stderr, "%s\n", err);
    return 1;
  }
  jrpc__registry_add(&reg, "obj.count", obj_count, NULL, NULL, NULL);

  char *batch40 = make_batch(40);
  char *batch100 = make_batch(100);
  char *objreq = make_object_request();
  char *echo1k = make_echo_request(1024);
  struct {
    const char *name, *line;
    size_t calls;
  } w[] = {
      {"single",
       "{\"jsonrpc\":\"2.0\",\"method\":\"math.add\",\"params\":[1,2],\"id\":"
       "1}",
       1},
      {"named",
       "{\"jsonrpc\":\"2.0\",\"method\":\"math.add\",\"params\":{\"a\":1,\"b\":"
       "2},\"id\":1}",
       1},
      {"notification",
       "{\"jsonrpc\":\"2.0\",\"method\":\"math.add\",\"params\":[1,2]}", 1},
      {"batch40", batch40, 40},
      {"batch100", batch100, 100},
      {"object30", objreq, 1},
      {"echo1k", echo1k, 1},
  };
  const size_t nw = sizeof(w) / sizeof(w[0]);

  static const char *const mode_names[] = {"fused", "separate", "none"};
  if (only) {
    /* One workload, one pass, no warm-up: for instruction counting. */
    for (size_t i = 0; i < nw; i++) {
      if (strcmp(w[i].name, only))
        continue;
      jrpc__engine_t e;
      jrpc__engine_init(&e, &reg, NULL, make_parser(backend, mode));
      input_t in = make_input(w[i].line, w[i].calls, requests ? requests : 1);
      jrpc__stream_t st;
      jrpc__stream_init(&st, &e, JRPC_FRAMING_NEWLINE);
      size_t bytes = run_once(&st, &in);
      printf("%s: %zu requests, %zu reply bytes\n", only, in.requests, bytes);
      jrpc__stream_free(&st);
      jrpc__engine_free(&e);
      return 0;
    }
    fprintf(stderr, "unknown workload %s\n", only);
    return 2;
  }

  jrpc__parser_t *parser = make_parser(backend, mode);
  if (!parser) {
    fprintf(stderr, "no parser backend \"%s\" in this build\n", backend);
    return 2;
  }
  if (!strcmp(backend, "jsmn"))
    printf("jrpc pipeline benchmark: jsmn backend, validation %s, %d trials, "
           "ns per request\n\n",
           mode_names[mode], trials);
  else
    printf("jrpc pipeline benchmark: %s backend, %d trials, ns per request\n"
           "\n",
           backend, trials);
  printf("%-14s %6s %9s %9s %12s %8s %10s %8s\n", "workload", "bytes", "min ns",
         "median ns", "mallocs/req", "reply B", "jsmn floor", "x floor");
  jrpc__engine_t e;
  jrpc__limits_t lim = JRPC__LIMITS_DEFAULT;
  lim.max_batch = 4096; /* the sweep goes to 1,024 calls per batch */
  jrpc__engine_init(&e, &reg, &lim, parser);
  for (size_t i = 0; i < nw; i++) {
    input_t in = make_input(w[i].line, w[i].calls, input_requests);
    result_t r = measure(&e, &in, trials);
    printf("%-14s %6zu %9.1f %9.1f %12.4f %8.1f %10.1f %8.2f\n", w[i].name,
           strlen(w[i].line), r.min_ns, r.med_ns, r.mallocs,
           (double)r.reply_bytes / (double)in.requests, r.floor_ns, r.ratio);
    free(in.buf);
  }

  {
    const char *names[nw];
    const char *frames[nw];
    for (size_t i = 0; i < nw; i++) {
      names[i] = w[i].name;
      frames[i] = w[i].line;
    }
    parse_table(names, frames, nw, trials);
  }

  hostile_table();

  printf("\nbatch sweep: ns per call inside one batch of n calls\n");
  printf("%-8s %10s %10s %12s %10s %8s\n", "n", "min ns", "median ns",
         "mallocs/req", "jsmn floor", "x floor");
  static const size_t sweep[] = {1, 16, 64, 256, 1024};
  for (size_t i = 0; i < sizeof(sweep) / sizeof(sweep[0]); i++) {
    char *b = make_batch(sweep[i]);
    input_t in = make_input(b, sweep[i], 20480);
    result_t r = measure(&e, &in, trials);
    printf("%-8zu %10.1f %10.1f %12.4f %10.1f %8.2f\n", sweep[i], r.min_ns,
           r.med_ns, r.mallocs, r.floor_ns, r.ratio);
    free(in.buf);
    free(b);
  }
  jrpc__engine_free(&e);
  jrpc__module_stop(&echo);
  jrpc__module_stop(&math);
  jrpc__registry_free(&reg);
  free(batch40);
  free(batch100);
  free(objreq);
  free(echo1k);
  return 0;
}
