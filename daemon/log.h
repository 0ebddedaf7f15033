/* log.h - jrpcd's log: one line per event on stderr, written whole so that
 * lines of different threads never mix. On a terminal or in a file a line
 * carries a UTC timestamp and the level; when stderr is the systemd journal
 * ($JOURNAL_STREAM names it) it carries a "<N>" syslog priority instead,
 * since the journal stamps and classifies every line itself. */
#ifndef JRPCD_LOG_H
#define JRPCD_LOG_H

#include "jrpc/jrpc.h"

/* Looks at $JOURNAL_STREAM and stderr once; call before the first line. */
void jrpcd_log_init(void);
/* Whether lines go to the journal in its format. */
int jrpcd_log_to_journal(void);

/* The config's log_level (JRPC_LOG_ERROR .. JRPC_LOG_DEBUG), shifted by
 * the command line's verbosity: lines above the sum are dropped. */
void jrpcd_log_set_level(int level);
/* -v adds 1 each, -q is -JRPC_LOG_DEBUG (errors only whatever the config
 * says); it outlives reloads, which set the config's level again. */
void jrpcd_log_set_verbosity(int delta);
int jrpcd_log_enabled(int level);

#if defined(__GNUC__)
__attribute__((format(printf, 2, 3)))
#endif
void jrpcd_log(int level, const char *fmt, ...);

/* A message of the command itself ("jrpcd: bad config ...") rather than
 * an event of the running daemon: no timestamp, never filtered, and with
 * the priority prefix in the journal (ExecStartPre=jrpcd -t writes there). */
#if defined(__GNUC__)
__attribute__((format(printf, 2, 3)))
#endif
void jrpcd_log_bare(int level, const char *fmt, ...);

/* The engine's log hook (jrpc_log from handlers): arg is unused. */
void jrpcd_log_from_engine(void *arg, int level, const char *msg);

#define jrpcd_error(...) jrpcd_log(JRPC_LOG_ERROR, __VA_ARGS__)
#define jrpcd_warn(...) jrpcd_log(JRPC_LOG_WARN, __VA_ARGS__)
#define jrpcd_info(...) jrpcd_log(JRPC_LOG_INFO, __VA_ARGS__)
#define jrpcd_debug(...)                                                       \
  do {                                                                         \
    if (jrpcd_log_enabled(JRPC_LOG_DEBUG))                                     \
      jrpcd_log(JRPC_LOG_DEBUG, __VA_ARGS__);                                  \
  } while (0)

#endif
