/* test_jsonsuite.c - JSONTestSuite (github.com/nst/JSONTestSuite,
 * test_parsing/) through the jsmn parser backend and through the whole
 * pipeline.
 *
 *  y_*.json  valid JSON: the backend must accept it; as a request it must
 *            get a reply that is not -32700 (it is JSON, just not a valid
 *            request: -32600 or similar).
 *  n_*.json  invalid JSON: the backend must reject it; as a request it must
 *            get exactly {"jsonrpc":"2.0","error":{"code":-32700,
 *            "message":"Parse error"},"id":null}.
 *  i_*.json  implementation-defined: the verdicts must be those of the
 *            table in tests/README.md (rewritten there instead when
 *            JRPC_UPDATE_README=1 is set).
 *
 * The data is read from JRPC_TESTDATA_DIR at run time. Without it the
 * program exits 77, which ctest reports as skipped (SKIP_RETURN_CODE), or
 * 1 when CI=true: CI must never pass without the suite. Each file's bytes are
 * parsed from a buffer with JRPC__PAD readable bytes after them, once with zero
 * padding and once with hostile padding: the verdict must not depend on bytes
 * past the end. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <cmocka.h>

#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "testutil.h"

#define SUITE_DIR JRPC_TESTDATA_DIR "/JSONTestSuite/test_parsing"
#define README_PATH JRPC_TESTS_DIR "/README.md"
#define TABLE_BEGIN "<!-- jsonsuite-i-table:begin -->"
#define TABLE_END "<!-- jsonsuite-i-table:end -->"

typedef struct suite_file {
  char *name;
  char *data;
  size_t n;
  int parsed; /* 1 accepted, 0 rejected, -1 inconsistent/error */
  const char *why;
  int32_t reply; /* pipeline: error code of the reply (0 = result) */
  int replied;   /* pipeline: a well-formed single reply came back */
} suite_file_t;

static suite_file_t *files;
static size_t nfiles;
static tu_fixture fx;
static int fx_ready;
static int pipeline_done;

static int by_name(const void *a, const void *b) {
  return strcmp(((const suite_file_t *)a)->name,
                ((const suite_file_t *)b)->name);
}

static int read_file(const char *path, char **data, size_t *n) {
  FILE *fp = fopen(path, "rb");
  if (!fp)
    return -1;
  size_t cap = 4096, len = 0;
  char *buf = malloc(cap);
  while (buf) {
    size_t k = fread(buf + len, 1, cap - len, fp);
    len += k;
    if (len < cap)
      break;
    char *nb = realloc(buf, cap * 2);
    if (!nb) {
      free(buf);
      buf = NULL;
      break;
    }
    buf = nb;
    cap *= 2;
  }
  fclose(fp);
  if (!buf)
    return -1;
  *data = buf;
  *n = len;
  return 0;
}

static int setup(void **state) {
  (void)state;
  DIR *d = opendir(SUITE_DIR);
  if (!d) {
    print_error("cannot open %s\n", SUITE_DIR);
    return -1;
  }
  size_t cap = 0;
  struct dirent *de;
  while ((de = readdir(d)) != NULL) {
    size_t len = strlen(de->d_name);
    if (len < 6 || strcmp(de->d_name + len - 5, ".json") != 0)
      continue;
    if (de->d_name[1] != '_' || !strchr("yni", de->d_name[0]))
      continue;
    if (nfiles == cap) {
      cap = cap ? cap * 2 : 512;
      suite_file_t *nf = realloc(files, cap * sizeof *nf);
      if (!nf)
        return -1;
      files = nf;
    }
    suite_file_t *f = &files[nfiles];
    memset(f, 0, sizeof *f);
    f->name = strdup(de->d_name);
    char path[4096];
    snprintf(path, sizeof path, "%s/%s", SUITE_DIR, de->d_name);
    if (!f->name || read_file(path, &f->data, &f->n) != 0) {
      print_error("cannot read %s\n", path);
      closedir(d);
      return -1;
    }
    nfiles++;
  }
  closedir(d);
  if (nfiles == 0) {
    print_error("%s holds no y_, n_ or i_ files\n", SUITE_DIR);
    return -1;
  }
  qsort(files, nfiles, sizeof *files, by_name);
  tu_fixture_init(&fx, NULL);
  fx_ready = 1;
  return 0;
}

