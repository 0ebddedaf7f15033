/* command.c - one call from the command line (or one line at the prompt),
 * and the discovery modes -l and -d. */
#include "args.h"
#include "call.h"
#include "discover.h"
#include "jrpc.h"

#include <stdlib.h>
#include <string.h>

static void did_you_mean(const json_t *doc, const char *method);

/* The document from an open connection; an error reply other than
 * "method not found" is worth saying when not QUIET. */
static int doc_on(jc_conn *c, json_t **doc, bool quiet) {
  long long code;
  char *message;
  int st = jc_discover(c, doc, &code, &message);
  if (st == JC_OK && !*doc && !quiet) {
    if (code == -32601)
      jc_warn("%s has no rpc.discover (error -32601: %s): it cannot list or "
              "describe its methods",
              jc_endpoint_desc(c->ep), message ? message : "");
    else
      jc_warn("rpc.discover failed: error %lld: %s", code,
              message ? message : "");
  }
  free(message);
  return st;
}

/* KEEP, connected again when it is not, or a new connection in OWN. */
static int open_conn(const jc_opts *o, jc_conn *keep, jc_conn *own,
                     jc_conn **c) {
  *c = keep ? keep : own;
  if (!keep || keep->fd < 0)
    return jc_connect(*c, &o->ep);
  jc_rearm(keep);
  return JC_OK;
}

/* Done with C: a kept connection stays open while it is sound (ST). */
static void done_conn(jc_conn *keep, jc_conn *c, int st) {
  if (!keep || st != JC_OK)
    jc_close(c);
}

json_t *jc_fetch_doc(const jc_opts *o, jc_conn *keep, bool quiet) {
  jc_conn own, *c;
  json_t *doc = NULL;
  int st = open_conn(o, keep, &own, &c);
  if (st == JC_OK)
    st = doc_on(c, &doc, quiet);
  done_conn(keep, c, st);
  return doc;
}

int jc_discovery(const jc_opts *o, const char *method) {
  jc_conn c;
  json_t *doc = NULL;
  int st = jc_connect(&c, &o->ep);
  if (st == JC_OK)
    st = doc_on(&c, &doc, false);
  jc_close(&c);
  if (st != JC_OK)
    return jc_exit_for(st);
  if (!doc)
    return JC_EXIT_RPC;
  int rc = JC_EXIT_OK;
  if (!method) {
    jc_list_methods(doc, stdout);
  } else {
    const json_t *m = jc_find_method(doc, method);
    if (m) {
      jc_describe_method(m, stdout);
    } else {
      jc_warn("%s has no method %s (jrpc -l lists them)",
              jc_endpoint_desc(&o->ep), method);
      did_you_mean(doc, method);
      rc = JC_EXIT_RPC;
    }
  }
  json_decref(doc);
  return rc;
}

/* A notification is sent, then the writing half closed; waiting for the
 * server to close too tells that it has read it. */
static int notify(jc_conn *c, json_t *req) {
  int st = jc_send_json(c, req);
  if (st != JC_OK)
    return st;
  jc_send_done(c, false);
  json_t *extra;
  st = jc_recv_json(c, &extra, NULL);
  if (st == JC_OK) {
    json_decref(extra);
    jc_warn("the server answered a notification");
    return JC_ERR;
  }
  return st == JC_EOF ? JC_OK : st;
}

/* Levenshtein distance between A and B, capped: enough to tell a typo. */
static size_t distance(const char *a, const char *b) {
  size_t la = strlen(a), lb = strlen(b), row[128];
  if (la >= 127 || lb >= 127)
    return (size_t)-1;
  for (size_t j = 0; j <= lb; j++)
    row[j] = j;
  for (size_t i = 1; i <= la; i++) {
    size_t diag = row[0];
    row[0] = i;
    for (size_t j = 1; j <= lb; j++) {
      size_t up = row[j], best = diag + (a[i - 1] != b[j - 1]);
      if (up + 1 < best)
        best = up + 1;
      if (row[j - 1] + 1 < best)
        best = row[j - 1] + 1;
      diag = up;
      row[j] = best;
    }
  }
  return row[lb];
}

/* After "method not found": the listed name closest to METHOD, if one is
 * close enough to be a typo of it. */
static void did_you_mean(const json_t *doc, const char *method) {
  const json_t *m;
  const char *best = NULL;
  size_t i, best_d = strlen(method) / 3 + 1;
  json_array_foreach(json_object_get(doc, "methods"), i, m) {
    const char *name = json_string_value(json_object_get(m, "name"));
    size_t d = name ? distance(method, name) : (size_t)-1;
    if (d <= best_d && (!best || d < best_d)) {
      best = name;
      best_d = d;
    }
  }
  if (best)
    jc_warn("did you mean %s? (jrpc -l lists the methods)", best);
}

/* --dry-run and -v: the request as it would go out, one line. */
static void show_request(FILE *f, const json_t *req, const jc_opts *o) {
  jc_output out = o->out;
  out.compact = true;
  out.color = out.color && f == stdout;
  if (f == stderr)
    fputs("jrpc: sending ", f);
  jc_print_json(f, req, &out);
  fflush(f);
}

int jc_command(const jc_opts *o, jc_conn *keep, const json_t *doc, int argc,
               char **argv) {
  jc_conn own = {.fd = -1}, *c = &own;
  json_t *own_doc = NULL, *params = NULL, *resp = NULL;
  char *raw = NULL, err[512];
  int rc;
  int st = o->dry_run ? JC_OK : open_conn(o, keep, &own, &c);
  if (st == JC_OK && o->check && !doc && !o->dry_run) {
    st = doc_on(c, &own_doc, true);
    doc = own_doc;
  }
  if (st != JC_OK) {
    rc = jc_exit_for(st);
    goto out;
  }
  const json_t *desc = doc ? jc_checked_method(doc, argv[0]) : NULL;
  if (o->params && argc > 1) {
    jc_warn("--params: the params are given as ARGs too");
    rc = JC_EXIT_USAGE;
    goto out;
  }
  if (o->params) {
    params = json_deep_copy(o->params);
  } else if (jc_build_params(argv[0], argc - 1, argv + 1, true, desc, &params,
                             err, sizeof err) < 0) {
    jc_warn("%s", err);
    fputs(o->at_prompt ? "(help lists what the prompt takes)\n"
                       : "Try 'jrpc --help' for more.\n",
          stderr);
    rc = JC_EXIT_USAGE;
    goto out;
  }
  json_t *req =
      jc_request(argv[0], params, o->notify ? NULL : json_deep_copy(o->id));
  if (o->verbose || o->dry_run)
    show_request(o->dry_run ? stdout : stderr, req, o);
  if (o->dry_run) {
    rc = JC_EXIT_OK;
  } else if (o->follow) {
    rc = jc_follow(c, req, doc, o);
  } else if (o->notify) {
    st = notify(c, req);
    rc = st == JC_OK ? JC_EXIT_OK : jc_exit_for(st);
  } else {
    st = jc_call(c, req, &resp, &raw);
    rc = st == JC_OK ? jc_print_response(resp, raw, &o->out) : jc_exit_for(st);
    if (st == JC_OK && doc && jc_error_code(resp) == -32601)
      did_you_mean(doc, argv[0]);
  }
  json_decref(req);
out:
  if (!o->dry_run)
    done_conn(keep, c, st);
  json_decref(own_doc);
  json_decref(resp);
  free(raw);
  return rc;
}
