/* sd_notify_recv.c - the service manager's end of sd_notify(3), for tests
 * on machines without systemd: receives the datagrams sent to ADDR (a path,
 * or "@name" in the abstract namespace) and appends each to OUT as one
 * line: the sender's pid, then the datagram's lines, tab-separated.
 *
 *   sd_notify_recv ADDR OUT [SECONDS]
 *
 * OUT is created once ADDR is bound, so a test can wait for it before
 * starting the sender. Exits after SECONDS (default 120), so that a test
 * that forgets it never leaves it behind for long; SIGTERM ends it too. */
#include <errno.h>
#include <fcntl.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

static void die(const char *what, const char *arg) {
  fprintf(stderr, "sd_notify_recv: %s: %s: %s\n", what, arg, strerror(errno));
  exit(2);
}

int main(int argc, char **argv) {
  if (argc < 3 || argc > 4) {
    fprintf(stderr, "usage: sd_notify_recv ADDR OUT [SECONDS]\n");
    return 2;
  }
  const char *addr = argv[1];
  struct sockaddr_un sa;
  memset(&sa, 0, sizeof(sa));
  sa.sun_family = AF_UNIX;
  size_t n = strlen(addr);
  errno = ENAMETOOLONG;
  if (n < 2 || n >= sizeof(sa.sun_path))
    die("address", addr);
  memcpy(sa.sun_path, addr, n);
  socklen_t sl = (socklen_t)(offsetof(struct sockaddr_un, sun_path) + n);
  if (addr[0] == '@')
    sa.sun_path[0] = '\0';
  else
    sl++;
  int fd = socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0);
  int one = 1;
  if (fd < 0 || setsockopt(fd, SOL_SOCKET, SO_PASSCRED, &one, sizeof(one)) ||
      bind(fd, (struct sockaddr *)&sa, sl) != 0)
    die("bind", addr);
  int out = open(argv[2], O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
  if (out < 0)
    die("open", argv[2]);
  alarm(argc == 4 ? (unsigned)atoi(argv[3]) : 120);
  for (;;) {
    char buf[4096], line[4200];
    union {
      struct cmsghdr h;
      char space[CMSG_SPACE(sizeof(struct ucred))];
    } ctl;
    struct iovec iov = {.iov_base = buf, .iov_len = sizeof(buf) - 1};
    struct msghdr m;
    memset(&m, 0, sizeof(m));
    m.msg_iov = &iov;
    m.msg_iovlen = 1;
    m.msg_control = &ctl;
    m.msg_controllen = sizeof(ctl);
    ssize_t k = recvmsg(fd, &m, 0);
    if (k < 0) {
      if (errno == EINTR)
        continue;
      die("recvmsg", addr);
    }
    buf[k] = '\0';
    long pid = 0;
    for (struct cmsghdr *c = CMSG_FIRSTHDR(&m); c; c = CMSG_NXTHDR(&m, c))
      if (c->cmsg_level == SOL_SOCKET && c->cmsg_type == SCM_CREDENTIALS) {
        struct ucred cr;
        memcpy(&cr, CMSG_DATA(c), sizeof(cr));
        pid = (long)cr.pid;
      }
    for (char *p = buf; *p; p++)
      if (*p == '\n')
        *p = '\t';
    int len = snprintf(line, sizeof(line), "pid=%ld\t%s\n", pid, buf);
    /* One write per datagram: a test polling OUT never sees half a line. */
    if (write(out, line, (size_t)len) != len)
      die("write", argv[2]);
  }
}