static int teardown(void **state) {
  (void)state;
  for (size_t i = 0; i < nfiles; i++) {
    free(files[i].name);
    free(files[i].data);
  }
  free(files);
  if (fx_ready)
    tu_fixture_free(&fx);
  return 0;
}

/* Parses data[0..n) with `pad` bytes of padding value pattern; returns the
 * parse status (JRPC__PARSE_*), or -1 when parse() itself failed. */
static int parse_padded(jrpc__parser_t *p, jrpc__arena_t *a, const char *data,
                        size_t n, int hostile, const char **why) {
  char *buf = malloc(n + JRPC__PAD);
  assert_non_null(buf);
  memcpy(buf, data, n);
  if (hostile) {
    static const char junk[] = "\"]}1,:\\u0000[{ \"e";
    for (size_t i = 0; i < JRPC__PAD; i++)
      buf[n + i] = junk[i % (sizeof junk - 1)];
  } else {
    memset(buf + n, 0, JRPC__PAD);
  }
  jrpc__parsed_t out;
  memset(&out, 0, sizeof out);
  int rc = p->ops->parse(p, buf, n, a, 1000, &out);
  free(buf);
  jrpc__arena_reset(a);
  if (rc != 0)
    return -1;
  if (why)
    *why = out.why;
  return out.status;
}

static void test_suite_parser(void **state) {
  (void)state;
  jrpc__parser_t *p = tu_parser_new();
  assert_non_null(p);
  jrpc__arena_t a;
  jrpc__arena_init(&a, 4096, 1u << 24);
  int bad = 0, ny = 0, nn = 0, ni = 0;
  for (size_t i = 0; i < nfiles; i++) {
    suite_file_t *f = &files[i];
    const char *why = NULL;
    int s0 = parse_padded(p, &a, f->data, f->n, 0, &why);
    int s1 = parse_padded(p, &a, f->data, f->n, 1, NULL);
    f->why = why;
    if (s0 < 0 || s1 < 0 ||
        (s0 == JRPC__PARSE_INVALID) != (s1 == JRPC__PARSE_INVALID)) {
      print_error("FAIL %s: parse() failed or depends on padding (%d/%d)\n",
                  f->name, s0, s1);
      f->parsed = -1;
      bad++;
      continue;
    }
    f->parsed = s0 != JRPC__PARSE_INVALID;
    switch (f->name[0]) {
    case 'y':
      ny++;
      if (!f->parsed) {
        print_error("FAIL %s: valid JSON rejected (%s)\n", f->name,
                    why ? why : "no reason");
        bad++;
      }
      break;
    case 'n':
      nn++;
      if (f->parsed) {
        print_error("FAIL %s: invalid JSON accepted\n", f->name);
        bad++;
      }
      break;
    default:
      ni++;
    }
  }
  print_message("JSONTestSuite/%s: %d y_, %d n_, %d i_ files; %d "
                "failure(s)\n",
                tu_parser_name(), ny, nn, ni, bad);
  jrpc__arena_free(&a);
  jrpc__parser_destroy(p);
  assert_int_equal(bad, 0);
}

static const char parse_error[] =
    "{\"jsonrpc\":\"2.0\",\"error\":{\"code\":-32700,"
    "\"message\":\"Parse error\"},\"id\":null}";

/* Every error code in a reply (object or batch array) differs from -32700. */
static int no_parse_error(const tu_json_t *j) {
  if (j->type == TU_J_ARRAY) {
    for (size_t i = 0; i < j->nkids; i++)
      if (!no_parse_error(j->kids[i]))
        return 0;
    return j->nkids > 0;
  }
  const tu_json_t *err = tu_json_get(j, "error");
  return !err || strcmp(tu_json_get(err, "code")->s, "-32700") != 0;
}

static int32_t first_code(const tu_json_t *j) {
  if (j->type == TU_J_ARRAY)
    return j->nkids ? first_code(j->kids[0]) : INT32_MIN;
  const tu_json_t *err = tu_json_get(j, "error");
  return err ? (int32_t)strtol(tu_json_get(err, "code")->s, NULL, 10) : 0;
}

