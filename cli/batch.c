/* batch.c - --batch: lines of "METHOD ARG..." sent as one JSON-RPC batch
 * on one connection, the replies printed in request order. */
#include "args.h"
#include "call.h"
#include "discover.h"
#include "jrpc.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* The next line of F without its newline (a buffer reused between calls),
 * or NULL at the end. */
static char *next_line(FILE *f, char **buf, size_t *cap) {
  ssize_t n = getline(buf, cap, f);
  if (n < 0)
    return NULL;
  while (n > 0 && ((*buf)[n - 1] == '\n' || (*buf)[n - 1] == '\r'))
    (*buf)[--n] = '\0';
  return *buf;
}

static FILE *open_input(const char *file) {
  if (!strcmp(file, "-"))
    return stdin;
  FILE *f = fopen(file, "r");
  if (!f)
    jc_warn("%s: %s", file, strerror(errno));
  return f;
}

/* The batch's request objects from the lines of F; -1 on a usage error. */
static int read_batch(const char *file, FILE *f, const json_t *doc,
                      json_t *batch, json_t *lines) {
  char *buf = NULL, *line, err[512];
  size_t cap = 0;
  int lineno = 0, rc = 0;
  while (rc == 0 && (line = next_line(f, &buf, &cap))) {
    char **w;
    lineno++;
    int n = jc_split_words(line, &w, err, sizeof err);
    if (n < 0) {
      jc_warn("%s:%d: %s", file, lineno, err);
      rc = -1;
      continue;
    }
    bool notify = n > 0 && !strcmp(w[0], "-n");
    int first = notify ? 1 : 0;
    if (n == first || w[first][0] == '#') {
      if (notify) {
        jc_warn("%s:%d: -n without a METHOD", file, lineno);
        rc = -1;
      }
      jc_free_words(w);
      continue;
    }
    const char *method = w[first];
    json_t *params;
    const json_t *desc = doc ? jc_checked_method(doc, method) : NULL;
    if (jc_build_params(method, n - first - 1, w + first + 1, false, desc,
                        &params, err, sizeof err) < 0) {
      jc_warn("%s:%d: %s", file, lineno, err);
      rc = -1;
    } else {
      json_t *id = notify ? NULL : json_integer(json_array_size(batch) + 1);
      json_array_append_new(batch, jc_request(method, params, id));
      json_array_append_new(lines, json_integer(lineno));
    }
    jc_free_words(w);
  }
  free(buf);
  if (rc == 0 && json_array_size(batch) == 0) {
    jc_warn("%s: no requests (lines of METHOD ARG...)", file);
    rc = -1;
  }
  return rc;
}

/* The reply array's response with id ID, or NULL. */
static const json_t *response_for(const json_t *replies, const json_t *id) {
  const json_t *r;
  size_t i;
  json_array_foreach(replies, i, r) {
    if (json_equal(json_object_get(r, "id"), id))
      return r;
  }
  return NULL;
}

/* Prints the responses in request order; the exit status. */
static int print_batch(const json_t *batch, const json_t *lines,
                       const json_t *reply, const char *file,
                       const jc_output *out) {
  const json_t *req, *r;
  size_t i;
  int rc = JC_EXIT_OK;
  if (json_is_object(reply)) {
    /* One response for the whole batch: the server refused it. */
    if (jc_check_response(reply, NULL))
      return JC_EXIT_USAGE;
    jc_warn("the server answered the batch as a whole:");
    return jc_print_response(reply, NULL, out);
  }
  if (!json_is_array(reply)) {
    jc_warn("malformed reply: a batch's reply is not an array");
    return JC_EXIT_USAGE;
  }
  json_array_foreach(reply, i, r) {
    if (jc_check_response(r, NULL))
      return JC_EXIT_USAGE;
  }
  json_array_foreach(batch, i, req) {
    const json_t *id = json_object_get(req, "id");
    if (!id)
      continue;
    r = response_for(reply, id);
    long long line = json_integer_value(json_array_get(lines, i));
    if (!r) {
      jc_warn("%s:%lld: no reply to request %lld (%s)", file, line,
              json_integer_value(id),
              json_string_value(json_object_get(req, "method")));
      rc = JC_EXIT_USAGE;
      continue;
    }
    int one = jc_print_response(r, NULL, out);
    if (one != JC_EXIT_OK && rc == JC_EXIT_OK)
      rc = one;
  }
  return rc;
}

int jc_batch(const jc_opts *o, const char *file) {
  FILE *f = open_input(file);
  if (!f)
    return JC_EXIT_USAGE;
  jc_conn c;
  json_t *doc = NULL, *batch = json_array(), *lines = json_array();
  json_t *reply = NULL;
  char *raw = NULL;
  long long code;
  int rc, st = jc_connect(&c, &o->ep);
  if (st == JC_OK && o->check)
    st = jc_discover(&c, &doc, &code, NULL);
  if (st != JC_OK) {
    rc = jc_exit_for(st);
  } else if (read_batch(file, f, doc, batch, lines) < 0) {
    rc = JC_EXIT_USAGE;
  } else if ((st = jc_send_json(&c, batch)) != JC_OK) {
    rc = jc_exit_for(st);
  } else {
    bool any_id = false;
    json_t *req;
    size_t i;
    json_array_foreach(batch, i, req) any_id |= !!json_object_get(req, "id");
    jc_send_done(&c, any_id);
    st = jc_recv_json(&c, &reply, &raw);
    if (st == JC_EOF) {
      /* Nothing comes back for a batch of notifications only. */
      if (any_id)
        jc_warn("%s: %s", jc_endpoint_desc(&o->ep), jc_no_reply(&c));
      rc = any_id ? JC_EXIT_USAGE : JC_EXIT_OK;
    } else if (st != JC_OK) {
      rc = jc_exit_for(st);
    } else if (o->out.raw) {
      printf("%s\n", raw);
      rc = JC_EXIT_OK;
    } else {
      rc = print_batch(batch, lines, reply, file, &o->out);
    }
  }
  if (f != stdin)
    fclose(f);
  jc_close(&c);
  json_decref(doc);
  json_decref(batch);
  json_decref(lines);
  json_decref(reply);
  free(raw);
  return rc;
}
