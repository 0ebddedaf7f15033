/* nearest.h - "did you mean": whether a mistyped name is a likely typo of
 * a known one, for config keys (jrpcd's and plugins'). */
#ifndef JRPC_NEAREST_H
#define JRPC_NEAREST_H

/* Whether TYPED is a likely typo of KNOWN: within two edits (one for
 * names of up to four bytes), case-blind, and not the same. Its distance
 * then (lower is nearer); -1 when not. */
int jrpc__name_typo(const char *typed, const char *known);

#endif
