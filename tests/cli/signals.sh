#!/usr/bin/env bash
# signals.sh JRPCD HANDLERS_DIR FIXTURE_DIR REPO_ROOT
#
# A SIGTERM that comes as soon as jrpcd's socket exists, while its workers
# are still starting, must stop it in order (exit 0, "stopped" logged),
# never kill it with the signal's default action (status 143). A service
# manager or a test that starts and stops jrpcd at once sends exactly that.
set -euo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
# shellcheck source-path=SCRIPTDIR source=lib.sh
source "$here/lib.sh"

cli_args "$@"

# Many workers widen the time between the socket's bind and the signal
# watchers' first run; before the watchers were set up ahead of the bind,
# every one of these rounds ended with status 143.
test_term_at_once() {
  local rounds=10 killed=0 unclean=0 i pid rc sock="$T/s.sock"
  printf '[server]\nworkers = 32\nplugin_dir = %s\n[plugin math]\npath = math.so\n[listen a]\nunix = %s\n' \
    "$HANDLERS" "$sock" >"$T/early.conf"
  for ((i = 0; i < rounds; i++)); do
    rm -f "$sock"
    "$JRPCD" -c "$T/early.conf" 2>"$T/early.err" &
    pid=$!
    DAEMON_PIDS+=("$pid")
    # A tight wait, bounded by time: the point is to signal at once.
    local deadline=$((SECONDS + 10))
    while [[ ! -S "$sock" ]] && ((SECONDS < deadline)); do :; done
    [[ -S "$sock" ]] || die "jrpcd made no socket within 10 s: $(cat "$T/early.err")"
    kill -TERM "$pid"
    rc=0
    wait "$pid" || rc=$?
    forget_pid "$pid"
    check_sanitizer "$T/early.err" "jrpcd stopped at once"
    if ((rc != 0)); then
      killed=$((killed + 1))
    elif ! grep -q 'stopped' "$T/early.err"; then
      unclean=$((unclean + 1))
    fi
  done
  if ((killed == 0 && unclean == 0)); then
    pass "SIGTERM right after the bind: $rounds of $rounds stopped in order"
  else
    fail "SIGTERM right after the bind: $killed of $rounds ended by the signal, $unclean without 'stopped' logged"
  fi
}

main() {
  need_daemon math
  setup_tmp
  test_term_at_once
  finish
}

main "$@"
