/* accept.h - a worker's listening handles (accept.c). */
#ifndef JRPCD_ACCEPT_H
#define JRPCD_ACCEPT_H

#include <stddef.h>

struct jrpcd_worker;

/* accept.c: listen on every listener (-1 with err; jrpcd_accept_stop
 * then closes what was opened), and stop listening for good. */
int jrpcd_accept_start(struct jrpcd_worker *w, char *err, size_t errlen);
void jrpcd_accept_stop(struct jrpcd_worker *w);

#endif
