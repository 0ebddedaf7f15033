/* ws.c - the websocket framing; see ws.h.
 *
 * wslay's event API fits the engine's host contract (its recv callback is
 * handed bytes from the stream's buffer, its send callback appends to the
 * output chain), but not its pooled zero-copy buffers: it copies every
 * frame into its own buffer, unmasks and checks UTF-8 a byte at a time,
 * and mallocs per frame and per message (3.26x a newline call's
 * instructions for a small call, BENCHMARKS.md). So the common frame (a
 * whole, final, masked text or binary frame) is read here where it lies,
 * as a newline frame is: unmasked in place with the CPU's widest vectors
 * (ws_mask.h), which also tell whether it is all ASCII (then it needs no
 * UTF-8 check), and dispatched from the stream's buffer.
 * Every other frame (control frames, fragments, frames over the limit or
 * breaking the protocol) goes to wslay, one whole frame at a time so that
 * its reader always begins at a frame's start; it reassembles fragments
 * within max_frame_bytes, checks them and answers pings and closes.
 *
 * Its send side copies each queued message twice. So data frames (every
 * reply) are written here instead: the reply is written by the engine straight
 * into the chain behind 4 bytes of room, and the header (RFC 6455, 5.2,
 * server frames unmasked) is put into that room once the reply's length is
 * known: no copy for a reply under 64 KiB, one memmove of at most 125
 * bytes for a short one. Control frames (pong, ping, close) go through
 * wslay's queue: they are rare and short. */
#include "ws.h"

#include <stdlib.h>
#include <string.h>
#include <wslay/wslay.h>

#include "common.h"
#include "sha1.h"
#include "ws_mask.h"

typedef struct jrpc__ws {
  wslay_event_context_ptr ctx;
  jrpc__stream_t *s;
  /* Replies finished during a dispatch (another of the connection's
   * deferred calls ended by this one) go here, to follow the reply being
   * written (as http.c's aside). */
  jrpc__outbuf_t *aside;
  int rc;               /* an error from inside a wslay callback, or 0 */
  int eof;              /* of the feed under way */
  uint32_t frames;      /* messages answered in the feed under way */
  uint8_t heard;        /* bytes came in since the last keepalive tick */
  uint8_t midway;       /* a data message has begun and is not whole yet */
  uint64_t taken;       /* bytes taken in since the last whole data message */
  size_t limit;         /* on_recv hands wslay bytes up to here (one frame) */
  jrpc__outbuf_t side;  /* aside's chain, made once (empty between uses) */
  uint8_t ping_out;     /* a keepalive ping is unanswered */
  uint64_t quiet_since; /* the tick that last heard the peer, ms */
  uint64_t ping_at;     /* when the unanswered ping went out, ms */
} jrpc__ws_t;

static const char ws_guid[] = "258EAFA5-E914-47DA-95CA-C5AB0DC85B11";

void jrpc__ws_accept(const char *key, size_t n, char out[JRPC__WS_ACCEPT_LEN]) {
  uint8_t d[JRPC__SHA1_LEN];
  jrpc__sha1_2(key, n, ws_guid, sizeof(ws_guid) - 1, d);
  jrpc__base64(d, sizeof(d), out);
}

