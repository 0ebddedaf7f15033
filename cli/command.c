/* command.c - one call from the command line (or one line at the prompt),
 * and the discovery modes -l and -d. */
#include "args.h"
#include "call.h"
#include "discover.h"
#include "jrpc.h"

#include <stdlib.h>
#include <string.h>

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
  jc_send_done(c);
  json_t *extra;
  st = jc_recv_json(c, &extra, NULL);
  if (st == JC_OK) {
    json_decref(extra);
    jc_warn("the server answered a notification");
    return JC_ERR;
  }
  return st == JC_EOF ? JC_OK : st;
}

int jc_command(const jc_opts *o, jc_conn *keep, const json_t *doc, int argc,
               char **argv) {
  jc_conn own, *c;
  json_t *own_doc = NULL, *params = NULL, *resp = NULL;
  char *raw = NULL, err[512];
  int rc;
  int st = open_conn(o, keep, &own, &c);
  if (st == JC_OK && o->check && !doc) {
    st = doc_on(c, &own_doc, true);
    doc = own_doc;
  }
  if (st != JC_OK) {
    rc = jc_exit_for(st);
    goto out;
  }
  const json_t *desc = doc ? jc_checked_method(doc, argv[0]) : NULL;
  if (jc_build_params(argv[0], argc - 1, argv + 1, desc, &params, err,
                      sizeof err) < 0) {
    jc_warn("%s", err);
    rc = JC_EXIT_USAGE;
    goto out;
  }
  json_t *req =
      jc_request(argv[0], params, o->notify ? NULL : json_deep_copy(o->id));
  if (o->notify) {
    st = notify(c, req);
    rc = st == JC_OK ? JC_EXIT_OK : jc_exit_for(st);
  } else {
    st = jc_call(c, req, &resp, &raw);
    rc = st == JC_OK ? jc_print_response(resp, raw, &o->out) : jc_exit_for(st);
  }
  json_decref(req);
out:
  done_conn(keep, c, st);
  json_decref(own_doc);
  json_decref(resp);
  free(raw);
  return rc;
}
