/* activation.h - listening sockets handed over by a service manager
 * (systemd's socket activation), read by the documented protocol of
 * sd_listen_fds(3) rather than libsystemd: when $LISTEN_PID is our pid,
 * fds 3 .. 3+$LISTEN_FDS-1 are ours, named in order by the colon-separated
 * $LISTEN_FDNAMES (FileDescriptorName= of the .socket unit). A passed
 * socket serves the [listen NAME] section of the same name. */
#ifndef JRPCD_ACTIVATION_H
#define JRPCD_ACTIVATION_H

#include <stddef.h>

#include "config.h"

typedef struct jrpcd_passed {
  int fd;
  char *name;
  int taken; /* a listener adopted it and closes it */
} jrpcd_passed_t;

typedef struct jrpcd_activation {
  jrpcd_passed_t *fds;
  size_t n;  /* 0: nothing was passed (or not to us) */
  int named; /* LISTEN_FDNAMES was set; else every name is "unknown" */
} jrpcd_activation_t;

/* Reads the three variables and removes them from the environment (a
 * plugin's child must not take the sockets for its own). Marks the passed
 * fds close-on-exec and non-blocking. 0 (also when none were passed), or a
 * negative errno with err. */
int jrpcd_activation_take(jrpcd_activation_t *a, char *err, size_t errlen);

/* Every passed fd must name a [listen] section of c, and no section two
 * fds. 0, or a negative errno with err. */
int jrpcd_activation_check(const jrpcd_activation_t *a, const jrpcd_config_t *c,
                           char *err, size_t errlen);

/* The passed socket for section NAME, or NULL: that section is bound by
 * jrpcd itself. */
jrpcd_passed_t *jrpcd_activation_find(jrpcd_activation_t *a, const char *name);

/* Closes the fds no listener took. */
void jrpcd_activation_free(jrpcd_activation_t *a);

#endif
