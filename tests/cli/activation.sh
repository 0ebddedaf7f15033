#!/usr/bin/env bash
# activation.sh JRPCD HANDLERS_DIR FIXTURE_DIR REPO_ROOT [CHECK]
#
# jrpcd under a service manager, tested without one:
#  - socket activation: sockets passed the way systemd passes them (fds 3..,
#    LISTEN_FDS, LISTEN_PID, LISTEN_FDNAMES; tests/tools/sd_activate) serve
#    the [listen] section of their name with its framing; the sections not
#    passed are bound by jrpcd; a passed socket's file outlives jrpcd; a
#    name no section has, a socket of the wrong kind, and sockets meant for
#    another process are handled as documented; -t checks them;
#  - what a plugin's child would inherit: none of NOTIFY_SOCKET and
#    LISTEN_*, no passed socket (tests/tools/fx_env.so asks from inside);
#  - sd_notify: READY=1, RELOADING=1 + MONOTONIC_USEC then READY=1 on
#    SIGHUP (also when the reload fails), STOPPING=1 on SIGTERM, from
#    jrpcd's own pid (tests/tools/sd_notify_recv plays systemd's end);
#  - the journal: with JOURNAL_STREAM naming stderr, "<N>" priorities and
#    no timestamps; otherwise timestamps;
#  - -v and -q on top of log_level, across a reload;
#  - with systemd's own tools (fifth argument systemd_socket_activate or
#    units_verified: ctest entries of their own, skipped where the tool is
#    missing): a start by systemd-socket-activate, and systemd-analyze
#    verify of the units.
set -euo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
# shellcheck source-path=SCRIPTDIR source=lib.sh
source "$here/lib.sh"

cli_args "$@"
# tests/tools/CMakeLists.txt builds the helpers into <build>/tests/tools;
# the handlers are in <build>/handlers.
TOOLS=$(dirname "$HANDLERS")/tests/tools
ACTIVATE=$TOOLS/sd_activate
NOTIFY_RECV=$TOOLS/sd_notify_recv
FX_ENV=$TOOLS/fx_env.so

readonly STAMP='^[0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9:.]+Z jrpcd\['

# run_with NAME CMD...: the command in the foreground, bounded, like
# lib.sh's run_jrpcd; sets RC.
run_with() {
  local name=$1
  shift
  RC=0
  timeout -k 5 "$START_LIMIT_S" "$@" >"$T/$name.out" 2>"$T/$name.err" || RC=$?
  if ((RC == 124 || RC == 137)); then
    fail "$name: $* did not exit within ${START_LIMIT_S}s"
  fi
  check_sanitizer "$T/$name.err" "$name" || true
}

