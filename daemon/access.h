/* access.h - who may connect, and who may call what.
 *
 * A principal names peers: an address or CIDR range (TCP), a uid or gid
 * (Unix sockets, from SO_PEERCRED; user and group names are resolved when
 * the config is read), a verified client certificate's subject CN or DNS
 * SAN (TLS), or anyone ("*"). A listener's `peers` list is matched once at
 * accept; the [access] section's rules (method glob = principals, first
 * matching glob decides) are resolved once per connection and method, so
 * that no string is matched per call. Nothing here allocates on a match. */
#ifndef JRPCD_ACCESS_H
#define JRPCD_ACCESS_H

#include <stddef.h>
#include <stdint.h>

typedef enum {
  JRPCD_PRIN_ANY = 0, /* "*": [access] rules only */
  JRPCD_PRIN_NET,     /* 10.0.0.0/8, ::1, 192.168.1.7 */
  JRPCD_PRIN_UID,     /* uid:N, user:NAME */
  JRPCD_PRIN_GID,     /* gid:N, group:NAME (supplementary groups count) */
  JRPCD_PRIN_CERT,    /* cert:CN */
  JRPCD_PRIN_SAN,     /* san:NAME (a DNS subjectAltName) */
  JRPCD_PRIN_TOKEN    /* token:NAME (an HTTP bearer token, tokens.h) */
} jrpcd_prin_kind_t;

typedef struct jrpcd_principal {
  jrpcd_prin_kind_t kind;
  int family;       /* NET: AF_INET or AF_INET6 */
  unsigned prefix;  /* NET: leading bits that must match */
  uint8_t addr[16]; /* NET: network order, IPv4 in the first 4 */
  uint32_t id;      /* UID, GID */
  char *name;       /* CERT, SAN, TOKEN: owned */
} jrpcd_principal_t;

/* What is known of a connection's peer. Pointers are borrowed. */
typedef struct jrpcd_identity {
  int family;       /* AF_UNIX, AF_INET or AF_INET6 (v4-mapped: AF_INET) */
  uint8_t addr[16]; /* AF_INET, AF_INET6 */
  int has_cred;     /* AF_UNIX: uid, gid and groups are known */
  uint32_t uid, gid;
  const uint32_t *groups; /* supplementary groups */
  size_t ngroups;
  const char *cert_cn; /* verified client certificate, or NULL */
  const char *const *sans;
  size_t nsans;
  const char *token; /* the name of the HTTP bearer token sent, or NULL */
} jrpcd_identity_t;

struct sockaddr;
/* Fills the address part of id from a peer address; an IPv4-mapped IPv6
 * address (a dual-stack listener's IPv4 client) becomes AF_INET, so that
 * IPv4 ranges match it. */
void jrpcd_identity_set_addr(jrpcd_identity_t *id, const struct sockaddr *sa);

/* A list of principals, as a `peers` value or an [access] rule's. */
typedef struct jrpcd_plist {
  jrpcd_principal_t *v;
  size_t n;
} jrpcd_plist_t;

/* Parses one principal; `any_ok` allows "*". 0, or -1 with a message
 * that quotes the word. user:NAME and group:NAME are resolved now. */
int jrpcd_principal_parse(const char *word, int any_ok, jrpcd_principal_t *p,
                          char *err, size_t errlen);
void jrpcd_principal_free(jrpcd_principal_t *p);
int jrpcd_principal_match(const jrpcd_principal_t *p,
                          const jrpcd_identity_t *id);

/* Space-separated principals; at least one. */
int jrpcd_plist_parse(const char *text, int any_ok, jrpcd_plist_t *l, char *err,
                      size_t errlen);
void jrpcd_plist_free(jrpcd_plist_t *l);
/* 1 when any principal of l names the peer. */
int jrpcd_plist_match(const jrpcd_plist_t *l, const jrpcd_identity_t *id);

/* Shell-style glob ('*' any run, '?' one byte, [...] a set, \x the byte
 * x; access.c has the details) over a method name of n bytes, any n, in
 * at most (n + 1) x (strlen(glob) + 1) steps. 1 match, 0 no match, -1 the
 * glob is not one (callers deny: a glob that cannot be read allows
 * nothing). */
int jrpcd_glob_match(const char *glob, const char *name, size_t n);
/* 0 if glob is a glob the matcher reads whole, or -1 with a message that
 * quotes it (an empty glob, an unclosed '[', a backwards range, a named
 * class, a trailing '\\'). */
int jrpcd_glob_check(const char *glob, char *err, size_t errlen);
/* 1 only when certain that every name `later` matches, `earlier` matches
 * too; 0 when not, or not sure (access.c lists the cases it knows). */
int jrpcd_glob_covers(const char *earlier, const char *later);

/* Space-separated globs, as a listener's `methods` value (struct
 * jrpcd_globs is defined with the policy below); each is checked. */
typedef struct jrpcd_globs jrpcd_globs_t;
int jrpcd_globs_parse(const char *text, jrpcd_globs_t *g, char *err,
                      size_t errlen);
void jrpcd_globs_free(jrpcd_globs_t *g);
int jrpcd_globs_match(const jrpcd_globs_t *g, const char *name, size_t n);

/* What one listener lets in, as one generation of the config says (the
 * generation is rebuilt on SIGHUP, so names are resolved again then). */
typedef struct jrpcd_policy {
  char *listener;      /* [listen NAME] */
  jrpcd_plist_t peers; /* n == 0: anyone */
  int want_groups;     /* a gid principal: the peer's groups are needed */
  struct jrpcd_globs {
    char **v;
    size_t n;
  } methods;    /* n == 0: every method */
  int discover; /* rpc.discover served (the listener's discover key) */
} jrpcd_policy_t;

/* From a listener's name, its `peers` words (NULL: anyone) and its
 * `methods` globs (NULL: all). */
int jrpcd_policy_init(jrpcd_policy_t *pol, const char *listener,
                      char *const *peers, char *const *methods, char *err,
                      size_t errlen);
void jrpcd_policy_free(jrpcd_policy_t *pol);

/* The [access] section: rules in file order, then the default. */
typedef struct jrpcd_rule {
  char *glob;
  jrpcd_plist_t who;
  int line;
} jrpcd_rule_t;

typedef struct jrpcd_access {
  jrpcd_rule_t *rules;
  size_t n;
  int default_deny; /* `default = deny` */
} jrpcd_access_t;

/* Adds "GLOB = PRINCIPALS" (line for messages). 0 or -1 with err. */
int jrpcd_access_add(jrpcd_access_t *a, const char *glob, const char *who,
                     int line, char *err, size_t errlen);
void jrpcd_access_free(jrpcd_access_t *a);
/* A deep copy into an empty dst; 0 or -1 (out of memory; dst freed). */
int jrpcd_access_copy(jrpcd_access_t *dst, const jrpcd_access_t *src);
/* If rule j never decides because an earlier rule's glob matches every
 * method j's does (jrpcd_glob_covers), 1 with "[access] GLOB: ..." naming
 * that rule and its line in out (the caller adds file and line); else 0. */
int jrpcd_access_shadowed(const jrpcd_access_t *a, size_t j, char *out,
                          size_t outlen);
/* The first rule whose glob matches the method decides; none: the
 * default. 1 allowed, 0 denied (also when a glob cannot be read). */
int jrpcd_access_allows(const jrpcd_access_t *a, const char *method, size_t n,
                        const jrpcd_identity_t *id);

#endif
