/* privs.h - serving as another user: after jrpcd has bound its sockets and
 * loaded its plugins as root, [server] user and group make it give root up
 * for good (initgroups, setgid, setuid, each checked, then checked again
 * by trying to get root back). */
#ifndef JRPCD_PRIVS_H
#define JRPCD_PRIVS_H

#include <stddef.h>

/* Switches to user (its primary group and supplementary groups, unless
 * group names another primary group) and/or group; either may be NULL,
 * and with both NULL nothing happens. A user that jrpcd already runs as
 * is no change. 0, or -1 with err saying which step failed and why. */
int jrpcd_drop_privileges(const char *user, const char *group, char *err,
                          size_t errlen);

/* For the config reader: 0 if NAME is a user (or a numeric uid) known to
 * the system, else -1 with why. Likewise for groups. */
int jrpcd_user_known(const char *name, char *why, size_t whylen);
int jrpcd_group_known(const char *name, char *why, size_t whylen);

#endif
