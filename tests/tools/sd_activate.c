/* sd_activate.c - starts a program the way systemd's socket activation
 * does, for tests on machines without systemd: binds and listens on the
 * sockets named on the command line, moves them to fds 3, 4, ..., sets
 * LISTEN_FDS, LISTEN_PID and LISTEN_FDNAMES, and execs the program.
 *
 *   sd_activate [-p PID] [-N] [-L] NAME=unix:PATH|NAME=tcp:ADDR:PORT ...
 *               -- PROG [ARG]...
 *
 * exec keeps the pid, so LISTEN_PID=getpid() here is the program's pid, as
 * when systemd sets it in its child; and a test's $! is the program's.
 *   -p PID  LISTEN_PID=PID instead (sockets meant for another process)
 *   -N      no LISTEN_FDNAMES (as from a manager that predates names)
 *   -L      bind but do not listen (what a manager must never pass)
 * ADDR is an IPv4 address or an IPv6 one in brackets. A Unix PATH must not
 * exist yet. */
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#define MAX_SOCKETS 16

static void die(const char *what, const char *arg) {
  fprintf(stderr, "sd_activate: %s: %s: %s\n", what, arg,
          errno ? strerror(errno) : "invalid");
  exit(2);
}

static int open_unix(const char *path, int do_listen) {
  struct sockaddr_un sa;
  memset(&sa, 0, sizeof(sa));
  sa.sun_family = AF_UNIX;
  errno = 0;
  if (strlen(path) >= sizeof(sa.sun_path))
    die("path too long", path);
  memcpy(sa.sun_path, path, strlen(path));
  int fd = socket(AF_UNIX, SOCK_STREAM, 0);
  if (fd < 0 || bind(fd, (struct sockaddr *)&sa, sizeof(sa)) != 0 ||
      (do_listen && listen(fd, 64) != 0))
    die("unix socket", path);
  return fd;
}

static int open_tcp(const char *spec, int do_listen) {
  char host[64];
  const char *colon = strrchr(spec, ':');
  errno = 0;
  if (!colon || (size_t)(colon - spec) >= sizeof(host))
    die("expected ADDR:PORT", spec);
  memcpy(host, spec, (size_t)(colon - spec));
  host[colon - spec] = '\0';
  int port = atoi(colon + 1);
  struct sockaddr_storage ss;
  socklen_t sl;
  memset(&ss, 0, sizeof(ss));
  struct sockaddr_in *s4 = (struct sockaddr_in *)&ss;
  struct sockaddr_in6 *s6 = (struct sockaddr_in6 *)&ss;
  size_t hl = strlen(host);
  if (hl > 2 && host[0] == '[' && host[hl - 1] == ']') {
    host[hl - 1] = '\0';
    if (inet_pton(AF_INET6, host + 1, &s6->sin6_addr) != 1)
      die("not an IPv6 address", spec);
    s6->sin6_family = AF_INET6;
    s6->sin6_port = htons((uint16_t)port);
    sl = sizeof(*s6);
  } else if (inet_pton(AF_INET, host, &s4->sin_addr) == 1) {
    s4->sin_family = AF_INET;
    s4->sin_port = htons((uint16_t)port);
    sl = sizeof(*s4);
  } else {
    die("not an IP address", spec);
  }
  int fd = socket(ss.ss_family, SOCK_STREAM, 0);
  int one = 1;
  if (fd < 0 ||
      setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one)) != 0 ||
      bind(fd, (struct sockaddr *)&ss, sl) != 0 ||
      (do_listen && listen(fd, 64) != 0))
    die("tcp socket", spec);
  return fd;
}

int main(int argc, char **argv) {
  const char *pid = NULL;
  int names = 1, do_listen = 1, opt;
  while ((opt = getopt(argc, argv, "+p:NL")) != -1) {
    switch (opt) {
    case 'p':
      pid = optarg;
      break;
    case 'N':
      names = 0;
      break;
    case 'L':
      do_listen = 0;
      break;
    default:
      return 2;
    }
  }
  int fds[MAX_SOCKETS], n = 0;
  char fdnames[4096] = "";
  size_t used = 0;
  for (; optind < argc && strcmp(argv[optind], "--") != 0; optind++) {
    char *spec = argv[optind];
    char *eq = strchr(spec, '=');
    errno = 0;
    if (!eq || n == MAX_SOCKETS)
      die("expected NAME=unix:PATH or NAME=tcp:ADDR:PORT", spec);
    *eq = '\0';
    if (!strncmp(eq + 1, "unix:", 5))
      fds[n] = open_unix(eq + 6, do_listen);
    else if (!strncmp(eq + 1, "tcp:", 4))
      fds[n] = open_tcp(eq + 5, do_listen);
    else
      die("unknown socket kind", eq + 1);
    used += (size_t)snprintf(fdnames + used, sizeof(fdnames) - used, "%s%s",
                             n ? ":" : "", spec);
    if (used >= sizeof(fdnames))
      die("names too long", spec);
    n++;
  }
  if (optind + 1 >= argc) {
    fprintf(stderr, "usage: sd_activate [-p PID] [-N] [-L] NAME=KIND:ADDR... "
                    "-- PROG [ARG]...\n");
    return 2;
  }
  /* Out of the way of 3..3+n-1 first, or moving one socket onto its place
   * could close another still waiting to move. */
  for (int i = 0; i < n; i++) {
    int high = fcntl(fds[i], F_DUPFD, 3 + n);
    if (high < 0)
      die("dup", "socket");
    close(fds[i]);
    fds[i] = high;
  }
  for (int i = 0; i < n; i++) {
    /* dup2 leaves the new fd without FD_CLOEXEC: it survives the exec. */
    if (dup2(fds[i], 3 + i) < 0)
      die("dup2", "socket");
    close(fds[i]);
  }
  char num[32];
  snprintf(num, sizeof(num), "%d", n);
  setenv("LISTEN_FDS", num, 1);
  snprintf(num, sizeof(num), "%ld", (long)getpid());
  setenv("LISTEN_PID", pid ? pid : num, 1);
  if (names)
    setenv("LISTEN_FDNAMES", fdnames, 1);
  else
    unsetenv("LISTEN_FDNAMES");
  execvp(argv[optind + 1], argv + optind + 1);
  die("exec", argv[optind + 1]);
  return 2;
}
