/* http.c - the http and content-length framings; see http.h. */
#include "http.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common.h"
#include "request.h"
#include "ws.h"

/* Content-Length is written before the body is, as spaces that the
 * figure replaces once the body is complete: leading white space of a
 * field value is not part of it (RFC 9110, 5.5), and 10 digits hold any
 * reply (a reply frame is below 4 GiB, dispatch.c). */
#define CL_WIDTH 10

/* answer()'s word for: the stream is websocket now (upgrade). */
#define UPGRADED (-5100)

enum {
  FIELD_NONE = 0,
  FIELD_OTHER,
  FIELD_CTYPE,
  FIELD_EXPECT,
  FIELD_AUTH,
  FIELD_ORIGIN,
  FIELD_UPGRADE,
  FIELD_WS_KEY,
  FIELD_WS_VERSION
};

/* The head written before a reply's body, to be completed by head_end. */
typedef struct head {
  jrpc__outmark_t start; /* where the head begins, to take it back */
  char *len;             /* the Content-Length digits, or NULL */
  uint64_t body;         /* out position of the body */
} head_t;

static jrpc__http_t *of_parser(http_parser *p) {
  return (jrpc__http_t *)p->data;
}

/* ---- reading the head ---- */

static int is_digit(char c) {
  return c >= '0' && c <= '9';
}

/* A header line is over: judge its value if it is one we look at. */
static void end_header(jrpc__http_t *h) {
  if (h->field == FIELD_CTYPE) {
    /* application/json, or application/json-rpc and application/jsonrequest
     * (the JSON-RPC over HTTP drafts), parameters allowed; any case. */
    size_t n = h->value_n < sizeof(h->value) ? h->value_n : 0;
    size_t end = 0;
    while (end < n && h->value[end] != ';' && h->value[end] != ' ' &&
           h->value[end] != '\t')
      end++;
    static const char *const ok[] = {"application/json", "application/json-rpc",
                                     "application/jsonrequest"};
    int good = 0;
    for (size_t i = 0; i < sizeof(ok) / sizeof(ok[0]); i++)
      if (strlen(ok[i]) == end && strncasecmp(h->value, ok[i], end) == 0)
        good = 1;
    h->bad_type = !good;
  } else if (h->field == FIELD_EXPECT) {
    h->expect =
        h->value_n == 12 && strncasecmp(h->value, "100-continue", 12) == 0;
  } else if (h->field == FIELD_UPGRADE) {
    h->ws_asked = h->value_n == 9 && strncasecmp(h->value, "websocket", 9) == 0;
  } else if (h->field == FIELD_WS_VERSION) {
    h->ws_version13 = h->value_n == 2 && memcmp(h->value, "13", 2) == 0;
  } else if (h->field == FIELD_WS_KEY) {
    h->ws_key_n = 0;
    if (h->value_n == sizeof(h->ws_key)) {
      memcpy(h->ws_key, h->value, sizeof(h->ws_key));
      h->ws_key_n = sizeof(h->ws_key);
    }
  }
  h->field = FIELD_NONE;
}

static int on_url(http_parser *p, const char *at, size_t len) {
  jrpc__http_t *h = of_parser(p);
  for (size_t i = 0; i < len && h->url_n <= sizeof(h->url); i++, h->url_n++)
    if (h->url_n < sizeof(h->url))
      h->url[h->url_n] = at[i];
  return 0;
}

static int on_header_field(http_parser *p, const char *at, size_t len) {
  jrpc__http_t *h = of_parser(p);
  if (h->field != FIELD_NONE)
    end_header(h); /* the previous header's value is complete */
  if (h->field_n == 0xff)
    h->field_n = 0; /* a new name begins */
  /* Kept as sent (up to its 24 first bytes): its length alone rules out
   * most names, so case is folded only when it is compared. */
  size_t room = sizeof(h->field_name) - h->field_n;
  size_t k = len < room ? len : room;
  memcpy(h->field_name + h->field_n, at, k);
  h->field_n = (uint8_t)(h->field_n + k);
  return 0;
}

/* 1 when the value piece at `at` begins a folded line (obs-fold: CRLF, then
 * a space or tab). The head is in the buffer from rd, so what precedes the
 * piece is there to look at: at most the blanks after the colon. Not in
 * the trailers of a chunked body, which are ignored (and which the body's
 * gathering may have moved away from what preceded them). */
static int folded(const jrpc__http_t *h, const char *at) {
  const char *head = h->s->buf + h->s->rd;
  if (h->head_len || at <= head || at > h->s->buf + h->s->wr)
    return 0; /* trailers; the request line of our own (content-length) */
  while (at > head && (at[-1] == ' ' || at[-1] == '\t'))
    at--;
  return at > head && at[-1] == '\n';
}

