#!/usr/bin/env bash
# push_bench.sh JRPCD HANDLERS_DIR FIXTURE_DIR REPO_ROOT [fleet]
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
#
# fleet (run alone: it needs nats-server): the fleet benchmark's tools
# (issue 24 point 6). nats-server and two jrpcds with [cluster] (A, B) and
# one without (C). push-bench with the subscribers on B and the publisher
# on A (--publish-socket) must count every notification once per
# subscription, and what it counted must have crossed the broker (A's
# rpc.stats cluster.published and B's cluster.received rose by the
# publishes); at a paced rate it gives latency figures. With the
# subscribers on C, which is not in the fleet, nothing reaches them, and
# push-bench must say so and exit 1. Then bench/fleet.sh, at tiny sizes,
# must print every table with a figure in every cell. SKIP (77) without
# nats-server, or on a jrpcd built without NATS (it refuses [cluster] by
# design).
set -euo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
# shellcheck source-path=SCRIPTDIR source=lib.sh
source "$here/lib.sh"

cli_args "$@"
PB=$(dirname "$HANDLERS")/bench/push-bench
ECHO=$(dirname "$HANDLERS")/bench/echo-server
need_file "$PB" push-bench
need_file "$ECHO" echo-server

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
  elif [[ "$(result "$1" notifications)" != "$2" ]]; then
    fail "$1: $(result "$1" notifications) notifications, expected $2"
  elif ! grep -q 'every one received exactly once' "$T/$1.err"; then
    fail "$1: push-bench did not confirm every notification"
  else
    pass "$1: $2 notifications, each subscription's once"
  fi
}

# expect_exit1 NAME TEXT WHAT: run NAME exited 1 saying TEXT (WHAT it
# shows).
expect_exit1() {
  if ((RC == 1)) && grep -q "$2" "$T/$1.err"; then
    pass "$1: $3 (exit 1)"
  else
    fail "$1: push-bench exited $RC, not 1 with '$2'"
    show "$T/$1.err"
  fi
}

# serve_pubsub NAME [SERVER_LINE [TAIL]]: jrpcd with pubsub on
# $T/NAME.sock, two workers, SERVER_LINE added to [server], TAIL (a
# section) at the end. Sets PID.
serve_pubsub() {
  cat >"$T/$1.conf" <<EOF
$(conf_server 2)
${2:-}
$(conf_plugins pubsub)
[listen s]
unix = $T/$1.sock
framing = newline
stats = full
${3:-}
EOF
  start_daemon "$1" "$T/$1.conf" "$T/$1.sock"
}

one_instance() {
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
  expect_exit1 dropped 'notifications dropped' "push-bench reports the lost notifications"
  stop_daemon small "$sp" "$T/small.sock"
}

# cluster_fig SOCK KEY: rpc.stats' cluster.KEY on SOCK.
cluster_fig() {
  call "$1" '{"jsonrpc":"2.0","method":"rpc.stats","id":1}' |
    python3 -c 'import json, sys; print(json.load(sys.stdin)["result"]["cluster"][sys.argv[1]])' "$2"
}

