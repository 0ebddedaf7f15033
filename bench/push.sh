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
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$ROOT"
build_arg=${1:-build/run}
build=$(realpath -e -- "$build_arg")
reps=${2:-3}
PUBS=${PUSH_PUBS:-1000}
jrpcd=$build/daemon/jrpcd
pb=$build/bench/push-bench
echo_server=$build/bench/echo-server
connmem=$build/bench/conn-memory

# shellcheck source-path=SCRIPTDIR source=run_lib.sh
source "$ROOT/bench/run_lib.sh"
for b in "$jrpcd" "$pb" "$echo_server" "$connmem" "$build/handlers/pubsub.so" "$build/handlers/math.so"; do
  [ -e "$b" ] || die "build first: cmake --build $build_arg ($b is missing)"
done
command -v socat >/dev/null || die "socat is missing (scripts/deps.sh installs it)"

own_tmp push

start_jrpcd() {
  printf '[server]\nworkers = 2\nplugin_dir = %s\nmax_connections = 20000\n' \
    "$build/handlers" >"$T/$1.conf"
  # math: conn-memory's call.
  printf '\n[plugin pubsub]\npath = pubsub.so\n\n[plugin math]\npath = math.so\n' >>"$T/$1.conf"
  printf '\n[listen s]\nunix = %s\nframing = newline\n' "$T/$1.sock" >>"$T/$1.conf"
  start_server "$1" 'jrpcd\[info\] serving ' "$jrpcd" -c "$T/$1.conf" || die "jrpcd did not start"
}

# bench KEY CMD...: one run of repetition REP; its RESULT kept for field
# and med (run_rec), a line of progress on stderr.
bench() {
  local key=$1
  shift
  run_rec "$key" "$@" || die "$key failed"
  printf 'push.sh: %s %d: %s\n' "$key" "$REP" "$(sed 's/^RESULT //' "$T/res/$key.$REP")" >&2
}

# ---- 1. fan-out against echo-server ----
start_jrpcd fan
jp=$SPID
start_server echo '^echo-server: listening on ' "$echo_server" -u "$T/echo.sock" -f newline -j 2 ||
  die "echo-server did not start"
ep=$SPID
bench size "$pb" -u "$T/fan.sock" -c 1 -s 1 -n "$PUBS"
bytes=$(awk -v b="$(field size notif_bytes)" 'BEGIN { printf "%.0f", b }')
for ((REP = 1; REP <= reps; REP++)); do
  bench fan_jrpcd "$pb" -u "$T/fan.sock" -c 100 -s 100 -n "$PUBS" -w 2 -p "$jp"
  bench fan_echo "$pb" -u "$T/echo.sock" -c 100 -s 100 -n "$PUBS" -w 2 -p "$ep" --echo "$bytes"
done
REP=1
stats=$(printf '{"jsonrpc":"2.0","method":"rpc.stats","id":1}\n' |
  socat -t 2 - "UNIX-CONNECT:$T/fan.sock")
spread=$(python3 -c 'import json, sys
w = json.loads(sys.argv[1])["result"]["workers"]
print(" / ".join(format(x["bytes_out"], ",") for x in w))' "$stats")

# ---- 2. latency at a modest rate ----
bench lat_100 "$pb" -u "$T/fan.sock" -c 100 -s 1 -n 2000 -r 500 -p "$jp"
bench lat_10k "$pb" -u "$T/fan.sock" -c 100 -s 100 -n 200 -r 20 -p "$jp"
stop_all_servers

# ---- 3. memory ----
start_jrpcd mem
bench mem "$pb" -u "$T/mem.sock" -c 100 -s 1000 -n 1 -p "$SPID"
stop_all_servers
start_jrpcd idle
bench idle "$connmem" -u "$T/idle.sock" -p "$SPID" -n 10000
stop_all_servers
[[ ! -s "$T/fail.$SECTION" ]] || die "$(cat "$T/fail.$SECTION")"

jn=$(med fan_jrpcd notif_per_cpu_s) en=$(med fan_echo notif_per_cpu_s)
# lat KEY: "p50 / p99 / max" of run KEY.
lat() { printf '%s / %s / %s' "$(fint "$(field "$1" p50_us)")" "$(fint "$(field "$1" p99_us)")" "$(fint "$(field "$1" max_us)")"; }
cat <<EOF
\`bench/push.sh $build_arg $reps\` · $(date -u '+%Y-%m-%d %H:%M UTC') · commit $(git rev-parse --short HEAD) · load average $(cut -d' ' -f1-3 /proc/loadavg) at the end

Fan-out: 100 connections x 100 subscriptions (one publish = 10,000
notifications of $bytes bytes), $(fint "$PUBS") publishes a run, at most 2 unfinished;
median of $reps runs each, alternating. Bytes written per worker (jrpcd,
rpc.stats after the runs): $spread.

| server | notifications per server CPU-s | server CPU s (user) | wall s | ratio jrpcd/echo |
|---|---:|---:|---:|---:|
| echo-server (\`!fan 100 $bytes\`) | $(fint "$en") | $(med fan_echo cpu_s) ($(med fan_echo user_s)) | $(med fan_echo secs) | |
| jrpcd (pubsub.publish) | $(fint "$jn") | $(med fan_jrpcd cpu_s) ($(med fan_jrpcd user_s)) | $(med fan_jrpcd secs) | $(ratio "$jn" "$en") |

Publish-to-receive latency (one run each, µs):

| subscriptions | publishes a second | notifications | p50 / p99 / max |
|---|---:|---:|---:|
| 100 (100 conns x 1) | 500 | $(fint "$(field lat_100 notifications)") | $(lat lat_100) |
| 10,000 (100 conns x 100) | 20 | $(fint "$(field lat_10k notifications)") | $(lat lat_10k) |

Memory (fresh daemons):

| what | RSS before KiB | RSS after KiB | bytes each |
|---|---:|---:|---:|
| 100,000 subscriptions (100 conns x 1,000, one channel) | $(fint "$(field mem rss_conns_kib)") | $(fint "$(field mem rss_subs_kib)") | $(field mem bytes_per_sub) |
| 10,000 idle newline connections (conn-memory) | $(fint "$(field idle rss_before_kib)") | $(fint "$(field idle rss_idle_kib)") | $(fint "$(field idle bytes_per_conn)") |
EOF
