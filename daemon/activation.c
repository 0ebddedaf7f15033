/* activation.c - see activation.h. */
#include "activation.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define FIRST_FD 3 /* SD_LISTEN_FDS_START: after stdin, stdout, stderr */

/* A plain decimal number, as the service manager writes it. */
static int parse_ulong(const char *s, unsigned long *out) {
  if (!s || *s < '0' || *s > '9')
    return -1;
  char *end;
  errno = 0;
  unsigned long v = strtoul(s, &end, 10);
  if (errno || *end)
    return -1;
  *out = v;
  return 0;
}

static void unset_all(void) {
  unsetenv("LISTEN_PID");
  unsetenv("LISTEN_FDS");
  unsetenv("LISTEN_FDNAMES");
}

int jrpcd_activation_take(jrpcd_activation_t *a, char *err, size_t errlen) {
  memset(a, 0, sizeof(*a));
  const char *pid_s = getenv("LISTEN_PID");
  const char *n_s = getenv("LISTEN_FDS");
  const char *names = getenv("LISTEN_FDNAMES");
  unsigned long pid, n;
  int rc = 0;
  /* Variables meant for another process (a parent that was activated and
   * started us without cleaning up, say) are not ours to use. */
  if (!n_s || parse_ulong(pid_s, &pid) || pid != (unsigned long)getpid())
    goto done;
  if (parse_ulong(n_s, &n) || n > (unsigned long)(INT_MAX - FIRST_FD)) {
    snprintf(err, errlen,
             "LISTEN_FDS=\"%s\" is not a number of file descriptors", n_s);
    rc = -EINVAL;
    goto fail;
  }
  if (n == 0)
    goto done;
  if (!(a->fds = calloc(n, sizeof(*a->fds))))
    goto oom;
  a->named = names != NULL;
  const char *p = names;
  for (unsigned long i = 0; i < n; i++) {
    int fd = FIRST_FD + (int)i;
    if (names && !p) {
      snprintf(err, errlen,
               "LISTEN_FDNAMES=\"%s\" names fewer sockets than LISTEN_FDS=%lu",
               names, n);
      rc = -EINVAL;
      goto fail;
    }
    /* Without LISTEN_FDNAMES every fd is "unknown", as in sd_listen_fds. */
    const char *end = p ? strchr(p, ':') : NULL;
    size_t len = !p ? strlen("unknown") : end ? (size_t)(end - p) : strlen(p);
    if (!(a->fds[a->n].name = strndup(p ? p : "unknown", len)))
      goto oom;
    a->fds[a->n].fd = fd;
    a->n++;
    p = end ? end + 1 : NULL;
    int fdfl = fcntl(fd, F_GETFD);
    if (fdfl < 0) {
      snprintf(err, errlen, "LISTEN_FDS=%lu, but fd %d is not open", n, fd);
      rc = -EBADF;
      goto fail;
    }
    /* Ours alone: not inherited by a plugin's child, and accept(2) must
     * never block a worker's loop. */
    int fl = fcntl(fd, F_GETFL);
    if (fcntl(fd, F_SETFD, fdfl | FD_CLOEXEC) < 0 || fl < 0 ||
        fcntl(fd, F_SETFL, fl | O_NONBLOCK) < 0) {
      rc = -errno;
      snprintf(err, errlen, "fd %d of LISTEN_FDS: %s", fd, strerror(-rc));
      goto fail;
    }
  }
  if (p) {
    snprintf(err, errlen,
             "LISTEN_FDNAMES=\"%s\" names more sockets than LISTEN_FDS=%lu",
             names, n);
    rc = -EINVAL;
    goto fail;
  }
done:
  unset_all();
  return 0;
oom:
  snprintf(err, errlen, "out of memory");
  rc = -ENOMEM;
fail:
  jrpcd_activation_free(a);
  unset_all();
  return rc;
}

int jrpcd_activation_check(const jrpcd_activation_t *a, const jrpcd_config_t *c,
                           char *err, size_t errlen) {
  for (size_t i = 0; i < a->n; i++) {
    const char *name = a->fds[i].name;
    size_t k = 0;
    while (k < c->nlistens && strcmp(c->listens[k].name, name) != 0)
      k++;
    if (k == c->nlistens && !a->named) {
      snprintf(err, errlen,
               "fd %d came without a name (no LISTEN_FDNAMES): set "
               "FileDescriptorName= in the .socket unit to the NAME of the "
               "[listen NAME] section it serves",
               a->fds[i].fd);
      return -ENOENT;
    }
    if (k == c->nlistens) {
      snprintf(err, errlen,
               "LISTEN_FDNAMES names \"%s\" but the config has no [listen %s] "
               "section (fd %d; FileDescriptorName= of the .socket unit must "
               "be the NAME of a [listen NAME] section)",
               name, name, a->fds[i].fd);
      return -ENOENT;
    }
    for (size_t j = 0; j < i; j++)
      if (strcmp(a->fds[j].name, name) == 0) {
        snprintf(err, errlen,
                 "LISTEN_FDNAMES names \"%s\" for both fd %d and fd %d, but "
                 "[listen %s] serves one socket (give each ListenStream= its "
                 "own .socket unit and FileDescriptorName=)",
                 name, a->fds[j].fd, a->fds[i].fd, name);
        return -EEXIST;
      }
  }
  return 0;
}

jrpcd_passed_t *jrpcd_activation_find(jrpcd_activation_t *a, const char *name) {
  for (size_t i = 0; i < a->n; i++)
    if (strcmp(a->fds[i].name, name) == 0)
      return &a->fds[i];
  return NULL;
}

void jrpcd_activation_free(jrpcd_activation_t *a) {
  for (size_t i = 0; i < a->n; i++) {
    if (!a->fds[i].taken)
      close(a->fds[i].fd);
    free(a->fds[i].name);
  }
  free(a->fds);
  memset(a, 0, sizeof(*a));
}
