/* sha1.c - SHA-1 and base64 for the WebSocket handshake; see sha1.h. */
#include "sha1.h"

#include <string.h>

static uint32_t rol(uint32_t x, unsigned k) {
  return (x << k) | (x >> (32 - k));
}

static void block(uint32_t h[5], const uint8_t b[64]) {
  uint32_t w[80];
  for (int i = 0; i < 16; i++)
    w[i] = (uint32_t)b[4 * i] << 24 | (uint32_t)b[4 * i + 1] << 16 |
           (uint32_t)b[4 * i + 2] << 8 | b[4 * i + 3];
  for (int i = 16; i < 80; i++)
    w[i] = rol(w[i - 3] ^ w[i - 8] ^ w[i - 14] ^ w[i - 16], 1);
  uint32_t a = h[0], bb = h[1], c = h[2], d = h[3], e = h[4];
  for (int i = 0; i < 80; i++) {
    uint32_t f, k;
    if (i < 20) {
      f = (bb & c) | (~bb & d);
      k = 0x5a827999u;
    } else if (i < 40) {
      f = bb ^ c ^ d;
      k = 0x6ed9eba1u;
    } else if (i < 60) {
      f = (bb & c) | (bb & d) | (c & d);
      k = 0x8f1bbcdcu;
    } else {
      f = bb ^ c ^ d;
      k = 0xca62c1d6u;
    }
    uint32_t t = rol(a, 5) + f + e + k + w[i];
    e = d;
    d = c;
    c = rol(bb, 30);
    bb = a;
    a = t;
  }
  h[0] += a;
  h[1] += bb;
  h[2] += c;
  h[3] += d;
  h[4] += e;
}

void jrpc__sha1_2(const void *p, size_t n, const void *q, size_t m,
                  uint8_t out[JRPC__SHA1_LEN]) {
  uint32_t h[5] = {0x67452301u, 0xefcdab89u, 0x98badcfeu, 0x10325476u,
                   0xc3d2e1f0u};
  uint8_t buf[64];
  size_t fill = 0;
  const uint8_t *parts[2] = {p, q};
  size_t lens[2] = {n, m};
  for (int k = 0; k < 2; k++) {
    for (size_t i = 0; i < lens[k]; i++) {
      buf[fill++] = parts[k][i];
      if (fill == 64) {
        block(h, buf);
        fill = 0;
      }
    }
  }
  /* The padding: 0x80, zeros, then the length in bits, big-endian. */
  uint64_t bits = (uint64_t)(n + m) * 8;
  buf[fill++] = 0x80;
  if (fill > 56) {
    memset(buf + fill, 0, 64 - fill);
    block(h, buf);
    fill = 0;
  }
  memset(buf + fill, 0, 56 - fill);
  for (int i = 0; i < 8; i++)
    buf[56 + i] = (uint8_t)(bits >> (56 - 8 * i));
  block(h, buf);
  for (int i = 0; i < 5; i++) {
    out[4 * i] = (uint8_t)(h[i] >> 24);
    out[4 * i + 1] = (uint8_t)(h[i] >> 16);
    out[4 * i + 2] = (uint8_t)(h[i] >> 8);
    out[4 * i + 3] = (uint8_t)h[i];
  }
}

size_t jrpc__base64(const uint8_t *src, size_t n, char *dst) {
  static const char abc[] =
      "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
  char *d = dst;
  size_t i = 0;
  for (; i + 3 <= n; i += 3) {
    uint32_t v =
        (uint32_t)src[i] << 16 | (uint32_t)src[i + 1] << 8 | src[i + 2];
    *d++ = abc[v >> 18];
    *d++ = abc[(v >> 12) & 63];
    *d++ = abc[(v >> 6) & 63];
    *d++ = abc[v & 63];
  }
  if (i < n) {
    uint32_t v = (uint32_t)src[i] << 16;
    if (i + 1 < n)
      v |= (uint32_t)src[i + 1] << 8;
    *d++ = abc[v >> 18];
    *d++ = abc[(v >> 12) & 63];
    *d++ = i + 1 < n ? abc[(v >> 6) & 63] : '=';
    *d++ = '=';
  }
  return (size_t)(d - dst);
}
