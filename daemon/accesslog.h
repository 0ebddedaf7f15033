/* accesslog.h - [server] access_log: one line per call, as text or JSON,
 * written by a thread of its own so that a worker never waits for the
 * disk. Each worker formats its lines into a bounded buffer of its own;
 * the writer thread swaps it for an empty one and writes it out. A line
 * that finds its worker's buffer full is dropped and counted
 * (jrpcd_access_log_dropped_total), never queued beyond the buffer. The
 * file is reopened on SIGUSR1, for logrotate's move-then-signal. */
#ifndef JRPCD_ACCESSLOG_H
#define JRPCD_ACCESSLOG_H

#include <pthread.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>

#include "config.h"
#include "dispatch.h"

/* Bytes of lines one worker may have waiting for the writer. */
#define JRPCD_ALOG_BUF (256 * 1024)
/* Bytes of a method name kept in a line; a longer one is cut and marked. */
#define JRPCD_ALOG_METHOD_MAX 128

struct jrpcd_accesslog;

/* One worker's side: the worker appends under mu, the writer only swaps
 * the buffer out under it (never writes to the file holding it). */
typedef struct jrpcd_alog_worker {
  struct jrpcd_accesslog *log;
  pthread_mutex_t mu;
  char *buf;
  size_t len;
  uint8_t kicked; /* the writer was woken for this buffer's fill */
  /* The worker's own: the wall-clock second whose text is cached, and
   * the peer (its calls come in runs from one connection). */
  int64_t sec;
  char sec_text[24];
  jrpc_peer_t peer;
  char peer_text[4 * 96]; /* escaped for the log's format */
} jrpcd_alog_worker_t;

typedef struct jrpcd_accesslog {
  char *path;
  int format; /* JRPCD_ALOG_* */
  int fd;     /* the writer's; replaced by next_fd */
  jrpcd_alog_worker_t *workers;
  unsigned nworkers;
  char *spare; /* the writer's: a buffer swapped out of a worker */
  pthread_t thread;
  int started;
  pthread_mutex_t mu; /* next_fd, wake; the writer sleeps on cv */
  pthread_cond_t cv;
  int next_fd; /* opened by a reopen, taken by the writer; -1: none */
  int wake;
  atomic_int stop;
  atomic_ullong dropped; /* lines not written, in all */
  /* The writer's: the last write error logged, and when (monotonic ms). */
  int write_errno;
  uint64_t write_err_ms;
} jrpcd_accesslog_t;

/* Opens path for appending (created 0640 if missing) and starts the
 * writer thread, for nworkers workers. -1 with err naming the OS reason. */
int jrpcd_accesslog_open(jrpcd_accesslog_t *l, const char *path, int format,
                         unsigned nworkers, char *err, size_t errlen);
/* Worker i's side, the arg of its engine's on_call. */
jrpcd_alog_worker_t *jrpcd_accesslog_worker(jrpcd_accesslog_t *l, unsigned i);
/* The engine's hook (jrpc__call_done_fn): formats the call's line into
 * the worker's buffer, or counts it dropped when the buffer is full. */
void jrpcd_accesslog_note(void *arg, const jrpc__call_done_t *d);
/* Main thread (SIGUSR1): opens path again; the writer switches to the new
 * file at its next round. A failure is logged and the old file kept. */
void jrpcd_accesslog_reopen(jrpcd_accesslog_t *l);
/* Lines dropped since start: buffer full, or the file refused them. */
uint64_t jrpcd_accesslog_dropped(const jrpcd_accesslog_t *l);
/* After the workers have stopped: writes what is left (at most a second
 * of waiting on a file that takes nothing), stops the thread, closes. */
void jrpcd_accesslog_close(jrpcd_accesslog_t *l);

#endif
