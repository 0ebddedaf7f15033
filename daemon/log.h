/* log.h - jrpcd's log: one line per event on stderr, with a timestamp and
 * a level, written whole so that lines of different threads never mix. */
#ifndef JRPCD_LOG_H
#define JRPCD_LOG_H

#include "jrpc/jrpc.h"

/* Lines above this level (JRPC_LOG_ERROR .. JRPC_LOG_DEBUG) are dropped. */
void jrpcd_log_set_level(int level);
int jrpcd_log_enabled(int level);

#if defined(__GNUC__)
__attribute__((format(printf, 2, 3)))
#endif
void jrpcd_log(int level, const char *fmt, ...);

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
