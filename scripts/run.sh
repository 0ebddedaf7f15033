#!/usr/bin/env bash
# Installs what building and serving need (scripts/deps.sh run: no test
# tools), builds jrpcd, its sample plugins and jrpc, the client, prints the
# commands to try next, and serves in the foreground on the
# sample config (conf/jrpcd.conf is the documented one; this uses the
# built-in default, which points at the plugins of this build):
#   a Unix socket at $XDG_RUNTIME_DIR/jrpcd.sock (else in the private
#   ${TMPDIR:-/tmp}/jrpcd-UID/), TCP 127.0.0.1:7400,
#   newline framing, plugins math, echo and sleep.
# Ctrl-C (SIGINT) or SIGTERM stops it gracefully; SIGHUP reloads plugins.
#
#   ./scripts/run.sh                 serve
#   ./scripts/run.sh -c FILE         serve with another config
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/deps.sh run >&2
# No tests here (they need cmocka, which is the test command's); bench/'s
# tools still build in this tree on demand (BENCHMARKS.md uses build/run).
cmake -S . -B build/run -DCMAKE_BUILD_TYPE=RelWithDebInfo -DJRPC_TESTS=OFF >/dev/null
cmake --build build/run -j"$(nproc)" --target jrpcd math echo sleep jrpc_cli >&2
# The README's next steps; jrpc finds the built-in config's socket itself.
cat >&2 <<EOF
run.sh: jrpcd serves below until Ctrl-C. In a second terminal, jrpc (the
client built here) calls it:
  export PATH="$PWD/build/run/cli:\$PATH"
  jrpc math.add 1 2     # 3
  jrpc -l               # the methods it serves
EOF
exec build/run/daemon/jrpcd "$@"
