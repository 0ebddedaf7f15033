# bench/run_lib.sh - helpers of bench/run.sh: servers, runs, medians and
# number formatting. Sourced by run.sh, not run; it relies on run.sh's
# globals: T (the private temp dir), SECTION (the section running), REP (the
# repetition), RUN_LIMIT_S, and BENCH / JRPCD / ECHO / HANDLERS.
# shellcheck shell=bash

log() {
  printf 'run.sh: %s\n' "$*" >&2
}

die() {
  printf 'run.sh: error: %s\n' "$*" >&2
  exit 1
}

# ---------------------------------------------------------------- servers --

declare -a SERVER_PIDS=() # every server started and not yet reaped
declare -A SERVER_NAMES=()
SPID=""

# True while PID is a live process (a zombie counts as gone).
alive() {
  local stat
  stat=$(cat "/proc/$1/stat" 2>/dev/null) || return 1
  stat=${stat##*) }
  [[ "${stat%% *}" != Z ]]
}

forget_pid() {
  local p keep=()
  for p in "${SERVER_PIDS[@]}"; do
    [[ "$p" == "$1" ]] || keep+=("$p")
  done
  SERVER_PIDS=("${keep[@]}")
  unset 'SERVER_NAMES[$1]'
}

# fail_note TEXT...: a failure of the running section: on stderr now, and
# listed under the section's table. Appends to a file, so that it works from
# a subshell too.
fail_note() {
  printf 'run.sh: FAIL: %s\n' "$*" >&2
  printf '%s\n' "$*" >>"$T/fail.$SECTION"
}

# start_server NAME READY_REGEX CMD...: CMD in the background (a taskset or
# env prefix execs, so $! is the server itself), stdout and stderr in
# $T/log/NAME.{out,err}; returns once READY_REGEX shows in its stderr.
# Sets SPID. Returns 1 (with a note) when it exits or is not ready in 20 s.
start_server() {
  local name=$1 ready=$2 i rc=0
  shift 2
  "$@" >"$T/log/$name.out" 2>"$T/log/$name.err" </dev/null &
  SPID=$!
  SERVER_PIDS+=("$SPID")
  SERVER_NAMES[$SPID]=$name
  for ((i = 0; i < 400; i++)); do
    if grep -qE -- "$ready" "$T/log/$name.err" 2>/dev/null; then
      return 0
    fi
    if ! alive "$SPID"; then
      wait "$SPID" 2>/dev/null || rc=$?
      forget_pid "$SPID"
      fail_note "$name did not start (exit $rc): $(quote_cmd "$@"); its stderr: $(tail -n 3 "$T/log/$name.err" | tr '\n' ' ')"
      SPID=""
      return 1
    fi
    sleep 0.05
  done
  fail_note "$name did not say it was ready within 20 s: $(quote_cmd "$@")"
  stop_server "$SPID"
  SPID=""
  return 1
}

# stop_server PID: SIGTERM, then it must exit 0 within 10 s (else SIGKILL);
# anything else is a failure of the section.
stop_server() {
  local pid=$1 name=${SERVER_NAMES[$1]:-server} i rc=0
  [[ -n "$pid" ]] || return 0
  kill -TERM "$pid" 2>/dev/null || true
  for ((i = 0; i < 200; i++)); do
    alive "$pid" || break
    sleep 0.05
  done
  if alive "$pid"; then
    kill -KILL "$pid" 2>/dev/null || true
    wait "$pid" 2>/dev/null || true
    forget_pid "$pid"
    fail_note "$name (pid $pid) did not exit within 10 s of SIGTERM: killed"
    return 0
  fi
  wait "$pid" 2>/dev/null || rc=$?
  forget_pid "$pid"
  if ((rc != 0)); then
    fail_note "$name (pid $pid) exited with status $rc on SIGTERM; its stderr: $(tail -n 3 "$T/log/$name.err" 2>/dev/null | tr '\n' ' ')"
  fi
  return 0
}

stop_all_servers() {
  local pid
  for pid in "${SERVER_PIDS[@]}"; do
    stop_server "$pid"
  done
}

# On exit: only the servers this script started, by pid.
kill_servers_now() {
  local pid i
  for pid in "${SERVER_PIDS[@]}"; do
    kill -TERM "$pid" 2>/dev/null || true
  done
  for ((i = 0; i < 40; i++)); do
    local any=0
    for pid in "${SERVER_PIDS[@]}"; do
      alive "$pid" && any=1
    done
    ((any)) || break
    sleep 0.05
  done
  for pid in "${SERVER_PIDS[@]}"; do
    kill -KILL "$pid" 2>/dev/null || true
  done
  SERVER_PIDS=()
}

# need_built BUILD FILE...: each FILE exists, else "build first".
need_built() {
  local build=$1 f
  shift
  for f in "$@"; do
    [ -e "$f" ] || die "build first: cmake --build $build ($f is missing)"
  done
}

# start_nats: Debian's nats-server on a free port of 127.0.0.1 (the broker
# of [cluster], bench/fleet.sh); sets NATS (its pid) and NATS_PORT.
start_nats() {
  command -v nats-server >/dev/null || die "nats-server is missing (scripts/deps.sh installs it)"
  NATS_PORT=$(free_port)
  start_server nats 'Server is ready' nats-server -a 127.0.0.1 -p "$NATS_PORT" ||
    die "nats-server did not start: $(cat "$T/fail.$SECTION")"
  NATS=$SPID
}

# stop_nats: after the jrpcds that use it (they close their broker
# connection last). nats-server exits 0 on SIGINT (1 on SIGTERM).
stop_nats() {
  kill -INT "$NATS"
  wait "$NATS" || fail_note "nats-server exited with status $? on SIGINT"
  forget_pid "$NATS"
}

# A TCP port on 127.0.0.1 that nothing listens on now.
free_port() {
  local p
  for p in $(shuf -i 20000-60000 -n 100); do
    # shellcheck disable=SC2016 # $1 is the inner shell's
    if ! timeout 1 bash -c 'exec 3<>"/dev/tcp/127.0.0.1/$1"' _ "$p" 2>/dev/null; then
      echo "$p"
      return 0
    fi
  done
  die "no free TCP port found"
}

# jrpcd_conf FILE WORKERS PARSER [SERVER_LINE...]: a [server] section with
# the math and echo plugins of this build; listeners are appended with
# conf_listen.
jrpcd_conf() {
  local f=$1 w=$2 p=$3
  shift 3
  {
    printf '[server]\nworkers = %s\nparser = %s\nplugin_dir = %s\n' "$w" "$p" "$HANDLERS"
    (($# == 0)) || printf '%s\n' "$@"
    printf '\n[plugin math]\npath = math.so\n\n[plugin echo]\npath = echo.so\n'
  } >"$f"
}

# conf_listen FILE NAME unix|tcp ADDR FRAMING
conf_listen() {
  printf '\n[listen %s]\n%s = %s\nframing = %s\n' "$2" "$3" "$4" "$5" >>"$1"
}

# own_tmp SECTION: for a script of its own that uses these helpers
# (bench/push.sh): a private T with log/ and res/, SECTION, REP = 1 and
# RUN_LIMIT_S = 300; on exit its servers are stopped and T removed.
own_tmp() {
  T=$(mktemp -d)
  mkdir -p "$T/log" "$T/res"
  SECTION=$1 REP=1 RUN_LIMIT_S=300
  trap 'kill_servers_now; rm -rf "$T"' EXIT
}

# ---------------------------------------------------------------- runs --

quote_cmd() {
  local s
  s=$(printf '%q ' "$@")
  printf '%s' "${s% }"
}

# run_rec KEY CMD...: one client run, bounded by RUN_LIMIT_S. Its RESULT
# line goes to $T/res/KEY.$REP, or FAIL when it exits non-zero or prints
# none; the failing command is reported. Output in $T/log/KEY.$REP.*.
run_rec() {
  local key=$1 rc=0 line
  shift
  local f=$T/res/$key.$REP l=$T/log/$key.$REP
  timeout -k 5 "$RUN_LIMIT_S" "$@" >"$l.out" 2>"$l.err" </dev/null || rc=$?
  if ((rc == 0)) && line=$(grep -m1 '^RESULT ' "$l.out"); then
    printf '%s\n' "$line" >"$f"
    return 0
  fi
  printf 'FAIL\n' >"$f"
  local why="exit $rc"
  ((rc == 124 || rc == 137)) && why="timed out after ${RUN_LIMIT_S} s"
  ((rc == 0)) && why="no RESULT line"
  fail_note "$why: $(quote_cmd "$@") — $(grep -v '^RESULT' "$l.err" | tail -n 2 | tr '\n' ' ')"
  return 1
}

# field KEY NAME: NAME's value in this repetition's result of KEY.
field() {
  sed -n "s/^RESULT.* $2=\([^ ]*\).*/\1/p" "$T/res/$1.$REP" 2>/dev/null
}

# med KEY NAME: the median of NAME over the repetitions of KEY; FAIL when
# any repetition failed (or none ran), "-" when the figure is missing.
med() {
  local files=("$T/res/$1".*)
  if [[ ! -e "${files[0]}" ]]; then
    echo FAIL
    return 0
  fi
  awk -v want="$2" '
    FNR == 1 && $1 == "FAIL" { fail = 1 }
    FNR == 1 && $1 == "RESULT" {
      got = 0
      for (i = 2; i <= NF; i++) {
        k = $i; sub(/=.*/, "", k); v = $i; sub(/^[^=]*=/, "", v)
        if (k == want) { got = 1; if (v == "-") dash = 1; else a[n++] = v + 0 }
      }
      if (!got) dash = 1
    }
    END {
      if (fail || (n == 0 && !dash)) { print "FAIL"; exit }
      if (dash || n == 0) { print "-"; exit }
      for (i = 1; i < n; i++) { x = a[i]; for (j = i - 1; j >= 0 && a[j] > x; j--) a[j + 1] = a[j]; a[j + 1] = x }
      m = n % 2 ? a[int(n / 2)] : (a[n / 2 - 1] + a[n / 2]) / 2
      printf "%.15g\n", m
    }' "${files[@]}"
}

# ---------------------------------------------------------------- format --

isnum() {
  [[ "$1" =~ ^-?[0-9]+(\.[0-9]+)?([eE][-+]?[0-9]+)?$ ]]
}

# fint V: an integer with thousands separators (1,234,567).
fint() {
  isnum "$1" || {
    printf '%s' "$1"
    return 0
  }
  awk -v v="$1" 'BEGIN {
    s = sprintf("%.0f", v); neg = s ~ /^-/; if (neg) s = substr(s, 2)
    o = ""; while (length(s) > 3) { o = "," substr(s, length(s) - 2) o; s = substr(s, 1, length(s) - 3) }
    printf "%s%s%s", neg ? "-" : "", s, o }'
}

# flat V: a latency in microseconds: one decimal below 100, whole above.
flat() {
  isnum "$1" || {
    printf '%s' "$1"
    return 0
  }
  if awk -v v="$1" 'BEGIN { exit !(v < 100) }'; then
    awk -v v="$1" 'BEGIN { printf "%.1f", v }'
  else
    fint "$1"
  fi
}

# fdec V [DIGITS]: a plain decimal (MB/s and the like).
fdec() {
  isnum "$1" || {
    printf '%s' "$1"
    return 0
  }
  if awk -v v="$1" 'BEGIN { exit !(v >= 1000) }'; then
    fint "$1"
  else
    awk -v v="$1" -v d="${2:-1}" 'BEGIN { printf "%." d "f", v }'
  fi
}

# ratio A B: A / B to 2 decimals, or "—" when either is not a number.
ratio() {
  if isnum "$1" && isnum "$2" && awk -v b="$2" 'BEGIN { exit !(b != 0) }'; then
    awk -v a="$1" -v b="$2" 'BEGIN { printf "%.2f", a / b }'
  else
    printf '—'
  fi
}

# A cell that failed stays FAIL; "p50 / p99" pairs are joined here.
pair() {
  if [[ "$1" == FAIL || "$2" == FAIL ]]; then
    printf 'FAIL'
  else
    printf '%s / %s' "$(flat "$1")" "$(flat "$2")"
  fi
}
