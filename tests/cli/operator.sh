#!/usr/bin/env bash
# operator.sh JRPCD HANDLERS_DIR FIXTURE_DIR REPO_ROOT
#
# jrpcd's operator fixes of issue 25: --help and --version as -h and -V;
# -T's output is a config that -t and -c accept; the config traps an
# operator meets first (a typo, quotes, /metrics on a non-HTTP listener, a
# Unix socket in a directory that is not there) named with file and line.
set -euo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
# shellcheck source-path=SCRIPTDIR source=lib.sh
source "$here/lib.sh"

cli_args "$@"

test_long_options() {
  run_jrpcd h -h
  run_jrpcd help --help
  if expect_rc help 0 && expect_empty help err &&
    cmp -s "$T/h.out" "$T/help.out"; then
    pass "--help: the usage of -h, on stdout"
  else
    fail "--help differs from -h"
  fi
  run_jrpcd V -V
  run_jrpcd version --version
  if expect_rc version 0 && expect_in version out "jrpcd " &&
    cmp -s "$T/V.out" "$T/version.out"; then
    pass "--version: $(head -n1 "$T/version.out")"
  else
    fail "--version differs from -V"
  fi
}

# -T's stdout, saved, passes -t, gives the same -T again, and serves.
test_dump_roundtrip() {
  cat >"$T/first.conf" <<EOF
$(conf_server)
[listen plain]
unix = $T/plain.sock
mode = 0600
[listen web]
unix = $T/web.sock
framing = http
metrics = yes
$(conf_plugins math sleep)
max_ms = 100
EOF
  run_jrpcd dump1 -T -c "$T/first.conf"
  expect_rc dump1 0 || return 0
  expect_in dump1 err "listen plain: unix:$T/plain.sock" || return 0
  cp "$T/dump1.out" "$T/second.conf"
  run_jrpcd dump2 -T -c "$T/second.conf"
  if expect_rc dump2 0 &&
    diff <(sed 1d "$T/dump1.out") <(sed 1d "$T/dump2.out") >/dev/null; then
    pass "-T's output read back by -T: exit 0, the same settings"
  else
    show "$T/dump2.err"
    fail "-T's output is not a config -t reads back as it was"
  fi
  start_daemon served "$T/second.conf" "$T/plain.sock"
  expect_call "served from -T's output" "$T/plain.sock" \
    '{"jsonrpc":"2.0","method":"math.add","params":[1,2],"id":1}' \
    '{"jsonrpc":"2.0","result":3,"id":1}'
  stop_daemon served "$PID" "$T/plain.sock"
}

test_traps() {
  bad_config typo 'max_bach = 5' '[server] max_bach' 'did you mean max_batch?' <<EOF
[server]
max_bach = 5
[listen a]
unix = $T/a.sock
EOF
  bad_config quoted "unix = \"$T/q.sock\"" '[listen a] unix' "write unix = $T/q.sock" <<EOF
[listen a]
unix = "$T/q.sock"
EOF
  bad_config metrics 'metrics = yes' '[listen a] metrics' 'needs framing = http' <<EOF
[listen a]
unix = $T/a.sock
metrics = yes
EOF
}

# -t: a Unix socket's directory must exist, and be writable by whoever
# binds the socket and whoever removes it at the stop.
test_socket_dirs() {
  bad_config nodir "unix = $T/none/a.sock" '[listen a] unix' "its directory $T/none: No such file or directory" <<EOF
[listen a]
unix = $T/none/a.sock
EOF
  mkdir -m 0555 "$T/ro"
  if (($(id -u) == 0)); then
    # Root binds anywhere; the serving user must be able to remove it.
    bad_config rodir "unix = $T/ro/a.sock" '[listen a] unix' "not writable by nobody, whom jrpcd serves as" <<EOF
[server]
user = nobody
[listen a]
unix = $T/ro/a.sock
EOF
    chmod 0711 "$T" # nobody must reach it
    mkdir -m 0777 "$T/open"
    chmod +t "$T/open"
    cat >"$T/okdir.conf" <<EOF
[server]
user = nobody
[listen a]
unix = $T/open/a.sock
EOF
  else
    bad_config rodir "unix = $T/ro/a.sock" '[listen a] unix' "is not writable by uid $(id -u), who binds the socket" <<EOF
[listen a]
unix = $T/ro/a.sock
EOF
    mkdir "$T/open"
    printf '[listen a]\nunix = %s/open/a.sock\n' "$T" >"$T/okdir.conf"
  fi
  run_jrpcd okdir -t -c "$T/okdir.conf"
  if expect_rc okdir 0; then
    pass "-t: a writable socket directory passes"
  fi
}

# wait_log NAME TEXT: TEXT appears in $T/NAME.err within 10 s.
wait_log() {
  local i
  for ((i = 0; i < 200; i++)); do
    grep -qF -- "$2" "$T/$1.err" && return 0
    sleep 0.05
  done
  return 1
}

