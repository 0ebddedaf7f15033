/* describe.c - jrpc_describe: a method's OpenRPC Method Object as JSON
 * text, checked when the module registers it (valid JSON, an object, no
 * "name" of its own; a "result" added where it has none) and kept with
 * the method for rpc.discover; its
 * "x-jrpcd-timeout-ms" member, if any, becomes the method's timeout. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common.h"
#include "dispatch.h"
#include "parser.h"

/* jrpcd's extension member: the method's own call timeout. */
#define TIMEOUT_KEY "x-jrpcd-timeout-ms"

static int refuse(jrpc__regctx_t *ctx, const char *method, const char *why) {
  snprintf(ctx->err, sizeof(ctx->err), "description of \"%s\": %s",
           method ? method : "(null)", why);
  ctx->failed = 1;
  return JRPC_EINVAL;
}

/* Where the value of the object text's (valid JSON) member `key` at its
 * top starts, or NULL. */
static const char *member_value(const char *s, size_t n, const char *key) {
  size_t kn = strlen(key);
  int depth = 0;
  for (size_t i = 0; i < n; i++) {
    char ch = s[i];
    if (ch == '"') {
      size_t start = ++i;
      while (i < n && s[i] != '"')
        i += s[i] == '\\' ? 2 : 1;
      size_t len = i - start;
      if (depth != 1)
        continue;
      size_t j = i + 1;
      while (j < n &&
             (s[j] == ' ' || s[j] == '\t' || s[j] == '\n' || s[j] == '\r'))
        j++;
      if (j < n && s[j] == ':' && len == kn &&
          memcmp(s + start, key, kn) == 0) {
        for (j++; j < n &&
                  (s[j] == ' ' || s[j] == '\t' || s[j] == '\n' || s[j] == '\r');
             j++)
          ;
        return s + j;
      }
    } else if (ch == '{' || ch == '[') {
      depth++;
    } else if (ch == '}' || ch == ']') {
      depth--;
    }
  }
  return NULL;
}

static int has_member(const char *s, size_t n, const char *key) {
  return member_value(s, n, key) != NULL;
}

/* "x-jrpcd-timeout-ms": a whole number of milliseconds that fits 32 bits
 * (0: never), into *ms; -1 if it is something else. */
static int timeout_of(const char *v, uint32_t *ms) {
  uint64_t x = 0;
  size_t i = 0;
  for (; v[i] >= '0' && v[i] <= '9'; i++) {
    x = x * 10 + (uint64_t)(v[i] - '0');
    if (x > UINT32_MAX)
      return -1;
  }
  /* Digits up to a delimiter: no sign, fraction or exponent. */
  if (i == 0 || (v[i] != ',' && v[i] != '}' && v[i] != ' ' && v[i] != '\t' &&
                 v[i] != '\n' && v[i] != '\r'))
    return -1;
  *ms = (uint32_t)x;
  return 0;
}

/* Valid JSON, by the native tokenizer (which wants padding after it). */
static int valid_json(const char *json, size_t n) {
  char *buf = calloc(1, n + JRPC__PAD);
  jrpc__parser_t *p = jrpc__parser_new("native");
  int ok = 0;
  if (buf && p) {
    memcpy(buf, json, n);
    jrpc__arena_t a;
    jrpc__arena_init(&a, 4096, 0);
    jrpc__parsed_t ps;
    ok = p->ops->parse(p, buf, n, &a, 1, &ps) == 0 &&
         ps.status != JRPC__PARSE_INVALID;
    jrpc__arena_free(&a);
  }
  jrpc__parser_destroy(p);
  free(buf);
  return ok;
}

/* OpenRPC 1.2.6, the version rpc.discover declares, requires a "result"
 * of every method; a description without one gets ANY_RESULT (a result of
 * any type) as its last member, so that the document stays valid. A copy
 * of the text; NULL when out of memory. */
#define ANY_RESULT "\"result\":{\"name\":\"result\",\"schema\":{}}"
static char *with_result(const char *json, size_t n) {
  if (has_member(json, n, "result"))
    return strdup(json);
  size_t end = n; /* its closing brace */
  while (end > 0 && json[end - 1] != '}')
    end--;
  end--;
  size_t before = end; /* an empty object takes no comma */
  while (before > 0 && (json[before - 1] == ' ' || json[before - 1] == '\t' ||
                        json[before - 1] == '\n' || json[before - 1] == '\r'))
    before--;
  int comma = json[before - 1] != '{';
  char *out = malloc(n + sizeof(ANY_RESULT) + 2);
  if (!out)
    return NULL;
  memcpy(out, json, end);
  size_t o = end;
  if (comma)
    out[o++] = ',';
  memcpy(out + o, ANY_RESULT, sizeof(ANY_RESULT) - 1);
  o += sizeof(ANY_RESULT) - 1;
  memcpy(out + o, json + end, n - end + 1); /* '}', what follows, NUL */
  return out;
}

int jrpc__describe(jrpc__regctx_t *ctx, const char *method, const char *json) {
  const jrpc__method_t *m =
      method ? jrpc__registry_find(ctx->reg, method, strlen(method)) : NULL;
  if (!m || m->owner != ctx->owner)
    return refuse(ctx, method, "not a method this module registered");
  if (!json)
    return refuse(ctx, method, "no text");
  size_t n = strlen(json), i = 0;
  while (i < n && (json[i] == ' ' || json[i] == '\t' || json[i] == '\n' ||
                   json[i] == '\r'))
    i++;
  if (i == n || json[i] != '{')
    return refuse(ctx, method, "not a JSON object");
  if (!valid_json(json, n))
    return refuse(ctx, method, "not valid JSON");
  if (has_member(json, n, "name"))
    return refuse(ctx, method, "has a \"name\" (jrpcd writes it)");
  if (!has_member(json, n, "params"))
    return refuse(ctx, method,
                  "has no \"params\" (OpenRPC requires it; [] for none)");
  uint32_t timeout_ms = 0;
  const char *tv = member_value(json, n, TIMEOUT_KEY);
  if (tv && timeout_of(tv, &timeout_ms) != 0)
    return refuse(ctx, method,
                  "\"" TIMEOUT_KEY "\" is not a whole number of "
                  "milliseconds from 0 to 4294967295");
  char *copy = with_result(json, n);
  if (!copy)
    return refuse(ctx, method, "out of memory");
  jrpc__method_t *w = (jrpc__method_t *)m; /* the registry is being built */
  free(w->desc);
  w->desc = copy;
  w->timeout_own = tv != NULL;
  w->timeout_ms = timeout_ms;
  return 0;
}
