/* test_tls.c - daemon/tls.c against a real OpenSSL client over memory:
 * handshakes with and without client certificates, the verified CN and
 * DNS SANs, data both ways in pieces, and every way a session fails
 * (no client certificate, one from another CA, an expired one, plaintext
 * to the TLS side, a protocol version below tls_min_version), plus each
 * refusal of a context with its message. The certificates are made here,
 * in memory, for each run: nothing is committed. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <openssl/bio.h>
#include <openssl/err.h>
#include <openssl/evp.h>
#include <openssl/pem.h>
#include <openssl/ssl.h>
#include <openssl/x509v3.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "tls.h"

static char dir[64];

/* ---- certificates ---- */

typedef struct cert {
  EVP_PKEY *key;
  X509 *x;
} cert_t;

static void ext(X509 *x, X509 *issuer, int nid, const char *value) {
  X509V3_CTX v;
  X509V3_set_ctx(&v, issuer, x, NULL, NULL, 0);
  X509_EXTENSION *e = X509V3_EXT_conf_nid(NULL, &v, nid, value);
  assert_non_null(e);
  X509_add_ext(x, e, -1);
  X509_EXTENSION_free(e);
}

/* A certificate for cn, signed by ca (self-signed when ca is NULL),
 * valid from days_from to days_to relative to now. */
static cert_t make_cert(const char *cn, const cert_t *ca, const char *san,
                        long days_from, long days_to) {
  cert_t c;
  c.key = EVP_EC_gen("P-256");
  assert_non_null(c.key);
  c.x = X509_new();
  X509_set_version(c.x, 2);
  static long serial = 1;
  ASN1_INTEGER_set(X509_get_serialNumber(c.x), serial++);
  X509_gmtime_adj(X509_getm_notBefore(c.x), days_from * 86400);
  X509_gmtime_adj(X509_getm_notAfter(c.x), days_to * 86400);
  X509_set_pubkey(c.x, c.key);
  X509_NAME *name = X509_get_subject_name(c.x);
  X509_NAME_add_entry_by_txt(name, "CN", MBSTRING_ASC,
                             (const unsigned char *)cn, -1, -1, 0);
  X509 *issuer = ca ? ca->x : c.x;
  X509_set_issuer_name(c.x, X509_get_subject_name(issuer));
  ext(c.x, issuer, NID_basic_constraints, ca ? "CA:FALSE" : "critical,CA:TRUE");
  if (!ca)
    ext(c.x, issuer, NID_key_usage, "critical,keyCertSign,cRLSign");
  if (san)
    ext(c.x, issuer, NID_subject_alt_name, san);
  assert_true(X509_sign(c.x, ca ? ca->key : c.key, EVP_sha256()) > 0);
  return c;
}

static void cert_free(cert_t *c) {
  X509_free(c->x);
  EVP_PKEY_free(c->key);
}

static const char *write_pem(const char *name, const cert_t *c, int key) {
  static char paths[16][128];
  static int next;
  char *path = paths[next++ % 16];
  snprintf(path, 128, "%s/%s", dir, name);
  FILE *f = fopen(path, "w");
  assert_non_null(f);
  if (key)
    PEM_write_PrivateKey(f, c->key, NULL, NULL, 0, NULL, NULL);
  else
    PEM_write_X509(f, c->x);
  fclose(f);
  return path;
}

/* The fixture: a CA, the server's certificate, a client's (CN
 * "billing", DNS SANs), one from another CA, an expired one. */
static cert_t ca, other_ca, server, client, stranger, expired;
static const char *server_pem, *server_key, *ca_pem;

static int setup(void **state) {
  snprintf(dir, sizeof(dir), "/tmp/test_tls.XXXXXX");
  assert_non_null(mkdtemp(dir));
  ca = make_cert("jrpcd test CA", NULL, NULL, -1, 30);
  other_ca = make_cert("another CA", NULL, NULL, -1, 30);
  server = make_cert("localhost", &ca, "DNS:localhost,IP:127.0.0.1", -1, 30);
  client = make_cert("billing", &ca, "DNS:billing.example.org,DNS:api.local",
                     -1, 30);
  stranger = make_cert("billing", &other_ca, NULL, -1, 30);
  expired = make_cert("billing", &ca, NULL, -30, -1);
  server_pem = write_pem("server.pem", &server, 0);
  server_key = write_pem("server.key", &server, 1);
  ca_pem = write_pem("ca.pem", &ca, 0);
  return 0;
}

static int teardown(void **state) {
  cert_t *all[] = {&ca, &other_ca, &server, &client, &stranger, &expired};
  for (size_t i = 0; i < sizeof(all) / sizeof(all[0]); i++)
    cert_free(all[i]);
  char cmd[128];
  snprintf(cmd, sizeof(cmd), "rm -rf %s", dir);
  assert_int_equal(system(cmd), 0);
  return 0;
}

