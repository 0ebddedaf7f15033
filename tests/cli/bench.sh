#!/usr/bin/env bash
# bench.sh JRPCD HANDLERS_DIR FIXTURE_DIR REPO_ROOT
#
# bench/jrpc-bench and bench/echo-server, from the bench folder of the same
# build (the parent of HANDLERS_DIR): short, bounded runs of every workload
# against jrpcd and echo-server over Unix and TCP, newline and length
# framing (and HTTP against jrpcd), ping-pong and pipelined, each of which
# must answer every request with no error; then the failures jrpc-bench must report: replies with ids
# it never sent (exit 1), error replies (exit 1 unless --allow-errors), a
# server that closes the connection (exit 1 unless --reconnect; requests in
# flight counted as lost with --allow-lost), no server
# (exit 2) and bad options (exit 2). Nothing here asserts on speed.
set -euo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
# shellcheck source-path=SCRIPTDIR source=lib.sh
source "$here/lib.sh"

cli_args "$@"
BENCH=$(dirname "$HANDLERS")/bench/jrpc-bench
ECHO=$(dirname "$HANDLERS")/bench/echo-server

# Generous: each run is a few thousand requests, but the sanitizer build is
# several times slower than the others.
RUN_LIMIT_S=${RUN_LIMIT_S:-60}

# run_bench NAME ARGS...: jrpc-bench -q ARGS, bounded; stdout and stderr in
# $T/NAME.{out,err}; sets RC.
run_bench() {
  local name=$1
  shift
  RC=0
  timeout -k 5 "$RUN_LIMIT_S" "$BENCH" -q "$@" >"$T/$name.out" 2>"$T/$name.err" || RC=$?
  if ((RC == 124 || RC == 137)); then
    fail "$name: jrpc-bench $* did not finish within ${RUN_LIMIT_S}s"
  fi
  check_sanitizer "$T/$name.err" "$name" || true
}

# result NAME KEY: KEY's value on the RESULT line of run NAME.
result() {
  sed -n "s/^RESULT.* $2=\([^ ]*\).*/\1/p" "$T/$1.out"
}

# expect_ok NAME REQUESTS: exit 0, a RESULT line, REQUESTS answered, no
# error of any kind.
expect_ok() {
  local name=$1 want=$2
  expect_rc "$name" 0 || return 1
  if ! grep -q '^RESULT ' "$T/$name.out"; then
    fail "$name: no RESULT line"
    show "$T/$name.out" "$T/$name.err"
    return 1
  fi
  local got errors errs
  got=$(result "$name" requests)
  errors=$(result "$name" errors)
  errs=$(result "$name" err_replies)
  if [[ "$got" != "$want" || "$errors" != 0 || "$errs" != 0 ]]; then
    fail "$name: requests=$got errors=$errors err_replies=$errs, expected requests=$want and no errors"
    show "$T/$name.out" "$T/$name.err"
    return 1
  fi
  return 0
}

# start_echo NAME ARGS...: echo-server ARGS in the background, returns once
# it says it listens. Sets PID.
start_echo() {
  local name=$1 i
  shift
  "$ECHO" "$@" >"$T/$name.out" 2>"$T/$name.err" &
  PID=$!
  DAEMON_PIDS+=("$PID")
  for ((i = 0; i < START_LIMIT_S * 20; i++)); do
    if grep -q '^echo-server: listening on ' "$T/$name.err"; then
      return 0
    fi
    alive "$PID" || break
    sleep 0.05
  done
  show "$T/$name.err"
  die "$name: echo-server $* did not start listening"
}

# stop_echo NAME PID [SOCKET]: SIGTERM; it must exit 0, cleanly, and
# remove SOCKET.
stop_echo() {
  PROG=echo-server stop_daemon "$@"
  pass "$1: echo-server stopped on SIGTERM${3:+ and removed its socket}"
}

# start_fake NAME SCRIPT: a Unix socket at $T/NAME.sock whose every
# connection is served by `bash SCRIPT`. Sets PID.
start_fake() {
  start_bg "$1: socat" "-S $T/$1.sock" socat "UNIX-LISTEN:$T/$1.sock,fork" \
    "EXEC:bash $2"
  PID=$BG_PID
}

stop_fake() {
  stop_bg "$1"
}

# Every workload, ping-pong and 64 in flight, on one jrpcd listener.
workloads_on() {
  local tag=$1 dpid=$2 wl w n name
  shift 2
  for wl in small named notify batch:10 large:2000; do
    for w in 1 64; do
      n=$((w == 1 ? 1000 : 4000))
      name="$tag-${wl/:/}-w$w"
      run_bench "$name" "$@" -W "$wl" -c 2 -w "$w" -n "$n" -p "$dpid"
      if expect_ok "$name" "$n"; then
        if [[ "$(result "$name" cpu_s)" == - ]]; then
          fail "$name: -p $dpid gave no server CPU figures"
          show "$T/$name.out"
        else
          pass "$name: $n requests, $(result "$name" req_s) req/s"
        fi
      fi
    done
  done
}

