/* subject.h - a push topic as a NATS subject for [cluster] (subject.c):
 * PREFIX.MODULE.TOPIC, each of the two names escaped so that no topic can
 * name a NATS wildcard (`*`, `>`), add a token (`.`), or carry whitespace
 * or control bytes, and so that two different topics never share a
 * subject. */
#ifndef JRPCD_SUBJECT_H
#define JRPCD_SUBJECT_H

#include <stddef.h>

/* Bytes of a subject jrpcd sends at most (NATS's control line holds 4096
 * by default; the rest is the command and the header sizes). A longer
 * topic is delivered on its own instance only. */
#define JRPCD_SUBJECT_MAX 1024

/* Writes PREFIX "." escape(NS) "." escape(TOPIC) and a NUL into out (cap
 * bytes). Bytes of [A-Za-z0-9_-] stand for themselves, any other is `~`
 * and two upper-case hex digits, and an empty name is a lone `~` (NATS
 * refuses empty tokens). The prefix is the operator's, written as is.
 * The length; -1 if it does not fit in cap or JRPCD_SUBJECT_MAX. */
int jrpcd_subject(const char *prefix, const char *ns, size_t ns_n,
                  const char *topic, size_t topic_n, char *out, size_t cap);

/* Reads back what jrpcd_subject wrote after PREFIX ".": the two names,
 * unescaped into ns (cap ns_cap) and topic (cap topic_cap), their lengths
 * into *ns_n and *topic_n. 0; -1 if s is not such a subject. */
int jrpcd_subject_parse(const char *s, size_t n, char *ns, size_t ns_cap,
                        size_t *ns_n, char *topic, size_t topic_cap,
                        size_t *topic_n);

#endif
