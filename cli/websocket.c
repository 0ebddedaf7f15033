/* websocket.c - the ws:// and wss:// framing (RFC 6455), client side: the
 * opening handshake (a GET with Upgrade and a random key, its accept
 * checked), each request or batch one masked text frame with a mask of
 * its own, replies and notifications read as messages (fragments joined
 * where they lie in the buffer, within JC_MAX_FRAME), pings answered,
 * and the close handshake. What the server sends is checked as it comes:
 * a head of at most HEAD_MAX, unmasked frames, control frames whole. */
#include "call.h"
#include "jrpc.h"
#include "sha1.h"
#include "transport.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/random.h>

/* A handshake answer's head larger than this is refused. */
#define HEAD_MAX (64u << 10)

enum {
  OP_CONT = 0x0,
  OP_TEXT = 0x1,
  OP_BINARY = 0x2,
  OP_CLOSE = 0x8,
  OP_PING = 0x9,
  OP_PONG = 0xa,
};

/* RFC 6455, 1.3: what the server appends to our key before hashing. */
static const char guid[] = "258EAFA5-E914-47DA-95CA-C5AB0DC85B11";

static int random_bytes(void *p, size_t n) {
  if (getrandom(p, n, 0) != (ssize_t)n) {
    jc_warn("getrandom: no random bytes for the WebSocket");
    return JC_ERR;
  }
  return JC_OK;
}

/* One frame of ours: FIN, OP, masked with a new random key. */
static int send_frame(jc_conn *c, int op, const char *data, size_t n) {
  unsigned char *f = malloc(n + 14), *mask;
  size_t h = 2;
  if (!f) {
    jc_warn("out of memory for a %zu-byte request", n);
    return JC_ERR;
  }
  f[0] = (unsigned char)(0x80 | op);
  if (n < 126) {
    f[1] = (unsigned char)(0x80 | n);
  } else if (n <= 0xffff) {
    f[1] = 0x80 | 126;
    f[2] = (unsigned char)(n >> 8);
    f[3] = (unsigned char)n;
    h = 4;
  } else {
    f[1] = 0x80 | 127;
    for (int i = 0; i < 8; i++)
      f[2 + i] = (unsigned char)((uint64_t)n >> (56 - 8 * i));
    h = 10;
  }
  mask = f + h;
  int st = random_bytes(mask, 4);
  for (size_t i = 0; st == JC_OK && i < n; i++)
    f[h + 4 + i] = (unsigned char)data[i] ^ mask[i & 3];
  if (st == JC_OK)
    st = jc_write_all(c, (const char *)f, h + 4 + n);
  free(f);
  return st;
}

int jc_ws_send(jc_conn *c, const char *data, size_t n) {
  return send_frame(c, OP_TEXT, data, n);
}

/* No more requests, and once no reply is OWED (a notification, a batch
 * of them, or every reply in): the close, whose answer tells that the
 * server read all before it. Sent earlier, it would cut off the replies
 * of deferred calls (the server sends nothing after its own close). */
void jc_ws_done(jc_conn *c, bool owed) {
  if (!owed && !c->ws.close_sent) {
    /* 1000: a normal close. */
    c->ws.close_sent = true;
    send_frame(c, OP_CLOSE, "\x03\xe8", 2);
  }
}

void jc_ws_close(jc_conn *c) {
  if (!c->ws.open || c->ws.close_seen)
    return;
  jc_ws_done(c, false);
  /* The server's close in answer, for a second at most: it ends the
   * handshake; replies still coming are dropped. */
  clock_gettime(CLOCK_MONOTONIC, &c->deadline);
  c->deadline.tv_sec++;
  c->forever = false;
  const char *frame;
  size_t n;
  while (!c->ws.close_seen && jc_recv(c, &frame, &n) == JC_OK)
    ;
}

/* The server's close: its status said unless it is a normal one. */
static void closed_by_server(jc_conn *c, const unsigned char *p, size_t n) {
  unsigned status = n >= 2 ? (unsigned)p[0] << 8 | p[1] : 1005;
  char reason[200];
  jc_excerpt((const char *)p + (n >= 2 ? 2 : n), n >= 2 ? n - 2 : 0, reason,
             sizeof reason);
  static const struct {
    unsigned status;
    const char *means;
  } why[] = {
      {1001, "it went away (a keepalive ping unanswered, or it stops)"},
      {1002, "a protocol error"},
      {1007, "a text message that is not UTF-8"},
      {1008, "a message not whole in time (frame_timeout_ms)"},
      {1009, "a message over its max_frame_bytes"},
      {1011, "an error of its own"},
  };
  const char *means = "";
  for (size_t i = 0; i < sizeof why / sizeof why[0]; i++)
    if (why[i].status == status)
      means = why[i].means;
  c->ws.close_seen = true;
  if (status != 1000 && status != 1005)
    jc_warn("%s: the server closed the WebSocket with status %u%s%s%s%s",
            jc_endpoint_desc(c->ep), status, *means ? ": " : "", means,
            *reason ? ": " : "", reason);
  if (!c->ws.close_sent) {
    c->ws.close_sent = true;
    send_frame(c, OP_CLOSE, (const char *)p, n >= 2 ? 2 : 0);
  }
}

