#!/usr/bin/env bash
# live_examples.sh JRPCD HANDLERS_DIR BUILD_DIR REPO_ROOT
#
# Runs the examples of README.md and docs/*.md that no other test runs, as
# written, against live daemons: each sits between "<!-- NAME: this script
# ... -->" and "<!-- /NAME -->" (tests/docs/examples.sh checks that every
# code block is in such a section or exempt):
#
#   next-steps (README): the lines run.sh prints, against jrpcd serving its
#     built-in config as run.sh does; `jrpc math.add 1 2` must print 3;
#   http-setup (README): the token lines, then `jrpcd -t` of the
#     [listen http] block, which is served: /metrics answers 200 with the
#     token the lines made, 401 without;
#   socket-activation (docs/install.md): `jrpcd -t` of the built-in config,
#     systemd-socket-activate as written, then the call through it;
#   bench (docs/scaling.md): the jrpc-bench line against the built-in
#     config's socket, for 1 s instead of 5;
#   tls-config (docs/security.md): `jrpcd -t` of the [listen tls] block
#     with certificates made here, served; the tls-example call of that page
#     (with a client certificate for CN billing) must answer 3; a build
#     without TLS must refuse the block, as the page says;
#   fleet-config (docs/scaling.md): `jrpcd -t` of the instance config,
#     served with a nats-server on port 4222 that nats1.internal and
#     nats2.internal name (an /etc/hosts of this namespace); the page's
#     curl must show /health "serving" once the broker is held, and
#     "degraded" (still 200) after the nats-server is stopped; a build
#     without NATS must refuse the [cluster] section, as jrpcd.conf(5)
#     says;
#   admin-recipe, public-recipe (docs/security.md): each config through
#     `jrpcd -t`, served, and the call after it run as written (rpc.stats
#     answers; math.add from 10.0.0.5 answers 3, math.divide is -32006 as
#     its [access] says).
#
# To run them as written, the script runs in namespaces of its own (unshare
# --mount --net --pid; without them it is skipped, exit 77): its own
# loopback, with 10.0.0.5 on it (the public recipe's client address), so
# the documented ports (7400, 7443, 7402, 7480) collide with nothing; its
# own pid numbers, so `pidof jrpcd` finds this test's daemon only; a tmpfs
# on /run (the admin recipe's /run/jrpcd/admin.sock); and an /etc/group
# with the admin recipe's operator group, jrpcadm, bind-mounted over the
# system's. What is rewritten, and why:
#   - /etc/jrpcd/ becomes this test's $T/etc/jrpcd/ (a system path: the
#     token file, the TLS certificates);
#   - build/run/ is this build: the commands run in a folder where
#     build/run is a link to BUILD_DIR, and `./scripts/run.sh ARGS` (which
#     builds build/run, then execs build/run/daemon/jrpcd ARGS) runs that
#     last step only;
#   - /run/jrpcd exists, as the unit's RuntimeDirectory= makes it;
#   - `sudo` is a program that runs its arguments (the test runs as root);
#   - jrpc-bench's `-d 5` is `-d 1`;
#   - a config block that calls a sample plugin gets `[plugin math]` and
#     `[plugin echo]` sections after it, the block itself unchanged.
set -euo pipefail

# shellcheck source-path=SCRIPTDIR source=lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
docs_args "$@"

if [[ -z ${JRPC_LIVE_EXAMPLES_NS:-} ]]; then
  ((EUID == 0)) || missing "not root: the examples need namespaces of their own"
  unshare --mount --net --pid --fork --mount-proc true 2>/dev/null ||
    missing "unshare --mount --net --pid is refused here"
  JRPC_LIVE_EXAMPLES_NS=1 exec unshare --mount --net --pid --fork --mount-proc \
    --propagation private bash "$0" "$@"
fi

for c in socat curl openssl ip systemd-socket-activate; do
  command -v "$c" >/dev/null || missing "$c is not installed"
done
for f in daemon/jrpcd cli/jrpc bench/jrpc-bench; do
  need_file "$BUILD/$f" "$f of the build"
done
setup_tmp

