/* tls.c - TLS sessions over memory BIOs; see tls.h. */
#include "tls.h"

#ifndef JRPC_HAVE_TLS

int jrpcd_tls_available(void) {
  return 0;
}

const char *jrpcd_tls_library(void) {
  return NULL;
}

#else

#include <openssl/bio.h>
#include <openssl/err.h>
#include <openssl/evp.h>
#include <openssl/ssl.h>
#include <openssl/x509v3.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct jrpcd_tls_ctx {
  SSL_CTX *ssl;
  atomic_uint refs;
  long long not_after;
};

int jrpcd_tls_available(void) {
  return 1;
}

const char *jrpcd_tls_library(void) {
  return OpenSSL_version(OPENSSL_VERSION);
}

/* The first of OpenSSL's queued errors as a person reads it ("no such
 * file", "certificate verify failed"); the queue is emptied. */
static void ssl_reason(char *buf, size_t n, const char *fallback) {
  unsigned long e = ERR_get_error();
  const char *r = e ? ERR_reason_error_string(e) : NULL;
  snprintf(buf, n, "%s", r ? r : fallback);
  ERR_clear_error();
}

/* What a file that OpenSSL would not load as a PEM key or certificate
 * (WANT) holds instead, in plain words: OpenSSL's reasons ("unsupported",
 * "no start line", "bad decrypt") name its decoder's step, not the file's
 * fault. The first 64 KiB tell: a key or a certificate sits near the top.
 * SWAPPED: what to add when it holds the other one. Else the OpenSSL
 * reason already in buf stays. */
static void pem_fault(const char *path, int want_key, const char *swapped,
                      char *buf, size_t n) {
  enum { HEAD = 64 << 10 };
  char *head = malloc(HEAD), ssl_why[200];
  FILE *f = head ? fopen(path, "re") : NULL;
  if (!f) {
    free(head);
    return;
  }
  size_t got = fread(head, 1, HEAD, f);
  fclose(f);
  snprintf(ssl_why, sizeof(ssl_why), "%s", buf);
  const char *want = want_key ? "private key" : "certificate";
  int pem = memmem(head, got, "-----BEGIN ", 11) != NULL;
  int key = memmem(head, got, "PRIVATE KEY-----", 16) != NULL;
  int cert = memmem(head, got, "-----BEGIN CERTIFICATE-----", 27) != NULL;
  int encrypted = memmem(head, got, "ENCRYPTED PRIVATE KEY", 21) ||
                  memmem(head, got, "Proc-Type: 4,ENCRYPTED", 22);
  if (!pem)
    snprintf(buf, n,
             "not a PEM %s (no \"-----BEGIN\" line; a DER file converts "
             "with openssl %s -inform DER)",
             want, want_key ? "pkey" : "x509");
  else if (want_key && encrypted)
    snprintf(buf, n,
             "an encrypted private key: jrpcd asks for no pass phrase; "
             "store it decrypted (openssl pkey -in FILE -out NEW), readable "
             "only by jrpcd's user");
  else if (want_key && !key && cert)
    snprintf(buf, n, "a certificate, not a private key%s", swapped);
  else if (!want_key && !cert && key)
    snprintf(buf, n, "a private key, not a certificate%s", swapped);
  else if ((want_key && !key) || (!want_key && !cert))
    snprintf(buf, n, "no PEM %s in it (%.150s)", want, ssl_why);
  free(head);
}

/* An encrypted key fails to load instead of OpenSSL asking for its pass
 * phrase on the terminal, which a daemon has not. */
static int no_passphrase(char *buf, int size, int rwflag, void *arg) {
  (void)buf, (void)size, (void)rwflag, (void)arg;
  return 0;
}

static int min_version(const char *v) {
  if (!v || strcmp(v, "1.2") == 0)
    return TLS1_2_VERSION;
  if (strcmp(v, "1.3") == 0)
    return TLS1_3_VERSION;
  return -1;
}

/* Sessions resume only under the client verification they were made
 * under: the session id context (which OpenSSL checks on every resumption,
 * by session id or ticket) is a hash of whether a certificate is asked
 * for, the verify depth and each CA of tls_client_ca. A session made
 * before a reload that changed the CAs can then never carry its identity
 * across, even should ticket keys one day outlive a context. 1 or 0. */