/* ---- a client over memory ---- */

typedef struct client_side {
  SSL_CTX *ctx;
  SSL *ssl;
  BIO *in, *out; /* in: what the server sent; out: what it will read */
} client_side_t;

static client_side_t client_new(const cert_t *own, int max_version) {
  client_side_t c;
  c.ctx = SSL_CTX_new(TLS_client_method());
  assert_non_null(c.ctx);
  SSL_CTX_set_verify(c.ctx, SSL_VERIFY_PEER, NULL);
  assert_int_equal(SSL_CTX_load_verify_locations(c.ctx, ca_pem, NULL), 1);
  if (max_version)
    SSL_CTX_set_max_proto_version(c.ctx, max_version);
  if (own) {
    assert_int_equal(SSL_CTX_use_certificate(c.ctx, own->x), 1);
    assert_int_equal(SSL_CTX_use_PrivateKey(c.ctx, own->key), 1);
  }
  c.ssl = SSL_new(c.ctx);
  c.in = BIO_new(BIO_s_mem());
  c.out = BIO_new(BIO_s_mem());
  BIO_set_mem_eof_return(c.in, -1);
  BIO_set_mem_eof_return(c.out, -1);
  SSL_set_bio(c.ssl, c.in, c.out);
  SSL_set_tlsext_host_name(c.ssl, "localhost");
  SSL_set1_host(c.ssl, "localhost");
  SSL_set_connect_state(c.ssl);
  return c;
}

static void client_free(client_side_t *c) {
  SSL_free(c->ssl);
  SSL_CTX_free(c->ctx);
}

/* Moves bytes both ways, in chunks of at most `chunk`, and lets both
 * sides work, until nothing moves. Plaintext the server reads is
 * appended to got. Returns the server's last read status. */
static long shuttle(client_side_t *c, jrpcd_tls_t *t, size_t chunk, char *got,
                    size_t *got_n, size_t got_cap) {
  long last = 0;
  for (int round = 0; round < 200; round++) {
    int moved = 0;
    (void)SSL_do_handshake(c->ssl);
    char buf[4096];
    for (;;) { /* client -> server */
      int n = BIO_read(c->out, buf,
                       (int)(chunk < sizeof(buf) ? chunk : sizeof(buf)));
      if (n <= 0)
        break;
      assert_int_equal(jrpcd_tls_feed(t, buf, (size_t)n), JRPCD_TLS_OK);
      moved = 1;
      int eof = 0;
      long r;
      while ((r = jrpcd_tls_read(t, got + *got_n, got_cap - *got_n, &eof)) > 0)
        *got_n += (size_t)r;
      last = r;
      if (r < 0)
        return r;
    }
    int eof = 0;
    long r = jrpcd_tls_read(t, got + *got_n, got_cap - *got_n, &eof);
    if (r > 0) {
      *got_n += (size_t)r;
      moved = 1;
    } else {
      last = r;
      if (r < 0)
        return r;
    }
    const char *p;
    size_t n;
    while ((n = jrpcd_tls_out(t, &p)) > 0) { /* server -> client */
      size_t k = n < chunk ? n : chunk;
      BIO_write(c->in, p, (int)k);
      jrpcd_tls_out_consume(t, k);
      moved = 1;
    }
    if (!moved)
      break;
  }
  return last;
}

static jrpcd_tls_ctx_t *server_ctx(const char *client_ca, const char *minv) {
  jrpcd_tls_conf_t conf = {server_pem, server_key, client_ca, minv, NULL, 4};
  char err[256];
  jrpcd_tls_ctx_t *x = jrpcd_tls_ctx_new(&conf, err, sizeof(err));
  if (!x)
    fail_msg("%s", err);
  return x;
}

/* ---- tests ---- */

