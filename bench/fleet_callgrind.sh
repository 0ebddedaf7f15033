#!/usr/bin/env bash
# Instructions per publish on the publishing instance, [cluster] on against
# off (issue 24, point 6): jrpcd (workers = 2, the pubsub plugin, a Unix
# socket, newline framing) under valgrind callgrind, every thread counted
# (the workers, the broker's thread and the NATS client's). push-bench
# makes one connection with one subscription on it and publishes LO, then
# HI times, in two daemons, at most 2 unfinished; the difference in the
# daemon's instructions divided by the difference in publishes is the cost
# of one publish with its one delivery: start-up, plugin loading, the
# broker's connect and shutdown cancel out. The total moves from run to
# run (by about 10% off, up to 40% on: how many turns the event loops and
# the NATS client's threads take depends on timing);
# the parts printed beside it (inclusive, from callgrind_annotate) are the
# steady figures to compare. With [cluster] (on a
# nats-server on a free port, not under callgrind) each publish is also
# handed to the broker's thread and published there, all of which is in
# the figure (the broker does not send it back: the connection is NoEcho).
#
#   bench/fleet_callgrind.sh [build-dir] [modes]
#
# build-dir defaults to build/run, modes to "off on" (off alone for a
# build without [cluster], to compare the path with [cluster] absent
# against an older build). CG_LO and CG_HI set the publishes (200, 1000).
# With CG_KEEP=DIR the profiles stay there (MODE.N). Takes a minute or two.
set -euo pipefail
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$ROOT"
build=${1:-build/run}
read -r -a modes <<<"${2:-off on}"
lo=${CG_LO:-200}
hi=${CG_HI:-1000}
jrpcd=$build/daemon/jrpcd
pb=$build/bench/push-bench

# shellcheck source-path=SCRIPTDIR source=run_lib.sh
source "$ROOT/bench/run_lib.sh"
need_built "$build" "$jrpcd" "$pb" "$build/handlers/pubsub.so"
command -v valgrind >/dev/null || die "valgrind is missing (scripts/deps.sh installs it)"

own_tmp fleet_callgrind

NATS=
[[ " ${modes[*]} " != *" on "* ]] || start_nats

# ir MODE N: the daemon's instructions for a run of N publishes, in IR.
ir() {
  local mode=$1 n=$2 sock=$T/s.sock
  local out=${CG_KEEP:-$T}/$mode.$n
  rm -f "$sock" "$out"
  {
    printf '[server]\nworkers = 2\nplugin_dir = %s\n' "$build/handlers"
    printf '\n[plugin pubsub]\npath = pubsub.so\n'
    printf '\n[listen s]\nunix = %s\nframing = newline\n' "$sock"
    [[ "$mode" != on ]] || printf '\n[cluster]\nnats = nats://127.0.0.1:%s\n' "$NATS_PORT"
  } >"$T/c.conf"
  start_server "$mode.$n" 'jrpcd\[info\] serving ' \
    valgrind --tool=callgrind --callgrind-out-file="$out" "$jrpcd" -c "$T/c.conf" ||
    die "jrpcd did not start: $(cat "$T/fail.$SECTION")"
  local pid=$SPID
  run_rec "$mode.$n" "$pb" -u "$sock" -c 1 -s 1 -n "$n" -w 2 -T 240 -q ||
    die "push-bench failed: $(cat "$T/fail.$SECTION")"
  stop_server "$pid"
  [[ ! -s "$T/fail.$SECTION" ]] || die "$(cat "$T/fail.$SECTION")"
  IR=$(awk '/^(summary|totals):/ {print $2; exit}' "$out")
}

# The parts (inclusive: with what they call), as "FILE:FUNCTION" in
# callgrind_annotate's listing: the publish on the worker's thread, in it
# the hand-off to the broker's thread, that thread's turn (the subject, the
# copy, natsConnection_Publish), the NATS client's reading of the messages
# the broker sends and their delivery callback (0 here: NoEcho keeps this
# instance's own from coming back; kept to show it), and the NATS
# client's lock (it spins on trylock before it sleeps), wherever taken.
parts=(hub.c:hub_publish cluster.c:jrpcd_cluster_forward cluster.c:on_wake
  ???:natsConn_processMsg cluster.c:on_message ???:natsMutex_Lock)
# incl FILE: each part's inclusive instructions in profile FILE, one a line.
incl() {
  local listing part
  listing=$(callgrind_annotate --auto=no --inclusive=yes --threshold=100 "$1")
  for part in "${parts[@]}"; do
    awk -v want="$part" '{ f = $NF ~ /^\[/ ? $(NF - 1) : $NF; sub(/.*\//, "", f) }
      f == want { gsub(/,/, "", $1); n = $1; exit } END { print n + 0 }' <<<"$listing"
  done
}

printf '%-8s %12s %12s' cluster instructions per_publish
printf ' %s' "${parts[@]}"
printf '\n'
for mode in "${modes[@]}"; do
  [[ "$mode" == on || "$mode" == off ]] || die "a mode is on or off, not $mode"
  ir "$mode" "$lo"
  a=$IR
  mapfile -t pa < <(incl "${CG_KEEP:-$T}/$mode.$lo")
  ir "$mode" "$hi"
  b=$IR
  mapfile -t pb_ < <(incl "${CG_KEEP:-$T}/$mode.$hi")
  printf '%-8s %12d %12d' "$mode" $((b - a)) $(((b - a) / (hi - lo)))
  for i in "${!parts[@]}"; do
    printf ' %*d' "${#parts[i]}" $(((pb_[i] - pa[i]) / (hi - lo)))
  done
  printf '\n'
done
echo "(per publish: $((hi - lo)) publishes, $hi - $lo, one subscription each; the parts inclusive)"
[[ -z "$NATS" ]] || stop_nats
[[ ! -s "$T/fail.$SECTION" ]] || die "$(cat "$T/fail.$SECTION")"
