#!/usr/bin/env bash
# follow.sh JRPCD HANDLERS_DIR FIXTURE_DIR REPO_ROOT JRPC
#
# jrpc --follow (issue 23 point 7) against jrpcd's kv sample: over a Unix
# socket (newline), TCP with length and content-length framing, TLS,
# ws:// and wss://, `jrpc --compact --follow kv.watch ""` prints the
# result of each kv.changed for sets and deletes made on another
# connection, one JSON a line, and on SIGINT (SIGTERM once) calls
# kv.unwatch (rpc.stats counts it), exits 0 and leaves no subscription
# (rpc.stats push.subscriptions back to 0); pretty output and -r; a
# follower that stops reading (SIGSTOP) while 3,000 sets are made, with a
# small max_push_bytes, prints rpc.lagged notices on stderr whose counts,
# with the notifications printed, add up to every set; --follow over
# http:// and of a method that is no subscription are refused with why.
set -euo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
# shellcheck source-path=SCRIPTDIR source=tls_lib.sh
source "$here/tls_lib.sh" # tests/cli/lib.sh and jrpc_lib.sh with it
jrpc_args "$@"

ports_and_conf() {
  LEN=$(free_port) CL=$(free_port) SEC=$(free_port) WS=$(free_port)
  WSS=$(free_port)
  {
    printf '[server]\nworkers = 2\nplugin_dir = %s\nmax_push_bytes = 8192\n' "$HANDLERS"
    printf '[listen local]\nunix = %s/jrpcd.sock\nmode = 0600\nstats = full\n' "$T"
    cat <<EOF2
[listen len]
tcp = 127.0.0.1:$LEN
framing = length
[listen cl]
tcp = 127.0.0.1:$CL
framing = content-length
[listen ws]
tcp = 127.0.0.1:$WS
framing = http
websocket = yes
EOF2
    if ((TLS)); then
      tls_listener sec "$SEC" server
      tls_listener wss "$WSS" server
      printf 'framing = http\nwebsocket = yes\n'
    fi
    printf '[plugin kv]\npath = kv.so\n[plugin math]\npath = math.so\n'
  } >"$T/jrpcd.conf"
}

subs() { stats_of 'r["push"]["subscriptions"]'; }
lines() { wc -l <"$1"; }
unwatches() { calls_of kv.unwatch; }

# until_eq WHAT CMD WANT: CMD's output is WANT within 10 s, else a failure.
until_eq() {
  local what=$1 cmd=$2 want=$3 got i
  for ((i = 0; i < 200; i++)); do
    got=$($cmd)
    [[ $got == "$want" ]] && return 0
    sleep 0.05
  done
  fail "$what: $got, expected $want"
  return 1
}

# reap PID: its exit status in RC, within 10 s (else killed: a failure).
reap() {
  local i
  RC=0
  for ((i = 0; i < 200; i++)); do
    alive "$1" || break
    sleep 0.05
  done
  if alive "$1"; then
    kill -KILL "$1"
    fail "jrpc $1 did not exit within 10 s of the signal"
  fi
  wait "$1" || RC=$?
  forget_pid "$1"
}

