#!/usr/bin/env bash
# bench/fleet.sh - server push across a fleet (issue 24, point 6) measured
# in one run, as markdown on stdout (progress on stderr):
#
#   bench/fleet.sh [build-dir] [runs]
#
# build-dir defaults to build/run (RelWithDebInfo with libnats: jrpcd, the
# pubsub plugin, push-bench), runs to 3 (tables show medians). Debian's
# nats-server on a free port; three jrpcd, each `workers = 2`, the pubsub
# plugin, a Unix socket, newline framing: A and B with [cluster] on that
# broker, C without [cluster] (the baseline). Nothing is pinned: the
# machine this was written for has 2 vCPUs, and three servers, the broker
# and the client on them would each get less than a core if pinned
# (push-bench, one thread, is the busiest); the CPU-seconds of each
# server, from /proc, are what the per-CPU figures divide by.
#
# Each run, in this order, every push-bench checking that every
# subscription received every publish exactly once (publisher and
# subscribers on different instances too: push-bench --publish-socket):
#
#  (a) Publish-to-receive latency at a paced rate (-r): FLEET_LAT_CONNS
#      connections x FLEET_LAT_SUBS subscriptions (100 x 1) at
#      FLEET_LAT_RATE publishes a second (500), FLEET_LAT_PUBS publishes
#      (2,000): subscribers on A and the publisher on A (A->A), subscribers
#      on B (A->B: through the broker), and on C (C->C, no [cluster]).
#  (b) Deliveries per second in window mode for each shape of
#      FLEET_SHAPES ("CONNSxSUBS:PUBLISHES:WINDOW ...", default
#      "100x100:1000:4 10x1:100000:64": a wide fan-out, 10,000 notifications
#      a publish, and a narrow one, 10, where the broker's cost per message
#      shows; WINDOW publishes at most unfinished, enough to cover the
#      broker's round trip while the wide one's queue stays below
#      max_push_bytes): publish on A with the subscribers on A (local) and
#      on B (through the broker); the CPU-seconds of A, B and nats-server
#      over the publish phase; deliveries per CPU-second of all three.
#  (c) The same on C (no [cluster]): what [cluster] being on costs local
#      delivery (on A, each publish also goes to the broker, whether or
#      not another instance holds its topic; NoEcho: not back to A).
#
# FLEET_WORKERS sets the jrpcd workers (2). Takes about a minute a run.
# The CPU-seconds of A, B and nats-server are summed in every row that
# publishes on A, local delivery included: A handing every publish to the
# broker is part of what [cluster] costs there.
# For the wide shape the wall-clock rate is push-bench's (one thread reads
# every notification); the per-CPU-second figures are the servers'.
set -euo pipefail
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$ROOT"
build_arg=${1:-build/run}
build=$(realpath -e -- "$build_arg")
reps=${2:-3}
WORKERS=${FLEET_WORKERS:-2}
LAT_CONNS=${FLEET_LAT_CONNS:-100} LAT_SUBS=${FLEET_LAT_SUBS:-1}
LAT_RATE=${FLEET_LAT_RATE:-500} LAT_PUBS=${FLEET_LAT_PUBS:-2000}
read -r -a SHAPES <<<"${FLEET_SHAPES:-100x100:1000:4 10x1:100000:64}"
jrpcd=$build/daemon/jrpcd
pb=$build/bench/push-bench

# shellcheck source-path=SCRIPTDIR source=run_lib.sh
source "$ROOT/bench/run_lib.sh"
need_built "$build_arg" "$jrpcd" "$pb" "$build/handlers/pubsub.so"
for s in "${SHAPES[@]}"; do
  [[ "$s" =~ ^[0-9]+x[0-9]+:[0-9]+:[0-9]+$ ]] || die "FLEET_SHAPES: $s is not CONNSxSUBS:PUBLISHES:WINDOW"
done

own_tmp fleet

start_nats

# start_jrpcd NAME [cluster]: jrpcd on $T/NAME.sock; sets SPID.
start_jrpcd() {
  {
    printf '[server]\nworkers = %s\nplugin_dir = %s\nmax_connections = 20000\n' \
      "$WORKERS" "$build/handlers"
    printf '\n[plugin pubsub]\npath = pubsub.so\n'
    printf '\n[listen s]\nunix = %s\nframing = newline\n' "$T/$1.sock"
    [[ "${2:-}" != cluster ]] || printf '\n[cluster]\nnats = nats://127.0.0.1:%s\n' "$NATS_PORT"
  } >"$T/$1.conf"
  start_server "$1" 'jrpcd\[info\] serving ' "$jrpcd" -c "$T/$1.conf" ||
    die "jrpcd $1 did not start: $(cat "$T/fail.$SECTION")"
}
start_jrpcd A cluster
A=$SPID
start_jrpcd B cluster
B=$SPID
start_jrpcd C
C=$SPID

# bench KEY SUB PUB ARGS...: push-bench, subscribers on SUB, the publisher
# on PUB, the CPU time of A, B and nats-server (cpu_p1_s to cpu_p3_s; C's
# for the runs on C); its RESULT kept for field and med.
bench() {
  local key=$1 sub=$2 pubto=$3
  shift 3
  local -a pids=(-p "$A" -p "$B" -p "$NATS")
  [[ "$sub" != C ]] || pids=(-p "$C")
  run_rec "$key" "$pb" -u "$T/$sub.sock" --publish-socket "$T/$pubto.sock" \
    "${pids[@]}" -T 120 -q "$@" || die "$key failed: $(cat "$T/fail.$SECTION")"
  printf 'fleet.sh: %s %d: %s\n' "$key" "$REP" "$(sed 's/^RESULT //' "$T/res/$key.$REP")" >&2
}

