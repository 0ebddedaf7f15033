#!/usr/bin/env bash
# peers.sh JRPCD HANDLERS_DIR FIXTURE_DIR REPO_ROOT
#
# [listen] peers: who may connect. Unix peers by uid, user, gid and group
# (supplementary groups included), called as another user through
# setpriv; TCP peers by address and range, called from 127.0.0.1 and
# 127.0.0.2. A peer outside the list is closed before anything is read,
# with a log line at most once a second; a reload changes the lists for
# new connections; a reload without a listener's section fails; each
# misuse of the key stops the start with its line.
set -euo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
# shellcheck source-path=SCRIPTDIR source=lib.sh
source "$here/lib.sh"

cli_args "$@"


# as USER|- CMD...: CMD as that user (and its group, with supplementary
# group EXTRA when set), or as ourselves for "-".
as() {
  local who=$1
  shift
  if [[ "$who" == - ]]; then
    "$@"
  elif [[ -n "${EXTRA:-}" ]]; then
    setpriv --reuid="$who" --regid=nogroup --groups="$EXTRA" "$@"
  else
    setpriv --reuid="$who" --regid=nogroup --clear-groups "$@"
  fi
}

# served NAME WHO ADDRESS: a call as WHO to a socat ADDRESS is answered.
served() {
  local got
  got=$(printf '%s\n' "$ADD" | as "$2" timeout 10 socat -t 5 - "$3" 2>&1) || true
  if [[ "$got" == "$THREE" ]]; then
    pass "$1"
  else
    fail "$1: expected the reply, got: $got"
  fi
}

# refused NAME WHO ADDRESS: the connection is closed with nothing sent.
refused() {
  local got
  got=$(printf '%s\n' "$ADD" | as "$2" timeout 10 socat -t 5 - "$3" 2>/dev/null) || true
  if [[ -z "$got" ]]; then
    pass "$1"
  else
    fail "$1: expected a closed connection, got: $got"
  fi
}

write_conf() { # PEERS_LOCAL PEERS_GUESTS [omit guests]
  {
    cat <<CONF
$(conf_server)
[listen local]
unix = $T/local.sock
mode = 0666
peers = $1
CONF
    if [[ -z "${3:-}" ]]; then
      cat <<CONF
[listen guests]
unix = $T/guests.sock
mode = 0666
peers = $2
CONF
    fi
    cat <<CONF
[listen net]
tcp = 127.0.0.1:$P1
peers = 127.0.0.2 ::1
[listen lan]
tcp = 127.0.0.1:$P2
peers = 127.0.0.0/8
$(conf_plugins math)
[plugin peer]
path = $FX/fx_peer.so
CONF
  } >"$T/p.conf.new"
  mv "$T/p.conf.new" "$T/p.conf"
}

# hold WHO KIND ADDRESS N [BIND]: as WHO, opens N connections at once
# (unix path or tcp port) and keeps them all open while each sends a call;
# prints how many were answered and how many closed with nothing.
hold() {
  # Debian's python3, which any user may run (not one under root's home).
  as "$1" /usr/bin/python3 - "$2" "$3" "$4" "${5:-}" <<'PY'
import socket, sys
kind, addr, n, bind = sys.argv[1], sys.argv[2], int(sys.argv[3]), sys.argv[4]
req = b'{"jsonrpc":"2.0","method":"math.add","params":[1,2],"id":1}\n'
socks = []
for _ in range(n):
    if kind == "unix":
        s = socket.socket(socket.AF_UNIX)
        s.connect(addr)
    else:
        s = socket.socket()
        if bind:
            s.bind((bind, 0))
        s.connect(("127.0.0.1", int(addr)))
    s.settimeout(5)
    socks.append(s)
answered = closed = 0
for s in socks:
    try:
        s.sendall(req)
        got = s.recv(100)
    except OSError:
        got = b""
    if got.startswith(b'{"jsonrpc":"2.0","result":3'):
        answered += 1
    else:
        closed += 1
print(answered, closed)
PY
}

