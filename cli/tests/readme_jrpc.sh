#!/usr/bin/env bash
# readme_jrpc.sh JRPCD HANDLERS_DIR BUILD_DIR REPO_ROOT
#
# Runs README.md's jrpc examples verbatim, with the jrpc that
# `cmake --install BUILD_DIR` lays out first on PATH, against a jrpcd
# serving what the README says: $XDG_RUNTIME_DIR/jrpcd.sock (XDG_RUNTIME_DIR
# is this test's directory: tests/cli/sockpath.sh covers the fallback) and
# 127.0.0.1:7400 with newline framing (the built-in config), 127.0.0.1:7401
# with length framing (the installed config). Each command's stdout and
# stderr together must be what the README shows under it, byte for byte.
#
# The examples sit between "<!-- jrpc-examples ... -->" and
# "<!-- /jrpc-examples -->" in ```sh blocks: a "$ " line is a command, the
# lines up to the next command or ``` its output. Ports 7400 and 7401 are
# in the commands; when either is taken the test is skipped (exit 77), as
# when /run/jrpcd/jrpcd.sock exists (jrpc would prefer it).
set -euo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
# shellcheck source-path=SCRIPTDIR source=../../tests/cli/lib.sh
source "$here/../../tests/cli/lib.sh"

(($# == 4)) || die "usage: $0 JRPCD HANDLERS_DIR BUILD_DIR REPO_ROOT"
JRPCD=$(realpath -e -- "$1") || die "jrpcd not found: $1"
HANDLERS=$(realpath -e -- "$2") || die "handlers not found: $2"
BUILD=$(realpath -e -- "$3") || die "build dir not found: $3"
README=$(realpath -e -- "$4/README.md") || die "README.md not found in $4"
readonly SKIP=77

skip() {
  echo "SKIP: $*"
  exit "$SKIP"
}

# $T/cmd.N and $T/want.N for every example, in order; prints the count.
extract() {
  awk -v dir="$T" '
    /^<!-- jrpc-examples/ { on = 1; next }
    /^<!-- \/jrpc-examples -->/ { on = 0; done = 1; next }
    !on { next }
    /^```sh$/ { inblock = 1; next }
    /^```/ { if (inblock && !cur) { print "empty block at line " NR > "/dev/stderr"; exit 2 }
             inblock = 0; cur = 0; next }
    inblock && /^\$ / { n++; cur = n; print substr($0, 3) > (dir "/cmd." n); printf "" > (dir "/want." n); next }
    inblock && cur { print > (dir "/want." cur) }
    END { if (!done || !n) { print "no jrpc-examples section with commands" > "/dev/stderr"; exit 2 }
          print n }
  ' "$README"
}

port_busy() {
  timeout 2 bash -c "exec 3<>/dev/tcp/127.0.0.1/$1" 2>/dev/null
}

main() {
  setup_tmp
  local n i rc
  n=$(extract) || die "README.md: the jrpc examples cannot be read"
  pass "README.md: $n jrpc examples"
  [[ -e /run/jrpcd/jrpcd.sock ]] && skip "/run/jrpcd/jrpcd.sock exists; jrpc's default would be it"
  port_busy 7400 && skip "127.0.0.1:7400 is in use"
  port_busy 7401 && skip "127.0.0.1:7401 is in use"
  timeout 120 cmake --install "$BUILD" --prefix "$T/root" >"$T/install.log" 2>&1 ||
    { show "$T/install.log"; die "cmake --install failed"; }
  cat >"$T/jrpcd.conf" <<EOF
[server]
workers = 2
plugin_dir = $HANDLERS
[listen local]
unix = $T/jrpcd.sock
mode = 0600
[listen tcp]
tcp = 127.0.0.1:7400
[listen tcp-length]
tcp = 127.0.0.1:7401
framing = length
[plugin math]
path = math.so
[plugin echo]
path = echo.so
EOF
  "$JRPCD" -c "$T/jrpcd.conf" >"$T/daemon.out" 2>"$T/daemon.err" &
  PID=$!
  DAEMON_PIDS+=("$PID")
  for ((i = 0; i < START_LIMIT_S * 20; i++)); do
    if ! alive "$PID"; then
      grep -q "bind: Address already in use" "$T/daemon.err" && skip "a port was taken while jrpcd started"
      show "$T/daemon.err"
      die "jrpcd exited instead of serving"
    fi
    [[ -S $T/jrpcd.sock ]] && port_busy 7400 && port_busy 7401 && break
    sleep 0.05
  done
  for ((i = 1; i <= n; i++)); do
    rc=0
    env -u JRPC_SOCKET -u JRPC_ADDRESS XDG_RUNTIME_DIR="$T" PATH="$T/root/bin:$PATH" \
      timeout 20 bash -c "$(cat "$T/cmd.$i")" >"$T/got.$i" 2>&1 || rc=$?
    ((rc != 124)) || fail "example $i did not finish within 20 s"
    check_sanitizer "$T/got.$i" "example $i" || true
    if cmp -s "$T/want.$i" "$T/got.$i"; then
      pass "example $i (exit $rc): $(cat "$T/cmd.$i")"
    else
      fail "example $i printed something else than README.md shows: $(cat "$T/cmd.$i")"
      diff -u --label README.md --label actual "$T/want.$i" "$T/got.$i" >&2 || true
    fi
  done
  stop_daemon daemon "$PID" "$T/jrpcd.sock"
  finish
}

main "$@"
