/* default_socket.h - the Unix socket jrpc connects to and jrpcd's built-in
 * config serves when neither is given a path: one rule, compiled into both,
 * so that they agree for the same user and environment.
 *
 * $XDG_RUNTIME_DIR/jrpcd.sock when that variable names a directory of ours
 * that nobody else may write; else jrpcd.sock in the private directory
 * ${TMPDIR:-/tmp}/jrpcd-UID (UID: the effective uid, root included), made
 * 0700 by jrpcd and checked by both as tmux checks /tmp/tmux-UID: a real
 * directory (not a symbolic link), owned by us, mode 0700. A shared /tmp
 * is where another user could otherwise plant the socket first: to read
 * the client's requests, or to keep the daemon from starting. */
#ifndef JRPC_DEFAULT_SOCKET_H
#define JRPC_DEFAULT_SOCKET_H

#include <stddef.h>

/* Writes the default socket's path to out. With create, the private
 * directory is made when missing (jrpcd); without, a missing one is no
 * error (jrpc: the connect then says there is no socket). 0, with note
 * set to a warning when XDG_RUNTIME_DIR was set but could not be used
 * (empty otherwise); -1 with why when the private directory is not safe,
 * or the path does not fit. */
int jrpc_default_socket(char *out, size_t cap, int create, char *note,
                        size_t notelen, char *why, size_t whylen);

/* For a client about to connect to a socket found on a default path: 0 if
 * the file there, if any, is owned by a uid jrpc_default_socket_uid_ok
 * accepts; else -1 with why (someone else's socket, or a symbolic link). */
int jrpc_default_socket_trusted(const char *path, char *why, size_t whylen);

/* Whether UID may serve the default socket at path: the caller, root, or
 * the owner of path's directory where root gave that directory to that
 * user (/run/jrpcd, owned by the service's user, in /run, which only root
 * may write). Asked of the file's owner before connecting and of the
 * listening process (SO_PEERCRED) after, before a byte is sent: the file
 * may have been swapped between the two. */
int jrpc_default_socket_uid_ok(const char *path, unsigned uid);

#endif
