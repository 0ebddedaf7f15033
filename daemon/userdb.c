/* userdb.c - users and groups from the system's database; see userdb.h. */
#include "userdb.h"

#include <errno.h>
#include <grp.h>
#include <pwd.h>
#include <stdio.h>
#include <stdlib.h>

/* The most a user or group entry may take; a bigger one is refused. */
#define NSS_BUF_MAX (16u << 20)

/* What one lookup asks, and what it found. */
typedef struct query {
  enum { USER_BY_NAME, USER_BY_UID, GROUP_BY_NAME } kind;
  const char *name;
  uint32_t uid;
  jrpcd_user_t *user; /* the user kinds' answer */
  uint32_t *gid;      /* GROUP_BY_NAME's answer */
} query_t;

/* One getpwnam_r, getpwuid_r or getgrnam_r into buf: its return; *found
 * when the entry is there (and copied out). */
static int lookup_once(const query_t *q, char *buf, size_t n, int *found) {
  *found = 0;
  if (q->kind == GROUP_BY_NAME) {
    struct group gr, *res = NULL;
    int rc = getgrnam_r(q->name, &gr, buf, n, &res);
    if (rc == 0 && res) {
      *q->gid = (uint32_t)gr.gr_gid;
      *found = 1;
    }
    return rc;
  }
  struct passwd pw, *res = NULL;
  int rc = q->kind == USER_BY_NAME
               ? getpwnam_r(q->name, &pw, buf, n, &res)
               : getpwuid_r((uid_t)q->uid, &pw, buf, n, &res);
  if (rc != 0 || !res)
    return rc;
  jrpcd_user_t *u = q->user;
  if (snprintf(u->name, sizeof(u->name), "%s", pw.pw_name) >=
      (int)sizeof(u->name))
    return ENAMETOOLONG;
  u->uid = (uint32_t)pw.pw_uid;
  u->gid = (uint32_t)pw.pw_gid;
  *found = 1;
  return 0;
}

static int lookup(const query_t *q) {
  for (size_t n = 4096;; n *= 2) {
    char *buf = malloc(n);
    if (!buf)
      return ENOMEM;
    int found = 0, rc = lookup_once(q, buf, n, &found);
    free(buf);
    if (found)
      return 0;
    if (rc == ERANGE && n < NSS_BUF_MAX)
      continue;
    /* getpwnam_r(3): these too mean "not found" for some sources. */
    if (rc == 0 || rc == ENOENT || rc == ESRCH || rc == EBADF || rc == EPERM)
      return -1;
    return rc;
  }
}

int jrpcd_user_by_name(const char *name, jrpcd_user_t *out) {
  return lookup(&(query_t){.kind = USER_BY_NAME, .name = name, .user = out});
}

int jrpcd_user_by_uid(uint32_t uid, jrpcd_user_t *out) {
  return lookup(&(query_t){.kind = USER_BY_UID, .uid = uid, .user = out});
}

int jrpcd_group_by_name(const char *name, uint32_t *gid) {
  return lookup(&(query_t){.kind = GROUP_BY_NAME, .name = name, .gid = gid});
}
