/* e2e_access.c - a method that [access] denies or a listener's `methods`
 * hides never reaches its handler, on any path (issue 21, point 1),
 * against the real daemon.
 *
 * One daemon per parser (native, jsmn, simdjson, auto with a threshold
 * the padded frames pass; and native with validate_params off) loads the
 * fx_guard fixture, whose handlers count the calls that reach them per
 * method. [access] denies fx.deny* to every client the test can be
 * (uid 65534 and 10.0.0.0/8 only); every listener's `methods` leaves out
 * fx.hide. Each listener (Unix newline, length, content-length, HTTP and
 * WebSocket; TCP newline; TCP newline over TLS) gets one connection carrying
 * the matrix: each params shape (positional, named in order, named out of
 * order, an escaped name, 100.0 for an integer, bad params, no params, a
 * frame padded past the auto threshold) to each method as a call, a
 * notification, and a call and a notification inside a batch.
 *
 * Oracles: fx.ran's counts, read at the end: the denied and hidden
 * methods' stay 0, while the served controls fx.ok and fx.ok_later (a
 * deferred handler), called with the same shapes, count exactly the calls
 * with good params, so the test cannot pass by nothing running. And every
 * reply: a denied call answers -32006 with its name, whatever its params
 * (never -32602 with the schema), a hidden one -32601, the controls a
 * result or, for bad params, -32602. The denials are logged, at most once
 * a second per worker. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/time.h>
#include <sys/un.h>
#include <unistd.h>

#ifdef E2E_TLS
#include <openssl/err.h>
#include <openssl/evp.h>
#include <openssl/pem.h>
#include <openssl/ssl.h>
#endif

#include "e2e.h"

#ifndef JRPC_FIXTURE_DIR
#error "JRPC_FIXTURE_DIR must name the fixture plugins' folder"
#endif

/* The padded frame is this much longer than the others: past the auto
 * parser's threshold below. */
#define PAD 1200
#define AUTO_THRESHOLD "512"

/* ---- what is sent ---- */

typedef struct shape {
  const char *name;
  const char *params; /* NULL: no params member */
  int good;           /* passes fx.ok's description */
} shape_t;

static const shape_t shapes[] = {
    {"positional", "[1,\"t\"]", 1},
    {"named", "{\"n\":1,\"tag\":\"t\"}", 1},
    {"reordered", "{\"tag\":\"t\",\"n\":1}", 1},
    {"escaped", "{\"\\u006e\":1}", 1},
    {"float", "{\"n\":100.0}", 1},
    {"bad", "{\"n\":\"x\"}", 0},
    {"none", NULL, 0},
    {"padded", NULL, 1}, /* made in padded_params() */
};
enum { NSHAPES = sizeof(shapes) / sizeof(shapes[0]) };

typedef enum { M_SERVE, M_SERVE_LATER, M_DENY, M_HIDE } fate_t;

static const struct {
  const char *name;
  fate_t fate;
} methods[] = {
    {"fx.ok", M_SERVE},        {"fx.ok_later", M_SERVE_LATER},
    {"fx.deny", M_DENY},       {"fx.deny_plain", M_DENY},
    {"fx.deny_later", M_DENY}, {"fx.hide", M_HIDE},
};
enum { NMETHODS = sizeof(methods) / sizeof(methods[0]) };

/* Calls reaching a served method per connection: its good shapes, each as
 * a call, a notification, and both again in a batch. */
static unsigned good_shapes(void) {
  unsigned n = 0;
  for (unsigned s = 0; s < NSHAPES; s++)
    n += (unsigned)shapes[s].good;
  return n;
}

typedef enum {
  F_NEWLINE,
  F_LENGTH,
  F_CONTENT_LENGTH,
  F_HTTP,
  F_WEBSOCKET /* an http listener with websocket = yes */
} framing_t;

typedef struct listener {
  const char *name;
  framing_t framing;
  int tcp, tls;
} listener_t;

static const listener_t listeners[] = {
    {"a_nl", F_NEWLINE, 0, 0},        {"a_len", F_LENGTH, 0, 0},
    {"a_cl", F_CONTENT_LENGTH, 0, 0}, {"a_http", F_HTTP, 0, 0},
    {"a_ws", F_WEBSOCKET, 0, 0},      {"a_tcp", F_NEWLINE, 1, 0},
#ifdef E2E_TLS
    {"a_tls", F_NEWLINE, 1, 1},
#endif
};
enum { NLISTENERS = sizeof(listeners) / sizeof(listeners[0]) };

