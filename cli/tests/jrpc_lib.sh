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
