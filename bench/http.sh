#!/usr/bin/env bash
# HTTP against newline framing, HAProxy against direct, and the peers over
# HTTP, in one run (issue 15, points 4 and 8). One jrpcd (workers = 1, the
# math plugin) serves the same calls (math.add [1,2]) on a newline TCP
# listener and an HTTP one; jrpc-bench drives each at 1 x 1, 1 x 64
# (pipelined) and 8 x 64 (keep-alive). Then Debian's haproxy with the
# example configs of packaging/haproxy/ (its three servers all this one
# jrpcd) in front of each listener, against the same listener direct, and
# the HAProxy process's own CPU per request. Then the Node peers of
# bench/peers over HTTP (jayson's own HTTP server; json-rpc-2.0 behind
# Node's http module), when bench/peers/setup.sh node has installed them.
#
# Servers (jrpcd; each peer, its helper threads too) are pinned to CPU 0
# and jrpc-bench to CPU 1 when there are two; haproxy runs unpinned. Each
# cell is the median of REPS runs of SECONDS (after a 0.5 s warm-up);
# "CPU ns/req" is the server process's user + system time per request
# (jrpc-bench -p; for haproxy, /proc around the run). On a shared machine
# read the ratios within one run, not the absolute figures.
#
#   bench/http.sh [build-dir] [seconds] [reps]      (default build/run, 3, 3)
set -euo pipefail
cd "$(dirname "$0")/.."
root=$PWD
build=$(realpath "${1:-build/run}")
secs=${2:-3}
reps=${3:-3}
bin=$build/daemon/jrpcd bench=$build/bench/jrpc-bench
if [ ! -x "$bin" ] || [ ! -x "$bench" ]; then
  echo "build first: cmake --build $build" >&2
  exit 1
fi
command -v haproxy >/dev/null || { echo "haproxy is needed (scripts/deps.sh)" >&2; exit 1; }
dir=$(mktemp -d)
pids=()
trap 'kill "${pids[@]}" 2>/dev/null || true; wait 2>/dev/null || true; rm -rf "$dir"' EXIT

port() { # a free port below the ephemeral range
  local p
  for p in $(shuf -i 20000-32000 -n 50); do
    if ! (exec 3<>"/dev/tcp/127.0.0.1/$p") 2>/dev/null; then echo "$p"; return; fi
  done
  exit 1
}
pin_server="" pin_client=""
if [ "$(nproc)" -ge 2 ]; then pin_server="taskset -c 0" pin_client="taskset -c 1"; fi

pn=$(port) ph=$(port)
printf '[server]\nworkers = 1\nplugin_dir = %s\n[listen nl]\ntcp = 127.0.0.1:%s\n[listen http]\ntcp = 127.0.0.1:%s\nframing = http\n[plugin math]\npath = math.so\n' \
  "$build/handlers" "$pn" "$ph" >"$dir/j.conf"
# shellcheck disable=SC2086 # pin_server is a command prefix or nothing
$pin_server "$bin" -c "$dir/j.conf" 2>"$dir/j.log" &
jpid=$!
pids+=("$jpid")
for _ in $(seq 100); do grep -q serving "$dir/j.log" && break; sleep 0.05; done

# start_haproxy KIND FRONT BACKEND: the example config of KIND, every
# server entry this jrpcd's listener BACKEND; sets HPID.
start_haproxy() {
  local kind=$1 front=$2 back=$3 up
  up=$(echo "$kind" | tr '[:lower:]' '[:upper:]')
  env HAPROXY_STATS_SOCKET="$dir/$kind.sock" "JRPC_${up}_BIND=127.0.0.1:$front" \
    "JRPCD1_${up}=127.0.0.1:$back" "JRPCD2_${up}=127.0.0.1:$back" \
    "JRPCD3_${up}=127.0.0.1:$back" \
    haproxy -db -f "$root/packaging/haproxy/jrpcd-$kind.cfg" >/dev/null 2>"$dir/$kind.log" &
  HPID=$!
  pids+=("$HPID")
}
fh=$(port) ft=$(port)
start_haproxy http "$fh" "$ph"
hpid_http=$HPID
start_haproxy tcp "$ft" "$pn"
hpid_tcp=$HPID
sleep 3 # their checks: rise 2 x inter 1 s

ticks() { # utime + stime of PID, in clock ticks
  sed 's/.*) //' "/proc/$1/stat" | awk '{ print $12 + $13 }'
}

