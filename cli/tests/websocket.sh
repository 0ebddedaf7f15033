#!/usr/bin/env bash
# websocket.sh JRPCD HANDLERS_DIR FIXTURE_DIR REPO_ROOT JRPC
#
# jrpc over ws:// and wss:// (issue 25 point 1, issue 23 point 7) against
# jrpcd's `websocket = yes` listeners: a call (with its discovery), a
# batch with a deferred call, a notification (counted by rpc.stats),
# --stdin with a deferred reply after a later one, a call's $/progress
# notifications on stderr, -f websocket on a plain TCP URL, a bearer
# token on the handshake; each handshake failure explained in the user's
# terms (no websocket on the listener: 400; no token or a wrong one: 401;
# a refused Origin: 403; a stream port; a length port; nobody there); and,
# against fake_ws.py, a reply in fragments with a ping between them (the
# pong checked), the close handshake, a wrong Sec-WebSocket-Accept, a
# masked server frame and a close with a status.
set -euo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
# shellcheck source-path=SCRIPTDIR source=tls_lib.sh
source "$here/tls_lib.sh" # tests/cli/lib.sh and jrpc_lib.sh with it
jrpc_args "$@"

ports_and_conf() {
  WS=$(free_port) PLAIN=$(free_port) TOK=$(free_port) LINE=$(free_port)
  LEN=$(free_port) WSS=$(free_port)
  {
    conf_head
    cat <<EOF2
[listen ws]
tcp = 127.0.0.1:$WS
framing = http
websocket = yes
[listen plain]
tcp = 127.0.0.1:$PLAIN
framing = http
[listen tok]
tcp = 127.0.0.1:$TOK
framing = http
websocket = yes
tokens_file = $T/tokens
[listen line]
tcp = 127.0.0.1:$LINE
[listen len]
tcp = 127.0.0.1:$LEN
framing = length
EOF2
    if ((TLS)); then
      tls_listener wss "$WSS" server
      printf 'framing = http\nwebsocket = yes\n'
    fi
    printf '[plugin math]\npath = math.so\n[plugin echo]\npath = echo.so\n'
    printf '[plugin sleep]\npath = sleep.so\n'
  } >"$T/jrpcd.conf"
}

test_round_trips() {
  local url=ws://127.0.0.1:$WS/ before
  run ws_call "$url" math.add 1 2
  expect ws_call 0 3
  run ws_named "$url" --compact math.subtract a:=9 b:=4
  expect ws_named 0 5
  printf 'sleep.work_ms 200\nmath.add 3 4\necho x\n' >"$T/batch.txt"
  run ws_batch "$url" --compact --batch "$T/batch.txt"
  expect ws_batch 0 $'200\n7\n["x"]'
  before=$(calls_of math.multiply)
  run ws_notify -n "$url" math.multiply 2 3
  expect ws_notify 0 ""
  expect_eq "ws: the notification was served" "$(calls_of math.multiply)" $((before + 1))
  printf '%s\n' '{"jsonrpc":"2.0","method":"sleep.work_ms","params":[300],"id":1}' \
    '{"jsonrpc":"2.0","method":"math.add","params":[1,1],"id":2}' >"$T/stdin.txt"
  RC=0
  timeout -k 5 30 "$JRPC" "$url" --stdin <"$T/stdin.txt" >"$T/ws_stdin.out" 2>"$T/ws_stdin.err" || RC=$?
  expect ws_stdin 0 $'{"jsonrpc":"2.0","result":2,"id":2}\n{"jsonrpc":"2.0","result":300,"id":1}'
  run ws_progress "$url" sleep.work_ms ms:=200 progress:='"p1"'
  expect ws_progress 0 200 'jrpc: notification $/progress {"token":"p1","value":{"kind":"report","percentage":100}}'
  expect_eq "ws: ten progress notifications on stderr" \
    "$(grep -c '^jrpc: notification \$/progress {"token":"p1"' "$T/ws_progress.err")" 10
  run ws_f "tcp://127.0.0.1:$WS" -f websocket math.add 2 2
  expect ws_f 0 4
  run ws_token --token-file "$T/app.token" "ws://127.0.0.1:$TOK/rpc" math.add 5 5
  expect ws_token 0 10
  if ((TLS)); then
    run wss_call --cafile "$T/ca.pem" "wss://127.0.0.1:$WSS/" math.add 4 4
    expect wss_call 0 8
    run wss_batch --cafile "$T/ca.pem" "wss://localhost:$WSS/" --compact --batch "$T/batch.txt"
    expect wss_batch 0 $'200\n7\n["x"]'
  fi
}

