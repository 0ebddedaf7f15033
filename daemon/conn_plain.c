/* conn_plain.c - the plain transport (Unix sockets, TCP): the stream's
 * output goes to the socket as it is, read by conn.c's own callbacks; see
 * transport.h. */
#include <unistd.h>

#include "transport.h"

#define IOV_MAX_BATCH 64

/* The output chain's first segments as libuv buffers; their bytes. */
static size_t gather(jrpcd_conn_t *c, uv_buf_t *bufs, unsigned *k) {
  const char *ptrs[IOV_MAX_BATCH];
  size_t lens[IOV_MAX_BATCH];
  size_t n = jrpc__out_iov(&c->st.out, ptrs, lens, IOV_MAX_BATCH);
  size_t total = 0;
  for (size_t i = 0; i < n; i++) {
    bufs[i] = uv_buf_init((char *)ptrs[i], (unsigned)lens[i]);
    total += lens[i];
  }
  *k = (unsigned)n;
  return total;
}

static int plain_send(jrpcd_conn_t *c) {
  uv_buf_t bufs[IOV_MAX_BATCH];
  unsigned k;
  /* With a write in flight, its end comes back here; until then the
   * output only grows, and the flow check after the send must still see
   * it. */
  while (!c->writing) {
    size_t total = gather(c, bufs, &k);
    if (k == 0)
      break;
    ssize_t n = jrpcd_conn_write(c, bufs, k, total, 1);
    if (n < 0)
      return -1;
    if (n > 0)
      jrpc__out_consume(&c->st.out, (size_t)n);
    /* All taken: more segments may follow the first 64. */
  }
  return 0;
}

static void plain_send_early(jrpcd_conn_t *c) {
  if (c->writing)
    return;
  uv_buf_t bufs[IOV_MAX_BATCH];
  unsigned k;
  gather(c, bufs, &k);
  if (k == 0)
    return;
  int n = uv_try_write(&c->h.s, bufs, k);
  if (n > 0) {
    JRPC__STAT_ADD(c->w->bytes_out, (uint64_t)n);
    jrpc__out_consume(&c->st.out, (size_t)n);
  }
}

/* Answer what the peer sent before the stop: whatever is already in the
 * socket's receive buffer, read without waiting. */
static void plain_drain(jrpcd_conn_t *c) {
  int fd = -1;
  uv_fileno(&c->h.h, &fd);
  for (int guard = 0;
       fd >= 0 && guard < 1024 && !c->closed && !c->finishing && !c->st.held;
       guard++) {
    size_t room;
    char *p = jrpc__stream_rbuf(&c->st, &room);
    if (!p)
      break;
    ssize_t n = read(fd, p, room);
    if (n > 0) {
      JRPC__STAT_ADD(c->w->bytes_in, (uint64_t)n);
      c->ev->input(c, (size_t)n, 0);
      continue;
    }
    if (n == 0) {
      c->eof = 1;
      c->ev->input(c, 0, 1);
    }
    break;
  }
}

const jrpcd_transport_t jrpcd_transport_plain = {
    .name = "plain",
    .send = plain_send,
    .send_early = plain_send_early,
    .drain = plain_drain,
};
