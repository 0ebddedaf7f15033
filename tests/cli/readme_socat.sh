#!/usr/bin/env bash
# readme_socat.sh JRPCD HANDLERS_DIR FIXTURE_DIR REPO_ROOT
#
# Runs the socat examples of README.md verbatim against a live jrpcd and
# compares their output with the README's, byte for byte. The README is the
# thing under test: if its examples stop working, or the markers around them
# disappear, this fails.
#
# The examples sit between "<!-- socat-examples ... -->" and
# "<!-- /socat-examples -->" in ```sh blocks: a line starting with "$ " is a
# command, the lines after it up to the next command or the closing ``` are
# its expected stdout.
#
# They connect to ${XDG_RUNTIME_DIR:-/tmp}/jrpcd.sock and 127.0.0.1:7400, so
# the daemon listens exactly there, with XDG_RUNTIME_DIR pointing into this
# test's own directory. Port 7400 cannot be moved without editing the
# commands, so a busy port skips the test (exit 77) instead of failing it.
set -euo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
# shellcheck source-path=SCRIPTDIR source=lib.sh
source "$here/lib.sh"

cli_args "$@"
# Absolute paths: configs name them, and messages are matched against them.
README=$ROOT/README.md
readonly PORT=7400 SKIP=77

# shellcheck source-path=SCRIPTDIR source=readme_lib.sh
source "$here/readme_lib.sh"
readonly MARKER=socat-examples

write_config() {
  cat >"$T/jrpcd.conf" <<EOF
# The README's serving setup: its Unix socket and TCP port, newline framing
# on both, the sample plugins of this build.
[server]
workers = 2
plugin_dir = $HANDLERS
shutdown_timeout_ms = 5000

[listen local]
unix = $T/jrpcd.sock
mode = 0600

[listen tcp]
tcp = 127.0.0.1:$PORT
framing = newline

[plugin math]
path = math.so

[plugin echo]
path = echo.so

[plugin sleep]
path = sleep.so
EOF
}

# Starts the daemon; a bind race on the port (taken after the check) is a
# skip too, not a failure.
start() {
  local i
  "$JRPCD" -c "$T/jrpcd.conf" >"$T/daemon.out" 2>"$T/daemon.err" &
  PID=$!
  DAEMON_PIDS+=("$PID")
  for ((i = 0; i < START_LIMIT_S * 20; i++)); do
    if ! alive "$PID"; then
      local rc=0
      wait "$PID" || rc=$?
      forget_pid "$PID"
      check_sanitizer "$T/daemon.err" daemon || true
      if grep -q "tcp:127.0.0.1:$PORT: bind: Address already in use" "$T/daemon.err"; then
        echo "SKIP: 127.0.0.1:$PORT was taken while jrpcd started"
        exit "$SKIP"
      fi
      show "$T/daemon.err"
      die "jrpcd exited with status $rc instead of serving"
    fi
    if [[ -S "$T/jrpcd.sock" ]] && unix_connects "$T/jrpcd.sock" &&
      timeout 2 bash -c "exec 3<>/dev/tcp/127.0.0.1/$PORT" 2>/dev/null; then
      return 0
    fi
    sleep 0.05
  done
  show "$T/daemon.err"
  die "jrpcd did not serve both listeners within ${START_LIMIT_S}s"
}

main() {
  need_daemon math
  need_file "$README" README.md
  need_cmd socat
  setup_tmp
  parse_examples
  require_free_port
  write_config
  start
  run_examples
  stop_daemon daemon "$PID" "$T/jrpcd.sock"
  finish
}

main "$@"
