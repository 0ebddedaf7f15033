/* conn_write.c - write-then-queue, the one send path of every transport;
 * see transport.h. */
#include <stdlib.h>
#include <string.h>

#include "log.h"
#include "transport.h"

static void on_written(uv_write_t *req, int status) {
  jrpcd_conn_t *c = req->data;
  free(c->wcopy);
  c->wcopy = NULL;
  if (c->closed)
    return; /* cancelled by the close; the stream is already freed */
  c->writing = 0;
  if (status < 0) {
    c->ev->close(c, uv_strerror(status));
    return;
  }
  JRPC__STAT_ADD(c->w->bytes_out, c->wbytes);
  if (c->wfrom_out)
    jrpc__out_consume(&c->st.out, c->wbytes);
  c->wbytes = 0;
  c->last_active = uv_now(&c->w->loop);
  c->ev->flush(c);
}

/* Drops the first n bytes of bufs: what is left is bufs[*first...]. */
static unsigned skip(uv_buf_t *bufs, unsigned k, size_t n) {
  unsigned i = 0;
  while (i < k && n >= bufs[i].len)
    n -= bufs[i++].len;
  if (i < k) {
    bufs[i].base += n;
    bufs[i].len -= (unsigned)n;
  }
  return i;
}

/* The rest, copied into one buffer of the connection's own. */
static int copy_rest(jrpcd_conn_t *c, uv_buf_t *bufs, unsigned k, size_t n) {
  c->wcopy = malloc(n);
  if (!c->wcopy) {
    jrpcd_error("connection %llu: out of memory for output; closing it",
                (unsigned long long)c->id);
    c->ev->close(c, NULL);
    return -1;
  }
  size_t at = 0;
  for (unsigned i = 0; i < k; i++) {
    memcpy(c->wcopy + at, bufs[i].base, bufs[i].len);
    at += bufs[i].len;
  }
  bufs[0] = uv_buf_init(c->wcopy, (unsigned)n);
  return 0;
}

ssize_t jrpcd_conn_write(jrpcd_conn_t *c, uv_buf_t *bufs, unsigned k,
                         size_t total, int from_out) {
  int n = uv_try_write(&c->h.s, bufs, k);
  if (n == UV_EAGAIN || n == UV_ENOSYS)
    n = 0;
  else if (n < 0) {
    c->ev->close(c, uv_strerror(n));
    return -1;
  }
  if (n > 0) {
    JRPC__STAT_ADD(c->w->bytes_out, (uint64_t)n);
    c->last_active = uv_now(&c->w->loop);
  }
  if ((size_t)n == total)
    return n;
  /* The socket is full: let libuv finish when it can. */
  unsigned first = skip(bufs, k, (size_t)n);
  bufs += first;
  k -= first;
  size_t rest = total - (size_t)n;
  if (!from_out) {
    if (copy_rest(c, bufs, k, rest) != 0)
      return -1;
    k = 1;
  }
  c->wreq.data = c;
  int rc = uv_write(&c->wreq, &c->h.s, bufs, k, on_written);
  if (rc) {
    free(c->wcopy);
    c->wcopy = NULL;
    c->ev->close(c, uv_strerror(rc));
    return -1;
  }
  c->writing = 1;
  c->wbytes = rest;
  c->wfrom_out = (uint8_t)from_out;
  return n;
}
