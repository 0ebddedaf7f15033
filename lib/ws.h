/* ws.h - the websocket framing (RFC 6455), entered from an http stream by
 * the upgrade handshake (http.c answers it with 101 and hands the stream
 * over: jrpc__stream_switch). Whole data frames are read in place here,
 * every other frame by Debian's libwslay, driven without I/O: its receive
 * callback takes bytes from the stream's input buffer, its send callback
 * appends to the output chain (ws.c says why the split).
 *
 * A text or binary message is one JSON-RPC request or batch; each reply is
 * one text message, written in place in the output chain behind a header
 * of our own (see ws.c for why wslay does not write those). Control frames
 * are wslay's: a ping is answered with a pong, a close with a close (then
 * the connection ends), and a client that breaks the protocol is closed
 * with its status: 1002 for an unmasked frame or a bad opcode, 1007 for a
 * text message that is not UTF-8, 1009 for a message (its fragments
 * together) over max_frame_bytes. A message still incomplete after the
 * frame timeout is closed with 1008; a peer that leaves a keepalive ping
 * unanswered for ws_ping_ms is closed with 1001. */
#ifndef JRPC_WS_H
#define JRPC_WS_H

#include <stddef.h>
#include <stdint.h>

#include "stream.h"

/* The value of Sec-WebSocket-Accept for a Sec-WebSocket-Key of n bytes:
 * 28 bytes into out (no NUL). */
#define JRPC__WS_ACCEPT_LEN 28
void jrpc__ws_accept(const char *key, size_t n, char out[JRPC__WS_ACCEPT_LEN]);

/* 1 if key (n bytes) is a valid Sec-WebSocket-Key: base64 of 16 bytes. */
int jrpc__ws_key_valid(const char *key, size_t n);

/* framing.h's operations for the websocket row. */
int jrpc__ws_open(jrpc__stream_t *s, const jrpc__framing_conf_t *conf);
int jrpc__ws_feed(jrpc__stream_t *s, size_t n, int eof);
void jrpc__ws_deliver(jrpc__sink_t *sink, jrpc__outbuf_t *src);
int jrpc__ws_timeout(jrpc__stream_t *s, uint32_t timeout_ms, uint64_t got);
int jrpc__ws_keepalive(jrpc__stream_t *s, uint64_t now_ms, uint32_t ping_ms);
void jrpc__ws_close(jrpc__stream_t *s);
int jrpc__ws_goodbye(jrpc__stream_t *s);

#endif
