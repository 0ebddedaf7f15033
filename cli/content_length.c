/* content_length.c - the content-length framing of the Language Server
 * Protocol and vscode-jsonrpc, as jrpcd's framing = content-length speaks
 * it: a header block with Content-Length, an empty line, then the body,
 * each way. What the server sends is bounded: a head of HEAD_MAX, a body
 * of JC_MAX_FRAME. */
#include "jrpc.h"
#include "transport.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

/* A header block larger than this is refused. */
#define HEAD_MAX (64u << 10)

int jc_cl_send(jc_conn *c, const char *data, size_t n) {
  char *msg = malloc(n + 48);
  if (!msg) {
    jc_warn("out of memory for a %zu-byte request", n);
    return JC_ERR;
  }
  /* Head and body in one write: two would wait on Nagle and delayed ACK. */
  int h = snprintf(msg, 48, "Content-Length: %zu\r\n\r\n", n);
  memcpy(msg + h, data, n);
  int st = jc_write_all(c, msg, (size_t)h + n);
  free(msg);
  return st;
}

static int bad(const jc_conn *c, const char *what) {
  jc_warn("%s: malformed content-length reply: %s", jc_endpoint_desc(c->ep),
          what);
  return -1;
}

int jc_cl_frame(jc_conn *c, bool at_eof, size_t *skip, size_t *n,
                size_t *total) {
  (void)at_eof;
  size_t pos = 0, ln, len = 0;
  const char *l;
  bool have = false;
  for (;;) {
    if (!jc_next_line(c, &pos, &l, &ln))
      return c->len > HEAD_MAX ? bad(c, "a header block over 64 KiB") : 0;
    if (ln == 0)
      break;
    if (pos > HEAD_MAX)
      return bad(c, "a header block over 64 KiB");
    if (ln < 15 || strncasecmp(l, "content-length:", 15))
      continue; /* other headers (Content-Type) say nothing we need */
    size_t i = 15, digits;
    while (i < ln && (l[i] == ' ' || l[i] == '\t'))
      i++;
    digits = strspn(l + i, "0123456789");
    if (digits == 0 || digits > 10 || i + digits > ln)
      return bad(c, "a Content-Length that is not a number");
    for (size_t k = i + digits; k < ln; k++)
      if (l[k] != ' ' && l[k] != '\t')
        return bad(c, "a Content-Length that is not a number");
    len = (size_t)strtoull(l + i, NULL, 10);
    have = true;
  }
  if (!have)
    return bad(c, "a header block without Content-Length");
  if (len > JC_MAX_FRAME) {
    jc_warn("%s: the server announced a %zu-byte reply (at most %u)",
            jc_endpoint_desc(c->ep), len, JC_MAX_FRAME);
    return -1;
  }
  if (c->len - pos < len)
    return 0;
  *skip = pos;
  *total = pos + len;
  /* jrpcd may end a body with a newline; the reply is the JSON before. */
  while (len && strchr(" \t\r\n", c->buf[pos + len - 1]))
    len--;
  *n = len;
  return 1;
}
