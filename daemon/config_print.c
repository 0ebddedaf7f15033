/* config_print.c - jrpcd's settings and keys as text, from the key table:
 * every setting in effect (jrpcd -T) and every key there is (jrpcd
 * --list-keys, which man/check.sh reads). */
#include "config_print.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "config_keys.h"

/* Whether VALUE, K's as printed, is what its default gives, for a listener of
 * KIND: the default is read into a blank struct and both printed. */
static int is_default(const jrpcd_key_t *k, jrpcd_listen_kind_t kind,
                      const char *value) {
  const char *def = jrpcd_key_default(k, kind);
  union {
    jrpcd_config_t server;
    jrpcd_listen_conf_t listen;
    jrpcd_plugin_conf_t plugin;
  } blank;
  char why[256], text[512];
  memset(&blank, 0, sizeof blank);
  if (!def || jrpcd_key_parse(k, def, &blank, why, sizeof why) != 0)
    return 0;
  int set = jrpcd_key_format(k, &blank, text, sizeof text);
  jrpcd_key_free(k, &blank);
  return set && strcmp(text, value) == 0;
}

/* The keys of section S for BASE, "key = value", "; default" after those
 * at their default; keys of other listener kinds are left out, and those
 * of HTTP alone are a comment on other framings (the reader refuses them
 * there), so that the output reads back as the same config. */
static void print_keys(FILE *f, jrpcd_section_t s, const void *base,
                       jrpcd_listen_kind_t kind, int http) {
  for (size_t i = 0; i < jrpcd_nkeys; i++) {
    const jrpcd_key_t *k = &jrpcd_keys[i];
    if (k->section != s)
      continue;
    if (s == JRPCD_SEC_LISTEN &&
        ((k->kinds && !(k->kinds & JRPCD_KIND_BIT(kind))) ||
         (k->makes_kind && k->makes_kind != 1 + (int)kind)))
      continue;
    char value[1024];
    if (!jrpcd_key_format(k, base, value, sizeof value)) {
      fprintf(f, "; %s is not set\n", k->name);
      continue;
    }
    if (k->http_only && !http)
      fprintf(f, "; %s = %s  (framing = http only)\n", k->name, value);
    else
      fprintf(f, "%s = %s%s\n", k->name, value,
              is_default(k, kind, value) ? "  ; default" : "");
  }
}

void jrpcd_config_print(const jrpcd_config_t *c, FILE *f) {
  jrpcd_listen_kind_t none = (jrpcd_listen_kind_t)JRPCD_LISTEN_KINDS;
  fprintf(f, "; the settings of %s in effect\n[server]\n", c->file);
  print_keys(f, JRPCD_SEC_SERVER, c, none, 0);
  for (size_t i = 0; i < c->nlistens; i++) {
    fprintf(f, "\n[listen %s]\n", c->listens[i].name);
    const jrpcd_listen_conf_t *l = &c->listens[i];
    print_keys(f, JRPCD_SEC_LISTEN, l, l->kind,
               l->framing == JRPC_FRAMING_HTTP);
  }
  if (c->has_cluster) {
    fprintf(f, "\n[cluster]\n");
    print_keys(f, JRPCD_SEC_CLUSTER, c, none, 0);
  }
  for (size_t i = 0; i < c->nplugins; i++) {
    const jrpcd_plugin_conf_t *pl = &c->plugins[i];
    fprintf(f, "\n[plugin %s]\n", pl->name);
    print_keys(f, JRPCD_SEC_PLUGIN, pl, none, 0);
    for (size_t j = 0; j < pl->nkv; j++)
      fprintf(f, "%s = %s\n", pl->kv[2 * j], pl->kv[2 * j + 1]);
  }
}

void jrpcd_keys_print(FILE *f) {
  fprintf(f, "# section\tkey\tkinds\ttakes\tdefault\tdescription\n");
  for (size_t i = 0; i < jrpcd_nkeys; i++) {
    const jrpcd_key_t *k = &jrpcd_keys[i];
    char takes[256];
    jrpcd_key_describe(k, takes, sizeof takes);
    fprintf(f, "%s\t%s\t", jrpcd_section_name(k->section), k->name);
    /* The listener kinds it is for: "unix,tcp", "unix"; "-" elsewhere. */
    int n = 0;
    for (int kind = 0;
         k->section == JRPCD_SEC_LISTEN && kind < JRPCD_LISTEN_KINDS; kind++)
      if (k->makes_kind ? k->makes_kind == 1 + kind
                        : !k->kinds || (k->kinds & JRPCD_KIND_BIT(kind)))
        fprintf(f, "%s%s", n++ ? "," : "", jrpcd_kind_names[kind]);
    fprintf(f, "%s\t%s\t", n ? "" : "-", takes);
    /* The default: "unix:yes,tcp:no" where it depends on the kind. */
    n = 0;
    for (int kind = 0;
         k->section == JRPCD_SEC_LISTEN && kind < JRPCD_LISTEN_KINDS; kind++)
      if (k->kind_def[kind])
        fprintf(f, "%s%s:%s", n++ ? "," : "", jrpcd_kind_names[kind],
                k->kind_def[kind]);
    if (!n)
      fprintf(f, "%s", k->def ? k->def : "-");
    fprintf(f, "\t%s\n", k->doc ? k->doc : "");
  }
}