# call_length HOST PORT JSON: one length-framed request over TCP; prints
# the reply frame as od -c text.
call_length() {
  local len=${#3} hex
  hex=$(printf '\\x%02x\\x%02x\\x%02x\\x%02x' 0 0 $((len >> 8)) $((len & 255)))
  (printf '%b%s' "$hex" "$3") | timeout 10 socat -t 5 - "TCP4:$1:$2" |
    od -An -c | tr -s ' \n' ' '
}

frame_of() {
  local len=${#1} hex
  hex=$(printf '\\x%02x\\x%02x\\x%02x\\x%02x' 0 0 $((len >> 8)) $((len & 255)))
  (printf '%b%s' "$hex" "$1") | od -An -c | tr -s ' \n' ' '
}

# wait_lines FILE N: until FILE has N lines, within STOP_LIMIT_S.
wait_lines() {
  local f=$1 n=$2 i
  for ((i = 0; i < STOP_LIMIT_S * 20; i++)); do
    [[ -f "$f" ]] && (($(wc -l <"$f") >= n)) && return 0
    sleep 0.05
  done
  return 1
}

# wait_log FILE TEXT: until FILE holds TEXT (literally), within START_LIMIT_S.
wait_log() {
  local i
  for ((i = 0; i < START_LIMIT_S * 20; i++)); do
    grep -qF -- "$2" "$1" 2>/dev/null && return 0
    sleep 0.05
  done
  return 1
}

# start_receiver ADDR OUT: sd_notify_recv on ADDR, once it is bound. Sets
# RECV_PID (cleaned up with the daemons).
start_receiver() {
  start_bg "sd_notify_recv on $1" "-f $2" "$NOTIFY_RECV" "$1" "$2" 120
  RECV_PID=$BG_PID
}

stop_receiver() {
  stop_bg "$RECV_PID"
}

# expect_line FILE N REGEX WHAT: line N of FILE matches REGEX.
expect_line() {
  local line
  line=$(sed -n "${2}p" "$1")
  if [[ "$line" =~ $3 ]]; then
    pass "$4"
  else
    fail "$4: line $2 of ${1##*/} is '$line', expected /$3/"
    show "$1"
  fi
}

# Two passed sockets (unix, newline; tcp, length) and one jrpcd binds
# itself; notifications to a path NOTIFY_SOCKET through reloads and the
# stop; the passed file stays, jrpcd's own goes.
test_passed() {
  local p n=$T/notify.log passed=$T/passed.sock own=$T/own.sock ino
  p=$(free_port)
  cat >"$T/act.conf" <<EOF
$(conf_server)
[listen local]
unix = $passed
[listen tcp]
tcp = 127.0.0.1:$p
framing = length
[listen own]
unix = $own
$(conf_plugins math)
[plugin env]
path = $FX_ENV
EOF
  start_receiver "$T/notify.sock" "$n"
  FX_ENV_PROBE=here NOTIFY_SOCKET=$T/notify.sock start_with act "$own" \
    "$ACTIVATE" local="unix:$passed" tcp="tcp:127.0.0.1:$p" -- "$JRPCD" -c "$T/act.conf"
  local pid=$PID
  ino=$(stat -c %i "$passed")
  expect_call act "$passed" "$ADD" "$THREE"
  local got want
  got=$(call_length 127.0.0.1 "$p" "$ADD") || true
  want=$(frame_of "$THREE")
  if [[ "$got" == "$want" ]]; then
    pass "passed tcp socket answers with the section's length framing"
  else
    fail "passed tcp socket: got '$got', expected '$want'"
  fi
  expect_call act "$own" "$ADD" "$THREE"
  # Read once, for jrpcd alone: a plugin's child must neither notify for
  # the service nor take the sockets as its own.
  local v
  for v in NOTIFY_SOCKET LISTEN_PID LISTEN_FDS LISTEN_FDNAMES; do
    expect_call act "$own" '{"jsonrpc":"2.0","method":"env.get","params":["'$v'"],"id":1}' \
      '{"jsonrpc":"2.0","result":null,"id":1}'
  done
  for v in 3 4; do
    expect_call act "$own" '{"jsonrpc":"2.0","method":"env.cloexec","params":['$v'],"id":1}' \
      '{"jsonrpc":"2.0","result":true,"id":1}'
  done
  # The controls: a variable that is set, an fd a child does inherit.
  expect_call act "$own" '{"jsonrpc":"2.0","method":"env.get","params":["FX_ENV_PROBE"],"id":1}' \
    '{"jsonrpc":"2.0","result":"here","id":1}'
  expect_call act "$own" '{"jsonrpc":"2.0","method":"env.cloexec","params":[0],"id":1}' \
    '{"jsonrpc":"2.0","result":false,"id":1}'
  expect_in act err "listening on unix:$passed (newline framing) for [listen local], passed by the service manager as fd 3" &&
    expect_in act err "listening on tcp:127.0.0.1:$p (length framing) for [listen tcp], passed by the service manager as fd 4" &&
    expect_in act err "listening on unix:$own (newline framing)" &&
    expect_not_in act err "[listen own], passed" &&
    pass "the log says which listeners came from the service manager"

  # sd_notify: READY once serving, RELOADING + MONOTONIC_USEC then READY
  # around a SIGHUP, the same when the reload fails, STOPPING on SIGTERM.
  wait_lines "$n" 1 || fail "no READY=1 notification within ${STOP_LIMIT_S}s"
  expect_line "$n" 1 $'^pid='"$pid"$'\tREADY=1\tSTATUS=serving [0-9]+ methods' \
    "READY=1 with a STATUS once serving, from jrpcd's pid"
  kill -HUP "$pid"
  wait_lines "$n" 3 || fail "no RELOADING=1/READY=1 after SIGHUP"
  expect_line "$n" 2 $'^pid='"$pid"$'\tRELOADING=1\tMONOTONIC_USEC=[1-9][0-9]*\t' \
    "SIGHUP: RELOADING=1 with MONOTONIC_USEC"
  expect_line "$n" 3 $'^pid='"$pid"$'\tREADY=1\tSTATUS=reloaded: ' \
    "SIGHUP: READY=1 again after the reload, STATUS reloaded"
  printf 'bogus\n' >>"$T/act.conf"
  kill -HUP "$pid"
  wait_lines "$n" 5 || fail "no RELOADING=1/READY=1 after a failing SIGHUP"
  expect_line "$n" 4 $'\tRELOADING=1\t' "failing reload: RELOADING=1"
  expect_line "$n" 5 $'\tREADY=1\tSTATUS=reload failed, still serving the previous plugins: '"$T/act.conf:[0-9]+: " \
    "failing reload: READY=1 with a STATUS saying it failed"
  expect_call act "$passed" "$ADD" "$THREE"

  stop_daemon act "$pid" "$own"
  wait_lines "$n" 6 || fail "no STOPPING=1 after SIGTERM"
  expect_line "$n" 6 $'^pid='"$pid"$'\tSTOPPING=1' "SIGTERM: STOPPING=1"
  stop_receiver
  if [[ -S "$passed" && "$(stat -c %i "$passed")" == "$ino" ]]; then
    pass "the passed socket's file is still there after the stop"
  else
    fail "jrpcd removed $passed, a socket file the service manager owns"
  fi
}

# LISTEN_PID names another process: the fds are not jrpcd's to use, and it
# binds every section itself. Notifications go to an abstract socket name
# ("@name", no file) this time.
test_not_ours() {
  local n=$T/nfu-notify.log abstract=@jrpcd-test-$$-$RANDOM
  cat >"$T/nfu.conf" <<EOF
$(conf_server 1)
[listen local]
unix = $T/nfu.sock
$(conf_plugins math)
EOF
  start_receiver "$abstract" "$n"
  NOTIFY_SOCKET=$abstract start_with nfu "$T/nfu.sock" \
    "$ACTIVATE" -p 1 local="unix:$T/nfu-other.sock" -- "$JRPCD" -c "$T/nfu.conf"
  local pid=$PID
  expect_call nfu "$T/nfu.sock" "$ADD" "$THREE"
  expect_not_in nfu err "passed by the service manager" &&
    pass "LISTEN_PID of another process: the sockets are ignored"
  stop_daemon nfu "$pid" "$T/nfu.sock"
  wait_lines "$n" 2 || fail "abstract NOTIFY_SOCKET: fewer than 2 notifications"
  stop_receiver
  expect_line "$n" 1 $'^pid='"$pid"$'\tREADY=1\t' "abstract NOTIFY_SOCKET: READY=1"
  expect_line "$n" 2 $'^pid='"$pid"$'\tSTOPPING=1\t' "abstract NOTIFY_SOCKET: STOPPING=1"
}

# A config with [listen own] first (bound before the failure) and the
# given sections after it.
bad_conf() {
  local f=$T/$1.conf
  shift
  {
    printf '[server]\nworkers = 1\nplugin_dir = %s\n' "$HANDLERS"
    printf '[listen own]\nunix = %s\n' "${f%.conf}-own.sock"
    printf '%s\n' "$@"
    printf '[plugin math]\npath = math.so\n'
  } >"$f"
}

# expect_refused NAME MESSAGE PASSED...: jrpcd exited 1 with MESSAGE, left
# the passed socket files alone and removed the one it had bound.
expect_refused() {
  local name=$1 msg=$2 f
  shift 2
  if expect_rc "$name" 1 && expect_in "$name" err "$msg"; then
    pass "$name: exit 1, $(grep -m1 -F -- "$msg" "$T/$name.err")"
  fi
  for f in "$@"; do
    [[ -S "$f" ]] || fail "$name: the passed socket file $f was removed"
  done
  [[ ! -e "$T/$name-own.sock" ]] ||
    fail "$name: jrpcd left its own socket file $T/$name-own.sock behind"
}

test_refusals() {
  local p
  p=$(free_port)
  bad_conf unknown "[listen local]" "unix = $T/unknown-l.sock"
  run_with unknown "$ACTIVATE" nope="unix:$T/unknown-p.sock" -- "$JRPCD" -c "$T/unknown.conf"
  expect_refused unknown 'LISTEN_FDNAMES names "nope" but the config has no [listen nope] section' \
    "$T/unknown-p.sock"

  bad_conf unnamed "[listen local]" "unix = $T/unnamed-l.sock"
  run_with unnamed "$ACTIVATE" -N local="unix:$T/unnamed-p.sock" -- "$JRPCD" -c "$T/unnamed.conf"
  expect_refused unnamed 'fd 3 came without a name (no LISTEN_FDNAMES)' "$T/unnamed-p.sock"

  bad_conf twice "[listen local]" "unix = $T/twice-l.sock"
  run_with twice "$ACTIVATE" local="unix:$T/twice-a.sock" local="unix:$T/twice-b.sock" \
    -- "$JRPCD" -c "$T/twice.conf"
  expect_refused twice 'LISTEN_FDNAMES names "local" for both fd 3 and fd 4' \
    "$T/twice-a.sock" "$T/twice-b.sock"

  bad_conf tcp4unix "[listen local]" "unix = $T/tcp4unix-l.sock"
  run_with tcp4unix "$ACTIVATE" local="tcp:127.0.0.1:$p" -- "$JRPCD" -c "$T/tcp4unix.conf"
  expect_refused tcp4unix "[listen local] is a unix listener (unix:$T/tcp4unix-l.sock) but fd 3 from the service manager is a tcp socket (tcp:127.0.0.1:$p)"

  bad_conf unix4tcp "[listen net]" "tcp = 127.0.0.1:$p"
  run_with unix4tcp "$ACTIVATE" net="unix:$T/unix4tcp-p.sock" -- "$JRPCD" -c "$T/unix4tcp.conf"
  expect_refused unix4tcp "[listen net] is a tcp listener (tcp:127.0.0.1:$p) but fd 3 from the service manager is a unix socket (unix:$T/unix4tcp-p.sock)" \
    "$T/unix4tcp-p.sock"

  bad_conf unlistened "[listen local]" "unix = $T/unlistened-p.sock"
  run_with unlistened "$ACTIVATE" -L local="unix:$T/unlistened-p.sock" -- "$JRPCD" -c "$T/unlistened.conf"
  expect_refused unlistened "[listen local] fd 3 from the service manager (unix:$T/unlistened-p.sock) is not listening" \
    "$T/unlistened-p.sock"
}

# -t under activation checks the passed sockets as a start would, lists
# them, and neither binds nor removes anything.
test_check() {
  bad_conf t "[listen local]" "unix = $T/t-p.sock"
  run_with t "$ACTIVATE" local="unix:$T/t-p.sock" -- "$JRPCD" -t -c "$T/t.conf"
  if expect_rc t 0 &&
    expect_in t out "listen local: unix:$T/t-p.sock passed by the service manager as fd 3, newline framing" &&
    expect_in t out "listen own: unix:$T/t-own.sock mode 0660, newline framing" &&
    expect_in t out " math.add"; then
    pass "-t under activation: lists the passed socket, exit 0"
  fi
  [[ -S "$T/t-p.sock" ]] || fail "-t removed the passed socket file"
  [[ ! -e "$T/t-own.sock" ]] || fail "-t bound $T/t-own.sock"
  run_with t_bad "$ACTIVATE" nope="unix:$T/t-bad.sock" -- "$JRPCD" -t -c "$T/t.conf"
  if expect_rc t_bad 1 &&
    expect_in t_bad err 'LISTEN_FDNAMES names "nope" but the config has no [listen nope] section'; then
    pass "-t under activation: an unknown name is exit 1"
  fi
}

# The journal's format exactly when JOURNAL_STREAM is stderr's dev:inode.
# start_daemon and run_jrpcd truncate $T/NAME.err in place, so its inode,
# taken before, is that of the daemon's stderr.
test_journal() {
  local conf=$T/j.conf sock=$T/j.sock js
  cat >"$conf" <<EOF
$(conf_server 1)
[listen local]
unix = $T/j-section.sock
[listen own]
unix = $sock
$(conf_plugins math)
EOF
  : >"$T/journal.err"
  js=$(stat -L -c '%d:%i' "$T/journal.err")
  # The passed socket's path differs from the section's: a warning (<4>).
  JOURNAL_STREAM=$js start_with journal "$sock" \
    "$ACTIVATE" local="unix:$T/j-passed.sock" -- "$JRPCD" -c "$conf"
  local pid=$PID
  expect_call journal "$T/j-passed.sock" "$ADD" "$THREE"
  printf 'bogus\n' >>"$conf"
  kill -HUP "$pid"
  wait_log "$T/journal.err" "reload failed" || true
  stop_daemon journal "$pid" "$sock"
  if expect_in journal err "<6>listening on unix:$sock (newline framing)" &&
    expect_in journal err "<4>[listen local] says unix:$T/j-section.sock, but the service manager passed fd 3 bound to unix:$T/j-passed.sock" &&
    expect_in journal err "<3>reload failed" &&
    expect_in journal err "<6>stopped"; then
    pass "JOURNAL_STREAM is stderr: <6> info, <4> warning, <3> error"
  fi
  if grep -qvE '^<[3467]>' "$T/journal.err" || grep -qE "$STAMP|^<[0-9]>[0-9]{4}-" "$T/journal.err"; then
    fail "journal: a line without a priority, or with a timestamp"
    show "$T/journal.err"
  else
    pass "journal: every line starts with its priority, none has a timestamp"
  fi

  # A command-line error goes to the journal as an error too.
  : >"$T/jt.err"
  js=$(stat -L -c '%d:%i' "$T/jt.err")
  JOURNAL_STREAM=$js run_jrpcd jt -t -c "$T/does-not-exist.conf"
  expect_rc jt 1 && expect_in jt err "<3>jrpcd: $T/does-not-exist.conf" &&
    pass "journal: a config error of -t is <3>jrpcd: ..."

  # Someone else's stream (stdout's, say, or a parent's): timestamps.
  sed -i '$d' "$conf"
  JOURNAL_STREAM=$(stat -L -c '%d:%i' "$conf") start_daemon other "$conf" "$sock"
  stop_daemon other "$PID" "$sock"
  if grep -qE "${STAMP}info\] listening on unix:$sock" "$T/other.err" &&
    ! grep -q '^<' "$T/other.err"; then
    pass "JOURNAL_STREAM of another file: lines keep their timestamp"
  else
    fail "JOURNAL_STREAM of another file: expected timestamped lines"
    show "$T/other.err"
  fi
}

# verbosity NAME LOG_LEVEL FLAGS...: serves with the flags, makes one call,
# reloads (the level must survive it), makes another call, stops.
verbosity() {
  local name=$1 level=$2 sock=$T/$1.sock
  shift 2
  cat >"$T/$name.conf" <<EOF
[server]
workers = 1
log_level = $level
plugin_dir = $HANDLERS
[listen own]
unix = $sock
$(conf_plugins math)
EOF
  start_with "$name" "$sock" "$JRPCD" "$@" -c "$T/$name.conf"
  expect_call "$name" "$sock" "$ADD" "$THREE" >/dev/null
  kill -HUP "$PID"
  # The reload's own line is info: with -q or log_level = warn it is not
  # logged, so wait on the registry's generation instead.
  local i
  for ((i = 0; i < START_LIMIT_S * 20; i++)); do
    [[ "$(call "$sock" '{"jsonrpc":"2.0","method":"rpc.stats","id":1}')" == *'"generation":2'* ]] && break
    sleep 0.05
  done
  expect_call "$name" "$sock" "$ADD" "$THREE" >/dev/null
  # A failed reload: an error, which every level shows.
  printf 'bogus\n' >>"$T/$name.conf"
  kill -HUP "$PID"
  wait_log "$T/$name.err" "reload failed" || true
  stop_daemon "$name" "$PID" "$sock"
}

test_verbosity() {
  verbosity plain info
  if expect_in plain err "jrpcd[info] listening on" &&
    expect_not_in plain err "jrpcd[debug]" &&
    expect_in plain err "jrpcd[error] reload failed"; then
    pass "log_level = info, no flag: info lines, no debug"
  fi
  verbosity v info -v
  # The connection lines are debug; the one after the reload shows that
  # -v outlived it (a reload sets the config's level again).
  local after
  after=$(sed -n '/reloaded /,$p' "$T/v.err")
  if expect_in v err "jrpcd[debug] connection 1 on unix:$T/v.sock" &&
    [[ "$after" == *"jrpcd[debug] connection "* ]]; then
    pass "-v: debug lines (a connection's), also after a reload"
  else
    fail "-v: no debug line after the reload"
    show "$T/v.err"
  fi
  verbosity q info -q
  if expect_not_in q err "jrpcd[info]" &&
    expect_in q err "jrpcd[error] reload failed"; then
    pass "-q: info lines hidden, errors still logged"
  fi
  verbosity warn_v warn -v
  if expect_in warn_v err "jrpcd[info] listening on" &&
    expect_not_in warn_v err "jrpcd[debug]"; then
    pass "log_level = warn with -v: info, not debug"
  fi
  verbosity debug_q debug -q
  if expect_not_in debug_q err "jrpcd[debug]" &&
    expect_not_in debug_q err "jrpcd[info]" &&
    expect_in debug_q err "jrpcd[error] reload failed"; then
    pass "log_level = debug with -q: errors only"
  fi
  verbosity vvv warn -vvv
  expect_in vvv err "jrpcd[debug] connection" &&
    pass "-vvv: past debug is still debug"
}

# systemd's own launcher: it binds, waits for the first connection and
# execs jrpcd in its own pid.
test_systemd_socket_activate() {
  local ssa
  ssa=$(command -v systemd-socket-activate) || missing "systemd-socket-activate not installed"
  cat >"$T/ssa.conf" <<EOF
$(conf_server 1)
[listen local]
unix = $T/ssa.sock
[listen own]
unix = $T/ssa-own.sock
$(conf_plugins math)
EOF
  "$ssa" -l "$T/ssa.sock" --fdname=local "$JRPCD" -c "$T/ssa.conf" >"$T/ssa.out" 2>"$T/ssa.err" &
  local pid=$! i
  DAEMON_PIDS+=("$pid")
  for ((i = 0; i < START_LIMIT_S * 20; i++)); do
    [[ -S "$T/ssa.sock" ]] && break
    sleep 0.05
  done
  expect_call ssa "$T/ssa.sock" "$ADD" "$THREE"
  wait_log "$T/ssa.err" "serving " || true
  expect_in ssa err "for [listen local], passed by the service manager as fd 3" &&
    pass "systemd-socket-activate: the passed socket serves [listen local]"
  stop_daemon ssa "$pid" "$T/ssa-own.sock"
  [[ -S "$T/ssa.sock" ]] || fail "systemd-socket-activate: jrpcd removed $T/ssa.sock"
}

# The packaged units: the socket unit's name and path are those of
# [listen local] in conf/jrpcd.conf, and the service runs the installed
# binary.
test_units() {
  local svc=$ROOT/packaging/jrpcd.service sk=$ROOT/packaging/jrpcd.socket name path
  name=$(sed -n 's/^FileDescriptorName=//p' "$sk")
  path=$(sed -n 's/^ListenStream=//p' "$sk")
  if awk -v sec="[listen $name]" -v path="$path" '
      $0 == sec { in_sec = 1; next }
      /^\[/ { in_sec = 0 }
      in_sec && $1 == "unix" && $3 == path { found = 1 }
      END { exit !found }' "$ROOT/conf/jrpcd.conf"; then
    pass "jrpcd.socket: FileDescriptorName=$name and ListenStream=$path match conf/jrpcd.conf"
  else
    fail "jrpcd.socket: conf/jrpcd.conf has no [listen $name] with unix = $path"
  fi
  grep -qx 'ExecStart=/usr/bin/jrpcd -c /etc/jrpcd/jrpcd.conf' "$svc" ||
    fail "jrpcd.service: ExecStart is not /usr/bin/jrpcd -c /etc/jrpcd/jrpcd.conf"
}

# systemd-analyze verify has nothing to say about the packaged units. It
# checks that ExecStart's binary exists, so it sees copies naming this
# build's jrpcd; man pages are checked by man/check.sh, not here (--man=no).
test_units_verified() {
  local svc=$ROOT/packaging/jrpcd.service sk=$ROOT/packaging/jrpcd.socket
  command -v systemd-analyze >/dev/null || missing "systemd-analyze not installed"
  mkdir -p "$T/units"
  sed "s|/usr/bin/jrpcd|$JRPCD|" "$svc" >"$T/units/jrpcd.service"
  cp "$sk" "$T/units/jrpcd.socket"
  local rc=0
  systemd-analyze verify --man=no "$T/units/jrpcd.socket" "$T/units/jrpcd.service" \
    >"$T/verify.log" 2>&1 || rc=$?
  if grep -q 'jrpcd' "$T/verify.log"; then
    fail "systemd-analyze verify has remarks on the units:"
    show "$T/verify.log"
  elif ((rc != 0)); then
    show "$T/verify.log"
    missing "systemd-analyze verify cannot run here (exit $rc, no remark on our units)"
  else
    pass "systemd-analyze verify: no remarks on jrpcd.service and jrpcd.socket"
  fi
}

main() {
  need_daemon math
  need_file "$ACTIVATE" "tests/tools/sd_activate"
  need_file "$NOTIFY_RECV" "tests/tools/sd_notify_recv"
  need_file "$FX_ENV" "tests/tools/fx_env.so"
  need_cmd socat
  setup_tmp
  # With systemd's own tools, each its own ctest entry (skipped where the
  # tool is missing): cli_activation_ssa, cli_activation_units.
  case "$ONLY" in
  "") ;;
  systemd_socket_activate | units_verified)
    "test_$ONLY"
    finish
    return
    ;;
  *) die "no check named '$ONLY'" ;;
  esac
  test_passed
  test_not_ours
  test_refusals
  test_check
  test_journal
  test_verbosity
  test_units
  finish
}

main "$@"
