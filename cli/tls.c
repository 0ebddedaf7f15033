/* tls.c - jrpc's TLS client (OpenSSL 3): the server's certificate checked
 * against --cafile and the name or address jrpc was given, and a client
 * certificate (--cert, --key) for a listener with tls_client_ca. Every
 * wait goes through the connection's one deadline. */
#include "transport.h"

#include "jrpc.h"

#ifndef JRPC_HAVE_TLS

int jc_tls_start(jc_conn *c, const char *host) {
  (void)c, (void)host;
  jc_warn("this jrpc was built without TLS (-DJRPC_TLS=OFF)");
  return JC_ERR;
}
int jc_tls_write_all(jc_conn *c, const char *p, size_t n) {
  (void)c, (void)p, (void)n;
  return JC_ERR;
}
long jc_tls_read(jc_conn *c, char *buf, size_t cap) {
  (void)c, (void)buf, (void)cap;
  return JC_ERR;
}
bool jc_tls_pending(const jc_conn *c) {
  (void)c;
  return false;
}
void jc_tls_shutdown(jc_conn *c) {
  (void)c;
}
void jc_tls_free(jc_conn *c) {
  (void)c;
}

#else

#include <arpa/inet.h>
#include <openssl/err.h>
#include <openssl/ssl.h>
#include <openssl/x509v3.h>
#include <poll.h>
#include <string.h>

/* Why the last OpenSSL call failed, in a person's words. */
static const char *why(const jc_conn *c) {
  long v = c->ssl ? SSL_get_verify_result(c->ssl) : X509_V_OK;
  if (v != X509_V_OK)
    return X509_verify_cert_error_string(v);
  unsigned long e = ERR_peek_last_error();
  const char *r = e ? ERR_reason_error_string(e) : NULL;
  return r ? r : "the connection ended";
}

/* After an SSL call returned rc: wait as it asks (0), or fail. */
static int wait_as_asked(jc_conn *c, int rc, const char *doing) {
  switch (SSL_get_error(c->ssl, rc)) {
  case SSL_ERROR_WANT_READ:
    return jc_wait(c, POLLIN, doing);
  case SSL_ERROR_WANT_WRITE:
    return jc_wait(c, POLLOUT, doing);
  default:
    jc_warn("%s: TLS %s: %s", jc_endpoint_desc(c->ep), doing, why(c));
    return JC_ERR;
  }
}

int jc_tls_start(jc_conn *c, const char *host) {
  const jc_endpoint *ep = c->ep;
  SSL_CTX *ctx = SSL_CTX_new(TLS_client_method());
  if (!ctx) {
    jc_warn("TLS: out of memory");
    return JC_ERR;
  }
  SSL_CTX_set_min_proto_version(ctx, TLS1_2_VERSION);
  SSL_CTX_set_verify(ctx, SSL_VERIFY_PEER, NULL);
  int ok = SSL_CTX_load_verify_locations(ctx, ep->cafile, NULL) == 1;
  if (!ok)
    jc_warn("--cafile %s: %s", ep->cafile, why(c));
  if (ok && ep->cert) {
    ok = SSL_CTX_use_certificate_chain_file(ctx, ep->cert) == 1;
    if (!ok)
      jc_warn("--cert %s: %s", ep->cert, why(c));
  }
  if (ok && ep->cert) {
    const char *key = ep->key ? ep->key : ep->cert;
    ok = SSL_CTX_use_PrivateKey_file(ctx, key, SSL_FILETYPE_PEM) == 1 &&
         SSL_CTX_check_private_key(ctx) == 1;
    if (!ok)
      jc_warn("--key %s: not the key of --cert %s (%s)", key, ep->cert, why(c));
  }
  c->ssl = ok ? SSL_new(ctx) : NULL;
  SSL_CTX_free(ctx); /* the session holds what it needs */
  if (!c->ssl)
    return JC_ERR;
  /* The server must be the one named: its address, or its DNS name. */
  unsigned char ip[16];
  X509_VERIFY_PARAM *param = SSL_get0_param(c->ssl);
  if (inet_pton(AF_INET, host, ip) == 1 || inet_pton(AF_INET6, host, ip) == 1) {
    X509_VERIFY_PARAM_set1_ip_asc(param, host);
  } else {
    SSL_set_tlsext_host_name(c->ssl, host);
    X509_VERIFY_PARAM_set1_host(param, host, 0);
  }
  SSL_set_fd(c->ssl, c->fd);
  for (;;) {
    ERR_clear_error();
    int rc = SSL_connect(c->ssl);
    if (rc == 1)
      return JC_OK;
    int st = wait_as_asked(c, rc, "handshake");
    if (st != JC_OK)
      return st;
  }
}

int jc_tls_write_all(jc_conn *c, const char *p, size_t n) {
  while (n > 0) {
    size_t w = 0;
    ERR_clear_error();
    int rc = SSL_write_ex(c->ssl, p, n, &w);
    if (rc == 1) {
      p += w;
      n -= w;
      continue;
    }
    int st = wait_as_asked(c, rc, "sending");
    if (st != JC_OK)
      return st;
  }
  return JC_OK;
}

long jc_tls_read(jc_conn *c, char *buf, size_t cap) {
  for (;;) {
    size_t got = 0;
    ERR_clear_error();
    int rc = SSL_read_ex(c->ssl, buf, cap, &got);
    if (rc == 1)
      return (long)got;
    int e = SSL_get_error(c->ssl, rc);
    if (e == SSL_ERROR_ZERO_RETURN ||
        (e == SSL_ERROR_SYSCALL && ERR_peek_error() == 0))
      return 0; /* close_notify, or the TCP connection ended */
    int st = wait_as_asked(c, rc, "waiting for the reply");
    if (st != JC_OK)
      return st;
  }
}

bool jc_tls_pending(const jc_conn *c) {
  return c->ssl && SSL_pending(c->ssl) > 0;
}

void jc_tls_shutdown(jc_conn *c) {
  (void)SSL_shutdown(c->ssl); /* close_notify: jrpcd reads it as the end */
}

void jc_tls_free(jc_conn *c) {
  SSL_free(c->ssl);
  c->ssl = NULL;
}

#endif /* JRPC_HAVE_TLS */
