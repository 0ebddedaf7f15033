#!/usr/bin/env bash
# tls_verify.sh JRPCD HANDLERS_DIR FIXTURE_DIR REPO_ROOT JRPC
#
# How jrpc checks a TLS server (issue 25 point 1), against jrpcd's TLS
# listeners with certificates made here by a test CA: without --cafile
# the CA is found in the system's trust store, here a temporary one named
# by SSL_CERT_FILE (a file) or SSL_CERT_DIR (a hashed directory); a store
# without it refuses with a message that names --cafile; a certificate for
# another name fails with a message that names --servername and passes
# with --servername set right (and fails with it set wrong); the name goes
# out as SNI (openssl s_server picks its certificate by it); --insecure
# passes where both checks would fail and says once on stderr what it
# skips; a client certificate goes with the trust store too; and the
# misuses of the options are usage errors.
set -euo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
# shellcheck source-path=SCRIPTDIR source=tls_lib.sh
source "$here/tls_lib.sh" # tests/cli/lib.sh and jrpc_lib.sh with it
jrpc_args "$@"

ports_and_conf() {
  SEC=$(free_port) WEB=$(free_port) NAMED=$(free_port) MTLS=$(free_port)
  {
    conf_head
    tls_listener secure "$SEC" server
    tls_listener web "$WEB" server
    echo "framing = http"
    tls_listener named "$NAMED" named
    tls_listener mtls "$MTLS" server
    printf 'tls_client_ca = %s/ca.pem\n[plugin math]\npath = math.so\n' "$T"
  } >"$T/jrpcd.conf"
}

# in_store NAME STORE ARGS...: run NAME with the trust store STORE (a file
# for SSL_CERT_FILE; the directory beside it stays empty).
in_store() {
  local name=$1 store=$2
  shift 2
  RC=0
  SSL_CERT_FILE=$store SSL_CERT_DIR=$T/nodir timeout -k 5 30 "$JRPC" "$@" \
    >"$T/$name.out" 2>"$T/$name.err" || RC=$?
  check_sanitizer "$T/$name.err" "$name: jrpc" || true
}

test_trust_store() {
  in_store store_file "$T/store.pem" "tls://127.0.0.1:$SEC" math.add 1 2
  expect store_file 0 3
  in_store store_https "$T/store.pem" "https://127.0.0.1:$WEB/" math.add 2 3
  expect store_https 0 5
  in_store store_https_host "$T/store.pem" "https://localhost:$WEB/" math.add 2 4
  expect store_https_host 0 6
  RC=0
  SSL_CERT_FILE=$T/empty.pem SSL_CERT_DIR=$T/hashed timeout -k 5 30 "$JRPC" \
    "tls://127.0.0.1:$SEC" math.add 3 4 >"$T/store_dir.out" 2>"$T/store_dir.err" || RC=$?
  expect store_dir 0 7
  in_store store_without "$T/empty.pem" "tls://127.0.0.1:$SEC" math.add 1 2
  expect store_without 2 "" "tls://127.0.0.1:$SEC: TLS handshake: unable to get local issuer certificate: the server's certificate is not signed by a CA in the system's trust store ($T/empty.pem and $T/nodir); --cafile FILE names the CA that signed it"
  in_store store_cafile "$T/empty.pem" --cafile "$T/ca.pem" "tls://127.0.0.1:$SEC" math.add 1 2
  expect store_cafile 0 3
  in_store store_client_cert "$T/store.pem" --cert "$T/alice.pem" --key "$T/alice.key" \
    "tls://127.0.0.1:$MTLS" math.add 1 2
  expect store_client_cert 0 3
}

test_servername() {
  local url=tls://127.0.0.1:$NAMED
  in_store name_wrong "$T/store.pem" "$url" math.add 1 2
  expect name_wrong 2 "" "$url: TLS handshake: IP address mismatch: the server's certificate is not for the name or address connected to (127.0.0.1:$NAMED); --servername NAME checks the name it is for"
  in_store name_right "$T/store.pem" --servername jrpc.test "$url" math.add 1 2
  expect name_right 0 3
  in_store name_other "$T/store.pem" --servername other.test "$url" math.add 1 2
  expect name_other 2 "" "the server's certificate is not for --servername (other.test)"
  in_store name_ip "$T/store.pem" --servername 127.0.0.1 "tls://localhost:$SEC" math.add 1 2
  expect name_ip 0 3
}

