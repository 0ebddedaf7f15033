/* module.h - checking a module's ABI and starting it with rollback. (The
 * daemon adds dlopen on top; this part needs no shared objects, so the
 * same module source can be started from a static link in tests.) */
#ifndef JRPC_MODULE_H
#define JRPC_MODULE_H

#include <stddef.h>
#include <stdint.h>

#include "registry.h"

typedef struct jrpc__module {
  const jrpc_module_info_t *info;
  void *data;       /* what init stored in *mod_data */
  const char *file; /* for messages: the path, or a name for static ones */
  /* jrpc_on_worker (ABI 1.3): one slot per worker, made at start. A slot
   * is live from its init to its fini; each worker's thread reads only its
   * own, and the fini of slot k runs once, by jrpc__module_worker_stop(k)
   * or else by jrpc__module_stop. */
  jrpc_worker_fini_fn wfini;
  void **wslot;
  uint8_t *wlive;
  unsigned nworkers; /* slots made (0: the module has none) */
  /* After a failed start: the conf pair jrpc_conf_keys refused, its
   * index + 1 (0: none), so that the host can name its line. */
  size_t bad_key;
} jrpc__module_t;

/* 0 if jrpcd can run this module, else JRPC_EINVAL with a message in err
 * naming the file and both versions. */
int jrpc__module_check(const jrpc_module_info_t *info, const char *file,
                       char *err, size_t errlen);

/* Checks, then runs init with a registration context over `reg`, then, if
 * init asked for them, the per-worker inits of workers 0 to nworkers - 1
 * (on this thread). When any of them fails, the slots made are finalised,
 * fini runs and every method it registered is removed again. */
int jrpc__module_start_workers(jrpc__module_t *m,
                               const jrpc_module_info_t *info, const char *file,
                               jrpc__registry_t *reg, const char *const *conf,
                               unsigned nworkers, char *err, size_t errlen);

/* The same for a host with one thread: one slot, worker 0. */
int jrpc__module_start(jrpc__module_t *m, const jrpc_module_info_t *info,
                       const char *file, jrpc__registry_t *reg,
                       const char *const *conf, char *err, size_t errlen);

/* Worker k is done with this module: its slot's fini runs now, on the
 * calling thread, unless it already ran. */
void jrpc__module_worker_stop(jrpc__module_t *m, unsigned k);

/* Runs the fini of every slot still live (last worker first), then the
 * module's fini (methods stay registered: the caller drops the
 * registry). */
void jrpc__module_stop(jrpc__module_t *m);

#endif
