/* e2e.h - end-to-end test support: the real jrpcd binary started on a
 * config of its own in a fresh temporary directory, and a client that talks
 * to it over real Unix and TCP sockets in either framing.
 *
 * Every wait is bounded: a daemon that hangs fails the test instead of
 * hanging the suite. Helpers assert with cmocka, so they must only be called
 * from the test's own thread. */
#ifndef JRPC_E2E_H
#define JRPC_E2E_H

#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <sys/types.h>

/* Generous bounds for liveness only; nothing asserts on speed. */
#define E2E_REPLY_MS 10000 /* one reply to arrive */
#define E2E_START_MS 10000 /* the daemon to say it is serving */
#define E2E_STOP_MS 10000  /* the daemon to exit after SIGTERM */

enum { E2E_NEWLINE = 0, E2E_LENGTH = 1 }; /* as jrpc__framing_t */

/* The four listeners every test daemon has. */
typedef enum e2e_ep {
  E2E_UNIX_NL = 0,
  E2E_UNIX_LEN,
  E2E_TCP_NL,
  E2E_TCP_LEN,
  E2E_NEP
} e2e_ep_t;

static inline int e2e_ep_framing(e2e_ep_t ep) {
  return ep == E2E_UNIX_LEN || ep == E2E_TCP_LEN ? E2E_LENGTH : E2E_NEWLINE;
}
const char *e2e_ep_name(e2e_ep_t ep);

/* What goes into the config besides the listeners. */
typedef struct e2e_opts {
  unsigned workers;     /* 0: 2 */
  const char *server;   /* more [server] lines ("key = value\n..."), or NULL */
  const char *plugins;  /* [plugin] sections, or NULL for math, echo, sleep */
  unsigned long nofile; /* 0: inherited; else the daemon's RLIMIT_NOFILE,
                           soft and hard (jrpcd raises soft to hard) */
} e2e_opts_t;

/* The sample plugins, as e2e_opts_t.plugins. */
extern const char e2e_plugins_default[];

typedef struct e2e_daemon {
  pid_t pid; /* 0 when not running */
  int status;
  char dir[64];
  char conf[128];
  char log[128];
  char sock[2][100]; /* unix: newline, length (fits sun_path) */
  uint16_t port[2];  /* tcp: newline, length */
  unsigned workers;
  unsigned long nofile; /* as e2e_opts_t.nofile */
} e2e_daemon_t;

/* Writes the config, starts jrpcd and waits until it serves. Asserts. */
void e2e_start(e2e_daemon_t *d, const e2e_opts_t *o);
/* Rewrites the config file (atomically: the daemon never reads half of
 * it). The listeners stay those of e2e_start. `raw` != NULL replaces the
 * whole text. */
void e2e_rewrite(e2e_daemon_t *d, const e2e_opts_t *o, const char *raw);
void e2e_signal(e2e_daemon_t *d, int sig);
/* Waits up to ms for the daemon to exit: 1 if it did (status in
 * d->status). */
int e2e_wait_exit(e2e_daemon_t *d, int ms);
/* SIGTERM, then asserts a clean exit within E2E_STOP_MS: status 0, no
 * sanitizer report in the log, no Unix socket file left. */
void e2e_stop(e2e_daemon_t *d);
/* Asserts the exit that e2e_wait_exit saw was clean (as e2e_stop). */
void e2e_assert_clean_exit(e2e_daemon_t *d);
/* Kills a daemon still running (test failed half-way), prints its log,
 * and removes the temporary directory. Safe to call twice. */
void e2e_cleanup(e2e_daemon_t *d);

/* How many times `needle` occurs in the daemon's log so far. */
size_t e2e_log_count(const e2e_daemon_t *d, const char *needle);
/* Waits up to ms until needle occurs at least `count` times; asserts. */
void e2e_wait_log(const e2e_daemon_t *d, const char *needle, size_t count,
                  int ms);
void e2e_print_log(const e2e_daemon_t *d);
/* VmRSS of the daemon in KiB (asserts it can be read). */
uint64_t e2e_rss_kib(const e2e_daemon_t *d);
/* Descriptors the daemon has open (entries of /proc/PID/fd; asserts). */
int e2e_fd_count(const e2e_daemon_t *d);
/* CPU time the daemon has used, user plus system, in ms (asserts). */
uint64_t e2e_cpu_ms(const e2e_daemon_t *d);
/* Size of the daemon's log file in bytes (0 if unreadable). */
uint64_t e2e_log_bytes(const e2e_daemon_t *d);

/* ---- client ---- */

typedef struct e2e_conn {
  int fd;
  int framing;
  size_t rchunk; /* most bytes per read(2); 0: 64 KiB */
  char *in;      /* received, not yet taken: [in_off, in_len) */
  size_t in_off, in_len, in_cap;
  char *out; /* queued for e2e_pump: [out_off, out_len) */
  size_t out_off, out_len, out_cap;
  char *frame; /* the last reply e2e_recv returned */
  size_t frame_cap;
  int eof; /* the daemon closed (read returned 0) */
  int err; /* errno of a failed read or write, e.g. ECONNRESET */
} e2e_conn_t;

/* Connects (bounded) and asserts success. The socket is non-blocking.
 * Connections and e2e_calloc memory that a failed test leaves behind are
 * freed by e2e_teardown. */
