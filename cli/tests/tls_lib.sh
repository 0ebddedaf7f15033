# tls_lib.sh - a test CA and certificates it signs, for the client tests
# that speak TLS; it brings tests/cli/lib.sh and jrpc_lib.sh with it (its
# functions write into their $T).
# shellcheck shell=bash

tls_lib_dir=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
# shellcheck source=../../tests/cli/lib.sh
source "$tls_lib_dir/../../tests/cli/lib.sh"
# shellcheck source=jrpc_lib.sh
source "$tls_lib_dir/jrpc_lib.sh"

# test_ca: $T/ca.pem and $T/ca.key, a CA for two days.
test_ca() {
  openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes \
    -keyout "$T/ca.key" -out "$T/ca.pem" -days 2 -subj "/CN=jrpc test CA" 2>/dev/null
}

# mkcert NAME CN SAN: NAME.key and NAME.pem signed by the test CA.
mkcert() {
  openssl req -new -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes \
    -keyout "$T/$1.key" -out "$T/$1.csr" -subj "/CN=$2" 2>/dev/null
  printf 'subjectAltName=%s\n' "$3" >"$T/$1.ext"
  openssl x509 -req -in "$T/$1.csr" -CA "$T/ca.pem" -CAkey "$T/ca.key" \
    -set_serial "$RANDOM" -days 2 -extfile "$T/$1.ext" -out "$T/$1.pem" 2>/dev/null
}

# tls_listener NAME PORT CERT: a [listen NAME] section on 127.0.0.1:PORT
# with $T/CERT.pem and its key.
tls_listener() {
  printf '[listen %s]\ntcp = 127.0.0.1:%s\ntls_cert = %s/%s.pem\ntls_key = %s/%s.key\n' \
    "$1" "$2" "$T" "$3" "$T" "$3"
}

# tls_setup: $T made (umask 077 from here on); TLS=1 and $T/server.pem
# (localhost, 127.0.0.1) signed by the test CA when jrpcd has TLS, else
# TLS=0.
tls_setup() {
  TLS=1
  if "$JRPCD" -V | grep -q "^TLS: no"; then
    TLS=0
  fi
  setup_tmp
  umask 077
  if ((TLS)); then
    test_ca
    mkcert server localhost "IP:127.0.0.1,DNS:localhost"
  fi
}
