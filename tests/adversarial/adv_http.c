/* adv_http.c - hostile HTTP clients against a framing = http listener of a
 * real jrpcd: slowloris heads, huge and overflowing chunk sizes, endless
 * headers, a Content-Length past any limit, garbage. Each gets its status
 * and a close within a bounded time, holds no buffer past the limits, and
 * the daemon goes on serving (adv_check after every scenario). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <errno.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include "adversarial/adv.h"

#define FRAME_TIMEOUT_MS 800

static char http_sock[108];

/* A blocking Unix connection to the http listener. */
static int dial(void) {
  int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
  assert_true(fd >= 0);
  struct sockaddr_un sa = {.sun_family = AF_UNIX};
  snprintf(sa.sun_path, sizeof(sa.sun_path), "%s", http_sock);
  assert_int_equal(connect(fd, (struct sockaddr *)&sa, sizeof(sa)), 0);
  return fd;
}

/* Sends what it can (the daemon may have closed already). */
static void put(int fd, const char *p, size_t n) {
  while (n) {
    ssize_t k = send(fd, p, n, MSG_NOSIGNAL);
    if (k <= 0)
      return;
    p += k;
    n -= (size_t)k;
  }
}

/* Everything until the daemon closes, within ms: 1 if it closed. */
static int read_to_eof(int fd, char *buf, size_t cap, int ms) {
  size_t n = 0;
  uint64_t end = e2e_now_ms() + (uint64_t)ms;
  buf[0] = '\0';
  for (;;) {
    uint64_t now = e2e_now_ms();
    if (now >= end)
      return 0;
    struct pollfd p = {fd, POLLIN, 0};
    if (poll(&p, 1, (int)(end - now)) <= 0)
      continue;
    ssize_t k = recv(fd, buf + n, cap - 1 - n, 0);
    if (k == 0 || (k < 0 && errno == ECONNRESET))
      return 1;
    if (k < 0)
      continue;
    n += (size_t)k;
    buf[n] = '\0';
    if (n == cap - 1)
      return 0;
  }
}

/* The client is answered `status` and closed within ms. */
static void expect_status_close(int fd, const char *status, int ms,
                                const char *what) {
  char buf[4096];
  if (!read_to_eof(fd, buf, sizeof(buf), ms))
    fail_msg("%s: not closed within %d ms (got \"%s\")", what, ms, buf);
  char line[64];
  snprintf(line, sizeof(line), "HTTP/1.1 %s\r\n", status);
  if (strncmp(buf, line, strlen(line)) != 0)
    fail_msg("%s: expected %s, got \"%s\"", what, status, buf);
  close(fd);
}

static void served(void) {
  static const char req[] =
      "POST / HTTP/1.1\r\nContent-Type: application/json\r\nConnection: "
      "close\r\nContent-Length: 59\r\n\r\n"
      "{\"jsonrpc\":\"2.0\",\"method\":\"math.add\",\"params\":[1,2],\"id\":1}";
  int fd = dial();
  put(fd, req, sizeof(req) - 1);
  char buf[1024];
  if (!read_to_eof(fd, buf, sizeof(buf), 1000) ||
      !strstr(buf, "{\"jsonrpc\":\"2.0\",\"result\":3,\"id\":1}"))
    fail_msg("a fresh http client was not served within 1 s: \"%s\"", buf);
  close(fd);
}

/* Many clients trickle their heads a byte at a time, never ending them:
 * each gets 408 once frame_timeout_ms has passed since its first byte, a
 * fresh client is served meanwhile. */
static void slowloris(e2e_daemon_t *d) {
  enum { N = 16 };
  int fds[N];
  static const char head[] = "POST / HTTP/1.1\r\nHost: x\r\nX-Slow: ";
  for (int i = 0; i < N; i++)
    fds[i] = dial();
  uint64_t start = e2e_now_ms();
  for (size_t b = 0; b < sizeof(head) - 1; b++) {
    for (int i = 0; i < N; i++)
      put(fds[i], head + b, 1);
    e2e_sleep_ms(10);
  }
  served();
  /* Then one byte of a header value every 50 ms: still 408 in time. */
  for (int k = 0; k < 40 && e2e_now_ms() - start < FRAME_TIMEOUT_MS * 3; k++) {
    for (int i = 0; i < N; i++)
      put(fds[i], "a", 1);
    e2e_sleep_ms(50);
  }
  for (int i = 0; i < N; i++)
    expect_status_close(fds[i], "408 Request Timeout", FRAME_TIMEOUT_MS * 3,
                        "a slowloris head");
}

