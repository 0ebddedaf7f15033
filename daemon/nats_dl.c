/* nats_dl.c - the NATS C client, loaded on first use; see nats_dl.h. */
#include "nats_dl.h"

#include <dlfcn.h>
#include <stdio.h>

#ifndef JRPCD_NATS_SONAME
#error "JRPCD_NATS_SONAME: the client library's SONAME (daemon/CMakeLists.txt)"
#endif

static jrpcd_nats_t table;
static const jrpcd_nats_t *loaded;

const char *jrpcd_nats_soname(void) {
  return JRPCD_NATS_SONAME;
}

const jrpcd_nats_t *jrpcd_nats_load(char *err, size_t errlen) {
  if (loaded)
    return loaded;
  /* RTLD_LOCAL: its symbols stay its own, as a plugin's do. Never closed:
   * the client's threads and its global message delivery outlive any one
   * connection. */
  void *lib = dlopen(JRPCD_NATS_SONAME, RTLD_NOW | RTLD_LOCAL);
  if (!lib) {
    snprintf(err, errlen,
             "[cluster]: cannot load the NATS client %s (Debian's libnats "
             "package): %s",
             JRPCD_NATS_SONAME, dlerror());
    return NULL;
  }
  const char *missing = NULL;
#define JRPCD_NATS_RESOLVE(name)                                               \
  if (!missing && !(table.name = (__typeof__(name) *)dlsym(lib, #name)))       \
    missing = #name;
  JRPCD_NATS_FUNCS(JRPCD_NATS_RESOLVE)
#undef JRPCD_NATS_RESOLVE
  if (missing) {
    snprintf(err, errlen,
             "[cluster]: the NATS client %s has no %s: a version this jrpcd "
             "was not built for",
             JRPCD_NATS_SONAME, missing);
    dlclose(lib);
    return NULL;
  }
  loaded = &table;
  return loaded;
}
