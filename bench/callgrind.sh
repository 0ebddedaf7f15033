#!/usr/bin/env bash
# Instructions per request (valgrind callgrind), stable on a noisy machine:
# each workload runs at two request counts and the difference is divided by
# the difference in requests, so start-up and warm-up cancel out.
#
#   bench/callgrind.sh [build-dir] [columns] [workloads]
#
# build-dir defaults to build/run; columns (quoted, space-separated) to
# "fused separate none native simdjson auto"; workloads to every one of
# bench_pipeline's ("single named notification batch40 batch100 object30
# echo1k"). E.g. the native backend alone:
#   bench/callgrind.sh build/run native "single named notification batch100 echo1k"
# CG_VALIDATE=1 checks math's params first, as validate_params = yes does
# in the daemon (bench_pipeline --validate).
set -euo pipefail
cd "$(dirname "$0")/.."
build=${1:-build/run}
read -r -a cols <<<"${2:-fused separate none native simdjson auto}"
read -r -a wls <<<"${3:-single named notification batch40 batch100 object30 echo1k}"
bin=$build/bench/bench_pipeline
[ -x "$bin" ] || { echo "build first: ./scripts/run.sh (or cmake --build $build)" >&2; exit 1; }
command -v valgrind >/dev/null || { echo "valgrind is missing (scripts/deps.sh installs it)" >&2; exit 1; }

ir() { # mode-or-parser workload requests
  local sel=(--mode "$1")
  case $1 in native | simdjson | auto) sel=(--parser "$1") ;; esac
  valgrind --tool=callgrind --callgrind-out-file=/dev/null "$bin" \
    "${sel[@]}" ${CG_VALIDATE:+--validate} --only "$2" --requests "$3" 2>&1 | awk '/refs:/ {gsub(",","",$NF); print $NF}'
}
# jsmn with its three validation modes, then the other backends (under
# valgrind simdjson runs its haswell kernel whatever the CPU has).
head=$(printf '%-14s' workload)
for m in "${cols[@]}"; do head+=$(printf ' %10s' "$m"); done
echo "$head"
for w in "${wls[@]}"; do
  lo=2000; hi=12000
  case $w in batch40) lo=8000 hi=48000 ;; batch100) lo=10000 hi=60000 ;; esac
  row=$(printf '%-14s' "$w")
  for m in "${cols[@]}"; do
    a=$(ir "$m" "$w" "$lo"); b=$(ir "$m" "$w" "$hi")
    row+=$(printf ' %10d' $(( (b - a) / (hi - lo) )))
  done
  echo "$row"
done