# SNI: openssl s_server presents other.test's certificate unless the
# client names jrpc.test, and then that one (-cert2); -rev answers each
# line reversed, so a handshake that passed shows as a reply that is not
# JSON.
test_sni() {
  local port pid i
  port=$(free_port)
  openssl s_server -accept "127.0.0.1:$port" -cert "$T/other.pem" -key "$T/other.key" \
    -cert2 "$T/named.pem" -key2 "$T/named.key" -servername jrpc.test -rev \
    >"$T/s_server.log" 2>&1 </dev/null &
  pid=$!
  DAEMON_PIDS+=("$pid")
  for ((i = 0; i < 100; i++)); do
    grep -q ACCEPT "$T/s_server.log" && break
    sleep 0.05
  done
  in_store sni "$T/store.pem" --servername jrpc.test "tls://127.0.0.1:$port" --no-check ping
  expect sni 2 "" "tls://127.0.0.1:$port: the reply is not JSON"
  in_store sni_other "$T/store.pem" --servername other.test "tls://127.0.0.1:$port" --no-check ping
  expect sni_other 2 "" "tls://127.0.0.1:$port: the reply is not JSON"
  in_store sni_none "$T/store.pem" "tls://127.0.0.1:$port" --no-check ping
  expect sni_none 2 "" "IP address mismatch: the server's certificate is not for the name or address connected to"
  kill "$pid" 2>/dev/null || true
  wait "$pid" 2>/dev/null || true
  forget_pid "$pid"
}

test_insecure() {
  local url=tls://127.0.0.1:$NAMED warn
  warn="jrpc: --insecure: the server's certificate chain and host name are not verified: whoever answers at 127.0.0.1:$NAMED gets what is sent"
  in_store insecure "$T/empty.pem" --insecure "$url" math.add 1 2
  expect insecure 0 3 "$warn"
  expect_eq "insecure: the warning, once, and nothing else" "$(cat "$T/insecure.err")" "$warn"
  printf 'math.add 1 2\nmath.add 2 2\n' >"$T/batch.txt"
  in_store insecure_batch "$T/empty.pem" --insecure "$url" --batch "$T/batch.txt"
  expect insecure_batch 0 $'3\n4' "$warn"
  expect_eq "insecure_batch: the warning once" "$(grep -c -- --insecure "$T/insecure_batch.err")" 1
}

test_misuse() {
  run misuse_unix --insecure -u "$T/jrpcd.sock" math.add 1 2
  expect misuse_unix 2 "" "--insecure is for TLS endpoints (tls://HOST:PORT, https://, or -t HOST:PORT with --cafile)"
  run misuse_tcp --servername jrpc.test "tcp://127.0.0.1:$SEC" math.add 1 2
  expect misuse_tcp 2 "" "--servername is for TLS endpoints"
  run misuse_cert --cert "$T/alice.pem" "http://127.0.0.1:$WEB/" math.add 1 2
  expect misuse_cert 2 "" "--cert is for TLS endpoints"
  run misuse_both --insecure --cafile "$T/ca.pem" "tls://127.0.0.1:$SEC" math.add 1 2
  expect misuse_both 2 "" "--insecure checks nothing that --cafile would: give one of them"
  run misuse_name --servername "a b" "tls://127.0.0.1:$SEC" math.add 1 2
  expect misuse_name 2 "" "--servername a b: not a host name or address"
}

main() {
  need_file "$JRPCD" jrpcd
  need_cmd openssl
  if "$JRPCD" -V | grep -q "^TLS: no"; then
    echo "SKIP: this build has no TLS"
    exit 77
  fi
  setup_tmp
  umask 077
  test_ca
  mkcert server localhost "IP:127.0.0.1,DNS:localhost"
  mkcert named jrpc.test "DNS:jrpc.test"
  mkcert other other.test "DNS:other.test"
  mkcert alice alice "DNS:alice.example"
  # The trust stores: a file with the test CA among others, an empty
  # file, an empty directory, and a directory hashed as OpenSSL looks
  # certificates up in it.
  cp "$T/ca.pem" "$T/store.pem"
  : >"$T/empty.pem"
  mkdir "$T/nodir" "$T/hashed"
  cp "$T/ca.pem" "$T/hashed/testca.pem"
  openssl rehash "$T/hashed" 2>/dev/null || die "openssl rehash failed"
  start_jrpcd ports_and_conf
  test_trust_store
  test_servername
  test_sni
  test_insecure
  test_misuse
  stop_daemon jrpcd "$JPID" "$T/jrpcd.sock"
  finish
}

main "$@"