static int bad(const jc_conn *c, const char *what) {
  jc_warn("%s: malformed WebSocket frame from the server: %s",
          jc_endpoint_desc(c->ep), what);
  return -1;
}

/* The frame at buf[pos..]: its opcode, FIN, header and payload length;
 * 0 when not whole yet, -1 on an error said. */
static int frame_at(const jc_conn *c, size_t pos, int *op, bool *fin,
                    size_t *hlen, size_t *plen) {
  const unsigned char *b = (const unsigned char *)c->buf + pos;
  size_t have = c->len - pos;
  if (have < 2)
    return 0;
  *fin = b[0] & 0x80;
  *op = b[0] & 0x0f;
  if (b[0] & 0x70)
    return bad(c, "a reserved bit is set (no extension was agreed)");
  if (b[1] & 0x80)
    return bad(c, "it is masked (only a client masks)");
  uint64_t len = b[1] & 0x7f;
  *hlen = len == 126 ? 4 : len == 127 ? 10 : 2;
  if (have < *hlen)
    return 0;
  if (len == 126)
    len = (uint64_t)b[2] << 8 | b[3];
  else if (len == 127)
    for (int i = 0, k = 2; i < 8; i++, k++)
      len = (i ? len << 8 : 0) | b[k];
  if (*op >= OP_CLOSE && (!*fin || len > 125))
    return bad(c, "a control frame fragmented or over 125 bytes");
  if (len > JC_MAX_FRAME) {
    jc_warn("%s: the server announced a %llu-byte message (at most %u)",
            jc_endpoint_desc(c->ep), (unsigned long long)len, JC_MAX_FRAME);
    return -1;
  }
  *plen = (size_t)len;
  return have - *hlen < *plen ? 0 : 1;
}

/* Whether OP may come at POS (0: a message's first frame). */
static const char *misplaced(int op, size_t pos) {
  if (pos == 0 && op == OP_CONT)
    return "a continuation with no message to continue";
  if (pos && op != OP_CONT)
    return "a new message inside a fragmented one";
  if (op != OP_CONT && op != OP_TEXT && op != OP_BINARY)
    return "a reserved opcode";
  return NULL;
}

/* The message's fragments, checked whole up to buf[end), joined where
 * they lie: the payloads moved down to follow the first one's. */
static void join(jc_conn *c, size_t end) {
  size_t pos = 0, w = 0, hlen, plen;
  int op;
  bool fin;
  while (pos < end) {
    frame_at(c, pos, &op, &fin, &hlen, &plen);
    if (pos == 0)
      w = hlen;
    else
      memmove(c->buf + w, c->buf + pos + hlen, plen);
    w += plen;
    pos += hlen + plen;
  }
}

int jc_ws_frame(jc_conn *c, bool at_eof, size_t *skip, size_t *n,
                size_t *total) {
  (void)at_eof;
  size_t pos = 0, payload = 0, hlen, plen;
  int op;
  bool fin;
  for (;;) {
    int whole = frame_at(c, pos, &op, &fin, &hlen, &plen);
    if (whole <= 0)
      return whole;
    const char *p = c->buf + pos + hlen;
    if (op >= OP_CLOSE) {
      if (op == OP_CLOSE) {
        closed_by_server(c, (const unsigned char *)p, plen);
        *skip = *n = 0;
        *total = c->len; /* nothing follows a close */
        return 2;
      }
      if (op == OP_PING && send_frame(c, OP_PONG, p, plen) != JC_OK)
        return -1;
      /* Answered (or a pong, unasked for): gone from the buffer, so that
       * a message's fragments around it lie one after the other. */
      memmove(c->buf + pos, p + plen, c->len - pos - hlen - plen);
      c->len -= hlen + plen;
      continue;
    }
    const char *wrong = misplaced(op, pos);
    if (wrong)
      return bad(c, wrong);
    if (plen > JC_MAX_FRAME - payload) {
      jc_warn("%s: a fragmented message over %u bytes", jc_endpoint_desc(c->ep),
              JC_MAX_FRAME);
      return -1;
    }
    if (pos == 0)
      *skip = hlen;
    payload += plen;
    pos += hlen + plen;
    if (fin) {
      join(c, pos);
      *n = payload;
      *total = pos;
      return 1;
    }
  }
}

