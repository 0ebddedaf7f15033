/* default_socket.c - see default_socket.h. */
#include "default_socket.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define SOCKET_NAME "jrpcd.sock"

/* Writable by its owner alone (root aside). */
static int only_owner_writes(const struct stat *st) {
  return (st->st_mode & (S_IWGRP | S_IWOTH)) == 0;
}

/* XDG_RUNTIME_DIR as the XDG spec promises it: an absolute path to a
 * directory of ours that no one else may write. A value inherited from
 * another user (sudo -E) or pointing anywhere else is not used. */
static int xdg_usable(const char *dir, char *why, size_t whylen) {
  struct stat st;
  if (dir[0] != '/') {
    snprintf(why, whylen, "is not an absolute path");
    return -1;
  }
  if (stat(dir, &st) != 0) {
    snprintf(why, whylen, "cannot be used: %s", strerror(errno));
    return -1;
  }
  if (!S_ISDIR(st.st_mode))
    snprintf(why, whylen, "is not a directory");
  else if (st.st_uid != geteuid())
    snprintf(why, whylen, "is owned by uid %u, not by us (uid %u)",
             (unsigned)st.st_uid, (unsigned)geteuid());
  else if (!only_owner_writes(&st))
    snprintf(why, whylen, "may be written by others (mode %04o)",
             (unsigned)(st.st_mode & 07777));
  else
    return 0;
  return -1;
}

/* TMPDIR when it is an absolute path (trailing slashes dropped), else
 * /tmp; into base. */
static void tmp_base(char *base, size_t cap) {
  const char *t = getenv("TMPDIR");
  if (!t || t[0] != '/')
    t = "/tmp";
  size_t n = strlen(t);
  while (n > 1 && t[n - 1] == '/')
    n--;
  snprintf(base, cap, "%.*s", (int)n, t);
}

/* ${TMPDIR:-/tmp}/jrpcd-UID, made (create) and checked: the parent lets
 * no one else rename it away (its owner is us or root, and others may not
 * write it or it is sticky), and it is a real directory of ours, mode
 * 0700. Missing without create is no error. */
static int private_dir(char *dir, size_t cap, int create, char *why,
                       size_t whylen) {
  char base[4096];
  struct stat st;
  uid_t me = geteuid();
  tmp_base(base, sizeof base);
  if ((size_t)snprintf(dir, cap, "%s/jrpcd-%u", base, (unsigned)me) >= cap) {
    snprintf(why, whylen, "TMPDIR=%s is too long for a socket path", base);
    return -1;
  }
  if (stat(base, &st) != 0 || !S_ISDIR(st.st_mode)) {
    snprintf(why, whylen, "%s is not a directory", base);
    return -1;
  }
  if ((st.st_uid != me && st.st_uid != 0) ||
      (!only_owner_writes(&st) && !(st.st_mode & S_ISVTX))) {
    snprintf(why, whylen,
             "%s (uid %u, mode %04o) lets others replace what is in it: it "
             "must be ours or root's, and sticky if others may write it",
             base, (unsigned)st.st_uid, (unsigned)(st.st_mode & 07777));
    return -1;
  }
  if (create && mkdir(dir, 0700) != 0 && errno != EEXIST) {
    snprintf(why, whylen, "cannot make %s: %s", dir, strerror(errno));
    return -1;
  }
  if (lstat(dir, &st) != 0) {
    if (errno == ENOENT && !create)
      return 0;
    snprintf(why, whylen, "%s: %s", dir, strerror(errno));
    return -1;
  }
  const char *bad = NULL;
  char detail[96];
  if (S_ISLNK(st.st_mode))
    bad = "is a symbolic link";
  else if (!S_ISDIR(st.st_mode))
    bad = "is not a directory";
  else if (st.st_uid != me) {
    snprintf(detail, sizeof detail, "is owned by uid %u, not by us (uid %u)",
             (unsigned)st.st_uid, (unsigned)me);
    bad = detail;
  } else if ((st.st_mode & 07777) != 0700) {
    snprintf(detail, sizeof detail, "has mode %04o, not 0700",
             (unsigned)(st.st_mode & 07777));
    bad = detail;
  }
  if (!bad)
    return 0;
  snprintf(why, whylen,
           "%s %s: another user may have made it to catch the socket; "
           "remove it, or set XDG_RUNTIME_DIR",
           dir, bad);
  return -1;
}

int jrpc_default_socket(char *out, size_t cap, int create, char *note,
                        size_t notelen, char *why, size_t whylen) {
  const char *xdg = getenv("XDG_RUNTIME_DIR");
  char xdg_why[128] = "";
  note[0] = '\0';
  if (xdg && *xdg) {
    if (xdg_usable(xdg, xdg_why, sizeof xdg_why) == 0) {
      if ((size_t)snprintf(out, cap, "%s/" SOCKET_NAME, xdg) < cap)
        return 0;
      snprintf(why, whylen, "XDG_RUNTIME_DIR=%s is too long", xdg);
      return -1;
    }
  }
  char dir[4200];
  if (private_dir(dir, sizeof dir, create, why, whylen) != 0)
    return -1;
  if ((size_t)snprintf(out, cap, "%s/" SOCKET_NAME, dir) >= cap) {
    snprintf(why, whylen, "%s is too long for a socket path", dir);
    return -1;
  }
  if (xdg_why[0])
    snprintf(note, notelen, "XDG_RUNTIME_DIR=%s %s; using %s", xdg, xdg_why,
             out);
  return 0;
}

/* The directory of path, into dir ("." for a bare name). */
static void dir_of(const char *path, char *dir, size_t cap) {
  const char *slash = strrchr(path, '/');
  if (!slash)
    snprintf(dir, cap, ".");
  else if (slash == path)
    snprintf(dir, cap, "/");
  else
    snprintf(dir, cap, "%.*s", (int)(slash - path), path);
}

/* Whether root handed path's directory to OWNER: the directory is OWNER's
 * and only OWNER writes it, and its parent is root's and only root writes
 * it, so that no one but root and OWNER can have put a file there. */
static int dir_given_by_root(const char *path, uid_t owner) {
  char dir[4200], parent[4200];
  struct stat d, p;
  dir_of(path, dir, sizeof dir);
  dir_of(dir, parent, sizeof parent);
  return lstat(dir, &d) == 0 && S_ISDIR(d.st_mode) && d.st_uid == owner &&
         only_owner_writes(&d) && stat(parent, &p) == 0 && S_ISDIR(p.st_mode) &&
         p.st_uid == 0 && only_owner_writes(&p);
}

int jrpc_default_socket_uid_ok(const char *path, unsigned uid) {
  return uid == (unsigned)geteuid() || uid == 0 ||
         dir_given_by_root(path, (uid_t)uid);
}

int jrpc_default_socket_trusted(const char *path, char *why, size_t whylen) {
  struct stat st;
  if (lstat(path, &st) != 0)
    return 0; /* nothing there: the connect will say so */
  if (S_ISLNK(st.st_mode)) {
    snprintf(why, whylen,
             "%s is a symbolic link, not a socket; refusing to follow it "
             "(give -u PATH to choose the socket)",
             path);
    return -1;
  }
  if (jrpc_default_socket_uid_ok(path, (unsigned)st.st_uid))
    return 0;
  snprintf(why, whylen,
           "%s belongs to uid %u, neither you (uid %u) nor root: another user "
           "may have put it there to read your requests, so nothing is sent "
           "(give -u PATH if you trust it)",
           path, (unsigned)st.st_uid, (unsigned)geteuid());
  return -1;
}
