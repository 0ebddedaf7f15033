/* module.c - module ABI check and start/stop; see module.h. */
#include "module.h"

#include <stdio.h>

#include "common.h"

int jrpc__module_check(const jrpc_module_info_t *info, const char *file,
                       char *err, size_t errlen) {
  if (!info || info->magic != JRPC_MODULE_MAGIC) {
    snprintf(err, errlen,
             "%s: not a jrpcd handler (bad magic: expected 0x%08x, got "
             "0x%08x)",
             file, JRPC_MODULE_MAGIC, info ? info->magic : 0u);
    return JRPC_EINVAL;
  }
  if (info->abi_major != JRPC_ABI_MAJOR || info->abi_minor > JRPC_ABI_MINOR) {
    snprintf(err, errlen, "%s: built for ABI %u.%u, jrpcd provides %u.%u", file,
             info->abi_major, info->abi_minor, JRPC_ABI_MAJOR, JRPC_ABI_MINOR);
    return JRPC_EINVAL;
  }
  if (info->size != sizeof(jrpc_module_info_t)) {
    snprintf(err, errlen,
             "%s: module info has size %u, expected %zu (a broken build?)",
             file, info->size, sizeof(jrpc_module_info_t));
    return JRPC_EINVAL;
  }
  if (info->build_signature != JRPC_BUILD_SIGNATURE) {
    snprintf(err, errlen,
             "%s: built for another platform (signature 0x%08x, expected "
             "0x%08x)",
             file, info->build_signature, (unsigned)JRPC_BUILD_SIGNATURE);
    return JRPC_EINVAL;
  }
  if (!info->init) {
    snprintf(err, errlen, "%s: module has no init function", file);
    return JRPC_EINVAL;
  }
  return 0;
}

int jrpc__module_start(jrpc__module_t *m, const jrpc_module_info_t *info,
                       const char *file, jrpc__registry_t *reg,
                       const char *const *conf, char *err, size_t errlen) {
  m->info = info;
  m->data = NULL;
  m->file = file;
  int rc = jrpc__module_check(info, file, err, errlen);
  if (rc)
    return rc;
  jrpc__regctx_t ctx;
  jrpc__regctx_init(&ctx, reg, m, conf);
  rc = info->init(&ctx.pub, &m->data);
  if (!rc && ctx.failed) {
    /* A method it meant to serve is missing: refuse the module rather
     * than serve part of it. */
    if (info->fini)
      info->fini(m->data);
    rc = JRPC_EINVAL;
  }
  if (rc) {
    jrpc__registry_remove_owner(reg, m);
    const jrpc__module_t *other = ctx.dup_owner;
    if (other && other != m)
      snprintf(err, errlen, "%s: %s by %s", file, ctx.err, other->file);
    else if (ctx.err[0])
      snprintf(err, errlen, "%s: init failed: %s", file, ctx.err);
    else
      snprintf(err, errlen, "%s: init failed (status %d)", file, rc);
    return rc < 0 ? rc : JRPC_EINVAL;
  }
  return 0;
}

void jrpc__module_stop(jrpc__module_t *m) {
  if (m->info && m->info->fini)
    m->info->fini(m->data);
  m->info = NULL;
}
