/* call.c - requests out, responses in, and the checks that turn a
 * misbehaving server into a clear message instead of a wrong answer. */
#include "call.h"
#include "jrpc.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

json_t *jc_request(const char *method, json_t *params, json_t *id) {
  json_t *req = json_object();
  json_object_set_new(req, "jsonrpc", json_string("2.0"));
  json_object_set_new(req, "method", json_string(method));
  if (params)
    json_object_set_new(req, "params", params);
  if (id)
    json_object_set_new(req, "id", id);
  return req;
}

int jc_send_json(jc_conn *c, const json_t *msg) {
  char *text = json_dumps(msg, JSON_COMPACT | JSON_ENCODE_ANY);
  if (!text) {
    jc_warn("cannot encode the request (invalid UTF-8 in a string?)");
    return JC_ERR;
  }
  int st = jc_send(c, text, strlen(text));
  free(text);
  return st;
}

void jc_excerpt(const char *p, size_t n, char *out, size_t cap) {
  size_t o = 0, i = 0;
  for (; i < n && o + 8 < cap; i++) {
    unsigned char ch = (unsigned char)p[i];
    if (ch >= 0x20 && ch < 0x7f)
      out[o++] = (char)ch;
    else
      o += (size_t)snprintf(out + o, cap - o, "\\x%02x", ch);
  }
  if (i < n) {
    memcpy(out + o, "...", 3);
    o += 3;
  }
  out[o] = '\0';
}

int jc_recv_json(jc_conn *c, json_t **msg, char **raw) {
  const char *frame;
  size_t n;
  *msg = NULL;
  int st = jc_recv(c, &frame, &n);
  if (st != JC_OK)
    return st;
  json_error_t e;
  *msg = json_loadb(frame, n, JSON_DECODE_ANY, &e);
  if (!*msg) {
    char ex[120];
    jc_excerpt(frame, n, ex, sizeof ex);
    jc_warn("%s: the reply is not JSON (%s at byte %d): %s",
            jc_endpoint_desc(c->ep), e.text, e.position, ex);
    return JC_ERR;
  }
  if (raw) {
    *raw = malloc(n + 1);
    if (*raw) {
      memcpy(*raw, frame, n);
      (*raw)[n] = '\0';
    }
  }
  return JC_OK;
}

static void describe_id(const json_t *id, char *out, size_t cap) {
  char *s = id ? json_dumps(id, JSON_COMPACT | JSON_ENCODE_ANY) : NULL;
  snprintf(out, cap, "%s", s ? s : "(none)");
  free(s);
}

int jc_check_response(const json_t *resp, const json_t *id) {
  const char *what = NULL;
  const json_t *ver = json_object_get(resp, "jsonrpc");
  const json_t *result = json_object_get(resp, "result");
  const json_t *err = json_object_get(resp, "error");
  if (!json_is_object(resp))
    what = "it is not a JSON object";
  else if (!json_is_string(ver) || strcmp(json_string_value(ver), "2.0"))
    what = "its \"jsonrpc\" is not \"2.0\"";
  else if (!json_object_get(resp, "id"))
    what = "it has no \"id\"";
  else if (!result == !err)
    what = "it needs exactly one of \"result\" and \"error\"";
  else if (err && (!json_is_integer(json_object_get(err, "code")) ||
                   !json_is_string(json_object_get(err, "message"))))
    what = "its \"error\" lacks an integer \"code\" or a string \"message\"";
  if (what) {
    jc_warn("malformed reply: %s", what);
    return -1;
  }
  const json_t *got = json_object_get(resp, "id");
  if (id && !json_equal(got, id)) {
    char want_s[64], got_s[64];
    describe_id(id, want_s, sizeof want_s);
    describe_id(got, got_s, sizeof got_s);
    /* A null id answers a request the server could not read at all. */
    if (json_is_null(got) && err)
      return 0;
    jc_warn("the reply's id %s does not match the request's id %s", got_s,
            want_s);
    return -1;
  }
  return 0;
}

int jc_call(jc_conn *c, const json_t *req, json_t **resp, char **raw) {
  *resp = NULL;
  if (raw)
    *raw = NULL;
  int st = jc_send_json(c, req);
  if (st != JC_OK)
    return st;
  /* Notifications before the reply (a deferred call's progress) are
   * shown as they come. */
  while ((st = jc_recv_json(c, resp, raw)) == JC_OK &&
         jc_show_notification(*resp)) {
    json_decref(*resp);
    if (raw) {
      free(*raw);
      *raw = NULL;
    }
  }
  if (st == JC_EOF) {
    jc_warn("%s: %s", jc_endpoint_desc(c->ep), jc_no_reply(c));
    return JC_ERR;
  }
  if (st == JC_OK && jc_check_response(*resp, json_object_get(req, "id")))
    st = JC_ERR;
  if (st != JC_OK) {
    json_decref(*resp);
    *resp = NULL;
    if (raw) {
      free(*raw);
      *raw = NULL;
    }
  }
  return st;
}

bool jc_show_notification(const json_t *msg) {
  const char *method = json_string_value(json_object_get(msg, "method"));
  if (!method || json_object_get(msg, "id"))
    return false;
  char *params = json_dumps(json_object_get(msg, "params"),
                            JSON_COMPACT | JSON_ENCODE_ANY);
  char text[400];
  /* The server's bytes go out escaped: they may hold control bytes. */
  jc_excerpt(params ? params : "", params ? strlen(params) : 0, text,
             sizeof text);
  jc_warn("notification %s %s", method, text);
  free(params);
  return true;
}

long long jc_error_code(const json_t *resp) {
  const json_t *err = json_object_get(resp, "error");
  return err ? json_integer_value(json_object_get(err, "code")) : 0;
}
