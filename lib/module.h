/* module.h - checking a module's ABI and starting it with rollback. (The
 * daemon adds dlopen on top; this part needs no shared objects, so the
 * same module source can be started from a static link in tests.) */
#ifndef JRPC_MODULE_H
#define JRPC_MODULE_H

#include <stddef.h>

#include "registry.h"

typedef struct jrpc__module {
  const jrpc_module_info_t *info;
  void *data;       /* what init stored in *mod_data */
  const char *file; /* for messages: the path, or a name for static ones */
} jrpc__module_t;

/* 0 if jrpcd can run this module, else JRPC_EINVAL with a message in err
 * naming the file and both versions. */
int jrpc__module_check(const jrpc_module_info_t *info, const char *file,
                       char *err, size_t errlen);

/* Checks, then runs init with a registration context over `reg`. When init
 * fails, every method it registered is removed again. */
int jrpc__module_start(jrpc__module_t *m, const jrpc_module_info_t *info,
                       const char *file, jrpc__registry_t *reg,
                       const char *const *conf, char *err, size_t errlen);

/* Runs fini (methods stay registered: the caller drops the registry). */
void jrpc__module_stop(jrpc__module_t *m);

#endif