static int on_header_value(http_parser *p, const char *at, size_t len) {
  jrpc__http_t *h = of_parser(p);
  if (folded(h, at)) {
    h->status = 400;
    return 1;
  }
  if (h->field == FIELD_NONE) {
    /* The first piece of a value: the name before it is whole. */
    size_t n = h->field_n;
    h->field = FIELD_OTHER;
    if (n == 12 && strncasecmp(h->field_name, "content-type", 12) == 0) {
      h->field = FIELD_CTYPE;
    } else if (n == 14 &&
               strncasecmp(h->field_name, "content-length", 14) == 0) {
      /* Where its digits are, for the memo (the parser checks them). */
      h->clen_at = (uint32_t)(at - (h->s->buf + h->s->rd));
    } else if (n == 6 && strncasecmp(h->field_name, "expect", 6) == 0) {
      h->field = FIELD_EXPECT;
    } else if (n == 6 && strncasecmp(h->field_name, "origin", 6) == 0) {
      /* Read in place when judged, as Authorization is. */
      h->field = FIELD_ORIGIN;
      if (h->origin_seen++ == 0)
        h->origin_at = (uint32_t)(at - (h->s->buf + h->s->rd));
    } else if (n == 7 && strncasecmp(h->field_name, "upgrade", 7) == 0) {
      h->field = FIELD_UPGRADE;
    } else if (n == 17 &&
               strncasecmp(h->field_name, "sec-websocket-key", 17) == 0) {
      h->field = FIELD_WS_KEY;
    } else if (n == 21 &&
               strncasecmp(h->field_name, "sec-websocket-version", 21) == 0) {
      h->field = FIELD_WS_VERSION;
    } else if (h->auth && n == 13 &&
               strncasecmp(h->field_name, "authorization", 13) == 0) {
      /* Where the value is: the head stays in the buffer until judged, and
       * a value is contiguous (no fold), so it is read in place. */
      h->field = FIELD_AUTH;
      if (h->auth_seen++ == 0)
        h->auth_at = (uint32_t)(at - (h->s->buf + h->s->rd));
    }
    h->field_n = 0xff;
    h->value_n = 0;
  }
  if (h->field == FIELD_AUTH) {
    if (h->auth_seen == 1)
      h->auth_n += (uint32_t)len; /* the first one, piece by piece */
  } else if (h->field == FIELD_ORIGIN) {
    if (h->origin_seen == 1)
      h->origin_n += (uint32_t)len;
  } else if (h->field != FIELD_OTHER) {
    for (size_t i = 0; i < len && h->value_n <= sizeof(h->value);
         i++, h->value_n++)
      if (h->value_n < sizeof(h->value))
        h->value[h->value_n] = at[i];
  }
  return 0;
}

static int path_is(const jrpc__http_t *h, const char *path) {
  size_t n = strlen(path);
  if (h->url_n < n || h->url_n > sizeof(h->url) || memcmp(h->url, path, n) != 0)
    return 0;
  return h->url_n == n || h->url[n] == '?';
}

/* The head is whole: the parser stops on its last byte (which it takes
 * again when it goes on), so that where the head ends is known exactly,
 * and judge_head decides before any byte of the body is read. */
static int on_headers_complete(http_parser *p) {
  jrpc__http_t *h = of_parser(p);
  if (h->field != FIELD_NONE)
    end_header(h);
  if (h->head_len)
    return 0; /* trailers of a chunked body */
  h->head_done = 1;
  http_parser_pause(p, 1);
  return 0;
}

/* A websocket handshake (RFC 6455, 4.2.1): 0 if it is good, else the
 * status that refuses it, with why. */
static int ws_judge(jrpc__http_t *h) {
  const http_parser *p = &h->p;
  if (!h->websocket)
    h->why = "websocket is not enabled on this listener";
  else if (p->http_major != 1 || p->http_minor < 1)
    h->why = "a websocket handshake needs HTTP/1.1";
  else if (!p->upgrade)
    h->why = "a websocket handshake needs Connection: Upgrade";
  else if (!h->ws_version13)
    return 426; /* with Sec-WebSocket-Version: 13 */
  else if (!jrpc__ws_key_valid(h->ws_key, h->ws_key_n))
    h->why = "Sec-WebSocket-Key must be 16 bytes in base64";
  else
    return 0;
  return 400;
}

