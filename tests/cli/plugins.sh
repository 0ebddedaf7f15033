#!/usr/bin/env bash
# plugins.sh JRPCD HANDLERS_DIR FIXTURE_DIR REPO_ROOT
#
# Plugin loading as the daemon does it, with the fixtures of tests/plugins:
# each broken module must be refused with its own message, under -t and at
# a real start, with strict_plugins = yes (start fails, no socket left) and
# no (the good plugins are served, the bad one's methods are not). Also:
# plugin config keys reaching init, and what start-up does with whatever
# already sits at the Unix socket path (a stale socket, a live jrpcd, a
# regular file).
set -euo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
# shellcheck source-path=SCRIPTDIR source=lib.sh
source "$here/lib.sh"

cli_args "$@"
# Absolute paths: configs name them, and messages are matched against them.

readonly NOT_FOUND='"error":{"code":-32601,"message":"Method not found"}'

# rpc METHOD [PARAMS]: a request line with id 1.
rpc() {
  if (($# > 1)); then
    printf '{"jsonrpc":"2.0","method":"%s","params":%s,"id":1}' "$1" "$2"
  else
    printf '{"jsonrpc":"2.0","method":"%s","id":1}' "$1"
  fi
}

result() {
  printf '{"jsonrpc":"2.0","result":%s,"id":1}' "$1"
}

# write_conf FILE SOCKET STRICT [PLUGIN...]: a config serving SOCKET with
# the given plugins, each "NAME=PATH[|KEY = VALUE...]".
write_conf() {
  local file=$1 sock=$2 strict=$3 spec kv
  shift 3
  {
    printf '[server]\nworkers = 1\nplugin_dir = %s\nstrict_plugins = %s\n' "$HANDLERS" "$strict"
    printf 'shutdown_timeout_ms = 2000\n\n[listen local]\nunix = %s\n' "$sock"
    for spec in "$@"; do
      local IFS='|'
      # shellcheck disable=SC2086 # split on '|' on purpose
      set -- $spec
      printf '\n[plugin %s]\npath = %s\n' "${1%%=*}" "${1#*=}"
      shift
      for kv in "$@"; do
        printf '%s\n' "$kv"
      done
    done
  } >"$file"
}

# The fixtures: where each is, what it must be refused with, and a method
# it would have registered had it been accepted.
readonly FIXTURES=(fx_bad_magic fx_abi_minor fx_abi_major fx_no_entry fx_init_fail fx_dup junk)
declare -A SO=() MESSAGE=() METHOD=()
set_expectations() {
  local major minor h=$ROOT/lib/include/jrpc/jrpc.h
  major=$(sed -n 's/^#define JRPC_ABI_MAJOR \([0-9]*\).*/\1/p' "$h")
  minor=$(sed -n 's/^#define JRPC_ABI_MINOR \([0-9]*\).*/\1/p' "$h")
  [[ -n "$major" && -n "$minor" ]] || die "cannot read the ABI version from $h"
  local fx
  for fx in "${FIXTURES[@]}"; do
    SO[$fx]=$FX/$fx.so
  done
  # Not a shared object at all: dlopen itself refuses it.
  SO[junk]=$T/junk.so
  printf 'this is not an ELF file\n' >"${SO[junk]}"
  MESSAGE[junk]="cannot load: $T/junk.so"
  METHOD[junk]=junk
  # fx_info.c changes one field: magic, minor + 1, or major + 1.
  MESSAGE[fx_bad_magic]="$FX/fx_bad_magic.so: not a jrpcd handler (bad magic"
  MESSAGE[fx_abi_minor]="$FX/fx_abi_minor.so: built for ABI $major.$((minor + 1)), jrpcd provides $major.$minor"
  MESSAGE[fx_abi_major]="$FX/fx_abi_major.so: built for ABI $((major + 1)).$minor, jrpcd provides $major.$minor"
  MESSAGE[fx_no_entry]="$FX/fx_no_entry.so: not a jrpcd handler"
  MESSAGE[fx_init_fail]="$FX/fx_init_fail.so: init failed"
  MESSAGE[fx_dup]="$FX/fx_dup.so: method \"math.add\" is already registered by $HANDLERS/math.so"
  METHOD[fx_bad_magic]=fx.should_not_load
  METHOD[fx_abi_minor]=fx.should_not_load
  METHOD[fx_abi_major]=fx.should_not_load
  METHOD[fx_no_entry]=fx_not_a_module
  # Registered before init failed: the loader must take it out again.
  METHOD[fx_init_fail]=fx.partial
  # fx_dup's only method is math.add, which must stay math's.
  METHOD[fx_dup]=""
}

# One fixture, loaded after math and fx_good, in all four ways.
test_fixture() {
  local fx=$1 msg=${MESSAGE[$1]} bad=${METHOD[$1]} so=${SO[$1]}
  local sock=$T/$fx.sock
  need_file "$so" "fixture $fx"

  # -t reports every plugin; a bad one makes it exit 1 with either setting.
  local strict
  for strict in yes no; do
    write_conf "$T/$fx.$strict.conf" "$sock" "$strict" \
      "math=math.so" "good=$FX/fx_good.so" "bad=$so"
    run_jrpcd "$fx-t-$strict" -t -c "$T/$fx.$strict.conf"
    if expect_rc "$fx-t-$strict" 1 &&
      expect_in "$fx-t-$strict" err "[plugin bad] $msg" &&
      expect_in "$fx-t-$strict" out " math.add" &&
      expect_in "$fx-t-$strict" out " fx.ok" &&
      expect_in "$fx-t-$strict" out "1 plugin failed to load"; then
      pass "$fx: -t with strict_plugins = $strict: exit 1, refused"
    fi
    [[ ! -e "$sock" ]] || fail "$fx: -t created the socket $sock"
  done

  # strict_plugins = yes: the start stops, promptly, before any listener.
  run_jrpcd "$fx-start-yes" -c "$T/$fx.yes.conf"
  if expect_rc "$fx-start-yes" 1 &&
    expect_in "$fx-start-yes" err "[plugin bad] $msg"; then
    pass "$fx: start with strict_plugins = yes: exit 1, refused"
  fi
  if [[ -e "$sock" ]]; then
    fail "$fx: a failed start left the socket file $sock"
    rm -f -- "$sock"
  fi

  # strict_plugins = no: logged and skipped, the others served.
  start_daemon "$fx-start-no" "$T/$fx.no.conf" "$sock"
  # The wording of the "skipped" suffix is the log's business; the reason
  # and that the plugin was skipped must be on one line.
  if grep -F -- "[plugin bad] $msg" "$T/$fx-start-no.err" | grep -q 'skipped'; then
    pass "$fx: start with strict_plugins = no: failure logged"
  else
    fail "$fx: with strict_plugins = no, stderr lacks a line with '[plugin bad] $msg' and 'skipped'"
    show "$T/$fx-start-no.err"
  fi
  expect_call "$fx-start-no" "$sock" "$(rpc math.add '[1,2]')" "$(result 3)"
  expect_call "$fx-start-no" "$sock" "$(rpc fx.ok)" "$(result true)"
  if [[ -n "$bad" ]]; then
    expect_call "$fx-start-no" "$sock" "$(rpc "$bad")" "{\"jsonrpc\":\"2.0\",$NOT_FOUND,\"id\":1}"
  fi
  stop_daemon "$fx-start-no" "$PID" "$sock"
}

# Every bad fixture in one config, between the good plugins: -t names each
# failure, and with strict_plugins = no the daemon serves what is left.
test_all_at_once() {
  local sock=$T/all.sock fx specs=("math=math.so")
  for fx in "${FIXTURES[@]}"; do
    specs+=("$fx=${SO[$fx]}")
  done
  specs+=("good=$FX/fx_good.so")
  write_conf "$T/all.conf" "$sock" no "${specs[@]}"
  run_jrpcd all-t -t -c "$T/all.conf"
  if expect_rc all-t 1 &&
    expect_in all-t out "${#FIXTURES[@]} plugins failed to load" &&
    expect_in all-t out " fx.ok"; then
    pass "all fixtures: -t exit 1, ${#FIXTURES[@]} failures counted"
  fi
  for fx in "${FIXTURES[@]}"; do
    expect_in all-t err "[plugin $fx] ${MESSAGE[$fx]}" || true
  done

  start_daemon all "$T/all.conf" "$sock"
  for fx in "${FIXTURES[@]}"; do
    expect_in all err "[plugin $fx] ${MESSAGE[$fx]}" || true
    if [[ -n "${METHOD[$fx]}" ]]; then
      expect_call all "$sock" "$(rpc "${METHOD[$fx]}")" "{\"jsonrpc\":\"2.0\",$NOT_FOUND,\"id\":1}"
    fi
  done
  expect_call all "$sock" "$(rpc math.add '[20,22]')" "$(result 42)"
  expect_call all "$sock" "$(rpc fx.ok)" "$(result true)"
  stop_daemon all "$PID" "$sock"
}

# "A plugin file that does not exist at all is a configuration error
# either way" (conf/jrpcd.conf): strict_plugins = no does not skip it.
test_missing_plugin_not_skipped() {
  local sock=$T/missing.sock
  write_conf "$T/missing.conf" "$sock" no "math=math.so" "gone=$T/gone.so"
  run_jrpcd missing -c "$T/missing.conf"
  if expect_rc missing 1 &&
    expect_in missing err "[plugin gone] path: $T/gone.so"; then
    pass "missing plugin file with strict_plugins = no: exit 1"
  fi
  [[ ! -e "$sock" ]] || fail "missing: a failed start left the socket file $sock"
}

# Keys of a plugin section other than path reach the plugin's init.
test_plugin_keys() {
  local sock=$T/keys.sock
  write_conf "$T/keys.conf" "$sock" yes "good=$FX/fx_good.so|greeting = hello"
  start_daemon keys "$T/keys.conf" "$sock"
  expect_call keys "$sock" "$(rpc fx.greeting)" "$(result '"hello"')"
  stop_daemon keys "$PID" "$sock"

  # Values as conf/jrpcd.conf defines them: "; " ends one, '#' is part of it.
  write_conf "$T/keys2.conf" "$sock" yes "good=$FX/fx_good.so|greeting = a#b  ; not part of it"
  start_daemon keys2 "$T/keys2.conf" "$sock"
  expect_call keys2 "$sock" "$(rpc fx.greeting)" "$(result '"a#b"')"
  stop_daemon keys2 "$PID" "$sock"

  # A plugin that rejects its key says why, through jrpc_init_error.
  write_conf "$T/badkey.conf" "$sock" yes "sleep=sleep.so|max_ms = abc"
  run_jrpcd badkey -t -c "$T/badkey.conf"
  if expect_rc badkey 1 &&
    expect_in badkey err "sleep.so: init failed: max_ms: expected a whole number"; then
    pass "a plugin's own init error message reaches the log"
  fi

  # Without the key fx_good does not register fx.greeting at all.
  write_conf "$T/nokeys.conf" "$sock" yes "good=$FX/fx_good.so"
  start_daemon nokeys "$T/nokeys.conf" "$sock"
  expect_call nokeys "$sock" "$(rpc fx.greeting)" "{\"jsonrpc\":\"2.0\",$NOT_FOUND,\"id\":1}"
  # SIGINT stops it like SIGTERM (the README lists both).
  stop_daemon nokeys "$PID" "$sock" INT
}

# A socket file left by a process killed with -9 is replaced at start.
test_stale_socket() {
  local sock=$T/stale.sock i spid
  socat "UNIX-LISTEN:$sock,fork" /dev/null 2>"$T/socat.err" &
  spid=$!
  DAEMON_PIDS+=("$spid") # killed by cleanup should the test die early
  for ((i = 0; i < 100; i++)); do
    [[ -S "$sock" ]] && break
    sleep 0.05
  done
  kill -KILL "$spid" 2>/dev/null || true
  wait "$spid" 2>/dev/null || true
  forget_pid "$spid"
  [[ -S "$sock" ]] || die "stale: socat did not leave a socket file at $sock"
  ! unix_connects "$sock" || die "stale: $sock still accepts connections after kill -9"

  write_conf "$T/stale.conf" "$sock" yes "math=math.so"
  start_daemon stale "$T/stale.conf" "$sock"
  # A new socket of jrpcd's, with the documented default mode.
  local mode
  mode=$(stat -c %a "$sock")
  [[ "$mode" == 660 ]] || fail "stale: replaced socket has mode $mode, expected 660 (the default)"
  expect_call stale "$sock" "$(rpc math.add '[2,3]')" "$(result 5)"
  stop_daemon stale "$PID" "$sock"
}

# A socket a live jrpcd serves is not taken over, and the loser leaves the
# winner's socket file alone while removing the one it made itself.
test_live_socket() {
  local sock=$T/live.sock own=$T/own.sock
  write_conf "$T/live.conf" "$sock" yes "math=math.so"
  start_daemon live "$T/live.conf" "$sock"
  local first=$PID

  run_jrpcd second -c "$T/live.conf"
  if expect_rc second 1 &&
    expect_in second err "$sock: another process is serving"; then
    pass "live: a second jrpcd on the same path exits 1"
  fi

  # Same, with a listener of its own opened before the contested one.
  {
    printf '[server]\nworkers = 1\nplugin_dir = %s\n' "$HANDLERS"
    printf '[listen own]\nunix = %s\n[listen local]\nunix = %s\n' "$own" "$sock"
    printf '[plugin math]\npath = math.so\n'
  } >"$T/second.conf"
  run_jrpcd second2 -c "$T/second.conf"
  if expect_rc second2 1 &&
    expect_in second2 err "another process is serving"; then
    pass "live: a second jrpcd with two listeners exits 1"
  fi
  [[ ! -e "$own" ]] || fail "live: the failed jrpcd left its own socket file $own"

  [[ -S "$sock" ]] || fail "live: the failed second jrpcd removed the first one's socket $sock"
  expect_call live "$sock" "$(rpc math.add '[1,1]')" "$(result 2)"
  stop_daemon live "$first" "$sock"
}

# Anything but a socket at the path is refused and left as it was.
test_regular_file() {
  local path=$T/file.sock
  printf 'not a socket, keep me\n' >"$path"
  cp -- "$path" "$T/file.orig"
  write_conf "$T/file.conf" "$path" yes "math=math.so"
  run_jrpcd file -c "$T/file.conf"
  if expect_rc file 1 &&
    expect_in file err "$path: the path exists and is not a socket"; then
    pass "regular file at the socket path: exit 1, not a socket"
  fi
  if [[ ! -f "$path" ]] || ! cmp -s "$path" "$T/file.orig"; then
    fail "regular file at the socket path was changed or removed"
  fi
}

main() {
  need_daemon math
  need_file "$FX/fx_good.so" "fixture fx_good"
  need_cmd socat
  setup_tmp
  set_expectations
  local fx
  for fx in "${FIXTURES[@]}"; do
    test_fixture "$fx"
  done
  test_all_at_once
  test_missing_plugin_not_skipped
  test_plugin_keys
  test_stale_socket
  test_live_socket
  test_regular_file
  finish
}

main "$@"