# follow NAME SIGNAL OPTIONS...: jrpc OPTIONS --follow kv.watch "" in the
# background; sets and a delete from the Unix socket; then SIGNAL. Its
# stdout must be the three changes, its exit 0, kv.unwatch called once
# and no subscription left.
follow() {
  local name=$1 sig=$2 fpid rc=0 before
  shift 2
  before=$(unwatches)
  # Not under timeout(1): it passes a signal on twice (to jrpc and to its
  # process group). The cleanup kills it if it hangs.
  "$JRPC" "$@" --follow kv.watch "$name." >"$T/$name.out" 2>"$T/$name.err" &
  fpid=$!
  DAEMON_PIDS+=("$fpid")
  until_eq "$name: subscribed" subs 1 || true
  "$JRPC" -u "$T/jrpcd.sock" kv.set "$name.a" 1 >/dev/null
  "$JRPC" -u "$T/jrpcd.sock" kv.set other.x 1 >/dev/null
  "$JRPC" -u "$T/jrpcd.sock" kv.set "$name.b" '{"x":[1,2]}' >/dev/null
  "$JRPC" -u "$T/jrpcd.sock" kv.del "$name.a" >/dev/null
  until_eq "$name: three lines printed" "lines $T/$name.out" 3 || true
  kill "-$sig" "$fpid"
  reap "$fpid"
  rc=$RC
  RC=$rc
  check_sanitizer "$T/$name.err" "$name: jrpc" || true
  expect "$name" 0 "{\"key\":\"$name.a\",\"value\":1,\"op\":\"set\"}
{\"key\":\"$name.b\",\"value\":{\"x\":[1,2]},\"op\":\"set\"}
{\"key\":\"$name.a\",\"value\":null,\"op\":\"del\"}"
  expect_eq "$name: kv.unwatch called on SIG$sig" "$(unwatches)" $((before + 1))
  expect_eq "$name: no subscription left" "$(subs)" 0
}

test_endpoints() {
  follow f_unix INT --compact -u "$T/jrpcd.sock"
  follow f_length INT --compact -f length "tcp://127.0.0.1:$LEN"
  follow f_cl INT --compact -f content-length "tcp://127.0.0.1:$CL"
  follow f_ws INT --compact "ws://127.0.0.1:$WS/"
  follow f_term TERM --compact "ws://localhost:$WS/"
  if ((TLS)); then
    follow f_tls INT --compact --cafile "$T/ca.pem" "tls://127.0.0.1:$SEC"
    follow f_wss INT --compact --cafile "$T/ca.pem" "wss://127.0.0.1:$WSS/"
  fi
}

test_output() {
  local fpid rc=0
  "$JRPC" -u "$T/jrpcd.sock" -r --follow kv.watch pretty. \
    >"$T/f_pretty.out" 2>"$T/f_pretty.err" &
  fpid=$!
  DAEMON_PIDS+=("$fpid")
  until_eq "f_pretty: subscribed" subs 1 || true
  "$JRPC" -u "$T/jrpcd.sock" kv.set pretty.k '"v"' >/dev/null
  until_eq "f_pretty: printed" "lines $T/f_pretty.out" 5 || true
  kill -INT "$fpid"
  reap "$fpid"
  rc=$RC
  RC=$rc
  expect f_pretty 0 '{
  "key": "pretty.k",
  "value": "v",
  "op": "set"
}'
}

# A follower stopped while 3,000 sets of 1 KiB are made: what it missed
# is announced by rpc.lagged, and it, with what was printed, is all.
test_lagged() {
  local fpid rc=0 printed lost
  "$JRPC" -u "$T/jrpcd.sock" --compact --follow kv.watch lag. \
    >"$T/f_lag.out" 2>"$T/f_lag.err" &
  fpid=$!
  DAEMON_PIDS+=("$fpid")
  until_eq "f_lag: subscribed" subs 1 || true
  kill -STOP "$fpid"
  python3 - "$T/jrpcd.sock" <<'EOF'
import json, socket, sys
s = socket.socket(socket.AF_UNIX)
s.connect(sys.argv[1])
value = "x" * 1024
s.sendall("".join(json.dumps({"jsonrpc": "2.0", "method": "kv.set",
                              "params": ["lag.%d" % i, value], "id": i}) + "\n"
                  for i in range(3000)).encode())
f = s.makefile("rb")
for _ in range(3000):
    f.readline()
EOF
  kill -CONT "$fpid"
  sleep 0.5
  kill -INT "$fpid"
  reap "$fpid"
  rc=$RC
  expect_eq "f_lag: exit status" "$rc" 0
  printed=$(wc -l <"$T/f_lag.out")
  lost=$(sed -n 's/^jrpc: rpc.lagged: subscription [0-9a-f]* lost \([0-9]*\) notifications (the server dropped them while jrpc did not keep up)$/\1/p' \
    "$T/f_lag.err" | awk '{n += $1} END {print n + 0}')
  if ((lost > 0 && printed + lost == 3000)); then
    pass "f_lag: $printed printed and $lost announced lost by rpc.lagged"
  else
    fail "f_lag: $printed printed, $lost announced lost: not all 3000"
    show "$T/f_lag.err"
  fi
}

test_refused() {
  run f_http "http://127.0.0.1:$WS/" --follow kv.watch ""
  expect f_http 2 "" "--follow: server push needs a streaming endpoint (unix:, tcp://, tls://, ws:// or wss://): over HTTP POST no notification can reach jrpc"
  run f_not_sub -u "$T/jrpcd.sock" --follow math.add 1 2
  expect f_not_sub 2 "" "--follow: math.add is not a subscription method (rpc.discover gives it no x-subscription; kv.watch is one)"
}

main() {
  tls_setup
  start_jrpcd ports_and_conf
  test_endpoints
  test_output
  test_lagged
  test_refused
  stop_daemon jrpcd "$JPID" "$T/jrpcd.sock"
  finish
}

main "$@"
