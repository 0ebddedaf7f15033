/* passthrough.c - --stdin: JSON requests from stdin sent line by line as
 * they come, like socat, each reply printed as it arrives and paired with
 * its request's id, so that a reply with an unknown id and a request left
 * unanswered are reported. The timeout counts from the last line sent. */
#include "call.h"
#include "jrpc.h"

#include <errno.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

typedef struct {
  jc_conn c;
  json_t *expect; /* ids still owed a reply (null: a line that was no
                     valid request, answered with id null) */
  char *in;       /* stdin bytes not yet sent: at most a partial line */
  size_t in_len, in_cap;
  int errors; /* error replies */
  bool bad;   /* a malformed reply or one nobody asked for */
  bool eof;   /* stdin ended */
} session;

/* No more requests once stdin ended; said again when no reply is owed
 * any more (a WebSocket closes only then). */
static void maybe_done(session *s) {
  if (s->eof)
    jc_send_done(&s->c, json_array_size(s->expect) > 0);
}

/* The ids LINE's request(s) expect replies for, appended to EXPECT. */
static void expect_ids(const char *line, size_t n, json_t *expect) {
  json_t *msg = json_loadb(line, n, JSON_DECODE_ANY, NULL), *item;
  size_t i;
  if (json_is_object(msg)) {
    json_t *id = json_object_get(msg, "id");
    if (id)
      json_array_append(expect, id);
  } else if (json_is_array(msg) && json_array_size(msg) > 0) {
    json_array_foreach(msg, i, item) {
      json_t *id = json_object_get(item, "id");
      if (!json_is_object(item))
        json_array_append_new(expect, json_null());
      else if (id)
        json_array_append(expect, id);
    }
  } else {
    json_array_append_new(expect, json_null());
  }
  json_decref(msg);
}

/* Crosses RESP's id off the list; -1 when no request had it. */
static int pair(session *s, const json_t *resp) {
  if (jc_check_response(resp, NULL))
    return -1;
  if (json_object_get(resp, "error"))
    s->errors++;
  const json_t *id = json_object_get(resp, "id"), *e;
  size_t i;
  json_array_foreach(s->expect, i, e) {
    if (json_equal(e, id)) {
      json_array_remove(s->expect, i);
      return 0;
    }
  }
  char *text = json_dumps(id, JSON_ENCODE_ANY | JSON_COMPACT);
  jc_warn("a reply with id %s, which no request had (or had already)",
          text ? text : "?");
  free(text);
  return -1;
}

/* Sends every complete line of the input buffer (all of it at EOF). */
static int send_lines(session *s, bool eof) {
  size_t start = 0;
  for (;;) {
    char *nl = memchr(s->in + start, '\n', s->in_len - start);
    size_t end = nl ? (size_t)(nl - s->in) : s->in_len;
    if (!nl && !(eof && end > start))
      break;
    size_t n = end - start;
    if (n > 0 && s->in[start + n - 1] == '\r')
      n--;
    if (strspn(s->in + start, " \t") < n) {
      expect_ids(s->in + start, n, s->expect);
      int st = jc_send(&s->c, s->in + start, n);
      if (st != JC_OK)
        return st;
      jc_rearm(&s->c);
    }
    start = nl ? end + 1 : end;
  }
  memmove(s->in, s->in + start, s->in_len - start);
  s->in_len -= start;
  return JC_OK;
}

/* Reads what stdin has; *eof at its end. */
static int read_stdin(session *s, bool *eof) {
  if (s->in_cap - s->in_len < 65536) {
    size_t cap = s->in_cap ? s->in_cap * 2 : 65536;
    char *nb = realloc(s->in, cap);
    if (!nb) {
      jc_warn("out of memory reading stdin");
      return JC_ERR;
    }
    s->in = nb;
    s->in_cap = cap;
  }
  ssize_t r = read(STDIN_FILENO, s->in + s->in_len, s->in_cap - s->in_len);
  if (r < 0 && errno == EINTR)
    return JC_OK;
  if (r < 0) {
    jc_warn("stdin: %s", strerror(errno));
    return JC_ERR;
  }
  s->in_len += (size_t)r;
  *eof = r == 0;
  int st = send_lines(s, *eof);
  s->eof = *eof;
  if (st == JC_OK)
    maybe_done(s);
  return st;
}

/* One reply frame: printed as received, then paired. */
static int take_reply(session *s) {
  json_t *resp, *e;
  char *raw;
  size_t i;
  int st = jc_recv_json(&s->c, &resp, &raw);
  /* HTTP: a request of notifications only is answered 204, no reply. */
  if (st == JC_EOF && s->c.ep->framing == JC_HTTP && s->c.fd >= 0)
    return JC_OK;
  if (st != JC_OK)
    return st;
  printf("%s\n", raw);
  fflush(stdout);
  if (json_is_array(resp)) {
    json_array_foreach(resp, i, e) s->bad |= pair(s, e) < 0;
  } else {
    s->bad |= pair(s, resp) < 0;
  }
  json_decref(resp);
  free(raw);
  maybe_done(s);
  return JC_OK;
}

/* Until the server closes (after stdin's end; over HTTP, once every
 * request is answered) or something fails. */
static int pump(session *s) {
  bool eof = false, http = s->c.ep->framing == JC_HTTP;
  for (;;) {
    if (http && eof && s->c.pending == 0)
      return JC_EOF;
    if (jc_buffered_frame(&s->c)) {
      int st = take_reply(s);
      if (st != JC_OK)
        return st;
      continue;
    }
    /* An HTTP connection that owes nothing may be closed by the server
     * while idle: not watched then (jc_send connects again). */
    struct pollfd p[2] = {
        {.fd = http && !s->c.pending ? -1 : s->c.fd, .events = POLLIN},
        {.fd = STDIN_FILENO, .events = POLLIN}};
    /* Waiting on stdin alone has no deadline: a person may be typing. */
    bool owed = json_array_size(s->expect) > 0 || eof;
    int ms = owed ? jc_remaining_ms(&s->c) : -1;
    int n = ms != 0 ? poll(p, eof ? 1 : 2, ms) : 0;
    if (n < 0 && errno == EINTR)
      continue;
    if (n < 0) {
      jc_warn("poll: %s", strerror(errno));
      return JC_ERR;
    }
    if (n == 0) {
      jc_warn("%s: timed out after %d ms waiting for replies",
              jc_endpoint_desc(s->c.ep), s->c.ep->timeout_ms);
      return JC_TIMEOUT;
    }
    if (p[0].revents) {
      int st = take_reply(s);
      if (st != JC_OK)
        return st;
    }
    if (!eof && p[1].revents) {
      int st = read_stdin(s, &eof);
      if (st != JC_OK)
        return st;
    }
  }
}

int jc_passthrough(const jc_opts *o) {
  session s = {.expect = json_array()};
  const json_t *e;
  size_t i;
  int st = jc_connect(&s.c, &o->ep);
  if (st == JC_OK)
    st = pump(&s);
  json_array_foreach(s.expect, i, e) {
    char *text = json_dumps(e, JSON_ENCODE_ANY | JSON_COMPACT);
    jc_warn("no reply for id %s", text ? text : "?");
    free(text);
  }
  int rc = st != JC_EOF                         ? jc_exit_for(st)
           : s.bad || json_array_size(s.expect) ? JC_EXIT_USAGE
           : s.errors                           ? JC_EXIT_RPC
                                                : JC_EXIT_OK;
  json_decref(s.expect);
  free(s.in);
  jc_close(&s.c);
  return rc;
}
