#!/usr/bin/env bash
# Instructions per request of the whole daemon over a real Unix socket
# (valgrind callgrind on jrpcd; every thread counted): jrpcd with one
# worker, newline framing, one jrpc-bench connection with 64 requests in
# flight. Each workload runs at two request counts, in two daemons, and
# the difference in the daemon's instructions is divided by the difference
# in requests, so start-up, plugin loading and shutdown cancel out. The
# same for bench/echo-server, the raw transport, as the baseline.
#
#   bench/callgrind_socket.sh [build-dir] [parser] [workloads]
#
# build-dir defaults to build/run, parser to native, workloads (jrpc-bench
# -W names, quoted) to "small named notify batch:100 large:1024". A
# batch:N figure is per call, notify's per call (it sends a notification
# and a call per request: calls = 2). Takes a few minutes. With
# CG_KEEP=DIR the profiles stay there (KIND.WORKLOAD.REQUESTS, ':' as '_'),
# for bench/callgrind_stages.sh. CG_CONF='...' appends config lines to the
# daemon's config (e.g. an [access] section); CG_SERVER='...' adds lines
# to its [server] section (e.g. validate_params = no). CG_WINDOW=N keeps N
# requests in flight instead of 64 (1: a read per request). CG_FRAMING=length
# or http serves and sends that framing instead of newline, websocket an
# http listener with websocket = yes and jrpc-bench's WebSocket (echo-server,
# which has neither HTTP nor WebSocket, then shows -). CG_BENCH='...' adds jrpc-bench options
# (e.g. --allow-errors, to measure calls answered with an error: a method
# [access] denies).
set -euo pipefail
cd "$(dirname "$0")/.."
build=${1:-build/run}
parser=${2:-native}
read -r -a wls <<<"${3:-small named notify batch:100 large:1024}"
read -r -a bench_opts <<<"${CG_BENCH:-}"
framing=${CG_FRAMING:-newline}
jrpcd=$build/daemon/jrpcd
bench=$build/bench/jrpc-bench
echo_server=$build/bench/echo-server
for b in "$jrpcd" "$bench" "$echo_server"; do
  [ -x "$b" ] || { echo "build first: cmake --build $build ($b is missing)" >&2; exit 1; }
done
command -v valgrind >/dev/null || { echo "valgrind is missing (scripts/deps.sh installs it)" >&2; exit 1; }

T=$(mktemp -d)
server=
cleanup() {
  [ -n "$server" ] && kill -TERM "$server" 2>/dev/null || true
  rm -rf "$T"
}
trap cleanup EXIT

# ir SERVER-KIND WORKLOAD REQUESTS: the server's instructions for a run.
ir() {
  local kind=$1 wl=$2 n=$3 sock=$T/s.sock i
  local out=${CG_KEEP:-$T}/$kind.${wl/:/_}.$n
  rm -f "$sock" "$out"
  # Emptied here, not by the server's redirection: that runs in the
  # background child, and a loaded machine can let the wait below read the
  # last run's "serving" first (a connect to a socket not yet made, or a
  # start not seen).
  : >"$T/server.log"
  if [ "$kind" = echo ]; then
    valgrind --tool=callgrind --callgrind-out-file="$out" "$echo_server" \
      -u "$sock" -f "$framing" -j 1 >"$T/server.log" 2>&1 &
  else
    printf '[server]\nworkers = 1\nparser = %s\nplugin_dir = %s\n%s\n' "$parser" "$build/handlers" "${CG_SERVER:-}" >"$T/c.conf"
    printf '\n[plugin math]\npath = math.so\n\n[plugin echo]\npath = echo.so\n' >>"$T/c.conf"
    if [ "$framing" = websocket ]; then
      printf '\n[listen s]\nunix = %s\nframing = http\nwebsocket = yes\n' "$sock" >>"$T/c.conf"
    else
      printf '\n[listen s]\nunix = %s\nframing = %s\n' "$sock" "$framing" >>"$T/c.conf"
    fi
    # CG_CONF: more config appended (an [access] section, say), to show
    # what a feature costs per call.
    [ -z "${CG_CONF:-}" ] || printf '\n%s\n' "$CG_CONF" >>"$T/c.conf"
    valgrind --tool=callgrind --callgrind-out-file="$out" "$jrpcd" \
      -c "$T/c.conf" >"$T/server.log" 2>&1 &
  fi
  server=$!
  # Ready once it says so: the socket file exists from the bind, before the
  # listen, and a connect in between is refused (slow under valgrind).
  local ready='^echo-server: listening on |jrpcd\[info\] serving '
  for ((i = 0; i < 600; i++)); do
    grep -Eq "$ready" "$T/server.log" && break
    sleep 0.1
  done
  grep -Eq "$ready" "$T/server.log" || { cat "$T/server.log" >&2; echo "server did not start" >&2; exit 1; }
  timeout 300 "$bench" -u "$sock" -f "$framing" -c 1 -w "${CG_WINDOW:-64}" -n "$n" -W "$wl" -q --timeout 60 ${bench_opts[@]+"${bench_opts[@]}"} \
    >"$T/bench.log" 2>&1 || { cat "$T/bench.log" >&2; exit 1; }
  kill -TERM "$server"
  wait "$server" || true
  server=
  awk '/^(summary|totals):/ {print $2; exit}' "$out"
}

printf '%-12s %12s %12s\n' workload jrpcd echo-server
for wl in "${wls[@]}"; do
  calls=1
  case $wl in batch:*) calls=${wl#batch:} ;; notify) calls=2 ;; esac
  lo=$((20000 / calls)) hi=$((120000 / calls))
  ((lo > 0)) || lo=1
  row=$(printf '%-12s' "$wl")
  for kind in jrpcd echo; do
    if [ "$kind" = echo ] && { [ "$framing" = http ] || [ "$framing" = websocket ]; }; then
      row+=$(printf ' %12s' -)
      continue
    fi
    a=$(ir "$kind" "$wl" "$lo")
    b=$(ir "$kind" "$wl" "$hi")
    row+=$(printf ' %12d' $(((b - a) / ((hi - lo) * calls))))
  done
  echo "$row"
done