static int set_sid_ctx(SSL_CTX *ssl, const jrpcd_tls_conf_t *conf) {
  unsigned char md[EVP_MAX_MD_SIZE], d[EVP_MAX_MD_SIZE];
  unsigned mdlen = 0, dlen = 0;
  uint32_t how[2] = {conf->client_ca != NULL, conf->verify_depth};
  EVP_MD_CTX *h = EVP_MD_CTX_new();
  int ok = h && EVP_DigestInit_ex(h, EVP_sha256(), NULL) &&
           EVP_DigestUpdate(h, how, sizeof(how));
  STACK_OF(X509_OBJECT) *cas =
      X509_STORE_get0_objects(SSL_CTX_get_cert_store(ssl));
  for (int i = 0; ok && i < sk_X509_OBJECT_num(cas); i++) {
    X509 *ca = X509_OBJECT_get0_X509(sk_X509_OBJECT_value(cas, i));
    if (ca)
      ok = X509_digest(ca, EVP_sha256(), d, &dlen) &&
           EVP_DigestUpdate(h, d, dlen);
  }
  ok = ok && EVP_DigestFinal_ex(h, md, &mdlen);
  EVP_MD_CTX_free(h);
  if (mdlen > SSL_MAX_SID_CTX_LENGTH)
    mdlen = SSL_MAX_SID_CTX_LENGTH;
  return ok && SSL_CTX_set_session_id_context(ssl, md, mdlen) == 1;
}

jrpcd_tls_ctx_t *jrpcd_tls_ctx_new(const jrpcd_tls_conf_t *conf, char *err,
                                   size_t errlen) {
  char why[200];
  ERR_clear_error();
  int minv = min_version(conf->min_version);
  if (minv < 0) {
    snprintf(err, errlen, "tls_min_version: \"%s\" is not 1.2 or 1.3",
             conf->min_version);
    return NULL;
  }
  jrpcd_tls_ctx_t *x = calloc(1, sizeof(*x));
  SSL_CTX *ssl = x ? SSL_CTX_new(TLS_server_method()) : NULL;
  if (!ssl) {
    snprintf(err, errlen, "cannot set up TLS: out of memory");
    free(x);
    return NULL;
  }
  x->ssl = ssl;
  atomic_init(&x->refs, 1);
  SSL_CTX_set_min_proto_version(ssl, minv);
  /* Renegotiation is a lever for a client to make the server work; no
   * JSON-RPC client needs it. */
  SSL_CTX_set_options(ssl, SSL_OP_NO_RENEGOTIATION | SSL_OP_NO_COMPRESSION |
                               SSL_OP_CIPHER_SERVER_PREFERENCE);
  SSL_CTX_set_mode(ssl, SSL_MODE_ENABLE_PARTIAL_WRITE |
                            SSL_MODE_ACCEPT_MOVING_WRITE_BUFFER |
                            SSL_MODE_RELEASE_BUFFERS);
  SSL_CTX_set_session_cache_mode(ssl, SSL_SESS_CACHE_SERVER);
  /* DHE suites need a group: the one OpenSSL picks by the key's size. */
  SSL_CTX_set_dh_auto(ssl, 1);
  const char *ciphers = conf->ciphers ? conf->ciphers : JRPCD_TLS_CIPHERS;
  if (SSL_CTX_set_cipher_list(ssl, ciphers) != 1) {
    ssl_reason(why, sizeof(why), "no cipher in the list");
    snprintf(err, errlen, "tls_ciphers: \"%s\": %s", ciphers, why);
    goto fail;
  }
  if (SSL_CTX_use_certificate_chain_file(ssl, conf->cert) != 1) {
    ssl_reason(why, sizeof(why), "unreadable");
    pem_fault(conf->cert, 0, " (tls_cert and tls_key swapped?)", why,
              sizeof(why));
    snprintf(err, errlen, "tls_cert: %s: %s", conf->cert, why);
    goto fail;
  }
  SSL_CTX_set_default_passwd_cb(ssl, no_passphrase);
  /* OpenSSL checks the pair as it loads the key, and says so in its own
   * words ("key values mismatch"): say it in ours. */
  int key_ok = SSL_CTX_use_PrivateKey_file(ssl, conf->key, SSL_FILETYPE_PEM);
  if (key_ok != 1) {
    ssl_reason(why, sizeof(why), "unreadable");
    if (!strstr(why, "mismatch")) {
      pem_fault(conf->key, 1, " (tls_key and tls_cert swapped?)", why,
                sizeof(why));
      snprintf(err, errlen, "tls_key: %s: %s", conf->key, why);
      goto fail;
    }
  }
  if (key_ok != 1 || SSL_CTX_check_private_key(ssl) != 1) {
    ERR_clear_error();
    snprintf(err, errlen, "tls_key: %s is not the key of tls_cert %s",
             conf->key, conf->cert);
    goto fail;
  }
  if (conf->client_ca) {
    if (SSL_CTX_load_verify_locations(ssl, conf->client_ca, NULL) != 1) {
      ssl_reason(why, sizeof(why), "unreadable");
      pem_fault(conf->client_ca, 0, "", why, sizeof(why));
      snprintf(err, errlen, "tls_client_ca: %s: %s", conf->client_ca, why);
      goto fail;
    }
    STACK_OF(X509_NAME) *names = SSL_load_client_CA_file(conf->client_ca);
    if (names)
      SSL_CTX_set_client_CA_list(ssl, names);
    ERR_clear_error();
    SSL_CTX_set_verify(ssl, SSL_VERIFY_PEER | SSL_VERIFY_FAIL_IF_NO_PEER_CERT,
                       NULL);
    /* A chain longer than any real deployment's is work for nothing. */
    SSL_CTX_set_verify_depth(ssl, (int)conf->verify_depth);
  }
  if (!set_sid_ctx(ssl, conf)) {
    ERR_clear_error();
    snprintf(err, errlen, "cannot set up TLS session resumption");
    goto fail;
  }
  X509 *cert = SSL_CTX_get0_certificate(ssl);
  const ASN1_TIME *na = cert ? X509_get0_notAfter(cert) : NULL;
  struct tm tm;
  if (na && ASN1_TIME_to_tm(na, &tm) == 1)
    x->not_after = (long long)timegm(&tm);
  return x;
fail:
  SSL_CTX_free(ssl);
  free(x);
  return NULL;
}

