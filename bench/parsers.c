/* parsers.c - the parser backends side by side: jsmn (fused validation),
 * simdjson (DOM), auto (native below a frame size, simdjson above it) and
 * native (our own tokenizer).
 *
 * Each measured unit is what request.c and a handler do with a frame:
 * ops->parse (validation and the envelope of every request), then a full
 * read of every request's params through the view functions of view.h:
 * type, first/next recursively, keys of object members, strings decoded
 * (jrpc__view_str), numbers converted (jrpc__view_i64, else
 * jrpc__view_f64), booleans read. The arena is reset after every frame.
 * Frames sit in 64-byte aligned buffers with JRPC__PAD readable bytes
 * after them, as the daemon's buffer pool keeps them.
 *
 * Backends are interleaved trial by trial (the first backend of a trial
 * rotates), so that drift in the machine's speed hits them all alike.
 * Every workload's params read gives a checksum; the backends must agree.
 *
 * usage: bench_parsers [--trials N]
 *        bench_parsers --only NAME --backend jsmn|simdjson|auto|native
 *                      --requests N
 * The second form parses one workload's frame until N requests are done
 * (whole frames), once, no warm-up: for callgrind, run it at two request
 * counts and divide the difference in instructions (parsers_callgrind.sh).
 * --list prints the workload names.
 */
#include <inttypes.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "arena.h"
#include "parser.h"
#include "view.h"

#define NB 4 /* backends: jsmn, simdjson, auto, native */
static const char *const backend_names[NB] = {"jsmn", "simdjson", "auto",
                                              "native"};

/* ---- the handler-like read of params ---- */

static uint64_t walk(jrpc_val_t v, jrpc__arena_t *a, int member) {
  uint64_t h = 0;
  if (member) {
    const char *k;
    size_t kn;
    if (jrpc__view_key(v, a, &k, &kn))
      abort();
    h += kn + (unsigned char)k[0];
  }
  jrpc_type_t t = jrpc__view_type(v);
  switch (t) {
  case JRPC_T_ARRAY:
  case JRPC_T_OBJECT:
    for (jrpc_val_t c = jrpc__view_first(v); c.doc_; c = jrpc__view_next(c))
      h = h * 31 + walk(c, a, t == JRPC_T_OBJECT);
    break;
  case JRPC_T_NUMBER: {
    int64_t i;
    double d;
    if (jrpc__view_i64(v, &i) == 0)
      h += (uint64_t)i;
    else if (jrpc__view_f64(v, &d) == 0)
      h += (uint64_t)(int64_t)(d * 1000.0);
    else
      abort();
    break;
  }
  case JRPC_T_STRING: {
    const char *s;
    size_t n;
    if (jrpc__view_str(v, a, &s, &n))
      abort();
    h += n + (n ? (unsigned char)s[0] + (unsigned char)s[n - 1] : 0);
    break;
  }
  case JRPC_T_TRUE:
  case JRPC_T_FALSE: {
    int b;
    if (jrpc__view_bool(v, &b))
      abort();
    h += 2u + (unsigned)b;
    break;
  }
  case JRPC_T_NULL:
    h += 5;
    break;
  default:
    break;
  }
  return h;
}

/* One frame: parse, then read every request. Returns a checksum. */
static uint64_t parse_read(jrpc__parser_t *p, const char *buf, size_t n,
                           jrpc__arena_t *a, uint32_t expect) {
  jrpc__parsed_t out;
  if (p->ops->parse(p, buf, n, a, 4096, &out) || out.status != JRPC__PARSE_OK ||
      out.count != expect) {
    fprintf(stderr, "%s: parse failed (%s)\n", p->ops->name,
            out.why ? out.why : "?");
    exit(1);
  }
  uint64_t h = 0;
  for (uint32_t i = 0; i < out.count; i++) {
    const jrpc__envelope_t *e = &out.env[i];
    if (!e->is_object || e->method_t != JRPC_T_STRING)
      abort();
    h += e->method_n + e->id_n + e->jsonrpc_n;
    h = h * 131 + walk(e->params, a, 0);
  }
  jrpc__arena_reset(a);
  return h;
}

/* ---- frames ---- */

typedef struct sbuf {
  char *s;
  size_t n, cap;
} sbuf_t;

