/* adv.h - support for the adversarial suite: the check that runs after
 * every scenario, raw connections by the hundred, and rpc.stats.
 *
 * Built on the e2e harness (tests/e2e/e2e.h): a real jrpcd on real
 * loopback sockets, every wait bounded. */
#ifndef JRPC_ADV_H
#define JRPC_ADV_H

#include <stddef.h>
#include <stdint.h>

#include "e2e/e2e.h"

/* What the daemon looked like when it had just started: the state every
 * scenario must return it to. */
typedef struct adv_base {
  int fds;        /* entries of /proc/PID/fd */
  uint64_t conns; /* rpc.stats "connections", counting the probe itself */
} adv_base_t;

/* e2e_start, then the baseline. Also raises this process's own descriptor
 * limit, since scenarios hold hundreds of connections. */
void adv_start(e2e_daemon_t *d, const e2e_opts_t *o, adv_base_t *b);
/* The same with one more [server] line, "key = value". */
void adv_start_with(e2e_daemon_t *d, const char *key, long value,
                    adv_base_t *b);

/* After every scenario: the daemon is alive; its descriptor count comes
 * back to the baseline (bounded wait); then a fresh client on each
 * listener gets math.add answered within a second; its rpc.stats
 * connection count comes back to the baseline (bounded wait); it uses
 * little CPU over a quiet window (no spin); and its log has no sanitizer
 * report. Fails the test naming the scenario. */
void adv_check(e2e_daemon_t *d, const adv_base_t *b, const char *scenario);

/* rpc.stats "connections" (the whole daemon) through a fresh Unix
 * newline client, which counts itself. */
uint64_t adv_stats_conns(e2e_daemon_t *d);

/* A raw non-blocking socket connecting to a listener: the fd, or -1 when
 * the listener's backlog is full (EAGAIN). Registered for adv_teardown. */
int adv_dial(const e2e_daemon_t *d, e2e_ep_t ep);
/* Closes a raw socket; with rst, SO_LINGER 0 first (a reset on TCP). */
void adv_hangup(int fd, int rst);

/* The one line of the log holding both needles: 1 if there is one. */
int adv_log_has_line(const e2e_daemon_t *d, const char *a, const char *b);

/* A byte string from a fixed-seed generator, for garbage. */
uint32_t adv_rand(uint32_t *seed);

/* Replies: the error code of one response object (0 for a result), and
 * its id as an integer (-1 for null, -2 for none or not an integer). */
int adv_reply_code(const char *p, size_t n);
long long adv_reply_id(const char *p, size_t n);

/* Applies ADV_TESTS and ADV_SKIP from the environment (each one cmocka
 * name pattern with '*' and '?', e.g. ADV_TESTS='test_held*') to the tests
 * main() is about to run: for running one scenario while working on it. */
void adv_filter_from_env(void);

/* cmocka setup/teardown wrapping e2e_setup/e2e_teardown: also closes raw
 * sockets, and cuts a runaway log (a spinning daemon writes megabytes a
 * second) before e2e_teardown prints it. */
int adv_setup(void **state);
int adv_teardown(void **state);

#endif
