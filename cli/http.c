/* http.c - jrpc's HTTP/1.1 client: http:// and https:// URLs, a POST per
 * request on a kept-alive connection, and the response read by its
 * Content-Length, its chunks or the connection's end. What the server
 * sends is bounded (a head of HEAD_MAX, a body of JC_MAX_FRAME) and every
 * wait is transport.c's, under the one deadline. A status other than 2xx
 * is an error said in the user's terms; the bearer token is written to
 * the socket and nowhere else. */
#include "call.h"
#include "jrpc.h"
#include "transport.h"

#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#ifndef JRPC_VERSION
#define JRPC_VERSION "unknown"
#endif

/* A response head larger than this is refused. */
#define HEAD_MAX (64u << 10)

/* The schemes jc_http_url takes: each one's length, TLS and framing. */
static const struct {
  const char *scheme;
  size_t n;
  bool tls;
  jc_framing framing;
} schemes[] = {
    {"http://", 7, false, JC_HTTP},
    {"https://", 8, true, JC_HTTP},
    {"ws://", 5, false, JC_WEBSOCKET},
    {"wss://", 6, true, JC_WEBSOCKET},
};

/* WORD's row of schemes, or -1. */
static int scheme_of(const char *word) {
  for (size_t i = 0; i < sizeof schemes / sizeof schemes[0]; i++)
    if (!strncasecmp(word, schemes[i].scheme, schemes[i].n))
      return (int)i;
  return -1;
}

bool jc_is_http_url(const char *word) {
  return scheme_of(word) >= 0;
}

/* Whether the n bytes at s are all in SET. */
static bool all_of(const char *s, size_t n, const char *set) {
  for (size_t i = 0; i < n; i++)
    if (!strchr(set, s[i]) || !s[i])
      return false;
  return true;
}

int jc_http_url(const char *url, jc_endpoint *ep, char *err, size_t errlen) {
  int row = scheme_of(url);
  bool tls = schemes[row].tls;
  const char *a = url + schemes[row].n;
  size_t alen = strcspn(a, "/?#");
  const char *host = a, *end = a + alen, *port = NULL;
  size_t hlen;
  bool v6 = a[0] == '[';
  if (memchr(a, '@', alen)) {
    snprintf(err, errlen,
             "%s: a user or password in the URL is not supported (a bearer "
             "token goes in --token-file FILE or JRPC_TOKEN)",
             url);
    return -1;
  }
  if (v6) {
    const char *close = memchr(a, ']', alen);
    host = a + 1;
    hlen = close ? (size_t)(close - host) : 0;
    if (!close || (close + 1 < end && close[1] != ':') ||
        !all_of(host, hlen, "0123456789abcdefABCDEF:.") || hlen == 0) {
      snprintf(err, errlen, "%s: not an IPv6 address in brackets ([::1])", url);
      return -1;
    }
    port = close + 1 < end ? close + 2 : NULL;
  } else {
    const char *colon = memchr(a, ':', alen);
    hlen = (size_t)((colon ? colon : end) - a);
    port = colon ? colon + 1 : NULL;
    if (hlen == 0 ||
        !all_of(host, hlen,
                "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ"
                "0123456789.-_")) {
      snprintf(err, errlen, "%s: no host name or address after %s", url,
               schemes[row].scheme);
      return -1;
    }
  }
  size_t plen = port ? (size_t)(end - port) : 0;
  long pnum = port && plen && plen <= 5 && all_of(port, plen, "0123456789")
                  ? strtol(port, NULL, 10)
                  : -1;
  if (port && (pnum < 1 || pnum > 65535)) {
    snprintf(err, errlen, "%s: the port is not a number from 1 to 65535", url);
    return -1;
  }
  /* The request target: the path and query, without the fragment, which
   * is the client's own. A byte that would end the request line or break
   * the head is refused, not sent. */
  size_t tlen = strcspn(end, "#");
  for (size_t i = 0; i < tlen; i++) {
    unsigned char ch = (unsigned char)end[i];
    if (ch <= 0x20 || ch >= 0x7f) {
      snprintf(err, errlen,
               "%s: the URL has a space or a control character (write it "
               "percent-encoded)",
               url);
      return -1;
    }
  }
  /* One block for the three strings, kept for the endpoint's life (the
   * program's); the endpoint of an earlier URL gives its block back. */
  static char *mem;
  free(mem);
  mem = malloc(hlen + 16 + tlen + 2 + alen + 1);
  if (!mem) {
    snprintf(err, errlen, "out of memory");
    return -1;
  }
  char *tcp = mem, *target = tcp + hlen + 16, *authority = target + tlen + 2;
  long default_port = tls ? 443 : 80;
  snprintf(tcp, hlen + 16, "%s%.*s%s:%ld", v6 ? "[" : "", (int)hlen, host,
           v6 ? "]" : "", port ? pnum : default_port);
  snprintf(target, tlen + 2, "%s%.*s", end[0] == '/' ? "" : "/", (int)tlen,
           end);
  memcpy(authority, a, alen);
  authority[alen] = '\0';
  ep->url = url;
  ep->unix_path = NULL;
  ep->tcp = tcp;
  ep->tls = tls;
  ep->framing = schemes[row].framing;
  ep->path = target;
  ep->host = authority;
  return 0;
}