static void put(sbuf_t *b, const char *s) {
  size_t k = strlen(s);
  if (b->n + k + 1 > b->cap) {
    b->cap = (b->n + k + 1) * 2;
    b->s = realloc(b->s, b->cap);
    if (!b->s)
      abort();
  }
  memcpy(b->s + b->n, s, k + 1);
  b->n += k;
}

static const char F1[] =
    "{\"jsonrpc\":\"2.0\",\"method\":\"add\",\"params\":[1,2],\"id\":1}";
static const char F2[] = "{\"jsonrpc\":\"2.0\",\"method\":"
                         "\"NullableFloatToNullableFloat\",\"params\":[1.23],"
                         "\"id\":3}";
static const char F3[] = "{\"jsonrpc\":\"2.0\",\"method\":\"StringMe\","
                         "\"params\":[\"Foo\"],\"id\":5}";
static const char NOTIF[] =
    "{\"jsonrpc\":\"2.0\",\"method\":\"add\",\"params\":[1,2]}";

static char *batch_of(const char *const *reqs, size_t nreq, size_t n) {
  sbuf_t b = {0};
  put(&b, "[");
  for (size_t i = 0; i < n; i++) {
    if (i)
      put(&b, ",");
    put(&b, reqs[i % nreq]);
  }
  put(&b, "]");
  return b.s;
}

static char *object30(void) {
  static const char *const vals[] = {
      "1234567", "-3.25e2", "\"some text value, of some length\"",
      "true",    "null",    "0.000123",
      "false",   "-42"};
  sbuf_t b = {0};
  char m[96];
  put(&b, "{\"jsonrpc\":\"2.0\",\"method\":\"obj.count\",\"params\":{");
  for (int i = 0; i < 30; i++) {
    snprintf(m, sizeof(m), "%s\"member_name_%02d\":%s", i ? "," : "", i,
             vals[i % 8]);
    put(&b, m);
  }
  put(&b, "},\"id\":7}");
  return b.s;
}

/* A request whose params array is filled with mixed numbers and strings
 * while the frame stays within `target` bytes (at least one element). */
static char *sized_request(size_t target, size_t *elems) {
  static const char *const vals[] = {
      "1234567",       "-3.2500e2",           "\"text ",   "0.515625",
      "4242",          "\"abc def ghi jkl\"", "-98765432", "1.0e-3",
      "\"x y z w v\"", "2718281828"};
  static const char head[] = "{\"jsonrpc\":\"2.0\",\"method\":\"sum\","
                             "\"params\":[";
  static const char tail[] = "],\"id\":9}";
  sbuf_t b = {0};
  put(&b, head);
  size_t k = 0;
  char e[64];
  for (;; k++) {
    int w = snprintf(e, sizeof(e), "%s%s", k ? "," : "", vals[k % 10]);
    if (k % 10 == 2) /* a string that varies: "text 0" .. "text 99" */
      w += snprintf(e + w, sizeof(e) - (size_t)w, "%d\"", (int)(k % 100));
    if (k && b.n + (size_t)w + sizeof(tail) - 1 > target)
      break;
    put(&b, e);
  }
  put(&b, tail);
  *elems = k;
  return b.s;
}

static char *big_string_request(size_t len) {
  static const char head[] = "{\"jsonrpc\":\"2.0\",\"method\":\"echo\","
                             "\"params\":[\"";
  static const char tail[] = "\"],\"id\":11}";
  size_t hn = sizeof(head) - 1, tn = sizeof(tail) - 1;
  char *s = malloc(hn + len + tn + 1);
  memcpy(s, head, hn);
  for (size_t i = 0; i < len; i++)
    s[hn + i] = (char)('a' + (i * 7 + i / 26) % 26);
  for (size_t i = 61; i < len; i += 64)
    s[hn + i] = ' ';
  memcpy(s + hn + len, tail, tn + 1);
  return s;
}

typedef struct workload {
  char name[32];
  const char *group; /* which table prints it */
  char *frame;       /* padded copy: 64-aligned, JRPC__PAD bytes after */
  size_t len;
  uint32_t requests; /* requests in the frame */
  size_t param;      /* n of the sweep, or elements of a sized frame */
  double med[NB], min[NB];
  double ratio;      /* median of the per-trial ratios simdjson / native */
  double auto_ratio; /* ... auto / the faster of simdjson and native */
} workload_t;

