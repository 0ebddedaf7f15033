/* tls.c - jrpc's TLS client (OpenSSL 3): the server's certificate checked
 * against --cafile, else the system's trust store (OpenSSL's default
 * paths, which SSL_CERT_FILE and SSL_CERT_DIR move), and against
 * --servername, else the name or address jrpc was given; nothing checked
 * with --insecure. A client certificate (--cert, --key) for a listener
 * with tls_client_ca. Every wait goes through the connection's one
 * deadline. */
#include "transport.h"

#include "jrpc.h"

#ifndef JRPC_HAVE_TLS

bool jc_tls_built(void) {
  return false;
}
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

bool jc_tls_built(void) {
  return true;
}

#include <arpa/inet.h>
#include <errno.h>
#include <openssl/err.h>
#include <openssl/ssl.h>
#include <openssl/x509v3.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* The system's trust store as OpenSSL finds it: SSL_CERT_FILE, else the
 * file it was built with, and SSL_CERT_DIR, else its directory. */
static const char *trust_store(void) {
  static char both[1000];
  const char *file = getenv(X509_get_default_cert_file_env());
  const char *dir = getenv(X509_get_default_cert_dir_env());
  snprintf(both, sizeof both, "%s and %s",
           file && *file ? file : X509_get_default_cert_file(),
           dir && *dir ? dir : X509_get_default_cert_dir());
  return both;
}

/* Why the last OpenSSL call failed, in a person's words: the causes a
 * user can fix (a CA, a name, a client certificate) named with the option
 * that fixes them, else OpenSSL's own reason. */
static const char *why(const jc_conn *c) {
  static char text[2000];
  const jc_endpoint *ep = c->ep;
  long v = c->ssl ? SSL_get_verify_result(c->ssl) : X509_V_OK;
  const char *fault, *what, *hint;
  switch (v) {
  case X509_V_OK:
    fault = what = hint = NULL;
    break;
  case X509_V_ERR_HOSTNAME_MISMATCH:
  case X509_V_ERR_IP_ADDRESS_MISMATCH:
    fault = ep->servername ? "is not for --servername"
                           : "is not for the name or address connected to";
    what = ep->servername ? ep->servername : ep->tcp;
    hint = "; --servername NAME checks the name it is for";
    break;
  case X509_V_ERR_UNABLE_TO_GET_ISSUER_CERT_LOCALLY:
  case X509_V_ERR_UNABLE_TO_VERIFY_LEAF_SIGNATURE:
  case X509_V_ERR_DEPTH_ZERO_SELF_SIGNED_CERT:
  case X509_V_ERR_SELF_SIGNED_CERT_IN_CHAIN:
    fault = ep->cafile ? "is not signed by a CA in --cafile"
                       : "is not signed by a CA in the system's trust store";
    what = ep->cafile ? ep->cafile : trust_store();
    hint = ep->cafile ? "" : "; --cafile FILE names the CA that signed it";
    break;
  default:
    return X509_verify_cert_error_string(v);
  }
  if (fault) {
    snprintf(text, sizeof text, "%s: the server's certificate %s (%s)%s",
             X509_verify_cert_error_string(v), fault, what, hint);
    return text;
  }
  /* Over TLS 1.3 the server's alert may come after the handshake, or be
   * lost to a reset while we write: its request for a certificate is
   * what tells. */
  if (c->cert_asked)
    return "the server wants a client certificate: give --cert FILE (and "
           "--key FILE)";
  unsigned long e = ERR_peek_last_error();
  switch (e && ERR_GET_LIB(e) == ERR_LIB_SSL ? ERR_GET_REASON(e) : 0) {
  case SSL_R_TLSV1_ALERT_UNKNOWN_CA:
  case SSL_R_SSLV3_ALERT_BAD_CERTIFICATE:
  case SSL_R_SSLV3_ALERT_CERTIFICATE_UNKNOWN:
    if (ep->cert) {
      snprintf(text, sizeof text,
               "the server refused our client certificate (--cert %s): it "
               "is not signed by the CA the listener trusts "
               "(tls_client_ca)",
               ep->cert);
      return text;
    }
    break;
  case SSL_R_UNEXPECTED_EOF_WHILE_READING:
    /* jrpcd's plain listeners close on a ClientHello without a word. */
    if (SSL_is_init_finished(c->ssl))
      break;
    return "the server closed the connection in the handshake: is this a "
           "TLS listener? (a plain one: tcp:// or http://, without "
           "--cafile)";
  case SSL_R_WRONG_VERSION_NUMBER:
  case SSL_R_PACKET_LENGTH_TOO_LONG:
    return "the server does not speak TLS on this port (a plain listener? "
           "then tcp:// or http://, without --cafile)";
  }
  const char *r = e ? ERR_reason_error_string(e) : NULL;
  return r ? r : "the connection ended";
}

/* OPT FILE could not be loaded: unreadable (the OS's reason), or none of
 * WHAT (a PEM block, "-----BEGIN " BEGIN "-----") in it. */
