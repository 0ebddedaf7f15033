/* fx_info.c - fixture modules with a hand-built info struct that the loader
 * must refuse: a wrong magic (FX_BAD_MAGIC), a newer ABI minor
 * (FX_ABI_MINOR_NEWER) or another ABI major (FX_ABI_MAJOR_OTHER). Everything
 * else is valid, so a refusal can only come from that one field; should the
 * loader accept the module anyway, "fx.should_not_load" shows it. */
#include <jrpc/jrpc.h>

#ifdef FX_BAD_MAGIC
#define FX_MAGIC (JRPC_MODULE_MAGIC ^ 0xFFu)
#define FX_NAME "fx_bad_magic"
#else
#define FX_MAGIC JRPC_MODULE_MAGIC
#endif

#ifdef FX_ABI_MAJOR_OTHER
#define FX_MAJOR (JRPC_ABI_MAJOR + 1)
#define FX_NAME "fx_abi_major"
#else
#define FX_MAJOR JRPC_ABI_MAJOR
#endif

#ifdef FX_ABI_MINOR_NEWER
#define FX_MINOR (JRPC_ABI_MINOR + 1)
#define FX_NAME "fx_abi_minor"
#else
#define FX_MINOR JRPC_ABI_MINOR
#endif

#ifndef FX_NAME
#error "define one of FX_BAD_MAGIC, FX_ABI_MINOR_NEWER, FX_ABI_MAJOR_OTHER"
#endif

static int loaded(jrpc_call_t *c, jrpc_val_t params, void *udata) {
  return jrpc_w_bool(c, 1);
}

static int init(jrpc_reg_t *r, void **mod_data) {
  return jrpc_register(r, "fx.should_not_load", loaded, NULL);
}

JRPC_EXPORT const jrpc_module_info_t *jrpc_module_info(void);
JRPC_EXPORT const jrpc_module_info_t *jrpc_module_info(void) {
  static const jrpc_module_info_t info = {FX_MAGIC,
                                          FX_MAJOR,
                                          FX_MINOR,
                                          (uint32_t)sizeof(jrpc_module_info_t),
                                          JRPC_BUILD_SIGNATURE,
                                          FX_NAME,
                                          "1.0",
                                          init,
                                          NULL};
  return &info;
}