/* What the head asks for: 0 to go on, or the status that ends it. */
static int judge_head(jrpc__http_t *h) {
  http_parser *p = &h->p;
  if (h->head_len > h->max_head)
    return 431;
  uint32_t max = h->s->e->lim.max_frame_bytes;
  int has_len = (p->flags & F_CONTENTLENGTH) != 0;
  if (!(p->flags & F_CHUNKED) && has_len && p->content_length > max)
    return 413;
  if (h->s->fr.kind == JRPC_FRAMING_CONTENT_LENGTH)
    return !has_len && !(p->flags & F_CHUNKED) ? 400 : 0;
  if ((h->routes & JRPC__HTTP_ROUTE_HEALTH) && path_is(h, "/health"))
    h->route = JRPC__HTTP_ROUTE_HEALTH;
  else if ((h->routes & JRPC__HTTP_ROUTE_METRICS) && path_is(h, "/metrics"))
    h->route = JRPC__HTTP_ROUTE_METRICS;
  /* A browser's request (it names its page's origin): only from the
   * origins the listener allows, or a page anywhere could call here with
   * its visitor's network position (cross-site request forgery, and for
   * a websocket, cross-site hijacking). Clients that are no browsers send
   * no Origin and are not asked. */
  if (h->origin_seen && !h->route) {
    const char *o = h->s->buf + h->s->rd + h->origin_at;
    h->cors = h->origin_seen == 1 && h->origin_at < h->head_len && h->host &&
                      h->host->origin
                  ? h->host->origin(h->host_arg, o, h->origin_n)
                  : NULL;
    if (!h->cors) {
      h->why = "this Origin is not allowed (origins)";
      h->status = 403;
      return 0;
    }
  }
  /* A CORS preflight carries no credentials (browsers send none with
   * it), and says nothing of what is served: answered before the token
   * (preflight_reply: 403 unless its Origin is allowed). */
  if (!h->route && p->method == HTTP_OPTIONS) {
    h->route = JRPC__HTTP_ROUTE_PREFLIGHT;
    return 0;
  }
  /* Before anything else about the request: a client without a token
   * learns nothing of what the listener serves, and no body is read for
   * it. /health stays open to balancers. */
  if (h->auth && h->route != JRPC__HTTP_ROUTE_HEALTH) {
    const char *cred = h->auth_seen == 1 && h->auth_at < h->head_len
                           ? h->s->buf + h->s->rd + h->auth_at
                           : NULL;
    int st = 401; /* no one to ask: closed */
    if (h->host && h->host->authorize)
      st = h->host->authorize(h->host_arg, h->s, cred, cred ? h->auth_n : 0,
                              &h->why);
    if (st)
      return st;
  }
  if (h->ws_asked && !h->route && p->method == HTTP_GET) {
    h->status = ws_judge(h);
    if (!h->status)
      h->route = JRPC__HTTP_ROUTE_UPGRADE;
    return 0;
  }
  /* Balancers' and uptime checkers' probes are often HEADs. */
  int route_method = p->method == HTTP_GET || p->method == HTTP_HEAD;
  if (h->route ? !route_method : p->method != HTTP_POST)
    h->status = 405;
  else if (!h->route && h->bad_type)
    h->status = 415;
  if (!h->status && h->expect && p->http_major == 1 && p->http_minor >= 1) {
    /* The client waits for this before it sends the body. */
    static const char cont[] = "HTTP/1.1 100 Continue\r\n\r\n";
    jrpc__out_put(&h->s->out, cont, sizeof(cont) - 1);
  }
  return 0;
}

static int on_chunk_header(http_parser *p) {
  jrpc__http_t *h = of_parser(p);
  /* content_length is the chunk's size here: refuse before buffering it. */
  if (p->content_length > h->s->e->lim.max_frame_bytes - h->body_len) {
    h->status = 413;
    return 1;
  }
  return 0;
}

static int on_body(http_parser *p, const char *at, size_t len) {
  jrpc__http_t *h = of_parser(p);
  if (len > h->s->e->lim.max_frame_bytes - h->body_len) {
    h->status = 413;
    return 1;
  }
  /* Gather the body right after the head: a Content-Length body is there
   * already; a chunked one moves down over its chunk headers. */
  char *dst = h->s->buf + h->s->rd + h->head_len + h->body_len;
  if (dst != at)
    memmove(dst, at, len);
  h->body_len += len;
  return 0;
}

static int on_message_complete(http_parser *p) {
  jrpc__http_t *h = of_parser(p);
  h->complete = 1;
  http_parser_pause(p, 1); /* one message at a time */
  return 0;
}

static const http_parser_settings settings = {
    .on_url = on_url,
    .on_header_field = on_header_field,
    .on_header_value = on_header_value,
    .on_headers_complete = on_headers_complete,
    .on_body = on_body,
    .on_message_complete = on_message_complete,
    .on_chunk_header = on_chunk_header,
};

static void message_reset(jrpc__http_t *h) {
  h->parsed = h->head_len = h->body_len = 0;
  h->fresh = 1;
  h->complete = 0;
  h->status = 0;
  h->route = 0;
  h->bad_type = 0;
  h->expect = 0;
  h->field = FIELD_NONE;
  h->field_n = 0;
  h->value_n = 0;
  h->url_n = 0;
  h->memo_hit = 0;
  h->clen_at = UINT32_MAX;
}

void jrpc__http_init(jrpc__http_t *h, jrpc__stream_t *s, uint32_t max_head,
                     uint8_t routes, const jrpc__http_host_t *host,
                     void *host_arg) {
  memset(h, 0, sizeof(*h));
  http_parser_init(&h->p, HTTP_REQUEST);
  h->p.data = h;
  h->s = s;
  h->max_head = max_head;
  h->routes = routes;
  h->host = host;
  h->host_arg = host_arg;
  message_reset(h);
  s->http = h;
}

void jrpc__http_set_auth(jrpc__http_t *h, int on) {
  h->auth = on != 0;
  if (on)
    h->memo_len = 0;
}

void jrpc__http_free(jrpc__http_t *h) {
  free(h->memo);
  h->memo = NULL;
  h->memo_len = 0;
}

int jrpc__http_open(jrpc__stream_t *s, const jrpc__framing_conf_t *conf) {
  jrpc__http_t *h = malloc(sizeof(*h));
  if (!h)
    return JRPC_ENOMEM;
  jrpc__http_init(h, s, conf->max_head, conf->routes, conf->host,
                  conf->host_arg);
  h->websocket = conf->websocket;
  return 0;
}

