#!/usr/bin/env bash
# readme_push.sh JRPCD HANDLERS_DIR BUILD_DIR REPO_ROOT JRPC
#
# Runs README.md's server push example verbatim ("<!-- push-example" to
# "<!-- /push-example -->", two ```sh blocks of one "$ " command each, as
# readme_lib.sh reads them) against a jrpcd serving what the installed
# config does there: kv on 127.0.0.1:7400, newline framing. The first
# command (jrpc --follow) runs in the background with this build's jrpc
# first on PATH; once rpc.stats counts its subscription, the second
# (socat's kv.set) runs; each one's stdout must be what the README shows
# under it, byte for byte, and SIGINT (the README's Ctrl-C) must end the
# first with exit status 0 and nothing on stderr. A busy port 7400 skips
# the test (exit 77).
set -euo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
# shellcheck source-path=SCRIPTDIR source=../../tests/cli/lib.sh
source "$here/../../tests/cli/lib.sh"

(($# == 5)) || die "usage: $0 JRPCD HANDLERS_DIR BUILD_DIR REPO_ROOT JRPC"
JRPCD=$(realpath -e -- "$1") || die "jrpcd not found: $1"
HANDLERS=$(realpath -e -- "$2") || die "handlers not found: $2"
README=$(realpath -e -- "$4/README.md") || die "README.md not found in $4"
JRPC=$(realpath -e -- "$5") || die "jrpc not found: $5"
readonly PORT=7400 SKIP=77 MARKER=push-example
# shellcheck source-path=SCRIPTDIR source=../../tests/cli/readme_lib.sh
source "$here/../../tests/cli/readme_lib.sh"

subscriptions() {
  "$JRPC" -u "$T/jrpcd.sock" --compact rpc.stats |
    python3 -c 'import json,sys; print(json.load(sys.stdin)["push"]["subscriptions"])'
}

main() {
  setup_tmp
  need_cmd socat
  parse_examples
  ((${#CMDS[@]} == 2)) || die "README.md: the $MARKER section has ${#CMDS[@]} commands, not 2"
  require_free_port
  printf '[server]\nworkers = 2\nplugin_dir = %s\n[listen local]\nunix = %s/jrpcd.sock\nmode = 0600\nstats = full\n[listen tcp]\ntcp = 127.0.0.1:%s\n[plugin kv]\npath = kv.so\n' \
    "$HANDLERS" "$T" "$PORT" >"$T/jrpcd.conf"
  "$JRPCD" -c "$T/jrpcd.conf" >"$T/jrpcd.out" 2>"$T/jrpcd.err" &
  JPID=$!
  DAEMON_PIDS+=("$JPID")
  local i fpid rc=0
  for ((i = 0; i < START_LIMIT_S * 20; i++)); do
    alive "$JPID" || { show "$T/jrpcd.err"; die "jrpcd exited instead of serving"; }
    [[ -S $T/jrpcd.sock ]] && unix_connects "$T/jrpcd.sock" && break
    sleep 0.05
  done
  PATH="$(dirname "$JRPC"):$PATH" bash -c "exec ${CMDS[0]}" >"$T/follow.out" 2>"$T/follow.err" &
  fpid=$!
  DAEMON_PIDS+=("$fpid")
  for ((i = 0; i < 200; i++)); do
    [[ $(subscriptions) == 1 ]] && break
    sleep 0.05
  done
  expect_eq "the first command subscribed" "$(subscriptions)" 1 || true
  timeout 20 bash -c "${CMDS[1]}" >"$T/set.out" 2>&1 || fail "the second command failed: ${CMDS[1]}"
  expect_eq "the second command's output" "$(cat "$T/set.out")"$'\n' "${WANTS[1]}" || true
  for ((i = 0; i < 200; i++)); do
    [[ "$(cat "$T/follow.out")"$'\n' == "${WANTS[0]}" ]] && break
    sleep 0.05
  done
  kill -INT "$fpid"
  for ((i = 0; i < 200; i++)); do
    alive "$fpid" || break
    sleep 0.05
  done
  wait "$fpid" || rc=$?
  forget_pid "$fpid"
  expect_eq "the first command's output" "$(cat "$T/follow.out")"$'\n' "${WANTS[0]}" || true
  expect_eq "the first command's exit status on SIGINT" "$rc" 0 || true
  expect_empty follow err || true
  expect_eq "no subscription left" "$(subscriptions)" 0 || true
  stop_daemon jrpcd "$JPID" "$T/jrpcd.sock"
  finish
}

main "$@"
