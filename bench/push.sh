#!/usr/bin/env bash
# bench/push.sh - server push (issue 23) measured in one run, as markdown
# on stdout (progress on stderr):
#
#   bench/push.sh [build-dir] [reps]
#
# build-dir defaults to build/run (RelWithDebInfo: jrpcd, the pubsub
# plugin, push-bench, echo-server, conn-memory), reps to 3 (tables show
# medians). One jrpcd (workers = 2, the pubsub plugin) and one echo-server
# (-j 2) serve Unix sockets, newline framing, nothing pinned (client and
# servers share both cores):
#
#  1. Fan-out: 100 connections x 100 subscriptions to one channel, so one
#     publish is 10,000 notifications; PUSH_PUBS publishes (1,000), at
#     most 2 unfinished at a time. Notifications per server CPU-second
#     (utime + stime from /proc/PID/stat around the publish phase), against
#     echo-server writing the same bytes (frames of the notifications' mean
#     size, from a run of one subscription) to the same
#     connections ("!fan 100 BYTES" on each, per publish). The runs
#     alternate jrpcd, echo, jrpcd, ...; then rpc.stats shows the bytes each
#     worker wrote (the fan-out spread over both).
#  2. Publish-to-receive latency: publishes carry the client's monotonic
#     clock; each notification's latency is its arrival minus that. At a
#     modest rate: 100 subscribers (1 a connection) at 500 publishes a
#     second, and 10,000 (100 x 100) at 20 a second.
#  3. Memory: a fresh jrpcd; its VmRSS after 100 connections have made one
#     call each, then after 100 x 1,000 subscriptions (one channel), over
#     100,000; and per idle newline connection (conn-memory, 10,000).
#
# Every push-bench run also checks that every subscription received every
# publish exactly once (exit 1 otherwise). Takes about a minute.
set -euo pipefail
cd "$(dirname "$0")/.."
build_arg=${1:-build/run}
build=$(realpath -e -- "$build_arg")
reps=${2:-3}
PUBS=${PUSH_PUBS:-1000}
jrpcd=$build/daemon/jrpcd
pb=$build/bench/push-bench
echo_server=$build/bench/echo-server
connmem=$build/bench/conn-memory
for b in "$jrpcd" "$pb" "$echo_server" "$connmem" "$build/handlers/pubsub.so" "$build/handlers/math.so"; do
  [ -e "$b" ] || {
    echo "build first: cmake --build $build ($b is missing)" >&2
    exit 1
  }
done
command -v socat >/dev/null || {
  echo "socat is missing (scripts/deps.sh installs it)" >&2
  exit 1
}

T=$(mktemp -d)
declare -a pids=()
cleanup() {
  local p
  for p in "${pids[@]}"; do kill -TERM "$p" 2>/dev/null || true; done
  wait 2>/dev/null || true
  rm -rf "$T"
}
trap cleanup EXIT

log() { printf 'push.sh: %s\n' "$*" >&2; }

# serve NAME READY-REGEX CMD...: CMD in the background until its log
# says READY; sets SPID.
serve() {
  local name=$1 ready=$2 i
  shift 2
  # Emptied here: the background child's redirection may come after the
  # first look below.
  : >"$T/$name.log"
  "$@" >"$T/$name.log" 2>&1 &
  SPID=$!
  pids+=("$SPID")
  for ((i = 0; i < 100; i++)); do
    grep -Eq "$ready" "$T/$name.log" && return 0
    sleep 0.05
  done
  cat "$T/$name.log" >&2
  echo "$name did not start" >&2
  exit 1
}

start_jrpcd() {
  printf '[server]\nworkers = 2\nplugin_dir = %s\nmax_connections = 20000\n' \
    "$build/handlers" >"$T/$1.conf"
  # math: conn-memory's call.
  printf '\n[plugin pubsub]\npath = pubsub.so\n\n[plugin math]\npath = math.so\n' >>"$T/$1.conf"
  printf '\n[listen s]\nunix = %s\nframing = newline\n' "$T/$1.sock" >>"$T/$1.conf"
  serve "$1" 'jrpcd\[info\] serving ' "$jrpcd" -c "$T/$1.conf"
}

# field FILE KEY: KEY's value on FILE's RESULT line.
field() { sed -n "s/^RESULT.* $2=\([^ ]*\).*/\1/p" "$1"; }

# med KEY FILES...: the median of KEY over the RESULT lines of FILES.
med() {
  local key=$1 f
  shift
  for f in "$@"; do field "$f" "$key"; done | sort -g |
    awk '{ v[NR] = $1 } END { if (NR % 2) print v[(NR + 1) / 2]; else print (v[NR / 2] + v[NR / 2 + 1]) / 2 }'
}

# bench NAME ARGS...: push-bench ARGS, its output in $T/NAME.out.
bench() {
  local name=$1
  shift
  timeout 300 "$pb" "$@" >"$T/$name.out" 2>"$T/$name.err" || {
    cat "$T/$name.err" >&2
    echo "push-bench $* failed" >&2
    exit 1
  }
  log "$name: $(sed -n 's/^RESULT //p' "$T/$name.out")"
}

