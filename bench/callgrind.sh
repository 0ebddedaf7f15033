#!/usr/bin/env bash
# Instructions per request (valgrind callgrind), stable on a noisy machine:
# each workload runs at two request counts and the difference is divided by
# the difference in requests, so start-up and warm-up cancel out.
#
#   bench/callgrind.sh [build-dir]      (default build/run)
set -euo pipefail
cd "$(dirname "$0")/.."
build=${1:-build/run}
bin=$build/bench/bench_pipeline
[ -x "$bin" ] || { echo "build first: ./scripts/run.sh (or cmake --build $build)" >&2; exit 1; }
command -v valgrind >/dev/null || { echo "valgrind is missing (scripts/deps.sh installs it)" >&2; exit 1; }

ir() { # mode-or-parser workload requests
  local sel=(--mode "$1")
  case $1 in native | simdjson | auto) sel=(--parser "$1") ;; esac
  valgrind --tool=callgrind --callgrind-out-file=/dev/null "$bin" \
    "${sel[@]}" --only "$2" --requests "$3" 2>&1 | awk '/refs:/ {gsub(",","",$NF); print $NF}'
}
# jsmn with its three validation modes, then the other backends (under
# valgrind simdjson runs its haswell kernel whatever the CPU has).
printf '%-14s %10s %10s %10s %10s %10s %10s\n' workload fused separate none native simdjson auto
for w in single named notification batch40 object30; do
  lo=2000; hi=12000
  [ "$w" = batch40 ] && lo=8000 && hi=48000
  row=$(printf '%-14s' "$w")
  for m in fused separate none native simdjson auto; do
    a=$(ir "$m" "$w" "$lo"); b=$(ir "$m" "$w" "$hi")
    row+=$(printf ' %10d' $(( (b - a) / (hi - lo) )))
  done
  echo "$row"
done
