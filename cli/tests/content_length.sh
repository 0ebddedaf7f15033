#!/usr/bin/env bash
# content_length.sh JRPCD HANDLERS_DIR FIXTURE_DIR REPO_ROOT JRPC
#
# jrpc -f content-length (issue 25 point 1) against jrpcd's content-length
# listeners, on a Unix socket and a TCP port: a call (with its discovery),
# a batch, a notification (counted by rpc.stats), --stdin and -l; and
# each framing mismatch between jrpc and a listener explained with the
# option to use instead.
set -euo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
# shellcheck source-path=SCRIPTDIR source=../../tests/cli/lib.sh
source "$here/../../tests/cli/lib.sh"
# shellcheck source-path=SCRIPTDIR source=jrpc_lib.sh
source "$here/jrpc_lib.sh"

jrpc_args "$@"

ports_and_conf() {
  CL=$(free_port) LINE=$(free_port) LEN=$(free_port) WEB=$(free_port)
  {
    conf_head
    cat <<EOF2
[listen lsp]
unix = $T/cl.sock
mode = 0600
framing = content-length
[listen lsptcp]
tcp = 127.0.0.1:$CL
framing = content-length
[listen line]
tcp = 127.0.0.1:$LINE
[listen len]
tcp = 127.0.0.1:$LEN
framing = length
[listen web]
tcp = 127.0.0.1:$WEB
framing = http
[plugin math]
path = math.so
[plugin echo]
path = echo.so
EOF2
  } >"$T/jrpcd.conf"
}

test_round_trips() {
  local sock=$T/cl.sock before
  run cl_call -f content-length -u "$sock" math.add 1 2
  expect cl_call 0 3
  run cl_tcp -f content-length "tcp://127.0.0.1:$CL" --compact echo 1 a
  expect cl_tcp 0 '[1,"a"]'
  run cl_named -f content-length -u "$sock" math.subtract a:=9 b:=4
  expect cl_named 0 5
  printf 'math.add 1 2\nmath.divide 1 0\necho "x y"\n' >"$T/batch.txt"
  run cl_batch -f content-length -u "$sock" --compact --batch "$T/batch.txt"
  expect cl_batch 1 '3
["x y"]' "error -32602: Invalid params"
  before=$(calls_of echo)
  run cl_notify -f content-length -u "$sock" -n echo hello
  expect cl_notify 0 ""
  expect_eq "cl_notify: the notification was called once" "$(calls_of echo)" "$((before + 1))"
  printf '%s\n' '{"jsonrpc":"2.0","method":"math.add","params":[2,2],"id":7}' \
    '{"jsonrpc":"2.0","method":"echo","params":[1]}' \
    '{"jsonrpc":"2.0","method":"math.multiply","params":[6,7],"id":8}' >"$T/stdin.txt"
  RC=0
  timeout 30 "$JRPC" -f content-length -u "$sock" --stdin <"$T/stdin.txt" \
    >"$T/cl_stdin.out" 2>"$T/cl_stdin.err" || RC=$?
  expect cl_stdin 0 '{"jsonrpc":"2.0","result":4,"id":7}
{"jsonrpc":"2.0","result":42,"id":8}'
  run cl_list -f content-length -u "$sock" -l
  expect_rc cl_list 0 && expect_in cl_list out "math.add" && pass cl_list
  # A reply larger than one read: the body follows the head in pieces.
  python3 -c 'print("x" * 300000)' >"$T/big.txt"
  run cl_big -f content-length -u "$sock" --compact echo text=@"$T/big.txt"
  expect_eq "cl_big: the 300000-byte string back" \
    "$(python3 -c 'import json,sys; print(len(json.load(sys.stdin)["text"]))' <"$T/cl_big.out")" 300001
}

# Each listener's framing against each wrong -f: what it answers, named.
test_mismatches() {
  run cl_on_newline -f content-length "tcp://127.0.0.1:$LINE" math.add 1 2
  expect cl_on_newline 2 "" "tcp://127.0.0.1:$LINE: the server answers newline-framed JSON, not content-length-framed: leave out -f content-length"
  run newline_on_cl "tcp://127.0.0.1:$CL" math.add 1 2
  expect newline_on_cl 2 "" "tcp://127.0.0.1:$CL: the reply begins with a Content-Length head, not JSON: this listener has framing = content-length; use -f content-length"
  run length_on_cl -f length "tcp://127.0.0.1:$CL" math.add 1 2
  expect length_on_cl 2 "" "this listener has framing = content-length; use -f content-length"
  run cl_on_length -f content-length "tcp://127.0.0.1:$LEN" math.add 1 2
  expect cl_on_length 2 "" "tcp://127.0.0.1:$LEN: the reply begins with a 4-byte length, not a Content-Length head: this listener has framing = length; use -f length"
  run cl_on_http -f content-length "tcp://127.0.0.1:$WEB" math.add 1 2
  expect cl_on_http 2 "" "the server answers in HTTP: this is an http listener; use http://127.0.0.1:$WEB/ as the endpoint"
  run cl_bad_name -f lsp -u "$T/cl.sock" math.add 1 2
  expect cl_bad_name 2 "" '-f: "lsp" is not newline, length, http, content-length or websocket'
  run cl_url -f content-length "http://127.0.0.1:$WEB/" math.add 1 2
  expect cl_url 2 "" "-f content-length: http://127.0.0.1:$WEB/ is an HTTP endpoint"
}

main() {
  need_file "$JRPCD" jrpcd
  need_cmd python3
  setup_tmp
  umask 077
  start_jrpcd ports_and_conf
  test_round_trips
  test_mismatches
  stop_daemon jrpcd "$JPID" "$T/jrpcd.sock"
  finish
}

main "$@"
