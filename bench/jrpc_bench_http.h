/* jrpc_bench_http.h - jrpc-bench's own small HTTP/1.1 client side: the
 * request head it puts before each JSON body, and reading the responses
 * that come back on a keep-alive connection, pipelined or not.
 *
 * Responses are read as jrpcd and the balancers in front of it send them:
 * a status line, headers, and a body whose size Content-Length gives. A
 * body sent chunked or until the close is refused (jrpc-bench never asks
 * for either), as is a head over HTTP_MAX_HEAD bytes. 204 and 304 have no
 * body whatever the headers say. */
#ifndef JRPC_BENCH_HTTP_H
#define JRPC_BENCH_HTTP_H

#include <stddef.h>

#define HTTP_MAX_HEAD 8192

enum {
  HTTP_NEED_MORE = 0,
  HTTP_RESPONSE = 1,
  HTTP_TOO_BIG = -1, /* a body over max_body */
  HTTP_BAD = -2      /* not a response jrpc-bench can read: *why says why */
};

typedef struct http_response {
  unsigned status;
  const char *body;
  size_t body_len;
  int close; /* Connection: close: the server ends the connection after it */
} http_response_t;

/* The next response in buf[*pos, len). *scan (>= *pos) is where the
 * search for the end of the head resumes, so that a head arriving in
 * pieces is searched once. HTTP_RESPONSE with *r filled and *pos (and
 * *scan) past the response; HTTP_NEED_MORE; HTTP_TOO_BIG; or HTTP_BAD with
 * a static message in *why. */
int http_next_response(const char *buf, size_t len, size_t *pos, size_t *scan,
                       size_t max_body, http_response_t *r, const char **why);

/* The head of a POST of a body_len-byte JSON body to path on host, into
 * dst: its length, or 0 when it does not fit in cap bytes. */
size_t http_request_head(char *dst, size_t cap, const char *path,
                         const char *host, size_t body_len);

#endif