e2e_conn_t *e2e_connect(e2e_daemon_t *d, e2e_ep_t ep);
void e2e_close(e2e_conn_t *c);
/* A bare socket connecting to listener ep, for tests that manage their
 * own: connect(2)'s result (0, or -1 with errno: EINPROGRESS or EAGAIN
 * with SOCK_NONBLOCK in flags), the socket in *fd, close-on-exec. Asserts
 * that the socket is made. */
int e2e_dial(const e2e_daemon_t *d, e2e_ep_t ep, int flags, int *fd);
/* Close with SO_LINGER 0: the peer sees a reset (TCP). */
void e2e_close_rst(e2e_conn_t *c);
void *e2e_calloc(size_t n, size_t size);
void e2e_free(void *p);

/* Sends all bytes now (bounded wait for room); asserts. */
void e2e_send_raw(e2e_conn_t *c, const void *p, size_t n);
/* Sends one framed payload. */
void e2e_send_frame(e2e_conn_t *c, const char *p, size_t n);
void e2e_send(e2e_conn_t *c, const char *payload); /* NUL-terminated */
/* Frames p[0..n) onto `out` (appended); for building pipelines. */
void e2e_queue(e2e_conn_t *c, const char *p, size_t n);
void e2e_queuef(e2e_conn_t *c, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));
/* Sends everything queued now, in as few writes as the socket allows. */
void e2e_flush(e2e_conn_t *c);

/* Next reply frame within ms: 1 (payload NUL-terminated in *p, valid
 * until the next e2e_recv or e2e_close), 0 at EOF or a reset with nothing
 * buffered, -1 on timeout or a framing error in the reply stream. */
int e2e_recv(e2e_conn_t *c, const char **p, size_t *n, int ms);
/* math.add [id,id] answered with 2 * id, byte for byte; asserts. */
void e2e_roundtrip(e2e_conn_t *c, int id);
/* Sends payload and returns a NUL-terminated copy of its one reply (free
 * with e2e_free); fails the test when none comes. */
char *e2e_call_copy(e2e_conn_t *c, const char *payload);
/* Asserts that the next reply is exactly `expected` (byte for byte; shown
 * as JSON on mismatch). */
#define e2e_expect(c, expected) e2e_expect_((c), (expected), __FILE__, __LINE__)
void e2e_expect_(e2e_conn_t *c, const char *expected, const char *file,
                 int line);
/* Asserts that the daemon closes the connection within ms without sending
 * anything more: EOF (strict) or, with reset_ok, a reset too. */
#define e2e_expect_eof(c, ms, reset_ok)                                        \
  e2e_expect_eof_((c), (ms), (reset_ok), __FILE__, __LINE__)
void e2e_expect_eof_(e2e_conn_t *c, int ms, int reset_ok, const char *file,
                     int line);
/* Compares a reply with the expected text byte for byte; prints both on a
 * mismatch. 1 when equal. */
int e2e_same(const char *got, size_t n, const char *expected);
/* The same without printing anything. */
static inline int e2e_is(const char *got, size_t n, const char *expected) {
  return n == strlen(expected) && memcmp(got, expected, n) == 0;
}

/* Drives several connections at once: writes what each has queued, reads
 * every reply frame as it arrives and hands it to frame(), calls refill()
 * so that more can be queued, until done() says so. Fails the test when
 * nothing moves for stall_ms, or when a connection is closed by the
 * daemon. */
typedef struct e2e_pump_ops {
  void (*frame)(void *arg, size_t i, const char *p, size_t n);
  void (*refill)(void *arg, size_t i, e2e_conn_t *c); /* may be NULL */
  int (*done)(void *arg);
} e2e_pump_ops_t;
void e2e_pump(e2e_conn_t **cs, size_t n, const e2e_pump_ops_t *ops, void *arg,
              int stall_ms);

/* The integer after "key": in json, past the first occurrence of scope
 * (a unique text such as "\"worker\":1,"); fails the test when either is
 * missing. */
long long e2e_num_after(const char *json, const char *scope, const char *key);

/* Milliseconds of CLOCK_MONOTONIC, for bounds. */
uint64_t e2e_now_ms(void);
void e2e_sleep_ms(int ms);

/* cmocka setup/teardown: *state is a zeroed e2e_daemon_t that teardown
 * cleans up whatever happened in the test. */
int e2e_setup(void **state);
int e2e_teardown(void **state);

/* Compact request and response texts, as jrpcd writes them. */
#define REQ(method, params, id)                                                \
  "{\"jsonrpc\":\"2.0\",\"method\":\"" method "\",\"params\":" params          \
  ",\"id\":" id "}"
#define NOTE(method, params)                                                   \
  "{\"jsonrpc\":\"2.0\",\"method\":\"" method "\",\"params\":" params "}"
#define RES(result, id)                                                        \
  "{\"jsonrpc\":\"2.0\",\"result\":" result ",\"id\":" id "}"
#define ERR(code, msg, id)                                                     \
  "{\"jsonrpc\":\"2.0\",\"error\":{\"code\":" code ",\"message\":\"" msg       \
  "\"},\"id\":" id "}"
#define ERRD(code, msg, data, id)                                              \
  "{\"jsonrpc\":\"2.0\",\"error\":{\"code\":" code ",\"message\":\"" msg       \
  "\",\"data\":" data "},\"id\":" id "}"

#endif
