#!/usr/bin/env bash
# scale.sh JRPCD HANDLERS_DIR FIXTURE_DIR REPO_ROOT MODE
#
# Scale-out behind HAProxy (issue 15, point 4): Debian's haproxy, run as
# the test's user in the foreground with the example config of
# packaging/haproxy/ (addresses from the environment), in front of three
# jrpcd instances on this machine. jrpc-bench drives load through HAProxy
# while each instance is restarted in turn (SIGTERM, wait for the exit and
# for HAProxy's check to see it down, start it again, wait until the check
# has it up).
#
# MODE tcp (newline framing, a tcp-check that makes a real JSON-RPC call):
# the clients whose instance stops see their connection close and
# reconnect (jrpc-bench --allow-lost: requests in flight at the close that
# no instance received are lost, not errors). What proves that no request
# that reached a jrpcd went unanswered: each instance logs, as it exits,
# how many math.add calls it received (the per-method count, bumped as a
# call is dispatched); the sum over every instance's every lifetime must
# equal the replies jrpc-bench saw, with no reply wrong or cut short. The
# health check calls math.multiply, so it is not counted with the load.
# And every byte each instance received is accounted for: the calls it
# counted, the checks, and at most one request per connection cut short
# by the close (a request read but never dispatched would show there).
# Then fresh clients are served by every instance, the restarted ones too.
#
# MODE http (framing = http, GET /health checks, [server] drain_ms): zero
# failed requests across the rolling restart, and again every math.add an
# instance received was answered exactly once. MODE http-strict: the same
# with HAProxy's retry-on narrowed to conn-failure (what a deployment with
# methods unsafe to repeat would use): a request on a reused connection
# that the instance closes is then not sent again, so only the drain
# (HAProxy sees /health 503 and sends the instance nothing new before it
# closes anything) keeps it at zero: with SCALE_DRAIN_MS=0 in the
# environment (no drain) that mode fails requests.
#
# Nothing here asserts on speed; every wait is bounded.
set -euo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
# shellcheck source-path=SCRIPTDIR source=../cli/lib.sh
source "$here/../cli/lib.sh"

(($# == 5)) || die "usage: $0 JRPCD HANDLERS_DIR FIXTURE_DIR REPO_ROOT tcp|http|http-strict"
MODE=$5
cli_args "$1" "$2" "$3" "$4"
BENCH=$(dirname "$HANDLERS")/bench/jrpc-bench
case $MODE in
tcp) KIND=tcp ;;
http | http-strict) KIND=http ;;
*) die "MODE: tcp, http or http-strict, got $MODE" ;;
esac
CFG=$ROOT/packaging/haproxy/jrpcd-$KIND.cfg
# The example configs check every second, two checks to change state.
UP_LIMIT_S=20
RUN_LIMIT_S=60

declare -a PORT JPID LIFE
HAPROXY_PID=""

instance_conf() {
  local i=$1
  {
    printf '[server]\nworkers = 2\nplugin_dir = %s\nlog_level = debug\n' "$HANDLERS"
    if [[ $KIND == http ]]; then
      # Longer than HAProxy's fall x inter (2 x 1 s) to see the 503.
      # SCALE_DRAIN_MS=0 shows what the drain is for (http-strict fails).
      printf 'drain_ms = %s\n' "${SCALE_DRAIN_MS:-3000}"
    fi
    printf '[listen admin]\nunix = %s/j%d.sock\n' "$T" "$i"
    printf '[listen lb]\ntcp = 127.0.0.1:%s\n' "${PORT[i]}"
    [[ $KIND == http ]] && printf 'framing = http\n'
    printf '[plugin math]\npath = math.so\n'
  } >"$T/j$i.conf"
}

# start_instance I: jrpcd I's next lifetime, logged in $T/jI.LIFE.err.
start_instance() {
  local i=$1
  LIFE[i]=$((${LIFE[i]:--1} + 1))
  start_daemon "j$i.${LIFE[i]}" "$T/j$i.conf" "$T/j$i.sock"
  JPID[i]=$PID
}

stop_instance() {
  local i=$1
  stop_daemon "j$i.${LIFE[i]}" "${JPID[i]}" "$T/j$i.sock"
  JPID[i]=""
}

haproxy_stat() {
  printf 'show stat\n' | timeout 5 socat - "UNIX-CONNECT:$T/haproxy.sock" 2>/dev/null
}

# wait_status I STATUS: HAProxy's check has server jrpcdI in STATUS (UP,
# DOWN), within UP_LIMIT_S.
wait_status() {
  local i=$1 want=$2 k
  for ((k = 0; k < UP_LIMIT_S * 10; k++)); do
    if haproxy_stat | awk -F, -v s="jrpcd$i" -v w="$want" \
      '$2 == s && $18 == w { found = 1 } END { exit !found }'; then
      return 0
    fi
    sleep 0.1
  done
  haproxy_stat | cut -d, -f1,2,18,37 >&2 || true
  show "$T/haproxy.err"
  die "HAProxy did not see jrpcd$i $want within ${UP_LIMIT_S}s"
}

