/* discover.c - reading an OpenRPC 1.2 document: {"openrpc":..,
 * "methods":[{"name","summary","description","paramStructure",
 * "params":[{"name","required","summary","schema":{"type"}}],
 * "result":{"name","schema"},"examples":[{"name","params":[{"name",
 * "value"}],"result":{"value"}}]}]}. Members that are missing or of the
 * wrong type are skipped, never trusted. */
#include "discover.h"
#include "call.h"
#include "jrpc.h"

#include <stdlib.h>
#include <string.h>

int jc_discover(jc_conn *c, json_t **doc, long long *code, char **message) {
  *doc = NULL;
  *code = 0;
  if (message)
    *message = NULL;
  json_t *req = jc_request("rpc.discover", NULL, json_string("jrpc.discover"));
  json_t *resp;
  int st = jc_call(c, req, &resp, NULL);
  json_decref(req);
  if (st != JC_OK)
    return st;
  const json_t *err = json_object_get(resp, "error");
  if (err) {
    *code = jc_error_code(resp);
    if (message)
      *message = strdup(json_string_value(json_object_get(err, "message")));
  } else {
    json_t *result = json_object_get(resp, "result");
    if (!json_is_array(json_object_get(result, "methods"))) {
      jc_warn("rpc.discover's result has no \"methods\" array: not an "
              "OpenRPC document");
      json_decref(resp);
      return JC_ERR;
    }
    *doc = json_incref(result);
  }
  json_decref(resp);
  return JC_OK;
}

const json_t *jc_find_method(const json_t *doc, const char *name) {
  const json_t *m;
  size_t i;
  json_array_foreach(json_object_get(doc, "methods"), i, m) {
    const char *n = json_string_value(json_object_get(m, "name"));
    if (n && !strcmp(n, name))
      return m;
  }
  return NULL;
}

const json_t *jc_checked_method(const json_t *doc, const char *name) {
  const json_t *m = jc_find_method(doc, name);
  const char *any = json_string_value(json_object_get(m, "x-jrpcd-params"));
  return any && !strcmp(any, "any") ? NULL : m;
}

static const char *str(const json_t *obj, const char *key) {
  const char *s = json_string_value(json_object_get(obj, key));
  return s ? s : "";
}

void jc_list_methods(const json_t *doc, FILE *f) {
  const json_t *methods = json_object_get(doc, "methods"), *m;
  size_t i, width = 0;
  json_array_foreach(methods, i, m) {
    size_t n = strlen(str(m, "name"));
    width = n > width ? n : width;
  }
  json_array_foreach(methods, i, m) {
    const char *summary = str(m, "summary");
    if (!*str(m, "name"))
      continue;
    if (*summary)
      fprintf(f, "%-*s  %s\n", (int)width, str(m, "name"), summary);
    else
      fprintf(f, "%s\n", str(m, "name"));
  }
}

/* A schema's type(s) as text: "number", "string|null", "any". */
static void type_text(const json_t *schema, char *out, size_t cap) {
  const json_t *t = json_object_get(schema, "type"), *item;
  size_t i;
  out[0] = '\0';
  if (json_is_string(t))
    snprintf(out, cap, "%s", json_string_value(t));
  json_array_foreach(t, i, item) {
    snprintf(out + strlen(out), cap - strlen(out), "%s%s", i ? "|" : "",
             json_is_string(item) ? json_string_value(item) : "?");
  }
  if (!out[0])
    snprintf(out, cap, "any");
}

/* A JSON value as one shell word: single-quoted unless plainly safe. */
static void put_word(FILE *f, const json_t *v) {
  char *s = json_dumps(v, JSON_ENCODE_ANY | JSON_COMPACT);
  if (!s)
    return;
  if (strspn(s, "abcdefghijklmnopqrstuvwxyz0123456789.-+") == strlen(s)) {
    fputs(s, f);
  } else {
    fputc('\'', f);
    for (const char *p = s; *p; p++)
      fputs(*p == '\'' ? "'\\''" : (char[]){*p, 0}, f);
    fputc('\'', f);
  }
  free(s);
}

static void describe_examples(const json_t *m, bool by_name, FILE *f) {
  const json_t *ex, *p;
  size_t i, j;
  json_array_foreach(json_object_get(m, "examples"), i, ex) {
    if (i == 0)
      fputs("examples:\n", f);
    if (*str(ex, "name"))
      fprintf(f, "  %s\n", str(ex, "name"));
    fprintf(f, "    jrpc %s", str(m, "name"));
    json_array_foreach(json_object_get(ex, "params"), j, p) {
      fputc(' ', f);
      if (by_name)
        fprintf(f, "%s:=", str(p, "name"));
      put_word(f, json_object_get(p, "value"));
    }
    const json_t *res = json_object_get(json_object_get(ex, "result"), "value");
    if (res) {
      char *s = json_dumps(res, JSON_ENCODE_ANY | JSON_COMPACT);
      fprintf(f, "\n    => %s", s ? s : "?");
      free(s);
    }
    fputc('\n', f);
  }
}

void jc_describe_method(const json_t *m, FILE *f) {
  const json_t *p;
  size_t i;
  char type[96];
  fprintf(f, "%s", str(m, "name"));
  if (*str(m, "summary"))
    fprintf(f, " - %s", str(m, "summary"));
  fputc('\n', f);
  if (*str(m, "description"))
    fprintf(f, "\n%s\n", str(m, "description"));
  const char *structure = str(m, "paramStructure");
  const json_t *params = json_object_get(m, "params");
  /* No params listed means none, unless the server says it takes any. */
  bool any = !strcmp(str(m, "x-jrpcd-params"), "any");
  fprintf(f, "\nparams%s%s%s:%s\n", *structure ? " (" : "", structure,
          *structure ? ")" : "",
          json_array_size(params) ? ""
          : any                   ? " any (not described: sent as written)"
                                  : " none");
  json_array_foreach(params, i, p) {
    type_text(json_object_get(p, "schema"), type, sizeof type);
    fprintf(f, "  %-12s %-14s %s", str(p, "name"), type,
            json_is_true(json_object_get(p, "required")) ? "required"
                                                         : "optional");
    const char *about =
        *str(p, "summary") ? str(p, "summary") : str(p, "description");
    fprintf(f, "%s%s\n", *about ? "  " : "", about);
  }
  /* An empty schema says nothing (jrpcd gives undescribed methods one,
   * as OpenRPC 1.2.6 requires a result): no line for it. */
  const json_t *result = json_object_get(m, "result");
  const json_t *rschema = json_object_get(result, "schema");
  if (result && !(json_is_object(rschema) && json_object_size(rschema) == 0)) {
    type_text(rschema, type, sizeof type);
    fprintf(f, "result: %s%s%s\n", str(result, "name"),
            *str(result, "name") ? " " : "", type);
  }
  describe_examples(m, !strcmp(structure, "by-name"), f);
}