static void run_pipeline(void) {
  static char out[1 << 16];
  int bad = 0;
  if (pipeline_done)
    return;
  pipeline_done = 1;
  for (size_t i = 0; i < nfiles; i++) {
    suite_file_t *f = &files[i];
    char *in = malloc(f->n + 4);
    const char *fp[2];
    size_t fn[2];
    assert_non_null(in);
    size_t inn = tu_frame(JRPC_FRAMING_LENGTH, f->data, f->n, in, f->n + 4);
    size_t rn = tu_run(&fx, JRPC_FRAMING_LENGTH, in, inn, out, sizeof out);
    free(in);
    int k = tu_unframe(JRPC_FRAMING_LENGTH, out, rn, fp, fn, 2);
    tu_json_t *j = k == 1 ? tu_json_parse(fp[0], fn[0]) : NULL;
    int ok = j && (j->type == TU_J_ARRAY ? j->nkids > 0 : tu_response_ok(j));
    for (size_t e = 0; ok && j->type == TU_J_ARRAY && e < j->nkids; e++)
      ok = tu_response_ok(j->kids[e]);
    if (!ok) {
      print_error("FAIL %s: expected one well-formed reply, got %d frame(s): "
                  "%.300s\n",
                  f->name, k, k == 1 ? fp[0] : "");
      tu_json_free(j);
      bad++;
      continue;
    }
    f->replied = 1;
    f->reply = first_code(j);
    switch (f->name[0]) {
    case 'y':
      if (!no_parse_error(j)) {
        print_error("FAIL %s: valid JSON answered with -32700: %.*s\n", f->name,
                    (int)fn[0], fp[0]);
        bad++;
      }
      break;
    case 'n':
      if (!tu_json_equal(fp[0], fn[0], parse_error, sizeof parse_error - 1,
                         0)) {
        print_error("FAIL %s: invalid JSON not answered with -32700/null: "
                    "%.*s\n",
                    f->name, (int)(fn[0] > 300 ? 300 : fn[0]), fp[0]);
        bad++;
      }
      break;
    default:
      break;
    }
    tu_json_free(j);
  }
  print_message("JSONTestSuite through the pipeline: %zu files, %d "
                "failure(s)\n",
                nfiles, bad);
  assert_int_equal(bad, 0);
}

static void test_suite_pipeline(void **state) {
  (void)state;
  run_pipeline();
}

/* The backend's verdict and the pipeline's agree for every file. */
static void test_suite_consistent(void **state) {
  (void)state;
  int bad = 0;
  for (size_t i = 0; i < nfiles; i++) {
    const suite_file_t *f = &files[i];
    if (f->parsed < 0 || !f->replied)
      continue;
    if (f->parsed != (f->reply != JRPC_PARSE_ERROR)) {
      print_error("FAIL %s: backend %s it, pipeline replied %d\n", f->name,
                  f->parsed ? "accepted" : "rejected", (int)f->reply);
      bad++;
    }
  }
  assert_int_equal(bad, 0);
}

static size_t table(char *buf, size_t cap) {
  size_t n = 0;
  int k = snprintf(buf, cap,
                   "| file | %s backend | reply through the pipeline |\n"
                   "|---|---|---|\n",
                   tu_parser_name());
  n += (size_t)(k > 0 ? k : 0);
  for (size_t i = 0; i < nfiles && n < cap; i++) {
    const suite_file_t *f = &files[i];
    if (f->name[0] != 'i')
      continue;
    char reply[32];
    if (!f->replied)
      snprintf(reply, sizeof reply, "(none)");
    else if (f->reply == 0)
      snprintf(reply, sizeof reply, "result");
    else
      snprintf(reply, sizeof reply, "%d", (int)f->reply);
    k = snprintf(buf + n, cap - n, "| `%s` | %s | %s |\n", f->name,
                 f->parsed < 0 ? "error"
                 : f->parsed   ? "accepted"
                               : "rejected",
                 reply);
    n += (size_t)(k > 0 ? k : 0);
  }
  return n < cap ? n : cap - 1;
}

/* tests/README.md as a string, with *b and *e at the table's markers
 * (*b just past the first). Asserts. */