static void send_expect(const char *req, size_t n, const char *status,
                        const char *what) {
  int fd = dial();
  put(fd, req, n);
  expect_status_close(fd, status, 2000, what);
}

/* Chunk sizes past max_frame_bytes, past 2^64, and a Content-Length past
 * any limit: refused from the size alone, before any body is read. */
static void huge_sizes(e2e_daemon_t *d) {
  static const char huge[] = "POST / HTTP/1.1\r\nTransfer-Encoding: chunked\r\n"
                             "\r\nffffffff\r\n{";
  send_expect(huge, sizeof(huge) - 1, "413 Content Too Large", "a 4 GiB chunk");
  static const char over[] = "POST / HTTP/1.1\r\nTransfer-Encoding: chunked\r\n"
                             "\r\n10000000000000000\r\n";
  send_expect(over, sizeof(over) - 1, "400 Bad Request",
              "a chunk size over 2^64");
  static const char cl[] =
      "POST / HTTP/1.1\r\nContent-Length: 99999999999999999999\r\n\r\n";
  send_expect(cl, sizeof(cl) - 1, "400 Bad Request",
              "a Content-Length over 2^64");
  static const char big[] =
      "POST / HTTP/1.1\r\nContent-Length: 4294967296\r\n\r\n";
  send_expect(big, sizeof(big) - 1, "413 Content Too Large",
              "a Content-Length of 4 GiB");
  /* Chunks each under the limit that add up past it. */
  int fd = dial();
  static const char start[] =
      "POST / HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n";
  put(fd, start, sizeof(start) - 1);
  char *chunk = e2e_calloc(1, 70000);
  memcpy(chunk, "10000\r\n", 7);
  memset(chunk + 7, ' ', 0x10000);
  memcpy(chunk + 7 + 0x10000, "\r\n", 2);
  for (int i = 0; i < 20; i++)
    put(fd, chunk, 7 + 0x10000 + 2);
  e2e_free(chunk);
  expect_status_close(fd, "413 Content Too Large", 2000,
                      "chunks adding up past max_frame_bytes");
}

/* Headers without end: 431 at the limit, the rest never buffered. */
static void endless_headers(e2e_daemon_t *d) {
  int fd = dial();
  put(fd, "POST / HTTP/1.1\r\n", 17);
  char line[1024];
  memset(line, 'h', sizeof(line));
  memcpy(line, "X-A: ", 5);
  memcpy(line + sizeof(line) - 2, "\r\n", 2);
  uint64_t rss0 = e2e_rss_kib(d);
  for (int i = 0; i < 64; i++)
    put(fd, line, sizeof(line));
  expect_status_close(fd, "431 Request Header Fields Too Large", 2000,
                      "endless headers");
  if (e2e_rss_kib(d) > rss0 + 8192)
    fail_msg("endless headers: RSS grew from %llu to %llu KiB",
             (unsigned long long)rss0, (unsigned long long)e2e_rss_kib(d));
  send_expect("\x16\x03\x01garbage\r\n\r\n", 14, "400 Bad Request", "garbage");
}

static void test_hostile_http(void **state) {
  static const struct {
    void (*run)(e2e_daemon_t *);
    const char *name;
  } scenarios[] = {
      {slowloris, "slowloris heads"},
      {huge_sizes, "huge and overflowing sizes"},
      {endless_headers, "endless headers and garbage"},
  };
  e2e_daemon_t *d = *state;
  char dir[] = "/tmp/adv_http.XXXXXX";
  assert_non_null(mkdtemp(dir));
  snprintf(http_sock, sizeof(http_sock), "%s/http.sock", dir);
  char plugins[1024];
  snprintf(plugins, sizeof(plugins),
           "[listen http]\nunix = %s\nframing = http\n%s", http_sock,
           e2e_plugins_default);
  char server[64];
  snprintf(server, sizeof(server), "frame_timeout_ms = %d\n", FRAME_TIMEOUT_MS);
  e2e_opts_t o = {.server = server, .plugins = plugins};
  adv_base_t base;
  adv_start(d, &o, &base);
  for (size_t i = 0; i < sizeof(scenarios) / sizeof(scenarios[0]); i++) {
    scenarios[i].run(d);
    served();
    adv_check(d, &base, scenarios[i].name);
  }
  e2e_stop(d);
  rmdir(dir);
}

int main(void) {
  adv_filter_from_env();
  const struct CMUnitTest tests[] = {
      cmocka_unit_test_setup_teardown(test_hostile_http, adv_setup,
                                      adv_teardown),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
