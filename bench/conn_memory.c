/* conn_memory.c - what an idle connection costs the daemon: reads the
 * daemon's resident memory (VmRSS), opens N connections to it, makes one
 * call on each (so each has held an input buffer and written a reply at
 * least once), waits for the daemon to settle, and reads VmRSS again; then
 * closes them all and reads it a third time.
 *
 *   conn-memory -u SOCKET -p PID [-n N] [-f newline|length|websocket]
 *
 * websocket: the socket is an http listener with websocket = yes; each
 * connection is upgraded first and its call is a masked text frame.
 *
 * Prints the figures and a last line "RESULT conns=N rss_before_kib=..
 * rss_idle_kib=.. rss_closed_kib=.. bytes_per_conn=..". The daemon must
 * allow N connections (max_connections) and this process needs N file
 * descriptors (it raises its own soft limit). Exit 1 when a call fails. */
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

static uint64_t rss_kib(long pid) {
  char path[64], line[256];
  snprintf(path, sizeof(path), "/proc/%ld/status", pid);
  FILE *f = fopen(path, "r");
  if (!f) {
    fprintf(stderr, "conn-memory: %s: %s\n", path, strerror(errno));
    exit(2);
  }
  uint64_t kib = 0;
  while (fgets(line, sizeof(line), f))
    if (sscanf(line, "VmRSS: %lu kB", &kib) == 1)
      break;
  fclose(f);
  return kib;
}

static void settle(void) {
  struct timespec ts = {0, 300 * 1000000L};
  nanosleep(&ts, NULL);
}

enum { NEWLINE, LENGTH, WEBSOCKET };

/* The upgrade, on a blocking socket: 0 once the 101 is read. */
static int upgrade(int fd) {
  static const char req[] = "GET / HTTP/1.1\r\nUpgrade: websocket\r\n"
                            "Connection: Upgrade\r\n"
                            "Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\n"
                            "Sec-WebSocket-Version: 13\r\n\r\n";
  if (write(fd, req, sizeof(req) - 1) != (ssize_t)(sizeof(req) - 1))
    return -1;
  char head[512];
  size_t n = 0;
  while (n < sizeof(head) &&
         (n < 4 || memcmp(head + n - 4, "\r\n\r\n", 4) != 0)) {
    if (read(fd, head + n, 1) != 1)
      return -1;
    n++;
  }
  return n > 12 && memcmp(head, "HTTP/1.1 101", 12) == 0 ? 0 : -1;
}

static int open_one(const char *path) {
  int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
  struct sockaddr_un sa = {.sun_family = AF_UNIX};
  snprintf(sa.sun_path, sizeof(sa.sun_path), "%s", path);
  if (fd < 0 || connect(fd, (struct sockaddr *)&sa, sizeof(sa)) != 0) {
    fprintf(stderr, "conn-memory: connect %s: %s\n", path, strerror(errno));
    exit(2);
  }
  return fd;
}

/* One math.add call, answered in full (blocking socket). */
static int call_once(int fd, int kind, int id) {
  char req[128], frame[132], rep[256];
  int n = snprintf(req, sizeof(req),
                   "{\"jsonrpc\":\"2.0\",\"method\":\"math.add\",\"params\":"
                   "[%d,1],\"id\":%d}",
                   id, id);
  size_t len = 0, pre = kind == WEBSOCKET ? 2 : kind == LENGTH ? 4 : 0;
  if (kind == WEBSOCKET) {
    /* masked (a zero key), under 126 bytes */
    frame[0] = (char)0x81;
    frame[1] = (char)(0x80 | n);
    memset(frame + 2, 0, 4);
    memcpy(frame + 6, req, (size_t)n);
    len = (size_t)n + 6;
  } else if (kind == LENGTH) {
    frame[0] = frame[1] = 0;
    frame[2] = (char)(n >> 8);
    frame[3] = (char)n;
    memcpy(frame + 4, req, (size_t)n);
    len = (size_t)n + 4;
  } else {
    memcpy(frame, req, (size_t)n);
    frame[n] = '\n';
    len = (size_t)n + 1;
  }
  if (write(fd, frame, len) != (ssize_t)len)
    return -1;
  char want[96];
  int wn =
      snprintf(want, sizeof(want),
               "{\"jsonrpc\":\"2.0\",\"result\":%d,\"id\":%d}", id + 1, id);
  size_t need = (size_t)wn + (kind == NEWLINE ? 1 : pre), got = 0;
  while (got < need) {
    ssize_t k = read(fd, rep + got, sizeof(rep) - got);
    if (k <= 0)
      return -1;
    got += (size_t)k;
  }
  const char *body = rep + pre;
  return got == need && memcmp(body, want, (size_t)wn) == 0 ? 0 : -1;
}

