#!/usr/bin/env bash
# Builds everything and runs every test, twice: an optimised build with
# warnings as errors, then an AddressSanitizer + UBSan build; runs the
# concurrency test under ThreadSanitizer; checks that a
# build without simdjson and OpenSSL still works; then fuzzes (tests/fuzz) for a
# bounded time. This is the command CI runs (.ci/run).
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/deps.sh test # the build's packages and the test tools
jobs=$(nproc)

cmake -S . -B build/test -DCMAKE_BUILD_TYPE=RelWithDebInfo -DJRPC_WERROR=ON >/dev/null
cmake --build build/test -j"$jobs"
ctest --test-dir build/test --output-on-failure -j"$jobs"

cmake -S . -B build/asan -DCMAKE_BUILD_TYPE=Debug -DJRPC_SANITIZE=ON -DJRPC_WERROR=ON >/dev/null
cmake --build build/asan -j"$jobs"
ASAN_OPTIONS=detect_leaks=1:abort_on_error=1 UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1 \
  ctest --test-dir build/asan --output-on-failure -j"$jobs"

# ThreadSanitizer (gcc's): handlers running on several workers at once,
# kv hammered from connections on three workers and per-worker slots
# through reloads (tests/e2e/e2e_workers); a report in the daemon's log
# fails it. Only that test and what it loads are built (about 30 s of one
# CPU); it runs in a few seconds.
cmake -S . -B build/tsan -DCMAKE_BUILD_TYPE=RelWithDebInfo -DJRPC_TSAN=ON -DJRPC_WERROR=ON >/dev/null
cmake --build build/tsan -j"$jobs" --target e2e_workers test_push pubsub sleep fx_push
# Server push: the inbox under eight producers (test_push), and eight
# threads of a plugin publishing into the daemon (cli_push_burst).
ctest --test-dir build/tsan -R '^(e2e_workers|test_push|cli_push_burst)$' --output-on-failure

# -DJRPC_SIMDJSON=OFF -DJRPC_TLS=OFF -DJRPC_NATS=OFF: the optional parts
# left out (no simdjson: parser = auto meaning native; no OpenSSL; no NATS).
cmake -S . -B build/nosimd -DCMAKE_BUILD_TYPE=RelWithDebInfo -DJRPC_SIMDJSON=OFF -DJRPC_TLS=OFF -DJRPC_NATS=OFF -DJRPC_WERROR=ON >/dev/null
cmake --build build/nosimd -j"$jobs"
# Not the scale tests (tests/scale, a minute of HAProxy and restarts): they
# exercise processes and sockets, not the parts this build leaves out, and
# the two runs above have them.
ctest --test-dir build/nosimd --output-on-failure -j"$jobs" -LE scale

# libFuzzer targets (clang), each run for FUZZ_SECONDS (30) on a fresh copy
# of its in-tree seeds; a crash fails CI and names the input it wrote.
CC=clang CXX=clang++ cmake -S . -B build/fuzz -DCMAKE_BUILD_TYPE=RelWithDebInfo -DJRPC_FUZZ=ON -DJRPC_WERROR=ON >/dev/null
cmake --build build/fuzz --target fuzz -j"$jobs"
ctest --test-dir build/fuzz -L fuzz --output-on-failure -j"$jobs"
tests/fuzz/run.sh build/fuzz "${FUZZ_SECONDS:-30}"