typedef struct buf {
  char *p;
  size_t n, cap;
} buf_t;

static void put(buf_t *b, const void *p, size_t n) {
  if (b->n + n + 1 > b->cap) {
    while (b->n + n + 1 > b->cap)
      b->cap = b->cap ? 2 * b->cap : 65536;
    b->p = realloc(b->p, b->cap);
    assert_non_null(b->p);
  }
  memcpy(b->p + b->n, p, n);
  b->n += n;
  b->p[b->n] = '\0';
}

static void putf(buf_t *b, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));
static void putf(buf_t *b, const char *fmt, ...) {
  char tmp[4096];
  va_list ap;
  va_start(ap, fmt);
  int n = vsnprintf(tmp, sizeof(tmp), fmt, ap);
  va_end(ap);
  assert_true(n >= 0 && (size_t)n < sizeof(tmp));
  put(b, tmp, (size_t)n);
}

/* One client frame (RFC 6455, 5.2): final, text, masked, its length in
 * the shortest of the 7, 16 and 64-bit forms. */
static void ws_frame(buf_t *out, const buf_t *payload) {
  static const unsigned char mask[4] = {0x3c, 0xa5, 0x0f, 0x96};
  size_t n = payload->n;
  unsigned char head[14] = {0x81};
  size_t hn = 2;
  if (n < 126) {
    head[1] = (unsigned char)(0x80 | n);
  } else if (n <= 0xffff) {
    head[1] = 0x80 | 126;
    head[2] = (unsigned char)(n >> 8);
    head[3] = (unsigned char)n;
    hn = 4;
  } else {
    head[1] = 0x80 | 127;
    for (int i = 0; i < 8; i++)
      head[2 + i] = (unsigned char)((uint64_t)n >> (56 - 8 * i));
    hn = 10;
  }
  memcpy(head + hn, mask, 4);
  put(out, head, hn + 4);
  size_t at = out->n;
  put(out, payload->p, n);
  for (size_t i = 0; i < n; i++)
    out->p[at + i] ^= (char)mask[i % 4];
}

static void frame(buf_t *out, framing_t f, const buf_t *payload) {
  size_t n = payload->n;
  switch (f) {
  case F_NEWLINE:
    put(out, payload->p, n);
    put(out, "\n", 1);
    break;
  case F_LENGTH: {
    unsigned char be[4] = {(unsigned char)(n >> 24), (unsigned char)(n >> 16),
                           (unsigned char)(n >> 8), (unsigned char)n};
    put(out, be, 4);
    put(out, payload->p, n);
    break;
  }
  case F_CONTENT_LENGTH:
    putf(out, "Content-Length: %zu\r\n\r\n", n);
    put(out, payload->p, n);
    break;
  case F_HTTP:
    putf(out,
         "POST / HTTP/1.1\r\nHost: jrpcd\r\nContent-Type: application/json\r\n"
         "Content-Length: %zu\r\n\r\n",
         n);
    put(out, payload->p, n);
    break;
  case F_WEBSOCKET:
    ws_frame(out, payload);
    break;
  }
}

static const char *padded_params(void) {
  static char p[PAD + 64];
  int n = snprintf(p, sizeof(p), "{\"n\":1,\"tag\":\"");
  memset(p + n, 'p', PAD);
  snprintf(p + n + PAD, sizeof(p) - (size_t)n - PAD, "\"}");
  return p;
}

static const char *params_of(unsigned s) {
  return strcmp(shapes[s].name, "padded") == 0 ? padded_params()
                                               : shapes[s].params;
}

/* One request object; id NULL for a notification. */
static void request(buf_t *b, unsigned m, unsigned s, const char *id) {
  const char *params = params_of(s);
  putf(b, "{\"jsonrpc\":\"2.0\",\"method\":\"%s\"", methods[m].name);
  if (params) {
    put(b, ",\"params\":", 10);
    put(b, params, strlen(params));
  }
  if (id)
    putf(b, ",\"id\":\"%s\"", id);
  put(b, "}", 1);
}

static void call_id(char *id, size_t cap, unsigned m, unsigned s, int batch) {
  snprintf(id, cap, "%s-%s-%s", methods[m].name, shapes[s].name,
           batch ? "b" : "c");
}