# Each run starts the rows of a table at another of the three paths, so
# that none is always the first (or last) after the others' load.
paths=(AA AB CC AA AB)
for ((REP = 1; REP <= reps; REP++)); do
  order=("${paths[@]:$(((REP - 1) % 3)):3}")
  for path in "${order[@]}"; do
    bench "lat_$path" "${path:1:1}" "${path:0:1}" -c "$LAT_CONNS" -s "$LAT_SUBS" \
      -n "$LAT_PUBS" -r "$LAT_RATE"
  done
  for s in "${SHAPES[@]}"; do
    IFS=x: read -r conns subs n window <<<"$s"
    for path in "${order[@]}"; do
      bench "tp_${conns}x${subs}_$path" "${path:1:1}" "${path:0:1}" -c "$conns" -s "$subs" \
        -n "$n" -w "$window"
    done
  done
done
REP=1
# The daemons before the broker: they close their broker connection last.
for pid in "$A" "$B" "$C"; do
  stop_server "$pid"
done
stop_nats
[[ ! -s "$T/fail.$SECTION" ]] || die "$(cat "$T/fail.$SECTION")"

# lat KEY: "p50 / p99 / max" (medians).
lat() { printf '%s / %s / %s' "$(fint "$(med "$1" p50_us)")" "$(fint "$(med "$1" p99_us)")" "$(fint "$(med "$1" max_us)")"; }
# per_s KEY: deliveries a second (wall), the median over the runs.
per_s() { awk -v n="$(med "$1" notifications)" -v s="$(med "$1" secs)" 'BEGIN { printf "%.0f", n / s }'; }
# cpu KEY K: the K-th server's CPU-seconds (median), or "-".
cpu() { fdec "$(med "$1" "cpu_p$2_s")" 2; }

cat <<EOF
\`bench/fleet.sh $build_arg $reps\` · $(date -u '+%Y-%m-%d %H:%M UTC') · commit $(git rev-parse --short HEAD) · $(nproc) CPUs, load average $(cut -d' ' -f1-3 /proc/loadavg) at the end

A and B: jrpcd with [cluster] on one nats-server ($(nats-server --version 2>&1)); C: jrpcd without
[cluster]; workers = $WORKERS each; nothing pinned. Medians of $reps runs, each run
all rows in turn (starting at another path each run). Every row checked
every notification received exactly once.

(a) Publish-to-receive latency, $LAT_CONNS connections x $LAT_SUBS subscription(s), $LAT_RATE
publishes a second, $(fint "$LAT_PUBS") publishes (µs):

| path | p50 / p99 / max | ratio of p50 to C->C |
|---|---:|---:|
| A->A (same instance, [cluster] on) | $(lat lat_AA) | $(ratio "$(med lat_AA p50_us)" "$(med lat_CC p50_us)") |
| A->B (through the broker) | $(lat lat_AB) | $(ratio "$(med lat_AB p50_us)" "$(med lat_CC p50_us)") |
| C->C (no [cluster]) | $(lat lat_CC) | 1.00 |
EOF
for s in "${SHAPES[@]}"; do
  IFS=x: read -r conns subs n window <<<"$s"
  k=tp_${conns}x$subs
  local_pc=$(med "${k}_AA" notif_per_cpu_s) c_pc=$(med "${k}_CC" notif_per_cpu_s)
  cat <<EOF

(b, c) Deliveries, window mode (at most $window publishes unfinished): $conns
connections x $subs subscription(s) (one publish = $(fint $((conns * subs))) notifications),
$(fint "$n") publishes; server CPU-seconds over the publish phase:

| path | deliveries a second | jrpcd A CPU-s | jrpcd B CPU-s | nats-server CPU-s | deliveries per CPU-s (all) | per CPU-s against local on A |
|---|---:|---:|---:|---:|---:|---:|
| local: publish on A, subscribers on A | $(fint "$(per_s "${k}_AA")") | $(cpu "${k}_AA" 1) | $(cpu "${k}_AA" 2) | $(cpu "${k}_AA" 3) | $(fint "$local_pc") | 1.00 |
| broker: publish on A, subscribers on B | $(fint "$(per_s "${k}_AB")") | $(cpu "${k}_AB" 1) | $(cpu "${k}_AB" 2) | $(cpu "${k}_AB" 3) | $(fint "$(med "${k}_AB" notif_per_cpu_s)") | $(ratio "$(med "${k}_AB" notif_per_cpu_s)" "$local_pc") |
| no [cluster]: publish on C, subscribers on C | $(fint "$(per_s "${k}_CC")") | C: $(cpu "${k}_CC" 1) | | | $(fint "$c_pc") | $(ratio "$c_pc" "$local_pc") |

[cluster] on, local delivery against C: $(ratio "$local_pc" "$c_pc") of C's deliveries per CPU-second, $(ratio "$(per_s "${k}_AA")" "$(per_s "${k}_CC")") of its deliveries a second.
EOF
done
