/* admit.h - who a connection's peer is and what it may call (admit.c):
 * admission at accept, again once a TLS client certificate is known, and
 * the view of the methods after a reload or a bearer token. */
#ifndef JRPCD_ADMIT_H
#define JRPCD_ADMIT_H

#include "conn.h"
#include "generation.h"

/* admit.c: reads the peer's identity when something needs it; 0 if the
 * connection may not stay (the log says why), else 1 with c->reg set. */
int jrpcd_conn_admit(jrpcd_conn_t *c);
/* The same once a TLS handshake is done: `peers` again with the client
 * certificate known, and the views that need it. */
int jrpcd_conn_admit_verified(jrpcd_conn_t *c);
/* After a reload: c->reg for the worker's new generation (closes c if
 * none can be had). */
void jrpcd_conn_regen(jrpcd_conn_t *c);
/* c->reg for what is known of the peer now (a bearer token, say): 0, or
 * -1 when no view can be had (logged; c->reg is left as it was). */
int jrpcd_conn_review(jrpcd_conn_t *c);

/* Frees the views of g's registry its connections made (a generation's
 * last release). */
void jrpcd_views_free(jrpcd_gen_t *g);

#endif
