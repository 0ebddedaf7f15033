/* userdb.h - users and groups by name (or uid) from the system's database
 * (getpwnam_r and its kin, so NSS sources count), the one place jrpcd asks
 * it: [access] and [listen] peers, a Unix socket's owner and group, and
 * [server] user and group. */
#ifndef JRPCD_USERDB_H
#define JRPCD_USERDB_H

#include <stdint.h>

typedef struct jrpcd_user {
  uint32_t uid;
  uint32_t gid;   /* the primary group */
  char name[256]; /* as the database spells it (initgroups wants it) */
} jrpcd_user_t;

/* Each returns 0 when found, -1 when there is no such entry, or an errno
 * when the database cannot be asked (or the entry is larger than 16 MiB).
 * The buffer grows while the lookup says ERANGE: a group entry lists its
 * members, and a big group's does not fit any fixed size. */
int jrpcd_user_by_name(const char *name, jrpcd_user_t *out);
int jrpcd_user_by_uid(uint32_t uid, jrpcd_user_t *out);
int jrpcd_group_by_name(const char *name, uint32_t *gid);

#endif