void jrpc__http_close(jrpc__stream_t *s) {
  jrpc__http_t *h = s->http;
  if (!h)
    return;
  jrpc__http_free(h);
  free(h);
  s->http = NULL;
}

/* ---- writing replies ---- */

static const char *reason(int status) {
  switch (status) {
  case 101:
    return "Switching Protocols";
  case 200:
    return "OK";
  case 204:
    return "No Content";
  case 400:
    return "Bad Request";
  case 401:
    return "Unauthorized";
  case 403:
    return "Forbidden";
  case 405:
    return "Method Not Allowed";
  case 408:
    return "Request Timeout";
  case 413:
    return "Content Too Large";
  case 415:
    return "Unsupported Media Type";
  case 426:
    return "Upgrade Required";
  case 431:
    return "Request Header Fields Too Large";
  case 503:
    return "Service Unavailable";
  }
  return "Error";
}

static const char json_type[] = "application/json";

/* Appends the n bytes of s at d: the head is put together in place. */
static char *cat(char *d, const char *s, size_t n) {
  memcpy(d, s, n);
  return d + n;
}
#define CAT(d, lit) cat(d, lit, sizeof(lit) - 1)

/* The Content-Length field's name, its digits' room and the head's end. */
#define LEN_FIELD "Content-Length: "
#define LEN_ROOM "          \r\n\r\n" /* CL_WIDTH spaces */

/* The head of nearly every reply, whole: written with one copy. */
static const char head_200_json[] =
    "HTTP/1.1 200 OK\r\n"
    "Content-Type: application/json\r\n" LEN_FIELD LEN_ROOM;
static const char head_clen[] = LEN_FIELD LEN_ROOM;
_Static_assert(sizeof(LEN_ROOM) - 1 == CL_WIDTH + 4, "CL_WIDTH spaces");

/* The head of a reply; with `type`, Content-Type and a Content-Length to
 * fill in by head_end. http10: an HTTP/1.0 client kept alive is told so.
 * Put together without printf: it is on every request's path. */
static int head_begin(jrpc__http_t *h, jrpc__outbuf_t *o, head_t *hd,
                      int status, const char *type, const char *extra) {
  hd->start = jrpc__out_mark(o);
  hd->len = NULL;
  int clen = h->s->fr.kind == JRPC_FRAMING_CONTENT_LENGTH;
  const char *conn = h->close_after ? "Connection: close\r\n"
                     : h->http10    ? "Connection: keep-alive\r\n"
                                    : "";
  const char *fixed = NULL;
  size_t n = 0;
  if (clen) {
    fixed = head_clen;
    n = sizeof(head_clen) - 1;
  } else if (status == 200 && type == json_type && !*conn && !extra &&
             !h->cors) {
    fixed = head_200_json;
    n = sizeof(head_200_json) - 1;
  }
  char buf[512];
  if (!fixed) {
    /* Every part is short and known here: 512 bytes hold them all (an
     * origin is at most JRPC__HTTP_ORIGIN_MAX bytes). */
    const char *why = reason(status);
    char *d = CAT(buf, "HTTP/1.1 ");
    *d++ = (char)('0' + status / 100);
    *d++ = (char)('0' + status / 10 % 10);
    *d++ = (char)('0' + status % 10);
    *d++ = ' ';
    d = cat(d, why, strlen(why));
    d = CAT(d, "\r\n");
    if (type) {
      d = CAT(d, "Content-Type: ");
      d = cat(d, type, strlen(type));
      d = CAT(d, "\r\n");
    }
    d = cat(d, conn, strlen(conn));
    if (extra)
      d = cat(d, extra, strlen(extra));
    if (h->cors)
      d = cat(d, h->cors, strlen(h->cors));
    d = type ? CAT(d, LEN_FIELD LEN_ROOM) : CAT(d, "\r\n");
    fixed = buf;
    n = (size_t)(d - buf);
  }
  /* The digits' room and the head's end must be contiguous: put apart
   * when the segment's end is near. */
  size_t tail = clen || type ? sizeof(LEN_ROOM) - 1 : 0;
  if ((size_t)(o->end - o->p) >= n) {
    memcpy(o->p, fixed, n);
    o->p += n;
  } else {
    jrpc__out_put(o, fixed, n - tail);
    char *room = tail ? jrpc__out_room(o, tail) : o->p;
    if (!room || o->oom)
      return JRPC_ENOMEM;
    memcpy(room, fixed + n - tail, tail);
    o->p = room + tail;
  }
  if (tail)
    hd->len = o->p - tail; /* the digits, filled in by head_end */
  hd->body = jrpc__out_pos(o);
  return 0;
}

/* The body is complete: its length goes into the head, right-aligned. */
static int head_end(jrpc__outbuf_t *o, head_t *hd) {
  if (o->oom) {
    jrpc__out_truncate(o, hd->start);
    o->oom = 0;
    return JRPC_ENOMEM;
  }
  if (hd->len) {
    uint64_t v = jrpc__out_pos(o) - hd->body;
    char *d = hd->len + CL_WIDTH;
    do {
      *--d = (char)('0' + v % 10);
      v /= 10;
    } while (v && d > hd->len);
  }
  return 0;
}

