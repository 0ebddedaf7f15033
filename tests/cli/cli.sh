#!/usr/bin/env bash
# cli.sh JRPCD HANDLERS_DIR FIXTURE_DIR REPO_ROOT
#
# jrpcd's command line: -V, -h, bad options and arguments, -t on good and
# broken configs, -c on a missing file, and -t on the built-in config. None
# of these serves, so nothing here binds a socket.
set -euo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
# shellcheck source-path=SCRIPTDIR source=lib.sh
source "$here/lib.sh"

cli_args "$@"
# Absolute paths: configs name them, and messages are matched against them.

# The version from project() and the ABI from the public header: -V must
# report what the build was made from.
test_version() {
  local version major minor
  version=$(sed -n 's/^project(jrpcd VERSION \([0-9.]*\).*/\1/p' "$ROOT/CMakeLists.txt")
  major=$(sed -n 's/^#define JRPC_ABI_MAJOR \([0-9]*\).*/\1/p' "$ROOT/lib/include/jrpc/jrpc.h")
  minor=$(sed -n 's/^#define JRPC_ABI_MINOR \([0-9]*\).*/\1/p' "$ROOT/lib/include/jrpc/jrpc.h")
  [[ -n "$version" && -n "$major" && -n "$minor" ]] ||
    die "cannot read the version from CMakeLists.txt or the ABI from jrpc.h"
  run_jrpcd V -V
  if expect_rc V 0 &&
    expect_in V out "jrpcd $version (handler ABI $major.$minor)" &&
    expect_empty V err; then
    pass "-V: $(cat "$T/V.out")"
  fi
}

test_help() {
  local synopsis line
  # jrpcd(8) documents the synopsis; -h must agree with it, line for line
  # (the page writes metavariables in italics, the usage in capitals).
  synopsis=$(LC_ALL=C MANWIDTH=200 man -l "$ROOT/man/jrpcd.8" 2>/dev/null |
    awk '/^SYNOPSIS/ { on = 1; next } /^[A-Z]/ { on = 0 } on && NF { sub(/^ +/, ""); print }')
  [[ $synopsis == "jrpcd ["* ]] ||
    die "man/jrpcd.8 renders no 'jrpcd [...' synopsis (is man-db installed?)"
  run_jrpcd h -h
  while IFS= read -r line; do
    grep -qxF -- "$line" < <(sed -e 's/^usage: //' -e 's/^ *//' \
      -e 's/FILE/file/g' -e 's/NAME/name/g' "$T/h.out") ||
      fail "-h: the usage lacks jrpcd(8)'s synopsis line: $line"
  done <<<"$synopsis"
  if expect_rc h 0 &&
    expect_in h out "-t " &&
    expect_empty h err; then
    pass "-h: usage on stdout"
  fi
}

test_bad_usage() {
  run_jrpcd badopt -x
  if expect_rc badopt 2 &&
    expect_in badopt err "usage: jrpcd" &&
    expect_empty badopt out; then
    pass "-x: exit 2, usage on stderr"
  fi

  # getopt's other refusal: an option missing its argument.
  run_jrpcd noarg -c
  if expect_rc noarg 2 &&
    expect_in noarg err "usage: jrpcd"; then
    pass "-c without FILE: exit 2"
  fi

  run_jrpcd stray -t stray.conf
  if expect_rc stray 2 &&
    expect_in stray err 'unexpected argument "stray.conf"' &&
    expect_in stray err "usage: jrpcd" &&
    expect_empty stray out; then
    pass "stray argument: exit 2"
  fi
}

test_good_config() {
  cat >"$T/good.conf" <<EOF
$(conf_server 3)

[listen local]
unix = $T/good.sock
mode = 0640

[listen tcp6]
tcp = [::1]:7499
framing = length

$(conf_plugins math)
[plugin echo]
path = $HANDLERS/echo.so
$(conf_plugins sleep)
max_ms = 100
EOF
  run_jrpcd good -t -c "$T/good.conf"
  if expect_rc good 0 &&
    expect_in good out "config $T/good.conf: 3 workers, thread pool 6" &&
    expect_in good out "parser auto (native for every frame: " &&
    expect_in good out "; string scanning: " &&
    expect_in good out "listen local: unix:$T/good.sock mode 0640, newline framing" &&
    expect_in good out "listen tcp6: tcp:[::1]:7499, length framing" &&
    expect_in good out "plugin math ($HANDLERS/math.so" &&
    expect_in good out " math.add" &&
    expect_in good out " math.divide" &&
    expect_in good out "plugin echo ($HANDLERS/echo.so, module echo" &&
    expect_in good out " sleep.ms" &&
    expect_not_in good out "failed"; then
    pass "-t -c good.conf: exit 0, what auto chose and why, listeners and methods listed"
  fi
  # -t checks; it must not create the socket.
  [[ ! -e "$T/good.sock" ]] || fail "-t created the socket file $T/good.sock"
  # thread_pool as set (the default above: twice the workers).
  sed 's/^workers = 3$/workers = 3\nthread_pool = 1/' "$T/good.conf" >"$T/pool.conf"
  run_jrpcd pool -t -c "$T/pool.conf"
  if expect_rc pool 0 && expect_in pool out ": 3 workers, thread pool 1, "; then
    pass "-t prints thread_pool"
  fi
}

