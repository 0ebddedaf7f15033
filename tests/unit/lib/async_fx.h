/* async_fx.h - the fixture of the deferred-call tests (test_async,
 * test_cancel): a registry of deferring handlers, an engine on a fake host
 * (posts queued for the test to drain, work run at once, a clock the test
 * moves), one stream, and checks on the bytes it would send. */
#ifndef JRPC_TESTS_ASYNC_FX_H
#define JRPC_TESTS_ASYNC_FX_H

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "async.h"
#include "dispatch.h"
#include "stream.h"
#include "testutil.h"

/* ------------------------------------------------------------------ */
/* Wire texts                                                          */
/* ------------------------------------------------------------------ */

#define REQ(m, params, id)                                                     \
  "{\"jsonrpc\":\"2.0\",\"method\":\"" m "\",\"params\":" params ",\"id\":" id \
  "}"
#define NOTE(m, params)                                                        \
  "{\"jsonrpc\":\"2.0\",\"method\":\"" m "\",\"params\":" params "}"
#define RES(v, id) "{\"jsonrpc\":\"2.0\",\"result\":" v ",\"id\":" id "}"
#define ERR(code, msg, id)                                                     \
  "{\"jsonrpc\":\"2.0\",\"error\":{\"code\":" #code ",\"message\":\"" msg      \
  "\"},\"id\":" id "}"
#define ERRD(code, msg, data, id)                                              \
  "{\"jsonrpc\":\"2.0\",\"error\":{\"code\":" #code ",\"message\":\"" msg      \
  "\",\"data\":" data "},\"id\":" id "}"

/* ------------------------------------------------------------------ */
/* Fixture: registry, engine, fake host, one stream                    */
/* ------------------------------------------------------------------ */

#define MAX_STASH 64
#define MAX_FRAMES 64
#define OUT_CAP (1 << 20)

enum { HOST_NONE = 0, HOST_FULL, HOST_NO_LOOP };

typedef struct job {
  struct job *next;
  jrpc_call_t *d;
  jrpc__post_node_t *node; /* the call's own node, given back when run */
  jrpc_post_fn fn;
  void *arg;
} job_t;

typedef struct fake_host {
  pthread_mutex_t mu;
  job_t *head, *tail; /* posted, not run yet */
  int posts;          /* post() calls */
  int works;          /* queue_work() calls */
  int outputs;        /* output() calls with reply bytes to send */
  int wakes;          /* output() calls with nothing to send: a call of the
                         sink's ended without a reply of its own */
  const jrpc__sink_t *last_sink;
  const jrpc__registry_t *reg; /* what hold() must be given */
  int hold_plus, hold_minus, hold_bad;
  uint64_t now;   /* the loop's clock, moved by the test (tick) */
  uint64_t armed; /* when the engine wants jrpc__async_expire; 0: never */
  int arms;       /* arm() calls */
} fake_host_t;

typedef struct stashed {
  jrpc_call_t *d;
  char *params; /* the call's params, copied into jrpc_alloc(d) memory */
  size_t params_n;
} stashed_t;

typedef struct fx {
  jrpc__registry_t reg;
  jrpc__engine_t e;
  int e_live;
  fake_host_t h;
  jrpc__host_t ops;
  jrpc__stream_t s;
  int s_live;
  stashed_t st[MAX_STASH]; /* handles deferred by "later"/"later_err" */
  size_t nst;
  int now_rc;   /* jrpc_finish inside "now" */
  int post_rc;  /* jrpc_post inside "post_self" */
  int work_rc;  /* jrpc_queue_work inside "work_self" */
  int work_ran; /* work() of "work_self" ran */
  int cb_rc[MAX_STASH];
  char *out; /* what take() collected */
  size_t out_n;
  const char *fp[MAX_FRAMES];
  size_t fn[MAX_FRAMES];
} fx_t;

/* The checks below report the caller's line. */
#define AT const char *file, int line
#define HERE __FILE__, __LINE__

int drain(fx_t *f);

/* The handler "later": defers and stashes the handle (f->st), with a copy
 * of params in the call's own memory. */
int h_later(jrpc_call_t *c, jrpc_val_t params, void *udata);

void never_run(jrpc_call_t *c, void *arg);

void never_work(void *arg);

void add(fx_t *f, const char *name, jrpc_handler_fn fn);

int setup(void **state);

int teardown(void **state);

void start(fx_t *f, const jrpc__limits_t *lim, int host,
           jrpc__framing_t framing);

void stream_gone(fx_t *f);

void finish_test(fx_t *f);

int feed_raw(jrpc__stream_t *s, const char *in, size_t n, int eof);

void send_to(jrpc__stream_t *s, const char *const *payloads);

int take_from_(fx_t *f, jrpc__stream_t *s, AT);

void expect_none_from(fx_t *f, jrpc__stream_t *s, AT);

void expect_exact_from(fx_t *f, jrpc__stream_t *s, const char *const *want, AT);

void expect_json_from(fx_t *f, jrpc__stream_t *s, const char *const *want, AT);

void finish_echo(fx_t *f, size_t i);

/* Moves the fake clock on by ms and, when the engine's timer is due, runs
 * jrpc__async_expire as the host's loop would. */
void tick(fx_t *f, uint64_t ms);

#define SEND(f, ...) send_to(&(f)->s, (const char *const[]){__VA_ARGS__, NULL})
#define take_from(f, s) take_from_((f), (s), HERE)
#define EXPECT_NONE(f) expect_none_from((f), &(f)->s, HERE)
#define EXPECT_EXACT_FROM(f, s, ...)                                           \
  expect_exact_from((f), (s), (const char *const[]){__VA_ARGS__, NULL}, HERE)
#define EXPECT_EXACT(f, ...) EXPECT_EXACT_FROM((f), &(f)->s, __VA_ARGS__)
#define EXPECT_JSON(f, ...)                                                    \
  expect_json_from((f), &(f)->s, (const char *const[]){__VA_ARGS__, NULL}, HERE)

#endif
