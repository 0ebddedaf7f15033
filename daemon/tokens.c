/* tokens.c - the tokens file, the hash and the constant-time lookup; see
 * tokens.h. */
#include "tokens.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <unistd.h>

#include "sha256.h"

/* A tokens file is a few lines per client: one larger than this is not
 * one, and is not read into memory. */
#define FILE_MAX (1u << 20)
#define RANDOM_BYTES 32

static const char hexdig[] = "0123456789abcdef";

int jrpcd_token_name_ok(const char *name, size_t n) {
  if (n == 0 || n > JRPCD_TOKEN_NAME_MAX)
    return 0;
  for (size_t i = 0; i < n; i++) {
    char c = name[i];
    if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
          (c >= '0' && c <= '9') || c == '.' || c == '_' || c == '-' ||
          c == '@'))
      return 0;
  }
  return 1;
}

static int hex_value(char c) {
  const char *p = c ? strchr(hexdig, c) : NULL;
  return p ? (int)(p - hexdig) : -1;
}

/* The owner may do anything; the group may read; others nothing. */
static int mode_ok(const char *path, const struct stat *st, char *err,
                   size_t errlen) {
  if (!S_ISREG(st->st_mode)) {
    snprintf(err, errlen, "%s: not a regular file", path);
    return -1;
  }
  mode_t bad = st->st_mode & (S_IRWXO | S_IWGRP);
  if (bad) {
    snprintf(err, errlen,
             "%s: mode %04o lets %s it (it holds the hashes of the tokens: "
             "chmod %s %s)",
             path, (unsigned)(st->st_mode & 07777),
             (bad & S_IRWXO) ? "others read or write" : "its group write",
             (bad & S_IRWXO) ? "o-rwx" : "g-w", path);
    return -1;
  }
  if ((size_t)st->st_size > FILE_MAX) {
    snprintf(err, errlen, "%s: %lld bytes, more than a tokens file's %u", path,
             (long long)st->st_size, FILE_MAX);
    return -1;
  }
  return 0;
}

/* The whole file, NUL-terminated, in *out (freed by the caller). */
static int read_all(const char *path, char **out, char *err, size_t errlen) {
  int fd = open(path, O_RDONLY | O_CLOEXEC | O_NOCTTY);
  if (fd < 0) {
    snprintf(err, errlen, "%s: %s", path, strerror(errno));
    return -1;
  }
  struct stat st;
  char *buf = NULL;
  if (fstat(fd, &st) != 0) {
    snprintf(err, errlen, "%s: %s", path, strerror(errno));
    goto fail;
  }
  if (mode_ok(path, &st, err, errlen) != 0)
    goto fail;
  size_t cap = (size_t)st.st_size + 1, got = 0;
  if (!(buf = malloc(cap + 1))) {
    snprintf(err, errlen, "%s: out of memory", path);
    goto fail;
  }
  /* One byte more than its size is asked for: a file that grows while
   * read is refused rather than cut. */
  for (;;) {
    ssize_t r = read(fd, buf + got, cap - got);
    if (r < 0 && errno == EINTR)
      continue;
    if (r < 0) {
      snprintf(err, errlen, "%s: %s", path, strerror(errno));
      goto fail;
    }
    if (r == 0)
      break;
    got += (size_t)r;
    if (got == cap) {
      snprintf(err, errlen, "%s: changed while it was read", path);
      goto fail;
    }
  }
  close(fd);
  buf[got] = '\0';
  *out = buf;
  return 0;
fail:
  free(buf);
  close(fd);
  return -1;
}

/* One line (NUL-terminated, no newline): 0 and an entry in e, 1 for a
 * comment or blank line, -1 with why. */
