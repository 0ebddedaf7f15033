#!/usr/bin/env bash
# access.sh JRPCD HANDLERS_DIR FIXTURE_DIR REPO_ROOT
#
# [listen] methods and the [access] section: a method outside a listener's
# list is -32601 exactly as an unknown one, and rpc.stats does not list it;
# [access] rules, first match deciding, by uid (a caller run as nobody
# through setpriv) and by address (clients bound to 127.0.0.1 and
# 127.0.0.2), answer -32006 with the method's name as data and count it
# as an error; default = deny; a reload applies new rules to connections
# already open; misuse stops the start with its line. Issue 21: a method
# name of 306 bytes under `admin.* = uid:0`, a peer in 300 groups allowed by
# the 300th, a ::ffff: principal matching an IPv4 peer, invalid globs
# refused at -t and on reload, a shadowed rule warned of.
set -euo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
# shellcheck source-path=SCRIPTDIR source=lib.sh
source "$here/lib.sh"

cli_args "$@"

req() { # METHOD PARAMS ID
  printf '{"jsonrpc":"2.0","method":"%s","params":%s,"id":%s}' "$1" "$2" "$3"
}
readonly NOT_FOUND='{"jsonrpc":"2.0","error":{"code":-32601,"message":"Method not found"},"id":1}'
denied() { # METHOD ID
  printf '{"jsonrpc":"2.0","error":{"code":-32006,"message":"Access denied","data":"%s"},"id":%s}' "$1" "$2"
}