/* A reply of the host's or of an error, JSON-RPC shaped with id null so
 * that a JSON-RPC client reads it as one. */
static int status_reply(jrpc__http_t *h, int status) {
  jrpc__stream_t *s = h->s;
  jrpc__outbuf_t *o = &s->out;
  head_t hd;
  const char *allow = NULL;
  if (status == 405)
    allow = h->route ? "Allow: GET, HEAD\r\n" : "Allow: POST\r\n";
  else if (status == 401)
    allow = "WWW-Authenticate: Bearer\r\n";
  else if (status == 426)
    allow = "Sec-WebSocket-Version: 13\r\n";
  int rc = head_begin(h, o, &hd, status, json_type, allow);
  if (rc)
    return rc;
  JRPC__STAT_INC(s->e->stats.errors);
  if (h->p.method == HTTP_HEAD && s->fr.kind == JRPC_FRAMING_HTTP)
    return head_end(o, &hd); /* a reply to HEAD has no body */
  char data[96];
  int n = 0, code = JRPC_INVALID_REQUEST;
  const char *msg = reason(status);
  if (status == 413) {
    code = JRPC_FRAME_TOO_LARGE;
    msg = NULL;
    n = snprintf(data, sizeof(data), "{\"limit\":%u}",
                 s->e->lim.max_frame_bytes);
  } else if (status == 408) {
    code = JRPC_FRAME_TIMEOUT;
    msg = NULL;
  } else if (status == 431) {
    n = snprintf(data, sizeof(data), "{\"limit\":%u}", h->max_head);
  } else if (status == 415) {
    msg = "Content-Type must be application/json";
  } else if (status == 405) {
    msg = h->route ? "Method Not Allowed: GET or HEAD only"
                   : "Method Not Allowed: POST JSON-RPC requests";
  } else if (status == 401 || status == 403) {
    code = JRPC_ACCESS_DENIED;
  } else if (status == 426) {
    msg = "websocket version 13 only";
  }
  if (h->why && n == 0)
    n = snprintf(data, sizeof(data), "\"%s\"", h->why);
  jrpc__reply_error(o, code, msg, n ? data : NULL, (size_t)n, NULL, 0);
  jrpc__out_byte(o, '\n');
  return head_end(o, &hd);
}

/* A connection whose framing is lost: the reply, then it closes. */
static int fatal(jrpc__http_t *h, int status) {
  jrpc__stream_t *s = h->s;
  jrpc__outbuf_t *o = &s->out;
  s->closing = 1;
  int rc;
  if (s->fr.kind == JRPC_FRAMING_CONTENT_LENGTH) {
    head_t hd;
    rc = head_begin(h, o, &hd, 0, NULL, NULL);
    if (rc)
      return rc;
    if (status == 413) {
      jrpc__dispatch_too_large(s->e, s->fr.kind, o,
                               (uint64_t)h->p.content_length);
    } else {
      static const char why[] = "\"malformed header block\"";
      JRPC__STAT_INC(s->e->stats.errors);
      jrpc__reply_error(o, JRPC_PARSE_ERROR, NULL, why, sizeof(why) - 1, NULL,
                        0);
      jrpc__out_byte(o, '\n');
    }
    rc = head_end(o, &hd);
  } else {
    h->close_after = 1;
    rc = status_reply(h, status);
  }
  return rc ? rc : JRPC__ECLOSE;
}

/* A CORS preflight: allowed (its origin's lines, what may be asked) or
 * refused (403, without the lines: the browser then sends nothing). */
static int preflight_reply(jrpc__http_t *h) {
  jrpc__outbuf_t *o = &h->s->out;
  head_t hd;
  if (!h->cors) {
    if (!h->origin_seen)
      h->why = "a preflight names an Origin";
    return status_reply(h, 403);
  }
  static const char asks[] =
      "Access-Control-Allow-Methods: POST, GET, OPTIONS\r\n"
      "Access-Control-Allow-Headers: Content-Type, Authorization\r\n"
      "Access-Control-Max-Age: 600\r\n";
  return head_begin(h, o, &hd, 204, NULL, asks);
}

/* The websocket handshake's answer; the stream switches after it. */
static int upgrade_reply(jrpc__http_t *h) {
  char accept[JRPC__WS_ACCEPT_LEN + 3];
  jrpc__ws_accept(h->ws_key, h->ws_key_n, accept);
  memcpy(accept + JRPC__WS_ACCEPT_LEN, "\r\n", 3);
  jrpc__outbuf_t *o = &h->s->out;
  static const char head[] = "HTTP/1.1 101 Switching Protocols\r\n"
                             "Upgrade: websocket\r\n"
                             "Connection: Upgrade\r\n"
                             "Sec-WebSocket-Accept: ";
  jrpc__out_put(o, head, sizeof(head) - 1);
  jrpc__out_put(o, accept, JRPC__WS_ACCEPT_LEN + 2);
  if (h->cors)
    jrpc__out_put(o, h->cors, strlen(h->cors));
  jrpc__out_put(o, "\r\n", 2);
  return o->oom ? JRPC_ENOMEM : 0;
}