test_refusals() {
  run ws_plain "ws://127.0.0.1:$PLAIN/" math.add 1 2
  expect ws_plain 2 "" "ws://127.0.0.1:$PLAIN/: no WebSocket here: the listener needs websocket = yes (http://127.0.0.1:$PLAIN speaks POST to it)"
  run ws_no_token "ws://127.0.0.1:$TOK/" math.add 1 2
  expect ws_no_token 2 "" "ws://127.0.0.1:$TOK/: the server wants a bearer token (HTTP 401): give it with --token-file FILE or in JRPC_TOKEN"
  RC=0
  JRPC_TOKEN=wrongwrongwrong timeout -k 5 30 "$JRPC" "ws://127.0.0.1:$TOK/" math.add 1 2 \
    >"$T/ws_bad_token.out" 2>"$T/ws_bad_token.err" || RC=$?
  expect ws_bad_token 2 "" "ws://127.0.0.1:$TOK/: the token was refused (HTTP 401"
  run ws_origin -H "Origin: https://evil.example" "ws://127.0.0.1:$WS/" math.add 1 2
  expect ws_origin 2 "" "the listener refused the Origin sent (-H Origin: ...): only the origins its \`origins\` lists may open a WebSocket"
  run ws_line "ws://127.0.0.1:$LINE/" math.add 1 2
  expect ws_line 2 "" "ws://127.0.0.1:$LINE/: the server answers newline-framed JSON, not HTTP"
  expect_in ws_line err "use tcp://127.0.0.1:$LINE"
  run ws_len "ws://127.0.0.1:$LEN/" math.add 1 2
  expect ws_len 2 "" "ws://127.0.0.1:$LEN/: the server answers length-framed JSON, not HTTP: use tcp://127.0.0.1:$LEN with -f length"
  run ws_unix -f websocket -u "$T/jrpcd.sock" math.add 1 2
  expect ws_unix 2 "" "unix:$T/jrpcd.sock: the server answers newline-framed JSON, not HTTP"
  local nobody
  nobody=$(free_port)
  run ws_nobody "ws://127.0.0.1:$nobody/" math.add 1 2
  expect ws_nobody 2 "" "cannot connect to ws://127.0.0.1:$nobody/: no daemon listening on that port"
  run ws_http_f -f http "ws://127.0.0.1:$WS/" math.add 1 2
  expect ws_http_f 2 "" "-f http: ws://127.0.0.1:$WS/ is a WebSocket endpoint"
}

# fake MODE NAME ARGS...: jrpc --no-check against fake_ws.py in MODE; the
# fake's own verdict on what jrpc sent is checked too.
fake() {
  local mode=$1 name=$2 fpid frc=0
  shift 2
  rm -f "$T/fake.port"
  python3 "$here/fake_ws.py" "$T/fake.port" "$mode" 2>"$T/fake_$mode.err" &
  fpid=$!
  for ((i = 0; i < 100; i++)); do
    [[ -s $T/fake.port ]] && break
    sleep 0.05
  done
  run "$name" --no-check "ws://127.0.0.1:$(cat "$T/fake.port")/" "$@"
  wait "$fpid" || frc=$?
  if ((frc != 0)); then
    fail "fake_ws.py $mode: $(cat "$T/fake_$mode.err")"
  fi
}

test_frames() {
  fake fragments ws_fragments echo ab cd ef
  expect ws_fragments 0 '"abcdef"'
  fake badaccept ws_badaccept echo x
  expect ws_badaccept 2 "" "the server's 101 answer is not a WebSocket's (its Upgrade or Sec-WebSocket-Accept is missing or wrong)"
  fake masked ws_masked echo x
  expect ws_masked 2 "" "malformed WebSocket frame from the server: it is masked (only a client masks)"
  fake close1009 ws_close echo x
  expect ws_close 2 "" "the server closed the WebSocket with status 1009: a message over its max_frame_bytes: too big"
}

main() {
  tls_setup
  "$JRPCD" --hash-token app 2>"$T/app.token" >"$T/tokens" || die "--hash-token failed"
  start_jrpcd ports_and_conf
  test_round_trips
  test_refusals
  test_frames
  stop_daemon jrpcd "$JPID" "$T/jrpcd.sock"
  finish
}

main "$@"
