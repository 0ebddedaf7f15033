/* tokens.h - the bearer tokens of an HTTP listener (tokens_file).
 *
 * The file has one "NAME sha256:HEX" line per token, HEX the lowercase
 * hex SHA-256 of the token itself, so that the file holds nothing a
 * client could send; '#' comments and blank lines are allowed. Tokens are
 * random and long (jrpcd --hash-token makes 32 random bytes), so one fast
 * hash is enough: nothing is gained by a slow one against a guess of 256
 * bits. A presented token is hashed and compared with every entry in
 * constant time; the caller then is the principal token:NAME.
 *
 * The file may be read by its owner and group (a root-owned file of the
 * group jrpcd serves as, 0640, is the usual way), but not written by the
 * group and neither read nor written by others: refused otherwise.
 *
 * SHA-256 is sha256.c's and the random bytes come from getrandom(2), so
 * that a build without OpenSSL has tokens too. */
#ifndef JRPCD_TOKENS_H
#define JRPCD_TOKENS_H

#include <stddef.h>
#include <stdint.h>

#define JRPCD_TOKEN_DIGEST 32   /* SHA-256 */
#define JRPCD_TOKEN_NAME_MAX 64 /* bytes of a NAME */
#define JRPCD_TOKEN_MAX 512     /* the longest token looked at */

typedef struct jrpcd_token {
  char name[JRPCD_TOKEN_NAME_MAX + 1];
  uint8_t digest[JRPCD_TOKEN_DIGEST];
} jrpcd_token_t;

typedef struct jrpcd_tokens {
  jrpcd_token_t *v;
  size_t n;
} jrpcd_tokens_t;

/* Reads path into t (empty on entry). 0, or -1 with err naming the file
 * and, for a bad line, its number. */
int jrpcd_tokens_load(jrpcd_tokens_t *t, const char *path, char *err,
                      size_t errlen);
void jrpcd_tokens_free(jrpcd_tokens_t *t);

/* The SHA-256 of n bytes. */
void jrpcd_token_digest(const char *tok, size_t n,
                        uint8_t out[JRPCD_TOKEN_DIGEST]);

/* The entry whose digest is d, or NULL: every entry is compared, in
 * constant time, whatever matches. */
const jrpcd_token_t *jrpcd_tokens_find(const jrpcd_tokens_t *t,
                                       const uint8_t d[JRPCD_TOKEN_DIGEST]);

/* The token of an Authorization value "Bearer TOKEN" (the scheme in any
 * case, blanks around the token): 0 with *tok and *n, or -1 when it is
 * not one. */
int jrpcd_bearer_token(const char *cred, size_t len, const char **tok,
                       size_t *n);

/* A NAME as the file allows it: 1 to 64 of A-Z a-z 0-9 . _ - @. */
int jrpcd_token_name_ok(const char *name, size_t n);

/* jrpcd --hash-token NAME: a fresh random token (32 bytes, base64url) in
 * tok, its file line (without newline) in line. 0, or -1 with err. */
int jrpcd_token_new(const char *name, char *tok, size_t toklen, char *line,
                    size_t linelen, char *err, size_t errlen);

#endif
