/* framing.c - the table of framings; see framing.h. */
#include "framing.h"

#include "http.h"
#include "stream.h"

const jrpc__framing_ops_t jrpc__framings[JRPC__FRAMINGS] = {
    [JRPC_FRAMING_NEWLINE] = {.name = "newline",
                              .feed = jrpc__stream_feed,
                              .deliver = jrpc__frame_deliver,
                              .timeout = jrpc__stream_timeout},
    [JRPC_FRAMING_LENGTH] = {.name = "length",
                             .feed = jrpc__stream_feed,
                             .deliver = jrpc__frame_deliver,
                             .timeout = jrpc__stream_timeout},
    [JRPC_FRAMING_HTTP] = {.name = "http",
                           .init = jrpc__http_open,
                           .feed = jrpc__http_feed,
                           .deliver = jrpc__http_deliver,
                           .timeout = jrpc__http_timeout,
                           .free = jrpc__http_close,
                           .in_order = 1},
    [JRPC_FRAMING_CONTENT_LENGTH] = {.name = "content-length",
                                     .init = jrpc__http_open,
                                     .feed = jrpc__http_feed,
                                     .deliver = jrpc__http_deliver,
                                     .timeout = jrpc__http_timeout,
                                     .free = jrpc__http_close,
                                     .in_order = 1},
};

const char *jrpc__framing_name(jrpc__framing_t k) {
  return (unsigned)k < JRPC__FRAMINGS ? jrpc__framings[k].name : "?";
}
