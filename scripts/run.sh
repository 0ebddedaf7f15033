#!/usr/bin/env bash
# Builds jrpc and runs it: for now the library pipeline (jrpc-demo, stdin ->
# stdout, with the math module) and the in-process benchmark. The daemon
# replaces the demo when it lands.
#
#   ./scripts/run.sh                 sample requests, then the benchmark
#   producer | ./scripts/run.sh      serve the piped requests only
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/deps.sh >&2
cmake -S . -B build/run -DCMAKE_BUILD_TYPE=RelWithDebInfo >&2
cmake --build build/run -j"$(nproc)" --target jrpc-demo bench_pipeline >&2

if [ ! -t 0 ]; then
  exec build/run/bench/jrpc-demo
fi

samples='{"jsonrpc":"2.0","method":"math.add","params":[1,2],"id":1}
{"jsonrpc":"2.0","method":"math.divide","params":{"a":1,"b":4},"id":"q"}
{"jsonrpc":"2.0","method":"math.divide","params":[1,0],"id":3}
[{"jsonrpc":"2.0","method":"math.multiply","params":[6,7],"id":4},{"jsonrpc":"2.0","method":"math.add","params":[1,2]}]
{"jsonrpc":"2.0","method":"nope","id":5}
{"jsonrpc":"2.0","method":'
echo "== requests =="
printf '%s\n' "$samples"
echo "== replies =="
printf '%s\n' "$samples" | build/run/bench/jrpc-demo
echo
echo "== in-process pipeline benchmark (see BENCHMARKS.md) =="
build/run/bench/bench_pipeline