static char *readme_table(char **b, char **e) {
  char *doc;
  size_t n;
  if (read_file(README_PATH, &doc, &n) != 0)
    fail_msg("cannot read %s", README_PATH);
  char *text = malloc(n + 1);
  assert_non_null(text);
  memcpy(text, doc, n);
  text[n] = '\0';
  free(doc);
  *b = strstr(text, TABLE_BEGIN);
  *e = strstr(text, TABLE_END);
  if (!*b || !*e || *e < *b) {
    free(text);
    fail_msg("%s lacks the markers %s ... %s", README_PATH, TABLE_BEGIN,
             TABLE_END);
  }
  *b += strlen(TABLE_BEGIN);
  return text;
}

/* The rows of a table (lines that start with "| `"), header left out: it
 * names the backend, and the rows hold for every backend. */
static size_t table_rows(const char *t, const char *end, char *out,
                         size_t cap) {
  size_t n = 0;
  while (t < end && *t) {
    const char *nl = memchr(t, '\n', (size_t)(end - t));
    size_t len = nl ? (size_t)(nl - t) : (size_t)(end - t);
    if (len > 3 && memcmp(t, "| `", 3) == 0 && n + len + 1 < cap) {
      memcpy(out + n, t, len);
      out[n + len] = '\n';
      n += len + 1;
    }
    t += len + (nl ? 1 : 0);
  }
  out[n] = '\0';
  return n;
}

/* Prints the lines of a that b lacks. */
static void missing_lines(const char *label, const char *a, const char *b) {
  for (const char *l = a; *l;) {
    const char *nl = strchr(l, '\n');
    size_t len = (size_t)(nl - l);
    int found = 0;
    for (const char *m = b; *m && !found;) {
      const char *ml = strchr(m, '\n');
      found = (size_t)(ml - m) == len && memcmp(m, l, len) == 0;
      m = ml + 1;
    }
    if (!found)
      print_error("%s: %.*s\n", label, (int)len, l);
    l = nl + 1;
  }
}

/* The i_ verdicts are those tests/README.md documents. */
static void check_readme(const char *tab) {
  char *b, *e;
  char *text = readme_table(&b, &e);
  static char want[1 << 16], got[1 << 16];
  table_rows(b, e, want, sizeof want);
  table_rows(tab, tab + strlen(tab), got, sizeof got);
  free(text);
  if (strcmp(want, got) != 0) {
    missing_lines("README.md only", want, got);
    missing_lines("this run only", got, want);
    fail_msg("the i_ verdicts differ from the table in %s (run with "
             "JRPC_UPDATE_README=1 to rewrite it, if the change is meant)",
             README_PATH);
  }
  assert_true(got[0] != '\0');
}

/* Replaces the text between the table markers of tests/README.md. */
static void update_readme(const char *tab) {
  char *b, *e;
  char *text = readme_table(&b, &e);
  FILE *fp = fopen(README_PATH, "wb");
  assert_non_null(fp);
  fwrite(text, 1, (size_t)(b - text), fp);
  fputc('\n', fp);
  fputs(tab, fp);
  fputs(e, fp);
  fclose(fp);
  free(text);
  print_message("updated %s\n", README_PATH);
}

static void test_suite_i_table(void **state) {
  (void)state;
  run_pipeline();
  static char tab[1 << 16];
  table(tab, sizeof tab);
  /* line by line: cmocka's print_message truncates long messages */
  print_message("JSONTestSuite i_ files (implementation-defined):\n");
  for (const char *l = tab; *l;) {
    const char *nl = strchr(l, '\n');
    int len = nl ? (int)(nl - l) : (int)strlen(l);
    print_message("%.*s\n", len, l);
    l += len + (nl ? 1 : 0);
  }
  const char *upd = getenv("JRPC_UPDATE_README");
  if (upd && strcmp(upd, "1") == 0)
    update_readme(tab);
  else
    check_readme(tab);
}

int main(void) {
  DIR *d = opendir(SUITE_DIR);
  if (!d)
    return tu_missing("JSONTestSuite not found at " SUITE_DIR
                      " (configure with -DJRPC_TESTDATA_DIR=DIR holding "
                      "JSONTestSuite/)");
  closedir(d);
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_suite_parser),
      cmocka_unit_test(test_suite_pipeline),
      cmocka_unit_test(test_suite_consistent),
      cmocka_unit_test(test_suite_i_table),
      cmocka_unit_test(tu_test_auto_switched),
  };
  return cmocka_run_group_tests(tests, setup, teardown);
}