test_jrpcd() {
  local p1 p2 p3 v6=yes host2
  p1=$(free_port)
  p2=$(free_port)
  p3=$(free_port)
  [[ -s /proc/net/if_inet6 ]] || v6=
  host2=${v6:+[::1]}
  host2=${host2:-127.0.0.1}
  cat >"$T/d.conf" <<CONF
$(conf_server)
[listen nl]
unix = $T/d.sock
[listen len]
unix = $T/dl.sock
framing = length
[listen tcpnl]
tcp = 127.0.0.1:$p1
[listen tcplen]
tcp = $host2:$p2
framing = length
[listen http]
unix = $T/dh.sock
framing = http
[listen tcphttp]
tcp = 127.0.0.1:$p3
framing = http
$(conf_plugins math echo)
CONF
  start_daemon jrpcd "$T/d.conf" "$T/d.sock"
  local dpid=$PID
  workloads_on unix-nl "$dpid" -u "$T/d.sock"
  workloads_on unix-len "$dpid" -u "$T/dl.sock" -f length
  workloads_on tcp-nl "$dpid" -t "127.0.0.1:$p1"
  workloads_on tcp-len "$dpid" -t "$host2:$p2" -f length
  workloads_on unix-http "$dpid" -u "$T/dh.sock" --http
  workloads_on tcp-http "$dpid" -t "127.0.0.1:$p3" -f http --http-path /rpc

  # -d with a warm-up: bounded by time, requests counted after the warm-up.
  run_bench dur -u "$T/d.sock" -d 0.3 --warmup 0.2 -c 2 -w 8
  if expect_rc dur 0 && [[ "$(result dur errors)" == 0 ]] &&
    (($(result dur requests) > 0)); then
    pass "dur: -d 0.3 --warmup 0.2: $(result dur requests) requests"
  else
    fail "dur: expected requests and no errors"
    show "$T/dur.out" "$T/dur.err"
  fi

  # Templates, by argument and from a file (a batch of two calls).
  run_bench tmpl -u "$T/d.sock" -n 500 -w 4 \
    -T '{"jsonrpc":"2.0","method":"math.subtract","params":{"a":5,"b":2},"id":{id}}'
  expect_ok tmpl 500 && pass "tmpl: -T with {id}"
  printf '%s\n' '[{"jsonrpc":"2.0","method":"math.add","params":[1,2],"id":{id}},' \
    '{"jsonrpc":"2.0","method":"math.multiply","params":[3,4],"id":{id}}]' |
    tr -d '\n' >"$T/batch.json"
  run_bench tmplfile -u "$T/dl.sock" -f length -n 500 -w 4 --template-file "$T/batch.json"
  if expect_ok tmplfile 500; then
    if [[ "$(result tmplfile calls_s)" != "$(result tmplfile req_s)" ]]; then
      pass "tmplfile: --template-file with a batch of two calls"
    else
      fail "tmplfile: calls/s equals requests/s for a batch of two calls"
      show "$T/tmplfile.out"
    fi
  fi

  # --reconnect against a server that keeps the connection: a new one after
  # every 100 replies (not after the last 100: the run is over then).
  run_bench recon -u "$T/d.sock" -n 1000 -w 8 --reconnect 100
  if expect_ok recon 1000 && expect_in recon out "reconnects  9"; then
    pass "recon: --reconnect 100 over 1000 requests"
  fi

  # Error replies: exit 1, unless --allow-errors.
  local div0='{"jsonrpc":"2.0","method":"math.divide","params":[1,0],"id":{id}}'
  run_bench errs -u "$T/d.sock" -n 200 -w 4 -T "$div0"
  if expect_rc errs 1 && [[ "$(result errs err_replies)" == 200 && "$(result errs errors)" == 0 ]]; then
    pass "errs: 200 error replies, exit 1"
  else
    fail "errs: expected err_replies=200 errors=0"
    show "$T/errs.out" "$T/errs.err"
  fi
  run_bench allow -u "$T/d.sock" -n 200 -w 4 -T "$div0" --allow-errors
  if expect_rc allow 0; then
    if [[ "$(result allow err_replies)" == 200 ]]; then
      pass "allow: --allow-errors: exit 0 with 200 error replies"
    else
      fail "allow: expected err_replies=200"
      show "$T/allow.out" "$T/allow.err"
    fi
  fi

  stop_daemon jrpcd "$dpid" "$T/d.sock"
}