static workload_t W[64];
static size_t NW;

static void add(const char *name, const char *group, const char *text,
                uint32_t requests, size_t param) {
  workload_t *w = &W[NW++];
  snprintf(w->name, sizeof(w->name), "%s", name);
  w->group = group;
  w->len = strlen(text);
  size_t size = (w->len + JRPC__PAD + 63) / 64 * 64;
  w->frame = aligned_alloc(64, size);
  if (!w->frame)
    abort();
  memset(w->frame, 0, size);
  memcpy(w->frame, text, w->len);
  w->requests = requests;
  w->param = param;
}

/* Builds the workloads; with `only`, that one alone (under callgrind,
 * building the others would cost more than the runs). */
static void build(const char *only) {
  const char *const three[] = {F1, F2, F3};
  const char *const one[] = {F1};
  char name[32];
  size_t elems;
  char *b;
#define WANT(n) (!only || !strcmp(only, (n)))
  if (WANT("add"))
    add("add", "main", F1, 1, 0);
  if (WANT("float"))
    add("float", "main", F2, 1, 0);
  if (WANT("string"))
    add("string", "main", F3, 1, 0);
  if (WANT("batch40")) {
    b = batch_of(three, 3, 40);
    add("batch40", "main", b, 40, 0);
    free(b);
  }
  if (WANT("object30")) {
    b = object30();
    add("object30", "main", b, 1, 0);
    free(b);
  }
  if (WANT("notification"))
    add("notification", "main", NOTIF, 1, 0);
  if (WANT("array64k")) {
    b = sized_request(65536, &elems);
    add("array64k", "main", b, 1, elems);
    free(b);
  }
  if (WANT("string64k")) {
    b = big_string_request(65536);
    add("string64k", "main", b, 1, 0);
    free(b);
  }
  for (size_t n = 1; n <= 1024; n *= 2) {
    snprintf(name, sizeof(name), "batch%zu", n);
    if (WANT(name)) {
      b = batch_of(one, 1, n);
      add(name, "batch", b, (uint32_t)n, n);
      free(b);
    }
  }
  for (size_t n = 64; n <= 8192; n *= 2) {
    snprintf(name, sizeof(name), "size%zu", n);
    if (WANT(name)) {
      b = sized_request(n, &elems);
      add(name, "size", b, 1, elems);
      free(b);
    }
  }
#undef WANT
}

/* ---- timing ---- */

static double now_ns(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec * 1e9 + (double)ts.tv_nsec;
}

static int cmp_double(const void *x, const void *y) {
  double a = *(const double *)x, b = *(const double *)y;
  return a < b ? -1 : a > b;
}

static volatile uint64_t sink;

/* ns per frame of `reps` frames through backend p. */
static double block(jrpc__parser_t *p, const workload_t *w, jrpc__arena_t *a,
                    long reps) {
  uint64_t h = 0;
  double t0 = now_ns();
  for (long r = 0; r < reps; r++)
    h += parse_read(p, w->frame, w->len, a, w->requests);
  double t = now_ns() - t0;
  sink += h;
  return t / (double)reps;
}

#define BLOCK_NS 4e6 /* each timed block: ~4 ms */