/* Whether the server closed (or wrote to) a connection on which nothing
 * is owed: a kept-alive connection it ended while we were idle. */
static bool went_away(jc_conn *c) {
  struct pollfd p = {.fd = c->fd, .events = POLLIN};
  return poll(&p, 1, 0) > 0;
}

int jc_http_send(jc_conn *c, const char *body, size_t n) {
  const jc_endpoint *ep = c->ep;
  if (c->closing && c->pending) {
    jc_warn("%s: the server closes the connection (Connection: close) "
            "with requests still unanswered",
            jc_endpoint_desc(ep));
    return JC_ERR;
  }
  if (c->closing || (c->used && c->pending == 0 && went_away(c))) {
    int st = jc_reconnect(c);
    if (st != JC_OK)
      return st;
  }
  char clen[128];
  snprintf(clen, sizeof clen,
           "Content-Type: application/json\r\n"
           "Accept: application/json\r\n"
           "Content-Length: %zu\r\n",
           n);
  size_t h;
  char *head = jc_http_head(ep, "POST", clen, &h);
  char *req = head ? realloc(head, h + n) : NULL;
  if (!req) {
    free(head);
    jc_warn("out of memory for a %zu-byte request", n);
    return JC_ERR;
  }
  /* Head and body in one write: two would wait on Nagle and delayed ACK. */
  memcpy(req + h, body, n);
  int st = jc_write_all(c, req, h + n);
  explicit_bzero(req, h); /* the token */
  free(req);
  if (st == JC_OK)
    c->pending++;
  return st;
}

void jc_http_done(jc_conn *c, bool owed) {
  (void)c, (void)owed;
}

char *jc_http_head(const jc_endpoint *ep, const char *method, const char *extra,
                   size_t *n) {
  /* 128: the head's fixed text. */
  size_t cap = strlen(method) + strlen(ep->path) + strlen(ep->host) +
               strlen(extra) + (ep->token ? strlen(ep->token) : 0) +
               (ep->headers ? strlen(ep->headers) : 0) + sizeof JRPC_VERSION +
               128;
  char *head = malloc(cap);
  int h = head ? snprintf(head, cap,
                          "%s %s HTTP/1.1\r\n"
                          "Host: %s\r\n"
                          "User-Agent: jrpc/" JRPC_VERSION "\r\n"
                          "%s%s%s%s%s"
                          "\r\n",
                          method, ep->path, ep->host, extra,
                          ep->headers ? ep->headers : "",
                          ep->token ? "Authorization: Bearer " : "",
                          ep->token ? ep->token : "", ep->token ? "\r\n" : "")
               : -1;
  if (h < 0 || (size_t)h >= cap) {
    free(head);
    jc_warn("cannot write the request's head");
    return NULL;
  }
  *n = (size_t)h;
  return head;
}

