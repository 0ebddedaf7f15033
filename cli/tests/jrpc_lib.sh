# jrpc_lib.sh - running jrpc and checking what it printed, for jrpc.sh and
# http.sh; sourced after tests/cli/lib.sh, with JRPC set to the jrpc to run.
# shellcheck shell=bash

# run NAME ARGS...: $JRPC, stdout in $T/NAME.out, stderr in
# $T/NAME.err, the exit status in RC; stdin from /dev/null unless given.
run() {
  local name=$1
  shift
  RC=0
  timeout -k 5 30 "$JRPC" "$@" >"$T/$name.out" 2>"$T/$name.err" || RC=$?
  ((RC != 124 && RC != 137)) || fail "$name: jrpc $* did not exit within 30s"
  check_sanitizer "$T/$name.err" "$name: jrpc" || true
}

# expect NAME RC STDOUT [STDERR-SUBSTRING]: exact stdout (a "" STDOUT
# means empty), the exit status, and a part of stderr (else empty).
expect() {
  local name=$1 rc=$2 out=$3 err=${4:-}
  local ok=1
  if ((RC != rc)); then
    fail "$name: exit status $RC, expected $rc"
    ok=0
  fi
  if [[ "$(cat "$T/$name.out")" != "$out" ]]; then
    fail "$name: stdout differs"
    printf '  expected:\n%s\n  got:\n%s\n' "$out" "$(cat "$T/$name.out")" >&2
    ok=0
  fi
  if [[ -z $err ]]; then
    expect_empty "$name" err || ok=0
  else
    expect_in "$name" err "$err" || ok=0
  fi
  if ((ok)); then
    pass "$name"
  else
    show "$T/$name.err"
  fi
}

# start_jrpcd PREPARE: jrpcd -c $T/jrpcd.conf in the background, until it
# serves $T/jrpcd.sock; PREPARE picks free ports and writes that config,
# again for each attempt: a port taken between free_port and the bind
# (other tests run alongside) means new ports. Sets JPID.
start_jrpcd() {
  local attempt i
  for attempt in 1 2 3 4 5; do
    "$1"
    "$JRPCD" -c "$T/jrpcd.conf" >"$T/jrpcd.out" 2>"$T/jrpcd.err" &
    JPID=$!
    DAEMON_PIDS+=("$JPID")
    for ((i = 0; i < START_LIMIT_S * 20; i++)); do
      alive "$JPID" || break
      [[ -S $T/jrpcd.sock ]] && unix_connects "$T/jrpcd.sock" && return 0
      sleep 0.05
    done
    wait "$JPID" 2>/dev/null || true
    forget_pid "$JPID"
    grep -q "bind: Address already in use" "$T/jrpcd.err" || break
    echo "note: attempt $attempt: a port was taken; trying others"
  done
  show "$T/jrpcd.err"
  die "jrpcd did not serve $T/jrpcd.sock"
}

# jrpc_args "$@": the five arguments of the scripts that take the jrpc
# under test after cli_args' four (JRPCD HANDLERS_DIR FIXTURE_DIR
# REPO_ROOT JRPC); sets those and JRPC, as absolute paths.
jrpc_args() {
  (($# == 5)) || die "usage: $0 JRPCD HANDLERS_DIR FIXTURE_DIR REPO_ROOT JRPC"
  cli_args "$1" "$2" "$3" "$4"
  JRPC=$(realpath -e -- "$5") || die "jrpc not found: $5"
}

# stats_of PY: the python3 expression PY of rpc.stats' result `r`, asked
# on $T/jrpcd.sock.
stats_of() {
  "$JRPC" -u "$T/jrpcd.sock" --compact rpc.stats |
    python3 -c 'import json,sys; r=json.load(sys.stdin); print(eval(sys.argv[1]))' "$1"
}

# calls_of METHOD: the calls rpc.stats counts for METHOD (0 before the
# first).
calls_of() {
  stats_of "r[\"methods\"].get(\"$1\", {}).get(\"calls\", 0)"
}

# conf_head: a config's start for start_jrpcd: [server] with two workers
# and the sample plugins' folder, and the Unix listener $T/jrpcd.sock.
conf_head() {
  printf '[server]\nworkers = 2\nplugin_dir = %s\n[listen local]\nunix = %s/jrpcd.sock\nmode = 0600\n' \
    "$HANDLERS" "$T"
}
