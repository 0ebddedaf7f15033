#!/usr/bin/env bash
# push_bench.sh JRPCD HANDLERS_DIR FIXTURE_DIR REPO_ROOT
#
# bench/push-bench (bench/push.sh's load tool), briefly, so it cannot rot:
# against jrpcd with the pubsub plugin (2 workers), a paced fan-out (8
# connections x 16 subscriptions, 20 publishes) and a run at a fixed rate
# must each report every notification received exactly once, with
# latency figures (a notification lost: push-bench times out after 20 s,
# saying how many publishes every subscription got); against echo-server,
# the "!fan" baseline must deliver every frame. And the checks must be
# able to fail: with max_push_bytes far below one publish's notifications
# on a connection, jrpcd drops some, and push-bench must say so and exit
# 1. Nothing here asserts on speed.
set -euo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
# shellcheck source-path=SCRIPTDIR source=lib.sh
source "$here/lib.sh"

cli_args "$@"
PB=$(dirname "$HANDLERS")/bench/push-bench
ECHO=$(dirname "$HANDLERS")/bench/echo-server
need_file "$PB" push-bench
need_file "$ECHO" echo-server
setup_tmp

# pb NAME ARGS...: push-bench ARGS, bounded; output in $T/NAME.{out,err};
# sets RC.
pb() {
  local name=$1
  shift
  RC=0
  timeout -k 5 60 "$PB" -T 20 "$@" >"$T/$name.out" 2>"$T/$name.err" || RC=$?
  ((RC != 124 && RC != 137)) || fail "$name: push-bench $* did not finish within 60 s"
}

# result NAME KEY: KEY's value on the RESULT line of run NAME.
result() { sed -n "s/^RESULT.* $2=\([^ ]*\).*/\1/p" "$T/$1.out"; }

# expect_ok NAME WANT: run NAME exited 0 and counted WANT notifications.
expect_ok() {
  if ((RC != 0)); then
    fail "$1: push-bench exited $RC"
    show "$T/$1.err"
    return 0
  fi
  local got
  got=$(result "$1" notifications)
  if [[ "$got" != "$2" ]]; then
    fail "$1: $got notifications, expected $2"
  elif ! grep -q 'every one received exactly once' "$T/$1.err"; then
    fail "$1: push-bench did not confirm every notification"
  else
    pass "$1: $2 notifications, each subscription's once"
  fi
}

# serve_pubsub NAME [SERVER_LINE]: jrpcd with pubsub on $T/NAME.sock, two
# workers, SERVER_LINE added to [server]. Sets PID.
serve_pubsub() {
  cat >"$T/$1.conf" <<EOF
$(conf_server 2)
${2:-}
$(conf_plugins pubsub)
[listen s]
unix = $T/$1.sock
framing = newline
EOF
  start_daemon "$1" "$T/$1.conf" "$T/$1.sock"
}

serve_pubsub j
jp=$PID

pb paced -u "$T/j.sock" -c 8 -s 16 -n 20 -w 2 -p "$jp"
expect_ok paced $((8 * 16 * 20))
if [[ "$(result paced bytes_per_sub)" == -1* ]]; then
  fail "paced: no memory figure with -p"
fi

pb rate -u "$T/j.sock" -c 4 -s 2 -n 20 -r 200 -b 100
expect_ok rate $((4 * 2 * 20))
p99=$(result rate p99_us)
if ! [[ "$p99" =~ ^[0-9]+$ ]]; then
  fail "rate: no latency figure (p99_us=$p99)"
fi
stop_daemon j "$jp" "$T/j.sock"

start_with echo "$T/e.sock" "$ECHO" -u "$T/e.sock" -f newline -j 2
ep=$PID
pb echo -u "$T/e.sock" -c 8 -s 16 -n 20 -w 2 --echo 180 -p "$ep"
expect_ok echo $((8 * 16 * 20))
if [[ "$(result echo notif_bytes)" != 180.0 ]]; then
  fail "echo: frames of $(result echo notif_bytes) bytes, expected 180"
fi
PROG=echo-server stop_daemon echo "$ep" "$T/e.sock"

# 64 notifications of about 1.2 KB a publish on each connection, 4 KiB
# allowed queued: the daemon drops, and push-bench must notice.
serve_pubsub small 'max_push_bytes = 4096'
sp=$PID
pb dropped -u "$T/small.sock" -c 2 -s 64 -n 20 -w 20 -b 1000
if ((RC == 1)) && grep -q 'notifications dropped' "$T/dropped.err"; then
  pass "dropped: push-bench reports the lost notifications (exit 1)"
else
  fail "dropped: push-bench exited $RC without reporting the drops"
  show "$T/dropped.err"
fi
stop_daemon small "$sp" "$T/small.sock"

finish