# The shipped, documented config must pass -t as it is, with only its
# commented-out plugin_dir pointed at this build and its socket's directory
# (/run/jrpcd, which systemd makes) at the test's.
test_shipped_config() {
  sed -e "s|^;plugin_dir = .*|plugin_dir = $HANDLERS|" \
    -e "s|^unix = /run/jrpcd/|unix = $T/|" "$ROOT/conf/jrpcd.conf" >"$T/jrpcd.conf"
  grep -q "^plugin_dir = $HANDLERS\$" "$T/jrpcd.conf" ||
    die "conf/jrpcd.conf has no ';plugin_dir = ...' line to point at the build"
  run_jrpcd shipped -t -c "$T/jrpcd.conf"
  if expect_rc shipped 0 &&
    expect_in shipped out "listen local: unix:$T/jrpcd.sock mode 0660, newline framing" &&
    expect_in shipped out "listen tcp: tcp:127.0.0.1:7400, newline framing" &&
    expect_in shipped out "listen tcp-length: tcp:127.0.0.1:7401, length framing" &&
    expect_in shipped out " math.add" &&
    expect_in shipped out " echo" &&
    expect_in shipped out " sleep.ms"; then
    pass "-t -c conf/jrpcd.conf: exit 0"
  fi
}

test_bad_configs() {
  bad_config unknown_key 'bogus = 1' '[server] bogus' 'unknown key' <<EOF
[server]
workers = 1
bogus = 1
[listen a]
unix = $T/a.sock
EOF
  bad_config unknown_listen_key 'port = 7400' '[listen a] port' 'unknown key' <<EOF
[listen a]
unix = $T/a.sock
port = 7400
EOF
  bad_config bad_value 'workers = many' '[server] workers' '"many" is not a number' <<EOF
[server]
log_level = info

workers = many
[listen a]
unix = $T/a.sock
EOF
  bad_config bad_framing 'framing = lines' '[listen a] framing' 'lines' <<EOF
[listen a]
unix = $T/a.sock
framing = lines
EOF
  bad_config missing_plugin 'path = nope.so' '[plugin nope] path' "$HANDLERS/nope.so" <<EOF
[server]
plugin_dir = $HANDLERS
[listen a]
unix = $T/a.sock
$(conf_plugins math nope)
EOF
}

# -v and -q at the command line; what they change in the log is tested by
# activation.sh, which serves.
test_verbosity_flags() {
  run_jrpcd hv -h
  if expect_in hv out "  -v " && expect_in hv out "  -q "; then
    pass "-h documents -v and -q"
  fi
  run_jrpcd qv -q -v -t -c "$T/good.conf"
  if expect_rc qv 2 &&
    expect_in qv err "-q and -v contradict each other" &&
    expect_in qv err "usage: jrpcd" &&
    expect_empty qv out; then
    pass "-q with -v: exit 2, usage on stderr"
  fi
  run_jrpcd vvv -vvv -t -c "$T/good.conf"
  if expect_rc vvv 0 && expect_in vvv out "config $T/good.conf: 3 workers"; then
    pass "-vvv -t: more -v than levels is fine"
  fi
  run_jrpcd q -q -t -c "$T/good.conf"
  if expect_rc q 0 && expect_in q out "config $T/good.conf: 3 workers"; then
    pass "-q -t: exit 0, the check still printed"
  fi
}

test_missing_file() {
  run_jrpcd nofile -c "$T/does-not-exist.conf"
  if expect_rc nofile 1 &&
    expect_in nofile err "$T/does-not-exist.conf" &&
    expect_in nofile err "cannot open"; then
    pass "-c missing file: exit 1, cannot open"
  fi
  run_jrpcd nofile_t -t -c "$T/does-not-exist.conf"
  if expect_rc nofile_t 1 &&
    expect_in nofile_t err "cannot open"; then
    pass "-t -c missing file: exit 1, cannot open"
  fi
}

# Without -c: the built-in config, with the plugins found in ../handlers
# next to the binary of this build tree and the socket in XDG_RUNTIME_DIR.
test_builtin() {
  # A prefix assignment on a function call is exported for its duration.
  XDG_RUNTIME_DIR=$T run_jrpcd builtin -t
  if expect_rc builtin 0 &&
    expect_in builtin out "config (built-in config)" &&
    expect_in builtin out "listen local: unix:$T/jrpcd.sock mode 0600, newline framing" &&
    expect_in builtin out "listen tcp: tcp:127.0.0.1:7400, newline framing" &&
    expect_in builtin out " math.add" &&
    expect_in builtin out " echo" &&
    expect_in builtin out " sleep.ms"; then
    pass "-t without -c: built-in config with math, echo, sleep"
  fi
  [[ ! -e "$T/jrpcd.sock" ]] || fail "-t created the socket file $T/jrpcd.sock"
}

main() {
  need_daemon math
  need_file "$ROOT/man/jrpcd.8" man/jrpcd.8
  setup_tmp
  test_version
  test_help
  test_bad_usage
  test_good_config
  test_verbosity_flags
  test_shipped_config
  test_bad_configs
  test_missing_file
  test_builtin
  finish
}

main "$@"
