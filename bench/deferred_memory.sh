#!/usr/bin/env bash
# Bytes of daemon RSS per deferred call in flight: N sleep.ms calls of 3 s
# sent at once to a fresh daemon (as N single requests, then to another as
# one batch of N), the RSS read while they all wait, divided by N.
#
#   bench/deferred_memory.sh [build-dir] [N]      (default build/run, 50000)
set -euo pipefail
cd "$(dirname "$0")/.."
build=$(realpath "${1:-build/run}")
n=${2:-50000}
bin=$build/daemon/jrpcd
[ -x "$bin" ] || { echo "build first: ./scripts/run.sh (or cmake --build $build)" >&2; exit 1; }
dir=$(mktemp -d)
pid=
trap 'kill $pid 2>/dev/null || true; wait 2>/dev/null || true; rm -rf "$dir"' EXIT
cat >"$dir/jrpcd.conf" <<EOF
[server]
workers = 1
plugin_dir = $build/handlers
max_batch = $n
max_pending_calls = $n
max_pending_calls_total = $((2 * n))
max_frame_bytes = 67108864
[listen local]
unix = $dir/sock
[plugin sleep]
path = sleep.so
EOF
start() {
  rm -f "$dir/sock"
  "$bin" -c "$dir/jrpcd.conf" 2>"$dir/log" &
  pid=$!
  for _ in $(seq 100); do [ -S "$dir/sock" ] && break; sleep 0.05; done
}
stop() { kill "$pid"; wait "$pid" || true; pid=; }
rss() { awk '/^VmRSS/ {print $2}' "/proc/$pid/status"; }
call() { printf '{"jsonrpc":"2.0","method":"sleep.ms","params":[3000],"id":%d}' "$1"; }

measure() { # label, file with the requests
  local before after
  start
  before=$(rss)
  # socat keeps the connection until the replies are in (-t: 4 s at most).
  socat -t 4 - "UNIX-CONNECT:$dir/sock" <"$2" >/dev/null &
  sleep 1.5
  after=$(rss)
  wait $!
  stop
  printf '%-8s %7d calls in flight: %8d KiB more RSS, %6d bytes per call\n' \
    "$1" "$n" $((after - before)) $(((after - before) * 1024 / n))
}

for i in $(seq "$n"); do call "$i"; echo; done >"$dir/single"
{
  printf '['
  for i in $(seq "$n"); do [ "$i" -gt 1 ] && printf ','; call "$i"; done
  echo ']'
} >"$dir/batch"
measure single "$dir/single"
measure batch "$dir/batch"
