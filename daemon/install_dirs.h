/* install_dirs.h - the folders jrpcd finds by default, relative to where
 * its binary lies, so that an installation moved as a whole (cmake
 * --install --prefix DIR, a staging root, an unpacked tarball) uses its own
 * handlers and not those of the prefix the tree was configured with. */
#ifndef JRPCD_INSTALL_DIRS_H
#define JRPCD_INSTALL_DIRS_H

#include <limits.h>

/* The default plugin_dir (the key table's default, and the built-in
 * config's outside a build tree): the configured one until
 * jrpcd_install_dirs_init() finds the installation's own. */
extern char jrpcd_plugin_dir_default[PATH_MAX];

/* Points jrpcd_plugin_dir_default at the plugin folder of the installation
 * the running binary is part of (the configured folder's place relative to
 * the configured bindir, taken from /proc/self/exe), when that folder
 * exists; else leaves the configured one. Call once, before any config is
 * read. Returns 1 when it moved the default, 0 when not. */
int jrpcd_install_dirs_init(void);

#endif