# ask NAME WHO ADDRESS REQUEST WANT: the reply to REQUEST, sent as WHO (a
# user, or - for ourselves; USER/GID,GID,... for a user in those
# supplementary groups) to a socat ADDRESS, must be WANT.
ask() {
  local got groups=--clear-groups
  if [[ "$2" == */* ]]; then
    groups=--groups=${2#*/}
  fi
  if [[ "$2" == - ]]; then
    got=$(printf '%s\n' "$4" | timeout 10 socat -t 5 - "$3" 2>&1) || true
  else
    got=$(printf '%s\n' "$4" | timeout 10 setpriv --reuid="${2%%/*}" \
      --regid=nogroup "$groups" socat -t 5 - "$3" 2>&1) || true
  fi
  if [[ "$got" == "$5" ]]; then
    pass "$1"
  else
    fail "$1: $4"
    printf '  expected: %s\n  got:      %s\n' "$5" "$got" >&2
  fi
}

write_conf() { # ACCESS-LINES
  {
    cat <<CONF
$(conf_server)
[listen local]
unix = $T/a.sock
mode = 0666
methods = math.* rpc.stats
[listen net]
tcp = 127.0.0.1:$P
stats = yes
$(conf_plugins math echo)
[access]
CONF
    printf '%s\n' "$@"
  } >"$T/a.conf.new"
  mv "$T/a.conf.new" "$T/a.conf"
}

# until_logged FILE TEXT: 0 once FILE holds TEXT (literally), 1 if it does
# not within START_LIMIT_S.
until_logged() {
  local i
  for ((i = 0; i < START_LIMIT_S * 20; i++)); do
    grep -qF -- "$2" "$1" && return 0
    sleep 0.05
  done
  return 1
}

# Issue 21 points 2 and 8: names past the old 256-byte cliff, peers in more
# than 256 groups, ::ffff: principals, glob syntax, shadowed rules.
long_names_and_groups() {
  local long ok='{"jsonrpc":"2.0","result":true,"id":7}'
  long="admin.$(printf 'x%.0s' {1..300})"
  cat >"$T/g.conf" <<CONF
[server]
workers = 2
[listen local]
unix = $T/g.sock
mode = 0666
[listen net]
tcp = 127.0.0.1:$P
[plugin fx]
path = $FX/fx_good.so
alias = admin.
alias_pad = 300
[access]
admin.* = uid:0
fx.ok = gid:5299 ::ffff:127.0.0.2
admin.reboot = *
CONF
  local shadow="$T/g.conf:15: [access] admin.reboot: never decides: every method it matches, \"admin.*\" at line 13 matches first"
  run_jrpcd g_check -t -c "$T/g.conf"
  if ((RC == 0)) && grep -qF -- "$shadow" "$T/g_check.err"; then
    pass "-t warns of a rule an earlier one shadows, naming both lines"
  else
    fail "-t on a shadowed rule (exit $RC)"
    show "$T/g_check.err"
  fi
  start_daemon glob "$T/g.conf" "$T/g.sock"
  local pid=$PID unix="UNIX-CONNECT:$T/g.sock"
  expect_in glob err "$shadow" && pass "the start warns of it too"
  ask "a 306-byte admin.* name: root may call it" - "$unix" \
    "$(req "$long" '[]' 7)" "$ok"
  ask "a 306-byte admin.* name: nobody may not" nobody "$unix" \
    "$(req "$long" '[]' 7)" "$(denied "$long" 7)"
  ask "gid: of a peer's 300th supplementary group" \
    "nobody/$(seq -s, 5000 5299)" "$unix" "$(req fx.ok '[]' 7)" "$ok"
  ask "a peer in 256 groups, none of them gid:5299" \
    "nobody/$(seq -s, 5000 5255)" "$unix" "$(req fx.ok '[]' 7)" \
    "$(denied fx.ok 7)"
  ask "::ffff:127.0.0.2 names the IPv4 peer 127.0.0.2" - \
    "TCP:127.0.0.1:$P,bind=127.0.0.2" "$(req fx.ok '[]' 7)" "$ok"
  ask "::ffff:127.0.0.2 does not name 127.0.0.1" - \
    "TCP:127.0.0.1:$P,bind=127.0.0.1" "$(req fx.ok '[]' 7)" "$(denied fx.ok 7)"

  # An invalid glob on SIGHUP: the reload is refused with the reason, and
  # the rules as started keep deciding.
  sed -i 's/^mode = 0666$/mode = 0666\nmethods = fx.* admin.* [abc/' "$T/g.conf"
  kill -HUP "$pid"
  if until_logged "$T/glob.err" "reload failed, still serving the previous plugins: $T/g.conf:6: [listen local] methods: \"[abc\": an unclosed '['"; then
    pass "a reload with an invalid glob is refused with its line"
  else
    fail "a reload with an invalid glob"
    show "$T/glob.err"
  fi
  ask "after the refused reload, the rules still decide" nobody "$unix" \
    "$(req "$long" '[]' 7)" "$(denied "$long" 7)"
  stop_daemon glob "$pid" "$T/g.sock"

  refused_conf bad_methods_glob \
    "bad_methods_glob.conf:3: [listen x] methods: \"[abc\": an unclosed '['" \
    "$(printf '[listen x]\nunix = %s/x.sock\nmethods = math.* [abc' "$T")"
  refused_conf bad_access_glob \
    "bad_access_glob.conf:4: [access] math.[ab: \"math.[ab\": an unclosed '['" \
    "$(printf '[listen x]\nunix = %s/x.sock\n[access]\nmath.[ab = *' "$T")"
  refused_conf bad_glob_class \
    "bad_glob_class.conf:3: [listen x] methods: \"m[[:alpha:]]\": \"[:\" in a set: named classes such as [:alpha:] are not supported" \
    "$(printf '[listen x]\nunix = %s/x.sock\nmethods = m[[:alpha:]]' "$T")"
}

# group:NAME of a group whose /etc/group entry (3000 members, 30 KiB) is
# bigger than the 16 KiB its lookup had (then "no such group"), in a mount
# namespace of its own whose /etc/group holds it.
big_group() {
  unshare -m true 2>/dev/null || missing "unshare -m (a mount namespace) is refused here"
  {
    cat /etc/group
    printf 'jrpcdbig:x:5400:'
    seq -f 'member%g' -s, 1 3000
  } >"$T/group"
  printf '[listen x]\nunix = %s/x.sock\npeers = group:jrpcdbig\n' "$T" >"$T/big.conf"
  big_group_check "group: of a group with a 30 KiB entry resolves" big
  # [server] group is looked up by the same code (userdb.c), which a
  # 16 KiB buffer of its own once made "no such group" too.
  printf '[server]\ngroup = jrpcdbig\n[listen x]\nunix = %s/x.sock\n' "$T" >"$T/bigsrv.conf"
  big_group_check "[server] group = a group with a 30 KiB entry resolves" bigsrv
}

# jrpcd -t on $T/$2.conf with $T/group as /etc/group: passes with what $1 says.
big_group_check() {
  RC=0
  # shellcheck disable=SC2016 # the inner shell expands its own arguments
  unshare -m sh -c 'mount --bind "$1" /etc/group && exec "$2" -t -c "$3"' sh \
    "$T/group" "$JRPCD" "$T/$2.conf" >"$T/$2.out" 2>"$T/$2.err" || RC=$?
  if ((RC == 0)); then
    pass "$1"
  else
    fail "$1 (exit $RC)"
    show "$T/$2.err"
  fi
}

main() {
  need_daemon math
  need_cmd socat
  ((EUID == 0)) || missing "calling as another uid needs root"
  command -v setpriv >/dev/null || missing "setpriv (util-linux) is needed"
  setup_tmp
  chmod 0755 "$T"
  # A big group needs a mount namespace: its own ctest entry
  # (cli_access_big_group), which can be skipped.
  case "$ONLY" in
  "") ;;
  big_group)
    big_group
    finish
    return
    ;;
  *) die "no check named '$ONLY'" ;;
  esac
  P=$(free_port)
  local unix="UNIX-CONNECT:$T/a.sock" from1="TCP:127.0.0.1:$P,bind=127.0.0.1"
  local from2="TCP:127.0.0.1:$P,bind=127.0.0.2"

  write_conf "math.divide = uid:65534 127.0.0.2" "echo = 127.0.0.0/8" \
    "math.* = *"
  start_daemon access "$T/a.conf" "$T/a.sock"
  local pid=$PID

  # methods: echo is not served on local, as if it did not exist.
  ask "echo is not on local" - "$unix" "$(req echo '[1]' 1)" "$NOT_FOUND"
  ask "nor is an unknown method" - "$unix" "$(req no.such '[1]' 1)" "$NOT_FOUND"
  ask "echo is on net" - "$from1" "$(req echo '[1]' 1)" \
    '{"jsonrpc":"2.0","result":[1],"id":1}'
  local stats
  stats=$(printf '%s\n' "$(req rpc.stats '[]' 1)" | timeout 10 socat -t 5 - "$unix")
  if [[ "$stats" == *'"math.add"'* && "$stats" != *'"echo"'* ]]; then
    pass "rpc.stats on local lists math.* and not echo"
  else
    fail "rpc.stats on local: $stats"
  fi

  # [access]: the first matching line decides.
  ask "root may not divide" - "$unix" "$(req math.divide '[1,2]' 2)" \
    "$(denied math.divide 2)"
  ask "nobody may divide" nobody "$unix" "$(req math.divide '[1,2]' 2)" \
    '{"jsonrpc":"2.0","result":0.5,"id":2}'
  ask "127.0.0.2 may divide" - "$from2" "$(req math.divide '[1,2]' 2)" \
    '{"jsonrpc":"2.0","result":0.5,"id":2}'
  ask "127.0.0.1 may not divide" - "$from1" "$(req math.divide '[1,2]' 2)" \
    "$(denied math.divide 2)"
  ask "math.add: anyone (the third line)" - "$from1" "$(req math.add '[1,2]' 3)" \
    '{"jsonrpc":"2.0","result":3,"id":3}'
  stats=$(printf '%s\n' "$(req rpc.stats '[]' 4)" | timeout 10 socat -t 5 - "$from1")
  if [[ "$stats" == '{"jsonrpc":"2.0","result":{"uptime_ms":'* ]]; then
    pass "rpc.stats: no line names it, the default serves it"
  else
    fail "rpc.stats from 127.0.0.1: $stats"
  fi
  # Denials count as errors of their method.
  stats=$(printf '%s\n' "$(req rpc.stats '[]' 1)" | timeout 10 socat -t 5 - "$from2")
  if [[ "$stats" == *'"math.divide":{"calls":4,"errors":2,'* ]]; then
    pass "rpc.stats counts the two denials as errors"
  else
    fail "rpc.stats after the denials: $stats"
  fi

  # A reload: new rules for a connection already open. A client holds a
  # connection, calls, the rules change, it calls again on the same one.
  python3 - "$T/a.sock" "$T" "$pid" <<'PY' >"$T/reload.out" 2>&1 || fail "reload run: $(cat "$T/reload.out")"
