/* procstats.c - the process's CPU time, memory and descriptors; see
 * procstats.h. */
#include "procstats.h"

#include <dirent.h>
#include <stdio.h>
#include <string.h>
#include <sys/resource.h>
#include <unistd.h>

static uint64_t tv_us(struct timeval tv) {
  return (uint64_t)tv.tv_sec * 1000000u + (uint64_t)tv.tv_usec;
}

/* Sizes in pages: the program's whole and its resident part. */
static int read_mem(jrpcd_procstats_t *p) {
  FILE *f = fopen("/proc/self/statm", "re");
  if (!f)
    return 0;
  unsigned long long size, resident;
  int n = fscanf(f, "%llu %llu", &size, &resident);
  fclose(f);
  long page = sysconf(_SC_PAGESIZE);
  if (n != 2 || page <= 0)
    return 0;
  p->vm_bytes = size * (uint64_t)page;
  p->rss_bytes = resident * (uint64_t)page;
  return 1;
}

/* One entry per open descriptor, less the one reading the folder. */
static int read_fds(jrpcd_procstats_t *p) {
  DIR *d = opendir("/proc/self/fd");
  if (!d)
    return 0;
  uint64_t n = 0;
  const struct dirent *e;
  while ((e = readdir(d)) != NULL)
    if (e->d_name[0] != '.')
      n++;
  closedir(d);
  p->open_fds = n ? n - 1 : 0;
  return 1;
}

void jrpcd_procstats_read(jrpcd_procstats_t *p) {
  memset(p, 0, sizeof(*p));
  struct rusage ru;
  if (getrusage(RUSAGE_SELF, &ru) == 0)
    p->cpu_us = tv_us(ru.ru_utime) + tv_us(ru.ru_stime);
  struct rlimit rl;
  p->max_fds =
      getrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_cur != RLIM_INFINITY
          ? (uint64_t)rl.rlim_cur
          : UINT64_MAX;
  p->have_mem = (uint8_t)read_mem(p);
  p->have_fds = (uint8_t)read_fds(p);
}