/* /health's and /metrics' reply; to HEAD, the head GET gets, with the
 * Content-Length of GET's body, and not the body (RFC 9110 9.3.2). */
static int route_reply(jrpc__http_t *h) {
  jrpc__outbuf_t *o = &h->s->out;
  head_t hd;
  if (h->route == JRPC__HTTP_ROUTE_PREFLIGHT)
    return preflight_reply(h);
  if (h->route == JRPC__HTTP_ROUTE_UPGRADE) {
    int rc = upgrade_reply(h);
    return rc ? rc : UPGRADED;
  }
  int health = h->route == JRPC__HTTP_ROUTE_HEALTH;
  int state = !health || !h->host || !h->host->healthy
                  ? 1
                  : h->host->healthy(h->host_arg);
  int up = state != 0;
  int rc = head_begin(
      h, o, &hd, up ? 200 : 503,
      health ? json_type : "text/plain; version=0.0.4; charset=utf-8", NULL);
  if (rc)
    return rc;
  jrpc__outmark_t body = jrpc__out_mark(o);
  if (health) {
    static const char serving[] = "{\"status\":\"serving\"}\n";
    static const char draining[] = "{\"status\":\"draining\"}\n";
    static const char degraded[] = "{\"status\":\"degraded\"}\n";
    if (state == JRPC__HTTP_DEGRADED)
      jrpc__out_put(o, degraded, sizeof(degraded) - 1);
    else if (up)
      jrpc__out_put(o, serving, sizeof(serving) - 1);
    else
      jrpc__out_put(o, draining, sizeof(draining) - 1);
  } else if (h->host && h->host->metrics) {
    h->host->metrics(h->host_arg, o);
  }
  rc = head_end(o, &hd);
  if (!rc && h->p.method == HTTP_HEAD)
    jrpc__out_truncate(o, body);
  return rc;
}

/* One whole reply with its head: src's bytes as the body. */
static void framed(jrpc__http_t *h, jrpc__outbuf_t *o, jrpc__outbuf_t *src) {
  head_t hd;
  if (head_begin(h, o, &hd, 200, json_type, NULL) != 0)
    return;
  jrpc__out_append(o, src);
  jrpc__out_byte(o, '\n');
  head_end(o, &hd);
}

/* Runs the body through the engine with its head around the reply. */
static int rpc_reply(jrpc__http_t *h, const char *body, size_t n) {
  jrpc__stream_t *s = h->s;
  jrpc__engine_t *e = s->e;
  jrpc__outbuf_t *o = &s->out;
  head_t hd;
  int rc = head_begin(h, o, &hd, 200, json_type, NULL);
  if (rc)
    return rc;
  /* Replies that handlers finish during this dispatch (a deferred call
   * ended at once, or another of the connection's) are kept aside, each
   * with its head, and go after this one. */
  jrpc__outbuf_t side;
  jrpc__out_init(&side, &e->pool);
  jrpc__out_small_segments(&side);
  h->aside = &side;
  rc = jrpc__dispatch_frame(e, &s->sink, body, n, &s->peer);
  h->aside = NULL;
  jrpc__arena_reset(&e->arena);
  int wrote = jrpc__out_pos(o) > hd.body;
  if (wrote) {
    int rc2 = head_end(o, &hd);
    if (!rc)
      rc = rc2;
  } else {
    jrpc__out_truncate(o, hd.start);
  }
  int had_side = jrpc__out_pending(&side) > 0;
  if (had_side && jrpc__out_append(o, &side) && !rc)
    rc = JRPC_ENOMEM;
  jrpc__out_free(&side);
  if (s->fr.kind != JRPC_FRAMING_HTTP || wrote || had_side || rc)
    return rc;
  if (s->sink.waiting.next != &s->sink.waiting) {
    /* Deferred: the reply goes out when its calls finish (deliver), and
     * the requests behind this one wait for it. */
    h->awaiting = 1;
    return 0;
  }
  /* Notifications only: nothing to say, and HTTP says so. */
  return head_begin(h, o, &hd, 204, NULL, NULL);
}

void jrpc__http_deliver(jrpc__sink_t *sink, jrpc__outbuf_t *src) {
  jrpc__stream_t *s =
      (jrpc__stream_t *)(void *)((char *)sink - offsetof(jrpc__stream_t, sink));
  jrpc__http_t *h = s->http;
  if (h->aside) {
    framed(h, h->aside, src);
    return;
  }
  framed(h, &s->out, src);
  if (h->awaiting) {
    h->awaiting = 0;
    if (h->close_after)
      s->closing = 1;
  }
}

/* Unlike a reply, a notification answers no request: it leaves what the
 * connection waits for as it is, and goes straight out (a reply kept
 * aside during a dispatch is behind the frame being answered, and the
 * engine sends no notification in the middle of one). */
void jrpc__http_notify(jrpc__sink_t *sink, jrpc__outbuf_t *src) {
  jrpc__stream_t *s =
      (jrpc__stream_t *)(void *)((char *)sink - offsetof(jrpc__stream_t, sink));
  framed(s->http, &s->out, src);
}

