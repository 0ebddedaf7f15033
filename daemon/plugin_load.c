/* plugin_load.c - one handler plugin in and out of the process: dlopen, the
 * entry symbol, the ABI check and init; fini and dlclose; see plugin_load.h. */
#include "plugin_load.h"

#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "log.h"
#include "validate.h"

typedef const jrpc_module_info_t *(*entry_fn)(void);

void jrpcd_plugin_unload(jrpcd_plugin_t *p) {
  if (p->mod.info)
    jrpc__module_stop(&p->mod);
  if (p->dl)
    dlclose(p->dl);
  p->dl = NULL;
  free(p->name);
  free(p->path);
  p->name = p->path = NULL;
}

static void not_checked(void *arg, const char *method, const char *why) {
  const jrpcd_plugin_t *p = arg;
  jrpcd_info("[plugin %s] %s: params not checked: %s", p->name, method, why);
}

/* validate_params: the plugin's own setting, else the server's. */
static int checks_params(const jrpcd_plugin_conf_t *pc, int server) {
  return pc->validate_params ? pc->validate_params == JRPCD_TRI_YES : server;
}

int jrpcd_plugin_load(jrpcd_plugin_t *p, const jrpcd_plugin_conf_t *pc,
                      const char *conf_file, int validate_params,
                      jrpc__registry_t *reg, unsigned nworkers, char *err,
                      size_t errlen) {
  memset(p, 0, sizeof(*p));
  p->name = strdup(pc->name);
  p->path = strdup(pc->path);
  if (!p->name || !p->path) {
    snprintf(err, errlen, "%s: out of memory", pc->path);
    return -1;
  }
  /* RTLD_LOCAL: two plugins may use the same symbol names. RTLD_NOW: a
   * missing symbol shows now, not in the middle of a request. */
  p->dl = dlopen(p->path, RTLD_NOW | RTLD_LOCAL);
  if (!p->dl) {
    const char *why = dlerror();
    snprintf(err, errlen, "[plugin %s] cannot load: %s", p->name,
             why ? why : p->path);
    return -1;
  }
  dlerror();
  void *sym = dlsym(p->dl, JRPC_MODULE_ENTRY_NAME);
  if (!sym) {
    snprintf(err, errlen,
             "[plugin %s] %s: not a jrpcd handler (no %s symbol; declare "
             "the module with JRPC_MODULE)",
             p->name, p->path, JRPC_MODULE_ENTRY_NAME);
    return -1;
  }
  entry_fn entry;
  memcpy(&entry, &sym, sizeof(entry)); /* object to function pointer */
  const jrpc_module_info_t *info = entry();
  char why[512];
  if (jrpc__module_start_workers(&p->mod, info, p->path, reg,
                                 (const char *const *)pc->kv, nworkers, why,
                                 sizeof(why))) {
    p->mod.info = NULL; /* not started: no fini */
    size_t bad = p->mod.bad_key;
    if (bad && bad <= pc->nkv)
      snprintf(err, errlen, "%s:%d: [plugin %s] %s", conf_file,
               pc->kv_lines[bad - 1], p->name, why);
    else
      snprintf(err, errlen, "[plugin %s] %s", p->name, why);
    return -1;
  }
  if (checks_params(pc, validate_params) &&
      jrpc__validate_owner(reg, &p->mod, why, sizeof(why), not_checked, p)) {
    jrpc__registry_remove_owner(reg, &p->mod);
    snprintf(err, errlen, "[plugin %s] %s: %s", p->name, p->path, why);
    return -1; /* jrpcd_plugin_unload runs fini */
  }
  return 0;
}