# one PORT FRAMING C W PID [HPID] -> "req/s cpu_ns_per_req haproxy_ns_per_req"
one() {
  local port=$1 framing=$2 c=$3 w=$4 pid=$5 hp=${6:-} t0=0 t1=0 out
  if [ -n "$hp" ]; then t0=$(ticks "$hp"); fi
  # shellcheck disable=SC2086
  out=$($pin_client "$bench" -t "127.0.0.1:$port" -f "$framing" -c "$c" -w "$w" \
    -d "$secs" --warmup 0.5 -q -p "$pid" 2>/dev/null | grep '^RESULT') || { echo "- - -"; return; }
  if [ -n "$hp" ]; then t1=$(ticks "$hp"); fi
  echo "$out" | awk -v dt=$((t1 - t0)) -v hz="$(getconf CLK_TCK)" -v hp="$hp" '{
    for (i = 2; i <= NF; i++) { split($i, kv, "="); r[kv[1]] = kv[2] }
    h = "-"
    if (hp != "" && r["requests"] > 0) h = sprintf("%.0f", dt / hz * 1e9 / r["requests"])
    printf "%s %s %s\n", r["req_s"], r["ns_per_req_cpu"], h }'
}

median() { sort -n | awk '{ v[NR] = $1 } END { print NR ? v[int((NR + 1) / 2)] : "-" }'; }

# cell ARGS... -> the median of each of one's columns over REPS runs
cell() {
  local i
  for ((i = 0; i < reps; i++)); do one "$@"; done >"$dir/cell"
  printf '%s %s %s\n' "$(cut -d' ' -f1 "$dir/cell" | median)" \
    "$(cut -d' ' -f2 "$dir/cell" | median)" "$(cut -d' ' -f3 "$dir/cell" | median)"
}

ratio() { awk -v a="$1" -v b="$2" 'BEGIN { if (a + 0 > 0 && b + 0 > 0) printf "%.2f", a / b; else printf "-" }'; }

echo "machine: $(lscpu | sed -n 's/^Model name: *//p' | head -1), $(nproc) CPUs; load average $(cut -d' ' -f1-3 /proc/loadavg) at the start"
echo "commit: $(git rev-parse --short HEAD 2>/dev/null || echo '?'); median of $reps runs of $secs s per cell"
echo
echo "HTTP against newline framing (jrpcd, TCP, workers = 1)"
printf '%-6s %12s %12s %8s %14s %14s %8s\n' "C x W" "newline r/s" "HTTP r/s" "HTTP/nl" \
  "nl CPU ns/req" "HTTP CPU ns" "HTTP/nl"
declare -A http_rs
for load in "1 1" "1 64" "8 64"; do
  # shellcheck disable=SC2086 # load is "C W"
  read -r a b _ < <(cell "$pn" newline $load "$jpid")
  # shellcheck disable=SC2086
  read -r c d _ < <(cell "$ph" http $load "$jpid")
  http_rs[$load]=$c
  printf '%-6s %12s %12s %8s %14s %14s %8s\n' "${load/ /x}" "$a" "$c" "$(ratio "$c" "$a")" \
    "$b" "$d" "$(ratio "$d" "$b")"
done

echo
echo "Through HAProxy (packaging/haproxy/, one jrpcd behind it) against direct"
printf '%-5s %-6s %11s %12s %8s %15s %16s %15s\n' mode "C x W" "direct r/s" "HAProxy r/s" \
  "HAP/dir" "jrpcd ns direct" "jrpcd ns via HAP" "HAProxy ns/req"
for mode in tcp http; do
  if [ $mode = tcp ]; then d=$pn f=$ft fr=newline hp=$hpid_tcp; else d=$ph f=$fh fr=http hp=$hpid_http; fi
  for load in "1 1" "8 64"; do
    # shellcheck disable=SC2086
    read -r a b _ < <(cell "$d" "$fr" $load "$jpid")
    # shellcheck disable=SC2086
    read -r c e h < <(cell "$f" "$fr" $load "$jpid" "$hp")
    printf '%-5s %-6s %11s %12s %8s %15s %16s %15s\n' "$mode" "${load/ /x}" "$a" "$c" \
      "$(ratio "$c" "$a")" "$b" "$e" "$h"
  done
done

echo
if [ ! -d bench/peers/node_modules ] || ! command -v node >/dev/null; then
  echo "peers over HTTP: skipped (bench/peers/setup.sh node installs them)"
  exit 0
fi
echo "Peers over HTTP (Node, on jrpcd's CPU) against jrpcd over HTTP (the first table)"
printf '%-12s %-6s %10s %12s %11s\n' server "C x W" "req/s" "CPU ns/req" "jrpcd/this"
for peer in jayson_server jsonrpc2_server; do
  pp=$(port)
  # shellcheck disable=SC2086
  $pin_server node "bench/peers/$peer.js" --tcp "$pp" --http 2>"$dir/$peer.log" &
  npid=$!
  pids+=("$npid")
  for _ in $(seq 100); do grep -q listening "$dir/$peer.log" && break; sleep 0.05; done
  for load in "1 1" "1 64" "8 64"; do
    # shellcheck disable=SC2086
    read -r a b _ < <(cell "$pp" http $load "$npid")
    printf '%-12s %-6s %10s %12s %11s\n' "${peer%_server}" "${load/ /x}" "$a" "$b" \
      "$(ratio "${http_rs[$load]}" "$a")"
  done
  kill "$npid"
  wait "$npid" 2>/dev/null || true
done
