#!/usr/bin/env bash
# privs.sh JRPCD HANDLERS_DIR FIXTURE_DIR REPO_ROOT
#
# [server] user and group: a root start serves as that user and group once
# its sockets are bound and its plugins loaded (every uid and gid of the
# process, and its supplementary groups, as /proc shows them); a reload then
# loads plugins as that user, and says so when it cannot read one; group
# alone changes only the group; a start that cannot switch (not root) or
# names an unknown user stops with a message.
set -euo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
# shellcheck source-path=SCRIPTDIR source=lib.sh
source "$here/lib.sh"

cli_args "$@"

# proc_ids PID: "uids / gids / groups" from /proc/PID/status.
proc_ids() {
  awk '/^Uid:/ {u=$2" "$3" "$4" "$5} /^Gid:/ {g=$2" "$3" "$4" "$5}
       /^Groups:/ {$1=""; s=$0} END {print u" / "g" /"s}' "/proc/$1/status"
}

conf() { # FILE [SERVER-LINES] [EXTRA-PLUGIN-PATH]
  {
    printf '[server]\nworkers = 2\nplugin_dir = %s\n%s\n' "$HANDLERS" "${2:-}"
    printf '[listen local]\nunix = %s/run/p.sock\nmode = 0666\n' "$T"
    printf '[plugin math]\npath = math.so\n'
    if [[ -n "${3:-}" ]]; then
      printf '[plugin extra]\npath = %s\n' "$3"
    fi
  } >"$1.new"
  mv "$1.new" "$1"
}

expect_ids() { # NAME PID WANT
  local got
  got=$(proc_ids "$2")
  if [[ "$got" == "$3" ]]; then
    pass "$1: $got"
  else
    fail "$1: ids are \"$got\", expected \"$3\""
  fi
}

main() {
  need_daemon math
  need_cmd socat
  ((EUID == 0)) || missing "starting as root and switching needs root"
  command -v setpriv >/dev/null || missing "setpriv (util-linux) is needed"
  setup_tmp
  chmod 0755 "$T"
  # The socket's folder belongs to the user served as, so that jrpcd can
  # still remove the socket file when it stops.
  mkdir "$T/run"
  chown nobody:nogroup "$T/run"
  local nobody nogroup
  nobody=$(id -u nobody)
  nogroup=$(getent group nogroup | cut -d: -f3)

  conf "$T/u.conf" "user = nobody"
  start_daemon user "$T/u.conf" "$T/run/p.sock"
  local pid=$PID
  expect_ids "user = nobody" "$pid" \
    "$nobody $nobody $nobody $nobody / $nogroup $nogroup $nogroup $nogroup / $(id -G nobody)"
  expect_call user "$T/run/p.sock" "$ADD" "$THREE"
  if grep -q "serving as uid $nobody, gid $nogroup" "$T/user.err"; then
    pass "the log says whom it serves as"
  else
    fail "no 'serving as' line"
  fi
  # A plugin only root can read: the reload, as nobody, fails and says so.
  install -m 0600 "$HANDLERS/echo.so" "$T/secret.so"
  conf "$T/u.conf" "user = nobody" "$T/secret.so"
  kill -HUP "$pid"
  local i
  for ((i = 0; i < 100; i++)); do
    grep -q "reload failed" "$T/user.err" && break
    sleep 0.05
  done
  if grep -q "reload failed.*secret.so.*[Pp]ermission denied" "$T/user.err"; then
    pass "a plugin nobody cannot read: the reload fails with the reason"
  else
    fail "no failed reload for the unreadable plugin"
    show "$T/user.err"
  fi
  expect_call "after the failed reload" "$T/run/p.sock" "$ADD" "$THREE"
  stop_daemon user "$pid" "$T/run/p.sock"

  # group alone: the uid stays, the group and supplementary groups change.
  conf "$T/g.conf" "group = nogroup"
  start_daemon group "$T/g.conf" "$T/run/p.sock"
  pid=$PID
  expect_ids "group = nogroup" "$pid" "0 0 0 0 / $nogroup $nogroup $nogroup $nogroup / $nogroup"
  expect_call group "$T/run/p.sock" "$ADD" "$THREE"
  stop_daemon group "$pid" "$T/run/p.sock"

  # Started as the user already: nothing to switch, it serves.
  conf "$T/same.conf" "user = nobody"
  start_with same "$T/run/p.sock" setpriv --reuid=nobody --regid=nogroup \
    --clear-groups "$JRPCD" -c "$T/same.conf"
  pid=$PID
  expect_call "started as the user already" "$T/run/p.sock" "$ADD" "$THREE"
  stop_daemon same "$pid" "$T/run/p.sock"

  # Not root, asked to become another user: stops with the reason.
  conf "$T/root.conf" "user = root"
  RC=0
  timeout 10 setpriv --reuid=nobody --regid=nogroup --clear-groups \
    "$JRPCD" -c "$T/root.conf" >"$T/nonroot.out" 2>"$T/nonroot.err" || RC=$?
  if ((RC == 1)) && grep -q "switching needs jrpcd started as root" "$T/nonroot.err"; then
    pass "not root: refused with the reason"
  else
    fail "not root, user = root: exit $RC"
    show "$T/nonroot.err"
  fi
  [[ ! -e "$T/run/p.sock" ]] || fail "the refused start left its socket file"

  # Unknown names, at -t, with their line.
  conf "$T/bad.conf" "user = no-such-user-here"
  refused_conf bad_user ':4: [server] user: "no-such-user-here" is no user' \
    "$(cat "$T/bad.conf")"
  conf "$T/bad.conf" "group = no-such-group-here"
  refused_conf bad_group '"no-such-group-here" is no group' "$(cat "$T/bad.conf")"
  finish
}

main
