# lib.sh - helpers shared by the shell tests in tests/cli; sourced, not run.
#
# The sourcing script sets JRPCD (the daemon binary) before calling
# setup_tmp. Every wait here is bounded: a daemon that hangs fails the test
# instead of stalling ctest until its TIMEOUT.
# shellcheck shell=bash

# Seconds a daemon may take to start serving, or to stop after SIGTERM.
# Generous because the sanitizer build is several times slower.
START_LIMIT_S=${START_LIMIT_S:-15}
STOP_LIMIT_S=${STOP_LIMIT_S:-15}

# A call of the math plugin and its reply, as most checks here use them.
# shellcheck disable=SC2034 # used by the sourcing scripts
readonly ADD='{"jsonrpc":"2.0","method":"math.add","params":[1,2],"id":1}'
# shellcheck disable=SC2034
readonly THREE='{"jsonrpc":"2.0","result":3,"id":1}'

T=""               # this test's private temporary directory
declare -a DAEMON_PIDS=()  # daemons started in the background, for cleanup
FAILURES=0

# cli_args "$@": the four arguments every script here gets from ctest, as
# absolute paths: JRPCD, HANDLERS, FX (fixture plugins) and ROOT (the
# repository); and, for a script whose checks need something the machine
# may lack, a fifth naming the one check to run alone (ONLY), as a ctest
# entry of its own that can be skipped without hiding the others.
# shellcheck disable=SC2034 # set for the sourcing script
cli_args() {
  (($# == 4 || $# == 5)) || die "usage: $0 JRPCD HANDLERS_DIR FIXTURE_DIR REPO_ROOT [CHECK]"
  ONLY=${5:-}
  JRPCD=$(realpath -e -- "$1") || die "jrpcd not found: $1 (was the build run?)"
  HANDLERS=$(realpath -e -- "$2") || die "handlers dir not found: $2"
  FX=$(realpath -e -- "$3") || die "fixture dir not found: $3"
  ROOT=$(realpath -e -- "$4") || die "repo root not found: $4"
}

die() {
  printf 'FAIL: %s\n' "$*" >&2
  exit 1
}

# A failed check that lets the test go on, so one run reports every problem.
# The expect_* helpers return 1 after fail() so that they can be chained
# with && (call them in an if, or add || true: set -e is on); expect_call
# and stop_daemon always return 0.
fail() {
  printf 'FAIL: %s\n' "$*" >&2
  FAILURES=$((FAILURES + 1))
}

pass() {
  printf 'ok: %s\n' "$*"
}

finish() {
  if ((FAILURES > 0)); then
    printf '%s: %d check(s) failed\n' "${0##*/}" "$FAILURES" >&2
    exit 1
  fi
  printf '%s: all checks passed\n' "${0##*/}"
}

cleanup() {
  local pid
  # Only the daemons this script started, by pid.
  for pid in "${DAEMON_PIDS[@]}"; do
    kill -KILL "$pid" 2>/dev/null || true
  done
  if [[ -n "$T" && -d "$T" ]]; then
    rm -rf -- "$T"
  fi
}

# A private directory under /tmp unless TMPDIR is short enough: Unix socket
# paths inside it must stay below the 107-byte sun_path limit.
setup_tmp() {
  local base=${TMPDIR:-/tmp}
  if ((${#base} > 40)); then
    base=/tmp
  fi
  T=$(mktemp -d "$base/jrpcd-test.XXXXXX") || die "mktemp -d failed"
  trap cleanup EXIT
  trap 'exit 130' INT TERM
}

need_file() {
  [[ -e "$1" ]] || die "$2 not found: $1 (was the build run?)"
}

need_cmd() {
  command -v "$1" >/dev/null 2>&1 || die "$1 is required but not installed"
}

# A prerequisite of this check is missing from the machine: exit 77, which
# ctest reports as skipped (SKIP_RETURN_CODE), never as passed. CI must run
# every check (scripts/deps.sh installs what they need), so with CI=true
# it is a failure.
missing() {
  if [[ "${CI:-}" == true ]]; then
    die "$* (CI=true: every check must run)"
  fi
  printf 'SKIP: %s\n' "$*" >&2
  exit 77
}

# need_prometheus_client: Debian's /usr/bin/python3 (PY) with
# python3-prometheus-client, for the scripts that parse /metrics; sets
# HAVE_TLS (1: jrpcd was built with TLS), which they use too.
# shellcheck disable=SC2034 # HAVE_TLS: for the sourcing script
need_prometheus_client() {
  if ! [[ -x $PY ]] || ! $PY -c 'import prometheus_client' 2>/dev/null; then
    missing "Debian's python3-prometheus-client (scripts/deps.sh installs it)"
  fi
  HAVE_TLS=1
  if "$JRPCD" -V | grep -q "^TLS: no"; then
    HAVE_TLS=0
  fi
}

# Fails the test when a sanitizer wrote a report into the given stderr log:
# under JRPC_SANITIZE every jrpcd run must be clean, whatever its exit code.
check_sanitizer() {
  local log=$1 what=$2
  if grep -qE 'AddressSanitizer|LeakSanitizer|UndefinedBehaviorSanitizer|runtime error' "$log"; then
    fail "$what: sanitizer report in $log:"
    sed 's/^/    /' "$log" >&2
    return 1
  fi
  return 0
}

# run_jrpcd NAME ARGS...: runs jrpcd in the foreground, bounded by timeout,
# with stdout in $T/NAME.out and stderr in $T/NAME.err; sets RC.
run_jrpcd() {
  local name=$1
  shift
  RC=0
  timeout -k 5 "$START_LIMIT_S" "$JRPCD" "$@" >"$T/$name.out" 2>"$T/$name.err" || RC=$?
  if ((RC == 124 || RC == 137)); then
    fail "$name: jrpcd $* did not exit within ${START_LIMIT_S}s"
  fi
  check_sanitizer "$T/$name.err" "$name" || true
}

# Prints a file indented, for failure messages.
show() {
  local f
  for f in "$@"; do
    printf '  --- %s\n' "${f##*/}" >&2
    if [[ -s "$f" ]]; then
      sed 's/^/  | /' "$f" >&2
    else
      printf '  | (empty)\n' >&2
    fi
  done
}

expect_rc() {
  local name=$1 want=$2
  if [[ "$RC" != "$want" ]]; then
    fail "$name: exit status $RC, expected $want"
    show "$T/$name.out" "$T/$name.err"
    return 1
  fi
  return 0
}

# expect_in NAME STREAM TEXT: STREAM (out or err) of run NAME holds TEXT,
# taken literally.
expect_in() {
  local name=$1 stream=$2 text=$3
  if ! grep -qF -- "$text" "$T/$name.$stream"; then
    fail "$name: std$stream lacks: $text"
    show "$T/$name.out" "$T/$name.err"
    return 1
  fi
  return 0
}

expect_not_in() {
  local name=$1 stream=$2 text=$3
  if grep -qF -- "$text" "$T/$name.$stream"; then
    fail "$name: std$stream should not contain: $text"
    show "$T/$name.out" "$T/$name.err"
    return 1
  fi
  return 0
}

expect_empty() {
  local name=$1 stream=$2
  if [[ -s "$T/$name.$stream" ]]; then
    fail "$name: std$stream should be empty"
    show "$T/$name.$stream"
    return 1
  fi
  return 0
}

# True while PID is a live process. A zombie counts as gone: kill -0
# succeeds on a zombie, so /proc tells the difference.
alive() {
  local pid=$1 stat
  stat=$(cat "/proc/$pid/stat" 2>/dev/null) || return 1
  stat=${stat##*) }
  [[ "${stat%% *}" != Z ]]
}

# wait_gone PID SECONDS: true once PID has ended (exited, or a zombie),
# false if it is still running after SECONDS. Works for a pid that is not
# this shell's child, where wait cannot.
wait_gone() {
  local pid=$1 i
  for ((i = 0; i < $2 * 20; i++)); do
    alive "$pid" || return 0
    sleep 0.05
  done
  ! alive "$pid"
}

# built_with_nats: whether $JRPCD can join a cluster: one built without
# libnats (-DJRPC_NATS=OFF, CI's no-simdjson build) refuses [cluster] by
# design. Needs $T.
built_with_nats() {
  local out
  printf '[cluster]\nnats = nats://127.0.0.1:4222\n' >"$T/nats-probe.conf"
  out=$("$JRPCD" -t -c "$T/nats-probe.conf" 2>&1) || true
  [[ $out != *"built without NATS"* ]]
}

# Once reaped, a pid may be reused by anyone: cleanup must not signal it.
forget_pid() {
  local p keep=()
  for p in "${DAEMON_PIDS[@]}"; do
    [[ "$p" == "$1" ]] || keep+=("$p")
  done
  DAEMON_PIDS=("${keep[@]}")
}

# Whether something accepts connections on a Unix socket path.
unix_connects() {
  timeout 5 socat -u /dev/null "UNIX-CONNECT:$1" >/dev/null 2>&1
}

# start_with NAME SOCKET CMD...: CMD in the background (a command line that
# runs or execs jrpcd: its pid is then jrpcd's), logs in $T/NAME.{out,err};
# returns once SOCKET accepts connections (a socket jrpcd binds itself: a
# passed one accepts before jrpcd runs). Sets PID.
start_with() {
  local name=$1 sock=$2 i
  shift 2
  "$@" >"$T/$name.out" 2>"$T/$name.err" &
  PID=$!
  DAEMON_PIDS+=("$PID")
  for ((i = 0; i < START_LIMIT_S * 20; i++)); do
    if ! alive "$PID"; then
      local rc=0
      wait "$PID" || rc=$?
      forget_pid "$PID"
      show "$T/$name.err"
      die "$name: $* exited with status $rc instead of serving"
    fi
    if [[ -S "$sock" ]] && unix_connects "$sock"; then
      return 0
    fi
    sleep 0.05
  done
  show "$T/$name.err"
  die "$name: jrpcd did not accept connections on $sock within ${START_LIMIT_S}s"
}

# start_daemon NAME CONF SOCKET: jrpcd -c CONF in the background (as
# start_with). Sets PID.
start_daemon() {
  start_with "$1" "$3" "$JRPCD" -c "$2"
}

# start_bg WHAT TEST CMD...: a helper process in the background (cleaned up
# with the daemons); returns once `test TEST...` holds, e.g. "-S path".
# Sets BG_PID.
start_bg() {
  local what=$1 cond=$2 i
  shift 2
  "$@" &
  BG_PID=$!
  DAEMON_PIDS+=("$BG_PID")
  for ((i = 0; i < START_LIMIT_S * 20; i++)); do
    # shellcheck disable=SC2086 # TEST is an operator and its operand
    test $cond && return 0
    sleep 0.05
  done
  die "$what was not ready ($cond) within ${START_LIMIT_S}s"
}

# stop_bg PID: ends a start_bg helper.
stop_bg() {
  kill -TERM "$1" 2>/dev/null || true
  wait "$1" 2>/dev/null || true
  forget_pid "$1"
}

# stop_daemon NAME PID [SOCKET [SIGNAL]]: SIGNAL (default TERM), then the
# daemon must exit 0 within STOP_LIMIT_S, leave no sanitizer report and
# remove SOCKET. PROG (default jrpcd) names the program in messages.
stop_daemon() {
  local name=$1 pid=$2 sock=${3:-} sig=${4:-TERM} prog=${PROG:-jrpcd} i rc=0
  kill "-$sig" "$pid" 2>/dev/null || true
  for ((i = 0; i < STOP_LIMIT_S * 20; i++)); do
    alive "$pid" || break
    sleep 0.05
  done
  if alive "$pid"; then
    kill -KILL "$pid" 2>/dev/null || true
    wait "$pid" 2>/dev/null || true
    forget_pid "$pid"
    show "$T/$name.err"
    fail "$name: $prog did not exit within ${STOP_LIMIT_S}s of SIG$sig (killed)"
    return 0 # recorded; the test goes on to its other checks
  fi
  wait "$pid" || rc=$?
  forget_pid "$pid"
  check_sanitizer "$T/$name.err" "$name" || true
  if ((rc != 0)); then
    fail "$name: $prog exited with status $rc after SIG$sig, expected 0"
    show "$T/$name.err"
  fi
  if [[ -n "$sock" && -e "$sock" ]]; then
    fail "$name: the socket file $sock is still there after the stop"
  fi
}

# need_daemon PLUGIN...: the jrpcd under test and the sample plugins the
# test serves are built (a missing one is a skip, or under CI a failure).
need_daemon() {
  local name
  need_file "$JRPCD" jrpcd
  for name in "$@"; do
    need_file "$HANDLERS/$name.so" "the $name plugin"
  done
}

# conf_server [WORKERS]: the [server] section the configs here start with,
# WORKERS workers (default 2) and the plugins of this build; a test's own
# [server] keys may follow it. For $(conf_server) inside a config heredoc.
# shellcheck disable=SC2120 # WORKERS is optional
conf_server() {
  printf '[server]\nworkers = %s\nplugin_dir = %s\n' "${1:-2}" "$HANDLERS"
}

# conf_plugins NAME...: a [plugin NAME] section loading NAME.so for each
# sample plugin named; keys of the last one may follow it.
conf_plugins() {
  local name
  for name in "$@"; do
    printf '[plugin %s]\npath = %s.so\n' "$name" "$name"
  done
}

# npm_install PKG@VERSION...: pinned npm packages into $T/npm (for node's
# NODE_PATH=$T/npm/node_modules), their log in $T/npm.log; dies when npm
# cannot install them.
npm_install() {
  if ! (cd "$T" && timeout 120 npm install --no-audit --no-fund --silent \
    --prefix "$T/npm" "$@" >"$T/npm.log" 2>&1); then
    show "$T/npm.log"
    die "npm could not install $*"
  fi
}

# A TCP port nobody listens on now (IPv4 and IPv6 loopback alike).
free_port() {
  local p
  # Below the kernel's ephemeral range (32768 and up by default): the
  # client sockets of tests running beside this one take ports there, and
  # a port a client holds cannot be bound even when nothing listens on it.
  for p in $(shuf -i 20000-32000 -n 50); do
    if ! timeout 1 socat -u /dev/null "TCP4:127.0.0.1:$p" 2>/dev/null &&
      ! timeout 1 socat -u /dev/null "TCP6:[::1]:$p" 2>/dev/null; then
      echo "$p"
      return 0
    fi
  done
  die "no free TCP port found"
}

# call SOCKET JSON: one request line to a newline-framed Unix listener;
# prints the reply.
call() {
  printf '%s\n' "$2" | timeout 10 socat -t 5 - "UNIX-CONNECT:$1"
}

# expect_call NAME SOCKET JSON REPLY: the reply must be exactly REPLY.
expect_call() {
  local name=$1 sock=$2 req=$3 want=$4 got
  got=$(call "$sock" "$req") || true
  if [[ "$got" != "$want" ]]; then
    fail "$name: $req"
    printf '  expected: %s\n  got:      %s\n' "$want" "$got" >&2
    return 0 # recorded; the test goes on to its other checks
  fi
  pass "$name: $req -> $got"
}

# expect_eq NAME GOT WANT: GOT must be WANT exactly.
expect_eq() {
  if [[ "$2" == "$3" ]]; then
    pass "$1"
  else
    fail "$1"
    printf '  expected: %q\n  got:      %q\n' "$3" "$2" >&2
  fi
}

# bad_config NAME BAD_LINE KEY MESSAGE: a config whose line BAD_LINE (taken
# literally, it must occur once) is wrong; -t must exit 1 naming the file,
# that line's number, the key, and MESSAGE. The config is read from stdin.
bad_config() {
  local name=$1 bad=$2 key=$3 msg=$4 f="$T/$1.conf" line
  cat >"$f"
  line=$(grep -nxF -- "$bad" "$f" | cut -d: -f1)
  [[ "$line" =~ ^[0-9]+$ ]] || die "$name: test bug: '$bad' not found once in $f"
  run_jrpcd "$name" -t -c "$f"
  if expect_rc "$name" 1 &&
    expect_in "$name" err "$f:$line: " &&
    expect_in "$name" err "$key: " &&
    expect_in "$name" err "$msg"; then
    pass "-t $name: $(head -n1 "$T/$name.err")"
  fi
}

# refused_conf NAME EXPECTED TEXT: `jrpcd -t` on a config of TEXT must exit 1
# with EXPECTED (a fixed string) in its message.
refused_conf() {
  printf '%s\n' "$3" >"$T/$1.conf"
  run_jrpcd "$1" -t -c "$T/$1.conf"
  if ((RC == 1)) && grep -qF -- "$2" "$T/$1.err"; then
    pass "$1: refused"
  else
    fail "$1: expected exit 1 with \"$2\" (exit $RC)"
    show "$T/$1.err"
  fi
}
