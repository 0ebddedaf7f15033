/* log.c - see log.h. */
#include "log.h"

#include <stdarg.h>
#include <stdio.h>
#include <time.h>
#include <unistd.h>

static volatile int max_level = JRPC_LOG_INFO;

void jrpcd_log_set_level(int level) {
  max_level = level;
}

int jrpcd_log_enabled(int level) {
  return level <= max_level;
}

static const char *level_name(int level) {
  static const char *const names[] = {"error", "warn", "info", "debug"};
  return level >= 0 && level <= 3 ? names[level] : "?";
}

static void vlog(int level, const char *fmt, va_list ap) {
  if (!jrpcd_log_enabled(level))
    return;
  char line[2048];
  struct timespec ts;
  struct tm tm;
  clock_gettime(CLOCK_REALTIME, &ts);
  gmtime_r(&ts.tv_sec, &tm);
  int n = (int)strftime(line, sizeof(line), "%Y-%m-%dT%H:%M:%S", &tm);
  n += snprintf(line + n, sizeof(line) - (size_t)n, ".%03ldZ jrpcd[%s] ",
                ts.tv_nsec / 1000000, level_name(level));
  int m = vsnprintf(line + n, sizeof(line) - (size_t)n - 1, fmt, ap);
  if (m < 0)
    m = 0;
  n += m;
  if (n > (int)sizeof(line) - 2) /* cut, but still one line */
    n = (int)sizeof(line) - 2;
  line[n++] = '\n';
  /* One write(2): lines from different threads stay whole. */
  ssize_t w = write(STDERR_FILENO, line, (size_t)n);
  (void)w;
}

void jrpcd_log(int level, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  vlog(level, fmt, ap);
  va_end(ap);
}

void jrpcd_log_from_engine(void *arg, int level, const char *msg) {
  jrpcd_log(level, "handler: %s", msg);
}
