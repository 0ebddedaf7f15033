#!/usr/bin/env bash
# listeners.sh JRPCD HANDLERS_DIR FIXTURE_DIR REPO_ROOT [fd_limit]
#
# What a [listen] section promises about the socket itself: a Unix socket
# file with the configured mode, owner and group; TCP on IPv6 as well as
# IPv4, each with its framing. (Calls are checked with socat.)
set -euo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
# shellcheck source-path=SCRIPTDIR source=lib.sh
source "$here/lib.sh"

cli_args "$@"


main() {
  need_daemon math
  need_cmd socat
  setup_tmp
  # The open-file limit is its own ctest entry (cli_listeners_fd_limit),
  # which can be skipped.
  case "$ONLY" in
  "") ;;
  fd_limit)
    fd_limit
    finish
    return
    ;;
  *) die "no check named '$ONLY'" ;;
  esac
  local sock=$T/modes.sock p4 p6 user=nobody group=nogroup
  p4=$(free_port)
  p6=$(free_port)
  # Owner and group can only be given away by root; otherwise the keys are
  # still checked, with our own ids.
  if ((EUID != 0)); then
    user=$(id -un)
    group=$(id -gn)
  fi
  # Without IPv6 on the machine there is no [::1] to listen on.
  local v6=yes
  [[ -s /proc/net/if_inet6 ]] || v6=
  cat >"$T/l.conf" <<CONF
$(conf_server)
[listen local]
unix = $sock
mode = 0640
owner = $user
group = $group
[listen v4]
tcp = 127.0.0.1:$p4
stats = yes
${v6:+[listen v6]}
${v6:+tcp = [::1]:$p6}
${v6:+framing = length}
$(conf_plugins math)
CONF
  start_daemon modes "$T/l.conf" "$sock"
  local perm
  perm=$(stat -c '%a %U %G' "$sock")
  if [[ "$perm" == "640 $user $group" ]]; then
    pass "unix socket file: mode 0640, owner $user, group $group"
  else
    fail "unix socket file is '$perm', expected '640 $user $group'"
  fi
  expect_call modes "$sock" "$ADD" "$THREE"

  local got
  got=$(printf '%s\n' "$ADD" | timeout 10 socat -t 5 - "TCP4:127.0.0.1:$p4") || true
  if [[ "$got" == "$THREE" ]]; then
    pass "tcp on 127.0.0.1, newline framing"
  else
    fail "tcp 127.0.0.1:$p4: got '$got'"
  fi

  # stats = yes on a tcp listener: rpc.stats answers there.
  got=$(printf '%s\n' '{"jsonrpc":"2.0","method":"rpc.stats","id":2}' |
    timeout 10 socat -t 5 - "TCP4:127.0.0.1:$p4") || true
  if [[ "$got" == '{"jsonrpc":"2.0","result":{"uptime_ms":'*'"id":2}' ]]; then
    pass "rpc.stats on a tcp listener with stats = yes"
  else
    fail "rpc.stats on tcp with stats = yes: got '$got'"
  fi
  # Length framing over IPv6: a 4-byte big-endian length, then the payload.
  if [[ -z "$v6" ]]; then
    echo "note: no IPv6 on this machine; [::1] not tested" >&2
    stop_daemon modes "$PID" "$sock"
    finish
    return
  fi
  local len hex
  len=${#ADD}
  hex=$(printf '\\x%02x\\x%02x\\x%02x\\x%02x' 0 0 $((len >> 8)) $((len & 255)))
  got=$( (printf '%b%s' "$hex" "$ADD") | timeout 10 socat -t 5 - "TCP6:[::1]:$p6" |
    od -An -c | tr -s ' \n' ' ') || true
  local want
  want=$( (printf '%b%s' '\x00\x00\x00\x23' "$THREE") | od -An -c | tr -s ' \n' ' ')
  if [[ "$got" == "$want" ]]; then
    pass "tcp on [::1], length framing"
  else
    fail "tcp [::1]:$p6 length framing: got '$got', expected '$want'"
  fi
  stop_daemon modes "$PID" "$sock"
  finish
}

# jrpcd raises its open-file soft limit to the hard limit at start: one
# started with a soft limit of 256 serves with the hard one. A hard limit
# of 256 or less leaves nothing to raise: lifted for the check where that
# is allowed (CAP_SYS_RESOURCE), skipped elsewhere (cli_listeners_fd_limit).
fd_limit() {
  local hard raise=
  hard=$(ulimit -Hn)
  if [[ "$hard" != unlimited ]] && ((hard <= 256)); then
    (ulimit -Hn 4096) 2>/dev/null ||
      missing "open-file hard limit $hard: nothing to raise, and it cannot be lifted here"
    hard=4096
    raise=yes
  fi
  cat >"$T/fd.conf" <<CONF
[listen local]
unix = $T/fd.sock
[plugin math]
path = $HANDLERS/math.so
CONF
  local soft
  # shellcheck disable=SC2030,SC2031
  (if [[ -n "$raise" ]]; then ulimit -Hn "$hard"; fi &&
    ulimit -Sn 256 && exec "$JRPCD" -c "$T/fd.conf" >"$T/fdlimit.out" 2>"$T/fdlimit.err") &
  PID=$!
  DAEMON_PIDS+=("$PID")
  local i
  for ((i = 0; i < START_LIMIT_S * 20; i++)); do
    [[ -S "$T/fd.sock" ]] && unix_connects "$T/fd.sock" && break
    sleep 0.05
  done
  soft=$(awk '/^Max open files/ { print $4 }' "/proc/$PID/limits")
  if [[ "$soft" == "$hard" ]]; then
    pass "open-file soft limit raised from 256 to the hard limit $hard"
  else
    fail "open-file soft limit is '$soft', expected the hard limit $hard"
  fi
  stop_daemon fdlimit "$PID" "$T/fd.sock"
}

main "$@"
