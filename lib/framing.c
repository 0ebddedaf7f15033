/* framing.c - the table of framings; see framing.h. */
#include "framing.h"

#include "http.h"
#include "stream.h"
#include "ws.h"

/* newline and length: cut by the frame codec (frame.h) in
 * jrpc__stream_feed, nothing of their own to keep. */
#define CODEC_FRAMING(n)                                                       \
  {                                                                            \
    .name = (n), .feed = jrpc__stream_feed, .deliver = jrpc__frame_deliver,    \
    .notify = jrpc__frame_deliver, .timeout = jrpc__stream_timeout             \
  }

/* http and content-length: the header framings of http.c, each reply in
 * request order behind its head. Only content-length, a stream of
 * messages, can carry one the client did not ask for. */
#define HEADER_FRAMING(n, push)                                                \
  {                                                                            \
    .name = (n), .init = jrpc__http_open, .feed = jrpc__http_feed,             \
    .deliver = jrpc__http_deliver, .notify = (push),                           \
    .timeout = jrpc__http_timeout, .free = jrpc__http_close, .in_order = 1     \
  }

const jrpc__framing_ops_t jrpc__framings[JRPC__FRAMINGS] = {
    [JRPC_FRAMING_NEWLINE] = CODEC_FRAMING("newline"),
    [JRPC_FRAMING_LENGTH] = CODEC_FRAMING("length"),
    [JRPC_FRAMING_HTTP] = HEADER_FRAMING("http", NULL),
    [JRPC_FRAMING_CONTENT_LENGTH] =
        HEADER_FRAMING("content-length", jrpc__http_notify),
    /* websocket: ws.c, on wslay; replies as they finish. */
    [JRPC_FRAMING_WEBSOCKET] = {.name = "websocket",
                                .init = jrpc__ws_open,
                                .feed = jrpc__ws_feed,
                                .deliver = jrpc__ws_deliver,
                                .notify = jrpc__ws_deliver,
                                .timeout = jrpc__ws_timeout,
                                .free = jrpc__ws_close,
                                .keepalive = jrpc__ws_keepalive,
                                .goodbye = jrpc__ws_goodbye},
};

int jrpc__stream_switch(jrpc__stream_t *s, jrpc__framing_t to,
                        const jrpc__framing_conf_t *conf) {
  if (s->fx->free)
    s->fx->free(s);
  s->fx = &jrpc__framings[to];
  s->fr.kind = to;
  s->sink.framing = to;
  s->sink.deliver = s->fx->deliver;
  s->sink.notify = s->fx->notify; /* push goes out as its messages */
  return s->fx->init ? s->fx->init(s, conf) : 0;
}

const char *jrpc__framing_name(jrpc__framing_t k) {
  return (unsigned)k < JRPC__FRAMINGS ? jrpc__framings[k].name : "?";
}