/* ---- reading a response ---- */

/* Whether the comma-separated list VALUE[0..n) has TOKEN (any case). */
static bool has_token(const char *v, size_t n, const char *token) {
  size_t t = strlen(token);
  for (size_t i = 0; i < n;) {
    while (i < n && (v[i] == ' ' || v[i] == '\t' || v[i] == ','))
      i++;
    size_t e = i;
    while (e < n && v[e] != ',')
      e++;
    size_t k = e;
    while (k > i && (v[k - 1] == ' ' || v[k - 1] == '\t'))
      k--;
    if (k - i == t && !strncasecmp(v + i, token, t))
      return true;
    i = e;
  }
  return false;
}

/* What the head says of the body and the connection. */
typedef struct {
  int status;
  char line[160]; /* the status line, printable, for messages */
  bool chunked, has_length, close;
  size_t length;
} head_t;

static int bad(const jc_conn *c, const char *what) {
  jc_warn("%s: malformed HTTP reply: %s", jc_endpoint_desc(c->ep), what);
  return -1;
}

/* A reply that is not HTTP, beginning LINE: what the port speaks instead
 * (newline JSON, or a length prefix), and the endpoint that speaks it. */
static void not_http(const jc_conn *c, const char *line) {
  const char *desc = jc_endpoint_desc(c->ep), *scheme = c->ssl ? "tls" : "tcp";
  char use[600];
  if (c->ep->unix_path)
    snprintf(use, sizeof use, "unix:%s", c->ep->unix_path);
  else
    snprintf(use, sizeof use, "%s://%s", scheme, c->ep->tcp);
  if (c->buf[0] == '{' || c->buf[0] == '[')
    jc_warn("%s: the server answers newline-framed JSON, not HTTP (it "
            "begins %s): use %s",
            desc, line, use);
  else if (c->buf[0] == '\0')
    jc_warn("%s: the server answers length-framed JSON, not HTTP: use "
            "%s with -f length",
            desc, use);
  else
    jc_warn("%s: the reply is not HTTP (it begins %s): is the endpoint an "
            "http listener? (for a newline or length one: tcp://HOST:PORT, "
            "with -f length for length framing)",
            desc, line);
}

/* The head at the start of buf: its length (the body's offset), 0 when
 * not whole yet, -1 on an error said. */