int jrpc__http_timeout(jrpc__stream_t *s, uint32_t timeout_ms, uint64_t got) {
  jrpc__http_t *h = s->http;
  if (s->fr.kind == JRPC_FRAMING_HTTP)
    return fatal(h, 408);
  s->closing = 1;
  jrpc__outbuf_t *o = &s->out;
  head_t hd;
  int rc = head_begin(h, o, &hd, 0, NULL, NULL);
  if (rc)
    return rc;
  jrpc__dispatch_frame_timeout(s->e, s->fr.kind, o, timeout_ms, got);
  rc = head_end(o, &hd);
  return rc ? rc : JRPC__ECLOSE;
}

/* ---- the memo: a head the parser has already read ---- */

/* Clients send the same head again and again but for the Content-Length
 * digits, and the parser's cost is per byte (about 30 instructions, more
 * than the rest of a small call). So the head of a plain POST with a
 * Content-Length that the parser read and found good is kept, and a next
 * head that is the same bytes but for those digits (1 to 9 of them) is not
 * parsed again: the parser would make the same of it, but for the length,
 * which is read here. It is kept only while the parser has read nothing
 * since, so that h->p still says what it said of that head. Anything else
 * (another head, one not whole in the buffer yet, a body too large, a
 * head too long) goes to the parser, which drops the memo. */

static void memo_record(jrpc__http_t *h) {
  const http_parser *p = &h->p;
  const char *b = h->s->buf + h->s->rd;
  h->memo_len = 0;
  /* With auth, every head goes to the host, so none is skipped. */
  if (h->auth || h->origin_seen || h->status || h->route || h->expect ||
      h->close_after || p->upgrade || p->method != HTTP_POST ||
      (p->flags & F_CHUNKED) || !(p->flags & F_CONTENTLENGTH) ||
      h->head_len > JRPC__HTTP_MEMO_MAX || h->clen_at >= h->head_len)
    return;
  size_t k = 0;
  while (h->clen_at + k < h->head_len && is_digit(b[h->clen_at + k]))
    k++;
  if (k == 0 || k > 9)
    return;
  if (!h->memo && !(h->memo = malloc(JRPC__HTTP_MEMO_MAX)))
    return; /* parsed every time, then */
  memcpy(h->memo, b, h->head_len);
  h->memo_len = (uint16_t)h->head_len;
  h->memo_digits = (uint16_t)h->clen_at;
  h->memo_ndigits = (uint8_t)k;
}

/* 1 when the message at rd has the memo's head (whole in the buffer). */
static int memo_match(jrpc__http_t *h) {
  jrpc__stream_t *s = h->s;
  const char *b = s->buf + s->rd;
  size_t have = s->wr - s->rd;
  size_t pre = h->memo_digits;
  size_t post = h->memo_len - pre - h->memo_ndigits;
  if (have < pre + 1 + post || memcmp(b, h->memo, pre) != 0)
    return 0;
  uint64_t len = 0;
  size_t k = 0;
  for (; k < 9 && pre + k < have && is_digit(b[pre + k]); k++)
    len = len * 10 + (uint64_t)(b[pre + k] - '0');
  /* The memo's byte after the digits is none: a tenth digit fails here. */
  size_t head = pre + k + post;
  if (k == 0 || have < head ||
      memcmp(b + pre + k, h->memo + pre + h->memo_ndigits, post) != 0)
    return 0;
  if (head > h->max_head || len > s->e->lim.max_frame_bytes)
    return 0; /* the parser says what is wrong */
  h->head_len = head;
  h->memo_body = len;
  h->memo_hit = 1;
  h->memo_hits++;
  h->fresh = 0;
  return 1;
}

/* The body of a message whose head matched the memo: whole or awaited. */
static int memo_body(jrpc__http_t *h, int *whole) {
  jrpc__stream_t *s = h->s;
  size_t total = h->head_len + h->memo_body;
  if (s->wr - s->rd < total) {
    h->parsed = h->head_len;
    s->need = total; /* the body contiguous after the head */
    return 0;
  }
  h->parsed = total;
  h->body_len = h->memo_body;
  h->complete = 1;
  *whole = 1;
  return 0;
}

/* ---- the feed ---- */

/* What the parser said about the bytes given: 1 a message is whole, 0 it
 * wants more, or the reply for a broken one (JRPC__ECLOSE...). */
