/* install_dirs.c - the default plugin folder found from the binary's own
 * place. See install_dirs.h. */
#include "install_dirs.h"

#include "install_dirs_build.h"

#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

char jrpcd_plugin_dir_default[PATH_MAX] = JRPCD_CONFIGURED_PLUGIN_DIR;

/* Cuts the last component off path in place; 0 when there is none left to
 * cut (the root, or no slash). */
static int cut_last(char *path) {
  char *slash = strrchr(path, '/');
  if (!slash || slash == path)
    return 0;
  *slash = '\0';
  return 1;
}

int jrpcd_install_dirs_init(void) {
  const char *rel = JRPCD_BIN_TO_PLUGIN_DIR;
  if (!rel[0])
    return 0;
  /* The binary itself, symbolic links resolved: a link to it elsewhere
   * (/usr/local/bin/jrpcd -> /opt/jrpcd/bin/jrpcd) still finds /opt's. */
  char dir[PATH_MAX];
  ssize_t k = readlink("/proc/self/exe", dir, sizeof dir - 1);
  if (k <= 0)
    return 0;
  dir[k] = '\0';
  if (!cut_last(dir))
    return 0;
  /* Lexically, so that the result reads as a plain path in -T and in the
   * log: bin/../lib/jrpcd/handlers is lib/jrpcd/handlers. */
  while (strncmp(rel, "../", 3) == 0) {
    if (!cut_last(dir))
      return 0;
    rel += 3;
  }
  char found[PATH_MAX];
  int n = snprintf(found, sizeof found, "%s/%s", dir, rel);
  struct stat st;
  if (n < 0 || (size_t)n >= sizeof found || stat(found, &st) != 0 ||
      !S_ISDIR(st.st_mode))
    return 0;
  memcpy(jrpcd_plugin_dir_default, found, (size_t)n + 1);
  return 1;
}