void jrpcd_tls_ctx_hold(jrpcd_tls_ctx_t *x) {
  atomic_fetch_add(&x->refs, 1);
}

void jrpcd_tls_ctx_release(jrpcd_tls_ctx_t *x) {
  if (x && atomic_fetch_sub(&x->refs, 1) == 1) {
    SSL_CTX_free(x->ssl);
    free(x);
  }
}

int jrpcd_tls_ctx_asks_cert(const jrpcd_tls_ctx_t *x) {
  return (SSL_CTX_get_verify_mode(x->ssl) & SSL_VERIFY_PEER) != 0;
}

long long jrpcd_tls_ctx_not_after(const jrpcd_tls_ctx_t *x) {
  return x->not_after;
}

int jrpcd_tls_start(jrpcd_tls_t *t, jrpcd_tls_ctx_t *ctx) {
  memset(t, 0, sizeof(*t));
  SSL *ssl = SSL_new(ctx->ssl);
  BIO *in = BIO_new(BIO_s_mem()), *out = BIO_new(BIO_s_mem());
  if (!ssl || !in || !out) {
    SSL_free(ssl);
    BIO_free(in);
    BIO_free(out);
    ERR_clear_error();
    snprintf(t->reason, sizeof(t->reason), "out of memory");
    return JRPCD_TLS_ERROR;
  }
  /* An empty memory BIO says "retry", not EOF: more may come. */
  BIO_set_mem_eof_return(in, -1);
  BIO_set_mem_eof_return(out, -1);
  SSL_set_bio(ssl, in, out); /* the SSL owns both now */
  SSL_set_accept_state(ssl);
  t->ssl = ssl;
  t->in = in;
  t->out = out;
  t->ctx = ctx;
  jrpcd_tls_ctx_hold(ctx);
  return JRPCD_TLS_OK;
}

void jrpcd_tls_free(jrpcd_tls_t *t) {
  if (t->ssl)
    SSL_free(t->ssl);
  if (t->ctx)
    jrpcd_tls_ctx_release(t->ctx);
  t->ssl = t->in = t->out = NULL;
  t->ctx = NULL;
}

int jrpcd_tls_feed(jrpcd_tls_t *t, const char *p, size_t n) {
  if (n > INT32_MAX || BIO_write(t->in, p, (int)n) != (int)n) {
    snprintf(t->reason, sizeof(t->reason), "out of memory");
    return JRPCD_TLS_ERROR;
  }
  return JRPCD_TLS_OK;
}

/* After the handshake: the client certificate's CN, if one was verified. */
static void note_peer(jrpcd_tls_t *t) {
  t->handshaken = 1;
  X509 *peer = SSL_get1_peer_certificate(t->ssl);
  if (!peer)
    return;
  if (SSL_get_verify_result(t->ssl) == X509_V_OK) {
    t->verified = 1;
    X509_NAME *subj = X509_get_subject_name(peer);
    int len = X509_NAME_get_text_by_NID(subj, NID_commonName, t->cn,
                                        (int)sizeof(t->cn));
    /* A CN with a NUL inside would compare as something it is not. */
    if (len < 0 || (size_t)len != strlen(t->cn))
      t->cn[0] = '\0';
  }
  X509_free(peer);
}