# The fleet check (see the top).
fleet() {
  command -v nats-server >/dev/null || missing "nats-server (Debian's nats-server) is not installed"
  setup_tmp

  if ! built_with_nats; then
    # CI's no-simdjson build is -DJRPC_NATS=OFF: nothing of this to run.
    printf 'SKIP: this jrpcd was built without NATS (-DJRPC_NATS=OFF)\n' >&2
    exit 77
  fi

  nats_port=$(free_port)
  nats-server -a 127.0.0.1 -p "$nats_port" 2>"$T/nats.err" &
  nats=$!
  DAEMON_PIDS+=("$nats")
  for ((i = 0; i < START_LIMIT_S * 20; i++)); do
    ! grep -q 'Server is ready' "$T/nats.err" || break
    alive "$nats" || break
    sleep 0.05
  done
  grep -q 'Server is ready' "$T/nats.err" || {
    show "$T/nats.err"
    die "nats-server did not start on port $nats_port"
  }

  cluster=$'[cluster]\nnats = nats://127.0.0.1:'$nats_port
  serve_pubsub a '' "$cluster"
  pa=$PID
  serve_pubsub b '' "$cluster"
  pb_=$PID
  serve_pubsub c
  pc=$PID

  sent0=$(cluster_fig "$T/a.sock" published) got0=$(cluster_fig "$T/b.sock" received)
  pb across -u "$T/b.sock" --publish-socket "$T/a.sock" -c 4 -s 8 -n 50 -w 4 \
    -p "$pa" -p "$pb_" -p "$nats" -T 20
  expect_ok across $((4 * 8 * 50))
  sent=$(($(cluster_fig "$T/a.sock" published) - sent0))
  got=$(($(cluster_fig "$T/b.sock" received) - got0))
  # At least the 50 publishes, and the probes before them.
  if ((sent >= 50 && got >= 50)); then
    pass "across: through the broker (A published $sent, B received $got)"
  else
    fail "across: A published $sent and B received $got from the broker, not 50 or more each"
  fi
  if [[ -z "$(result across cpu_p3_s)" ]]; then
    fail "across: no CPU figure for each of the three -p (cpu_p3_s)"
  fi

  pb across_rate -u "$T/b.sock" --publish-socket "$T/a.sock" -c 4 -s 1 -n 40 -r 200 -T 20
  expect_ok across_rate $((4 * 40))
  if ! [[ "$(result across_rate p99_us)" =~ ^[0-9]+$ ]]; then
    fail "across_rate: no latency figure (p99_us=$(result across_rate p99_us))"
  fi

  pb outside -u "$T/c.sock" --publish-socket "$T/a.sock" -c 2 -s 2 -n 10 -T 2
  expect_exit1 outside 'no probe published on' "a jrpcd outside the fleet hears nothing, and push-bench says so"

  stop_daemon c "$pc" "$T/c.sock"
  stop_daemon b "$pb_" "$T/b.sock"
  stop_daemon a "$pa" "$T/a.sock"
  kill -INT "$nats" # it exits 0 on SIGINT (1 on SIGTERM)
  wait "$nats" || fail "nats-server exited with status $? on SIGINT"
  forget_pid "$nats"

  # bench/fleet.sh at tiny sizes: it runs, and every cell has a figure.
  RC=0
  FLEET_LAT_CONNS=4 FLEET_LAT_PUBS=40 FLEET_SHAPES="4x4:20:4 2x1:100:8" \
    timeout -k 5 90 bash "$ROOT/bench/fleet.sh" "$(dirname "$PB")/.." 1 >"$T/fleet.md" 2>"$T/fleet.err" || RC=$?
  if ((RC != 0)); then
    fail "fleet.sh exited $RC"
    show "$T/fleet.err"
  else
    rows=$(grep -c '^| \(A->\|C->\|local\|broker\|no \[cluster\]\)' "$T/fleet.md" || true)
    # A cell without a figure: FAIL, "-", or empty between two bars.
    bad=$(grep '^| \(A->\|C->\|local\|broker\)' "$T/fleet.md" | grep -E '\| *(FAIL|-)? *\|' || true)
    if ((rows != 9)); then
      fail "fleet.sh printed $rows table rows, expected 9 (3 latency, 3 for each of 2 shapes)"
      show "$T/fleet.md"
    elif [[ -n "$bad" ]]; then
      fail "fleet.sh left cells without a figure: $bad"
    else
      pass "fleet.sh: every table, every figure"
    fi
  fi
}

if [[ $ONLY == fleet ]]; then
  fleet
else
  [[ -z $ONLY ]] || die "no check $ONLY"
  setup_tmp
  one_instance
fi
finish
