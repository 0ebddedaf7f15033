#!/usr/bin/env bash
# sockpath.sh JRPCD HANDLERS_DIR FIXTURE_DIR REPO_ROOT [symlink_race]
#
# The default socket path and where jrpcd may put a socket (issue 21
# point 6), as root, with another user (nobody) as the attacker:
#
# - private_dir: without XDG_RUNTIME_DIR, jrpcd's built-in config and jrpc
#   agree on ${TMPDIR}/jrpcd-UID/jrpcd.sock, and jrpcd makes that
#   directory 0700; an XDG_RUNTIME_DIR of another user is not used.
# - planted_dir: nobody made that directory first and listens in it: jrpc
#   refuses and says why, and the listener gets no connection; jrpcd -t
#   and a start refuse too.
# - planted_socket: in our own XDG_RUNTIME_DIR, a socket file owned by
#   nobody: jrpc refuses before connecting (and -u PATH, the user's
#   choice, is not checked).
# - planted_listener: a root-owned socket file whose listener runs as
#   nobody (a file swapped after jrpc looked): jrpc connects, sees the
#   listener's uid, and sends not a byte.
# - world_writable: a unix path in a directory every user may write without
#   the sticky bit (as written, or through a symbolic link) is refused by
#   jrpcd -t and a start, naming file, line and key; sticky is accepted.
# - stale_other: a stale socket of another user is not removed.
# - symlink_race (its own ctest entry: needs strace): jrpcd is held for
#   0.5 s in every chmod (strace inject) while a watcher replaces the new
#   socket file with a symbolic link to a file of root's: the file's mode
#   and owner must not change.
set -euo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
# shellcheck source-path=SCRIPTDIR source=lib.sh
source "$here/lib.sh"

cli_args "$@"

# A listener that counts what it receives: prints "connections N bytes M"
# after every change; answers each line with math.add's reply, so that a
# client which sends gets through.
write_listener() {
  cat >"$T/listen.py" <<'EOF'
import socket, sys
path = sys.argv[1]
s = socket.socket(socket.AF_UNIX)
s.bind(path)
if len(sys.argv) > 2:  # "stale": bound, never listening, gone
    sys.exit(0)
s.listen(8)
conns = nbytes = 0
def report():
    print(f"connections {conns} bytes {nbytes}", flush=True)
report()
while True:
    c, _ = s.accept()
    conns += 1
    report()
    c.settimeout(5)
    try:
        while True:
            d = c.recv(65536)
            if not d:
                break
            nbytes += len(d)
            report()
            if b"\n" in d:
                c.sendall(b'{"jsonrpc":"2.0","result":3,"id":1}\n')
    except OSError:
        pass
    c.close()
EOF
  chmod 0644 "$T/listen.py"
}

# A command prefix: what follows runs as nobody (setpriv execs it, so a
# background one's pid is the command's own).
AS_NOBODY=(setpriv --reuid=nobody --regid=nogroup --clear-groups)

# listener NAME PATH [PREFIX...]: a background listener at PATH (run
# through PREFIX: AS_NOBODY), its reports in $T/NAME.log. Sets BG_PID.
listener() {
  local name=$1 path=$2
  shift 2
  start_bg "listener $name" "-S $path" "$@" /usr/bin/python3 "$T/listen.py" \
    "$path" >"$T/$name.log"
}

# expect_heard NAME WANT: the listener's last report is WANT (it may take
# a moment to accept a connection jrpc has already given up on).
expect_heard() {
  local got i
  for ((i = 0; i < 40; i++)); do
    got=$(tail -n 1 "$T/$1.log")
    [[ "$got" == "$2" ]] && break
    sleep 0.05
  done
  sleep 0.2
  got=$(tail -n 1 "$T/$1.log")
  if [[ "$got" == "$2" ]]; then
    pass "$1: the planted listener saw $got"
  else
    fail "$1: the planted listener saw \"$got\", expected \"$2\""
  fi
}