/* The whole matrix for one connection, framed. */
static void matrix(buf_t *out, framing_t f) {
  char id[96];
  for (unsigned s = 0; s < NSHAPES; s++) {
    buf_t batch = {0};
    put(&batch, "[", 1);
    for (unsigned m = 0; m < NMETHODS; m++) {
      buf_t one = {0};
      call_id(id, sizeof(id), m, s, 0);
      request(&one, m, s, id);
      frame(out, f, &one);
      one.n = 0;
      request(&one, m, s, NULL);
      frame(out, f, &one);
      free(one.p);
      call_id(id, sizeof(id), m, s, 1);
      if (m)
        put(&batch, ",", 1);
      request(&batch, m, s, id);
      put(&batch, ",", 1);
      request(&batch, m, s, NULL);
    }
    put(&batch, "]", 1);
    frame(out, f, &batch);
    free(batch.p);
  }
}

/* ---- what must come back ---- */

/* The reply to call `id` within the replies received: its text from its
 * response object's start (NULL when not there yet). */
static const char *reply_of(const buf_t *in, const char *id, size_t *len) {
  char tail[128];
  size_t tn = (size_t)snprintf(tail, sizeof(tail), ",\"id\":\"%s\"}", id);
  /* memmem: length prefixes hold NUL bytes. */
  const char *end = in->p ? memmem(in->p, in->n, tail, tn) : NULL;
  if (!end)
    return NULL;
  static const char open[] = "{\"jsonrpc\":\"2.0\",";
  const char *start = NULL;
  for (const char *q = in->p;
       (q = memmem(q, (size_t)(end - q), open, sizeof(open) - 1)); q++)
    start = q;
  assert_non_null(start);
  *len = (size_t)(end - start) + tn;
  return start;
}

static int all_replied(const buf_t *in) {
  char id[96];
  size_t n;
  for (unsigned s = 0; s < NSHAPES; s++)
    for (unsigned m = 0; m < NMETHODS; m++)
      for (int b = 0; b < 2; b++) {
        call_id(id, sizeof(id), m, s, b);
        if (!reply_of(in, id, &n))
          return 0;
      }
  return 1;
}

static void check_replies(const buf_t *in, const char *where, int checked) {
  char id[96], want[256];
  for (unsigned s = 0; s < NSHAPES; s++)
    for (unsigned m = 0; m < NMETHODS; m++)
      for (int b = 0; b < 2; b++) {
        call_id(id, sizeof(id), m, s, b);
        size_t n;
        const char *r = reply_of(in, id, &n);
        const char *prefix = NULL;
        switch (methods[m].fate) {
        case M_DENY:
          snprintf(want, sizeof(want),
                   "{\"jsonrpc\":\"2.0\",\"error\":{\"code\":-32006,"
                   "\"message\":\"Access denied\",\"data\":\"%s\"},"
                   "\"id\":\"%s\"}",
                   methods[m].name, id);
          break;
        case M_HIDE:
          snprintf(want, sizeof(want),
                   "{\"jsonrpc\":\"2.0\",\"error\":{\"code\":-32601,"
                   "\"message\":\"Method not found\"},\"id\":\"%s\"}",
                   id);
          break;
        default:
          want[0] = '\0';
          prefix = checked && !shapes[s].good
                       ? "{\"jsonrpc\":\"2.0\",\"error\":{\"code\":"
                         "-32602,"
                   : methods[m].fate == M_SERVE_LATER
                       ? "{\"jsonrpc\":\"2.0\",\"result\":true,"
                       : "{\"jsonrpc\":\"2.0\",\"result\":";
          break;
        }
        int ok = r && (prefix ? strncmp(r, prefix, strlen(prefix)) == 0
                              : n == strlen(want) && !memcmp(r, want, n));
        if (!ok)
          fail_msg("%s: %s: got %.*s, want %s", where, id, r ? (int)n : 6,
                   r ? r : "(none)", prefix ? prefix : want);
      }
}

/* ---- the client ---- */

typedef struct peer {
  int fd;
#ifdef E2E_TLS
  SSL *ssl;
#endif
} peer_t;

#ifdef E2E_TLS
static SSL_CTX *client_ctx;

