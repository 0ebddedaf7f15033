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
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$ROOT"
build=${1:-build/run}
lo=${CG_LO:-20}
hi=${CG_HI:-80}
jrpcd=$build/daemon/jrpcd
pb=$build/bench/push-bench
echo_server=$build/bench/echo-server

# shellcheck source-path=SCRIPTDIR source=run_lib.sh
source "$ROOT/bench/run_lib.sh"
for b in "$jrpcd" "$pb" "$echo_server" "$build/handlers/pubsub.so"; do
  [ -e "$b" ] || die "build first: cmake --build $build ($b is missing)"
done
command -v valgrind >/dev/null || die "valgrind is missing (scripts/deps.sh installs it)"

own_tmp callgrind

# ir KIND N: the server's instructions for a run of N publishes, in IR.
ir() {
  local kind=$1 n=$2 sock=$T/s.sock
  local out=${CG_KEEP:-$T}/$kind.$n
  local -a extra=() cg=(valgrind --tool=callgrind --callgrind-out-file="$out")
  rm -f "$sock" "$out"
  if [ "$kind" = echo ]; then
    start_server "$kind.$n" '^echo-server: listening on ' "${cg[@]}" "$echo_server" \
      -u "$sock" -f newline -j 2 || die "echo-server did not start"
    extra=(--echo "$BYTES")
  else
    printf '[server]\nworkers = 2\nplugin_dir = %s\n' "$build/handlers" >"$T/c.conf"
    printf '\n[plugin pubsub]\npath = pubsub.so\n' >>"$T/c.conf"
    printf '\n[listen s]\nunix = %s\nframing = newline\n' "$sock" >>"$T/c.conf"
    start_server "$kind.$n" 'jrpcd\[info\] serving ' "${cg[@]}" "$jrpcd" -c "$T/c.conf" ||
      die "jrpcd did not start"
  fi
  run_rec "$kind.$n" "$pb" -u "$sock" -c 10 -s 100 -n "$n" -w 2 -T 240 -q "${extra[@]}" ||
    die "push-bench failed"
  stop_all_servers
  [[ ! -s "$T/fail.$SECTION" ]] || die "$(cat "$T/fail.$SECTION")"
  IR=$(awk '/^(summary|totals):/ {print $2; exit}' "$out")
}

notes=$(((hi - lo) * 1000))
BYTES=
printf '%-12s %14s %14s\n' server instructions per_notification
for kind in jrpcd echo; do
  ir "$kind" "$lo"
  a=$IR
  ir "$kind" "$hi"
  b=$IR
  # The notifications' mean size, for echo-server's frames.
  [ -n "$BYTES" ] || BYTES=$(awk -v b="$(field "jrpcd.$hi" notif_bytes)" 'BEGIN { printf "%.0f", b }')
  printf '%-12s %14d %14d\n' "$kind" $((b - a)) $(((b - a) / notes))
done
echo "($notes notifications of $BYTES bytes: $hi - $lo publishes x 10 connections x 100 subscriptions)"