# in_env NAME ENV... -- CMD...: CMD with XDG_RUNTIME_DIR, JRPC_SOCKET and
# JRPC_ADDRESS unset, TMPDIR=$T/tmp, then ENV; sets RC, logs in
# $T/NAME.{out,err} (checked for sanitizer reports). CMD is "${JRPC_RUN[@]}"
# or "${JRPCD_RUN[@]}" and its arguments.
in_env() {
  local name=$1 envs=()
  shift
  while [[ $1 != -- ]]; do
    envs+=("$1")
    shift
  done
  shift
  RC=0
  env -u XDG_RUNTIME_DIR -u JRPC_SOCKET -u JRPC_ADDRESS TMPDIR="$T/tmp" \
    "${envs[@]}" "$@" >"$T/$name.out" 2>"$T/$name.err" || RC=$?
  check_sanitizer "$T/$name.err" "$name" || true
}

# expect_says NAME STATUS TEXT WHAT: run NAME exited with STATUS and said
# TEXT on stderr; passes as WHAT.
expect_says() {
  expect_rc "$1" "$2" && expect_in "$1" err "$3" && pass "$4"
  return 0 # a failure is counted, not fatal
}

serve_conf() { # FILE SOCKET
  printf '[server]\nworkers = 1\nplugin_dir = %s\n[listen local]\nunix = %s\nmode = 0600\n[plugin math]\npath = math.so\n' \
    "$HANDLERS" "$2" >"$1"
}

private_dir() {
  local dir=$T/tmp/jrpcd-$UID sock
  sock=$dir/jrpcd.sock
  in_env builtin_t -- "${JRPCD_RUN[@]}" -t
  if expect_rc builtin_t 0 && expect_in builtin_t out "listen local: unix:$sock mode 0600"; then
    pass "private_dir: jrpcd's built-in config serves $sock"
  fi
  if [[ -d $dir && ! -L $dir && "$(stat -c '%a %u' "$dir")" == "700 $UID" ]]; then
    pass "private_dir: jrpcd made $dir, mode 0700, ours"
  else
    fail "private_dir: $dir is not a directory of uid $UID with mode 0700:" \
      "$(stat -c '%F %a %u' "$dir" 2>&1)"
  fi
  # jrpc finds a daemon serving there without being told where. (mkdir:
  # the checks below still run, for a jrpcd that did not make it.)
  [[ -d $dir ]] || mkdir -m 0700 "$dir"
  serve_conf "$T/private.conf" "$sock"
  start_daemon private "$T/private.conf" "$sock"
  in_env agree -- "${JRPC_RUN[@]}" math.add 1 2
  if expect_rc agree 0 && [[ "$(cat "$T/agree.out")" == 3 ]]; then
    pass "private_dir: jrpc's default is jrpcd's: math.add 1 2 = 3"
  else
    fail "private_dir: jrpc did not reach the daemon at $sock"
  fi
  stop_daemon private "$PID" "$sock"
  # XDG_RUNTIME_DIR of ours is used as it is; another user's is not, by
  # either, with a warning.
  mkdir -m 0700 "$T/xdg"
  in_env xdg_t XDG_RUNTIME_DIR="$T/xdg" -- "${JRPCD_RUN[@]}" -t
  expect_rc xdg_t 0 && expect_in xdg_t out "unix:$T/xdg/jrpcd.sock mode" &&
    pass "private_dir: XDG_RUNTIME_DIR of ours is used"
  mkdir -m 0700 "$T/nbx"
  chown nobody "$T/nbx"
  local warn="XDG_RUNTIME_DIR=$T/nbx is owned by uid $NOBODY, not by us (uid $UID); using $sock"
  in_env xdg_other_t XDG_RUNTIME_DIR="$T/nbx" -- "${JRPCD_RUN[@]}" -t
  expect_rc xdg_other_t 0 && expect_in xdg_other_t out "unix:$sock mode" &&
    expect_in xdg_other_t err "$warn" &&
    pass "private_dir: jrpcd does not use another user's XDG_RUNTIME_DIR"
  in_env xdg_other XDG_RUNTIME_DIR="$T/nbx" -- "${JRPC_RUN[@]}" math.add 1 2
  expect_rc xdg_other 2 && expect_in xdg_other err "$warn" &&
    expect_in xdg_other err "cannot connect to unix:$sock:" &&
    pass "private_dir: nor does jrpc, and it looks where jrpcd would serve"
  return 0 # failures are counted, not fatal
}

