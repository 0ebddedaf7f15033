/* sha1.h - SHA-1 (FIPS 180-4), for one purpose only: the WebSocket
 * handshake's Sec-WebSocket-Accept (RFC 6455, 4.2.2), which the protocol
 * fixes to SHA-1. Nothing here is used for security. Our own, so that
 * lib/ needs no OpenSSL (which is optional: -DJRPC_TLS=OFF). */
#ifndef JRPC_SHA1_H
#define JRPC_SHA1_H

#include <stddef.h>
#include <stdint.h>

#define JRPC__SHA1_LEN 20

/* The digest of the n bytes at p, and of the m bytes at q after them
 * (the handshake hashes the client's key followed by a fixed GUID). */
void jrpc__sha1_2(const void *p, size_t n, const void *q, size_t m,
                  uint8_t out[JRPC__SHA1_LEN]);

/* Standard base64 (RFC 4648, with padding) of n bytes into dst, which has
 * room for 4 * ((n + 2) / 3) bytes; returns that length. No NUL. */
size_t jrpc__base64(const uint8_t *src, size_t n, char *dst);

#endif