static void exchange(size_t chunk) {
  jrpcd_tls_ctx_t *x = server_ctx(NULL, NULL);
  jrpcd_tls_t t;
  assert_int_equal(jrpcd_tls_start(&t, x), JRPCD_TLS_OK);
  jrpcd_tls_ctx_release(x); /* the session holds it */
  client_side_t c = client_new(NULL, 0);
  char got[8192];
  size_t got_n = 0;
  assert_true(shuttle(&c, &t, chunk, got, &got_n, sizeof(got)) >= 0);
  assert_true(t.handshaken);
  assert_false(t.verified);
  assert_string_equal(t.cn, "");
  assert_int_equal(SSL_is_init_finished(c.ssl), 1);
  /* Client to server: two requests, cut wherever the chunks fall. */
  static const char req[] =
      "{\"jsonrpc\":\"2.0\",\"method\":\"math.add\",\"params\":[1,2],\"id\":1}"
      "\n"
      "{\"jsonrpc\":\"2.0\",\"method\":\"echo\",\"params\":[3],\"id\":2}\n";
  assert_int_equal(SSL_write(c.ssl, req, (int)strlen(req)), (int)strlen(req));
  assert_true(shuttle(&c, &t, chunk, got, &got_n, sizeof(got)) >= 0);
  assert_int_equal(got_n, strlen(req));
  assert_memory_equal(got, req, got_n);
  /* Server to client: a reply larger than one TLS record. */
  static char reply[40000];
  for (size_t i = 0; i < sizeof(reply); i++)
    reply[i] = (char)('a' + i % 26);
  assert_int_equal(jrpcd_tls_write(&t, reply, sizeof(reply)), JRPCD_TLS_OK);
  got_n = 0;
  shuttle(&c, &t, chunk, got, &got_n, sizeof(got));
  static char back[sizeof(reply)];
  size_t back_n = 0;
  int k;
  while ((k = SSL_read(c.ssl, back + back_n, (int)(sizeof(back) - back_n))) > 0)
    back_n += (size_t)k;
  assert_int_equal(back_n, sizeof(reply));
  assert_memory_equal(back, reply, sizeof(reply));
  /* The client closes cleanly: the server sees EOF, not an error. */
  SSL_shutdown(c.ssl);
  char buf[64];
  int n;
  while ((n = BIO_read(c.out, buf, sizeof(buf))) > 0)
    jrpcd_tls_feed(&t, buf, (size_t)n);
  int eof = 0;
  assert_int_equal(jrpcd_tls_read(&t, buf, sizeof(buf), &eof), 0);
  assert_true(eof);
  client_free(&c);
  jrpcd_tls_free(&t);
}

static void test_exchange_whole(void **state) {
  exchange(1 << 20);
}

static void test_exchange_bytewise(void **state) {
  exchange(7); /* records cut at every odd place */
}

static void test_mutual(void **state) {
  jrpcd_tls_ctx_t *x = server_ctx(ca_pem, NULL);
  jrpcd_tls_t t;
  assert_int_equal(jrpcd_tls_start(&t, x), JRPCD_TLS_OK);
  client_side_t c = client_new(&client, 0);
  char got[256];
  size_t got_n = 0;
  assert_true(shuttle(&c, &t, 1 << 20, got, &got_n, sizeof(got)) >= 0);
  assert_true(t.handshaken);
  assert_true(t.verified);
  assert_string_equal(t.cn, "billing");
  const char *names[4];
  char buf[256];
  assert_int_equal(jrpcd_tls_peer_sans(&t, names, 4, buf, sizeof(buf)), 2);
  assert_string_equal(names[0], "billing.example.org");
  assert_string_equal(names[1], "api.local");
  assert_int_equal(jrpcd_tls_peer_sans(&t, names, 1, buf, sizeof(buf)), 1);
  client_free(&c);
  jrpcd_tls_free(&t);
  jrpcd_tls_ctx_release(x);
}

/* A handshake the server must refuse: the reason says why. */
static void refused(const cert_t *own, int max_version, const char *minv,
                    const char *want) {
  jrpcd_tls_ctx_t *x = server_ctx(ca_pem, minv);
  jrpcd_tls_t t;
  assert_int_equal(jrpcd_tls_start(&t, x), JRPCD_TLS_OK);
  client_side_t c = client_new(own, max_version);
  char got[256];
  size_t got_n = 0;
  long r = shuttle(&c, &t, 1 << 20, got, &got_n, sizeof(got));
  if (r != JRPCD_TLS_ERROR)
    fail_msg("handshake not refused (%ld); wanted \"%s\"", r, want);
  assert_false(t.verified);
  if (!strstr(t.reason, want))
    fail_msg("reason \"%s\" lacks \"%s\"", t.reason, want);
  /* Once failed, it stays failed. */
  int eof;
  assert_int_equal(jrpcd_tls_read(&t, got, sizeof(got), &eof), JRPCD_TLS_ERROR);
  assert_int_equal(jrpcd_tls_write(&t, "x", 1), JRPCD_TLS_ERROR);
  client_free(&c);
  jrpcd_tls_free(&t);
  jrpcd_tls_ctx_release(x);
}

static void test_refusals(void **state) {
  refused(NULL, 0, NULL, "certificate");
  refused(&stranger, 0, NULL, "certificate");
  refused(&expired, 0, NULL, "expired");
  refused(&client, TLS1_2_VERSION, "1.3", "handshake");
}

