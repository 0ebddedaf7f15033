/* sha256.h - SHA-256 (FIPS 180-4), for the bearer tokens of tokens.c: a
 * build without OpenSSL (-DJRPC_TLS=OFF) has tokens too. One call hashes
 * a whole message; tokens are short, so no streaming interface. */
#ifndef JRPCD_SHA256_H
#define JRPCD_SHA256_H

#include <stddef.h>
#include <stdint.h>

#define JRPCD_SHA256_LEN 32

void jrpcd_sha256(const void *data, size_t n, uint8_t out[JRPCD_SHA256_LEN]);

#endif