static int parse_line(char *s, jrpcd_token_t *e, const char **why) {
  while (*s == ' ' || *s == '\t')
    s++;
  size_t len = strlen(s);
  while (len && (s[len - 1] == ' ' || s[len - 1] == '\t' || s[len - 1] == '\r'))
    s[--len] = '\0';
  if (!*s || *s == '#')
    return 1;
  char *name = s;
  size_t nn = strcspn(name, " \t");
  char *hash = name + nn;
  while (*hash == ' ' || *hash == '\t')
    hash++;
  if (!*hash) {
    *why = "expected NAME sha256:HEX";
    return -1;
  }
  if (!jrpcd_token_name_ok(name, nn)) {
    *why = "a NAME is 1 to 64 of A-Z a-z 0-9 . _ - @";
    return -1;
  }
  if (strncmp(hash, "sha256:", 7) != 0) {
    *why = "the hash must be sha256:HEX (jrpcd --hash-token NAME makes a line)";
    return -1;
  }
  hash += 7;
  if (strlen(hash) != 2 * JRPCD_TOKEN_DIGEST) {
    *why = "sha256:HEX takes 64 lowercase hex digits and nothing after them";
    return -1;
  }
  for (size_t i = 0; i < JRPCD_TOKEN_DIGEST; i++) {
    int hi = hex_value(hash[2 * i]), lo = hex_value(hash[2 * i + 1]);
    if (hi < 0 || lo < 0) {
      *why = "sha256:HEX takes 64 lowercase hex digits";
      return -1;
    }
    e->digest[i] = (uint8_t)(hi << 4 | lo);
  }
  memcpy(e->name, name, nn);
  e->name[nn] = '\0';
  return 0;
}

/* A name or a hash given twice: which line had it first, or 0. */
static size_t seen_before(const jrpcd_tokens_t *t, const jrpcd_token_t *e,
                          const int *lines, const char **what) {
  for (size_t i = 0; i < t->n; i++) {
    if (strcmp(t->v[i].name, e->name) == 0) {
      *what = "the name";
      return (size_t)lines[i];
    }
    if (memcmp(t->v[i].digest, e->digest, JRPCD_TOKEN_DIGEST) == 0) {
      *what = "the hash";
      return (size_t)lines[i];
    }
  }
  return 0;
}

int jrpcd_tokens_load(jrpcd_tokens_t *t, const char *path, char *err,
                      size_t errlen) {
  t->v = NULL;
  t->n = 0;
  char *text;
  if (read_all(path, &text, err, errlen) != 0)
    return -1;
  int *lines = NULL;
  size_t cap = 0;
  int line = 0, rc = 0;
  for (char *s = text; s && *s && !rc;) {
    char *nl = strchr(s, '\n');
    if (nl)
      *nl = '\0';
    line++;
    jrpcd_token_t e;
    const char *why = NULL, *what = NULL;
    int r = parse_line(s, &e, &why);
    size_t first = r == 0 ? seen_before(t, &e, lines, &what) : 0;
    if (r < 0) {
      snprintf(err, errlen, "%s: line %d: %s", path, line, why);
      rc = -1;
    } else if (first) {
      snprintf(err, errlen, "%s: line %d: %s is on line %zu already", path,
               line, what, first);
      rc = -1;
    } else if (r == 0) {
      if (t->n == cap) {
        cap = cap ? 2 * cap : 8;
        jrpcd_token_t *v = realloc(t->v, cap * sizeof(*v));
        int *l = realloc(lines, cap * sizeof(*l));
        if (v)
          t->v = v;
        if (l)
          lines = l;
        if (!v || !l) {
          snprintf(err, errlen, "%s: out of memory", path);
          rc = -1;
          break;
        }
      }
      lines[t->n] = line;
      t->v[t->n++] = e;
    }
    s = nl ? nl + 1 : NULL;
  }
  /* The text holds nothing secret (hashes), but is not left about. */
  free(text);
  free(lines);
  if (!rc && !t->n) {
    snprintf(err, errlen, "%s: no token (NAME sha256:HEX lines)", path);
    rc = -1;
  }
  if (rc)
    jrpcd_tokens_free(t);
  return rc;
}

void jrpcd_tokens_free(jrpcd_tokens_t *t) {
  free(t->v);
  t->v = NULL;
  t->n = 0;
}

_Static_assert(JRPCD_TOKEN_DIGEST == JRPCD_SHA256_LEN, "SHA-256 digests");

void jrpcd_token_digest(const char *tok, size_t n,
                        uint8_t out[JRPCD_TOKEN_DIGEST]) {
  jrpcd_sha256(tok, n, out);
}

