#!/usr/bin/env bash
# Instructions per request of jrpcd over TLS (valgrind callgrind, every
# thread counted): jrpcd with one worker and one TLS listener (newline
# framing, a fresh P-256 certificate), socat terminating TLS for one
# jrpc-bench connection with 64 requests in flight. As in
# bench/callgrind_socket.sh, each workload runs at two request counts in
# two daemons and the difference in jrpcd's instructions is divided by the
# difference in requests, so start-up, the handshake and shutdown cancel
# out: what is left is the record layer and the request path.
#
#   bench/callgrind_tls.sh [build-dir] [workloads]   (build/run, "small")
set -euo pipefail
cd "$(dirname "$0")/.."
build=$(realpath "${1:-build/run}")
read -r -a wls <<<"${2:-small}"
jrpcd=$build/daemon/jrpcd bench=$build/bench/jrpc-bench
for b in "$jrpcd" "$bench"; do
  [ -x "$b" ] || { echo "build first: cmake --build $build ($b is missing)" >&2; exit 1; }
done
for t in valgrind socat openssl; do
  command -v "$t" >/dev/null || { echo "$t is needed (scripts/deps.sh)" >&2; exit 1; }
done
T=$(mktemp -d)
pids=()
cleanup() {
  kill "${pids[@]}" 2>/dev/null || true
  wait 2>/dev/null || true
  rm -rf "$T"
}
trap cleanup EXIT
openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -days 2 \
  -subj /CN=127.0.0.1 -keyout "$T/k.pem" -out "$T/c.pem" 2>/dev/null

ir() { # workload requests: jrpcd's instructions for a run
  local wl=$1 n=$2 i port out=$T/cg.out
  rm -f "$out" "$T/j.log" "$T/t.sock"
  port=$(shuf -i 20000-32000 -n 1)
  printf '[server]\nworkers = 1\nplugin_dir = %s\n[plugin math]\npath = math.so\n[plugin echo]\npath = echo.so\n' "$build/handlers" >"$T/j.conf"
  printf '[listen t]\ntcp = 127.0.0.1:%s\ntls_cert = %s\ntls_key = %s\n' "$port" "$T/c.pem" "$T/k.pem" >>"$T/j.conf"
  : >"$T/j.log"
  valgrind --tool=callgrind --callgrind-out-file="$out" "$jrpcd" -c "$T/j.conf" >"$T/j.log" 2>&1 &
  local server=$!
  for ((i = 0; i < 600; i++)); do
    grep -q 'serving ' "$T/j.log" && break
    sleep 0.1
  done
  grep -q 'serving ' "$T/j.log" || { cat "$T/j.log" >&2; echo "jrpcd did not start" >&2; exit 1; }
  socat UNIX-LISTEN:"$T/t.sock",fork OPENSSL:127.0.0.1:"$port",verify=0 &
  local relay=$!
  pids=("$server" "$relay")
  for ((i = 0; i < 100; i++)); do
    [ -S "$T/t.sock" ] && break
    sleep 0.05
  done
  timeout 600 "$bench" -u "$T/t.sock" -c 1 -w 64 -n "$n" -W "$wl" -q --timeout 120 >"$T/bench.log" 2>&1 ||
    { cat "$T/bench.log" >&2; exit 1; }
  kill "$relay" 2>/dev/null || true
  kill -TERM "$server"
  wait "$server" || true
  wait "$relay" 2>/dev/null || true
  pids=()
  awk '/^(summary|totals):/ {print $2; exit}' "$out"
}

printf '%-12s %12s\n' workload jrpcd-tls
for wl in "${wls[@]}"; do
  calls=1
  case $wl in batch:*) calls=${wl#batch:} ;; esac
  lo=$((20000 / calls)) hi=$((120000 / calls))
  ((lo > 0)) || lo=1
  a=$(ir "$wl" "$lo")
  b=$(ir "$wl" "$hi")
  printf '%-12s %12d\n' "$wl" $(((b - a) / ((hi - lo) * calls)))
done