/* A self-signed P-256 certificate and its key, for the TLS listener. */
static void make_cert(const char *cert_path, const char *key_path) {
  EVP_PKEY *key = EVP_EC_gen("P-256");
  assert_non_null(key);
  X509 *x = X509_new();
  X509_set_version(x, 2);
  ASN1_INTEGER_set(X509_get_serialNumber(x), 1);
  X509_gmtime_adj(X509_getm_notBefore(x), -3600);
  X509_gmtime_adj(X509_getm_notAfter(x), 86400);
  X509_set_pubkey(x, key);
  X509_NAME_add_entry_by_txt(X509_get_subject_name(x), "CN", MBSTRING_ASC,
                             (const unsigned char *)"localhost", -1, -1, 0);
  X509_set_issuer_name(x, X509_get_subject_name(x));
  assert_true(X509_sign(x, key, EVP_sha256()) > 0);
  FILE *f = fopen(cert_path, "w");
  assert_non_null(f);
  assert_true(PEM_write_X509(f, x) == 1);
  fclose(f);
  int fd = open(key_path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
  assert_true(fd >= 0);
  f = fdopen(fd, "w");
  assert_non_null(f);
  assert_true(PEM_write_PrivateKey(f, key, NULL, NULL, 0, NULL, NULL) == 1);
  fclose(f);
  X509_free(x);
  EVP_PKEY_free(key);
}
#endif

static int unused_port(void) {
  int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  assert_true(fd >= 0);
  struct sockaddr_in sa = {.sin_family = AF_INET,
                           .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
  assert_int_equal(bind(fd, (struct sockaddr *)&sa, sizeof(sa)), 0);
  socklen_t sl = sizeof(sa);
  assert_int_equal(getsockname(fd, (struct sockaddr *)&sa, &sl), 0);
  close(fd);
  return ntohs(sa.sin_port);
}

typedef struct world {
  e2e_daemon_t *d; /* the test's state: e2e_teardown cleans up after a
                      failure */
  char dir[64];
  char sock[NLISTENERS][100];
  int port[NLISTENERS];
} world_t;

static void ws_upgrade(peer_t *p, const char *where);

static void peer_open(world_t *w, unsigned l, peer_t *p) {
  memset(p, 0, sizeof(*p));
  if (listeners[l].tcp) {
    p->fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    struct sockaddr_in sa = {.sin_family = AF_INET,
                             .sin_port = htons((uint16_t)w->port[l]),
                             .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
    assert_int_equal(connect(p->fd, (struct sockaddr *)&sa, sizeof(sa)), 0);
  } else {
    p->fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
    struct sockaddr_un sa = {.sun_family = AF_UNIX};
    snprintf(sa.sun_path, sizeof(sa.sun_path), "%s", w->sock[l]);
    assert_int_equal(connect(p->fd, (struct sockaddr *)&sa, sizeof(sa)), 0);
  }
  /* Every wait is bounded. */
  struct timeval tv = {E2E_REPLY_MS / 1000, 0};
  setsockopt(p->fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
  setsockopt(p->fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof(tv));
#ifdef E2E_TLS
  if (listeners[l].tls) {
    p->ssl = SSL_new(client_ctx);
    assert_non_null(p->ssl);
    SSL_set_fd(p->ssl, p->fd);
    if (SSL_connect(p->ssl) != 1) {
      ERR_print_errors_fp(stderr);
      fail_msg("%s: TLS handshake failed", listeners[l].name);
    }
  }
#endif
  if (listeners[l].framing == F_WEBSOCKET)
    ws_upgrade(p, listeners[l].name);
}

static void peer_send(peer_t *p, const char *s, size_t n) {
  while (n) {
    ssize_t k;
#ifdef E2E_TLS
    if (p->ssl) {
      size_t wrote = 0;
      k = SSL_write_ex(p->ssl, s, n, &wrote) == 1 ? (ssize_t)wrote : -1;
    } else
#endif
      k = write(p->fd, s, n);
    if (k < 0 && errno == EINTR)
      continue;
    assert_true(k > 0);
    s += k;
    n -= (size_t)k;
  }
}

static ssize_t peer_recv(peer_t *p, char *s, size_t cap) {
#ifdef E2E_TLS
  if (p->ssl) {
    size_t got = 0;
    return SSL_read_ex(p->ssl, s, cap, &got) == 1 ? (ssize_t)got : -1;
  }
#endif
  return read(p->fd, s, cap);
}

/* The opening handshake: the upgrade GET, then the 101 head read up to
 * its blank line (nothing else is sent before it). */
static void ws_upgrade(peer_t *p, const char *where) {
  static const char get[] =
      "GET / HTTP/1.1\r\nHost: jrpcd\r\nUpgrade: websocket\r\n"
      "Connection: Upgrade\r\nSec-WebSocket-Version: 13\r\n"
      "Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\n\r\n";
  peer_send(p, get, sizeof(get) - 1);
  char head[1024];
  size_t n = 0;
  while (n < 4 || memcmp(head + n - 4, "\r\n\r\n", 4) != 0) {
    if (n + 1 >= sizeof(head) || peer_recv(p, head + n, 1) != 1)
      fail_msg("%s: no whole upgrade reply: %.*s", where, (int)n, head);
    n++;
  }
  head[n] = '\0';
  if (strncmp(head, "HTTP/1.1 101 ", 13) != 0)
    fail_msg("%s: upgrade refused: %s", where, head);
}

static void peer_close(peer_t *p) {
#ifdef E2E_TLS
  if (p->ssl) {
    SSL_shutdown(p->ssl);
    SSL_free(p->ssl);
  }
#endif
  close(p->fd);
}

/* One call on listener l, its reply in *in. */
static void exchange(world_t *w, unsigned l, const buf_t *payloads,
                     int (*complete)(const buf_t *), buf_t *in) {
  peer_t p;
  peer_open(w, l, &p);
  peer_send(&p, payloads->p, payloads->n);
  uint64_t end = e2e_now_ms() + E2E_REPLY_MS;
  char chunk[65536];
  while (!complete(in)) {
    ssize_t k = peer_recv(&p, chunk, sizeof(chunk));
    if (k <= 0 || e2e_now_ms() > end) {
      e2e_print_log(w->d);
      fail_msg("%s: replies stopped (%zd) after %zu bytes: %.300s",
               listeners[l].name, k, in->n, in->p ? in->p : "");
    }
    put(in, chunk, (size_t)k);
  }
  peer_close(&p);
}

static int has_ran(const buf_t *in) {
  return in->p && strstr(in->p, "\"id\":\"ran\"}") != NULL;
}

/* fx.ran's count for method m. */
static long long ran_count(world_t *w, const char *name) {
  buf_t req = {0}, in = {0};
  buf_t one = {0};
  static const char ran[] =
      "{\"jsonrpc\":\"2.0\",\"method\":\"fx.ran\",\"id\":\"ran\"}";
  put(&one, ran, sizeof(ran) - 1);
  frame(&req, F_NEWLINE, &one);
  exchange(w, 0, &req, has_ran, &in);
  char key[64];
  snprintf(key, sizeof(key), "\"%s\":", name);
  const char *at = strstr(in.p, key);
  assert_non_null(at);
  long long v = strtoll(at + strlen(key), NULL, 10);
  free(req.p);
  free(in.p);
  free(one.p);
  return v;
}

/* ---- the daemon ---- */

static void start(world_t *w, const char *server) {
  snprintf(w->dir, sizeof(w->dir), "/tmp/jrpcd-e2e-acc-XXXXXX");
  assert_non_null(mkdtemp(w->dir));
  chmod(w->dir, 0755);
  buf_t conf = {0};
  putf(&conf, "%s[plugin guard]\npath = %s/fx_guard.so\n", e2e_plugins_default,
       JRPC_FIXTURE_DIR);
  for (unsigned l = 0; l < NLISTENERS; l++) {
    static const char *const framings[] = {
        "newline", "length", "content-length", "http", "http\nwebsocket = yes"};
    putf(&conf, "[listen %s]\nframing = %s\n", listeners[l].name,
         framings[listeners[l].framing]);
    /* fx.hide is the one fx_guard method no listener shows. */
    putf(&conf, "methods = fx.ok fx.ok_later fx.deny* fx.ran rpc.*\n");
    if (listeners[l].tcp) {
      w->port[l] = unused_port();
      putf(&conf, "tcp = 127.0.0.1:%d\n", w->port[l]);
    } else {
      snprintf(w->sock[l], sizeof(w->sock[l]), "%s/%s.sock", w->dir,
               listeners[l].name);
      putf(&conf, "unix = %s\nmode = 0600\n", w->sock[l]);
    }
#ifdef E2E_TLS
    if (listeners[l].tls) {
      char cert[128], key[128];
      snprintf(cert, sizeof(cert), "%s/cert.pem", w->dir);
      snprintf(key, sizeof(key), "%s/key.pem", w->dir);
      make_cert(cert, key);
      putf(&conf, "tls_cert = %s\ntls_key = %s\n", cert, key);
    }
#endif
  }
  /* Nobody the test can be: uid 65534 and 10.0.0.0/8 only. */
  putf(&conf, "[access]\nfx.deny* = uid:65534 10.0.0.0/8\n");
  e2e_opts_t o = {.workers = 2, .server = server, .plugins = conf.p};
  e2e_start(w->d, &o);
  free(conf.p);
}

static void stop(world_t *w) {
  e2e_stop(w->d);
  for (unsigned l = 0; l < NLISTENERS; l++)
    if (w->sock[l][0])
      unlink(w->sock[l]);
  char path[128];
  snprintf(path, sizeof(path), "%s/cert.pem", w->dir);
  unlink(path);
  snprintf(path, sizeof(path), "%s/key.pem", w->dir);
  unlink(path);
  rmdir(w->dir);
}

/* checked: validate_params is on, so the controls' bad params are
 * refused before their handler. */
static void run_matrix(void **state, const char *server, int checked) {
  world_t *w = e2e_calloc(1, sizeof(*w));
  w->d = *state;
  start(w, server);
  uint64_t began = e2e_now_ms();
  for (unsigned l = 0; l < NLISTENERS; l++) {
    buf_t out = {0}, in = {0};
    matrix(&out, listeners[l].framing);
    exchange(w, l, &out, all_replied, &in);
    check_replies(&in, listeners[l].name, checked);
    free(out.p);
    free(in.p);
  }
  /* The deferred control answers from its loop: its count is final once
   * every reply is in, which it is here. */
  unsigned want = 4 * (checked ? good_shapes() : NSHAPES) * NLISTENERS;
  assert_int_equal(ran_count(w, "fx.ok"), want);
  assert_int_equal(ran_count(w, "fx.ok_later"), want);
  for (unsigned m = 0; m < NMETHODS; m++)
    if (methods[m].fate == M_DENY || methods[m].fate == M_HIDE) {
      long long n = ran_count(w, methods[m].name);
      if (n)
        fail_msg("%s ran %lld times", methods[m].name, n);
    }
  /* Logged, and at most once a second per worker: far fewer lines than
   * the hundreds of denials. */
  uint64_t secs = (e2e_now_ms() - began) / 1000 + 1;
  size_t lines = e2e_log_count(w->d, " by [access] (");
  assert_true(lines >= 1);
  assert_true(lines <= 2 * (secs + 1));
  assert_true(e2e_log_count(w->d, "fx.deny denied to ") +
                  e2e_log_count(w->d, "fx.deny_plain denied to ") +
                  e2e_log_count(w->d, "fx.deny_later denied to ") ==
              lines);
  stop(w);
  e2e_free(w);
}

static void test_native(void **state) {
  run_matrix(state, "parser = native\n", 1);
}
static void test_jsmn(void **state) {
  run_matrix(state, "parser = jsmn\n", 1);
}
static void test_simdjson(void **state) {
#ifdef E2E_NO_SIMDJSON
  (void)state;
  skip();
#else
  run_matrix(state, "parser = simdjson\n", 1);
#endif
}
static void test_auto(void **state) {
  run_matrix(state,
             "parser = auto\nparser_auto_threshold = " AUTO_THRESHOLD "\n", 1);
}
static void test_unchecked(void **state) {
  run_matrix(state, "parser = native\nvalidate_params = no\n", 0);
}

int main(void) {
#ifdef E2E_TLS
  client_ctx = SSL_CTX_new(TLS_client_method());
  SSL_CTX_set_verify(client_ctx, SSL_VERIFY_NONE, NULL);
#endif
  const struct CMUnitTest tests[] = {
      cmocka_unit_test_setup_teardown(test_native, e2e_setup, e2e_teardown),
      cmocka_unit_test_setup_teardown(test_jsmn, e2e_setup, e2e_teardown),
      cmocka_unit_test_setup_teardown(test_simdjson, e2e_setup, e2e_teardown),
      cmocka_unit_test_setup_teardown(test_auto, e2e_setup, e2e_teardown),
      cmocka_unit_test_setup_teardown(test_unchecked, e2e_setup, e2e_teardown),
  };
  int rc = cmocka_run_group_tests(tests, NULL, NULL);
#ifdef E2E_TLS
  SSL_CTX_free(client_ctx);
#endif
  return rc;
}