static int parse_more(jrpc__http_t *h, int *whole) {
  jrpc__stream_t *s = h->s;
  *whole = 0;
  size_t avail = s->wr - s->rd - h->parsed;
  if (!avail)
    return 0;
  if (h->memo_hit || (h->fresh && h->memo_len && memo_match(h)))
    return memo_body(h, whole);
  h->memo_len = 0; /* the parser reads this message */
  if (h->fresh) {
    /* What only the parser finds (a memo hit never asks for it): reset
     * here rather than per message, which a small call would pay for. */
    h->auth_seen = 0;
    h->auth_n = 0;
    h->why = NULL;
    h->origin_seen = 0;
    h->origin_n = 0;
    h->cors = NULL;
    h->ws_asked = h->ws_version13 = h->ws_key_n = 0;
  }
  if (h->fresh && s->fr.kind == JRPC_FRAMING_CONTENT_LENGTH) {
    /* The header block of LSP is an HTTP request's without the request
     * line: the parser gets one of ours first. */
    static const char line[] = "POST / HTTP/1.1\r\n";
    http_parser_execute(&h->p, &settings, line, sizeof(line) - 1);
  }
  h->fresh = 0;
  for (;;) {
    /* A head is read no further than max_header_bytes: what the parser
     * makes of the bytes after that never matters, so the status is the
     * same however the bytes arrive. */
    size_t n = s->wr - s->rd - h->parsed;
    if (!h->head_len && n > h->max_head - h->parsed)
      n = h->max_head - h->parsed;
    h->parsed +=
        http_parser_execute(&h->p, &settings, s->buf + s->rd + h->parsed, n);
    if (!h->head_done)
      break;
    h->head_done = 0;
    h->head_len = h->parsed + 1;
    http_parser_pause(&h->p, 0);
    int status = judge_head(h);
    if (status)
      return fatal(h, status);
  }
  enum http_errno err = HTTP_PARSER_ERRNO(&h->p);
  if (h->complete) {
    *whole = 1;
    return 0;
  }
  if (err != HPE_OK)
    return fatal(h, h->status                    ? h->status
                    : err == HPE_HEADER_OVERFLOW ? 431
                                                 : 400);
  if (!h->head_len) {
    if (h->parsed >= h->max_head)
      return fatal(h, 431);
    s->need = 0;
  } else if (!(h->p.flags & F_CHUNKED) && (h->p.flags & F_CONTENTLENGTH)) {
    /* The whole message in one buffer, so that the body is contiguous. */
    s->need = h->head_len + (size_t)h->p.content_length;
  } else if (h->parsed > h->head_len + h->body_len) {
    /* Chunked: what the chunk headers took is given back, so that the
     * buffer holds no more than the head and the body. */
    size_t gap = h->parsed - h->head_len - h->body_len;
    char *at = s->buf + s->rd + h->head_len + h->body_len;
    memmove(at, at + gap, s->wr - s->rd - h->parsed);
    s->wr -= gap;
    h->parsed -= gap;
    s->need = 0;
  }
  return 0;
}

/* After the 101: the stream goes on as websocket (the http state goes),
 * and what the client sent behind its handshake is read as frames. */
static int upgrade(jrpc__http_t *h) {
  jrpc__stream_t *s = h->s;
  jrpc__framing_conf_t conf = {.max_head = h->max_head,
                               .routes = h->routes,
                               .websocket = h->websocket,
                               .host = h->host,
                               .host_arg = h->host_arg};
  s->need = 0;
  if (jrpc__stream_switch(s, JRPC_FRAMING_WEBSOCKET, &conf) != 0)
    return JRPC_ENOMEM;
  return UPGRADED;
}

/* A whole message: its reply, and the next one may begin. */
static int answer(jrpc__http_t *h) {
  jrpc__stream_t *s = h->s;
  int rc;
  int http = s->fr.kind == JRPC_FRAMING_HTTP;
  if (http) {
    h->close_after = !http_should_keep_alive(&h->p) ||
                     (h->p.upgrade && h->route != JRPC__HTTP_ROUTE_UPGRADE);
    h->http10 = h->p.http_major == 1 && h->p.http_minor == 0;
  }
  if (h->status)
    rc = status_reply(h, h->status);
  else if (h->route)
    rc = route_reply(h);
  else
    rc = rpc_reply(h, s->buf + s->rd + h->head_len, h->body_len);
  if (!h->memo_hit)
    memo_record(h);
  s->rd += h->parsed;
  if (JRPC__UNLIKELY(rc == UPGRADED))
    return upgrade(h);
  s->need = 0;
  message_reset(h);
  http_parser_pause(&h->p, 0);
  if (!rc && http && h->close_after && !h->awaiting) {
    s->closing = 1;
    rc = JRPC__ECLOSE;
  }
  return rc;
}

int jrpc__http_feed(jrpc__stream_t *s, size_t n, int eof) {
  jrpc__http_t *h = s->http;
  int rc = 0;
  s->wr += n;
  s->held = 0;
  s->more = 0;
  if (s->closing)
    return JRPC__ECLOSE; /* (a deferred reply that ends it was sent) */
  uint32_t frames = 0;
  for (;;) {
    if (h->awaiting) {
      if (s->sink.waiting.next != &s->sink.waiting) {
        s->held = 1;
        break;
      }
      /* Its calls were notifications after all. */
      h->awaiting = 0;
      head_t hd;
      rc = head_begin(h, &s->out, &hd, 204, NULL, NULL);
      if (!rc && h->close_after) {
        s->closing = 1;
        rc = JRPC__ECLOSE;
      }
      if (rc)
        break;
    }
    if (s->closing) {
      rc = JRPC__ECLOSE;
      break;
    }
    if (jrpc__stream_must_yield(s, frames, eof))
      break;
    int whole = 0;
    if (!h->complete) {
      rc = parse_more(h, &whole);
      if (rc || !whole)
        break;
    }
    s->nframes++;
    rc = answer(h);
    frames++;
    if (rc == UPGRADED)
      return s->fx->feed(s, 0, eof); /* h is gone */
    if (rc)
      break;
  }
  if (s->buf && s->rd == s->wr && !h->parsed)
    jrpc__stream_release_input(s);
  return rc;
}