# per_peer: max_connections_per_peer = 3, per uid and per address.
per_peer() {
  local p3 got
  p3=$(free_port)
  cat >"$T/pp.conf" <<CONF
$(conf_server)
max_connections_per_peer = 3
[listen local]
unix = $T/pp.sock
mode = 0666
[listen net]
tcp = 127.0.0.1:$p3
$(conf_plugins math)
CONF
  start_daemon per_peer "$T/pp.conf" "$T/pp.sock"
  local pid=$PID
  got=$(hold - unix "$T/pp.sock" 5)
  if [[ "$got" == "3 2" ]]; then
    pass "root: 3 of 5 at once served"
  else
    fail "root, 5 at once: expected 3 served and 2 closed, got $got"
  fi
  got=$(hold nobody unix "$T/pp.sock" 3)
  if [[ "$got" == "3 0" ]]; then
    pass "another uid counts apart"
  else
    fail "nobody, 3 at once: expected all served, got $got"
  fi
  # Those closed: the count went back down.
  got=$(hold - unix "$T/pp.sock" 3)
  if [[ "$got" == "3 0" ]]; then
    pass "closed connections give their place back"
  else
    fail "root again, 3 at once: expected all served, got $got"
  fi
  got=$(hold - tcp "$p3" 4 127.0.0.2)
  if [[ "$got" == "3 1" ]]; then
    pass "127.0.0.2: 3 of 4 served"
  else
    fail "127.0.0.2, 4 at once: expected 3 served and 1 closed, got $got"
  fi
  got=$(hold - tcp "$p3" 3 127.0.0.3)
  if [[ "$got" == "3 0" ]]; then
    pass "127.0.0.3 counts apart"
  else
    fail "127.0.0.3, 3 at once: expected all served, got $got"
  fi
  if grep -q "has 3 connections open, max_connections_per_peer" "$T/per_peer.err"; then
    pass "the log says why"
  else
    fail "no log line for max_connections_per_peer"
    show "$T/per_peer.err"
  fi
  stop_daemon per_peer "$pid" "$T/pp.sock"
}

# whoami NAME WHO ADDRESS EXPECTED: fx.peer's result holds EXPECTED.
whoami() {
  local got
  got=$(printf '%s\n' '{"jsonrpc":"2.0","method":"fx.peer","id":1}' |
    as "$2" timeout 10 socat -t 5 - "$3" 2>&1) || true
  if [[ "$got" == *"$4"* ]]; then
    pass "$1"
  else
    fail "$1: expected $4 in: $got"
  fi
}

bad_conf() { # NAME EXPECTED-MESSAGE PEERS-LINE KIND-LINE
  refused_conf "$1" "$2" "$(printf '[listen x]\n%s\npeers = %s' "$4" "$3")"
}

