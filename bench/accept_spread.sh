#!/usr/bin/env bash
# How jrpcd spreads new connections over its workers: R rounds of C
# clients that connect at the same moment and stay connected while the
# others arrive; prints, per round, which worker took each connection
# (from jrpcd's debug log) and the split.
#
# Every worker's loop accepts on the shared listening socket. Without the
# hand-over to the least loaded worker (daemon/conn.c), the loop that wakes
# first accepts most of a burst: measured 7/1 5/3 2/6 5/3 6/2 6/2 over six
# rounds of 8 (and 8/0 in 4 of 6 bursts of truly simultaneous connects).
# With it: 4/4 in every round.
#
#   bench/accept_spread.sh [build-dir] [rounds] [clients]
set -euo pipefail
cd "$(dirname "$0")/.."
build=${1:-build/run}
rounds=${2:-6}
clients=${3:-8}
jrpcd=$build/daemon/jrpcd
[ -x "$jrpcd" ] || { echo "build first: ./scripts/run.sh (or cmake --build $build)" >&2; exit 1; }
tmp=$(mktemp -d)
trap 'kill $pid 2>/dev/null; wait 2>/dev/null; rm -rf "$tmp"' EXIT
cat >"$tmp/spread.conf" <<CONF
[server]
workers = 2
log_level = debug
plugin_dir = $PWD/$build/handlers
[listen local]
unix = $tmp/spread.sock
[plugin math]
path = math.so
CONF
"$jrpcd" -c "$tmp/spread.conf" 2>"$tmp/log" &
pid=$!
for _ in $(seq 100); do [ -S "$tmp/spread.sock" ] && break; sleep 0.05; done
req='{"jsonrpc":"2.0","method":"math.add","params":[1,2],"id":1}'
for _ in $(seq "$rounds"); do
  for _ in $(seq "$clients"); do
    # connect now, send after the whole burst has connected
    (sleep 0.3; echo "$req") | socat -t 2 - "UNIX-CONNECT:$tmp/spread.sock" >/dev/null &
  done
  wait $(jobs -p | grep -v "^$pid$") 2>/dev/null || true
done
kill -TERM $pid
wait $pid || true
grep -o '(worker [0-9]*)' "$tmp/log" | tr -dc '0-9\n' |
  awk -v c="$clients" '{ s = s $1; n[$1]++ }
    NR % c == 0 { printf "round %d: %s  split %d/%d\n", NR / c, s, n[0], n[1]; s = ""; delete n }'
