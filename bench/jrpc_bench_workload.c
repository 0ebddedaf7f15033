/* jrpc_bench_workload.c - see jrpc_bench_workload.h. */
#include "jrpc_bench_workload.h"

#include <stdio.h>
#include <stdlib.h>

#include "jrpc_bench_http.h"

/* A growable byte string with the id slots recorded as it is built. */
typedef struct builder {
  char *p;
  size_t len, cap;
  size_t *ids;
  size_t nids, capids;
  unsigned digits;
  int oom;
} builder_t;

static void put(builder_t *b, const void *s, size_t n) {
  if (b->oom)
    return;
  if (b->len + n > b->cap) {
    size_t cap = b->cap ? b->cap : 256;
    while (cap < b->len + n)
      cap *= 2;
    char *p = realloc(b->p, cap);
    if (!p) {
      b->oom = 1;
      return;
    }
    b->p = p;
    b->cap = cap;
  }
  memcpy(b->p + b->len, s, n);
  b->len += n;
}

static void puts_(builder_t *b, const char *s) {
  put(b, s, strlen(s));
}

/* A placeholder of the id's width, filled in by bench_workload_render. */
static void put_id(builder_t *b) {
  if (b->oom)
    return;
  if (b->nids == b->capids) {
    size_t cap = b->capids ? b->capids * 2 : 8;
    size_t *ids = realloc(b->ids, cap * sizeof(*ids));
    if (!ids) {
      b->oom = 1;
      return;
    }
    b->ids = ids;
    b->capids = cap;
  }
  b->ids[b->nids++] = b->len;
  for (unsigned i = 0; i < b->digits; i++)
    put(b, "0", 1);
}

/* One call (or a notification when with_id is 0) of a built-in workload. */
static void put_call(builder_t *b, const bench_opts_t *o, const char *method,
                     int with_id) {
  puts_(b, "{\"jsonrpc\":\"2.0\",\"method\":\"");
  puts_(b, method);
  puts_(b, "\",\"params\":");
  switch (o->workload) {
  case WL_NAMED:
    puts_(b, "{\"a\":1,\"b\":2}");
    break;
  case WL_LARGE: {
    static const char alphabet[] = "abcdefghijklmnopqrstuvwxyz0123456789";
    puts_(b, "[\"");
    for (uint64_t i = 0; i < o->wl_arg; i++)
      put(b, &alphabet[i % (sizeof(alphabet) - 1)], 1);
    puts_(b, "\"]");
    break;
  }
  default:
    puts_(b, "[1,2]");
    break;
  }
  if (with_id) {
    puts_(b, ",\"id\":");
    put_id(b);
  }
  puts_(b, "}");
}

/* Puts hdr[0, n) before b->p[from..], moving the id slots after it. */
static void insert_head(builder_t *b, size_t from, const void *hdr, size_t n) {
  size_t body = b->len - from;
  put(b, hdr, n); /* room for it */
  if (b->oom)
    return;
  memmove(b->p + from + n, b->p + from, body);
  memcpy(b->p + from, hdr, n);
  for (size_t i = 0; i < b->nids; i++)
    if (b->ids[i] >= from)
      b->ids[i] += n;
}

/* Frames the JSON text body[from..] in place: a length prefix or an HTTP
 * request head before it, or a newline after it. */
static void frame_from(builder_t *b, size_t from, const bench_opts_t *o) {
  size_t n = b->len - from;
  switch (o->framing) {
  case FRAMING_NEWLINE:
    put(b, "\n", 1);
    return;
  case FRAMING_LENGTH: {
    unsigned char hdr[4] = {(unsigned char)(n >> 24), (unsigned char)(n >> 16),
                            (unsigned char)(n >> 8), (unsigned char)n};
    insert_head(b, from, hdr, 4);
    return;
  }
  case FRAMING_WEBSOCKET: {
    /* A masked text frame (RFC 6455, 5.3). Its key is zero, so that the
     * ids written into the body per request stay as they are: the server
     * unmasks every byte all the same. */
    static const unsigned char key[4] = {0, 0, 0, 0};
    unsigned char hdr[14];
    size_t k = 0;
    hdr[k++] = 0x81;
    if (n < 126) {
      hdr[k++] = (unsigned char)(0x80 | n);
    } else if (n < 65536) {
      hdr[k++] = 0x80 | 126;
      hdr[k++] = (unsigned char)(n >> 8);
      hdr[k++] = (unsigned char)n;
    } else {
      hdr[k++] = 0x80 | 127;
      for (int i = 7; i >= 0; i--)
        hdr[k++] = (unsigned char)((uint64_t)n >> (8 * i));
    }
    memcpy(hdr + k, key, 4);
    k += 4;
    insert_head(b, from, hdr, k);
    return;
  }
  case FRAMING_HTTP: {
    char head[HTTP_MAX_HEAD];
    size_t hn = http_request_head(head, sizeof(head), o->http_path,
                                  o->tcp ? o->tcp : "localhost", n);
    if (!hn)
      b->oom = 1; /* only a path or host of kilobytes gets here */
    else
      insert_head(b, from, head, hn);
    return;
  }
  }
}