start_haproxy() {
  local front=$1
  HAPROXY_STATS_SOCKET=$T/haproxy.sock \
    JRPC_TCP_BIND=127.0.0.1:$front JRPC_HTTP_BIND=127.0.0.1:$front \
    JRPCD1_TCP=127.0.0.1:${PORT[1]} JRPCD2_TCP=127.0.0.1:${PORT[2]} \
    JRPCD3_TCP=127.0.0.1:${PORT[3]} JRPCD1_HTTP=127.0.0.1:${PORT[1]} \
    JRPCD2_HTTP=127.0.0.1:${PORT[2]} JRPCD3_HTTP=127.0.0.1:${PORT[3]} \
    haproxy -db -f "$RUN_CFG" >"$T/haproxy.out" 2>"$T/haproxy.err" &
  HAPROXY_PID=$!
  DAEMON_PIDS+=("$HAPROXY_PID")
  local k
  for ((k = 0; k < START_LIMIT_S * 20; k++)); do
    alive "$HAPROXY_PID" || break
    [[ -S $T/haproxy.sock ]] && haproxy_stat >/dev/null && return 0
    sleep 0.05
  done
  show "$T/haproxy.err"
  die "haproxy -f $RUN_CFG did not start within ${START_LIMIT_S}s"
}

bench_args() {
  local front=$1
  printf '%s\n' -q -t "127.0.0.1:$front" --timeout 10
  if [[ $KIND == http ]]; then
    printf '%s\n' --http
  else
    printf '%s\n' --allow-lost
  fi
}

# result NAME KEY: KEY's value on the RESULT line of bench run NAME.
result() {
  sed -n "s/^RESULT.* $2=\([^ ]*\).*/\1/p" "$T/$1.out"
}

# method_calls METHOD FILES...: the calls of METHOD the instances logged
# at exit, summed.
method_calls() {
  local m=$1
  shift
  awk -v m="method $m:" 'index($0, m) { for (i = 1; i < NF; i++) if ($(i + 1) == "calls,") s += $i } END { print s + 0 }' "$@"
}

# served_field FILE KEY: from the line jrpcd logs as it exits, "served N
# calls (E error responses) on C connections since the start, from B bytes
# received": KEY is calls, connections or bytes.
served_field() {
  sed -n "s/.*served \([0-9]*\) calls (.*) on \([0-9]*\) connections .* from \([0-9]*\) bytes received.*/\1 \2 \3/p" "$1" |
    awk -v k="$2" '{ print (k == "calls" ? $1 : k == "connections" ? $2 : $3) }'
}

# TCP mode, each lifetime of each instance: a request read from the socket
# but never dispatched would not be counted as received above; the bytes
# tell. Every byte an instance received belongs to a math.add of the load,
# a math.multiply of the check, or a request cut off by the close (at most
# one per connection): 0 <= bytes - adds x |add| - multiplies x |check| <
# connections x |add|.
check_bytes() {
  local add_len chk_len f adds muls bytes conns rest
  add_len=$(printf '%s\n' '{"jsonrpc":"2.0","method":"math.add","params":[1,2],"id":100000000}' | wc -c)
  chk_len=$(printf '%s\n' '{"jsonrpc":"2.0","method":"math.multiply","params":[6,7],"id":"haproxy"}' | wc -c)
  for f in "$T"/j[123].*.err; do
    adds=$(method_calls math.add "$f")
    muls=$(method_calls math.multiply "$f")
    bytes=$(served_field "$f" bytes)
    conns=$(served_field "$f" connections)
    if [[ -z $bytes || -z $conns ]]; then
      fail "${f##*/}: no \"served ... bytes received\" line at the exit"
      continue
    fi
    rest=$((bytes - adds * add_len - muls * chk_len))
    if ((rest < 0 || rest >= conns * add_len)); then
      fail "${f##*/}: $bytes bytes received, $adds math.add and $muls checks dispatched on $conns connections: $rest bytes unaccounted for"
    elif ((muls < 1)); then
      fail "${f##*/}: no tcp-check call (math.multiply) reached it"
    else
      pass "${f##*/}: $bytes bytes received = $adds calls + $muls checks + $rest bytes of requests cut off by the close ($conns connections)"
    fi
  done
}

