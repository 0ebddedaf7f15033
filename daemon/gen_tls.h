/* gen_tls.h - the TLS contexts of a plugin generation: one per [listen]
 * section with tls_cert, built from its files when the generation loads,
 * so that a SIGHUP reads certificates and keys again and new connections
 * get them. A reload whose files fail to load keeps the previous
 * generation's context for that listener and logs why. */
#ifndef JRPCD_GEN_TLS_H
#define JRPCD_GEN_TLS_H

#include <stdio.h>

#include "generation.h"
#include "tls.h"

/* Builds g's contexts from c. prev NULL (start, jrpcd -t): a file that
 * fails is an error (-1 with err). Otherwise (reload) a failure keeps
 * prev's context for that listener, logged; never -1. */
int jrpcd_gen_tls_load(jrpcd_gen_t *g, const jrpcd_config_t *c,
                       const jrpcd_gen_t *prev, char *err, size_t errlen);
void jrpcd_gen_tls_free(jrpcd_gen_t *g);

/* The context of the listener named `listener`, or NULL (plain). */
jrpcd_tls_ctx_t *jrpcd_gen_tls(const jrpcd_gen_t *g, const char *listener);

/* ", TLS (certificate valid until 2027-01-31 12:00:00 UTC)" for a TLS
 * listener, "" for a plain one: for jrpcd -t and the start-up log. */
void jrpcd_gen_tls_describe(const jrpcd_gen_t *g, const char *listener,
                            char *out, size_t cap);

#endif
