/* jrpc_bench_http.c - see jrpc_bench_http.h. */
#include "jrpc_bench_http.h"

#include <stdint.h>
#include <stdio.h>
#include <string.h>

static int lower(int c) {
  return c >= 'A' && c <= 'Z' ? c + 32 : c;
}

/* Whether line[0, n) starts with the header name `name` (lower case)
 * followed by ':'; if so, *value and *vlen are the value, blanks trimmed. */
static int header_is(const char *line, size_t n, const char *name,
                     const char **value, size_t *vlen) {
  size_t k = strlen(name);
  if (n <= k || line[k] != ':')
    return 0;
  for (size_t i = 0; i < k; i++)
    if (lower((unsigned char)line[i]) != name[i])
      return 0;
  const char *v = line + k + 1, *end = line + n;
  while (v < end && (*v == ' ' || *v == '\t'))
    v++;
  while (end > v && (end[-1] == ' ' || end[-1] == '\t'))
    end--;
  *value = v;
  *vlen = (size_t)(end - v);
  return 1;
}

/* Whether the comma-separated list v[0, n) holds the token `tok` (lower
 * case), in any case. */
static int has_token(const char *v, size_t n, const char *tok) {
  size_t k = strlen(tok);
  for (size_t i = 0; i < n;) {
    while (i < n && (v[i] == ' ' || v[i] == '\t' || v[i] == ','))
      i++;
    size_t start = i;
    while (i < n && v[i] != ',' && v[i] != ' ' && v[i] != '\t')
      i++;
    if (i - start == k) {
      size_t j = 0;
      while (j < k && lower((unsigned char)v[start + j]) == tok[j])
        j++;
      if (j == k)
        return 1;
    }
  }
  return 0;
}

static int read_length(const char *v, size_t n, uint64_t *out) {
  uint64_t x = 0;
  if (n == 0 || n > 15)
    return -1;
  for (size_t i = 0; i < n; i++) {
    if (v[i] < '0' || v[i] > '9')
      return -1;
    x = x * 10 + (uint64_t)(v[i] - '0');
  }
  *out = x;
  return 0;
}

/* The status line "HTTP/1.x NNN[ reason]". */
static int read_status(const char *line, size_t n, unsigned *status) {
  if (n < 12 || memcmp(line, "HTTP/1.", 7) != 0 ||
      (line[7] != '0' && line[7] != '1') || line[8] != ' ')
    return -1;
  unsigned s = 0;
  for (int i = 9; i < 12; i++) {
    if (line[i] < '0' || line[i] > '9')
      return -1;
    s = s * 10 + (unsigned)(line[i] - '0');
  }
  if (n > 12 && line[12] != ' ')
    return -1;
  *status = s;
  return 0;
}

int http_next_response(const char *buf, size_t len, size_t *pos, size_t *scan,
                       size_t max_body, http_response_t *r, const char **why) {
  size_t start = *pos;
  /* The blank line may straddle two reads: resume three bytes back. */
  size_t from = *scan > start + 3 ? *scan - 3 : start;
  const char *end = memmem(buf + from, len - from, "\r\n\r\n", 4);
  if (!end) {
    *scan = len;
    if (len - start > HTTP_MAX_HEAD) {
      *why = "a response head over 8192 bytes";
      return HTTP_BAD;
    }
    return HTTP_NEED_MORE;
  }
  size_t head_end = (size_t)(end - buf) + 4;
  if (head_end - start > HTTP_MAX_HEAD) {
    *why = "a response head over 8192 bytes";
    return HTTP_BAD;
  }
  const char *p = buf + start, *stop = end + 2; /* each line ends "\r\n" */
  const char *eol = memchr(p, '\r', (size_t)(stop - p));
  if (!eol || eol[1] != '\n' || read_status(p, (size_t)(eol - p), &r->status)) {
    *why = "not an HTTP/1.x status line";
    return HTTP_BAD;
  }
  if (r->status < 200) {
    *why = "an informational (1xx) response, never asked for";
    return HTTP_BAD;
  }
  uint64_t length = 0;
  int have_length = 0;
  r->close = 0;
  for (p = eol + 2; p < stop; p = eol + 2) {
    eol = memchr(p, '\r', (size_t)(stop - p));
    size_t n = eol ? (size_t)(eol - p) : 0;
    if (!eol || eol[1] != '\n' || memchr(p, '\n', n)) {
      *why = "a header line not ended by CRLF";
      return HTTP_BAD;
    }
    const char *v;
    size_t vn;
    uint64_t x;
    if (header_is(p, n, "content-length", &v, &vn)) {
      if (read_length(v, vn, &x) || (have_length && x != length)) {
        *why = "a Content-Length that is not one decimal number";
        return HTTP_BAD;
      }
      length = x;
      have_length = 1;
    } else if (header_is(p, n, "transfer-encoding", &v, &vn)) {
      *why = "a body with a Transfer-Encoding (only Content-Length is read)";
      return HTTP_BAD;
    } else if (header_is(p, n, "connection", &v, &vn)) {
      r->close = has_token(v, vn, "close");
    }
  }
  if (r->status == 204 || r->status == 304) {
    length = 0;
  } else if (!have_length) {
    *why = "a response without Content-Length";
    return HTTP_BAD;
  }
  if (length > max_body)
    return HTTP_TOO_BIG;
  if (len - head_end < length) {
    /* The head is whole: the next call finds its end at once. */
    *scan = head_end - 1;
    return HTTP_NEED_MORE;
  }
  r->body = buf + head_end;
  r->body_len = (size_t)length;
  *pos = *scan = head_end + (size_t)length;
  return HTTP_RESPONSE;
}

size_t http_request_head(char *dst, size_t cap, const char *path,
                         const char *host, size_t body_len) {
  int n = snprintf(dst, cap,
                   "POST %s HTTP/1.1\r\nHost: %s\r\n"
                   "Content-Type: application/json\r\n"
                   "Content-Length: %zu\r\n\r\n",
                   path, host, body_len);
  return n > 0 && (size_t)n < cap ? (size_t)n : 0;
}
