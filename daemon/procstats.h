/* procstats.h - the process's own figures, as Prometheus's process
 * collectors (node_exporter's, the client libraries') name them: CPU time,
 * memory, descriptors. Read from getrusage, /proc/self and getrlimit when
 * /metrics or rpc.stats asks, so that a served call pays nothing for
 * them. */
#ifndef JRPCD_PROCSTATS_H
#define JRPCD_PROCSTATS_H

#include <stdint.h>

typedef struct jrpcd_procstats {
  uint64_t cpu_us;    /* user and system time of every thread */
  uint64_t rss_bytes; /* resident set */
  uint64_t vm_bytes;  /* virtual memory */
  uint64_t open_fds;  /* descriptors open */
  uint64_t max_fds;   /* RLIMIT_NOFILE's soft limit (UINT64_MAX: none) */
  /* What could be read: /proc/self/statm's figures, /proc/self/fd's. */
  uint8_t have_mem, have_fds;
} jrpcd_procstats_t;

void jrpcd_procstats_read(jrpcd_procstats_t *p);

#endif
