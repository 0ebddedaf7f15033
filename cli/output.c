/* output.c - printing JSON values. jansson encodes the scalars (string
 * escapes, integers); the layout and the colours are ours, and doubles
 * get their shortest form that reads back the same. */
#include "output.h"
#include "jrpc.h"

#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define C_KEY "\033[34;1m"
#define C_STR "\033[32m"
#define C_NUM "\033[36m"
#define C_LIT "\033[35m"
#define C_ERR "\033[31;1m"
#define C_OFF "\033[0m"

void jc_warn(const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  fputs("jrpc: ", stderr);
  vfprintf(stderr, fmt, ap);
  fputc('\n', stderr);
  va_end(ap);
}

void jc_output_init(jc_output *o, int force) {
  const char *nc = getenv("NO_COLOR"), *term = getenv("TERM");
  if (force >= 0)
    o->color = force;
  else
    o->color = isatty(STDOUT_FILENO) && !(nc && *nc) &&
               !(term && !strcmp(term, "dumb"));
}

static void put_scalar(FILE *f, const json_t *v, const char *color, bool on) {
  char *s = json_dumps(v, JSON_ENCODE_ANY | JSON_COMPACT);
  fprintf(f, "%s%s%s", on ? color : "", s ? s : "?", on ? C_OFF : "");
  free(s);
}

/* The shortest %.*g that reads back as the same double. */
static void put_real(FILE *f, double d, bool on) {
  char buf[40];
  for (int prec = 1; prec <= 17; prec++) {
    snprintf(buf, sizeof buf, "%.*g", prec, d);
    if (strtod(buf, NULL) == d)
      break;
  }
  /* Keep it a JSON number that reads back as a double, not an integer. */
  if (!strpbrk(buf, ".eEn"))
    strcat(buf, ".0");
  fprintf(f, "%s%s%s", on ? C_NUM : "", buf, on ? C_OFF : "");
}

static void indent(FILE *f, int depth) {
  fprintf(f, "\n%*s", depth * 2, "");
}

static void put_value(FILE *f, const json_t *v, const jc_output *o, int depth) {
  bool on = o->color;
  size_t i, n;
  const char *key;
  json_t *item;
  switch (json_typeof(v)) {
  case JSON_OBJECT:
    if (json_object_size(v) == 0) {
      fputs("{}", f);
      return;
    }
    fputc('{', f);
    n = 0;
    json_object_foreach((json_t *)v, key, item) {
      if (n++)
        fputc(',', f);
      if (!o->compact)
        indent(f, depth + 1);
      json_t *k = json_string(key);
      put_scalar(f, k, C_KEY, on);
      json_decref(k);
      fputs(o->compact ? ":" : ": ", f);
      put_value(f, item, o, depth + 1);
    }
    if (!o->compact)
      indent(f, depth);
    fputc('}', f);
    return;
  case JSON_ARRAY:
    if (json_array_size(v) == 0) {
      fputs("[]", f);
      return;
    }
    fputc('[', f);
    json_array_foreach(v, i, item) {
      if (i)
        fputc(',', f);
      if (!o->compact)
        indent(f, depth + 1);
      put_value(f, item, o, depth + 1);
    }
    if (!o->compact)
      indent(f, depth);
    fputc(']', f);
    return;
  case JSON_STRING:
    put_scalar(f, v, C_STR, on);
    return;
  case JSON_INTEGER:
    put_scalar(f, v, C_NUM, on);
    return;
  case JSON_REAL:
    put_real(f, json_real_value(v), on);
    return;
  default:
    put_scalar(f, v, C_LIT, on);
  }
}

void jc_print_json(FILE *f, const json_t *v, const jc_output *o) {
  put_value(f, v, o, 0);
  fputc('\n', f);
}

int jc_print_response(const json_t *resp, const char *raw, const jc_output *o) {
  const json_t *err = json_object_get(resp, "error");
  if (o->raw && raw) {
    /* The error, if any, is in there: stderr stays quiet. */
    fprintf(stdout, "%s\n", raw);
    fflush(stdout);
    return err ? JC_EXIT_RPC : JC_EXIT_OK;
  }
  const json_t *result = json_object_get(resp, "result");
  if (!err && o->raw_output && json_is_string(result)) {
    fwrite(json_string_value(result), 1, json_string_length(result), stdout);
    fputc('\n', stdout);
    fflush(stdout);
    return JC_EXIT_OK;
  }
  if (!err) {
    jc_print_json(stdout, result, o);
    fflush(stdout);
    return JC_EXIT_OK;
  }
  /* stderr gets its own colour decision: it may be a terminal alone. */
  jc_output eo = *o;
  eo.color = o->color && isatty(STDERR_FILENO);
  fprintf(stderr, "%serror %lld%s: %s\n", eo.color ? C_ERR : "",
          json_integer_value(json_object_get(err, "code")),
          eo.color ? C_OFF : "",
          json_string_value(json_object_get(err, "message")));
  const json_t *data = json_object_get(err, "data");
  if (data)
    jc_print_json(stderr, data, &eo);
  return JC_EXIT_RPC;
}