planted_dir() {
  local dir=$T/tmp/jrpcd-$UID
  rm -rf -- "$dir"
  "${AS_NOBODY[@]}" mkdir -m 0755 "$dir"
  listener planted_dir "$dir/jrpcd.sock" "${AS_NOBODY[@]}"
  local pid=$BG_PID why="$dir is owned by uid $NOBODY, not by us (uid $UID)"
  in_env planted_dir_jrpc -- "${JRPC_RUN[@]}" math.add 1 2
  expect_says planted_dir_jrpc 2 "jrpc: $why" \
    "planted_dir: jrpc refuses: $why"
  expect_heard planted_dir "connections 0 bytes 0"
  in_env planted_dir_t -- "${JRPCD_RUN[@]}" -t
  expect_says planted_dir_t 1 "built-in config: $why" \
    "planted_dir: jrpcd -t refuses"
  in_env planted_dir_start -- "${JRPCD_RUN[@]}"
  expect_says planted_dir_start 1 "$why" \
    "planted_dir: a jrpcd start refuses"
  stop_bg "$pid"
  rm -rf -- "$dir"
  return 0 # failures are counted, not fatal
}

planted_socket() {
  local sock=$T/xdg/jrpcd.sock
  listener planted_socket "$sock"
  local pid=$BG_PID
  chown -h nobody "$sock"
  in_env planted_socket_jrpc XDG_RUNTIME_DIR="$T/xdg" -- "${JRPC_RUN[@]}" math.add 1 2
  expect_says planted_socket_jrpc 2 "jrpc: $sock belongs to uid $NOBODY, neither you (uid $UID) nor root" \
    "planted_socket: jrpc refuses a socket of uid $NOBODY on its default path"
  expect_heard planted_socket "connections 0 bytes 0"
  # -u PATH is the user's choice: no owner check.
  in_env chosen -- "${JRPC_RUN[@]}" -u "$sock" math.add 1 2
  expect_rc chosen 0 && [[ "$(cat "$T/chosen.out")" == 3 ]] &&
    pass "planted_socket: -u PATH is not checked (the user chose it)"
  stop_bg "$pid"
  rm -f -- "$sock"
  return 0 # failures are counted, not fatal
}

planted_listener() {
  local sock=$T/xdg/jrpcd.sock
  mkdir -m 0777 "$T/nb"
  chmod 0777 "$T/nb"
  listener planted_listener "$T/nb/jrpcd.sock" "${AS_NOBODY[@]}"
  local pid=$BG_PID
  mv "$T/nb/jrpcd.sock" "$sock"
  chown -h root "$sock"
  in_env planted_listener_jrpc XDG_RUNTIME_DIR="$T/xdg" -- "${JRPC_RUN[@]}" math.add 1 2
  expect_says planted_listener_jrpc 2 "jrpc: $sock is served by uid $NOBODY, neither you (uid $UID) nor root" \
    "planted_listener: jrpc refuses a listener of uid $NOBODY"
  expect_heard planted_listener "connections 1 bytes 0"
  stop_bg "$pid"
  rm -f -- "$sock"
  return 0 # failures are counted, not fatal
}