import socket, sys, os, signal, time
path, tmp, pid = sys.argv[1], sys.argv[2], int(sys.argv[3])
s = socket.socket(socket.AF_UNIX); s.connect(path); s.settimeout(5)
f = s.makefile("rb")
def call(i):
    s.sendall(b'{"jsonrpc":"2.0","method":"math.divide","params":[1,2],"id":%d}\n' % i)
    return f.readline().decode().strip()
first = call(1)
conf = open(tmp + "/a.conf").read().replace("math.divide = uid:65534 127.0.0.2",
                                             "math.divide = uid:0")
open(tmp + "/a.conf.new", "w").write(conf); os.rename(tmp + "/a.conf.new", tmp + "/a.conf")
log = tmp + "/access.err"
before = open(log).read().count("reloaded")
os.kill(pid, signal.SIGHUP)
for _ in range(200):
    if open(log).read().count("reloaded") > before: break
    time.sleep(0.02)
time.sleep(0.2)  # every worker has taken the new generation
print(first); print(call(2))
PY
  if [[ "$(sed -n 1p "$T/reload.out")" == "$(denied math.divide 1)" &&
    "$(sed -n 2p "$T/reload.out")" == '{"jsonrpc":"2.0","result":0.5,"id":2}' ]]; then
    pass "a reload's rules reach a connection already open"
  else
    fail "reload and an open connection:"
    show "$T/reload.out"
  fi
  stop_daemon access "$pid" "$T/a.sock"

  # default = deny: a method no line names is denied.
  write_conf "math.add = *" "default = deny"
  start_daemon deny "$T/a.conf" "$T/a.sock"
  pid=$PID
  ask "default = deny: echo" - "$from1" "$(req echo '[1]' 5)" "$(denied echo 5)"
  ask "default = deny: math.add named" - "$from1" "$(req math.add '[1,2]' 6)" \
    '{"jsonrpc":"2.0","result":3,"id":6}'
  stop_daemon deny "$pid" "$T/a.sock"

  refused_conf bad_principal '[access] math.*: "nobody-at-all": not a principal' \
    "$(printf '[listen x]\nunix = %s/x.sock\n[access]\nmath.* = nobody-at-all' "$T")"
  refused_conf bad_default '"maybe" is not allow or deny' \
    "$(printf '[listen x]\nunix = %s/x.sock\n[access]\ndefault = maybe' "$T")"
  refused_conf twice_rule 'a rule for these methods is at line 4 already' \
    "$(printf '[listen x]\nunix = %s/x.sock\n[access]\na.* = *\na.* = uid:0' "$T")"
  refused_conf twice_section '[access]: defined twice (first at line 3)' \
    "$(printf '[listen x]\nunix = %s/x.sock\n[access]\n[access]' "$T")"
  need_file "$FX/fx_good.so" "the fx_good fixture"
  long_names_and_groups
  finish
}

main