/* Every byte is compared, whatever differs first: the time does not say
 * how much of a digest matched (volatile keeps the compiler from ending
 * the loop early). */
static int same_digest(const uint8_t *a, const uint8_t *b) {
  volatile uint8_t diff = 0;
  for (size_t i = 0; i < JRPCD_TOKEN_DIGEST; i++)
    diff |= a[i] ^ b[i];
  return diff == 0;
}

const jrpcd_token_t *jrpcd_tokens_find(const jrpcd_tokens_t *t,
                                       const uint8_t d[JRPCD_TOKEN_DIGEST]) {
  /* Every entry, whatever matched before: the time says how many entries
   * there are, not which one (if any) matched. */
  size_t hit = t->n;
  for (size_t i = 0; i < t->n; i++) {
    size_t eq = (size_t)same_digest(t->v[i].digest, d);
    hit = eq * i + (1 - eq) * hit;
  }
  return hit < t->n ? &t->v[hit] : NULL;
}

int jrpcd_bearer_token(const char *cred, size_t len, const char **tok,
                       size_t *n) {
  static const char scheme[] = "bearer";
  size_t k = sizeof(scheme) - 1;
  if (!cred || len <= k || strncasecmp(cred, scheme, k) != 0 ||
      (cred[k] != ' ' && cred[k] != '\t'))
    return -1;
  const char *s = cred + k, *e = cred + len;
  while (s < e && (*s == ' ' || *s == '\t'))
    s++;
  while (e > s && (e[-1] == ' ' || e[-1] == '\t'))
    e--;
  if (s == e || (size_t)(e - s) > JRPCD_TOKEN_MAX)
    return -1;
  /* token68 (RFC 6750): one word, no blanks inside. */
  for (const char *p = s; p < e; p++)
    if (*p == ' ' || *p == '\t')
      return -1;
  *tok = s;
  *n = (size_t)(e - s);
  return 0;
}

int jrpcd_token_new(const char *name, char *tok, size_t toklen, char *line,
                    size_t linelen, char *err, size_t errlen) {
  if (!jrpcd_token_name_ok(name, strlen(name))) {
    snprintf(err, errlen, "\"%s\": a NAME is 1 to 64 of A-Z a-z 0-9 . _ - @",
             name);
    return -1;
  }
  static const char b64url[] =
      "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_";
  uint8_t raw[RANDOM_BYTES + 2] = {0};
  if (toklen < (RANDOM_BYTES * 4 + 2) / 3 + 1 ||
      linelen < strlen(name) + 8 + 2 * JRPCD_TOKEN_DIGEST + 1) {
    snprintf(err, errlen, "no room for the token");
    return -1;
  }
  for (size_t got = 0; got < RANDOM_BYTES;) {
    ssize_t r = getrandom(raw + got, RANDOM_BYTES - got, 0);
    if (r < 0 && errno == EINTR)
      continue;
    if (r < 0) {
      snprintf(err, errlen, "no random bytes to be had: getrandom: %s",
               strerror(errno));
      return -1;
    }
    got += (size_t)r;
  }
  /* base64url without padding: 43 characters for 32 bytes. */
  size_t o = 0;
  for (size_t i = 0; i < RANDOM_BYTES; i += 3) {
    uint32_t v =
        (uint32_t)raw[i] << 16 | (uint32_t)raw[i + 1] << 8 | raw[i + 2];
    size_t left = RANDOM_BYTES - i;
    tok[o++] = b64url[v >> 18 & 63];
    tok[o++] = b64url[v >> 12 & 63];
    if (left > 1)
      tok[o++] = b64url[v >> 6 & 63];
    if (left > 2)
      tok[o++] = b64url[v & 63];
  }
  tok[o] = '\0';
  explicit_bzero(raw, sizeof(raw));
  uint8_t d[JRPCD_TOKEN_DIGEST];
  jrpcd_token_digest(tok, o, d);
  size_t k = (size_t)snprintf(line, linelen, "%s sha256:", name);
  for (size_t i = 0; i < JRPCD_TOKEN_DIGEST; i++) {
    line[k++] = hexdig[d[i] >> 4];
    line[k++] = hexdig[d[i] & 15];
  }
  line[k] = '\0';
  return 0;
}
