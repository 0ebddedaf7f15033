#!/usr/bin/env bash
# http.sh JRPCD HANDLERS_DIR FIXTURE_DIR REPO_ROOT JRPC
#
# jrpc against jrpcd's HTTP listeners (issue 21 point 7, issue 25 point 1):
# URLs as the first argument, with -t and in JRPC_ADDRESS, IPv4 and IPv6,
# -f http on a Unix socket; a call, a notification, batches; keep-alive
# (the connections jrpcd accepted, from rpc.stats, for a call with its
# discovery, a batch, --stdin and the prompt), and a connection jrpcd
# closed while idle made again; bearer tokens (--token-file and
# JRPC_TOKEN) accepted, missing and wrong ones refused with a message and
# exit status 2, no token ever in jrpc's output; https:// with --cafile
# (a CA and the server's certificate made here with openssl); bad URLs.
# fake_http.py serves what jrpcd does not send: chunked bodies, a body
# ended by the connection's end, 100 Continue, Connection: close, 503 and
# 404 statuses.
set -euo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
# shellcheck source-path=SCRIPTDIR source=../../tests/cli/lib.sh
source "$here/../../tests/cli/lib.sh"
# shellcheck source-path=SCRIPTDIR source=jrpc_lib.sh
source "$here/jrpc_lib.sh"