static void measure(workload_t *w, jrpc__parser_t **ps, jrpc__arena_t *a,
                    int trials) {
  /* Warm-up (pools, arena and simdjson capacity grow), the cross-check of
   * the backends' reads, and the repetitions per block. */
  uint64_t sum[NB];
  double slow = 1;
  for (int b = 0; b < NB; b++) {
    sum[b] = parse_read(ps[b], w->frame, w->len, a, w->requests);
    double t = block(ps[b], w, a, 3);
    if (t > slow)
      slow = t;
  }
  for (int b = 1; b < NB; b++)
    if (sum[b] != sum[0]) {
      fprintf(stderr, "%s: %s read differs from jsmn's\n", w->name,
              backend_names[b]);
      exit(1);
    }
  long reps = (long)(BLOCK_NS / slow);
  if (reps < 1)
    reps = 1;
  double *t[NB];
  for (int b = 0; b < NB; b++)
    t[b] = malloc(sizeof(double) * (size_t)trials);
  for (int k = 0; k < trials; k++)
    for (int j = 0; j < NB; j++) {
      int b = (k + j) % NB;
      t[b][k] = block(ps[b], w, a, reps) / w->requests;
    }
  /* Per trial, the backends ran back to back: their ratio cancels most of
   * the machine's drift. */
  double *ra = malloc(sizeof(double) * (size_t)trials);
  double *rb = malloc(sizeof(double) * (size_t)trials);
  for (int k = 0; k < trials; k++) {
    double best = t[1][k] < t[3][k] ? t[1][k] : t[3][k];
    ra[k] = t[1][k] / t[3][k];
    rb[k] = t[2][k] / best;
  }
  qsort(ra, (size_t)trials, sizeof(double), cmp_double);
  qsort(rb, (size_t)trials, sizeof(double), cmp_double);
  w->ratio = ra[trials / 2];
  w->auto_ratio = rb[trials / 2];
  free(ra);
  free(rb);
  for (int b = 0; b < NB; b++) {
    qsort(t[b], (size_t)trials, sizeof(double), cmp_double);
    w->med[b] = t[b][trials / 2];
    w->min[b] = t[b][0];
    free(t[b]);
  }
}

static void print_row(const workload_t *w, const char *label) {
  printf("%-14s %6zu", label, w->len);
  for (int b = 0; b < NB; b++)
    printf(" %9.1f [%8.1f]", w->med[b], w->min[b]);
  printf(" %7.2f %9.2f\n", w->ratio, w->auto_ratio);
}

static void print_head(const char *first) {
  printf("%-14s %6s", first, "bytes");
  for (int b = 0; b < NB; b++)
    printf(" %20s", backend_names[b]);
  printf(" %7s %9s\n", "sj/nat", "auto/best");
}

static int only_mode(const char *only, const char *backend, long requests) {
  for (size_t i = 0; i < NW; i++) {
    workload_t *w = &W[i];
    if (strcmp(w->name, only))
      continue;
    jrpc__parser_t *p = jrpc__parser_new(backend);
    if (!p) {
      fprintf(stderr, "unknown or unavailable backend %s\n", backend);
      return 2;
    }
    jrpc__arena_t a;
    jrpc__arena_init(&a, 1 << 16, 1 << 26);
    long frames = (requests + w->requests - 1) / w->requests;
    if (frames < 1)
      frames = 1;
    uint64_t h = 0;
    for (long r = 0; r < frames; r++)
      h += parse_read(p, w->frame, w->len, &a, w->requests);
    printf("%s %s: bytes=%zu frames=%ld requests=%ld kernel=%s "
           "checksum=%016" PRIx64,
           only, backend, w->len, frames, frames * (long)w->requests,
           jrpc__simdjson_kernel(), h);
    if (!strcmp(backend, "auto") && jrpc__parser_auto_threshold(p) == SIZE_MAX)
      printf(" simdjson_from=never");
    else if (!strcmp(backend, "auto"))
      printf(" simdjson_from=%zu", jrpc__parser_auto_threshold(p));
    printf("\n");
    jrpc__arena_free(&a);
    jrpc__parser_destroy(p);
    return 0;
  }
  fprintf(stderr, "unknown workload %s (--list)\n", only);
  return 2;
}

