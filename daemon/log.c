/* log.c - see log.h. */
#include "log.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

/* Read by every worker on every line, written by the main thread only
 * (at start and on reload): max_level through atomic loads and stores. */
static int max_level = JRPC_LOG_INFO;
static int conf_level = JRPC_LOG_INFO;
static int verbosity;
static int journal;

/* systemd sets JOURNAL_STREAM to "DEV:INODE" of the stream it connected
 * to stdout/stderr. A child whose stderr was redirected elsewhere inherits
 * the variable all the same, so the device and inode must be stderr's. */
void jrpcd_log_init(void) {
  const char *v = getenv("JOURNAL_STREAM");
  struct stat st;
  unsigned long long dev, ino;
  char tail;
  journal = v && sscanf(v, "%llu:%llu%c", &dev, &ino, &tail) == 2 &&
            fstat(STDERR_FILENO, &st) == 0 &&
            (unsigned long long)st.st_dev == dev &&
            (unsigned long long)st.st_ino == ino;
}

int jrpcd_log_to_journal(void) {
  return journal;
}

static void apply(void) {
  int l = conf_level + verbosity;
  /* Workers read it while a reload sets it: an atomic store (relaxed:
   * a line more or less around the change does not matter). */
  __atomic_store_n(&max_level,
                   l < JRPC_LOG_ERROR   ? JRPC_LOG_ERROR
                   : l > JRPC_LOG_DEBUG ? JRPC_LOG_DEBUG
                                        : l,
                   __ATOMIC_RELAXED);
}

void jrpcd_log_set_level(int level) {
  conf_level = level;
  apply();
}

void jrpcd_log_set_verbosity(int delta) {
  verbosity = delta;
  apply();
}

int jrpcd_log_enabled(int level) {
  return level <= __atomic_load_n(&max_level, __ATOMIC_RELAXED);
}

static const char *level_name(int level) {
  static const char *const names[] = {"error", "warn", "info", "debug"};
  return level >= 0 && level <= 3 ? names[level] : "?";
}

/* syslog(3)'s LOG_ERR, LOG_WARNING, LOG_INFO, LOG_DEBUG: the journal reads
 * a leading "<N>" as the line's priority. */
static int syslog_priority(int level) {
  static const int prio[] = {3, 4, 6, 7};
  return level >= 0 && level <= 3 ? prio[level] : 6;
}

/* The line's head: a priority for the journal, else a timestamp and the
 * level (events) or "jrpcd: " (the command's own messages). */
static int head(char *line, size_t n, int level, int bare) {
  if (journal)
    return snprintf(line, n, "<%d>%s", syslog_priority(level),
                    bare ? "jrpcd: " : "");
  if (bare)
    return snprintf(line, n, "jrpcd: ");
  struct timespec ts;
  struct tm tm;
  clock_gettime(CLOCK_REALTIME, &ts);
  gmtime_r(&ts.tv_sec, &tm);
  int k = (int)strftime(line, n, "%Y-%m-%dT%H:%M:%S", &tm);
  return k + snprintf(line + k, n - (size_t)k, ".%03ldZ jrpcd[%s] ",
                      ts.tv_nsec / 1000000, level_name(level));
}

static void vlog(int level, int bare, const char *fmt, va_list ap) {
  char line[2048];
  int n = head(line, sizeof(line), level, bare);
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
  if (!jrpcd_log_enabled(level))
    return;
  va_list ap;
  va_start(ap, fmt);
  vlog(level, 0, fmt, ap);
  va_end(ap);
}

void jrpcd_log_bare(int level, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  vlog(level, 1, fmt, ap);
  va_end(ap);
}

void jrpcd_log_from_engine(void *arg, int level, const char *msg) {
  jrpcd_log(level, "handler: %s", msg);
}