static int from_template(builder_t *b, const bench_opts_t *o, int *is_batch) {
  const char *t = o->template_text;
  size_t n = strlen(t);
  while (n && strchr(" \t\r\n", t[n - 1]))
    n--;
  while (n && strchr(" \t\r\n", *t)) {
    t++;
    n--;
  }
  if (n == 0) {
    fprintf(stderr, "jrpc-bench: the template is empty\n");
    return -1;
  }
  if (o->framing == FRAMING_NEWLINE &&
      (memchr(t, '\n', n) || memchr(t, '\r', n))) {
    fprintf(stderr, "jrpc-bench: the template spans several lines; newline "
                    "framing sends it as one line: join its lines\n");
    return -1;
  }
  *is_batch = t[0] == '[';
  const char *end = t + n;
  while (t < end) {
    const char *tok = NULL;
    for (const char *s = t; s + 4 <= end; s++)
      if (memcmp(s, "{id}", 4) == 0) {
        tok = s;
        break;
      }
    if (!tok) {
      put(b, t, (size_t)(end - t));
      break;
    }
    put(b, t, (size_t)(tok - t));
    put_id(b);
    t = tok + 4;
  }
  if (b->nids == 0 && !b->oom) {
    fprintf(stderr, "jrpc-bench: the template has no {id}: a notification "
                    "gets no reply to measure\n");
    return -1;
  }
  return 0;
}

static int build(builder_t *b, bench_workload_t *wl, const bench_opts_t *o) {
  const char *method = o->method;
  if (!method)
    method = o->workload == WL_LARGE ? "echo" : "math.add";
  wl->batch = 0;
  switch (o->workload) {
  case WL_TEMPLATE:
    if (from_template(b, o, &wl->batch))
      return -1;
    snprintf(wl->desc, sizeof(wl->desc), "template (%zu bytes, %zu id%s)",
             b->len, b->nids, b->nids == 1 ? "" : "s");
    frame_from(b, 0, o);
    wl->calls = wl->batch ? (unsigned)b->nids : 1;
    return 0;
  case WL_NOTIFY:
    put_call(b, o, method, 0);
    frame_from(b, 0, o);
    {
      size_t at = b->len;
      put_call(b, o, method, 1);
      frame_from(b, at, o);
    }
    wl->calls = 2;
    snprintf(wl->desc, sizeof(wl->desc), "notify (%s: notification + call)",
             method);
    return 0;
  case WL_BATCH:
    put(b, "[", 1);
    for (uint64_t i = 0; i < o->wl_arg; i++) {
      if (i)
        put(b, ",", 1);
      put_call(b, o, method, 1);
    }
    put(b, "]", 1);
    frame_from(b, 0, o);
    wl->batch = 1;
    wl->calls = (unsigned)o->wl_arg;
    snprintf(wl->desc, sizeof(wl->desc), "batch:%llu (%s)",
             (unsigned long long)o->wl_arg, method);
    return 0;
  default:
    put_call(b, o, method, 1);
    frame_from(b, 0, o);
    wl->calls = 1;
    if (o->workload == WL_LARGE)
      snprintf(wl->desc, sizeof(wl->desc), "large:%llu (%s)",
               (unsigned long long)o->wl_arg, method);
    else
      snprintf(wl->desc, sizeof(wl->desc), "%s (%s)",
               o->workload == WL_NAMED ? "named" : "small", method);
    return 0;
  }
}

int bench_workload_build(bench_workload_t *wl, const bench_opts_t *o,
                         uint64_t window_slots) {
  memset(wl, 0, sizeof(*wl));
  /* Ids per request are only known once the template is read; a batch:N
   * has N, anything else built in has 1. Nine digits keep ids below 2^31
   * for peers that store them in an int; wider ones only when a
   * connection's window times the ids per request needs them. */
  uint64_t per_req = o->workload == WL_BATCH ? o->wl_arg : 1;
  if (o->workload == WL_TEMPLATE) {
    const char *s = o->template_text;
    per_req = 0;
    while ((s = strstr(s, "{id}")) != NULL) {
      per_req++;
      s += 4;
    }
    if (per_req == 0)
      per_req = 1;
  }
  builder_t b = {0};
  b.digits = window_slots * per_req * 64 <= 900000000ull ? 9 : 16;
  if (build(&b, wl, o) || b.oom) {
    if (b.oom)
      fprintf(stderr, "jrpc-bench: out of memory building the request\n");
    free(b.p);
    free(b.ids);
    return -1;
  }
  wl->frame = b.p;
  wl->len = b.len;
  wl->id_off = b.ids;
  wl->n_ids = (unsigned)b.nids;
  wl->id_digits = b.digits;
  if (b.digits == 9) {
    wl->id_base = 100000000ull;
    wl->id_span = 900000000ull;
  } else {
    /* Below 2^53: a peer that reads ids as doubles still echoes them. */
    wl->id_base = 1000000000000000ull;
    wl->id_span = 8000000000000000ull;
  }
  return 0;
}

void bench_workload_free(bench_workload_t *wl) {
  free(wl->frame);
  free(wl->id_off);
  memset(wl, 0, sizeof(*wl));
}
