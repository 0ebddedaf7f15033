#!/usr/bin/env bash
# Instructions per request of each parser backend (valgrind callgrind), for
# every workload of bench_parsers: parse + envelope + full params read.
# As in bench/callgrind.sh, each workload runs at two request counts and the
# difference in instructions is divided by the difference in requests, so
# start-up, frame building and warm-up cancel out. Two runs at a time.
#
#   bench/parsers_callgrind.sh [build-dir]      (default build/run)
#
# valgrind does not emulate AVX-512: under it simdjson picks its haswell
# kernel even where it runs icelake natively, so simdjson's (and auto's)
# counts here are the haswell kernel's.
set -euo pipefail
cd "$(dirname "$0")/.."
build=${1:-build/run}
bin=$build/bench/bench_parsers
[ -x "$bin" ] || { echo "build first: cmake --build $build --target bench_parsers" >&2; exit 1; }
command -v valgrind >/dev/null || { echo "valgrind is missing (scripts/deps.sh installs it)" >&2; exit 1; }

kernel_of() { sed -n 's/.*kernel=\([^ ]*\).*/\1/p'; }
native=$("$bin" --only add --backend simdjson --requests 1 | kernel_of)

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
"$bin" --list >"$tmp/list"

# Per workload: frames enough that the difference covers ~300 KB of input
# (at least 8 frames), so the big frames stay quick under valgrind.
while read -r name bytes req; do
  d=$((300000 / bytes))
  ((d < 8)) && d=8
  lo=$((d / 4))
  ((lo < 2)) && lo=2
  hi=$((lo + d))
  for be in jsmn native simdjson auto; do
    echo "$name $be $((lo * req)) lo"
    echo "$name $be $((hi * req)) hi"
  done
done <"$tmp/list" >"$tmp/jobs"

export bin tmp
# shellcheck disable=SC2016
xargs -P2 -L1 bash -c '
  valgrind --tool=callgrind --callgrind-out-file=/dev/null "$bin" \
    --only "$0" --backend "$1" --requests "$2" >"$tmp/$0.$1.$3" 2>&1 ||
    { echo "failed: $0 $1 $2" >&2; cat "$tmp/$0.$1.$3" >&2; exit 255; }
' <"$tmp/jobs"

refs() { awk '/refs:/ {gsub(",", "", $NF); print $NF}' "$1"; }
field() { sed -n "s/.* $2=\([^ ]*\).*/\1/p" "$1"; }
per_req() { # workload backend
  local a=$tmp/$1.$2.lo b=$tmp/$1.$2.hi
  echo $((($(refs "$b") - $(refs "$a")) / ($(field "$b" requests) - $(field "$a" requests))))
}

vg=$(kernel_of <"$tmp/add.simdjson.lo")
from=$(field "$tmp/add.auto.lo" simdjson_from)
echo "jrpc parser backends: instructions per request (callgrind), parse + envelope + full params read"
echo "simdjson kernel under valgrind: $vg (natively on this machine: $native;"
echo "  valgrind cannot run AVX-512, so where simdjson runs icelake natively it"
if [ "$from" = never ]; then
  echo "  runs haswell here); auto: native for every frame with this kernel"
else
  echo "  runs haswell here); auto: simdjson from $from bytes for this kernel"
fi
echo
printf '%-14s %6s %5s %10s %10s %10s %10s %8s\n' workload bytes reqs jsmn native simdjson auto sj/native
cross=
while read -r name bytes req; do
  j=$(per_req "$name" jsmn)
  n=$(per_req "$name" native)
  s=$(per_req "$name" simdjson)
  a=$(per_req "$name" auto)
  printf '%-14s %6d %5d %10d %10d %10d %10d %8s\n' "$name" "$bytes" "$req" "$j" "$n" "$s" "$a" \
    "$(awk -v s="$s" -v n="$n" 'BEGIN {printf "%.2f", s / n}')"
  case $name in
  size*)
    if ((s < n)); then
      [ -n "$cross" ] || cross=$bytes
    else
      cross=
    fi
    ;;
  esac
done <"$tmp/list"
echo "(per request: batchN and batch40 divide a batch's cost by its calls; sizeN is one request of ~N bytes)"
if [ -n "$cross" ]; then
  echo "crossover in instructions ($vg): simdjson executes fewer than native from the $cross-byte frame on"
else
  echo "crossover in instructions ($vg): simdjson never executes fewer than native in the size sweep"
fi
