#!/usr/bin/env bash
# Builds jrpcd and its sample plugins and serves in the foreground on the
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
scripts/deps.sh >&2
cmake -S . -B build/run -DCMAKE_BUILD_TYPE=RelWithDebInfo >/dev/null
cmake --build build/run -j"$(nproc)" --target jrpcd math echo sleep >&2
exec build/run/daemon/jrpcd "$@"
