/* jrpc_bench_reply.c - see jrpc_bench_reply.h. */
#include "jrpc_bench_reply.h"

#include <string.h>

int reply_next_frame(bench_framing_t framing, const char *buf, size_t len,
                     size_t *pos, size_t *scan, size_t max_frame,
                     const char **f, size_t *n) {
  while (framing == FRAMING_WEBSOCKET) {
    /* A server frame: unmasked; the text ones are the replies. */
    size_t p = *pos;
    if (len - p < 2)
      return REPLY_NEED_MORE;
    const unsigned char *h = (const unsigned char *)buf + p;
    size_t want = h[1] & 0x7f, hn = 2;
    if (want == 126) {
      if (len - p < 4)
        return REPLY_NEED_MORE;
      want = (size_t)h[2] << 8 | h[3];
      hn = 4;
    } else if (want == 127) {
      if (len - p < 10)
        return REPLY_NEED_MORE;
      want = 0;
      for (int i = 0; i < 8; i++)
        want = want << 8 | h[2 + i];
      hn = 10;
    }
    if (want > max_frame)
      return REPLY_TOO_BIG;
    if (len - p - hn < want)
      return REPLY_NEED_MORE;
    *pos = *scan = p + hn + want;
    if ((h[0] & 0x0f) != 1)
      continue; /* a ping (ws_ping_ms), not a reply */
    *f = buf + p + hn;
    *n = want;
    return REPLY_FRAME;
  }
  if (framing == FRAMING_LENGTH) {
    size_t p = *pos;
    if (len - p < 4)
      return REPLY_NEED_MORE;
    const unsigned char *h = (const unsigned char *)buf + p;
    size_t want = (size_t)h[0] << 24 | (size_t)h[1] << 16 | (size_t)h[2] << 8 |
                  (size_t)h[3];
    if (want > max_frame)
      return REPLY_TOO_BIG;
    if (len - p - 4 < want)
      return REPLY_NEED_MORE;
    *f = buf + p + 4;
    *n = want;
    *pos = p + 4 + want;
    *scan = *pos;
    return REPLY_FRAME;
  }
  for (;;) {
    size_t from = *scan > *pos ? *scan : *pos;
    const char *nl = memchr(buf + from, '\n', len - from);
    if (!nl) {
      *scan = len;
      return len - *pos > max_frame ? REPLY_TOO_BIG : REPLY_NEED_MORE;
    }
    size_t start = *pos, end = (size_t)(nl - buf);
    *pos = *scan = end + 1;
    if (end > start && buf[end - 1] == '\r')
      end--;
    if (end - start > max_frame)
      return REPLY_TOO_BIG;
    if (end > start) {
      *f = buf + start;
      *n = end - start;
      return REPLY_FRAME;
    }
  }
}

static int is_blank(char c) {
  return c == ' ' || c == '\t' || c == '\r' || c == '\n';
}

/* Whether the '"' at f[i] is not escaped by the backslashes before it. */
static int unescaped(const char *f, size_t i) {
  size_t k = 0;
  while (k < i && f[i - 1 - k] == '\\')
    k++;
  return (k & 1) == 0;
}

/* If f[i] starts the key `name`, the index just past its ':' and the
 * blanks after it; else 0. */
static size_t key_at(const char *f, size_t n, size_t i, const char *name,
                     size_t len) {
  if (i + len + 3 > n || f[i] != '"' || f[i + 1 + len] != '"' ||
      memcmp(f + i + 1, name, len) != 0 || !unescaped(f, i))
    return 0;
  size_t j = i + len + 2;
  while (j < n && is_blank(f[j]))
    j++;
  if (j >= n || f[j] != ':')
    return 0;
  j++;
  while (j < n && is_blank(f[j]))
    j++;
  return j;
}

/* An unsigned decimal integer at f[j], ending the value. */
static int read_id(const char *f, size_t n, size_t j, uint64_t *id) {
  uint64_t v = 0;
  size_t start = j;
  while (j < n && f[j] >= '0' && f[j] <= '9') {
    if (j - start >= 19)
      return REPLY_BAD_ID;
    v = v * 10 + (uint64_t)(f[j] - '0');
    j++;
  }
  if (j == start || (j < n && f[j] != ',' && f[j] != '}' && !is_blank(f[j])))
    return REPLY_BAD_ID;
  *id = v;
  return REPLY_OK;
}

static size_t skip_blanks(const char *f, size_t n) {
  size_t i = 0;
  while (i < n && is_blank(f[i]))
    i++;
  return i;
}

int reply_single(const char *f, size_t n, uint64_t *id, int *is_error) {
  static const char ok_prefix[] = "{\"jsonrpc\":\"2.0\",\"result\":";
  size_t i = skip_blanks(f, n);
  if (i >= n || f[i] != '{')
    return REPLY_NOT_REPLY;
  /* The id, from the end: jrpcd's is within the last few bytes. */
  size_t at = 0;
  for (size_t k = n >= 4 ? n - 4 : 0; k > i; k--)
    if (f[k] == '"' && f[k + 1] == 'i' && (at = key_at(f, n, k, "id", 2)))
      break;
  if (!at)
    return REPLY_NOT_REPLY;
  /* Result or error: the first of the two keys. */
  if (n - i >= sizeof(ok_prefix) - 1 &&
      memcmp(f + i, ok_prefix, sizeof(ok_prefix) - 1) == 0) {
    *is_error = 0;
  } else {
    const char *q = f + i;
    for (;;) {
      q = memchr(q, '"', (size_t)(f + n - q));
      if (!q)
        return REPLY_NOT_REPLY;
      size_t k = (size_t)(q - f);
      if (key_at(f, n, k, "result", 6)) {
        *is_error = 0;
        break;
      }
      if (key_at(f, n, k, "error", 5)) {
        *is_error = 1;
        break;
      }
      q++;
    }
  }
  return read_id(f, n, at, id);
}

int reply_batch(const char *f, size_t n, uint64_t *ids, size_t cap,
                size_t *nids, size_t *nerr) {
  size_t i = skip_blanks(f, n);
  *nids = *nerr = 0;
  if (i >= n || f[i] != '[')
    return REPLY_NOT_REPLY;
  const char *q = f + i;
  while ((q = memchr(q, '"', (size_t)(f + n - q))) != NULL) {
    size_t k = (size_t)(q - f), at;
    if ((at = key_at(f, n, k, "id", 2)) != 0) {
      uint64_t id;
      if (read_id(f, n, at, &id) != REPLY_OK)
        return REPLY_BAD_ID;
      if (*nids < cap)
        ids[*nids] = id;
      ++*nids;
    } else if (key_at(f, n, k, "error", 5)) {
      ++*nerr;
    }
    q++;
  }
  return REPLY_OK;
}