static void bad_pem(const char *opt, const char *file, const char *what,
                    const char *begin) {
  FILE *f = fopen(file, "r");
  if (!f) {
    jc_warn("%s %s: %s", opt, file, strerror(errno));
    return;
  }
  fclose(f);
  jc_warn("%s %s: no PEM %s in it (\"-----BEGIN %s-----\" is needed)", opt,
          file, what, begin);
}

/* Called when the server asks for a client certificate and none was
 * given: noted for why(), and the handshake goes on without one. */
static int no_client_cert(SSL *ssl, X509 **cert, EVP_PKEY **key) {
  jc_conn *c = SSL_get_app_data(ssl);
  (void)cert, (void)key;
  c->cert_asked = true;
  return 0;
}

/* A write failed because the server closed: its reason, an alert sent
 * before it closed (a client certificate refused, over TLS 1.3, comes
 * after our handshake ended), may wait unread; reading it puts it where
 * why() looks. Briefly: the alert was sent before the close. */
static void read_alert(jc_conn *c) {
  struct pollfd p = {.fd = c->fd, .events = POLLIN};
  int ms = jc_remaining_ms(c);
  char byte;
  size_t got;
  if (poll(&p, 1, ms < 200 ? ms : 200) == 1) {
    ERR_clear_error();
    (void)SSL_read_ex(c->ssl, &byte, 1, &got);
  }
}

/* After an SSL call returned rc: wait as it asks (0), or fail. */
static int wait_as_asked(jc_conn *c, int rc, const char *doing) {
  int e = SSL_get_error(c->ssl, rc);
  switch (e) {
  case SSL_ERROR_WANT_READ:
    return jc_wait(c, POLLIN, doing);
  case SSL_ERROR_WANT_WRITE:
    return jc_wait(c, POLLOUT, doing);
  default:
    if (e == SSL_ERROR_SYSCALL && !ERR_peek_error())
      read_alert(c);
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
  SSL_CTX_set_verify(ctx, ep->insecure ? SSL_VERIFY_NONE : SSL_VERIFY_PEER,
                     NULL);
  int ok = 1;
  if (ep->cafile) {
    ok = SSL_CTX_load_verify_locations(ctx, ep->cafile, NULL) == 1;
    if (!ok)
      bad_pem("--cafile", ep->cafile, "certificate", "CERTIFICATE");
  } else if (!ep->insecure) {
    /* A store that is missing or empty fails the handshake, said there. */
    (void)SSL_CTX_set_default_verify_paths(ctx);
  }
  if (ok && ep->cert) {
    ok = SSL_CTX_use_certificate_chain_file(ctx, ep->cert) == 1;
    if (!ok)
      bad_pem("--cert", ep->cert, "certificate", "CERTIFICATE");
  }
  if (ok && ep->cert) {
    const char *key = ep->key ? ep->key : ep->cert;
    ERR_clear_error();
    ok = SSL_CTX_use_PrivateKey_file(ctx, key, SSL_FILETYPE_PEM) == 1;
    unsigned long e = ok ? 0 : ERR_peek_last_error();
    /* OpenSSL checks the pair as it loads the key, and a key that did
     * load may still not be the certificate's. */
    bool mismatch = ok ? SSL_CTX_check_private_key(ctx) != 1
                       : ERR_GET_REASON(e) == X509_R_KEY_VALUES_MISMATCH;
    if (mismatch)
      jc_warn("--key %s: not the key of --cert %s", key, ep->cert);
    else if (!ok && !ep->key)
      jc_warn("--cert %s: no private key in it: give it with --key FILE",
              ep->cert);
    else if (!ok)
      bad_pem("--key", key, "private key", "... PRIVATE KEY");
    ok = ok && !mismatch;
  }
  if (!ep->cert)
    SSL_CTX_set_client_cert_cb(ctx, no_client_cert);
  c->ssl = ok ? SSL_new(ctx) : NULL;
  SSL_CTX_free(ctx); /* the session holds what it needs */
  if (!c->ssl)
    return JC_ERR;
  SSL_set_app_data(c->ssl, c);
  /* The server must be the one named: --servername, else the address or
   * DNS name connected to. A DNS name also goes out as SNI. */
  const char *name = ep->servername ? ep->servername : host;
  unsigned char ip[16];
  X509_VERIFY_PARAM *param = SSL_get0_param(c->ssl);
  bool is_ip =
      inet_pton(AF_INET, name, ip) == 1 || inet_pton(AF_INET6, name, ip) == 1;
  if (!is_ip)
    SSL_set_tlsext_host_name(c->ssl, name);
  /* --insecure: nothing checked (main.c said so). */
  if (!ep->insecure && is_ip)
    X509_VERIFY_PARAM_set1_ip_asc(param, name);
  else if (!ep->insecure)
    X509_VERIFY_PARAM_set1_host(param, name, 0);
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
