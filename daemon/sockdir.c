/* sockdir.c - see sockdir.h. */
#include "sockdir.h"

#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* Checks DIR and each directory above it, by their names as written
 * (stat follows a symbolic link on the way, so its target is checked
 * too). 0, or -1 with why naming the first that anyone may write. */
static int walk_up(char *dir, const char *sock, char *why, size_t whylen) {
  for (;;) {
    struct stat st;
    if (stat(dir, &st) == 0 && S_ISDIR(st.st_mode) && (st.st_mode & S_IWOTH) &&
        !(st.st_mode & S_ISVTX)) {
      snprintf(why, whylen,
               "\"%s\": the directory %s (mode %04o) may be written by every "
               "user and is not sticky, so anyone could replace the socket; "
               "use another directory, or chmod o-w or +t it",
               sock, dir, (unsigned)(st.st_mode & 07777));
      return -1;
    }
    char *slash = strrchr(dir, '/');
    if (!slash || strcmp(dir, "/") == 0)
      return 0;
    if (slash == dir)
      slash[1] = '\0'; /* "/x" -> "/" */
    else
      *slash = '\0';
  }
}

int jrpcd_socket_dir_safe(const char *path, char *why, size_t whylen) {
  char dir[PATH_MAX + 2], real[PATH_MAX];
  const char *slash = strrchr(path, '/');
  if (path[0] == '/') {
    snprintf(dir, sizeof dir, "%.*s", (int)(slash - path), path);
  } else {
    /* Relative to where jrpcd runs, as the bind will take it. */
    char cwd[PATH_MAX];
    if (!getcwd(cwd, sizeof cwd))
      return 0;
    snprintf(dir, sizeof dir, "%s/%.*s", cwd, slash ? (int)(slash - path) : 0,
             path);
  }
  if (dir[0] == '\0')
    snprintf(dir, sizeof dir, "/");
  if (!realpath(dir, real))
    return 0; /* missing: the bind says so */
  if (walk_up(dir, path, why, whylen) != 0)
    return -1;
  return walk_up(real, path, why, whylen);
}