static long read_head(jc_conn *c, head_t *hd) {
  size_t pos = 0, n;
  const char *l;
  memset(hd, 0, sizeof *hd);
  if (c->len && c->buf[0] != 'H') { /* a length prefix has no line end */
    jc_excerpt(c->buf, c->len < 60 ? c->len : 60, hd->line, sizeof hd->line);
    not_http(c, hd->line);
    return -1;
  }
  if (!jc_next_line(c, &pos, &l, &n))
    return c->len > HEAD_MAX ? bad(c, "a status line over 64 KiB") : 0;
  jc_excerpt(l, n, hd->line, sizeof hd->line);
  bool v10 = n >= 8 && !memcmp(l, "HTTP/1.0", 8), keep = false;
  if (n < 12 || memcmp(l, "HTTP/1.", 7) || l[8] != ' ' ||
      !all_of(l + 9, 3, "0123456789") || (n > 12 && l[12] != ' ')) {
    not_http(c, hd->line);
    return -1;
  }
  hd->status = atoi(l + 9);
  for (;;) {
    if (!jc_next_line(c, &pos, &l, &n))
      return c->len > HEAD_MAX ? bad(c, "a head over 64 KiB") : 0;
    if (n == 0)
      break;
    if (pos > HEAD_MAX)
      return bad(c, "a head over 64 KiB");
    if (l[0] == ' ' || l[0] == '\t')
      return bad(c, "a header folded over two lines");
    const char *colon = memchr(l, ':', n);
    if (!colon || colon == l)
      return bad(c, "a header line without a name");
    size_t name = (size_t)(colon - l), vn = n - name - 1;
    const char *v = colon + 1;
    while (vn && (*v == ' ' || *v == '\t'))
      v++, vn--;
    while (vn && (v[vn - 1] == ' ' || v[vn - 1] == '\t'))
      vn--;
    if (name == 14 && !strncasecmp(l, "content-length", 14)) {
      if (vn == 0 || vn > 10 || !all_of(v, vn, "0123456789"))
        return bad(c, "a Content-Length that is not a number");
      size_t len = (size_t)strtoull(v, NULL, 10);
      if (hd->has_length && len != hd->length)
        return bad(c, "two Content-Lengths that differ");
      hd->has_length = true;
      hd->length = len;
    } else if (name == 17 && !strncasecmp(l, "transfer-encoding", 17)) {
      if (!has_token(v, vn, "chunked"))
        return bad(c, "a Transfer-Encoding other than chunked");
      hd->chunked = true;
    } else if (name == 10 && !strncasecmp(l, "connection", 10)) {
      hd->close |= has_token(v, vn, "close");
      keep |= has_token(v, vn, "keep-alive");
    }
  }
  hd->close |= v10 && !keep;
  if (hd->has_length && hd->length > JC_MAX_FRAME) {
    jc_warn("%s: the server announced a %zu-byte reply (at most %u)",
            jc_endpoint_desc(c->ep), hd->length, JC_MAX_FRAME);
    return -1;
  }
  return (long)pos;
}

/* A chunked body from pos: with COPY false, whether it is whole (1), not
 * yet (0) or bad (-1, said), its length in *len and the message's end in
 * *end; with COPY true (once whole) the data moved down to pos. */
static int chunks(jc_conn *c, size_t pos, bool copy, size_t *len, size_t *end) {
  size_t w = pos, n;
  const char *l;
  *len = 0;
  for (;;) {
    if (!jc_next_line(c, &pos, &l, &n))
      return c->len - pos > 4096 ? bad(c, "a chunk size line over 4 KiB") : 0;
    size_t digits = strspn(l, "0123456789abcdefABCDEF");
    if (digits == 0 || digits > 8 || digits > n)
      return bad(c, "a chunk size that is not hexadecimal");
    size_t size = (size_t)strtoul(l, NULL, 16);
    if (size == 0)
      break;
    if (size > JC_MAX_FRAME - *len) {
      jc_warn("%s: a chunked reply over %u bytes", jc_endpoint_desc(c->ep),
              JC_MAX_FRAME);
      return -1;
    }
    if (c->len - pos < size + 1)
      return 0;
    size_t after = pos + size;
    if (c->buf[after] == '\r' && c->len - after < 2)
      return 0;
    if (c->buf[after] == '\r')
      after++;
    if (c->buf[after] != '\n')
      return bad(c, "a chunk longer than its size");
    if (copy)
      memmove(c->buf + w, c->buf + pos, size);
    w += size;
    *len += size;
    pos = after + 1;
  }
  /* Trailers, ignored, up to the empty line; bounded as a whole, or whole
   * lines could grow the buffer without end. */
  size_t trailers = pos;
  for (;;) {
    bool line = jc_next_line(c, &pos, &l, &n);
    if ((line ? pos : c->len) - trailers > HEAD_MAX)
      return bad(c, "trailers over 64 KiB");
    if (!line)
      return 0;
    if (n == 0)
      break;
  }
  *end = pos;
  return 1;
}

/* A status other than 2xx, said in the user's terms. BODY is the
 * JSON-RPC error jrpcd sends with it, whose message and data say why. */