int main(int argc, char **argv) {
  const char *path = NULL;
  long pid = 0, n = 10000;
  int kind = NEWLINE, opt;
  while ((opt = getopt(argc, argv, "u:p:n:f:")) != -1) {
    switch (opt) {
    case 'u':
      path = optarg;
      break;
    case 'p':
      pid = atol(optarg);
      break;
    case 'n':
      n = atol(optarg);
      break;
    case 'f':
      kind = strcmp(optarg, "length") == 0      ? LENGTH
             : strcmp(optarg, "websocket") == 0 ? WEBSOCKET
                                                : NEWLINE;
      break;
    default:
      goto usage;
    }
  }
  if (!path || pid <= 0 || n <= 0)
    goto usage;
  struct rlimit rl;
  if (getrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_cur < rl.rlim_max) {
    rl.rlim_cur = rl.rlim_max;
    setrlimit(RLIMIT_NOFILE, &rl);
  }
  if (getrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_cur != RLIM_INFINITY &&
      (long)rl.rlim_cur < n + 16) {
    fprintf(stderr, "conn-memory: open-file limit %lu is too low for %ld\n",
            (unsigned long)rl.rlim_cur, n);
    return 2;
  }
  int *fds = calloc((size_t)n, sizeof(*fds));
  if (!fds)
    return 2;
  /* Warm the daemon first, so that its pools and arenas are not counted
   * as connection cost. */
  int warm = open_one(path);
  if ((kind == WEBSOCKET && upgrade(warm) != 0) ||
      call_once(warm, kind, 0) != 0) {
    fprintf(stderr, "conn-memory: warm-up call failed\n");
    return 1;
  }
  settle();
  uint64_t before = rss_kib(pid);
  for (long i = 0; i < n; i++) {
    fds[i] = open_one(path);
    if ((kind == WEBSOCKET && upgrade(fds[i]) != 0) ||
        call_once(fds[i], kind, (int)i + 1) != 0) {
      fprintf(stderr, "conn-memory: call on connection %ld failed\n", i);
      return 1;
    }
  }
  settle();
  uint64_t idle = rss_kib(pid);
  for (long i = 0; i < n; i++)
    close(fds[i]);
  settle();
  uint64_t closed = rss_kib(pid);
  close(warm);
  double per = (double)(idle - before) * 1024.0 / (double)n;
  printf("daemon VmRSS: %lu KiB before, %lu KiB with %ld idle connections "
         "(each made one call), %lu KiB after closing them\n",
         (unsigned long)before, (unsigned long)idle, n, (unsigned long)closed);
  printf("per idle connection: %.0f bytes\n", per);
  printf("RESULT conns=%ld rss_before_kib=%lu rss_idle_kib=%lu "
         "rss_closed_kib=%lu bytes_per_conn=%.0f\n",
         n, (unsigned long)before, (unsigned long)idle, (unsigned long)closed,
         per);
  free(fds);
  return 0;
usage:
  fprintf(stderr, "usage: conn-memory -u SOCKET -p PID [-n N] "
                  "[-f newline|length|websocket]\n");
  return 2;
}