/* The value of header NAME in the head buf[0..end), or NULL; *n its length. */
static const char *header(const jc_conn *c, size_t end, const char *name,
                          size_t *n) {
  size_t pos = 0, ln, k = strlen(name);
  const char *l;
  jc_next_line(c, &pos, &l, &ln); /* the status line */
  while (pos < end && jc_next_line(c, &pos, &l, &ln) && ln) {
    if (ln <= k || l[k] != ':' || strncasecmp(l, name, k))
      continue;
    const char *v = l + k + 1, *e = l + ln;
    while (v < e && (*v == ' ' || *v == '\t'))
      v++;
    while (e > v && (e[-1] == ' ' || e[-1] == '\t'))
      e--;
    *n = (size_t)(e - v);
    return v;
  }
  return NULL;
}

/* The answer to the handshake was not 101: the reply read as HTTP says
 * why (jc_http_frame: 401 in terms of the token, the JSON-RPC error's
 * message otherwise), then what the status means for a WebSocket. */
static int refused(jc_conn *c, int status) {
  c->pending = 1;
  int kind;
  bool at_eof = false;
  while ((kind = jc_http_frame(c, at_eof)) == 0) {
    long r = jc_read_more(c, "waiting for the handshake's answer");
    if (r < 0)
      return (int)r;
    at_eof = r == 0;
  }
  const char *desc = jc_endpoint_desc(c->ep);
  if (kind > 0)
    jc_warn("%s: the server answered the WebSocket handshake with HTTP %d, "
            "not 101: is this a WebSocket URL? (http:// speaks POST)",
            desc, status);
  else if (status == 400)
    jc_warn("%s: no WebSocket here: the listener needs websocket = yes "
            "(http://%s speaks POST to it)",
            desc, c->ep->host);
  else if (status == 403)
    jc_warn("%s: the listener refused the Origin sent (-H Origin: ...): "
            "only the origins its `origins` lists may open a WebSocket",
            desc);
  else if (status == 426)
    jc_warn("%s: the server wants another WebSocket version than 13", desc);
  return JC_ERR;
}

int jc_ws_open(jc_conn *c) {
  const jc_endpoint *ep = c->ep;
  unsigned char raw[16];
  char key[25], extra[160], want[29];
  uint8_t digest[JRPC__SHA1_LEN];
  if (random_bytes(raw, sizeof raw) != JC_OK)
    return JC_ERR;
  key[jrpc__base64(raw, sizeof raw, key)] = '\0';
  snprintf(extra, sizeof extra,
           "Upgrade: websocket\r\n"
           "Connection: Upgrade\r\n"
           "Sec-WebSocket-Key: %s\r\n"
           "Sec-WebSocket-Version: 13\r\n",
           key);
  size_t h;
  char *head = jc_http_head(ep, "GET", extra, &h);
  if (!head)
    return JC_ERR;
  int st = jc_write_all(c, head, h);
  explicit_bzero(head, h); /* the token */
  free(head);
  if (st != JC_OK)
    return st;
  /* The answer's head, read whole (the frames may follow it at once). */
  char *end;
  while (!(end = c->len ? memmem(c->buf, c->len, "\r\n\r\n", 4) : NULL)) {
    /* Not HTTP (a stream listener's error reply): refused() says what. */
    if (c->len && memcmp(c->buf, "HTTP/", c->len < 5 ? c->len : 5))
      break;
    if (c->len > HEAD_MAX) {
      jc_warn("%s: the handshake's answer has a head over 64 KiB",
              jc_endpoint_desc(ep));
      return JC_ERR;
    }
    long r = jc_read_more(c, "waiting for the handshake's answer");
    if (r < 0)
      return (int)r;
    if (r == 0)
      break;
  }
  int status =
      c->len > 12 && !memcmp(c->buf, "HTTP/1.", 7) ? atoi(c->buf + 9) : 0;
  if (status != 101)
    return refused(c, status);
  size_t hn = (size_t)(end - c->buf) + 4, an = 0, un = 0;
  const char *accept = header(c, hn, "sec-websocket-accept", &an);
  const char *upgrade = header(c, hn, "upgrade", &un);
  jrpc__sha1_2(key, strlen(key), guid, sizeof guid - 1, digest);
  want[jrpc__base64(digest, sizeof digest, want)] = '\0';
  if (!upgrade || un != 9 || strncasecmp(upgrade, "websocket", 9) || !accept ||
      an != strlen(want) || memcmp(accept, want, an)) {
    jc_warn("%s: the server's 101 answer is not a WebSocket's (its "
            "Upgrade or Sec-WebSocket-Accept is missing or wrong)",
            jc_endpoint_desc(ep));
    return JC_ERR;
  }
  memmove(c->buf, c->buf + hn, c->len - hn);
  c->len -= hn;
  c->ws.open = true;
  return JC_OK;
}