static void test_plaintext_to_tls(void **state) {
  jrpcd_tls_ctx_t *x = server_ctx(NULL, NULL);
  jrpcd_tls_t t;
  assert_int_equal(jrpcd_tls_start(&t, x), JRPCD_TLS_OK);
  static const char plain[] = "{\"jsonrpc\":\"2.0\",\"method\":\"math.add\","
                              "\"params\":[1,2],\"id\":1}\n";
  assert_int_equal(jrpcd_tls_feed(&t, plain, strlen(plain)), JRPCD_TLS_OK);
  char buf[256];
  int eof;
  assert_int_equal(jrpcd_tls_read(&t, buf, sizeof(buf), &eof), JRPCD_TLS_ERROR);
  assert_true(strstr(t.reason, "handshake") != NULL);
  jrpcd_tls_free(&t);
  jrpcd_tls_ctx_release(x);
}

/* Half a handshake, then nothing: no error, no progress (the daemon's
 * handshake timeout ends it). */
static void test_stalled(void **state) {
  jrpcd_tls_ctx_t *x = server_ctx(NULL, NULL);
  jrpcd_tls_t t;
  assert_int_equal(jrpcd_tls_start(&t, x), JRPCD_TLS_OK);
  client_side_t c = client_new(NULL, 0);
  (void)SSL_do_handshake(c.ssl);
  char buf[4096];
  int n = BIO_read(c.out, buf, sizeof(buf));
  assert_true(n > 10);
  assert_int_equal(jrpcd_tls_feed(&t, buf, (size_t)n / 2), JRPCD_TLS_OK);
  int eof;
  assert_int_equal(jrpcd_tls_read(&t, buf, sizeof(buf), &eof), 0);
  assert_false(eof);
  assert_false(t.handshaken);
  client_free(&c);
  jrpcd_tls_free(&t);
  jrpcd_tls_ctx_release(x);
}

static void ctx_refused(jrpcd_tls_conf_t conf, const char *want) {
  char err[256] = "";
  jrpcd_tls_ctx_t *x = jrpcd_tls_ctx_new(&conf, err, sizeof(err));
  if (x)
    fail_msg("context accepted; wanted \"%s\"", want);
  if (!strstr(err, want))
    fail_msg("message \"%s\" lacks \"%s\"", err, want);
}

static void test_bad_contexts(void **state) {
  char missing[128];
  snprintf(missing, sizeof(missing), "%s/none.pem", dir);
  const char *client_key = write_pem("client.key", &client, 1);
  ctx_refused((jrpcd_tls_conf_t){missing, server_key, NULL, NULL, NULL, 4},
              "tls_cert: ");
  ctx_refused((jrpcd_tls_conf_t){server_pem, missing, NULL, NULL, NULL, 4},
              "tls_key: ");
  ctx_refused((jrpcd_tls_conf_t){server_pem, client_key, NULL, NULL, NULL, 4},
              "is not the key of tls_cert");
  ctx_refused(
      (jrpcd_tls_conf_t){server_pem, server_key, missing, NULL, NULL, 4},
      "tls_client_ca: ");
  ctx_refused((jrpcd_tls_conf_t){server_pem, server_key, NULL, "1.1", NULL, 4},
              "tls_min_version: \"1.1\"");
  ctx_refused((jrpcd_tls_conf_t){server_pem, server_key, NULL, NULL,
                                 "NO-SUCH-CIPHER", 4},
              "tls_ciphers: \"NO-SUCH-CIPHER\"");
  /* A key file that holds a certificate. */
  ctx_refused((jrpcd_tls_conf_t){server_pem, server_pem, NULL, NULL, NULL, 4},
              "tls_key: ");
  /* The good one reports when its certificate expires. */
  jrpcd_tls_conf_t good = {server_pem, server_key, NULL, "1.3", NULL, 4};
  char err[256];
  jrpcd_tls_ctx_t *x = jrpcd_tls_ctx_new(&good, err, sizeof(err));
  assert_non_null(x);
  assert_true(jrpcd_tls_ctx_not_after(x) > 0);
  jrpcd_tls_ctx_release(x);
  assert_int_equal(ERR_peek_error(), 0); /* nothing left queued */
}

int main(void) {
  if (!jrpcd_tls_available()) {
    fprintf(stderr, "test_tls: built without TLS\n");
    return 1;
  }
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_exchange_whole),
      cmocka_unit_test(test_exchange_bytewise),
      cmocka_unit_test(test_mutual),
      cmocka_unit_test(test_refusals),
      cmocka_unit_test(test_plaintext_to_tls),
      cmocka_unit_test(test_stalled),
      cmocka_unit_test(test_bad_contexts),
  };
  return cmocka_run_group_tests_name("test_tls", tests, setup, teardown);
}