main() {
  need_daemon math
  need_cmd socat
  command -v setpriv >/dev/null || missing "setpriv (util-linux) is needed"
  ((EUID == 0)) || missing "calling as another uid needs root"
  setup_tmp
  chmod 0755 "$T" # the other user reaches the sockets inside
  P1=$(free_port)
  P2=$(free_port)

  # A supplementary group of the other user's: one it is not in by default.
  EXTRA=
  local g=mail
  getent group "$g" >/dev/null || g=users

  write_conf "uid:0" "user:nobody gid:$(getent group "$g" | cut -d: -f3)"
  start_daemon peers "$T/p.conf" "$T/local.sock"
  local pid=$PID

  served "uid:0 lets root in" - "UNIX-CONNECT:$T/local.sock"
  refused "uid:0 keeps nobody out" nobody "UNIX-CONNECT:$T/local.sock"
  served "user:nobody lets nobody in" nobody "UNIX-CONNECT:$T/guests.sock"
  refused "guests keeps root out" - "UNIX-CONNECT:$T/guests.sock"
  # Another uid, let in by a supplementary group only.
  EXTRA=$g served "gid: of a supplementary group lets daemon in" daemon \
    "UNIX-CONNECT:$T/guests.sock"
  refused "without that group, daemon stays out" daemon \
    "UNIX-CONNECT:$T/guests.sock"

  served "127.0.0.2 is let in" - "TCP:127.0.0.1:$P1,bind=127.0.0.2"
  sleep 1.1 # past the log's once-a-second limit of the refusals above
  refused "127.0.0.1 is not" - "TCP:127.0.0.1:$P1,bind=127.0.0.1"
  served "127.0.0.0/8 takes 127.0.0.1" - "TCP:127.0.0.1:$P2,bind=127.0.0.1"
  served "127.0.0.0/8 takes 127.0.0.3" - "TCP:127.0.0.1:$P2,bind=127.0.0.3"

  # What a handler sees of its caller (jrpc_peer, ABI 1.2's transport).
  whoami "jrpc_peer: nobody over a Unix socket" nobody "UNIX-CONNECT:$T/guests.sock" \
    '"transport":"unix","uid":65534,"gid":65534,"addr":"","port":0,"cert_cn":""'
  whoami "jrpc_peer: 127.0.0.3 over TCP" - "TCP:127.0.0.1:$P2,bind=127.0.0.3" \
    '"transport":"tcp","uid":-1,"gid":-1,"addr":"127.0.0.3","port":'

  # Turned away: named in the log, at most about a line a second.
  if grep -q "tcp:127.0.0.1:$P1: 127.0.0.1:[0-9]* is not among its peers" "$T/peers.err"; then
    pass "the log names the peer turned away"
  else
    fail "no log line for the peer turned away"
    show "$T/peers.err"
  fi
  local before after i t0 secs
  before=$(grep -c "is not among its peers" "$T/peers.err")
  t0=$(date +%s%N)
  for ((i = 0; i < 40; i++)); do
    printf '' | timeout 5 socat -u - "TCP:127.0.0.1:$P1,bind=127.0.0.1" 2>/dev/null || true
  done
  after=$(grep -c "is not among its peers" "$T/peers.err")
  # About a line a second: as many as the seconds the 40 took (a loaded
  # machine stretches them), and one for the second it began in.
  secs=$((($(date +%s%N) - t0 + 999999999) / 1000000000))
  if ((after - before <= secs + 1)); then
    pass "40 peers turned away in ${secs} s: $((after - before)) more log lines"
  else
    fail "40 peers turned away in ${secs} s wrote $((after - before)) log lines"
  fi
  served "still serving after them" - "TCP:127.0.0.1:$P1,bind=127.0.0.2"

  # A reload swaps the lists for new connections.
  write_conf "user:nobody" "uid:0"
  kill -HUP "$pid"
  local n
  for ((n = 0; n < 100; n++)); do
    grep -q "reloaded" "$T/peers.err" && break
    sleep 0.05
  done
  refused "after the reload, root is out of local" - "UNIX-CONNECT:$T/local.sock"
  served "after the reload, nobody is in" nobody "UNIX-CONNECT:$T/local.sock"
  served "after the reload, root is in guests" - "UNIX-CONNECT:$T/guests.sock"

  # A reload without a listener's section changes nothing.
  write_conf "uid:0" "uid:0" omit
  kill -HUP "$pid"
  for ((n = 0; n < 100; n++)); do
    grep -q "reload failed" "$T/peers.err" && break
    sleep 0.05
  done
  if grep -q "reload failed.*\[listen guests\] is gone" "$T/peers.err"; then
    pass "a reload without [listen guests] fails"
  else
    fail "no failed reload for the missing section"
    show "$T/peers.err"
  fi
  refused "the previous lists still hold" - "UNIX-CONNECT:$T/local.sock"
  stop_daemon peers "$pid" "$T/local.sock"
  per_peer

  # Misuse, each with its line.
  bad_conf bad_kind_tcp '[listen x] peers: "uid:0": a uid or group names a Unix peer' \
    "uid:0" "tcp = 127.0.0.1:$P1"
  bad_conf bad_kind_unix '"10.0.0.0/8": an address names a TCP peer' \
    "10.0.0.0/8" "unix = $T/x.sock"
  bad_conf bad_cidr 'did you mean 10.0.0.0/8?' "10.0.0.1/8" "tcp = 127.0.0.1:$P1"
  bad_conf bad_user '"user:no-such-user-here": no such user' \
    "user:no-such-user-here" "unix = $T/x.sock"
  bad_conf bad_cert '"cert:billing": a certificate name needs a TLS listener (tls_cert)' \
    "cert:billing" "tcp = 127.0.0.1:$P1"
  bad_conf bad_any '"*" is for [access] rules' "*" "unix = $T/x.sock"
  finish
}

main
