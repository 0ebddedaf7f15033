/* transport.c - connecting, framing and the deadline. Every wait is a
 * poll() bounded by what is left of the endpoint's timeout, so a server
 * that never answers, or answers half a frame, costs at most that long. */
#include "transport.h"
#include "default_socket.h"
#include "jrpc.h"

#include <errno.h>
#include <fcntl.h>
#include <netdb.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

const char *jc_endpoint_desc(const jc_endpoint *ep) {
  static char desc[600];
  if (ep->url)
    snprintf(desc, sizeof desc, "%s", ep->url);
  else if (ep->unix_path)
    snprintf(desc, sizeof desc, "unix:%s", ep->unix_path);
  else
    snprintf(desc, sizeof desc, "tcp:%s", ep->tcp);
  return desc;
}

const char *jc_no_reply(const jc_conn *c) {
  return c->ep->framing == JC_HTTP
             ? "the server answered without a reply (HTTP 204 No Content)"
             : "the server closed the connection without replying";
}

int jc_exit_for(int status) {
  return status == JC_TIMEOUT ? JC_EXIT_TIMEOUT : JC_EXIT_USAGE;
}

/* Milliseconds left until the deadline, 0 when it has passed. */
static int remaining_ms(const jc_conn *c) {
  struct timespec now;
  clock_gettime(CLOCK_MONOTONIC, &now);
  long long ms = (long long)(c->deadline.tv_sec - now.tv_sec) * 1000 +
                 (c->deadline.tv_nsec - now.tv_nsec) / 1000000;
  if (ms <= 0)
    return 0;
  return ms > 0x7fffffff ? 0x7fffffff : (int)ms;
}

volatile int jc_stop;

int jc_wait(jc_conn *c, short events, const char *doing) {
  for (;;) {
    struct pollfd p = {.fd = c->fd, .events = events};
    int ms = c->forever ? -1 : remaining_ms(c);
    struct timespec ts = {.tv_sec = ms / 1000,
                          .tv_nsec = (long)(ms % 1000) * 1000000};
    if (jc_stop)
      return JC_STOPPED;
    /* The stop signals get through only inside ppoll: one that came
     * before it is seen above, not lost. */
    int n = ms != 0 ? ppoll(&p, 1, ms < 0 ? NULL : &ts,
                            (const sigset_t *)c->sigmask)
                    : 0;
    if (n > 0)
      return JC_OK;
    if (n < 0 && errno == EINTR)
      continue;
    if (n < 0) {
      jc_warn("%s: poll: %s", jc_endpoint_desc(c->ep), strerror(errno));
      return JC_ERR;
    }
    jc_warn("%s: timed out after %d ms %s", jc_endpoint_desc(c->ep),
            c->ep->timeout_ms, doing);
    return JC_TIMEOUT;
  }
}

/* Splits "HOST:PORT" or "[V6]:PORT"; host and port point into copy. */
static int split_hostport(char *copy, char **host, char **port) {
  char *colon;
  if (copy[0] == '[') {
    char *end = strchr(copy, ']');
    if (!end || end[1] != ':')
      return -1;
    *end = '\0';
    *host = copy + 1;
    colon = end + 1;
  } else {
    colon = strrchr(copy, ':');
    if (!colon)
      return -1;
    *colon = '\0';
    *host = copy;
  }
  *port = colon + 1;
  /* A number: getaddrinfo would take a service name, and say only
   * "Servname not supported" of a typo. */
  size_t digits = strspn(*port, "0123456789");
  long num = digits && digits <= 5 && !(*port)[digits] ? atol(*port) : 0;
  return **host && num >= 1 && num <= 65535 ? 0 : -1;
}