# A SIGHUP that changes what only a restart applies says so, key by key;
# what it does apply (log_level, methods) is not named.
test_reload_restart_keys() {
  cat >"$T/hup.conf" <<EOF
$(conf_server)
[listen a]
unix = $T/hup.sock
$(conf_plugins math)
EOF
  start_daemon hup "$T/hup.conf" "$T/hup.sock"
  local pid=$PID
  cat >"$T/hup.conf" <<EOF
[server]
workers = 3
log_level = debug
plugin_dir = $HANDLERS
[listen a]
unix = $T/hup.sock
framing = length
methods = math.add
[listen b]
unix = $T/hup-b.sock
$(conf_plugins math)
EOF
  kill -HUP "$pid"
  if wait_log hup "(generation 2)"; then
    local want
    for want in "[server] workers changed, but it takes effect only at a restart: not applied" \
      "[listen a] framing changed, but it takes effect only at a restart: not applied" \
      "[listen b] is new, but listeners change only at a restart: not applied"; do
      if grep -qF -- "$T/hup.conf: $want" "$T/hup.err"; then
        pass "SIGHUP: $want"
      else
        fail "SIGHUP: the log lacks: $want"
        show "$T/hup.err"
      fi
    done
    if grep -E "(log_level|methods|plugin_dir) changed" "$T/hup.err"; then
      fail "SIGHUP: a key the reload applies is said not to be"
    else
      pass "SIGHUP: log_level and methods, which it applies, not named"
    fi
  else
    fail "SIGHUP: no reload logged"
    show "$T/hup.err"
  fi
  stop_daemon hup "$pid" "$T/hup.sock"
}

# TLS files that do not load: -t names the file's line, the file and the
# reason, the OS's where the file does not open.
test_tls_errors() {
  if ! "$JRPCD" -V | grep -q '^TLS: OpenSSL'; then
    pass "TLS errors: skipped (a build without TLS)"
    return 0
  fi
  if ! command -v openssl >/dev/null; then
    pass "TLS errors: skipped (no openssl command)"
    return 0
  fi
  openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes \
    -keyout "$T/k.pem" -out "$T/c.pem" -days 2 -subj /CN=localhost \
    >/dev/null 2>&1 || die "openssl could not make a certificate"
  echo "not a key" >"$T/garbage.pem"
  mkdir "$T/adir"
  bad_config tls_missing "tls_key = $T/none.pem" '[listen t] tls_key' "$T/none.pem: No such file or directory" <<EOF
[listen t]
tcp = 127.0.0.1:1
tls_cert = $T/c.pem
tls_key = $T/none.pem
EOF
  bad_config tls_dir "tls_cert = $T/adir" '[listen t] tls_cert' "$T/adir: not a regular file" <<EOF
[listen t]
tcp = 127.0.0.1:1
tls_cert = $T/adir
tls_key = $T/k.pem
EOF
  bad_config tls_garbage "tls_key = $T/garbage.pem" '[listen t] tls_key' "$T/garbage.pem: " <<EOF
[listen t]
tcp = 127.0.0.1:1
tls_key = $T/garbage.pem
tls_cert = $T/c.pem
EOF
  if (($(id -u) != 0)); then
    chmod 000 "$T/k.pem"
    bad_config tls_denied "tls_key = $T/k.pem" '[listen t] tls_key' "$T/k.pem: Permission denied" <<EOF
[listen t]
tcp = 127.0.0.1:1
tls_cert = $T/c.pem
tls_key = $T/k.pem
EOF
  fi
}

# A plugin that declares its keys (jrpc_conf_keys): a typo in its section
# fails its load with the key meant; a declared key passes.
test_plugin_keys() {
  printf '[server]\nplugin_dir = %s\n[listen a]\nunix = %s/pk.sock\n[plugin sleep]\npath = sleep.so\nmax_msx = 5\n' \
    "$HANDLERS" "$T" >"$T/pk.conf"
  run_jrpcd pk -t -c "$T/pk.conf"
  if expect_rc pk 1 &&
    expect_in pk err "[plugin sleep] $HANDLERS/sleep.so: init failed: max_msx: unknown key; did you mean max_ms? (its keys: max_ms)"; then
    pass "a typo in [plugin sleep]: $(grep -m1 max_msx "$T/pk.err")"
  fi
  sed -i 's/^max_msx = 5$/max_ms = 5/' "$T/pk.conf"
  run_jrpcd pk_ok -t -c "$T/pk.conf"
  expect_rc pk_ok 0 && pass "[plugin sleep] max_ms = 5: accepted"
}

main() {
  need_daemon math
  setup_tmp
  test_long_options
  test_dump_roundtrip
  test_traps
  test_socket_dirs
  test_reload_restart_keys
  test_tls_errors
  test_plugin_keys
  finish
}

main "$@"
