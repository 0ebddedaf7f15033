#!/usr/bin/env bash
# Runs the libFuzzer targets of a JRPC_FUZZ build for a bounded time each.
#
#   tests/fuzz/run.sh BUILD SECONDS [TARGET...]
#
# BUILD is a build folder configured with CC=clang CXX=clang++
# -DJRPC_FUZZ=ON (scripts/test.sh uses build/fuzz); TARGET defaults to every
# fuzz_* binary built there. Each target runs for SECONDS on a fresh corpus
# folder (BUILD/fuzz-run/TARGET/corpus) seeded from tests/fuzz/corpus/, with
# tests/fuzz/regression/ and, for fuzz_diff, JSONTestSuite (../shared/
# testdata, when present; read, never copied) as extra seed folders, and
# the dictionary of its input format (jsonrpc.dict, config.dict,
# http.dict). Up to
# $FUZZ_JOBS (default: the CPU count) targets run at once. Prints one line
# per target; on a crash, the fuzzer's log and where the input was written
# (BUILD/fuzz-run/TARGET/artifacts/), and exits 1.
set -uo pipefail
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
[ $# -ge 2 ] || { echo "usage: $0 BUILD SECONDS [TARGET...]" >&2; exit 2; }
build=$(cd "$1" && pwd)
secs=$2
shift 2
bin=$build/tests/fuzz
targets=("$@")
if [ ${#targets[@]} -eq 0 ]; then
  for f in "$bin"/fuzz_*; do
    [ -x "$f" ] && [ -f "$f" ] && targets+=("$(basename "$f")")
  done
fi
[ ${#targets[@]} -gt 0 ] || { echo "fuzz: no targets in $bin" >&2; exit 2; }
jobs=${FUZZ_JOBS:-$(nproc)}
suite=$root/../shared/testdata/JSONTestSuite/test_parsing

run_one() {
  local t=$1 family=$1 dir=$build/fuzz-run/$1
  case $t in fuzz_request_*) family=fuzz_request ;; esac
  rm -rf "$dir"
  mkdir -p "$dir/corpus" "$dir/artifacts"
  cp "$here/corpus/$family/"* "$dir/corpus/"
  local opts=() extra=("$here/regression/$family")
  case $family in
  fuzz_request | fuzz_diff | fuzz_access) opts+=(-dict="$here/jsonrpc.dict") ;;
  fuzz_config) opts+=(-dict="$here/config.dict") ;;
  fuzz_http | fuzz_ws) opts+=(-dict="$here/http.dict") ;;
  esac
  if [ "$family" = fuzz_diff ] && [ -d "$suite" ]; then
    extra+=("$suite")
  fi
  (cd "$dir" && exec "$bin/$t" -max_total_time="$secs" -timeout=10 \
    -rss_limit_mb=2048 -print_final_stats=1 "${opts[@]}" \
    -artifact_prefix="$dir/artifacts/" "$dir/corpus" "${extra[@]}") \
    >"$dir/log" 2>&1
  echo $? >"$dir/rc"
}

running=0
for t in "${targets[@]}"; do
  [ -x "$bin/$t" ] || { echo "fuzz: $bin/$t not built" >&2; exit 2; }
  if [ "$running" -ge "$jobs" ]; then
    wait -n
    running=$((running - 1))
  fi
  run_one "$t" &
  running=$((running + 1))
done
wait

status=0
for t in "${targets[@]}"; do
  dir=$build/fuzz-run/$t
  family=$t
  case $t in fuzz_request_*) family=fuzz_request ;; esac
  rc=$(cat "$dir/rc" 2>/dev/null || echo 99)
  runs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$dir/log" | tail -1)
  cov=$(grep -Eo 'cov: [0-9]+ ft: [0-9]+ corp: [0-9]+/[^ ]+' "$dir/log" | tail -1)
  if [ "$rc" -eq 0 ]; then
    printf 'fuzz: %-24s ok: %s runs in %ss, %s\n' "$t" "${runs:-?}" "$secs" \
      "${cov:-?}"
  else
    status=1
    echo "fuzz: $t FAILED (exit $rc); its log:"
    tail -n 60 "$dir/log" | sed 's/^/    /'
    for a in "$dir/artifacts/"*; do
      [ -e "$a" ] && echo "fuzz: $t: crash input written to $a"
    done
    echo "fuzz: keep it in tests/fuzz/regression/$family/ (see tests/fuzz/README.md)"
  fi
done
exit $status