/* Why a connect failed, in terms of what to do about it. */
static void explain_connect(const jc_conn *c, int err) {
  const char *where = jc_endpoint_desc(c->ep), *path = c->ep->unix_path;
  const char *whose = c->ep->default_path
                          ? "jrpc's default socket; -u PATH or JRPC_URL "
                            "names another"
                          : "is jrpcd running, and is this its socket?";
  struct stat st;
  if (path && err == ENOENT) {
    jc_warn("cannot connect to %s: no daemon listening: there is no socket "
            "there (%s)",
            where, whose);
  } else if (path && err == ECONNREFUSED) {
    jc_warn("cannot connect to %s: no daemon listening: the socket file is "
            "left from one that stopped (%s)",
            where, whose);
  } else if (err == ECONNREFUSED) {
    jc_warn("cannot connect to %s: no daemon listening on that port (is "
            "jrpcd running, with a listener there?)",
            where);
  } else if (path && (err == EACCES || err == EPERM) && stat(path, &st) == 0) {
    jc_warn("cannot connect to %s: permission denied: the socket is mode "
            "%04o, owner uid %u, group gid %u, and you are uid %u (the "
            "listener's mode and group decide who may connect)",
            where, (unsigned)(st.st_mode & 07777), (unsigned)st.st_uid,
            (unsigned)st.st_gid, (unsigned)geteuid());
  } else {
    jc_warn("cannot connect to %s: %s", where, strerror(err));
  }
}