static int b64_char(char c) {
  return (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') ||
         (c >= '0' && c <= '9') || c == '+' || c == '/';
}

int jrpc__ws_key_valid(const char *key, size_t n) {
  /* 16 bytes in base64: 22 characters and "==" (RFC 6455, 4.1). */
  if (n != 24 || key[22] != '=' || key[23] != '=')
    return 0;
  for (size_t i = 0; i < 22; i++)
    if (!b64_char(key[i]))
      return 0;
  /* The last character holds 2 bits of data and 4 of padding: zeros. */
  return strchr("AQgw", key[21]) != NULL;
}

static jrpc__ws_t *of_ctx(void *user_data) {
  return (jrpc__ws_t *)user_data;
}

/* ---- writing data frames ---- */

/* The header of an unmasked, final text frame of n payload bytes into d:
 * its length (2, 4 or 10). */
static size_t text_header(uint8_t *d, uint64_t n) {
  d[0] = 0x80 | WSLAY_TEXT_FRAME;
  if (n < 126) {
    d[1] = (uint8_t)n;
    return 2;
  }
  if (n < 65536) {
    d[1] = 126;
    d[2] = (uint8_t)(n >> 8);
    d[3] = (uint8_t)n;
    return 4;
  }
  d[1] = 127;
  for (int i = 0; i < 8; i++)
    d[2 + i] = (uint8_t)(n >> (56 - 8 * i));
  return 10;
}

/* src's bytes onto o as one text message; nothing when memory runs out. */
static void put_message(jrpc__outbuf_t *o, jrpc__outbuf_t *src) {
  jrpc__outmark_t m = jrpc__out_mark(o);
  uint8_t hd[10];
  size_t k = text_header(hd, jrpc__out_pending(src));
  jrpc__out_put(o, hd, k);
  jrpc__out_append(o, src);
  if (o->oom) {
    jrpc__out_truncate(o, m);
    o->oom = 0;
  }
}

void jrpc__ws_deliver(jrpc__sink_t *sink, jrpc__outbuf_t *src) {
  jrpc__stream_t *s =
      (jrpc__stream_t *)(void *)((char *)sink - offsetof(jrpc__stream_t, sink));
  jrpc__ws_t *ws = s->ws;
  if (ws && (s->closing || (ws->ctx && wslay_event_get_close_sent(ws->ctx))))
    return; /* nothing may follow a close */
  put_message(ws && ws->aside ? ws->aside : &s->out, src);
}

/* The bytes of o from mark m to its end, appended to dst. */
static void copy_from(jrpc__outbuf_t *o, jrpc__outmark_t m,
                      jrpc__outbuf_t *dst) {
  for (jrpc__seg_t *g = m.seg; g; g = g->next) {
    const char *from = g == m.seg ? m.p : g->data;
    const char *to = g == o->tail ? o->p : g->data + g->len;
    jrpc__out_put(dst, from, (size_t)(to - from));
    if (g == o->tail)
      break;
  }
}

/* Room for a reply's header; asked for with more behind it (as much as
 * the chain gives contiguously: 64 bytes), so that a short reply usually
 * lies in the same segment and can be moved up over the room's unused
 * half (put_header). */
#define ROOM 4
#define SHORT_ROOM 64

/* The reply written from `body` (the 4 bytes at room before it) gets its
 * header: in the room (126 to 65535 bytes), in the room's first 2 bytes
 * after the reply moved up (under 126 bytes, in the room's segment), or
 * with the reply copied once behind its header (64 KiB or more, or a
 * short one across segments: rare). */
static int put_header(jrpc__stream_t *s, jrpc__outmark_t start,
                      jrpc__outmark_t body, char *room, uint64_t len) {
  jrpc__outbuf_t *o = &s->out;
  uint8_t hd[10];
  size_t k = text_header(hd, len);
  if (k == 4) {
    memcpy(room, hd, 4);
    return 0;
  }
  if (k == 2 && o->tail == body.seg) {
    memmove(room + 2, room + 4, len);
    memcpy(room, hd, 2);
    o->p -= 2;
    return 0;
  }
  jrpc__outbuf_t big;
  jrpc__out_init(&big, &s->e->pool);
  copy_from(o, body, &big);
  jrpc__out_truncate(o, start);
  int rc = big.oom ? JRPC_ENOMEM : 0;
  if (!rc) {
    jrpc__out_put(o, hd, k);
    jrpc__out_append(o, &big);
    if (o->oom) {
      jrpc__out_truncate(o, start);
      o->oom = 0;
      rc = JRPC_ENOMEM;
    }
  }
  jrpc__out_free(&big);
  return rc;
}

/* Runs one message through the engine, its reply framed in place. */
static int answer(jrpc__ws_t *ws, const char *msg, size_t n) {
  jrpc__stream_t *s = ws->s;
  jrpc__engine_t *e = s->e;
  jrpc__outbuf_t *o = &s->out;
  jrpc__outmark_t start = jrpc__out_mark(o);
  char *room = jrpc__out_room(o, SHORT_ROOM);
  if (!room || o->oom)
    return JRPC_ENOMEM;
  o->p = room + ROOM;
  jrpc__outmark_t body = jrpc__out_mark(o);
  ws->aside = &ws->side;
  int rc = jrpc__dispatch_frame(e, &s->sink, msg, n, &s->peer);
  ws->aside = NULL;
  jrpc__arena_reset(&e->arena);
  uint64_t len = jrpc__out_pos(o) - body.pos;
  /* The reply ends with the newline framing's '\n', not sent here. */
  if (len && !o->oom && o->p > o->tail->data && o->p[-1] == '\n') {
    o->p--;
    len--;
  }
  if (o->oom) {
    jrpc__out_truncate(o, start);
    o->oom = 0;
    rc = rc ? rc : JRPC_ENOMEM;
  } else if (len) {
    int rc2 = put_header(s, start, body, room, len);
    rc = rc ? rc : rc2;
  } else {
    jrpc__out_truncate(o, start); /* notifications, or deferred */
  }
  if (ws->side.head) { /* it has segments only while it holds replies */
    if (jrpc__out_append(o, &ws->side) && !rc)
      rc = JRPC_ENOMEM;
    jrpc__out_release_idle(&ws->side);
  }
  return rc;
}

/* ---- wslay's callbacks ---- */

static ssize_t on_recv(wslay_event_context_ptr ctx, uint8_t *buf, size_t len,
                       int flags, void *user_data) {
  (void)flags;
  jrpc__ws_t *ws = of_ctx(user_data);
  jrpc__stream_t *s = ws->s;
  size_t avail = ws->limit > s->rd ? ws->limit - s->rd : 0;
  if (ws->rc || !avail) {
    wslay_event_set_error(ctx, WSLAY_ERR_WOULDBLOCK);
    return -1;
  }
  size_t k = len < avail ? len : avail;
  memcpy(buf, s->buf + s->rd, k);
  s->rd += k;
  ws->taken += k;
  return (ssize_t)k;
}

static ssize_t on_send(wslay_event_context_ptr ctx, const uint8_t *data,
                       size_t len, int flags, void *user_data) {
  (void)flags;
  jrpc__ws_t *ws = of_ctx(user_data);
  if (jrpc__out_put(&ws->s->out, data, len) != 0) {
    ws->rc = JRPC_ENOMEM;
    wslay_event_set_error(ctx, WSLAY_ERR_CALLBACK_FAILURE);
    return -1;
  }
  return (ssize_t)len;
}

static void on_frame_start(wslay_event_context_ptr ctx,
                           const struct wslay_event_on_frame_recv_start_arg *a,
                           void *user_data) {
  (void)ctx;
  /* A data message is under way (control frames, pongs among them, come
   * whole and do not stop its clock). */
  if (!wslay_is_ctrl_frame(a->opcode))
    of_ctx(user_data)->midway = 1;
}

static void on_message(wslay_event_context_ptr ctx,
                       const struct wslay_event_on_msg_recv_arg *a,
                       void *user_data) {
  jrpc__ws_t *ws = of_ctx(user_data);
  jrpc__stream_t *s = ws->s;
  if (a->opcode == WSLAY_PONG) {
    ws->ping_out = 0;
    return;
  }
  if (a->opcode == WSLAY_PING) {
    /* wslay queued its pong before telling: out now, in the order of what
     * it answers among the replies and closes, however the bytes were cut
     * into reads. */
    if (!ws->rc && wslay_event_want_write(ctx) && wslay_event_send(ctx) != 0)
      ws->rc = JRPC_ENOMEM;
    return;
  }
  if (wslay_is_ctrl_frame(a->opcode))
    return; /* a close: wslay answers it */
  ws->midway = 0;
  ws->taken = 0;
  if (ws->rc || wslay_event_get_close_sent(ctx))
    return;
  s->nframes++;
  ws->frames++;
  /* The parsers read up to JRPC__PAD bytes past a frame's end (bufpool.h),
   * and wslay's buffer is the message's size: the message goes into a
   * pooled buffer first. */
  size_t cap;
  char *p = jrpc__bufpool_get(&s->e->pool, a->msg_length + 1, &cap);
  if (!p) {
    ws->rc = JRPC_ENOMEM;
    return;
  }
  if (a->msg_length) /* an empty message has no buffer */
    memcpy(p, a->msg, a->msg_length);
  ws->rc = answer(ws, p, a->msg_length);
  jrpc__bufpool_put(&s->e->pool, p, cap);
}

static const struct wslay_event_callbacks callbacks = {
    .recv_callback = on_recv,
    .send_callback = on_send,
    .on_frame_recv_start_callback = on_frame_start,
    .on_msg_recv_callback = on_message,
};

/* ---- the framing's operations ---- */

int jrpc__ws_open(jrpc__stream_t *s, const jrpc__framing_conf_t *conf) {
  (void)conf;
  jrpc__ws_t *ws = calloc(1, sizeof(*ws));
  if (!ws)
    return JRPC_ENOMEM;
  ws->s = s; /* wslay's context comes with the first frame for it */
  jrpc__out_init(&ws->side, &s->e->pool);
  jrpc__out_small_segments(&ws->side);
  s->ws = ws;
  s->kept = 0;
  return 0;
}

void jrpc__ws_close(jrpc__stream_t *s) {
  jrpc__ws_t *ws = s->ws;
  if (!ws)
    return;
  if (ws->ctx)
    wslay_event_context_free(ws->ctx);
  jrpc__out_free(&ws->side);
  free(ws);
  s->ws = NULL;
  s->kept = 0;
}

/* What wslay queued (pongs, closes) onto the output; after a close went
 * out, the connection ends: JRPC__ECLOSE. */
static int send_queued(jrpc__ws_t *ws) {
  if (!ws->ctx)
    return 0;
  if (wslay_event_want_write(ws->ctx) && wslay_event_send(ws->ctx) != 0)
    return JRPC_ENOMEM; /* only on_send fails, for want of memory */
  if (wslay_event_get_close_sent(ws->ctx)) {
    ws->s->closing = 1;
    return JRPC__ECLOSE;
  }
  return 0;
}

/* wslay's frame reader refused a frame (a reserved opcode, a control frame
 * fragmented or over 125 bytes): wslay queued a close without a status
 * and stopped. The status is 1002, written here instead of that close. */
static int refuse_frame(jrpc__ws_t *ws) {
  jrpc__stream_t *s = ws->s;
  static const char close_1002[] = {(char)0x88, 2, (char)(1002 >> 8),
                                    (char)(1002 & 0xff)};
  wslay_event_shutdown_write(ws->ctx);
  s->rd = s->wr;
  s->kept = 0;
  s->closing = 1;
  if (jrpc__out_put(&s->out, close_1002, sizeof(close_1002)) != 0)
    return JRPC_ENOMEM;
  if (s->buf)
    jrpc__stream_release_input(s);
  return JRPC__ECLOSE;
}

/* ---- the fast path: whole data frames read where they lie ---- */

/* 1 if the n bytes at p are UTF-8 (RFC 3629: no overlong forms, no
 * surrogates, nothing past U+10FFFF); ASCII 8 bytes at a time. */
static int utf8_valid(const unsigned char *p, size_t n) {
  size_t i = 0;
  while (i < n) {
    uint64_t w;
    if (n - i >= 8 && (memcpy(&w, p + i, 8), !(w & 0x8080808080808080ull))) {
      i += 8;
      continue;
    }
    unsigned c = p[i];
    if (c < 0x80) {
      i++;
      continue;
    }
    size_t k;
    unsigned lo = 0x80, hi = 0xbf; /* the second byte's range */
    if (c >= 0xc2 && c <= 0xdf) {
      k = 1;
    } else if (c >= 0xe0 && c <= 0xef) {
      k = 2;
      lo = c == 0xe0 ? 0xa0 : 0x80;
      hi = c == 0xed ? 0x9f : 0xbf;
    } else if (c >= 0xf0 && c <= 0xf4) {
      k = 3;
      lo = c == 0xf0 ? 0x90 : 0x80;
      hi = c == 0xf4 ? 0x8f : 0xbf;
    } else {
      return 0;
    }
    if (n - i - 1 < k || p[i + 1] < lo || p[i + 1] > hi)
      return 0;
    for (size_t j = 2; j <= k; j++)
      if ((p[i + j] & 0xc0) != 0x80)
        return 0;
    i += k + 1;
  }
  return 1;
}

static int close_with(jrpc__stream_t *s, uint16_t status, const char *why);

/* The frames read here: final, masked, no RSV bit, and text or binary
 * with no fragmented message under way in wslay, or a pong. */
enum { FAST_DATA = 1, FAST_PONG = 2 };

/* The frame at rd: its header's length once the header is buffered (0
 * before), its payload's, and whether it is read here (FAST_*). */
static size_t frame_at(const jrpc__ws_t *ws, uint64_t *len, int *fast) {
  const jrpc__stream_t *s = ws->s;
  const unsigned char *b = (const unsigned char *)s->buf + s->rd;
  size_t avail = s->wr - s->rd, hdr = 2;
  if (avail < 2)
    return 0;
  uint64_t n = b[1] & 0x7f;
  if (n == 126)
    hdr = 4;
  else if (n == 127)
    hdr = 10;
  hdr += (b[1] & 0x80) ? 4 : 0;
  if (avail < hdr)
    return 0;
  if (n == 126) {
    n = (uint64_t)b[2] << 8 | b[3];
  } else if (n == 127) {
    n = 0;
    for (int i = 2; i < 10; i++)
      n = n << 8 | b[i];
  }
  *len = n;
  int op = b[0] & 0x0f;
  int plain = (b[0] & 0xf0) == 0x80 && (b[1] & 0x80); /* final, masked */
  *fast = !plain                                ? 0
          : (op == 1 || op == 2) && !ws->midway ? FAST_DATA
          : op == WSLAY_PONG && n <= 125        ? FAST_PONG
                                                : 0;
  return hdr;
}

/* One data frame answered where it lies (the pool's buffers keep
 * JRPC__PAD bytes readable past it, as for newline frames). */
static int fast_frame(jrpc__ws_t *ws, size_t hdr, size_t n) {
  jrpc__stream_t *s = ws->s;
  unsigned char *b = (unsigned char *)s->buf + s->rd;
  int ascii = jrpc__ws_unmask(b + hdr, n, b + hdr - 4);
  if ((b[0] & 0x0f) == WSLAY_TEXT_FRAME && !ascii && !utf8_valid(b + hdr, n)) {
    s->rd = s->wr;
    return close_with(s, WSLAY_CODE_INVALID_FRAME_PAYLOAD_DATA,
                      "a text message that is not UTF-8");
  }
  s->nframes++;
  ws->frames++;
  s->rd += hdr + n; /* taken off before the dispatch, as stream.c does */
  return answer(ws, (const char *)b + hdr, n);
}

/* Frames other than those (control frames, fragments, frames breaking
 * the protocol) go to wslay one whole frame at a time, so that its reader
 * always starts at a frame's beginning. */
static int wslay_frame(jrpc__ws_t *ws, size_t whole) {
  jrpc__stream_t *s = ws->s;
  if (!ws->ctx) {
    /* Made on first need: a connection that sends whole data frames and
     * answers pings holds none (two 4 KiB buffers of wslay's). */
    if (wslay_event_context_server_init(&ws->ctx, &callbacks, ws) != 0) {
      ws->ctx = NULL;
      return JRPC_ENOMEM;
    }
    wslay_event_config_set_max_recv_msg_length(ws->ctx,
                                               s->e->lim.max_frame_bytes);
  }
  ws->limit = s->rd + whole;
  int r = wslay_event_recv(ws->ctx);
  ws->limit = 0;
  if (r == WSLAY_ERR_CALLBACK_FAILURE && !ws->rc)
    return refuse_frame(ws);
  if (r != 0 && !ws->rc)
    ws->rc = JRPC_ENOMEM; /* its allocations */
  int rc = ws->rc;
  ws->rc = 0;
  return rc;
}

int jrpc__ws_feed(jrpc__stream_t *s, size_t n, int eof) {
  jrpc__ws_t *ws = s->ws;
  s->wr += n;
  s->held = 0;
  s->more = 0;
  if (s->closing)
    return JRPC__ECLOSE;
  if (n)
    ws->heard = 1;
  ws->eof = eof;
  ws->frames = 0;
  int rc = 0;
  while (!rc && s->wr > s->rd) {
    if (ws->ctx && !wslay_event_get_read_enabled(ws->ctx)) {
      s->rd = s->wr; /* after a close: what follows is not read */
      break;
    }
    if (jrpc__stream_must_yield(s, ws->frames, eof))
      break;
    uint64_t len = 0;
    int fast = 0;
    size_t hdr = frame_at(ws, &len, &fast);
    if (!hdr) {
      s->need = 0;
      break;
    }
    if (len > s->e->lim.max_frame_bytes) {
      /* Refused at its header (wslay would wait for a payload byte). */
      s->rd = s->wr;
      rc = close_with(s, WSLAY_CODE_MESSAGE_TOO_BIG,
                      "a message over max_frame_bytes");
      break;
    }
    if (s->wr - s->rd < hdr + len) {
      s->need = hdr + (size_t)len; /* whole in the buffer, then read */
      break;
    }
    s->need = 0;
    if (fast == FAST_PONG) {
      ws->ping_out = 0; /* our keepalive answered */
      s->rd += hdr + (size_t)len;
      continue;
    }
    rc = fast ? fast_frame(ws, hdr, (size_t)len)
              : wslay_frame(ws, hdr + (size_t)len);
  }
  if (rc == JRPC__ECLOSE || rc == JRPC_ENOMEM) {
    if (s->buf && s->rd == s->wr)
      jrpc__stream_release_input(s);
    return rc;
  }
  /* For the frame clock: a message begun and not whole. */
  s->kept = ws->midway ? (ws->taken ? ws->taken : 1) : 0;
  int rc2 = send_queued(ws);
  if (!rc)
    rc = rc2;
  if (s->buf && s->rd == s->wr)
    jrpc__stream_release_input(s);
  return rc;
}

/* A control frame of ours (a ping, a close) onto the output: opcode and
 * a payload of at most 125 bytes. */
static int put_control(jrpc__stream_t *s, int op, const char *p, size_t n) {
  char hd[2] = {(char)(0x80 | op), (char)n};
  jrpc__out_put(&s->out, hd, 2);
  jrpc__out_put(&s->out, p, n);
  return s->out.oom ? JRPC_ENOMEM : 0;
}

/* A close frame with status and reason (what wslay owes goes first, and
 * wslay sends nothing after), then the connection ends. */
static int close_with(jrpc__stream_t *s, uint16_t status, const char *why) {
  jrpc__ws_t *ws = s->ws;
  int rc = ws->ctx && !s->closing ? send_queued(ws) : 0;
  if (ws->ctx)
    wslay_event_shutdown_write(ws->ctx);
  if (!s->closing) {
    char body[125];
    size_t n = strlen(why);
    n = n > sizeof(body) - 2 ? sizeof(body) - 2 : n;
    body[0] = (char)(status >> 8);
    body[1] = (char)(status & 0xff);
    memcpy(body + 2, why, n);
    if (!rc)
      rc = put_control(s, WSLAY_CONNECTION_CLOSE, body, n + 2);
  }
  s->closing = 1;
  return rc == JRPC_ENOMEM ? rc : JRPC__ECLOSE;
}

int jrpc__ws_timeout(jrpc__stream_t *s, uint32_t timeout_ms, uint64_t got) {
  (void)timeout_ms;
  (void)got;
  return close_with(s, WSLAY_CODE_POLICY_VIOLATION,
                    "message incomplete after frame_timeout_ms");
}

int jrpc__ws_goodbye(jrpc__stream_t *s) {
  if (s->closing)
    return 0;
  return close_with(s, WSLAY_CODE_GOING_AWAY, "server stopping") == JRPC_ENOMEM
             ? 0
             : 1;
}

int jrpc__ws_keepalive(jrpc__stream_t *s, uint64_t now_ms, uint32_t ping_ms) {
  jrpc__ws_t *ws = s->ws;
  if (!ping_ms || s->closing)
    return 0;
  if (ws->heard || !ws->quiet_since) {
    ws->heard = 0;
    ws->ping_out = 0; /* whatever came in says the peer is there */
    ws->quiet_since = now_ms;
  }
  if (ws->ping_out) {
    if (now_ms - ws->ping_at < ping_ms)
      return 0;
    return close_with(s, WSLAY_CODE_GOING_AWAY, "ping unanswered");
  }
  if (now_ms - ws->quiet_since < ping_ms)
    return 0;
  ws->ping_out = 1;
  ws->ping_at = now_ms;
  int rc = put_control(s, WSLAY_PING, "", 0);
  return rc ? rc : 1;
}
