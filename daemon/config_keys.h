/* config_keys.h - the table of jrpcd.conf's keys: one row per key of
 * [server], [listen NAME] and the one [plugin NAME] key jrpcd reads itself
 * (path), with its type, range, default, the struct field it fills and a
 * line of documentation. The reader (config.c) validates and applies
 * defaults from it, `jrpcd -T` prints every setting through it, and
 * `jrpcd --list-keys` lists it for man/check.sh.
 *
 * A new key is one row in config_keys.c plus its field in config.h. */
#ifndef JRPCD_CONFIG_KEYS_H
#define JRPCD_CONFIG_KEYS_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "config.h"

typedef enum {
  JRPCD_SEC_SERVER,  /* fields of jrpcd_config_t */
  JRPCD_SEC_LISTEN,  /* fields of jrpcd_listen_conf_t */
  JRPCD_SEC_PLUGIN,  /* fields of jrpcd_plugin_conf_t */
  JRPCD_SEC_CLUSTER, /* fields of jrpcd_config_t: cluster_* */
} jrpcd_section_t;

typedef enum {
  /* Plain decimal in [min, max] into an unsigned field of 1, 2, 4 or 8
   * bytes; `words` may name values besides ("measured"). */
  JRPCD_KEY_UINT,
  /* yes/no, true/false, on/off, 1/0 into an int. */
  JRPCD_KEY_BOOL,
  /* One of `words` (any case) into an int-sized field: the word's value. */
  JRPCD_KEY_ENUM,
  /* One of `words` (any case) into a char *: the word as the table spells
   * it. */
  JRPCD_KEY_WORD,
  /* Text into a char *; with min 1 it must not be empty (`what` says what
   * was expected). */
  JRPCD_KEY_STRING,
  /* Words separated by spaces into a NULL-terminated char ** (one block,
   * one free); from min to max words (max 0: any number). `check`, if set,
   * is asked about each word. */
  JRPCD_KEY_LIST,
  /* Octal permission bits, 0 .. max, into an int. */
  JRPCD_KEY_MODE,
  /* A literal ADDRESS:PORT: the address (without brackets) into the
   * char * at offset, the port into the uint16_t at offset2. */
  JRPCD_KEY_HOST_PORT,
} jrpcd_key_type_t;

typedef struct jrpcd_key_word {
  const char *word;
  uint64_t value;
} jrpcd_key_word_t;

/* Listener kinds as a mask, for jrpcd_key_t.kinds. */
#define JRPCD_KIND_BIT(kind) (1u << (kind))

typedef struct jrpcd_key {
  const char *name;
  jrpcd_section_t section;
  jrpcd_key_type_t type;
  uint64_t min, max; /* UINT: the range; STRING: min 1 = not empty; LIST:
                        word count (max 0: any); MODE: max */
  /* The default as it would be written in the file, read by the same
   * parser when a section opens; NULL: the field stays zero/NULL. */
  const char *def;
  /* [listen]: the default for a listener of that kind, set once the kind
   * is known (the end of the section); overrides def. */
  const char *kind_def[JRPCD_LISTEN_KINDS];
  size_t offset, size;           /* the field in the section's struct */
  size_t offset2;                /* HOST_PORT: the port field */
  const jrpcd_key_word_t *words; /* ENUM, WORD; UINT: named values;
                                    ends with {NULL, 0} */
  /* Messages: "is not <what> (...)" for ENUM and WORD, "is empty (<what>)"
   * for STRING and LIST. */
  const char *what;
  /* A check beyond the type's, on the value (each word of a LIST): 0, or
   * -1 with the reason written to why ("\"...\" is ... (...)"). */
  int (*check)(const char *value, char *why, size_t whylen);
  /* [listen]: the kinds the key is valid on (JRPCD_KIND_BIT mask); 0 =
   * every kind. A key set on another kind is an error. */
  unsigned kinds;
  /* [listen]: 1 + the kind this key makes the listener (unix = 1 + UNIX);
   * 0 for the other keys. Each listener needs exactly one such key. */
  int makes_kind;
  /* [listen]: only for framing = http (an HTTP path or header); set
   * elsewhere to anything but off or unset, an error. */
  int http_only;
  /* Read only at start: a SIGHUP that changes it logs that it was not
   * applied (server.c). */
  int restart;
  const char *doc; /* one line, for --list-keys */
} jrpcd_key_t;

extern const jrpcd_key_t jrpcd_keys[];
extern const size_t jrpcd_nkeys;

/* "unix", "tcp"; and "unix sockets", "tcp listeners" for messages. */
extern const char *const jrpcd_kind_names[JRPCD_LISTEN_KINDS];
extern const char *const jrpcd_kind_plurals[JRPCD_LISTEN_KINDS];

/* "server", "listen", "plugin". */
const char *jrpcd_section_name(jrpcd_section_t s);

/* The row of NAME in section S (case-sensitive, like the file), or NULL. */
const jrpcd_key_t *jrpcd_key_find(jrpcd_section_t s, const char *name);

/* The key of S whose name is nearest NAME (a typo of it: a few edits
 * away), or NULL. */
const jrpcd_key_t *jrpcd_key_nearest(jrpcd_section_t s, const char *name);

/* The line of L's file that set its [listen] key NAME; 0 if none did. */
int jrpcd_listen_key_line(const jrpcd_listen_conf_t *l, const char *name);

/* The keys of S in table order, "a, b, c", cut to fit. */
void jrpcd_key_names(jrpcd_section_t s, char *out, size_t cap);

/* Reads VALUE as key K into the struct at BASE (a jrpcd_config_t,
 * jrpcd_listen_conf_t or jrpcd_plugin_conf_t, by K's section), replacing
 * (and freeing) what the field held. 0; -1 with why ("\"300\" is out of
 * range (0 .. 256)"); -2 out of memory (BASE unchanged). */
int jrpcd_key_parse(const jrpcd_key_t *k, const char *value, void *base,
                    char *why, size_t whylen);

/* The default of K for a listener of KIND (ignored outside [listen]). */
const char *jrpcd_key_default(const jrpcd_key_t *k, jrpcd_listen_kind_t kind);

/* Writes K's value in BASE as it would be written in the file; 0 if the
 * field is unset (a NULL string). Cut to fit cap. */
int jrpcd_key_format(const jrpcd_key_t *k, const void *base, char *out,
                     size_t cap);

/* What K takes, for --list-keys: "0 .. 256", "yes|no", "ADDRESS:PORT". */
void jrpcd_key_describe(const jrpcd_key_t *k, char *out, size_t cap);

/* Whether K's field in BASE turns something on: set (a string, a list)
 * or not zero (a number, yes). */
int jrpcd_key_in_use(const jrpcd_key_t *k, const void *base);

/* Whether K's field holds the same setting in A and B (as -T would print
 * it). */
int jrpcd_key_same(const jrpcd_key_t *k, const void *a, const void *b);

/* Frees what K's field owns in BASE and sets it to NULL. */
void jrpcd_key_free(const jrpcd_key_t *k, void *base);

/* Parses "info", "debug", ...; -1 if unknown. */
int jrpcd_log_level_parse(const char *s);

#endif
