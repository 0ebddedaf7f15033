#!/usr/bin/env bash
# Instructions per publish on the publishing instance, [cluster] on against
# off (issue 24, point 6): jrpcd (workers = 2, the pubsub plugin, a Unix
# socket, newline framing) under valgrind callgrind, every thread counted
# (the workers, the broker's thread and the NATS client's). push-bench
# makes one connection with one subscription on it and publishes LO, then
# HI times, in two daemons, at most 2 unfinished; the difference in the
# daemon's instructions divided by the difference in publishes is the cost
# of one publish with its one delivery: start-up, plugin loading, the
# broker's connect and shutdown cancel out. With [cluster] (on a
# nats-server on a free port, not under callgrind) each publish is also
# handed to the broker's thread, published there, and, as this instance
# holds the topic at the broker for its subscriber, comes back and is
# dropped as its own: all of that is in the figure.
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
for b in "$jrpcd" "$pb" "$build/handlers/pubsub.so"; do
  [ -e "$b" ] || die "build first: cmake --build $build ($b is missing)"
done
command -v valgrind >/dev/null || die "valgrind is missing (scripts/deps.sh installs it)"

own_tmp fleet_callgrind

nats_port=
if [[ " ${modes[*]} " == *" on "* ]]; then
  command -v nats-server >/dev/null || die "nats-server is missing (scripts/deps.sh installs it)"
  nats_port=$(free_port)
  start_server nats 'Server is ready' nats-server -a 127.0.0.1 -p "$nats_port" ||
    die "nats-server did not start: $(cat "$T/fail.$SECTION")"
  NATS=$SPID
fi

# ir MODE N: the daemon's instructions for a run of N publishes, in IR.
ir() {
  local mode=$1 n=$2 sock=$T/s.sock
  local out=${CG_KEEP:-$T}/$mode.$n
  rm -f "$sock" "$out"
  {
    printf '[server]\nworkers = 2\nplugin_dir = %s\n' "$build/handlers"
    printf '\n[plugin pubsub]\npath = pubsub.so\n'
    printf '\n[listen s]\nunix = %s\nframing = newline\n' "$sock"
    [[ "$mode" != on ]] || printf '\n[cluster]\nnats = nats://127.0.0.1:%s\n' "$nats_port"
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

printf '%-14s %14s %12s\n' cluster instructions per_publish
for mode in "${modes[@]}"; do
  [[ "$mode" == on || "$mode" == off ]] || die "a mode is on or off, not $mode"
  ir "$mode" "$lo"
  a=$IR
  ir "$mode" "$hi"
  b=$IR
  printf '%-14s %14d %12d\n' "$mode" $((b - a)) $(((b - a) / (hi - lo)))
done
echo "($((hi - lo)) publishes: $hi - $lo, one subscription each)"
if [[ -n "$nats_port" ]]; then
  kill -INT "$NATS" # nats-server exits 0 on SIGINT (1 on SIGTERM)
  wait "$NATS" || die "nats-server exited with status $? on SIGINT"
  forget_pid "$NATS"
fi