world_writable() {
  mkdir -m 0777 "$T/ww"
  chmod 0777 "$T/ww"
  ln -s "$T/ww" "$T/link"
  local what="may be written by every user and is not sticky"
  serve_conf "$T/ww.conf" "$T/ww/jrpcd.sock"
  refused_conf ww_t "$T/ww_t.conf:5: [listen local] unix: \"$T/ww/jrpcd.sock\": the directory $T/ww (mode 0777) $what" \
    "$(cat "$T/ww.conf")"
  run_jrpcd ww_start -c "$T/ww.conf"
  expect_says ww_start 1 "$T/ww.conf:5: [listen local] unix: \"$T/ww/jrpcd.sock\": the directory $T/ww (mode 0777) $what" \
    "world_writable: a start refuses"
  refused_conf ww_link "\"$T/link/jrpcd.sock\": the directory $T/link (mode 0777) $what" \
    "$(serve_conf /dev/stdout "$T/link/jrpcd.sock")"
  chmod +t "$T/ww"
  run_jrpcd ww_sticky -t -c "$T/ww.conf"
  expect_rc ww_sticky 0 && pass "world_writable: a sticky one is accepted"
  return 0 # failures are counted, not fatal
}

stale_other() {
  local sock=$T/st/jrpcd.sock
  mkdir -m 1777 "$T/st"
  chmod 1777 "$T/st"
  "${AS_NOBODY[@]}" /usr/bin/python3 "$T/listen.py" "$sock" stale
  serve_conf "$T/st.conf" "$sock"
  run_jrpcd stale_start -c "$T/st.conf"
  expect_says stale_start 1 "a socket nobody serves, but it belongs to uid $NOBODY, not to us" \
    "stale_other: another user's stale socket is not removed"
  [[ -S $sock && "$(stat -c %u "$sock")" == "$NOBODY" ]] ||
    fail "stale_other: $sock is gone or replaced"
  return 0 # failures are counted, not fatal
}

