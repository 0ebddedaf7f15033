#!/usr/bin/env bash
# Instructions per delivered notification (server push, issue 23): jrpcd
# (workers = 2, the pubsub plugin, a Unix socket, newline framing) under
# valgrind callgrind, every thread counted. push-bench makes 10 connections
# x 100 subscriptions to one channel (one publish = 1,000 notifications)
# and publishes LO, then HI times, in two daemons, at most 2 publishes
# unfinished; the difference in the daemon's instructions divided by the
# difference in notifications delivered is the cost of one notification:
# start-up, plugin loading, the subscriptions and shutdown cancel out, and
# what is left is the whole fan-out path (the publish call, the hub's
# inboxes and wake-ups, the fan-out over the subscription list, framing,
# the writes and the event loop around them). The same for echo-server
# writing frames of the notifications' mean size ("!fan 100 BYTES" per
# connection and publish) as the baseline.
#
#   bench/push_callgrind.sh [build-dir]
#
# build-dir defaults to build/run. With CG_KEEP=DIR the profiles stay
# there (KIND.N), for callgrind_annotate. Takes a minute or two.
set -euo pipefail
cd "$(dirname "$0")/.."
build=${1:-build/run}
lo=${CG_LO:-20}
hi=${CG_HI:-80}
jrpcd=$build/daemon/jrpcd
pb=$build/bench/push-bench
echo_server=$build/bench/echo-server
for b in "$jrpcd" "$pb" "$echo_server" "$build/handlers/pubsub.so"; do
  [ -e "$b" ] || {
    echo "build first: cmake --build $build ($b is missing)" >&2
    exit 1
  }
done
command -v valgrind >/dev/null || {
  echo "valgrind is missing (scripts/deps.sh installs it)" >&2
  exit 1
}

T=$(mktemp -d)
server=
cleanup() {
  if [ -n "$server" ]; then kill -TERM "$server" 2>/dev/null || true; fi
  rm -rf "$T"
}
trap cleanup EXIT

# ir KIND N: the server's instructions for a run of N publishes.
ir() {
  local kind=$1 n=$2 sock=$T/s.sock i
  local out=${CG_KEEP:-$T}/$kind.$n
  local -a extra=()
  rm -f "$sock" "$out"
  : >"$T/server.log"
  if [ "$kind" = echo ]; then
    valgrind --tool=callgrind --callgrind-out-file="$out" "$echo_server" \
      -u "$sock" -f newline -j 2 >"$T/server.log" 2>&1 &
    extra=(--echo "$(cat "$T/bytes")")
  else
    printf '[server]\nworkers = 2\nplugin_dir = %s\n' "$build/handlers" >"$T/c.conf"
    printf '\n[plugin pubsub]\npath = pubsub.so\n' >>"$T/c.conf"
    printf '\n[listen s]\nunix = %s\nframing = newline\n' "$sock" >>"$T/c.conf"
    valgrind --tool=callgrind --callgrind-out-file="$out" "$jrpcd" \
      -c "$T/c.conf" >"$T/server.log" 2>&1 &
  fi
  server=$!
  local ready='^echo-server: listening on |jrpcd\[info\] serving '
  for ((i = 0; i < 600; i++)); do
    grep -Eq "$ready" "$T/server.log" && break
    sleep 0.1
  done
  grep -Eq "$ready" "$T/server.log" || {
    cat "$T/server.log" >&2
    echo "server did not start" >&2
    exit 1
  }
  timeout 300 "$pb" -u "$sock" -c 10 -s 100 -n "$n" -w 2 -T 240 -q "${extra[@]}" \
    >"$T/bench.out" 2>&1 || {
    cat "$T/bench.out" >&2
    exit 1
  }
  # The notifications' mean size, for echo-server's frames (ir runs in
  # a subshell: a file carries it).
  if [ ! -s "$T/bytes" ]; then
    sed -n 's/^RESULT.* notif_bytes=\([^ ]*\).*/\1/p' "$T/bench.out" |
      awk '{ printf "%.0f", $1 }' >"$T/bytes"
  fi
  kill -TERM "$server"
  wait "$server" || true
  server=
  awk '/^(summary|totals):/ {print $2; exit}' "$out"
}

notes=$(((hi - lo) * 1000))
printf '%-12s %14s %14s\n' server instructions per_notification
for kind in jrpcd echo; do
  a=$(ir "$kind" "$lo")
  b=$(ir "$kind" "$hi")
  printf '%-12s %14d %14d\n' "$kind" $((b - a)) $(((b - a) / notes))
done
echo "($notes notifications of $(cat "$T/bytes") bytes: $hi - $lo publishes x 10 connections x 100 subscriptions)"
