/* plugin_load.h - one handler plugin ([plugin NAME]) loaded into the process
 * and started, or stopped and unloaded. The generation (generation.h) holds
 * a table of them. */
#ifndef JRPCD_PLUGIN_LOAD_H
#define JRPCD_PLUGIN_LOAD_H

#include <stddef.h>

#include "config.h"
#include "module.h"
#include "registry.h"

typedef struct jrpcd_plugin {
  char *name; /* [plugin NAME] */
  char *path;
  void *dl;           /* dlopen handle, or NULL if not loaded */
  jrpc__module_t mod; /* started when mod.info is set */
} jrpcd_plugin_t;

/* dlopen pc->path, find the entry, check the ABI, run init (for nworkers
 * workers) into reg, and compile the params checks of its described methods
 * when validate_params (or the plugin's own setting) says so. On failure
 * returns -1 with the reason in err (a key of the section the plugin does
 * not take named with its line in conf_file); p is then partly set up, and
 * jrpcd_plugin_unload must still be called on it. */
int jrpcd_plugin_load(jrpcd_plugin_t *p, const jrpcd_plugin_conf_t *pc,
                      const char *conf_file, int validate_params,
                      jrpc__registry_t *reg, unsigned nworkers, char *err,
                      size_t errlen);

/* Runs fini if init ran, dlcloses, and frees p's strings. */
void jrpcd_plugin_unload(jrpcd_plugin_t *p);

#endif
