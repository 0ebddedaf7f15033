#!/usr/bin/env bash
# Builds, configures and calls the handler example of README.md ("A
# handler"), so that the README's promise — a complete example — is kept.
#
# The blocks between <!-- handler-example --> and <!-- /handler-example -->
# are taken in order: the C source, the build command, the config, then the
# session ("$ " lines are commands, the lines after them their expected
# output). Two substitutions only: /tmp/ becomes this test's own directory
# (so runs never collide) and build/run/daemon/jrpcd the binary under test;
# the worker count and the parser choice in -t output depend on the CPU
# and are masked. The session's `jrpc` is JRPC (first on PATH), and the
# session must describe the method with `jrpc -d` (issue 25: the first
# handler describes its params), so a README without the jrpc_describe call
# or without that line fails.
#
#   handler_example.sh JRPCD REPO_ROOT JRPC
set -euo pipefail
jrpcd=$1
root=$2
PATH=$(cd "$(dirname "$3")" && pwd):$PATH
readme=$root/README.md
tmp=$(mktemp -d)
pid=
cleanup() {
  if [ -n "$pid" ] && kill -0 "$pid" 2>/dev/null; then
    kill -TERM "$pid" 2>/dev/null || true
    wait "$pid" 2>/dev/null || true
  fi
  rm -rf "$tmp"
}
trap cleanup EXIT
fail() {
  echo "FAIL: $*" >&2
  if [ -f "$tmp/jrpcd.log" ]; then
    echo "--- jrpcd log ---" >&2
    cat "$tmp/jrpcd.log" >&2
  fi
  exit 1
}

# The n-th fenced block (1-based) of the example section.
block() {
  awk -v want="$1" '
    /<!-- handler-example/ { on = 1; next }
    /<!-- \/handler-example -->/ { on = 0 }
    !on { next }
    /^```/ { if (inb) { inb = 0; next } n++; inb = 1; next }
    inb && n == want { print }
  ' "$readme"
}
localise() { sed -e "s#/tmp/#$tmp/#g" -e "s#build/run/daemon/jrpcd#$jrpcd#g"; }

block 1 >"$tmp/hello.c"
build=$(block 2 | localise)
block 3 | localise >"$tmp/hello.conf"
block 4 | localise >"$tmp/session"
for f in hello.c hello.conf session; do
  [ -s "$tmp/$f" ] || fail "README.md: no $f block in the handler example"
done
[ -n "$build" ] || fail "README.md: no build command in the handler example"
grep -qE '^\$ jrpc .*-d hello\.greet$' "$tmp/session" ||
  fail "README.md: the handler example's session does not describe hello.greet with jrpc -d"

cd "$tmp"
# The example must compile cleanly with warnings on, then as documented.
cc -Wall -Wextra -Wno-unused-parameter -Werror -fsyntax-only -I"$root/lib/include" hello.c ||
  fail "the README handler example has warnings"
(cd "$root" && eval "${build/hello.c/$tmp/hello.c}") ||
  fail "the README build command failed: $build"
[ -f "$tmp/hello.so" ] || fail "the build command made no hello.so"

mask='s/[0-9]+ workers/N workers/; s/thread pool [0-9]+/thread pool N/; s/parser auto \(.*\)$/parser auto (...)/'
# Run the session: each command's output must equal the lines after it.
expected=
command=
run_pending() {
  [ -n "$command" ] || return 0
  local got
  if [[ "$command" == *"&" ]]; then
    eval "${command%&} >/dev/null 2>\"$tmp/jrpcd.log\" &"
    pid=$!
    # Wait until it serves, at most 10 s: the socket file exists from its
    # bind on, a little before jrpcd listens and its workers run.
    for _ in $(seq 200); do
      grep -q "serving" "$tmp/jrpcd.log" 2>/dev/null && break
      sleep 0.05
    done
    grep -q "serving" "$tmp/jrpcd.log" 2>/dev/null ||
      fail "jrpcd did not start: $command"$'\n'"$(cat "$tmp/jrpcd.log")"
  else
    got=$(eval "$command" 2>&1 | sed -E "$mask") ||
      fail "command failed: $command"$'\n'"$got"
    local want
    want=$(printf '%s' "$expected" | sed -E "$mask")
    if [ "$got" != "$want" ]; then
      diff <(printf '%s\n' "$want") <(printf '%s\n' "$got") >&2 || true
      fail "output of: $command"
    fi
  fi
  command=
  expected=
}
while IFS= read -r line; do
  if [[ "$line" == '$ '* ]]; then
    run_pending
    command=${line#\$ }
  else
    expected+=${expected:+$'\n'}$line
  fi
done <"$tmp/session"
run_pending

[ -n "$pid" ] || fail "the session never started jrpcd"
kill -TERM "$pid"
status=0
wait "$pid" || status=$?
pid=
[ "$status" -eq 0 ] || fail "jrpcd exited with $status after SIGTERM"
[ ! -e "$tmp/hello.sock" ] || fail "jrpcd left its socket file behind"
if grep -qE 'AddressSanitizer|LeakSanitizer|runtime error' "$tmp/jrpcd.log"; then
  fail "sanitizer report in the jrpcd log"
fi
echo "README handler example: built, served and answered as documented"
