/* privs.c - giving up root; see privs.h. */
#include "privs.h"

#include <errno.h>
#include <grp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "userdb.h"

/* NAME as a decimal uid or gid: 0, or -1 when it is not one ((uid_t)-1
 * and (gid_t)-1 mean "no change" to the kernel, so they are none). */
static int numeric_id(const char *name, uint32_t *id) {
  char *end;
  errno = 0;
  unsigned long v = strtoul(name, &end, 10);
  if (!*name || *end || errno || v >= (uid_t)-1 || v >= (gid_t)-1)
    return -1;
  *id = (uint32_t)v;
  return 0;
}

/* A user by name, else by numeric uid (which must be in the database:
 * initgroups needs the name). */
static int lookup_user(const char *name, jrpcd_user_t *u) {
  uint32_t id;
  if (jrpcd_user_by_name(name, u) == 0)
    return 0;
  return numeric_id(name, &id) == 0 && jrpcd_user_by_uid(id, u) == 0 ? 0 : -1;
}

/* A group by name, else a numeric gid: a gid without a name is still a
 * gid. */
static int lookup_group(const char *name, gid_t *gid) {
  uint32_t id;
  if (jrpcd_group_by_name(name, &id) != 0 && numeric_id(name, &id) != 0)
    return -1;
  *gid = (gid_t)id;
  return 0;
}

/* 0 when found, else -1 with why naming NAME as no WHAT of this system. */
static int known(int found, const char *name, const char *what, char *why,
                 size_t whylen) {
  if (found)
    return 0;
  snprintf(why, whylen, "\"%s\" is no %s of this system", name, what);
  return -1;
}

int jrpcd_user_known(const char *name, char *why, size_t whylen) {
  jrpcd_user_t u;
  return known(lookup_user(name, &u) == 0, name, "user", why, whylen);
}

int jrpcd_group_known(const char *name, char *why, size_t whylen) {
  gid_t gid;
  return known(lookup_group(name, &gid) == 0, name, "group", why, whylen);
}

int jrpcd_drop_privileges(const char *user, const char *group, char *err,
                          size_t errlen) {
  if (!user && !group)
    return 0;
  jrpcd_user_t u;
  if (user && lookup_user(user, &u) != 0) {
    snprintf(err, errlen, "user = %s: no such user", user);
    return -1;
  }
  gid_t gid = user ? (gid_t)u.gid : getgid();
  if (group && lookup_group(group, &gid) != 0) {
    snprintf(err, errlen, "group = %s: no such group", group);
    return -1;
  }
  uid_t uid = user ? (uid_t)u.uid : getuid();
  if (getuid() == uid && geteuid() == uid && getgid() == gid &&
      getegid() == gid)
    return 0; /* already that user: nothing to give up */
  if (geteuid() != 0) {
    snprintf(err, errlen,
             "%s%s%s%s: switching needs jrpcd started as root (it runs as "
             "uid %u)",
             user ? "user = " : "", user ? user : "",
             user && group ? ", group = "
             : group       ? "group = "
                           : "",
             group ? group : "", (unsigned)geteuid());
    return -1;
  }
  /* Groups first, while root may still set them: the user's supplementary
   * groups, or only the one group asked for. */
  int rc = user ? initgroups(u.name, gid) : setgroups(1, &gid);
  if (rc != 0) {
    snprintf(err, errlen, "%s: %s", user ? "initgroups" : "setgroups",
             strerror(errno));
    return -1;
  }
  if (setresgid(gid, gid, gid) != 0) {
    snprintf(err, errlen, "setresgid(%u): %s", (unsigned)gid, strerror(errno));
    return -1;
  }
  if (setresuid(uid, uid, uid) != 0) {
    snprintf(err, errlen, "setresuid(%u): %s", (unsigned)uid, strerror(errno));
    return -1;
  }
  /* Trust, but verify: every id is the new one, and root is gone. */
  uid_t ru, eu, su;
  gid_t rg, eg, sg;
  if (getresuid(&ru, &eu, &su) != 0 || ru != uid || eu != uid || su != uid ||
      getresgid(&rg, &eg, &sg) != 0 || rg != gid || eg != gid || sg != gid ||
      (uid != 0 && setuid(0) == 0)) {
    snprintf(err, errlen, "the switch to uid %u gid %u did not hold",
             (unsigned)uid, (unsigned)gid);
    return -1;
  }
  return 0;
}