int main(int argc, char **argv) {
  int trials = 31;
  const char *only = NULL, *backend = "jsmn";
  long requests = 1;
  int list = 0;
  for (int i = 1; i < argc; i++) {
    if (!strcmp(argv[i], "--trials") && i + 1 < argc)
      trials = atoi(argv[++i]);
    else if (!strcmp(argv[i], "--only") && i + 1 < argc)
      only = argv[++i];
    else if (!strcmp(argv[i], "--backend") && i + 1 < argc)
      backend = argv[++i];
    else if (!strcmp(argv[i], "--requests") && i + 1 < argc)
      requests = atol(argv[++i]);
    else if (!strcmp(argv[i], "--list"))
      list = 1;
    else {
      fprintf(stderr,
              "usage: %s [--trials N]\n"
              "       %s --only NAME --backend jsmn|simdjson|auto "
              "--requests N\n"
              "       %s --list\n",
              argv[0], argv[0], argv[0]);
      return 2;
    }
  }
  if (trials < 1)
    trials = 1;
  build(only);
  if (list) {
    for (size_t i = 0; i < NW; i++)
      printf("%s %zu %u\n", W[i].name, W[i].len, W[i].requests);
    return 0;
  }
  if (only)
    return only_mode(only, backend, requests);

  jrpc__parser_t *ps[NB];
  for (int b = 0; b < NB; b++)
    if (!(ps[b] = jrpc__parser_new(backend_names[b]))) {
      fprintf(stderr, "backend %s unavailable\n", backend_names[b]);
      return 1;
    }
  jrpc__arena_t a;
  jrpc__arena_init(&a, 1 << 16, 1 << 26);

  printf("jrpc parser backends: parse + envelope + full params read\n");
  size_t from = jrpc__parser_auto_threshold(ps[2]);
  if (from == SIZE_MAX)
    printf("simdjson kernel: %s; auto: native for every frame",
           jrpc__simdjson_kernel());
  else
    printf("simdjson kernel: %s; auto: simdjson from %zu bytes",
           jrpc__simdjson_kernel(), from);
  printf("; %d trials, backends interleaved; figures: median [min]\n", trials);
  printf("sj/nat: simdjson / native, auto/best: auto / the faster of the "
         "two;\n  both the median of the per-trial ratios (drift cancels)\n");

  double t0 = now_ns();
  for (size_t i = 0; i < NW; i++)
    measure(&W[i], ps, &a, trials);

  printf("\nns per request\n");
  print_head("workload");
  for (size_t i = 0; i < NW; i++)
    if (!strcmp(W[i].group, "main")) {
      char label[64];
      if (W[i].param)
        snprintf(label, sizeof(label), "%.31s(%zu)", W[i].name, W[i].param);
      else
        snprintf(label, sizeof(label), "%.31s", W[i].name);
      print_row(&W[i], label);
    }
  printf("(array64k: params of n mixed numbers/strings; string64k: one "
         "string of 65,536 bytes)\n");

  printf("\nbatch sweep: ns per request inside one batch of n copies of "
         "\"add\"\n");
  print_head("n");
  for (size_t i = 0; i < NW; i++)
    if (!strcmp(W[i].group, "batch")) {
      char label[32];
      snprintf(label, sizeof(label), "%zu", W[i].param);
      print_row(&W[i], label);
    }

  printf("\nsize sweep: ns per frame, one request, params array of n mixed "
         "numbers/strings\n");
  print_head("target(n)");
  const workload_t *cross = NULL;
  for (size_t i = 0; i < NW; i++)
    if (!strcmp(W[i].group, "size")) {
      char label[32];
      snprintf(label, sizeof(label), "%s(%zu)", W[i].name + 4, W[i].param);
      print_row(&W[i], label);
      if (W[i].ratio < 1) {
        if (!cross)
          cross = &W[i];
      } else {
        cross = NULL; /* slower again: the crossover is further on */
      }
    }
  if (cross)
    printf("crossover: simdjson is faster than native from the %zu-byte "
           "frame on (kernel %s)\n",
           cross->len, jrpc__simdjson_kernel());
  else
    printf("crossover: simdjson is not faster than native at the largest "
           "frame (kernel %s)\n",
           jrpc__simdjson_kernel());
  /* The promise auto makes: never more than 5% behind the faster one. */
  const workload_t *worst = &W[0];
  size_t over = 0;
  for (size_t i = 0; i < NW; i++) {
    if (W[i].auto_ratio > worst->auto_ratio)
      worst = &W[i];
    over += W[i].auto_ratio > 1.05;
  }
  printf("auto against the faster of native and simdjson: %zu of %zu "
         "workloads more than 5%% slower; worst %s(%zu) at %.2f\n",
         over, (size_t)NW, worst->name, worst->param, worst->auto_ratio);
  printf("\n(%.1f s)\n", (now_ns() - t0) / 1e9);

  for (int b = 0; b < NB; b++)
    jrpc__parser_destroy(ps[b]);
  jrpc__arena_free(&a);
  for (size_t i = 0; i < NW; i++)
    free(W[i].frame);
  return (int)(sink & 0);
}