static int fail(jrpcd_tls_t *t, int rc, const char *what) {
  int e = SSL_get_error(t->ssl, rc);
  if (e == SSL_ERROR_WANT_READ || e == SSL_ERROR_WANT_WRITE)
    return JRPCD_TLS_OK;
  if (e == SSL_ERROR_ZERO_RETURN) {
    t->closed = 1;
    t->peer_done = 1;
    return JRPCD_TLS_OK;
  }
  char why[120];
  long v = SSL_get_verify_result(t->ssl);
  if (v != X509_V_OK && !t->handshaken) {
    snprintf(t->reason, sizeof(t->reason), "%s: client certificate: %s", what,
             X509_verify_cert_error_string(v));
    ERR_clear_error();
  } else {
    ssl_reason(why, sizeof(why), "protocol error");
    snprintf(t->reason, sizeof(t->reason), "%s: %s", what, why);
  }
  t->closed = 1;
  return JRPCD_TLS_ERROR;
}

long jrpcd_tls_read(jrpcd_tls_t *t, char *buf, size_t cap, int *eof) {
  *eof = 0;
  if (t->closed)
    return JRPCD_TLS_ERROR;
  if (!t->handshaken) {
    int rc = SSL_do_handshake(t->ssl);
    if (rc != 1)
      return fail(t, rc, "handshake");
    note_peer(t);
  }
  size_t got = 0;
  int rc = SSL_read_ex(t->ssl, buf, cap, &got);
  if (rc == 1)
    return (long)got;
  int r = fail(t, rc, "read");
  if (t->closed && r == JRPCD_TLS_OK)
    *eof = 1; /* close_notify: the peer is done */
  return r;
}

int jrpcd_tls_write(jrpcd_tls_t *t, const char *p, size_t n) {
  if (t->closed)
    return JRPCD_TLS_ERROR;
  while (n > 0) {
    size_t wrote = 0;
    int rc = SSL_write_ex(t->ssl, p, n, &wrote);
    if (rc != 1) {
      fail(t, rc, "write");
      if (!t->reason[0])
        snprintf(t->reason, sizeof(t->reason), "write before the handshake");
      t->closed = 1;
      return JRPCD_TLS_ERROR;
    }
    p += wrote;
    n -= wrote;
  }
  return JRPCD_TLS_OK;
}

size_t jrpcd_tls_out(jrpcd_tls_t *t, const char **p) {
  char *data = NULL;
  long n = BIO_get_mem_data((BIO *)t->out, &data);
  *p = data;
  return n > 0 ? (size_t)n : 0;
}

void jrpcd_tls_out_consume(jrpcd_tls_t *t, size_t n) {
  /* A memory BIO frees what is read from it; read into nowhere. */
  char sink[4096];
  while (n > 0) {
    int k =
        BIO_read(t->out, sink, n > sizeof(sink) ? (int)sizeof(sink) : (int)n);
    if (k <= 0)
      break;
    n -= (size_t)k;
  }
}

void jrpcd_tls_shutdown(jrpcd_tls_t *t) {
  /* Also after the peer's close_notify: a session whose connection was
   * not shut down is dropped from the cache (OpenSSL's rule, for sessions
   * cut off by an attacker), and a clean close must stay resumable. */
  if (t->ssl && t->handshaken && (!t->closed || t->peer_done))
    (void)SSL_shutdown(t->ssl);
  ERR_clear_error();
}

size_t jrpcd_tls_peer_sans(jrpcd_tls_t *t, const char **names, size_t max,
                           char *buf, size_t buflen) {
  if (!t->verified)
    return 0;
  X509 *peer = SSL_get1_peer_certificate(t->ssl);
  if (!peer)
    return 0;
  GENERAL_NAMES *gens =
      X509_get_ext_d2i(peer, NID_subject_alt_name, NULL, NULL);
  size_t k = 0, used = 0;
  for (int i = 0; gens && i < sk_GENERAL_NAME_num(gens) && k < max; i++) {
    const GENERAL_NAME *g = sk_GENERAL_NAME_value(gens, i);
    if (g->type != GEN_DNS)
      continue;
    const unsigned char *s = ASN1_STRING_get0_data(g->d.dNSName);
    int len = ASN1_STRING_length(g->d.dNSName);
    if (len <= 0 || memchr(s, '\0', (size_t)len) ||
        used + (size_t)len + 1 > buflen)
      continue;
    memcpy(buf + used, s, (size_t)len);
    buf[used + (size_t)len] = '\0';
    names[k++] = buf + used;
    used += (size_t)len + 1;
  }
  GENERAL_NAMES_free(gens);
  X509_free(peer);
  return k;
}

#endif /* JRPC_HAVE_TLS */
