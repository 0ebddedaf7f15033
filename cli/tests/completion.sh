#!/usr/bin/env bash
# completion.sh JRPCD HANDLERS_DIR FIXTURE_DIR REPO_ROOT JRPC
#
# The bash completion (cli/jrpc.bash-completion; issue 25 point 7) lists
# methods and param names through the endpoint the command line names,
# with what that endpoint needs: against jrpcd's mutual-TLS listener (a
# client certificate required) with --cafile, --cert and --key, the URL
# first or by -e; a certificate for another name with --servername and a
# trust store from SSL_CERT_FILE, or --insecure; an http listener that
# wants a bearer token through -H 'Authorization: Bearer ...' quoted as
# typed; a content-length listener with -f content-length; JRPC_URL in
# the environment; and the option and -f value lists.
set -euo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
# shellcheck source-path=SCRIPTDIR source=tls_lib.sh
source "$here/tls_lib.sh" # tests/cli/lib.sh and jrpc_lib.sh with it
jrpc_args "$@"

ports_and_conf() {
  MTLS=$(free_port) NAMED=$(free_port) TOK=$(free_port)
  {
    conf_head
    tls_listener mtls "$MTLS" server
    echo "tls_client_ca = $T/ca.pem"
    tls_listener named "$NAMED" named
    cat <<EOF2
[listen tok]
tcp = 127.0.0.1:$TOK
framing = http
tokens_file = $T/tokens
[listen lsp]
unix = $T/cl.sock
mode = 0600
framing = content-length
[plugin math]
path = math.so
EOF2
  } >"$T/jrpcd.conf"
}

# complete NAME WORD...: what _jrpc offers for the last WORD (COMP_WORDS
# as typed, quotes kept), on one line, into $T/NAME.out; the jrpc under
# test first on PATH.
complete() {
  local name=$1
  shift
  # shellcheck disable=SC2016 # the inner script expands its own $1...
  PATH="$(dirname "$JRPC"):$PATH" timeout 60 bash -c '
    source "$1"
    shift
    COMP_WORDS=("$@")
    COMP_CWORD=$(($# - 1))
    _jrpc
    echo "${COMPREPLY[*]}"
  ' _ "$ROOT/cli/jrpc.bash-completion" jrpc "$@" >"$T/$name.out" 2>"$T/$name.err" || true
}

# offers NAME WANT WORD...: complete, and the offer is WANT exactly.
offers() {
  local name=$1 want=$2
  shift 2
  complete "$name" "$@"
  expect_eq "completion $name: jrpc ${*:1:$#-1} [${*: -1}]" "$(cat "$T/$name.out")" "$want"
}

test_tls() {
  local mtls=tls://127.0.0.1:$MTLS
  local cert=(--cafile "$T/ca.pem" --cert "$T/alice.pem" --key "$T/alice.key")
  offers mtls_url "math.add" "${cert[@]}" "$mtls" math.ad
  offers mtls_e "a= b=" "${cert[@]}" -e "$mtls" math.divide ""
  # Without the client certificate the listing fails: nothing offered.
  offers mtls_nocert "" --cafile "$T/ca.pem" "$mtls" math.ad
  offers named_servername "math.add" --servername jrpc.test --cafile "$T/ca.pem" "tls://127.0.0.1:$NAMED" math.ad
  offers named_noname "" --cafile "$T/ca.pem" "tls://127.0.0.1:$NAMED" math.ad
  offers named_insecure "a= b=" --insecure "tls://127.0.0.1:$NAMED" math.multiply ""
  RC=0
  SSL_CERT_FILE=$T/ca.pem SSL_CERT_DIR=$T/nodir complete store --servername jrpc.test "tls://127.0.0.1:$NAMED" math.sub
  expect_eq "completion store: the trust store from SSL_CERT_FILE" "$(cat "$T/store.out")" "math.subtract"
}

test_other_endpoints() {
  offers header "math.add" -H "'Authorization: Bearer $APP'" "http://127.0.0.1:$TOK/" math.ad
  offers header_params "a= b=" --header "\"Authorization: Bearer $APP\"" "http://127.0.0.1:$TOK/" math.add ""
  offers no_header "" "http://127.0.0.1:$TOK/" math.ad
  offers content_length "math.add" -f content-length -u "$T/cl.sock" math.ad
  offers content_length_url "math.add" -f content-length "'unix:$T/cl.sock'" math.ad
  JRPC_SOCKET=$T/none.sock JRPC_URL=unix:$T/jrpcd.sock complete env math.ad
  expect_eq "completion env: the endpoint from JRPC_URL" "$(cat "$T/env.out")" "math.add"
}

test_lists() {
  offers framings "content-length" -f c
  offers options "--servername" --serv
  offers insecure "--insecure" --insec
}

main() {
  need_file "$JRPCD" jrpcd
  if "$JRPCD" -V | grep -q "^TLS: no"; then
    echo "SKIP: this build has no TLS"
    exit 77
  fi
  need_cmd openssl
  setup_tmp
  umask 077
  mkdir "$T/nodir"
  test_ca
  mkcert server localhost "IP:127.0.0.1,DNS:localhost"
  mkcert named jrpc.test "DNS:jrpc.test"
  mkcert alice alice "DNS:alice.example"
  "$JRPCD" --hash-token app 2>"$T/app.token" >"$T/tokens"
  APP=$(cat "$T/app.token")
  start_jrpcd ports_and_conf
  test_tls
  test_other_endpoints
  test_lists
  stop_daemon jrpcd "$JPID" "$T/jrpcd.sock"
  finish
}

main "$@"
