/* subject.c - push topics as NATS subjects; see subject.h. */
#include "subject.h"

#include <string.h>

static int plain(unsigned char c) {
  return (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') ||
         (c >= '0' && c <= '9') || c == '_' || c == '-';
}

/* One escaped name at out[*at], within cap; -1 when it does not fit. */
static int put_name(const char *s, size_t n, char *out, size_t cap,
                    size_t *at) {
  static const char hex[] = "0123456789ABCDEF";
  if (n == 0) {
    if (*at + 1 > cap)
      return -1;
    out[(*at)++] = '~';
    return 0;
  }
  for (size_t i = 0; i < n; i++) {
    unsigned char c = (unsigned char)s[i];
    size_t need = plain(c) ? 1 : 3;
    if (*at + need > cap)
      return -1;
    if (need == 1) {
      out[(*at)++] = (char)c;
    } else {
      out[(*at)++] = '~';
      out[(*at)++] = hex[c >> 4];
      out[(*at)++] = hex[c & 15];
    }
  }
  return 0;
}

int jrpcd_subject(const char *prefix, const char *ns, size_t ns_n,
                  const char *topic, size_t topic_n, char *out, size_t cap) {
  if (cap > JRPCD_SUBJECT_MAX + 1)
    cap = JRPCD_SUBJECT_MAX + 1;
  if (cap == 0)
    return -1;
  cap--; /* the NUL */
  size_t plen = strlen(prefix), at = plen + 1;
  if (at > cap)
    return -1;
  memcpy(out, prefix, plen);
  out[plen] = '.';
  if (put_name(ns, ns_n, out, cap, &at) != 0 || at + 1 > cap)
    return -1;
  out[at++] = '.';
  if (put_name(topic, topic_n, out, cap, &at) != 0)
    return -1;
  out[at] = '\0';
  return (int)at;
}

static int hex_value(char c) {
  return c >= '0' && c <= '9'   ? c - '0'
         : c >= 'A' && c <= 'F' ? c - 'A' + 10
                                : -1;
}

/* One name of s up to the next '.' or its end, from *at. */
static int get_name(const char *s, size_t n, size_t *at, char *out, size_t cap,
                    size_t *out_n) {
  size_t i = *at, o = 0;
  if (i + 1 <= n && s[i] == '~' && (i + 1 == n || s[i + 1] == '.')) {
    *at = i + 1;
    *out_n = 0;
    return 0;
  }
  while (i < n && s[i] != '.') {
    int c;
    if (s[i] == '~') {
      int hi = i + 2 < n ? hex_value(s[i + 1]) : -1;
      int lo = hi >= 0 ? hex_value(s[i + 2]) : -1;
      if (lo < 0)
        return -1;
      c = hi << 4 | lo;
      if (plain((unsigned char)c))
        return -1; /* never written so: one name, one spelling */
      i += 3;
    } else if (plain((unsigned char)s[i])) {
      c = (unsigned char)s[i++];
    } else {
      return -1;
    }
    if (o == cap)
      return -1;
    out[o++] = (char)c;
  }
  if (i == *at)
    return -1; /* an empty token */
  *at = i;
  *out_n = o;
  return 0;
}

int jrpcd_subject_parse(const char *s, size_t n, char *ns, size_t ns_cap,
                        size_t *ns_n, char *topic, size_t topic_cap,
                        size_t *topic_n) {
  size_t at = 0;
  if (get_name(s, n, &at, ns, ns_cap, ns_n) != 0 || at >= n || s[at] != '.')
    return -1;
  at++;
  if (get_name(s, n, &at, topic, topic_cap, topic_n) != 0 || at != n)
    return -1;
  return 0;
}