(($# == 5)) || die "usage: $0 JRPCD HANDLERS_DIR FIXTURE_DIR REPO_ROOT JRPC"
cli_args "$1" "$2" "$3" "$4"
JRPC=$(realpath -e -- "$5") || die "jrpc not found: $5"
TLS=1

# mkcert NAME CN SAN: NAME.key and NAME.pem signed by the test CA.
mkcert() {
  openssl req -new -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes \
    -keyout "$T/$1.key" -out "$T/$1.csr" -subj "/CN=$2" 2>/dev/null
  printf 'subjectAltName=%s\n' "$3" >"$T/$1.ext"
  openssl x509 -req -in "$T/$1.csr" -CA "$T/ca.pem" -CAkey "$T/ca.key" \
    -set_serial 1001 -days 2 -extfile "$T/$1.ext" -out "$T/$1.pem" 2>/dev/null
}

write_conf() {
  cat >"$T/jrpcd.conf" <<EOF
$(conf_server)
# Short, so that a connection the prompt or --stdin keeps can be closed
# under it by the server.
idle_timeout_ms = 1000
[listen local]
unix = $T/jrpcd.sock
mode = 0600
[listen web]
tcp = 127.0.0.1:$WEB
framing = http
[listen web6]
tcp = [::1]:$WEB6
framing = http
[listen tok]
tcp = 127.0.0.1:$TOK
framing = http
tokens_file = $T/tokens
[listen line]
tcp = 127.0.0.1:$LINE
[listen unixhttp]
unix = $T/http.sock
mode = 0600
framing = http
$(conf_plugins math echo)
EOF
  if ((TLS)); then
    cat >>"$T/jrpcd.conf" <<EOF
[listen secure]
tcp = 127.0.0.1:$SEC
framing = http
tls_cert = $T/server.pem
tls_key = $T/server.key
tokens_file = $T/tokens
[listen mtls]
tcp = 127.0.0.1:$MTLS
tls_cert = $T/server.pem
tls_key = $T/server.key
tls_client_ca = $T/ca.pem
[listen misnamed]
tcp = 127.0.0.1:$MIS
tls_cert = $T/misnamed.pem
tls_key = $T/misnamed.key
EOF
  fi
}

# A free port for each TCP listener and the config (start_jrpcd,
# jrpc_lib.sh, runs it again for each attempt).
ports_and_conf() {
  WEB=$(free_port) WEB6=$(free_port) TOK=$(free_port) LINE=$(free_port) SEC=$(free_port)
  MTLS=$(free_port) MIS=$(free_port)
  write_conf
}

# The connections jrpcd has accepted, on every listener (rpc.stats on the
# Unix socket, whose own connection counts too).
accepted() {
  "$JRPC" -u "$T/jrpcd.sock" --compact rpc.stats |
    python3 -c 'import json,sys; print(sum(w["accepted"] for w in json.load(sys.stdin)["workers"]))'
}

# The calls rpc.stats counts for METHOD.
calls_of() {
  "$JRPC" -u "$T/jrpcd.sock" --compact rpc.stats |
    python3 -c 'import json,sys; print(json.load(sys.stdin)["methods"][sys.argv[1]]["calls"])' "$1"
}

# expect_conns NAME BEFORE N: N connections accepted since BEFORE (besides
# the one accepted() makes itself).
expect_conns() {
  local now
  now=$(accepted)
  expect_eq "$1: $3 connection(s)" "$((now - $2 - 1))" "$3"
}

test_calls() {
  local url=http://127.0.0.1:$WEB/
  run url_first "$url" math.add 1 2
  expect url_first 0 3
  run url_opts_after "$url" --compact echo 1 a
  expect url_opts_after 0 '[1,"a"]'
  run url_tcp -t "http://127.0.0.1:$WEB/rpc" math.multiply 6 7
  expect url_tcp 0 42
  RC=0
  JRPC_SOCKET='' JRPC_ADDRESS="$url" timeout 30 "$JRPC" math.subtract 9 4 \
    >"$T/url_env.out" 2>"$T/url_env.err" || RC=$?
  expect url_env 0 5
  run url_v6 "http://[::1]:$WEB6" math.multiply 6 7
  expect url_v6 0 42
  run unix_http -u "$T/http.sock" -f http math.add 2 2
  expect unix_http 0 4
  run raw "$url" --raw math.divide 1 4
  expect raw 0 '{"jsonrpc":"2.0","result":0.25,"id":1}'
  run rpc_error "$url" math.divide 1 0
  expect rpc_error 1 "" "error -32602: Invalid params"
  run list "$url" -l
  expect_in list out "math.add       a + b" && pass "list: over HTTP"

  local before
  before=$(calls_of echo)
  run notify "$url" -n echo 1
  expect notify 0 ""
  expect_eq "notify: echo called once" "$(calls_of echo)" "$((before + 1))"

  printf '%s\n' 'math.add 1 2' '-n echo 9' 'math.divide 1 0' 'math.subtract 10 4' >"$T/batch.txt"
  before=$(calls_of echo)
  run batch "$url" --compact --batch "$T/batch.txt"
  expect batch 1 '3
6' "error -32602: Invalid params"
  expect_eq "batch: its notification called echo" "$(calls_of echo)" "$((before + 1))"
  printf '%s\n' '-n echo 1' '-n echo 2' >"$T/batch_notes.txt"
  run batch_notes "$url" --batch "$T/batch_notes.txt"
  expect batch_notes 0 ""
  expect_eq "batch of notifications (204): both called" "$(calls_of echo)" "$((before + 3))"
  printf '%s\n' '{"jsonrpc":"2.0","method":"math.add","params":[1,2],"id":1}' \
    '{"jsonrpc":"2.0","method":"echo","params":[5]}' 'not json' \
    '{"jsonrpc":"2.0","method":"math.add","params":[2,2],"id":2}' >"$T/stdin.txt"
  RC=0
  timeout 30 "$JRPC" "$url" --stdin <"$T/stdin.txt" >"$T/stdin.out" 2>"$T/stdin.err" || RC=$?
  expect stdin 1 '{"jsonrpc":"2.0","result":3,"id":1}
{"jsonrpc":"2.0","error":{"code":-32700,"message":"Parse error"},"id":null}
{"jsonrpc":"2.0","result":4,"id":2}'
}

# The other URLs (issue 25 point 1): unix: and tcp:// as the first
# argument, with -e/--endpoint and in JRPC_URL (before JRPC_SOCKET).
test_url_forms() {
  run unix_url "unix:$T/jrpcd.sock" math.add 1 2
  expect unix_url 0 3
  run unix_url_http --endpoint "unix:$T/http.sock" -f http math.add 2 2
  expect unix_url_http 0 4
  run tcp_url -f newline "tcp://127.0.0.1:$LINE" math.multiply 2 3
  expect tcp_url 0 6
  run e_http -e "http://[::1]:$WEB6/" math.subtract 5 1
  expect e_http 0 4
  RC=0
  JRPC_SOCKET=$T/nothing.sock JRPC_URL="http://127.0.0.1:$WEB/" timeout 30 "$JRPC" math.add 4 4 \
    >"$T/jrpc_url.out" 2>"$T/jrpc_url.err" || RC=$?
  expect jrpc_url 0 8
}

# The bash completion lists methods through the URL, with the token.
test_completion() {
  local got
  # shellcheck disable=SC2016 # the inner script expands its own $1...
  got=$(PATH="$(dirname "$JRPC"):$PATH" timeout 30 bash -c '
    source "$1"
    COMP_WORDS=(jrpc --token-file "$2" "$3" math.d); COMP_CWORD=4; _jrpc; echo "${COMPREPLY[*]}"
  ' _ "$ROOT/cli/jrpc.bash-completion" "$T/app.token" "http://127.0.0.1:$TOK/" 2>&1) || true
  expect_eq "bash completion: methods through a URL and --token-file" "$got" "math.divide"
  ((TLS)) || return 0
  # shellcheck disable=SC2016 # the inner script expands its own $1...
  got=$(PATH="$(dirname "$JRPC"):$PATH" timeout 30 bash -c '
    source "$1"
    COMP_WORDS=(jrpc --token-file "$2" --cafile "$3" "$4" math.divide ""); COMP_CWORD=7; _jrpc; echo "${COMPREPLY[*]}"
  ' _ "$ROOT/cli/jrpc.bash-completion" "$T/app.token" "$T/ca.pem" "https://127.0.0.1:$SEC/" 2>&1) || true
  expect_eq "bash completion: param names through https:// with --cafile" "$got" "a= b="
}

# Several requests of one run share a connection; one jrpcd closed while
# the prompt or --stdin sat idle is made again.
test_keepalive() {
  local url=http://127.0.0.1:$WEB/ before
  before=$(accepted)
  run ka_call "$url" math.add 1 2 # rpc.discover, then the call
  expect ka_call 0 3
  expect_conns "keep-alive: a call and its rpc.discover" "$before" 1
  before=$(accepted)
  run ka_batch "$url" --compact --batch "$T/batch.txt"
  expect_conns "keep-alive: a batch and its rpc.discover" "$before" 1
  before=$(accepted)
  RC=0
  timeout 30 "$JRPC" "$url" --stdin <"$T/stdin.txt" >"$T/ka_stdin.out" 2>"$T/ka_stdin.err" || RC=$?
  expect_conns "keep-alive: --stdin, 4 lines" "$before" 1
  before=$(accepted)
  if printf '%s\n' 'expect jrpc> ' 'send math.add 1 2\r' 'expect 3' \
    'expect jrpc> ' 'send math.multiply 6 7\r' 'expect 42' \
    'expect jrpc> ' 'send echo 7\r' 'expect [7]' 'expect jrpc> ' 'eof' |
    NO_COLOR=1 JRPC_HISTORY='' timeout 60 python3 "$here/pty_session.py" "$JRPC" "$url" --compact \
      >"$T/pty.out" 2>"$T/pty.err"; then
    pass "prompt over HTTP: three calls"
  else
    fail "prompt over HTTP: the pty session failed"
    show "$T/pty.out" "$T/pty.err"
  fi
  expect_conns "keep-alive: the prompt, its rpc.discover and three lines" "$before" 1
  # idle_timeout_ms = 1000: the server closes the connection between the
  # lines; the second goes on a new one.
  before=$(accepted)
  RC=0
  { head -1 "$T/stdin.txt"; sleep 2; tail -1 "$T/stdin.txt"; } |
    timeout 30 "$JRPC" "$url" --stdin >"$T/idle.out" 2>"$T/idle.err" || RC=$?
  expect idle 0 '{"jsonrpc":"2.0","result":3,"id":1}
{"jsonrpc":"2.0","result":4,"id":2}'
  expect_conns "a connection closed while idle is made again" "$before" 2
}

# every file of run NAME... holds no token.
expect_no_token() {
  local name f leaked=0
  for name in "$@"; do
    for f in "$T/$name.out" "$T/$name.err"; do
      if grep -qF -e "$APP" -e "${APP:0:12}" "$f"; then
        fail "$name: the token is in ${f##*/}"
        leaked=1
      fi
    done
  done
  ((leaked)) || pass "no token in jrpc's output ($*)"
}

test_tokens() {
  local url=http://127.0.0.1:$TOK/
  run tok_none "$url" math.add 1 2
  expect tok_none 2 "" "$url: the server wants a bearer token (HTTP 401): give it with --token-file FILE or in JRPC_TOKEN"
  RC=0
  JRPC_TOKEN=$APP timeout 30 "$JRPC" "$url" math.add 1 2 >"$T/tok_env.out" 2>"$T/tok_env.err" || RC=$?
  expect tok_env 0 3
  run tok_file --token-file "$T/app.token" "$url" math.multiply 6 7
  expect tok_file 0 42
  run tok_file_list --token-file "$T/app.token" "$url" -l
  expect_in tok_file_list out "math.multiply  a * b" && pass "tok_file_list: -l with a token"
  run tok_file_batch --token-file "$T/app.token" "$url" --compact --batch "$T/batch.txt"
  expect tok_file_batch 1 '3
6' "error -32602: Invalid params"
  RC=0
  JRPC_TOKEN=$OTHER timeout 30 "$JRPC" "$url" math.add 1 2 >"$T/tok_wrong.out" 2>"$T/tok_wrong.err" || RC=$?
  expect tok_wrong 2 "" "$url: the token was refused (HTTP 401: the token is not valid)"
  RC=0
  JRPC_TOKEN=$APP timeout 30 "$JRPC" --token-file "$T/other.token" "$url" math.add 1 2 \
    >"$T/tok_file_wins.out" 2>"$T/tok_file_wins.err" || RC=$?
  expect tok_file_wins 2 "" "the token was refused"
  expect_no_token tok_none tok_env tok_file tok_file_list tok_file_batch tok_wrong tok_file_wins
}

test_tls() {
  local url=https://127.0.0.1:$SEC/
  if ((!TLS)); then
    run tls_off --cafile "$T/nothing.pem" "$url" math.add 1 2
    expect tls_off 2 "" "this jrpc was built without TLS"
    return 0
  fi
  RC=0
  JRPC_TOKEN=$APP timeout 30 "$JRPC" --cafile "$T/ca.pem" "$url" math.add 1 2 \
    >"$T/tls_call.out" 2>"$T/tls_call.err" || RC=$?
  expect tls_call 0 3
  run tls_batch --token-file "$T/app.token" --cafile "$T/ca.pem" "$url" --compact --batch "$T/batch.txt"
  expect tls_batch 1 '3
6' "error -32602: Invalid params"
  run tls_none --cafile "$T/ca.pem" "$url" math.add 1 2
  expect tls_none 2 "" "the server wants a bearer token (HTTP 401)"
  run tls_no_ca "$url" math.add 1 2
  expect tls_no_ca 2 "" "the server's certificate is not signed by a CA in the system's trust store"
  run tls_url --token-file "$T/app.token" --cafile "$T/ca.pem" -f http "tls://127.0.0.1:$SEC" math.add 2 5
  expect tls_url 0 7
  run tls_url_no_ca "tls://127.0.0.1:$SEC" math.add 1 2
  expect tls_url_no_ca 2 "" "tls://127.0.0.1:$SEC: TLS handshake: "
  expect_no_token tls_call tls_batch
  test_tls_failures
}

# Issue 25 point 3: each TLS failure a user can fix, named with its fix.
test_tls_failures() {
  local mtls=tls://127.0.0.1:$MTLS
  run tls_wants_cert --cafile "$T/ca.pem" "$mtls" math.add 1 2
  expect tls_wants_cert 2 "" "the server wants a client certificate: give --cert FILE (and --key FILE)"
  expect_in tls_wants_cert err "$mtls: TLS " || true
  run tls_client_cert --cafile "$T/ca.pem" --cert "$T/alice.pem" --key "$T/alice.key" "$mtls" math.add 1 2
  expect tls_client_cert 0 3
  run tls_stranger --cafile "$T/ca.pem" --cert "$T/stranger.pem" --key "$T/stranger.key" "$mtls" math.add 1 2
  expect tls_stranger 2 "" "the server refused our client certificate (--cert $T/stranger.pem): it is not signed by the CA the listener trusts (tls_client_ca)"
  run tls_other_ca --cafile "$T/stranger.pem" "$mtls" math.add 1 2
  expect tls_other_ca 2 "" "the server's certificate is not signed by a CA in --cafile ($T/stranger.pem)"
  expect_in tls_other_ca err "$mtls: TLS handshake: " || true
  run tls_misnamed --cafile "$T/ca.pem" "tls://127.0.0.1:$MIS" math.add 1 2
  expect tls_misnamed 2 "" "the server's certificate is not for the name or address connected to (127.0.0.1:$MIS)"
  run tls_cafile_missing --cafile "$T/none.pem" "$mtls" math.add 1 2
  expect tls_cafile_missing 2 "" "--cafile $T/none.pem: No such file or directory"
  run tls_cafile_garbage --cafile "$T/tokens" "$mtls" math.add 1 2
  expect tls_cafile_garbage 2 "" "--cafile $T/tokens: no PEM certificate in it"
  run tls_plain_port --cafile "$T/ca.pem" "tls://127.0.0.1:$LINE" math.add 1 2
  expect tls_plain_port 2 "" "the server closed the connection in the handshake: is this a TLS listener? (a plain one: tcp:// or http://, without --cafile)"
  # A plain server that answers a ClientHello in plain text, as web
  # servers do.
  local port
  port=$(free_port)
  start_bg "a plain-text server" "-e $T/plain.ready" python3 -c '
import socket, sys
s = socket.socket()
s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
s.bind(("127.0.0.1", int(sys.argv[1])))
s.listen(4)
open(sys.argv[2], "w").close()
while True:
    c, _ = s.accept()
    c.recv(4096)
    c.sendall(b"HTTP/1.1 400 Bad Request\r\nContent-Length: 0\r\n\r\n")
    c.close()
' "$port" "$T/plain.ready"
  run tls_plain_text --cafile "$T/ca.pem" "tls://127.0.0.1:$port" math.add 1 2
  expect tls_plain_text 2 "" "the server does not speak TLS on this port (a plain listener? then tcp:// or http://, without --cafile)"
  stop_bg "$BG_PID"
}

# What jrpcd never sends, from fake_http.py on a Unix socket (-f http).
test_replies() {
  local mode body version
  version=$("$JRPC" -V | cut -d' ' -f2)
  for mode in chunked eof continue close; do
    start_bg "fake_http $mode" "-S $T/$mode.sock" python3 "$here/fake_http.py" "$mode" "$T/$mode.sock"
    run "fake_$mode" -u "$T/$mode.sock" -f http --compact echo "$mode" 2
    # One request after rpc.discover (-32601 here), on one connection or
    # (close, eof) on a second.
    body='{"jsonrpc":"2.0","method":"echo","params":["'$mode'",2],"id":1}'
    expect "fake_$mode" 0 '{"method":"echo","params":["'$mode'",2],"head":["POST / HTTP/1.1","Host: localhost","User-Agent: jrpc/'"$version"'","Content-Type: application/json","Accept: application/json","Content-Length: '"${#body}"'"]}'
    stop_bg "$BG_PID"
  done
  # -H adds its lines to every request's head.
  start_bg "fake_http chunked" "-S $T/headers.sock" python3 "$here/fake_http.py" chunked "$T/headers.sock"
  run fake_headers -u "$T/headers.sock" -f http -H 'X-Trace: abc 1' --header 'authorization: Basic eA==' --compact echo 1
  expect fake_headers 0 '{"method":"echo","params":[1],"head":["POST / HTTP/1.1","Host: localhost","User-Agent: jrpc/'"$version"'","Content-Type: application/json","Accept: application/json","Content-Length: 53","X-Trace: abc 1","authorization: Basic eA=="]}'
  stop_bg "$BG_PID"
  # The token goes in every request's head.
  start_bg "fake_http close" "-S $T/token.sock" python3 "$here/fake_http.py" close "$T/token.sock"
  JRPC_TOKEN=$APP timeout 30 "$JRPC" -u "$T/token.sock" -f http --compact echo 1 >"$T/fake_token.out" 2>"$T/fake_token.err" || true
  expect_in fake_token out "\"Authorization: Bearer $APP\"" && pass "fake_token: Authorization: Bearer in the head"
  stop_bg "$BG_PID"
  start_bg "fake_http status" "-S $T/status.sock" python3 "$here/fake_http.py" status "$T/status.sock"
  run fake_status -u "$T/status.sock" -f http math.add 1 2
  expect fake_status 2 "" "unix:$T/status.sock: the server answered HTTP/1.1 503 Service Unavailable: Server error (draining)"
  stop_bg "$BG_PID"
  # A server that echoes the token in its reason does not get it printed.
  start_bg "fake_http leak" "-S $T/leak.sock" python3 "$here/fake_http.py" leak "$T/leak.sock"
  RC=0
  JRPC_TOKEN=$APP timeout 30 "$JRPC" -u "$T/leak.sock" -f http math.add 1 2 >"$T/fake_leak.out" 2>"$T/fake_leak.err" || RC=$?
  expect fake_leak 2 "" "the token was refused (HTTP 401: (its reason is not shown: it holds the token))"
  expect_no_token fake_leak
  stop_bg "$BG_PID"
  start_bg "fake_http html" "-S $T/html.sock" python3 "$here/fake_http.py" html "$T/html.sock"
  run fake_html -u "$T/html.sock" -f http math.add 1 2
  expect fake_html 2 "" 'the server answered HTTP/1.1 404 Not Found: <html><body>\x1b[31mnot here</body></html>'
  stop_bg "$BG_PID"
}

test_misuse() {
  run not_http "http://127.0.0.1:$LINE/" math.add 1 2
  expect not_http 2 "" "the server answers newline-framed JSON, not HTTP (it begins {\"jsonrpc\":\"2.0\""
  expect_in not_http err "): use tcp://127.0.0.1:$LINE" || true
  run http_on_stream -t "127.0.0.1:$WEB" math.add 1 2
  expect http_on_stream 2 "" "tcp:127.0.0.1:$WEB: the server answers in HTTP: this is an http listener; use http://127.0.0.1:$WEB/ as the endpoint"
  run http_on_length -t "127.0.0.1:$WEB" -f length math.add 1 2
  expect http_on_length 2 "" "the server answers in HTTP: this is an http listener; use http://127.0.0.1:$WEB/ as the endpoint"
  run url_twice -u "$T/jrpcd.sock" "http://127.0.0.1:$WEB/" math.add 1 2
  expect url_twice 2 "" "http://127.0.0.1:$WEB/: an endpoint is given by -u, -t or -e already"
  run url_framing -f length "http://127.0.0.1:$WEB/" math.add 1 2
  expect url_framing 2 "" "-f length: http://127.0.0.1:$WEB/ is an HTTP endpoint"
  run url_cafile --cafile "$T/ca.pem" "http://127.0.0.1:$WEB/" math.add 1 2
  expect url_cafile 2 "" "--cafile: http://127.0.0.1:$WEB/ is plain (https:// and tls:// are over TLS)"
  run tcp_url_path "tcp://127.0.0.1:$LINE/x" math.add 1 2
  expect tcp_url_path 2 "" "URL: tcp://127.0.0.1:$LINE/x: a tcp:// URL has no path"
  run unix_url_empty -e unix: math.add 1 2
  expect unix_url_empty 2 "" "-e: unix:: no socket path after unix:"
  run url_nohost http:///x math.add 1 2
  expect url_nohost 2 "" "URL: http:///x: no host name or address after http://"
  run url_port -t http://127.0.0.1:99999/ math.add 1 2
  expect url_port 2 "" "-t: http://127.0.0.1:99999/: the port is not a number from 1 to 65535"
  run url_user http://u:p@127.0.0.1/ math.add 1 2
  expect url_user 2 "" "a user or password in the URL is not supported"
  run url_space 'http://127.0.0.1:1/a b' math.add 1 2
  expect url_space 2 "" "the URL has a space or a control character"
  run url_v6_bad 'http://[::1/' math.add 1 2
  expect url_v6_bad 2 "" "not an IPv6 address in brackets"
  run header_own -H 'Content-Length: 3' "http://127.0.0.1:$WEB/" math.add 1 2
  expect header_own 2 "" "-H Content-Length: jrpc writes that header itself"
  run header_bad -H 'Authorization Bearer s3cret' "http://127.0.0.1:$WEB/" math.add 1 2
  expect header_bad 2 "" "-H Authorization...: not a header (Name: value)"
  expect_not_in header_bad err s3cret && pass "header_bad: the rest of the word is not shown"
  run header_ctl -H $'X-A: a\rb' "http://127.0.0.1:$WEB/" math.add 1 2
  expect header_ctl 2 "" "-H X-A: the value has a control character"
  run header_newline -H 'X-A: 1' -u "$T/jrpcd.sock" math.add 1 2
  expect header_newline 2 "" "-H: headers are for HTTP endpoints"
  run header_auth_token --token-file "$T/app.token" -H 'Authorization: Basic eA==' "http://127.0.0.1:$TOK/" math.add 1 2
  expect header_auth_token 2 "" "-H Authorization: and a bearer token (--token-file or JRPC_TOKEN) both fill that header"
  # The warning that a token is not sent stays for newline framing only.
  run tok_newline --token-file "$T/app.token" -u "$T/jrpcd.sock" math.add 1 2
  expect tok_newline 0 3 "--token-file: the token goes to HTTP endpoints only, and this one is newline framed: not sent"
}

main() {
  need_file "$JRPCD" jrpcd
  need_cmd python3
  need_cmd socat
  need_cmd openssl
  setup_tmp
  umask 077
  if "$JRPCD" -V | grep -q "^TLS: no"; then
    TLS=0
  else
    openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes \
      -keyout "$T/ca.key" -out "$T/ca.pem" -days 2 -subj "/CN=test-ca" 2>/dev/null
    mkcert server localhost "IP:127.0.0.1,DNS:localhost"
    mkcert misnamed elsewhere.example "DNS:elsewhere.example"
    mkcert alice alice "DNS:alice.example"
    openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes \
      -keyout "$T/stranger.key" -out "$T/stranger.pem" -days 2 -subj "/CN=stranger" 2>/dev/null
  fi
  "$JRPCD" --hash-token app 2>"$T/app.token" >"$T/tokens"
  "$JRPCD" --hash-token other 2>"$T/other.token" >/dev/null
  APP=$(cat "$T/app.token")
  OTHER=$(cat "$T/other.token")
  [[ -n $APP && -n $OTHER ]] || die "jrpcd --hash-token made no token"
  start_jrpcd ports_and_conf
  test_calls
  test_url_forms
  test_completion
  test_keepalive
  test_tokens
  test_tls
  test_replies
  test_misuse
  stop_daemon jrpcd "$JPID" "$T/jrpcd.sock"
  finish
}

main "$@"