static void refused(const jc_conn *c, const head_t *hd, const char *body,
                    size_t n) {
  const char *desc = jc_endpoint_desc(c->ep);
  json_t *msg = json_loadb(body, n, 0, NULL);
  const json_t *err = json_object_get(msg, "error");
  const char *message = json_string_value(json_object_get(err, "message"));
  const char *data = json_string_value(json_object_get(err, "data"));
  char raw[200] = "", why[200] = "";
  /* What the server says goes out escaped: it may hold control bytes. */
  if (hd->status == 401)
    snprintf(raw, sizeof raw, "%s", data ? data : "");
  else if (message || data)
    snprintf(raw, sizeof raw, "%s%s%s%s", message ? message : "",
             message && data ? " (" : "", data ? data : "",
             message && data ? ")" : "");
  const char *token = c->ep->token;
  if (token && memmem(body, n, token, strlen(token)))
    /* A server that echoes the token does not get it printed. */
    snprintf(why, sizeof why, "(its reason is not shown: it holds the token)");
  else if (*raw || (n && hd->status != 401))
    jc_excerpt(*raw ? raw : body, *raw ? strlen(raw) : n, why, sizeof why);
  if (hd->status == 401 && !c->ep->token)
    jc_warn("%s: the server wants a bearer token (HTTP 401): give it with "
            "--token-file FILE or in JRPC_TOKEN",
            desc);
  else if (hd->status == 401)
    jc_warn("%s: the token was refused (HTTP 401%s%s)", desc, *why ? ": " : "",
            why);
  else
    jc_warn("%s: the server answered %s%s%s", desc, hd->line, *why ? ": " : "",
            why);
  json_decref(msg);
}

int jc_http_frame(jc_conn *c, bool at_eof) {
  if (c->resp.kind)
    return c->resp.kind;
  head_t hd;
  long at;
  /* 1xx responses come before the final one: dropped. */
  while ((at = read_head(c, &hd)) > 0 && hd.status < 200) {
    memmove(c->buf, c->buf + at, c->len - (size_t)at);
    c->len -= (size_t)at;
  }
  if (at <= 0)
    return c->resp.kind = at < 0 ? -1 : 0;
  size_t body = (size_t)at, len = 0, end = 0;
  if (hd.status == 204 || hd.status == 304) {
    end = body;
  } else if (hd.chunked) {
    int whole = chunks(c, body, false, &len, &end);
    if (whole <= 0)
      return c->resp.kind = whole;
    chunks(c, body, true, &len, &end);
  } else if (hd.has_length) {
    if (c->len - body < hd.length)
      return 0;
    len = hd.length;
    end = body + len;
  } else {
    /* Neither: the body ends with the connection. */
    if (!at_eof && c->len - body > JC_MAX_FRAME) {
      jc_warn("%s: a reply over %u bytes", jc_endpoint_desc(c->ep),
              JC_MAX_FRAME);
      return c->resp.kind = -1;
    }
    if (!at_eof)
      return 0;
    len = c->len - body;
    end = c->len;
    hd.close = true;
  }
  c->closing |= hd.close;
  /* jrpcd ends a body with a newline; the reply is the JSON before it. */
  while (len && strchr(" \t\r\n", c->buf[body + len - 1]))
    len--;
  c->resp.body = body;
  c->resp.len = len;
  c->resp.total = end;
  if (hd.status >= 300) {
    refused(c, &hd, c->buf + body, len);
    return c->resp.kind = -1;
  }
  return c->resp.kind = len ? 1 : 2;
}

int jc_http_complete(jc_conn *c, bool at_eof, size_t *skip, size_t *n,
                     size_t *total) {
  int kind = jc_http_frame(c, at_eof);
  *skip = c->resp.body;
  *n = c->resp.len;
  *total = c->resp.total;
  return kind;
}