symlink_race() {
  command -v strace >/dev/null || missing "strace is needed to hold jrpcd between bind and chmod"
  local dir=$T/race sock=$T/race/jrpcd.sock target=$T/target
  mkdir -m 0755 "$dir"
  printf 'root only\n' >"$target"
  chmod 0600 "$target"
  printf '[server]\nworkers = 1\nplugin_dir = %s\n[listen local]\nunix = %s\nmode = 0606\nowner = nobody\n[plugin math]\npath = math.so\n' \
    "$HANDLERS" "$sock" >"$T/race.conf"
  # Replaces the socket file with a symbolic link to target the moment it
  # appears (rename over it: atomic).
  start_bg watcher "-e $T/watching" /usr/bin/python3 -c '
import os, sys, time
sock, target, flag = sys.argv[1:4]
open(flag, "w").close()
end = time.time() + 30
while time.time() < end:
    if os.path.lexists(sock) and not os.path.islink(sock):
        os.symlink(target, sock + ".link")
        os.rename(sock + ".link", sock)
        print("swapped", flush=True)
        break
    time.sleep(0.001)
' "$sock" "$target" "$T/watching" >"$T/watcher.log"
  local watcher=$BG_PID
  # Every chmod (chmod, fchmodat) waits 0.5 s: the window between the
  # socket's name appearing and its mode being set, if there is one, is
  # wide open. LeakSanitizer cannot run under ptrace.
  ASAN_OPTIONS=${ASAN_OPTIONS:+$ASAN_OPTIONS:}detect_leaks=0 \
    strace -I 1 -o /dev/null -e trace=chmod,fchmodat \
    -e inject=chmod,fchmodat:delay_enter=500000 \
    "$JRPCD" -c "$T/race.conf" >"$T/race.out" 2>"$T/race.err" &
  local tracer=$! pid="" i
  DAEMON_PIDS+=("$tracer")
  # jrpcd is strace's child; strace ending on SIGTERM would leave it.
  for ((i = 0; i < START_LIMIT_S * 20; i++)); do
    pid=$(pgrep -P "$tracer" || true)
    if [[ -n $pid ]] || ! alive "$tracer"; then
      break
    fi
    sleep 0.05
  done
  if [[ -z $pid ]]; then
    show "$T/race.err"
    die "symlink_race: strace did not start jrpcd, or it exited at once"
  fi
  DAEMON_PIDS+=("$pid")
  for ((i = 0; i < START_LIMIT_S * 20; i++)); do
    grep -q swapped "$T/watcher.log" && break
    alive "$pid" || break
    sleep 0.05
  done
  sleep 1 # for what jrpcd does after the swap (its chmod waits 0.5 s)
  local got
  got=$(stat -c '%a %U' "$target")
  if [[ "$got" == "600 root" ]]; then
    pass "symlink_race: the link's target kept mode 0600 and owner root"
  else
    fail "symlink_race: jrpcd applied its socket's mode and owner through" \
      "a symbolic link: $target is now \"$got\" (was \"600 root\")"
  fi
  grep -q swapped "$T/watcher.log" || fail "symlink_race: the socket never appeared (the watcher did not swap it)"
  # strace's part is over: it detaches on SIGTERM, and jrpcd, no longer
  # traced, is stopped as any daemon is. (Stopping jrpcd while traced was
  # seen twice in CI to leave it running for 20 s and more, never here;
  # the test is about the socket's mode, not about ptrace.)
  kill -TERM "$tracer" 2>/dev/null || true
  if ! wait_gone "$tracer" 10; then
    kill -KILL "$tracer" 2>/dev/null || true
    fail "symlink_race: strace did not detach within 10 s of SIGTERM"
  fi
  wait "$tracer" 2>/dev/null || true
  forget_pid "$tracer"
  kill -TERM "$pid" 2>/dev/null || true
  if ! wait_gone "$pid" "$STOP_LIMIT_S"; then
    fail "symlink_race: jrpcd did not stop within ${STOP_LIMIT_S} s of" \
      "SIGTERM ($(grep -E '^(State|TracerPid):' "/proc/$pid/status" 2>/dev/null | tr '\n\t' '  '))"
    kill -KILL "$pid" 2>/dev/null || true
    show "$T/race.err"
  elif ! grep -q 'jrpcd\[info\] stopped$' "$T/race.err"; then
    show "$T/race.err"
    fail "symlink_race: jrpcd ended without its \"stopped\" line"
  fi
  forget_pid "$pid"
  check_sanitizer "$T/race.err" symlink_race || true
  stop_bg "$watcher"
  return 0 # failures are counted, not fatal
}

main() {
  need_daemon math
  need_cmd socat
  local jrpc
  jrpc=$(realpath -e -- "$(dirname "$JRPCD")/../cli/jrpc") || die "jrpc not found beside $JRPCD (cli/jrpc)"
  JRPC_RUN=(timeout 30 "$jrpc" --no-check --timeout 5000)
  JRPCD_RUN=(timeout -k 5 "$START_LIMIT_S" "$JRPCD")
  ((EUID == 0)) || missing "another user (nobody) plants sockets: needs root"
  command -v setpriv >/dev/null || missing "setpriv (util-linux) is needed"
  [[ -x /usr/bin/python3 ]] || missing "/usr/bin/python3 is needed (for nobody)"
  [[ -e /run/jrpcd/jrpcd.sock ]] && missing "/run/jrpcd/jrpcd.sock exists: jrpc's default would be it"
  setup_tmp
  chmod 0755 "$T" # nobody reaches $T/tmp, $T/nb, $T/st
  mkdir -m 1777 "$T/tmp"
  chmod 1777 "$T/tmp"
  NOBODY=$(id -u nobody)
  write_listener
  if [[ $ONLY == symlink_race ]]; then
    symlink_race
  else
    [[ -z $ONLY ]] || die "no check $ONLY"
    private_dir
    planted_dir
    planted_socket
    planted_listener
    world_writable
    stale_other
  fi
  finish
}

main "$@"
