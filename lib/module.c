/* module.c - module ABI check and start/stop; see module.h. */
#include "module.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

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

/* Finalises every live slot, last worker first, and frees the table. */
static void workers_stop(jrpc__module_t *m) {
  for (unsigned k = m->nworkers; k-- > 0;)
    jrpc__module_worker_stop(m, k);
  free(m->wslot);
  free(m->wlive);
  m->wslot = NULL;
  m->wlive = NULL;
  m->nworkers = 0;
}

/* After init: one slot per worker, each made by the module's worker init
 * with the registration context still open for jrpc_conf_get and
 * jrpc_init_error. */
static int workers_start(jrpc__module_t *m, jrpc__regctx_t *ctx,
                         unsigned nworkers, unsigned *failed) {
  m->wfini = ctx->wfini;
  m->wslot = calloc(nworkers ? nworkers : 1, sizeof(*m->wslot));
  m->wlive = calloc(nworkers ? nworkers : 1, sizeof(*m->wlive));
  if (!m->wslot || !m->wlive) {
    snprintf(ctx->err, sizeof(ctx->err), "out of memory");
    *failed = 0;
    return JRPC_ENOMEM;
  }
  m->nworkers = nworkers;
  ctx->sealed = 1;
  for (unsigned k = 0; k < nworkers; k++) {
    void *slot = NULL;
    ctx->err[0] = '\0';
    int rc = ctx->winit(&ctx->pub, m->data, k, &slot);
    if (rc) {
      *failed = k;
      return rc < 0 ? rc : JRPC_EINVAL;
    }
    m->wslot[k] = slot;
    m->wlive[k] = 1;
  }
  return 0;
}

int jrpc__module_start_workers(jrpc__module_t *m,
                               const jrpc_module_info_t *info, const char *file,
                               jrpc__registry_t *reg, const char *const *conf,
                               unsigned nworkers, char *err, size_t errlen) {
  memset(m, 0, sizeof(*m));
  m->info = info;
  m->file = file;
  int rc = jrpc__module_check(info, file, err, errlen);
  if (rc)
    return rc;
  jrpc__regctx_t ctx;
  jrpc__regctx_init(&ctx, reg, m, conf);
  rc = info->init(&ctx.pub, &m->data);
  m->bad_key = ctx.bad_key;
  int started = !rc;
  if (!rc && ctx.failed) {
    /* A method it meant to serve is missing: refuse the module rather
     * than serve part of it. */
    rc = JRPC_EINVAL;
  }
  unsigned wfailed = UINT32_MAX;
  if (!rc && ctx.winit)
    rc = workers_start(m, &ctx, nworkers, &wfailed);
  if (rc) {
    workers_stop(m);
    if (started && info->fini)
      info->fini(m->data);
    jrpc__registry_remove_owner(reg, m);
    const jrpc__module_t *other = ctx.dup_owner;
    if (other && other != m)
      snprintf(err, errlen, "%s: %s by %s", file, ctx.err, other->file);
    else if (wfailed != UINT32_MAX && ctx.err[0])
      snprintf(err, errlen, "%s: worker %u: per-worker init failed: %s", file,
               wfailed, ctx.err);
    else if (wfailed != UINT32_MAX)
      snprintf(err, errlen, "%s: worker %u: per-worker init failed (status %d)",
               file, wfailed, rc);
    else if (ctx.err[0])
      snprintf(err, errlen, "%s: init failed: %s", file, ctx.err);
    else
      snprintf(err, errlen, "%s: init failed (status %d)", file, rc);
    return rc < 0 ? rc : JRPC_EINVAL;
  }
  return 0;
}

int jrpc__module_start(jrpc__module_t *m, const jrpc_module_info_t *info,
                       const char *file, jrpc__registry_t *reg,
                       const char *const *conf, char *err, size_t errlen) {
  return jrpc__module_start_workers(m, info, file, reg, conf, 1, err, errlen);
}

void jrpc__module_worker_stop(jrpc__module_t *m, unsigned k) {
  if (k >= m->nworkers || !m->wlive[k])
    return;
  m->wlive[k] = 0;
  if (m->wfini)
    m->wfini(m->data, k, m->wslot[k]);
  m->wslot[k] = NULL;
}

void jrpc__module_stop(jrpc__module_t *m) {
  workers_stop(m);
  if (m->info && m->info->fini)
    m->info->fini(m->data);
  m->info = NULL;
}