main() {
  need_file "$JRPCD" jrpcd
  need_file "$HANDLERS/math.so" "the math plugin"
  need_file "$BENCH" jrpc-bench
  need_file "$CFG" "the example HAProxy config"
  need_cmd socat
  command -v haproxy >/dev/null 2>&1 || missing "haproxy is not installed (scripts/deps.sh installs it)"
  setup_tmp
  RUN_CFG=$CFG
  if [[ $MODE == http-strict ]]; then
    # Retry only what never reached an instance, as for calls that are not
    # safe to repeat: then the drain alone keeps every request whole.
    RUN_CFG=$T/haproxy.cfg
    sed 's/^\( *retry-on\) .*/\1 conn-failure/' "$CFG" >"$RUN_CFG"
    grep -qx ' *retry-on conn-failure' "$RUN_CFG" || die "no retry-on line to narrow in $CFG"
  fi
  local i front
  for i in 1 2 3; do
    PORT[i]=$(free_port)
    instance_conf "$i"
    start_instance "$i"
  done
  front=$(free_port)
  start_haproxy "$front"
  for i in 1 2 3; do wait_status "$i" UP; done
  pass "$MODE: HAProxy checks see three jrpcd instances up"

  # The load: 8 connections x 16 in flight until SIGINT; then the run
  # waits for every reply still owed.
  local -a args
  mapfile -t args < <(bench_args "$front")
  "$BENCH" "${args[@]}" -c 8 -w 16 -d "$RUN_LIMIT_S" >"$T/load.out" 2>"$T/load.err" &
  local bpid=$!
  DAEMON_PIDS+=("$bpid")
  sleep 1
  for i in 1 2 3; do
    stop_instance "$i"
    # Down long enough for HAProxy's check to see it: new connections
    # meanwhile meet a refused connect and go to another instance.
    wait_status "$i" DOWN
    start_instance "$i"
    wait_status "$i" UP
    pass "$MODE: jrpcd$i stopped under load, seen down, started, seen up"
  done
  sleep 1
  kill -INT "$bpid" 2>/dev/null || true
  local k rc=0
  for ((k = 0; k < 300; k++)); do
    alive "$bpid" || break
    sleep 0.05
  done
  if alive "$bpid"; then
    kill -KILL "$bpid" 2>/dev/null || true
    fail "$MODE: jrpc-bench did not end within 15 s of SIGINT"
  fi
  wait "$bpid" || rc=$?
  forget_pid "$bpid"
  check_sanitizer "$T/load.err" load || true

  local answered errors lost reconnects
  answered=$(result load requests)
  errors=$(result load errors)
  lost=$(result load lost)
  reconnects=$(result load reconnects)
  if [[ $rc != 0 || -z $answered || $errors != 0 || $(result load err_replies) != 0 ]]; then
    fail "$MODE: the load through HAProxy saw failed requests (exit $rc)"
    show "$T/load.out" "$T/load.err"
  elif [[ $KIND == http && $lost != 0 ]]; then
    fail "$MODE: $lost requests lost"
  else
    pass "$MODE: $answered requests answered, none failed ($lost lost at a close, $reconnects reconnects)"
  fi
  if [[ $MODE == tcp ]] && ((${reconnects:-0} < 1)); then
    fail "$MODE: no client connection was closed by a restart (reconnects=0): the test proved nothing"
  fi

  # Fresh clients: six connections, two per instance by leastconn, each
  # must be served, the restarted instances included.
  "$BENCH" "${args[@]}" -c 6 -w 4 -n 3000 >"$T/fresh.out" 2>"$T/fresh.err" || true
  local fresh
  fresh=$(result fresh requests)
  if [[ $fresh != 3000 || $(result fresh errors) != 0 ]]; then
    fail "$MODE: fresh clients after the restarts: expected 3000 answers"
    show "$T/fresh.out" "$T/fresh.err"
    fresh=${fresh:-0}
  fi

  for i in 1 2 3; do stop_instance "$i"; done
  stop_bg "$HAPROXY_PID"

  local received served_new
  received=$(method_calls math.add "$T"/j[123].*.err)
  if [[ $received == $((answered + fresh)) ]]; then
    pass "$MODE: the instances received $received math.add calls over all lifetimes, and every one was answered ($answered + $fresh replies)"
  else
    fail "$MODE: the instances received $received math.add calls, the clients saw $((answered + fresh)) replies ($answered + $fresh)"
    grep -h 'method math.add\|served' "$T"/j[123].*.err >&2 || true
  fi
  for i in 1 2 3; do
    served_new=$(method_calls math.add "$T/j$i.1.err")
    if ((served_new > 0)); then
      pass "$MODE: jrpcd$i served $served_new calls after its restart"
    else
      fail "$MODE: jrpcd$i served nothing after its restart"
    fi
  done
  if [[ $MODE == tcp ]]; then
    check_bytes
  fi
  finish
}

main "$@"
