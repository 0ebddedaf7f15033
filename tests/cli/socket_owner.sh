#!/usr/bin/env bash
# socket_owner.sh JRPCD HANDLERS_DIR FIXTURE_DIR REPO_ROOT
#
# A stopping jrpcd removes its own Unix socket file, and only its own.
#
# Daemon A serves a path; its socket file is removed (an administrator, a
# tmp cleaner, a package script); daemon B starts on the same path and makes
# a new socket file there. When A is then stopped it must leave B's file in
# place: removing it cuts B off from every new client while B keeps running
# and believes it is serving.
set -euo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
# shellcheck source-path=SCRIPTDIR source=lib.sh
source "$here/lib.sh"

cli_args "$@"


main() {
  need_daemon math
  need_cmd socat
  setup_tmp
  local sock=$T/jrpcd.sock inode_b
  cat >"$T/jrpcd.conf" <<EOF
$(conf_server 1)
[listen local]
unix = $sock
$(conf_plugins math)
EOF
  start_daemon a "$T/jrpcd.conf" "$sock"
  local a=$PID
  rm -f -- "$sock"
  start_daemon b "$T/jrpcd.conf" "$sock"
  local b=$PID
  inode_b=$(stat -c %i "$sock")
  expect_call b "$sock" "$ADD" "$THREE"

  # A's socket file is gone already; stopping A must not touch B's.
  stop_daemon a "$a"
  if [[ -S "$sock" && "$(stat -c %i "$sock")" == "$inode_b" ]]; then
    pass "stopping A left B's socket file alone"
  else
    fail "stopping daemon A removed $sock, the socket file of daemon B," \
      "which still runs but can no longer be reached" \
      "(daemon/listener.c jrpcd_listener_close unlinks the path unconditionally)"
  fi
  # B is still running and must still be reachable at its path.
  expect_call b "$sock" "$ADD" "$THREE"
  # B's own socket file may already be gone (the bug above): only its exit
  # status and the sanitizer log are checked when it is missing.
  if [[ -e "$sock" ]]; then
    stop_daemon b "$b" "$sock"
  else
    stop_daemon b "$b"
  fi
  finish
}

main "$@"
