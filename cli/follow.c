/* follow.c - --follow METHOD ARG...: subscribes, prints each notification
 * of the subscription as it comes (its result, as a call's result is
 * printed), and on SIGINT or SIGTERM calls the method's unsubscribe
 * method (rpc.discover's "x-subscription") and exits 0. The server's
 * rpc.lagged notices (notifications it dropped because we did not keep
 * up) and other notifications go to stderr. */
#include "call.h"
#include "discover.h"
#include "jrpc.h"

#include <signal.h>
#include <stdlib.h>
#include <string.h>

static void on_stop(int sig) {
  (void)sig;
  jc_stop = 1;
}

/* What msg is to the subscription ID: 1 one of its notifications (its
 * result printed), 0 anything else (said on stderr). */
static int take(const json_t *msg, const char *raw, const char *id,
                const jc_opts *o) {
  const char *method = json_string_value(json_object_get(msg, "method"));
  const json_t *params = json_object_get(msg, "params");
  const char *sub = json_string_value(json_object_get(params, "subscription"));
  bool ours = sub && !strcmp(sub, id);
  if (ours && method && !strcmp(method, "rpc.lagged")) {
    jc_warn("rpc.lagged: subscription %s lost %lld notifications (the "
            "server dropped them while jrpc did not keep up)",
            id, json_integer_value(json_object_get(params, "dropped")));
    return 0;
  }
  const json_t *result = json_object_get(params, "result");
  if (ours && result && !json_object_get(msg, "id")) {
    json_t *as_reply = json_pack("{sO}", "result", result);
    jc_print_response(as_reply, raw, &o->out);
    json_decref(as_reply);
    return 1;
  }
  if (!jc_show_notification(msg))
    jc_warn("an unexpected message while following: %s", raw ? raw : "?");
  return 0;
}

/* Calls UNSUB with ID; notifications before its reply still printed. */
static int unsubscribe(jc_conn *c, const char *unsub, const char *id,
                       const jc_opts *o) {
  json_t *rid = json_string("jrpc-unsubscribe");
  json_t *req = jc_request(unsub, json_pack("[s]", id), json_incref(rid));
  int st = jc_send_json(c, req), rc = JC_EXIT_OK;
  json_decref(req);
  while (st == JC_OK) {
    json_t *msg;
    char *raw = NULL;
    st = jc_recv_json(c, &msg, &raw);
    if (st == JC_OK && !json_object_get(msg, "id")) {
      take(msg, raw, id, o);
    } else if (st == JC_OK) {
      if (jc_check_response(msg, rid) != 0) {
        rc = JC_EXIT_USAGE;
      } else if (json_object_get(msg, "error")) {
        rc = jc_print_response(msg, raw, &o->out);
      } else if (!json_is_true(json_object_get(msg, "result"))) {
        jc_warn("%s did not know subscription %s (it had ended)", unsub, id);
        rc = JC_EXIT_RPC;
      }
      st = JC_EOF;
    }
    json_decref(msg);
    free(raw);
  }
  json_decref(rid);
  if (st == JC_STOPPED)
    jc_warn("stopped again before %s answered: the subscription ends with "
            "the connection",
            unsub);
  return st == JC_EOF ? rc : st == JC_STOPPED ? JC_EXIT_OK : jc_exit_for(st);
}

int jc_follow(jc_conn *c, const json_t *req, const json_t *doc,
              const jc_opts *o) {
  const char *method = json_string_value(json_object_get(req, "method"));
  const json_t *m = doc ? jc_find_method(doc, method) : NULL;
  const json_t *sub = json_object_get(m, "x-subscription");
  const char *unsub = json_string_value(json_object_get(sub, "unsubscribe"));
  if (m && !unsub) {
    jc_warn("--follow: %s is not a subscription method (rpc.discover gives "
            "it no x-subscription; kv.watch is one)",
            method);
    return JC_EXIT_USAGE;
  }
  /* SIGINT and SIGTERM only stop a wait (jc_wait's ppoll lets them in),
   * so that the unsubscribe goes out from here, not from a handler. */
  sigset_t stops, before;
  sigemptyset(&stops);
  sigaddset(&stops, SIGINT);
  sigaddset(&stops, SIGTERM);
  sigprocmask(SIG_BLOCK, &stops, &before);
  struct sigaction sa = {.sa_handler = on_stop};
  sigemptyset(&sa.sa_mask);
  sigaction(SIGINT, &sa, NULL);
  sigaction(SIGTERM, &sa, NULL);
  c->sigmask = &before;
  json_t *resp = NULL;
  int st = jc_call(c, req, &resp, NULL), rc;
  const char *id = json_string_value(json_object_get(resp, "result"));
  if (st != JC_OK) {
    rc = st == JC_STOPPED ? JC_EXIT_OK : jc_exit_for(st);
    goto out;
  }
  if (json_object_get(resp, "error")) {
    rc = jc_print_response(resp, NULL, &o->out);
    goto out;
  }
  if (!id) {
    jc_warn("--follow: %s answered no subscription id (a string): is it a "
            "subscription method?",
            method);
    rc = JC_EXIT_USAGE;
    goto out;
  }
  if (o->verbose)
    jc_warn("subscribed: %s", id);
  c->forever = true;
  for (;;) {
    json_t *msg;
    char *raw = NULL;
    st = jc_recv_json(c, &msg, o->out.raw ? &raw : NULL);
    if (st == JC_OK)
      take(msg, raw, id, o);
    json_decref(msg);
    free(raw);
    if (st != JC_OK)
      break;
  }
  c->forever = false;
  if (st == JC_EOF)
    jc_warn("%s: the server closed the connection: the subscription ended",
            jc_endpoint_desc(c->ep));
  if (st != JC_STOPPED) {
    rc = st == JC_EOF ? JC_EXIT_USAGE : jc_exit_for(st);
    goto out;
  }
  /* A second signal stops the unsubscribe's wait too. */
  jc_stop = 0;
  jc_rearm(c);
  if (unsub) {
    rc = unsubscribe(c, unsub, id, o);
  } else {
    jc_warn("--follow: without rpc.discover the unsubscribe method is "
            "unknown; closing the connection ends the subscription");
    rc = JC_EXIT_OK;
  }
out:
  /* The mask lives in this frame; the connection outlives it. */
  c->sigmask = NULL;
  sigprocmask(SIG_SETMASK, &before, NULL);
  json_decref(resp);
  return rc;
}
