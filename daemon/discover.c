/* discover.c - the built-in rpc.discover: an OpenRPC 1.2.6 document of the
 * methods the caller may call here (its listener's `methods`, the [access]
 * rules), sorted by name. A method its module described (jrpc_describe)
 * appears as that Method Object with its name added; any other as its
 * name, no params, a result of any type and "x-jrpcd-params": "any"
 * (nothing is known of what it takes; jrpc checks no arguments for it).
 * A subscription method has "x-subscription": {"unsubscribe": U,
 * "notification": N} after its name.
 * rpc.discover itself is not listed; it answers on every listener but those
 * with discover = no (admit.c's decide). */
#include "discover.h"

#include <stdlib.h>
#include <string.h>

#include "server.h"

#ifndef JRPCD_VERSION
#define JRPCD_VERSION "0"
#endif

typedef struct entry {
  const jrpc__method_t *m;
} entry_t;

static int by_name(const void *a, const void *b) {
  return strcmp(((const entry_t *)a)->m->name, ((const entry_t *)b)->m->name);
}

/* "NAME" as a JSON string into out (room for 6 bytes a byte, plus 3). */
static size_t quote(char *out, const char *s, size_t n) {
  static const char hex[] = "0123456789abcdef";
  size_t o = 0;
  out[o++] = '"';
  for (size_t i = 0; i < n; i++) {
    unsigned char ch = (unsigned char)s[i];
    if (ch == '"' || ch == '\\') {
      out[o++] = '\\';
      out[o++] = (char)ch;
    } else if (ch < 0x20) {
      memcpy(out + o, "\\u00", 4);
      out[o + 4] = hex[ch >> 4];
      out[o + 5] = hex[ch & 15];
      o += 6;
    } else {
      out[o++] = (char)ch;
    }
  }
  out[o++] = '"';
  return o;
}

/* The Method Object of m: {"name":NAME,...its description} or
 * {"name":NAME,"params":[]}; a jrpc_alloc'd text, or NULL. */
static const char *method_object(jrpc_call_t *c, const jrpc__method_t *m,
                                 size_t *len) {
  const char *d = m->desc ? strchr(m->desc, '{') + 1 : NULL;
  size_t dn = d ? strlen(d) : 0;
  /* A subscription method (jrpc_subscription): which method ends it and
   * which notifications it sends, as an OpenRPC extension. */
  const char *note = m->push, *unsub = note ? note + strlen(note) + 1 : NULL;
  size_t pn = note ? strlen(note) + strlen(unsub) : 0;
  char *out = jrpc_alloc(c, 6 * ((size_t)m->len + pn) + dn + 96);
  if (!out)
    return NULL;
  size_t o = 0;
  memcpy(out, "{\"name\":", 8);
  o = 8 + quote(out + 8, m->name, m->len);
  if (note) {
    static const char x_sub[] = ",\"x-subscription\":{\"unsubscribe\":";
    memcpy(out + o, x_sub, sizeof(x_sub) - 1);
    o += sizeof(x_sub) - 1;
    o += quote(out + o, unsub, strlen(unsub));
    memcpy(out + o, ",\"notification\":", 16);
    o += 16;
    o += quote(out + o, note, strlen(note));
    out[o++] = '}';
  }
  /* A description's members follow the name: its text after '{' (an
   * empty object's is just its '}'). */
  const char *rest = d;
  while (rest &&
         (*rest == ' ' || *rest == '\t' || *rest == '\n' || *rest == '\r'))
    rest++;
  if (!d) {
    static const char any[] = ",\"params\":[],\"result\":{\"name\":"
                              "\"result\",\"schema\":{}},"
                              "\"x-jrpcd-params\":\"any\"}";
    memcpy(out + o, any, sizeof(any) - 1);
    o += sizeof(any) - 1;
  } else {
    if (*rest != '}')
      out[o++] = ',';
    memcpy(out + o, d, dn);
    o += dn;
  }
  *len = o;
  return out;
}

static int rpc_discover(jrpc_call_t *c, jrpc_val_t params, void *udata) {
  (void)params;
  (void)udata;
  jrpc__call_t *call = (jrpc__call_t *)c;
  const jrpc__registry_t *base = call->e->gen_reg, *view = call->e->reg;
  entry_t *list = jrpc_alloc(c, ((size_t)base->count + 1) * sizeof(*list));
  if (!list)
    return JRPC_ENOMEM;
  size_t n = 0;
  /* rpc.stats answers only where its listener's stats is on (rpcstats.c
   * asks the same), so it is listed only there. */
  int stats_here = jrpcd_conn_of_sink(call->e->sink)->l->stats != 0;
  for (uint32_t i = 0; i <= base->mask; i++) {
    const jrpc__method_t *m = &base->slots[i];
    if (jrpc__registry_view_serves(base, view, i) &&
        strcmp(m->name, "rpc.discover") != 0 &&
        (stats_here || m->owner || strcmp(m->name, "rpc.stats") != 0))
      list[n++].m = m;
  }
  qsort(list, n, sizeof(*list), by_name);
  jrpc_w_obj(c);
  jrpc_w_key(c, "openrpc", 7);
  jrpc_w_str(c, "1.2.6", 5);
  jrpc_w_key(c, "info", 4);
  jrpc_w_obj(c);
  jrpc_w_key(c, "title", 5);
  jrpc_w_str(c, "jrpcd", 5);
  jrpc_w_key(c, "version", 7);
  jrpc_w_str(c, JRPCD_VERSION, strlen(JRPCD_VERSION));
  jrpc_w_obj_end(c);
  jrpc_w_key(c, "methods", 7);
  jrpc_w_arr(c);
  for (size_t k = 0; k < n; k++) {
    size_t len;
    const char *text = method_object(c, list[k].m, &len);
    if (!text)
      return JRPC_ENOMEM;
    jrpc_w_raw(c, text, len);
  }
  jrpc_w_arr_end(c);
  return jrpc_w_obj_end(c);
}

int jrpcd_discover_attach(jrpcd_gen_t *g) {
  return jrpc__registry_add_builtin(&g->reg, "rpc.discover", rpc_discover,
                                    NULL);
}