test_echo_server() {
  local p3 tcp3
  p3=$(free_port)
  tcp3=127.0.0.1:$p3
  [[ -s /proc/net/if_inet6 ]] && tcp3="[::1]:$p3"
  start_echo echo-unix -u "$T/e.sock" -j 2
  local epid=$PID
  start_echo echo-tcp -t "$tcp3" -f length
  local tpid=$PID
  local wl w n name
  for wl in small notify batch:10 large:2000; do
    for w in 1 64; do
      n=$((w == 1 ? 1000 : 4000))
      name="echo-unix-${wl/:/}-w$w"
      run_bench "$name" -u "$T/e.sock" -m add -W "$wl" -c 3 -w "$w" -n "$n" -p "$epid"
      expect_ok "$name" "$n" && pass "$name: $n requests"
      name="echo-tcp-${wl/:/}-w$w"
      run_bench "$name" -t "$tcp3" -f length -W "$wl" -c 2 -w "$w" -n "$n"
      expect_ok "$name" "$n" && pass "$name: $n requests"
    done
  done

  # echo-server echoes the id bytes it is sent: a template that puts a
  # digit after {id} gets replies with ids ten times too large.
  run_bench echo-mismatch -u "$T/e.sock" -n 100 \
    -T '{"jsonrpc":"2.0","method":"add","params":[1,2],"id":{id}7}'
  if expect_rc echo-mismatch 1 &&
    expect_in echo-mismatch err "matches no request in flight"; then
    if [[ "$(result echo-mismatch errors)" != 0 ]]; then
      pass "echo-mismatch: ids that were never sent: exit 1"
    else
      fail "echo-mismatch: replies with unknown ids, yet errors=0"
      show "$T/echo-mismatch.out"
    fi
  fi

  stop_echo echo-unix "$epid" "$T/e.sock"
  stop_echo echo-tcp "$tpid"
}

test_failures() {
  # A server that answers every line with the same id, 424242, which
  # jrpc-bench never sends (its ids have 9 or 16 digits).
  cat >"$T/wrong.sh" <<'SH'
while IFS= read -r line; do
  printf '%s\n' '{"jsonrpc":"2.0","result":3,"id":424242}'
done
exit 0
SH
  start_fake wrong "$T/wrong.sh"
  local fpid=$PID
  run_bench wrong -u "$T/wrong.sock" -n 2000 -w 4
  if expect_rc wrong 1 && expect_in wrong err "matches no request in flight"; then
    if [[ "$(result wrong errors)" != 0 && "$(result wrong requests)" == 0 ]]; then
      pass "wrong: a server replying with wrong ids: exit 1"
    else
      fail "wrong: expected errors > 0 and requests=0"
      show "$T/wrong.out"
    fi
  fi
  stop_fake "$fpid"

  # A server that answers one request with its id and closes.
  cat >"$T/one.sh" <<'SH'
IFS= read -r line || exit 0
[[ $line =~ \"id\":([0-9]+) ]] || exit 0
printf '{"jsonrpc":"2.0","result":3,"id":%s}\n' "${BASH_REMATCH[1]}"
exit 0
SH
  start_fake one "$T/one.sh"
  fpid=$PID
  run_bench closed -u "$T/one.sock" -n 10
  if expect_rc closed 1 && expect_in closed err "the server closed it"; then
    pass "closed: a server that closes the connection: exit 1"
  fi
  run_bench reopen -u "$T/one.sock" -n 10 -c 2 --reconnect 1
  expect_ok reopen 10 && pass "reopen: the same server with --reconnect 1"
  # With requests in flight at each close: --allow-lost counts them as
  # lost, reconnects, and every one of the 10 is either answered or lost.
  run_bench lost -u "$T/one.sock" -n 10 -w 4 --allow-lost
  local answered lost
  answered=$(result lost requests)
  lost=$(result lost lost)
  if expect_rc lost 0 && [[ "$(result lost errors)" == 0 && "$answered" -ge 1 &&
    "$lost" -ge 1 && $((answered + lost)) == 10 ]]; then
    pass "lost: --allow-lost: $answered answered, $lost lost, no error"
  else
    fail "lost: expected exit 0, no error, answered + lost = 10"
    show "$T/lost.out" "$T/lost.err"
  fi
  stop_fake "$fpid"

  run_bench nosock -u "$T/nope.sock" -n 10
  if expect_rc nosock 2 &&
    expect_in nosock err "jrpc-bench: connect $T/nope.sock: No such file or directory"; then
    pass "nosock: no server: exit 2"
  fi

  local args name i=0
  for args in "--bogus -u $T/x.sock" "-u $T/x.sock -W nope" "-n 10" \
    "-u $T/x.sock -c 0" "-u $T/x.sock -t 127.0.0.1:1" "-u $T/x.sock -f crlf" \
    "-u $T/x.sock -T {}" "-u $T/x.sock --http-path rpc"; do
    name=badopt$((i++))
    # shellcheck disable=SC2086 # the options are split on purpose
    run_bench "$name" $args
    expect_rc "$name" 2 && expect_empty "$name" out && pass "$name: '$args': exit 2"
  done
  expect_in badopt0 err "usage: jrpc-bench" || true
}

main() {
  need_daemon math
  need_file "$HANDLERS/echo.so" "the echo plugin"
  need_file "$BENCH" jrpc-bench
  need_file "$ECHO" echo-server
  need_cmd socat
  setup_tmp
  test_jrpcd
  test_echo_server
  test_failures
  finish
}

main "$@"
