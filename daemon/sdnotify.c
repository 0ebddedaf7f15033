/* sdnotify.c - see sdnotify.h. */
#include "sdnotify.h"

#include <errno.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

static int fd = -1;
static struct sockaddr_un addr;
static socklen_t addr_len;

int jrpcd_notify_open(void) {
  const char *v = getenv("NOTIFY_SOCKET");
  if (!v)
    return 0;
  size_t n = strlen(v);
  int rc = 0;
  if (n < 2 || (v[0] != '/' && v[0] != '@')) {
    rc = -EINVAL;
    goto out;
  }
  if (n >= sizeof(addr.sun_path)) {
    rc = -ENAMETOOLONG;
    goto out;
  }
  memset(&addr, 0, sizeof(addr));
  addr.sun_family = AF_UNIX;
  memcpy(addr.sun_path, v, n);
  /* An abstract name is all n bytes, with no terminating NUL counted; a
   * path counts its NUL, as the kernel accepts either way. */
  if (v[0] == '@') {
    addr.sun_path[0] = '\0';
    addr_len = (socklen_t)(offsetof(struct sockaddr_un, sun_path) + n);
  } else {
    addr_len = (socklen_t)(offsetof(struct sockaddr_un, sun_path) + n + 1);
  }
  fd = socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0);
  if (fd < 0)
    rc = -errno;
out:
  unsetenv("NOTIFY_SOCKET");
  return rc;
}

static int send_text(const char *text, size_t n) {
  if (fd < 0)
    return 0;
  struct iovec iov = {.iov_base = (void *)text, .iov_len = n};
  struct msghdr m;
  memset(&m, 0, sizeof(m));
  m.msg_name = &addr;
  m.msg_namelen = addr_len;
  m.msg_iov = &iov;
  m.msg_iovlen = 1;
  /* A datagram goes whole or not at all; systemd reads it with its
   * sender's credentials, which the kernel attaches by itself. */
  return sendmsg(fd, &m, MSG_NOSIGNAL) < 0 ? -errno : 0;
}

int jrpcd_notify(const char *fmt, ...) {
  if (fd < 0)
    return 0;
  char text[1024];
  va_list ap;
  va_start(ap, fmt);
  int n = vsnprintf(text, sizeof(text), fmt, ap);
  va_end(ap);
  if (n < 0)
    return -EINVAL;
  /* A long STATUS is cut rather than dropped: the state line comes first. */
  if ((size_t)n >= sizeof(text))
    n = (int)sizeof(text) - 1;
  return send_text(text, (size_t)n);
}

int jrpcd_notify_reloading(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  unsigned long long us = (unsigned long long)ts.tv_sec * 1000000ULL +
                          (unsigned long long)ts.tv_nsec / 1000ULL;
  return jrpcd_notify("RELOADING=1\nMONOTONIC_USEC=%llu\nSTATUS=reloading", us);
}

void jrpcd_notify_close(void) {
  if (fd >= 0)
    close(fd);
  fd = -1;
}
