/* sockdir.h - whether a Unix socket's directory keeps other users from
 * replacing the socket: checked when the config is read (the unix key),
 * so that `jrpcd -t` and a start refuse alike, naming file, line and key. */
#ifndef JRPCD_SOCKDIR_H
#define JRPCD_SOCKDIR_H

#include <stddef.h>

/* jrpcd binds a socket first as "s" in a private directory made from this
 * mkdtemp template beside it (listener.c): DIR/.jXXXXXX/s. */
#define JRPCD_SOCKET_TEMP_DIR ".jXXXXXX"
#define JRPCD_SOCKET_TEMP_NAME "s"

/* 0 if no directory from / down to PATH's directory, as written and as
 * resolved, may be written by every user without the sticky bit (there,
 * anyone could rename the socket away and put their own in its place, or
 * a symbolic link for jrpcd to chmod); -1 with why. A directory that does
 * not exist yet is the bind's to report. */
int jrpcd_socket_dir_safe(const char *path, char *why, size_t whylen);

#endif
