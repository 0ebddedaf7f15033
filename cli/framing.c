/* framing.c - the framings as a table of operations (transport.h), and
 * the two stream framings' rows: newline (one JSON text a line) and
 * length (a 4-byte big-endian length before each message). */
#include "jrpc.h"
#include "transport.h"

#include <stdint.h>
#include <string.h>

static int newline_send(jc_conn *c, const char *data, size_t n) {
  if (memchr(data, '\n', n)) {
    jc_warn("a request with a raw newline cannot go over newline framing");
    return JC_ERR;
  }
  int st = jc_write_all(c, data, n);
  return st != JC_OK ? st : jc_write_all(c, "\n", 1);
}

static int newline_frame(jc_conn *c, bool at_eof, size_t *skip, size_t *n,
                         size_t *total) {
  (void)at_eof;
  char *nl = memchr(c->buf, '\n', c->len);
  if (!nl) {
    if (c->len > JC_MAX_FRAME) {
      jc_warn("%s: a reply line longer than %u bytes", jc_endpoint_desc(c->ep),
              JC_MAX_FRAME);
      return -1;
    }
    return 0;
  }
  *skip = 0;
  *n = (size_t)(nl - c->buf);
  if (*n > 0 && c->buf[*n - 1] == '\r')
    (*n)--;
  *total = (size_t)(nl - c->buf) + 1;
  return 1;
}

static int length_send(jc_conn *c, const char *data, size_t n) {
  if (n > 0xffffffffu) {
    jc_warn("request too large for length framing (%zu bytes)", n);
    return JC_ERR;
  }
  unsigned char pre[4] = {(unsigned char)(n >> 24), (unsigned char)(n >> 16),
                          (unsigned char)(n >> 8), (unsigned char)n};
  int st = jc_write_all(c, (const char *)pre, 4);
  return st != JC_OK ? st : jc_write_all(c, data, n);
}

static int length_frame(jc_conn *c, bool at_eof, size_t *skip, size_t *n,
                        size_t *total) {
  (void)at_eof;
  if (c->len < 4)
    return 0;
  const unsigned char *b = (const unsigned char *)c->buf;
  uint32_t len =
      (uint32_t)b[0] << 24 | (uint32_t)b[1] << 16 | (uint32_t)b[2] << 8 | b[3];
  if (len > JC_MAX_FRAME) {
    jc_warn("%s: the server announced a %u-byte reply (at most %u)",
            jc_endpoint_desc(c->ep), len, JC_MAX_FRAME);
    return -1;
  }
  if (c->len - 4 < len)
    return 0;
  *skip = 4;
  *n = len;
  *total = 4 + (size_t)len;
  return 1;
}

const jc_framing_ops jc_framings[JC_FRAMINGS] = {
    [JC_NEWLINE] = {.name = "newline",
                    .send = newline_send,
                    .frame = newline_frame},
    [JC_LENGTH] = {.name = "length",
                   .send = length_send,
                   .frame = length_frame},
    [JC_HTTP] = {.name = "http",
                 .send = jc_http_send,
                 .done = jc_http_done,
                 .frame = jc_http_complete},
    [JC_CONTENT_LENGTH] = {.name = "content-length",
                           .send = jc_cl_send,
                           .frame = jc_cl_frame},
    [JC_WEBSOCKET] = {.name = "websocket",
                      .open = jc_ws_open,
                      .send = jc_ws_send,
                      .done = jc_ws_done,
                      .close = jc_ws_close,
                      .frame = jc_ws_frame},
};

jc_framing jc_framing_named(const char *name) {
  jc_framing f = 0;
  while (f < JC_FRAMINGS && strcmp(jc_framings[f].name, name))
    f++;
  return f;
}

bool jc_next_line(const jc_conn *c, size_t *pos, const char **line, size_t *n) {
  const char *nl = memchr(c->buf + *pos, '\n', c->len - *pos);
  if (!nl)
    return false;
  *line = c->buf + *pos;
  *n = (size_t)(nl - *line);
  if (*n > 0 && (*line)[*n - 1] == '\r')
    (*n)--;
  *pos = (size_t)(nl - c->buf) + 1;
  return true;
}