# The namespaces' set-up (see the top).
ip link set lo up
ip addr add 10.0.0.5/8 dev lo
mount -t tmpfs -o mode=0755 tmpfs /run
mkdir -m 0755 /run/jrpcd # as the unit's RuntimeDirectory=jrpcd does
cp /etc/group "$T/group"
getent group jrpcadm >/dev/null || echo "jrpcadm:x:60007:" >>"$T/group"
mount --bind "$T/group" /etc/group
mkdir -p "$T/cwd/build" "$T/bin" "$T/etc/jrpcd" "$T/xdg"
chmod 0700 "$T/xdg"
ln -s "$BUILD" "$T/cwd/build/run"
printf '#!/bin/sh\nexec "$@"\n' >"$T/bin/sudo"
chmod +x "$T/bin/sudo"
PATH="$T/bin:${JRPCD%/*}:$PATH"
export XDG_RUNTIME_DIR=$T/xdg PATH
unset JRPC_SOCKET JRPC_ADDRESS JRPC_URL JRPC_TOKEN
cd "$T/cwd"

# block FILE SECTION N: the N-th code block of SECTION in FILE, with the
# rewrites above applied.
block() {
  awk -v want="$2" -v n="$3" '
    index($0, "<!-- " want ":") == 1 { on = 1; next }
    on && $0 == "<!-- /" want " -->" { exit }
    !on { next }
    /^```/ { if (inb) { inb = 0; next } k++; inb = 1; next }
    inb && k == n { print }
  ' "$ROOT/$1" | sed -e "s#/etc/jrpcd/#$T/etc/jrpcd/#g" \
    -e 's#^\./scripts/run\.sh#build/run/daemon/jrpcd#' -e 's#jrpc-bench \(.*\) -d 5 #jrpc-bench \1 -d 1 #'
}
# need_block FILE SECTION N: as block, into $T/block; fails the test when
# the section has no such block.
need_block() {
  block "$@" >"$T/block"
  [[ -s $T/block ]] || die "$1: section $2 has no code block $3"
}

# The reply of the docs' math.add call, as expect_run's whole output.
# shellcheck disable=SC2001 # a class of characters, each escaped
THREE_RE="^$(sed 's/[][{}.^$*+?()|\\]/\\&/g' <<<"$THREE") \$"

plugins() {
  printf '\n[plugin math]\npath = %s/math.so\n\n[plugin echo]\npath = %s/echo.so\n' "$HANDLERS" "$HANDLERS"
}

# serve_conf NAME SOCKET|HOST:PORT: `jrpcd -t` of $T/NAME.conf, then
# serves it until it accepts connections there. Sets PID.
serve_conf() {
  local name=$1 where=$2 i
  run_jrpcd "$name-t" -t -c "$T/$name.conf"
  if ! expect_rc "$name-t" 0; then
    die "$name: jrpcd -t refused the documented config"
  fi
  pass "$name: jrpcd -t: $(head -n1 "$T/$name-t.out")"
  if [[ $where == /* ]]; then
    start_daemon "$name" "$T/$name.conf" "$where"
    return
  fi
  "$JRPCD" -c "$T/$name.conf" >"$T/$name.out" 2>"$T/$name.err" &
  PID=$!
  DAEMON_PIDS+=("$PID")
  for ((i = 0; i < START_LIMIT_S * 20; i++)); do
    alive "$PID" || { show "$T/$name.err"; die "$name: jrpcd exited instead of serving"; }
    timeout 2 socat -u /dev/null "TCP:$where" 2>/dev/null && return 0
    sleep 0.05
  done
  die "$name: jrpcd did not listen on $where within ${START_LIMIT_S}s"
}

# expect_run NAME WANT: runs $T/block with bash; its output must match the
# extended regular expression WANT (whole output, newlines as spaces).
expect_run() {
  local name=$1 want=$2 got rc=0
  got=$(timeout 30 bash "$T/block" 2>"$T/$name.stderr" | tr '\n' ' ') || rc=$?
  check_sanitizer "$T/$name.stderr" "$name" || true
  if ((rc == 0)) && [[ $got =~ $want ]]; then
    pass "$name: $(head -c 200 "$T/block" | head -n1) -> ${got:0:120}"
  else
    fail "$name: exit $rc, output: $got (expected: $want)"
    sed 's/^/  | /' "$T/block" >&2
    show "$T/$name.stderr"
  fi
}

# README.md, next-steps and docs/scaling.md, bench: jrpcd as run.sh serves
# it (the built-in config, no arguments).
run_next_steps_and_bench() {
  start_with next-steps "$XDG_RUNTIME_DIR/jrpcd.sock" build/run/daemon/jrpcd
  need_block README.md next-steps 1
  expect_run next-steps '^3 .*math\.add'
  need_block docs/scaling.md bench 1
  expect_run bench 'errors +0 .*server cpu +[0-9.]+ s \(pid [0-9]+\)'
  stop_daemon next-steps "$PID" "$XDG_RUNTIME_DIR/jrpcd.sock"
}

# docs/install.md, socket-activation: the first line (jrpcd -t), the
# second in the background, the last a call through the passed socket.
run_socket_activation() {
  local line sock=$XDG_RUNTIME_DIR/jrpcd.sock
  need_block docs/install.md socket-activation 1
  mapfile -t line < <(grep -v '^#' "$T/block")
  ((${#line[@]} == 3)) || die "docs/install.md, socket-activation: 3 commands expected, got ${#line[@]}"
  if bash -c "${line[0]}" >"$T/ssa-t.out" 2>&1; then
    pass "socket-activation: ${line[0]}"
  else
    fail "socket-activation: ${line[0]}"
    show "$T/ssa-t.out"
  fi
  start_bg systemd-socket-activate "-S $sock" bash -c "exec ${line[1]}" >"$T/ssa.out" 2>"$T/ssa.err"
  printf '%s\n' "${line[2]}" >"$T/block"
  expect_run socket-activation "$THREE_RE"
  # The socket is systemd-socket-activate's: jrpcd leaves a passed one.
  stop_daemon ssa "$BG_PID"
  rm -f "$sock"
}

# README.md, http-setup: the token lines, then the listener they are for.
run_http_setup() {
  local token code
  need_block README.md http-setup 2
  # shellcheck disable=SC2016 # expanded by the block's shell
  printf 'printf %%s "$JRPC_TOKEN" >%q\n' "$T/token.seen" >>"$T/block"
  (cd "$T" && bash -e "$T/block") >"$T/token.log" 2>&1 ||
    { show "$T/token.log"; die "http-setup: the token lines failed"; }
  token=$(cat "$T/token.seen")
  [[ ${#token} -ge 32 ]] || die "http-setup: JRPC_TOKEN is '$token' after the token lines"
  expect_eq "http-setup: the token file's mode and owner" \
    "$(stat -c '%a %U' "$T/etc/jrpcd/tokens")" "600 root"
  need_block README.md http-setup 1
  cp "$T/block" "$T/http.conf"
  serve_conf http 127.0.0.1:7480
  code=$(curl -s -o /dev/null -w '%{http_code}' -H "Authorization: Bearer $token" http://127.0.0.1:7480/metrics)
  expect_eq "http-setup: GET /metrics with the token made by the README's lines" "$code" 200
  code=$(curl -s -o /dev/null -w '%{http_code}' http://127.0.0.1:7480/metrics)
  expect_eq "http-setup: GET /metrics without a token" "$code" 401
  stop_daemon http "$PID"
}

# A CA (openssl req), and CN's key and certificate signed by it.
make_ca() {
  openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -days 2 \
    -subj "/CN=$2" -keyout "$1.key" -out "$1.pem" 2>/dev/null
}
make_cert() { # make_cert CA OUT CN [SAN]
  openssl req -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -subj "/CN=$3" \
    -keyout "$2.key" -out "$2.csr" 2>/dev/null
  openssl x509 -req -in "$2.csr" -CA "$1.pem" -CAkey "$1.key" -CAcreateserial -days 2 \
    ${4:+-extfile <(printf 'subjectAltName=%s\n' "$4")} -out "$2.pem" 2>/dev/null
}

# docs/security.md, tls-config, with the tls-example call of the same page
# from the current directory's ca.pem, client.pem and client.key.
run_tls() {
  local e=$T/etc/jrpcd
  need_block docs/security.md tls-config 1
  if "$JRPCD" -V | grep -q "^TLS: no (built with -DJRPC_TLS=OFF)$"; then
    # As the page says: such a build refuses the tls_ keys.
    cp "$T/block" "$T/tls.conf"
    run_jrpcd tls-off -t -c "$T/tls.conf"
    expect_rc tls-off 1 && expect_in tls-off err "needs a build with TLS (-DJRPC_TLS=ON)" &&
      pass "tls-config: a build without TLS refuses it: $(head -n1 "$T/tls-off.err")"
    return 0
  fi
  make_ca "$T/tls-ca" "jrpcd test server CA"
  make_cert "$T/tls-ca" "$e/server" 127.0.0.1 IP:127.0.0.1
  make_ca "$e/clients-ca" "jrpcd test clients CA"
  make_cert "$e/clients-ca" "$T/cwd/client" billing
  cp "$T/tls-ca.pem" "$T/cwd/ca.pem"
  { cat "$T/block"; plugins; } >"$T/tls.conf"
  serve_conf tls 127.0.0.1:7443
  need_block docs/security.md tls-example 1
  sed -i -n 's/^\$ //p' "$T/block"
  expect_run tls-example "$THREE_RE"
  stop_daemon tls "$PID"
}

# health_is NAME WANT: runs $T/block (the curl of /health) until it prints
# exactly WANT, for at most 10 s.
health_is() {
  local got="" i
  for ((i = 0; i < 100; i++)); do
    got=$(timeout 5 bash "$T/block" 2>/dev/null) || true
    [[ $got == "$2" ]] && break
    sleep 0.1
  done
  expect_eq "$1" "$got" "$2"
}

# docs/scaling.md, fleet-config: one instance of the fleet and its broker.
run_fleet_config() {
  need_block docs/scaling.md fleet-config 1
  cp "$T/block" "$T/fleet.conf"
  if ! built_with_nats; then
    pass "fleet-config: a build without NATS refuses [cluster], as jrpcd.conf(5) says"
    return 0
  fi
  command -v nats-server >/dev/null || missing "nats-server is not installed (scripts/deps.sh installs it)"
  { cat /etc/hosts; printf '127.0.0.1 nats1.internal
127.0.0.2 nats2.internal
'; } >"$T/hosts"
  mount --bind "$T/hosts" /etc/hosts
  nats-server -a 0.0.0.0 -p 4222 >"$T/nats.log" 2>&1 &
  local nats=$! i
  DAEMON_PIDS+=("$nats")
  for ((i = 0; i < START_LIMIT_S * 20; i++)); do
    timeout 2 socat -u /dev/null TCP:127.0.0.1:4222 2>/dev/null && break
    sleep 0.05
  done
  serve_conf fleet 127.0.0.1:7480
  need_block docs/scaling.md fleet-config 2
  health_is "fleet-config: /health with the broker held" '{"status":"serving"}'
  kill -INT "$nats"
  wait "$nats" || true
  forget_pid "$nats"
  health_is "fleet-config: /health after the broker stopped" '{"status":"degraded"}'
  local code
  code=$(curl -s -o /dev/null -w '%{http_code}' http://127.0.0.1:7480/health)
  expect_eq "fleet-config: /health's status while degraded" "$code" 200
  stop_daemon fleet "$PID"
}

# docs/security.md's two recipes: the config, then the call after it.
run_recipes() {
  need_block docs/security.md admin-recipe 1
  cp "$T/block" "$T/admin.conf"
  serve_conf admin /run/jrpcd/admin.sock
  need_block docs/security.md admin-recipe 2
  expect_run admin-recipe '^\{"jsonrpc":"2\.0","result":\{.*"id":1\} $'
  stop_daemon admin "$PID" /run/jrpcd/admin.sock

  need_block docs/security.md public-recipe 1
  { cat "$T/block"; plugins; } >"$T/public.conf"
  serve_conf public 10.0.0.5:7402
  need_block docs/security.md public-recipe 2
  expect_run public-recipe "$THREE_RE"
  sed -i 's/"math\.add","params":\[1,2\]/"math.divide","params":[1,2]/' "$T/block"
  expect_run public-recipe-access '"code":-32006'
  stop_daemon public "$PID"
}

run_next_steps_and_bench
run_socket_activation
run_http_setup
run_tls
run_fleet_config
run_recipes
finish