/* A non-blocking connect to one address, finished within the deadline. */
static int connect_addr(jc_conn *c, int family, const struct sockaddr *sa,
                        socklen_t salen) {
  c->fd = socket(family, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
  if (c->fd < 0) {
    jc_warn("socket: %s", strerror(errno));
    return JC_ERR;
  }
  if (connect(c->fd, sa, salen) == 0)
    return JC_OK;
  int err = errno;
  if (err == EINPROGRESS) {
    int st = jc_wait(c, POLLOUT, "connecting");
    if (st != JC_OK)
      return st;
    socklen_t len = sizeof err;
    if (getsockopt(c->fd, SOL_SOCKET, SO_ERROR, &err, &len) < 0)
      err = errno;
    if (err == 0)
      return JC_OK;
  }
  c->nobody = err == ENOENT || err == ECONNREFUSED;
  if (!(c->nobody && c->retrying))
    explain_connect(c, err);
  close(c->fd);
  c->fd = -1;
  return JC_ERR;
}

static int connect_unix(jc_conn *c) {
  struct sockaddr_un sa = {.sun_family = AF_UNIX};
  size_t n = strlen(c->ep->unix_path);
  char why[1024];
  /* Checked on each connect, not once: the interactive prompt connects
   * again for every call. */
  if (c->ep->default_path &&
      jrpc_default_socket_trusted(c->ep->unix_path, why, sizeof why) != 0) {
    jc_warn("%s", why);
    return JC_ERR;
  }
  if (n >= sizeof sa.sun_path) {
    jc_warn("socket path too long (at most %zu bytes): %s",
            sizeof sa.sun_path - 1, c->ep->unix_path);
    return JC_ERR;
  }
  memcpy(sa.sun_path, c->ep->unix_path, n + 1);
  int st = connect_addr(c, AF_UNIX, (struct sockaddr *)&sa, sizeof sa);
  if (st != JC_OK || !c->ep->default_path)
    return st;
  /* The file checked above may have been replaced before the connect; the
   * process that listens is who reads what we send. */
  struct ucred cred = {.uid = (uid_t)-1};
  socklen_t len = sizeof cred;
  if (getsockopt(c->fd, SOL_SOCKET, SO_PEERCRED, &cred, &len) == 0 &&
      jrpc_default_socket_uid_ok(c->ep->unix_path, (unsigned)cred.uid))
    return JC_OK;
  jc_warn("%s is served by uid %u, neither you (uid %u) nor root: another "
          "user may be listening to read your requests, so nothing is sent "
          "(give -u PATH if you trust it)",
          c->ep->unix_path, (unsigned)cred.uid, (unsigned)geteuid());
  close(c->fd);
  c->fd = -1;
  return JC_ERR;
}

static int connect_tcp(jc_conn *c) {
  char *copy = strdup(c->ep->tcp), *host, *port;
  if (!copy || split_hostport(copy, &host, &port) < 0) {
    jc_warn("\"%s\" is not HOST:PORT (like 127.0.0.1:7400 or [::1]:7400; "
            "the port a number from 1 to 65535)",
            c->ep->tcp);
    free(copy);
    return JC_ERR;
  }
  struct addrinfo hints = {.ai_socktype = SOCK_STREAM}, *res = NULL;
  int rc = getaddrinfo(host, port, &hints, &res);
  if (rc != 0) {
    jc_warn("%s: %s", c->ep->tcp, gai_strerror(rc));
    free(copy);
    return JC_ERR;
  }
  int st = JC_ERR;
  for (struct addrinfo *ai = res; ai; ai = ai->ai_next) {
    st = connect_addr(c, ai->ai_family, ai->ai_addr, ai->ai_addrlen);
    if (st != JC_ERR)
      break;
  }
  freeaddrinfo(res);
  if (st == JC_OK && c->ep->tls)
    st = jc_tls_start(c, host);
  free(copy);
  return st;
}

/* A connection to the endpoint, and what its framing says first. */
static int connect_endpoint(jc_conn *c) {
  int st = c->ep->unix_path ? connect_unix(c) : connect_tcp(c);
  const jc_framing_ops *fx = &jc_framings[c->ep->framing];
  return st == JC_OK && fx->open ? fx->open(c) : st;
}

void jc_rearm(jc_conn *c) {
  clock_gettime(CLOCK_MONOTONIC, &c->deadline);
  c->deadline.tv_sec += c->ep->timeout_ms / 1000;
  c->deadline.tv_nsec += (long)(c->ep->timeout_ms % 1000) * 1000000;
  if (c->deadline.tv_nsec >= 1000000000) {
    c->deadline.tv_sec++;
    c->deadline.tv_nsec -= 1000000000;
  }
}

int jc_remaining_ms(const jc_conn *c) {
  return remaining_ms(c);
}

/* Whether the --wait deadline is still ahead. */
static bool waiting(const jc_conn *c) {
  struct timespec now;
  clock_gettime(CLOCK_MONOTONIC, &now);
  return now.tv_sec < c->wait_until.tv_sec ||
         (now.tv_sec == c->wait_until.tv_sec &&
          now.tv_nsec < c->wait_until.tv_nsec);
}

int jc_connect(jc_conn *c, const jc_endpoint *ep) {
  memset(c, 0, sizeof *c);
  c->fd = -1;
  c->ep = ep;
  /* A TLS endpoint this jrpc cannot speak: said before any connection, so
   * that what is (not) listening there does not hide it. */
  if (ep->tls && !jc_tls_built())
    return jc_tls_start(c, NULL);
  /* A server that closes while we write must give an error, not kill us. */
  signal(SIGPIPE, SIG_IGN);
  clock_gettime(CLOCK_MONOTONIC, &c->wait_until);
  c->wait_until.tv_sec += ep->wait_ms / 1000;
  c->wait_until.tv_nsec += (long)(ep->wait_ms % 1000) * 1000000;
  if (c->wait_until.tv_nsec >= 1000000000) {
    c->wait_until.tv_sec++;
    c->wait_until.tv_nsec -= 1000000000;
  }
  for (;;) {
    /* --wait: quiet while nothing listens, the last refusal said. */
    c->retrying = ep->wait_ms > 0 && waiting(c);
    jc_rearm(c);
    int st = connect_endpoint(c);
    if (st != JC_ERR || !c->nobody || !c->retrying)
      return st;
    nanosleep(&(struct timespec){.tv_nsec = 100 * 1000000}, NULL);
  }
}

/* The socket closed and what was read from it dropped; the buffer is
 * kept for another connection. */
static void disconnect(jc_conn *c) {
  /* A connection never made has no endpoint. */
  if (c->fd >= 0 && c->ep && jc_framings[c->ep->framing].close)
    jc_framings[c->ep->framing].close(c);
  if (c->ssl)
    jc_tls_free(c);
  if (c->fd >= 0)
    close(c->fd);
  c->fd = -1;
  c->len = c->consumed = 0;
  c->resp.kind = 0;
  c->pending = 0;
  c->used = c->closing = c->done = false;
  c->ws.open = c->ws.close_sent = c->ws.close_seen = false;
}

int jc_reconnect(jc_conn *c) {
  disconnect(c);
  return connect_endpoint(c);
}

int jc_write_all(jc_conn *c, const char *p, size_t n) {
  if (c->ssl)
    return jc_tls_write_all(c, p, n);
  while (n > 0) {
    ssize_t w = send(c->fd, p, n, MSG_NOSIGNAL);
    if (w > 0) {
      p += w;
      n -= (size_t)w;
      continue;
    }
    if (w < 0 && errno == EINTR)
      continue;
    if (w < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
      int st = jc_wait(c, POLLOUT, "sending");
      if (st != JC_OK)
        return st;
      continue;
    }
    jc_warn("%s: send: %s", jc_endpoint_desc(c->ep), strerror(errno));
    return JC_ERR;
  }
  return JC_OK;
}

int jc_send(jc_conn *c, const char *data, size_t n) {
  return jc_framings[c->ep->framing].send(c, data, n);
}

void jc_send_done(jc_conn *c, bool owed) {
  const jc_framing_ops *fx = &jc_framings[c->ep->framing];
  if (fx->done) {
    fx->done(c, owed);
    return;
  }
  if (c->done)
    return;
  c->done = true;
  if (c->ssl)
    jc_tls_shutdown(c);
  else
    shutdown(c->fd, SHUT_WR);
}

/* The framing the first bytes of a reply are in, as far as they tell;
 * JC_FRAMINGS when they do not. */
static jc_framing sniff(const jc_conn *c) {
  const char *b = c->buf;
  if (c->len >= 5 && !memcmp(b, "HTTP/", 5))
    return JC_HTTP;
  if (c->len >= 15 && !strncasecmp(b, "Content-Length:", 15))
    return JC_CONTENT_LENGTH;
  if (b[0] == '{' || b[0] == '[')
    return JC_NEWLINE;
  if (c->len >= 4 && b[0] == '\0')
    return JC_LENGTH;
  return JC_FRAMINGS;
}

/* Whether the first bytes of a reply show another framing than ours (a
 * stream port answering HTTP, newline JSON on a length or content-length
 * port, a length prefix or a Content-Length head on a newline port):
 * said, with what to use instead. */
static bool wrong_framing(const jc_conn *c) {
  jc_framing theirs = sniff(c), ours = c->ep->framing;
  const char *desc = jc_endpoint_desc(c->ep), *name = jc_framings[ours].name;
  const char *tls = c->ssl ? "https" : "http";
  const char *host = c->ep->tcp ? c->ep->tcp : "HOST:PORT";
  switch (theirs == ours ? JC_FRAMINGS : theirs) {
  case JC_HTTP:
    jc_warn("%s: the server answers in HTTP: this is an http listener; use "
            "%s://%s/ as the endpoint",
            desc, tls, host);
    return true;
  case JC_NEWLINE:
    jc_warn("%s: the server answers newline-framed JSON, not %s-framed: "
            "leave out -f %s",
            desc, name, name);
    return true;
  case JC_LENGTH:
    jc_warn("%s: the reply begins with a 4-byte length, not %s: this "
            "listener has framing = length; %s -f length",
            desc, ours == JC_NEWLINE ? "JSON" : "a Content-Length head",
            ours == JC_NEWLINE ? "add" : "use");
    return true;
  case JC_CONTENT_LENGTH:
    jc_warn("%s: the reply begins with a Content-Length head, not %s: this "
            "listener has framing = content-length; use -f content-length",
            desc, ours == JC_NEWLINE ? "JSON" : "a 4-byte length");
    return true;
  default:
    return false;
  }
}

/* A complete frame at the start of buf, as the framing's row finds it
 * (jc_framing_ops.frame), once the reply's first bytes show no other
 * framing. */
static int complete_frame(jc_conn *c, bool at_eof, size_t *skip, size_t *n,
                          size_t *total) {
  if (c->len == 0)
    return 0;
  if (c->ep->framing != JC_HTTP && wrong_framing(c))
    return -1;
  return jc_framings[c->ep->framing].frame(c, at_eof, skip, n, total);
}

/* Drops the frame the last jc_recv handed out. */
static void compact(jc_conn *c) {
  if (c->consumed) {
    memmove(c->buf, c->buf + c->consumed, c->len - c->consumed);
    c->len -= c->consumed;
    c->consumed = 0;
  }
}

bool jc_buffered_frame(jc_conn *c) {
  size_t skip, n, total;
  compact(c);
  /* Decrypted bytes the TLS session holds do not show on the socket. */
  return complete_frame(c, false, &skip, &n, &total) != 0 || jc_tls_pending(c);
}

/* The server closed with nothing buffered: the end of the replies, but
 * over HTTP an error while a request is unanswered. */
static int closed(jc_conn *c) {
  if (c->ep->framing != JC_HTTP || c->pending == 0)
    return JC_EOF;
  jc_warn("%s: the server closed the connection without replying",
          jc_endpoint_desc(c->ep));
  return JC_ERR;
}

int jc_recv(jc_conn *c, const char **frame, size_t *n) {
  bool at_eof = false;
  compact(c);
  for (;;) {
    size_t skip, total;
    int have = complete_frame(c, at_eof, &skip, n, &total);
    if (have < 0)
      return JC_ERR;
    if (have) {
      *frame = c->buf + skip;
      c->consumed = total;
      if (c->ep->framing == JC_HTTP) {
        c->resp.kind = 0;
        c->pending--;
        c->used = true;
      }
      return have == 2 ? JC_EOF : JC_OK;
    }
    if (at_eof) {
      jc_warn("%s: the connection closed in the middle of a reply (%zu "
              "bytes of it received)",
              jc_endpoint_desc(c->ep), c->len);
      return JC_ERR;
    }
    long r = jc_read_more(c, "waiting for the reply");
    if (r < 0)
      return (int)r; /* said already */
    if (r == 0) {
      if (c->len == 0)
        return closed(c);
      at_eof = true; /* HTTP: it may end a body without a length */
    }
  }
}

long jc_read_more(jc_conn *c, const char *doing) {
  for (;;) {
    if (c->cap - c->len < 65536) {
      size_t cap = c->cap ? c->cap * 2 : 65536;
      char *nb = realloc(c->buf, cap);
      if (!nb) {
        jc_warn("out of memory reading a reply");
        return JC_ERR;
      }
      c->buf = nb;
      c->cap = cap;
    }
    ssize_t r = c->ssl ? jc_tls_read(c, c->buf + c->len, c->cap - c->len)
                       : recv(c->fd, c->buf + c->len, c->cap - c->len, 0);
    if (r >= 0 || c->ssl) {
      c->len += r > 0 ? (size_t)r : 0;
      return r;
    }
    if (errno == EINTR)
      continue;
    if (errno == EAGAIN || errno == EWOULDBLOCK) {
      int st = jc_wait(c, POLLIN, doing);
      if (st != JC_OK)
        return st;
      continue;
    }
    jc_warn("%s: recv: %s", jc_endpoint_desc(c->ep), strerror(errno));
    return JC_ERR;
  }
}

void jc_close(jc_conn *c) {
  disconnect(c);
  free(c->buf);
  c->buf = NULL;
  c->cap = 0;
}
