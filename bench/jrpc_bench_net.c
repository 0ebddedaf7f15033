/* jrpc_bench_net.c - see jrpc_bench_net.h. */
#include "jrpc_bench_net.h"

#include <errno.h>
#include <fcntl.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <stdio.h>
#include <string.h>
#include <sys/un.h>
#include <unistd.h>

static int from_tcp(bench_addr_t *a, const char *spec) {
  char host[256];
  const char *port;
  if (spec[0] == '[') {
    const char *close = strchr(spec, ']');
    if (!close || close[1] != ':' || (size_t)(close - spec - 1) >= sizeof(host))
      goto bad;
    memcpy(host, spec + 1, (size_t)(close - spec - 1));
    host[close - spec - 1] = '\0';
    port = close + 2;
  } else {
    const char *colon = strrchr(spec, ':');
    if (!colon || strchr(spec, ':') != colon ||
        (size_t)(colon - spec) >= sizeof(host))
      goto bad;
    memcpy(host, spec, (size_t)(colon - spec));
    host[colon - spec] = '\0';
    port = colon + 1;
  }
  if (!*host || !*port)
    goto bad;
  struct addrinfo hints, *res = NULL;
  memset(&hints, 0, sizeof(hints));
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  hints.ai_flags = AI_NUMERICSERV;
  int rc = getaddrinfo(host, port, &hints, &res);
  if (rc != 0) {
    fprintf(stderr, "jrpc-bench: -t %s: %s\n", spec, gai_strerror(rc));
    return -1;
  }
  memcpy(&a->sa, res->ai_addr, res->ai_addrlen);
  a->len = res->ai_addrlen;
  freeaddrinfo(res);
  return 0;
bad:
  fprintf(stderr, "jrpc-bench: -t %s: expected HOST:PORT or [IPV6]:PORT\n",
          spec);
  return -1;
}

int bench_addr_from_opts(bench_addr_t *a, const bench_opts_t *o) {
  memset(a, 0, sizeof(*a));
  a->websocket = o->framing == FRAMING_WEBSOCKET;
  if (o->unix_path) {
    struct sockaddr_un *un = (struct sockaddr_un *)&a->sa;
    size_t n = strlen(o->unix_path);
    if (n == 0 || n >= sizeof(un->sun_path)) {
      fprintf(stderr, "jrpc-bench: -u %s: the path is %s\n", o->unix_path,
              n ? "too long for a Unix socket" : "empty");
      return -1;
    }
    un->sun_family = AF_UNIX;
    memcpy(un->sun_path, o->unix_path, n);
    a->len = sizeof(*un);
    a->is_unix = 1;
    snprintf(a->desc, sizeof(a->desc), "%s", o->unix_path);
    return 0;
  }
  snprintf(a->desc, sizeof(a->desc), "%s", o->tcp);
  return from_tcp(a, o->tcp);
}

/* The WebSocket handshake on a blocking socket: 0 once the 101 is read
 * (the server says nothing more until it is sent frames). */
static int ws_handshake(int fd) {
  static const char req[] = "GET / HTTP/1.1\r\nHost: bench\r\n"
                            "Upgrade: websocket\r\nConnection: Upgrade\r\n"
                            "Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\n"
                            "Sec-WebSocket-Version: 13\r\n\r\n";
  if (write(fd, req, sizeof(req) - 1) != (ssize_t)(sizeof(req) - 1))
    return -1;
  char head[1024];
  size_t n = 0;
  while (n < sizeof(head) - 1) {
    ssize_t k = read(fd, head + n, 1); /* not a byte past the head */
    if (k <= 0)
      return -1;
    n++;
    head[n] = '\0';
    if (n >= 4 && memcmp(head + n - 4, "\r\n\r\n", 4) == 0)
      break;
  }
  if (strncmp(head, "HTTP/1.1 101 ", 13) != 0) {
    fprintf(stderr, "jrpc-bench: the WebSocket handshake failed: %.*s\n",
            (int)strcspn(head, "\r"), head);
    errno = EPROTO;
    return -1;
  }
  return 0;
}

int bench_connect(const bench_addr_t *a) {
  int fd = socket(a->sa.ss_family, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0)
    return -1;
  /* Blocking: connect completes (or fails) before the run depends on it;
   * on loopback that is immediate. */
  if (connect(fd, (const struct sockaddr *)&a->sa, a->len) != 0)
    goto fail;
  if (!a->is_unix) {
    int one = 1;
    /* Requests are batched by the tool itself: Nagle would only delay. */
    if (setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one)) != 0)
      goto fail;
  }
  if (a->websocket && ws_handshake(fd) != 0)
    goto fail;
  int fl = fcntl(fd, F_GETFL);
  if (fl < 0 || fcntl(fd, F_SETFL, fl | O_NONBLOCK) != 0)
    goto fail;
  return fd;
fail:;
  int e = errno;
  close(fd);
  errno = e;
  return -1;
}