fint() { awk -v v="$1" 'BEGIN { s = sprintf("%.0f", v); r = ""; while (length(s) > 3) { r = "," substr(s, length(s) - 2) r; s = substr(s, 1, length(s) - 3) }; print s r }'; }

# ---- 1. fan-out against echo-server ----
start_jrpcd fan
jp=$SPID
serve echo '^echo-server: listening on ' "$echo_server" -u "$T/echo.sock" -f newline -j 2
ep=$SPID
bench size -u "$T/fan.sock" -c 1 -s 1 -n "$PUBS"
bytes=$(awk -v b="$(field "$T/size.out" notif_bytes)" 'BEGIN { printf "%.0f", b }')
declare -a jf=() ef=()
for ((r = 1; r <= reps; r++)); do
  bench "fan-jrpcd-$r" -u "$T/fan.sock" -c 100 -s 100 -n "$PUBS" -w 2 -p "$jp"
  bench "fan-echo-$r" -u "$T/echo.sock" -c 100 -s 100 -n "$PUBS" -w 2 -p "$ep" --echo "$bytes"
  jf+=("$T/fan-jrpcd-$r.out") ef+=("$T/fan-echo-$r.out")
done
stats=$(printf '{"jsonrpc":"2.0","method":"rpc.stats","id":1}\n' |
  socat -t 2 - "UNIX-CONNECT:$T/fan.sock")
spread=$(python3 -c 'import json, sys
w = json.loads(sys.argv[1])["result"]["workers"]
print(" / ".join(format(x["bytes_out"], ",") for x in w))' "$stats")

# ---- 2. latency at a modest rate ----
bench lat-100 -u "$T/fan.sock" -c 100 -s 1 -n 2000 -r 500 -p "$jp"
bench lat-10k -u "$T/fan.sock" -c 100 -s 100 -n 200 -r 20 -p "$jp"
kill -TERM "$jp" "$ep"

# ---- 3. memory ----
start_jrpcd mem
bench mem -u "$T/mem.sock" -c 100 -s 1000 -n 1 -p "$SPID"
kill -TERM "$SPID"
start_jrpcd idle
"$connmem" -u "$T/idle.sock" -p "$SPID" -n 10000 >"$T/idle.out" 2>&1 || {
  cat "$T/idle.out" >&2
  exit 1
}
kill -TERM "$SPID"

jn=$(med notif_per_cpu_s "${jf[@]}") en=$(med notif_per_cpu_s "${ef[@]}")
cat <<EOF
\`bench/push.sh $build_arg $reps\` · $(date -u '+%Y-%m-%d %H:%M UTC') · commit $(git rev-parse --short HEAD) · load average $(cut -d' ' -f1-3 /proc/loadavg) at the end

Fan-out: 100 connections x 100 subscriptions (one publish = 10,000
notifications of $bytes bytes), $PUBS publishes a run, at most 2 unfinished;
median of $reps runs each, alternating. Bytes written per worker (jrpcd,
rpc.stats after the runs): $spread.

| server | notifications per server CPU-s | server CPU s (user) | wall s | ratio jrpcd/echo |
|---|---:|---:|---:|---:|
| echo-server (\`!fan 100 $bytes\`) | $(fint "$en") | $(med cpu_s "${ef[@]}") ($(med user_s "${ef[@]}")) | $(med secs "${ef[@]}") | |
| jrpcd (pubsub.publish) | $(fint "$jn") | $(med cpu_s "${jf[@]}") ($(med user_s "${jf[@]}")) | $(med secs "${jf[@]}") | $(awk -v a="$jn" -v b="$en" 'BEGIN { printf "%.2f", a / b }') |

Publish-to-receive latency (one run each, µs):

| subscriptions | publishes a second | notifications | p50 | p99 | max |
|---|---:|---:|---:|---:|---:|
| 100 (100 conns x 1) | 500 | $(fint "$(field "$T/lat-100.out" notifications)") | $(field "$T/lat-100.out" p50_us) | $(field "$T/lat-100.out" p99_us) | $(field "$T/lat-100.out" max_us) |
| 10,000 (100 conns x 100) | 20 | $(fint "$(field "$T/lat-10k.out" notifications)") | $(field "$T/lat-10k.out" p50_us) | $(field "$T/lat-10k.out" p99_us) | $(field "$T/lat-10k.out" max_us) |

Memory (fresh daemons):

| what | RSS before KiB | RSS after KiB | bytes each |
|---|---:|---:|---:|
| 100,000 subscriptions (100 conns x 1,000, one channel) | $(fint "$(field "$T/mem.out" rss_conns_kib)") | $(fint "$(field "$T/mem.out" rss_subs_kib)") | $(field "$T/mem.out" bytes_per_sub) |
| 10,000 idle newline connections (conn-memory) | $(fint "$(field "$T/idle.out" rss_before_kib)") | $(fint "$(field "$T/idle.out" rss_idle_kib)") | $(fint "$(field "$T/idle.out" bytes_per_conn)") |
EOF
