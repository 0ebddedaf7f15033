#!/usr/bin/env bash
# readme_curl.sh JRPCD HANDLERS_DIR FIXTURE_DIR REPO_ROOT
#
# Runs the curl examples of README.md ("<!-- curl-examples" to
# "<!-- /curl-examples -->", ```sh blocks of "$ " commands and their
# expected stdout) verbatim against a live jrpcd with the README's http
# listener on 127.0.0.1:7480 and one worker, and compares their output with
# the README's byte for byte. The listener asks for a bearer token as the
# README's does; the examples find it in JRPC_TOKEN, made here by
# jrpcd --hash-token as the README says. A busy port skips the test (exit
# 77).
set -euo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
# shellcheck source-path=SCRIPTDIR source=lib.sh
source "$here/lib.sh"

cli_args "$@"
README=$ROOT/README.md
readonly PORT=7480 SKIP=77
# shellcheck source-path=SCRIPTDIR source=readme_lib.sh
source "$here/readme_lib.sh"
readonly MARKER=curl-examples

main() {
  need_daemon math
  need_file "$README" README.md
  need_cmd curl
  setup_tmp
  parse_examples
  require_free_port
  (umask 077 && "$JRPCD" --hash-token app 2>"$T/app.token" >"$T/tokens") ||
    die "jrpcd --hash-token app failed"
  JRPC_TOKEN=$(cat "$T/app.token")
  export JRPC_TOKEN
  cat >"$T/jrpcd.conf" <<CONF
[server]
workers = 1
plugin_dir = $HANDLERS
[listen local]
unix = $T/jrpcd.sock
[listen http]
tcp = 127.0.0.1:$PORT
framing = http
metrics = yes
tokens_file = $T/tokens
[plugin math]
path = math.so
[plugin echo]
path = echo.so
CONF
  start_daemon daemon "$T/jrpcd.conf" "$T/jrpcd.sock"
  # The block's jrpc example runs the jrpc built beside these handlers.
  PATH="$(dirname "$HANDLERS")/cli:$PATH"
  if grep -q "tcp:127.0.0.1:$PORT: bind: Address already in use" "$T/daemon.err"; then
    echo "SKIP: 127.0.0.1:$PORT was taken while jrpcd started"
    exit "$SKIP"
  fi
  run_examples
  stop_daemon daemon "$PID" "$T/jrpcd.sock"
  finish
}

main "$@"
