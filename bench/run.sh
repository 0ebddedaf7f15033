#!/usr/bin/env bash
# bench/run.sh - the one command that runs jrpcd's server benchmark matrix
# and writes the results into BENCHMARKS.md.
#
#   bench/run.sh [--reps N] [--seconds S] [--quick] [--no-peers]
#                [--only SECTIONS] [--no-write] [--out FILE] [--keep]
#
#   --reps N        repetitions of every run; tables show medians (3)
#   --seconds S     measured seconds of each run, after a 0.3 s warm-up (2)
#   --quick         1 repetition of 0.5 s: a smoke test, not figures to quote
#   --no-peers      skip section E (the other JSON-RPC servers)
#   --only SECTIONS run only these sections, e.g. --only A or --only C,E
#   --no-write      print the tables, leave BENCHMARKS.md alone
#   --out FILE      write the block into FILE instead of BENCHMARKS.md
#   --keep          keep the temporary folder (logs of every run)
#
# Sections:
#   A  transports x framings x {1x1, 1x64, 8x64} x workers {1, 2}, small
#      requests: echo-server (the raw libuv baseline) against jrpcd
#   B  workloads (small, named, notify, batch:10, large:1024), echo vs jrpcd
#   C  batches and large frames on each parser backend (native, jsmn,
#      simdjson: those this build has; and auto)
#   D  how connections and calls spread over the workers (rpc.stats)
#   E  peers: json-rpc-2.0, jayson and libjson-rpc-cpp against jrpcd
#   F  memory per idle connection (conn-memory, 10,000 connections)
#   G  heap allocations per request (malloc_count.so preloaded)
#
# It builds what it needs first (cmake --build build/run, incremental;
# configured RelWithDebInfo when build/run does not exist yet). Progress goes
# to stderr, each section's markdown table to stdout as it completes; at the
# end the block between "<!-- bench/run.sh: begin -->" and
# "<!-- bench/run.sh: end -->" in BENCHMARKS.md is rewritten (the markers are
# appended when absent): sections run now replace theirs, the others stay.
#
# With workers = 1 the server runs on CPU 0 (taskset -c 0) and the client on
# CPU 1; with workers = 2 nothing is pinned and client and server share both
# cores. A run that fails (non-zero exit, no RESULT line, a server that does
# not start or stop cleanly) shows as FAIL and is listed with its command;
# the script goes on, and exits 1 at the end when anything failed.
set -euo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
BUILD=$ROOT/build/run
BENCH=$BUILD/bench/jrpc-bench
ECHO=$BUILD/bench/echo-server
CONNMEM=$BUILD/bench/conn-memory
JRPCD=$BUILD/daemon/jrpcd
HANDLERS=$BUILD/handlers
MALLOC_COUNT=$BUILD/tests/e2e/malloc_count.so
PEERS=$ROOT/bench/peers

# shellcheck source-path=SCRIPTDIR source=run_lib.sh
source "$ROOT/bench/run_lib.sh"

REPS=3
SECS=2
WARMUP=0.3
QUICK=0
PEERS_ON=1
ONLY=""
WRITE=1
KEEP=0
OUT_FILE=$ROOT/BENCHMARKS.md
ALL_SECTIONS="A B C D E F G"
BEGIN_MARK='<!-- bench/run.sh: begin -->'
END_MARK='<!-- bench/run.sh: end -->'

T=""
SECTION=-
REP=1
RUN_LIMIT_S=60
NRUN=0
NTOTAL=0

usage() {
  sed -n '2,/^set -euo/{/^set -euo/d;s/^# \{0,1\}//;p}' "${BASH_SOURCE[0]}"
  exit "${1:-0}"
}

parse_args() {
  local reps_set=0 secs_set=0
  while (($#)); do
    case $1 in
    --reps)
      [[ ${2:-} =~ ^[1-9][0-9]*$ ]] || die "--reps needs a whole number >= 1"
      REPS=$2 reps_set=1
      shift
      ;;
    --seconds)
      if ! [[ ${2:-} =~ ^[0-9]+(\.[0-9]+)?$ ]] || ! awk -v s="$2" 'BEGIN { exit !(s > 0) }'; then
        die "--seconds needs a number > 0"
      fi
      SECS=$2 secs_set=1
      shift
      ;;
    --quick) QUICK=1 ;;
    --no-peers) PEERS_ON=0 ;;
    --only)
      [[ -n ${2:-} ]] || die "--only needs sections, e.g. --only A or --only C,E"
      ONLY=$2
      shift
      ;;
    --no-write) WRITE=0 ;;
    --out)
      [[ -n ${2:-} ]] || die "--out needs a file"
      OUT_FILE=$2
      shift
      ;;
    --keep) KEEP=1 ;;
    -h | --help) usage 0 ;;
    *)
      printf 'run.sh: unknown option %s\n' "$1" >&2
      usage 2 >&2
      ;;
    esac
    shift
  done
  if ((QUICK)); then
    ((reps_set)) || REPS=1
    ((secs_set)) || SECS=0.5
  fi
  if [[ -n "$ONLY" ]]; then
    local s sel="" up
    up=$(tr '[:lower:]' '[:upper:]' <<<"$ONLY" | tr -c '[:upper:]' ' ')
    for s in $up; do
      [[ ${#s} == 1 && "$ALL_SECTIONS" == *"$s"* ]] || die "--only: no section '$s' (sections: $ALL_SECTIONS)"
      [[ " $sel " == *" $s "* ]] || sel="$sel $s"
    done
    SELECTED=""
    for s in $ALL_SECTIONS; do
      if [[ " $sel " == *" $s "* ]]; then
        SELECTED="$SELECTED$s "
      fi
    done
  else
    SELECTED="$ALL_SECTIONS "
  fi
  if ((!PEERS_ON)); then
    SELECTED=${SELECTED/E /}
  fi
  [[ -n "${SELECTED// /}" ]] || die "nothing to run"
  RUN_LIMIT_S=$(awk -v s="$SECS" -v w="$WARMUP" 'BEGIN { printf "%d", s + w + 60 }')
}

cleanup() {
  kill_servers_now
  if [[ -n "$T" && -d "$T" ]]; then
    if ((KEEP)); then
      log "logs kept in $T"
    else
      rm -rf -- "$T"
    fi
  fi
}

build() {
  local blog=$T/log/build.log
  if [[ ! -f "$BUILD/CMakeCache.txt" ]]; then
    log "configuring $BUILD (RelWithDebInfo)"
    cmake -S "$ROOT" -B "$BUILD" -DCMAKE_BUILD_TYPE=RelWithDebInfo >"$blog" 2>&1 ||
      {
        tail -n 30 "$blog" >&2
        die "cmake configure failed"
      }
  fi
  log "building (cmake --build $BUILD, incremental)"
  cmake --build "$BUILD" -j2 --target jrpcd jrpc-bench echo-server conn-memory \
    malloc_count math echo >>"$blog" 2>&1 || {
    tail -n 30 "$blog" >&2
    die "the build failed (cmake --build $BUILD)"
  }
  local f
  for f in "$JRPCD" "$BENCH" "$ECHO" "$CONNMEM" "$HANDLERS/math.so" "$HANDLERS/echo.so"; do
    [[ -x "$f" || -f "$f" ]] || die "missing after the build: $f"
  done
}

# --------------------------------------------------------------- metadata --

metadata() {
  local cc ver
  CPU=$(sed -n 's/^model name[[:space:]]*:[[:space:]]*//p' /proc/cpuinfo | head -n 1)
  CPU=${CPU:-$(uname -m)}
  CORES=$(nproc)
  KERNEL=$(uname -r)
  BTYPE=$(sed -n 's/^CMAKE_BUILD_TYPE:[A-Z]*=//p' "$BUILD/CMakeCache.txt")
  cc=$(sed -n 's/^CMAKE_C_COMPILER:[A-Z]*=//p' "$BUILD/CMakeCache.txt")
  ver="" COMPILER=${cc##*/}
  if [[ -n "$cc" ]]; then
    ver=$("$cc" -dumpfullversion 2>/dev/null || true)
    case $("$cc" --version 2>/dev/null) in
    *clang*) COMPILER=clang ;;
    *GCC* | *gcc* | *"Free Software"*) COMPILER=gcc ;;
    esac
    COMPILER="$COMPILER${ver:+ $ver}"
  fi
  COMMIT=$(git -C "$ROOT" rev-parse --short HEAD 2>/dev/null || echo unknown)
  # BENCHMARKS.md, which this script writes, does not make the tree dirty.
  if [[ -n "$(git -C "$ROOT" status --porcelain -- . ':!BENCHMARKS.md' 2>/dev/null)" ]]; then
    COMMIT="$COMMIT+dirty"
  fi
  MACHINE="$CPU, $CORES cores, Linux $KERNEL"
}

repro() {
  local s="bench/run.sh --only $1"
  if ((QUICK)); then
    s="$s --quick"
    [[ "$REPS" == 1 ]] || s="$s --reps $REPS"
    [[ "$SECS" == 0.5 ]] || s="$s --seconds $SECS"
  else
    [[ "$REPS" == 3 ]] || s="$s --reps $REPS"
    [[ "$SECS" == 2 ]] || s="$s --seconds $SECS"
  fi
  printf '%s' "$s"
}

# sec_head LETTER TITLE [RUNS_TEXT]: the heading and provenance of a section.
sec_head() {
  local runs=${3:-"median of $REPS run$( ((REPS == 1)) || echo s) of $SECS s each (after a $WARMUP s warm-up)"}
  printf '### %s. %s\n\n' "$1" "$2"
  # shellcheck disable=SC2016 # the backquotes are markdown
  printf '`%s` · %s · %s · %s build (%s) · commit %s · %s · load average %s at the start' \
    "$(repro "$1")" "$(date -u '+%Y-%m-%d %H:%M UTC')" "$MACHINE" "$BTYPE" "$COMPILER" \
    "$COMMIT" "$runs" "$(cut -d' ' -f1-3 /proc/loadavg)"
  ((QUICK)) && printf ' · **--quick: a smoke test, not figures to quote**'
  printf '\n\n'
}

sec_failures() {
  if [[ -s "$T/fail.$SECTION" ]]; then
    printf '\n**Failures in this section** (FAIL above; the commands ran with a temporary folder):\n\n'
    cut -c1-600 "$T/fail.$SECTION" | sed 's/^/- /'
  fi
}

# --------------------------------------------------------------- running --

# addr_args SPEC: SPEC is u:PATH or t:HOST:PORT; sets ADDR_ARGS.
addr_args() {
  case $1 in
  u:*) ADDR_ARGS=(-u "${1#u:}") ;;
  t:*) ADDR_ARGS=(-t "${1#t:}") ;;
  esac
}

# bench_one KEY SERVER_PID PIN SPEC [JRPC_BENCH_ARGS...]: one timed
# jrpc-bench run (--warmup, -d and -p added here), the client on CPU 1 when
# PIN is 1. Prints a progress line.
bench_one() {
  local key=$1 pid=$2 pin=$3 spec=$4
  shift 4
  local -a cmd=()
  NRUN=$((NRUN + 1))
  if [[ -z "$pid" ]]; then
    printf 'FAIL\n' >"$T/res/$key.$REP"
    printf '[%s %d/%d] %s rep %d/%d: FAIL (its server did not start)\n' "$SECTION" "$NRUN" "$NTOTAL" \
      "$(tr '_' ' ' <<<"${key#?_}")" "$REP" "$REPS" >&2
    return 0
  fi
  ((pin)) && cmd=(taskset -c 1)
  addr_args "$spec"
  cmd+=("$BENCH" -q "${ADDR_ARGS[@]}" --warmup "$WARMUP" -d "$SECS" -p "$pid" "$@")
  if run_rec "$key" "${cmd[@]}"; then
    printf '[%s %d/%d] %s rep %d/%d: %s req/s, p99 %s us\n' "$SECTION" "$NRUN" "$NTOTAL" \
      "$(tr '_' ' ' <<<"${key#?_}")" "$REP" "$REPS" "$(fint "$(field "$key" req_s)")" \
      "$(flat "$(field "$key" p99_us)")" >&2
  else
    printf '[%s %d/%d] %s rep %d/%d: FAIL\n' "$SECTION" "$NRUN" "$NTOTAL" \
      "$(tr '_' ' ' <<<"${key#?_}")" "$REP" "$REPS" >&2
  fi
  return 0
}

# ports N: N distinct free TCP ports, one a line.
ports() {
  local -a got=()
  local p
  while ((${#got[@]} < $1)); do
    p=$(free_port)
    [[ " ${got[*]} " == *" $p "* ]] || got+=("$p")
  done
  printf '%s\n' "${got[@]}"
}

JRPCD_READY='jrpcd\[info\] serving '
ECHO_READY='^echo-server: listening on '

# start_jrpcd NAME CONF PIN: jrpcd -c CONF (on CPU 0 when PIN is 1). Sets
# SPID ("" when it did not start).
start_jrpcd() {
  local -a on0=()
  (($3)) && on0=(taskset -c 0)
  start_server "$1" "$JRPCD_READY" "${on0[@]}" "$JRPCD" -c "$2" || true
}

start_echo() {
  local name=$1 pin=$2
  shift 2
  local -a p=()
  ((pin)) && p=(taskset -c 0)
  start_server "$name" "$ECHO_READY" "${p[@]}" "$ECHO" "$@" || true
}

# ----------------------------------------------------------- section A --

A_SHAPES="1x1 1x64 8x64"

section_A() {
  local w tr fr shape pin key c win
  NTOTAL=$((2 * 2 * 2 * 3 * 2 * REPS))
  for w in 1 2; do
    pin=$((w == 1 ? 1 : 0))
    local -a pp
    mapfile -t pp < <(ports 4)
    local conf=$T/A-w$w.conf
    jrpcd_conf "$conf" "$w" auto
    conf_listen "$conf" unl unix "$T/aj$w-nl.sock" newline
    conf_listen "$conf" ulen unix "$T/aj$w-len.sock" length
    conf_listen "$conf" tnl tcp "127.0.0.1:${pp[0]}" newline
    conf_listen "$conf" tlen tcp "127.0.0.1:${pp[1]}" length
    declare -A spec=() spid=()
    start_jrpcd "A-jrpcd-w$w" "$conf" "$pin"
    local jp=$SPID
    spec[jrpcd_unix_newline]=u:$T/aj$w-nl.sock
    spec[jrpcd_unix_length]=u:$T/aj$w-len.sock
    spec[jrpcd_tcp_newline]=t:127.0.0.1:${pp[0]}
    spec[jrpcd_tcp_length]=t:127.0.0.1:${pp[1]}
    start_echo "A-echo-w$w-unl" "$pin" -u "$T/ae$w-nl.sock" -f newline -j "$w"
    spid[unix_newline]=$SPID
    start_echo "A-echo-w$w-ulen" "$pin" -u "$T/ae$w-len.sock" -f length -j "$w"
    spid[unix_length]=$SPID
    start_echo "A-echo-w$w-tnl" "$pin" -t "127.0.0.1:${pp[2]}" -f newline -j "$w"
    spid[tcp_newline]=$SPID
    start_echo "A-echo-w$w-tlen" "$pin" -t "127.0.0.1:${pp[3]}" -f length -j "$w"
    spid[tcp_length]=$SPID
    spec[echo_unix_newline]=u:$T/ae$w-nl.sock
    spec[echo_unix_length]=u:$T/ae$w-len.sock
    spec[echo_tcp_newline]=t:127.0.0.1:${pp[2]}
    spec[echo_tcp_length]=t:127.0.0.1:${pp[3]}
    for tr in unix tcp; do
      for fr in newline length; do
        for shape in $A_SHAPES; do
          c=${shape%x*} win=${shape#*x}
          key=A_w${w}_${tr}_${fr}_$shape
          for ((REP = 1; REP <= REPS; REP++)); do
            bench_one "${key}_echo" "${spid[${tr}_$fr]}" "$pin" "${spec[echo_${tr}_$fr]}" \
              -f "$fr" -c "$c" -w "$win"
            bench_one "${key}_jrpcd" "$jp" "$pin" "${spec[jrpcd_${tr}_$fr]}" \
              -f "$fr" -c "$c" -w "$win"
          done
        done
      done
    done
    stop_all_servers
  done

  sec_head A "Transports and framings: echo-server against jrpcd, small requests"
  cat <<'EOF'
Small requests (`{"jsonrpc":"2.0","method":"math.add","params":[1,2],"id":N}`,
answered by the math plugin in jrpcd; echo-server is jrpcd's transport with no
JSON-RPC behind it, the floor). `C x W` = connections x requests in flight per
connection. workers = 1: server on CPU 0, jrpc-bench on CPU 1; workers = 2:
nothing pinned, client and server share both cores. Each cell alternates the
two servers run by run (echo, jrpcd, echo, ...). Ratios are jrpcd / echo of
the medians: req/s (higher is better for jrpcd), p99 (lower is better),
requests per server CPU-second (higher is better). CPU ns/req is the server
process's CPU time (user + system, from /proc/PID/stat) per request.

| workers | transport | framing | C x W | echo req/s | jrpcd req/s | jrpcd/echo | echo p50 / p99 µs | jrpcd p50 / p99 µs | p99 jrpcd/echo | echo CPU ns/req | jrpcd CPU ns/req | req per CPU-s jrpcd/echo |
|---|---|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|
EOF
  for w in 1 2; do
    for tr in unix tcp; do
      for fr in newline length; do
        for shape in $A_SHAPES; do
          key=A_w${w}_${tr}_${fr}_$shape
          local er jr e50 e99 j50 j99 ens jns ecs jcs wl
          er=$(med "${key}_echo" req_s) jr=$(med "${key}_jrpcd" req_s)
          e50=$(med "${key}_echo" p50_us) e99=$(med "${key}_echo" p99_us)
          j50=$(med "${key}_jrpcd" p50_us) j99=$(med "${key}_jrpcd" p99_us)
          ens=$(med "${key}_echo" ns_per_req_cpu) jns=$(med "${key}_jrpcd" ns_per_req_cpu)
          ecs=$(med "${key}_echo" req_per_cpu_s) jcs=$(med "${key}_jrpcd" req_per_cpu_s)
          wl=$w
          ((w == 1)) && wl="1 (pinned)"
          ((w == 2)) && wl="2 (shared)"
          printf '| %s | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s |\n' \
            "$wl" "$tr" "$fr" "$shape" "$(fint "$er")" "$(fint "$jr")" "$(ratio "$jr" "$er")" \
            "$(pair "$e50" "$e99")" "$(pair "$j50" "$j99")" "$(ratio "$j99" "$e99")" \
            "$(fint "$ens")" "$(fint "$jns")" "$(ratio "$jcs" "$ecs")"
        done
      done
    done
  done
}

# ----------------------------------------------------------- section B --

B_WORKLOADS="small named notify batch:10 large:1024"

section_B() {
  local wl key n
  NTOTAL=$((5 * 2 * REPS))
  local conf=$T/B.conf
  jrpcd_conf "$conf" 1 auto
  conf_listen "$conf" unl unix "$T/bj.sock" newline
  start_jrpcd B-jrpcd "$conf" 1
  local jp=$SPID
  start_echo B-echo 1 -u "$T/be.sock" -f newline -j 1
  local ep=$SPID
  for wl in $B_WORKLOADS; do
    key=B_${wl/:/}
    for ((REP = 1; REP <= REPS; REP++)); do
      bench_one "${key}_echo" "$ep" 1 "u:$T/be.sock" -c 1 -w 64 -W "$wl"
      bench_one "${key}_jrpcd" "$jp" 1 "u:$T/bj.sock" -c 1 -w 64 -W "$wl"
    done
  done
  stop_all_servers

  sec_head B "Workloads: echo-server against jrpcd (Unix socket, newline, 1 x 64, workers = 1)"
  cat <<'EOF'
One connection with 64 requests in flight, server on CPU 0 and jrpc-bench on
CPU 1. Workloads: `small` math.add with `[1,2]`; `named` the same with
`{"a":1,"b":2}`; `notify` a notification followed by a call (one "request" =
both, one reply); `batch:10` ten math.add calls in one array; `large:1024`
the echo method with a 1,024-character string (jrpcd echoes it back,
echo-server answers `3`). A request is one frame; calls/s counts the calls
inside.

| workload | calls per request | echo req/s | jrpcd req/s | jrpcd/echo | echo calls/s | jrpcd calls/s | echo p50 / p99 µs | jrpcd p50 / p99 µs | echo CPU ns/req | jrpcd CPU ns/req |
|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|
EOF
  for wl in $B_WORKLOADS; do
    key=B_${wl/:/}
    local er jr ec jc
    er=$(med "${key}_echo" req_s) jr=$(med "${key}_jrpcd" req_s)
    ec=$(med "${key}_echo" calls_s) jc=$(med "${key}_jrpcd" calls_s)
    case $wl in
    notify) n=2 ;;
    batch:*) n=${wl#batch:} ;;
    *) n=1 ;;
    esac
    printf '| %s | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s |\n' \
      "$wl" "$n" "$(fint "$er")" "$(fint "$jr")" "$(ratio "$jr" "$er")" \
      "$(fint "$ec")" "$(fint "$jc")" \
      "$(pair "$(med "${key}_echo" p50_us)" "$(med "${key}_echo" p99_us)")" \
      "$(pair "$(med "${key}_jrpcd" p50_us)" "$(med "${key}_jrpcd" p99_us)")" \
      "$(fint "$(med "${key}_echo" ns_per_req_cpu)")" "$(fint "$(med "${key}_jrpcd" ns_per_req_cpu)")"
  done
}

# ----------------------------------------------------------- section C --

C_WORKLOADS="batch:100 batch:1000 large:65536 large:1048576"
C_CANDIDATES="native jsmn simdjson"
C_WINDOW=8

# The parser backends this jrpcd accepts (jrpcd -t on a config naming each),
# then auto.
c_backends() {
  local be conf=$T/C-probe.conf
  for be in $C_CANDIDATES; do
    jrpcd_conf "$conf" 1 "$be"
    conf_listen "$conf" unl unix "$T/c-probe.sock" newline
    if "$JRPCD" -t -c "$conf" >/dev/null 2>&1; then
      printf '%s ' "$be"
    fi
  done
  printf 'auto\n'
}

# c_auto_pick LINE BYTES: which backend auto uses for a frame of BYTES,
# read from the first line of `jrpcd -t` ("(A below N bytes, B with ... from
# there)" or "(A ... for every frame ...)").
c_auto_pick() {
  local small="" th="" big="" one
  read -r small th big < <(sed -n 's/.*(\([a-z]*\) below \([0-9]*\) bytes, \([a-z]*\) .*/\1 \2 \3/p' <<<"$1") || true
  if [[ -n "$th" ]] && isnum "$2"; then
    if (($2 >= th)); then
      printf '%s (≥ %s B)' "$big" "$th"
    else
      printf '%s (< %s B)' "$small" "$th"
    fi
    return 0
  fi
  one=$(sed -n 's/.*(\([a-z]*\) [^()]*for every frame.*/\1/p' <<<"$1")
  if [[ -n "$one" ]]; then
    printf '%s (every frame)' "$one"
  else
    printf '?'
  fi
}

section_C() {
  local be wl key backends others nb
  backends=$(c_backends)
  others=""
  for be in $backends; do
    [[ $be == jsmn ]] || others="$others $be"
  done
  nb=$(wc -w <<<"$backends")
  NTOTAL=$((4 * nb * REPS))
  declare -A cp=()
  for be in $backends; do
    local conf=$T/C-$be.conf
    jrpcd_conf "$conf" 1 "$be" "max_frame_bytes = 8388608" "max_batch = 1000"
    conf_listen "$conf" unl unix "$T/c-$be.sock" newline
    start_jrpcd "C-jrpcd-$be" "$conf" 1
    cp[$be]=$SPID
  done
  local tline
  tline=$("$JRPCD" -t -c "$T/C-auto.conf" 2>&1 | head -n 1) || true
  for wl in $C_WORKLOADS; do
    key=C_${wl/:/}
    for ((REP = 1; REP <= REPS; REP++)); do
      for be in $backends; do
        bench_one "${key}_$be" "${cp[$be]}" 1 "u:$T/c-$be.sock" -c 1 -w "$C_WINDOW" -W "$wl"
      done
    done
  done
  stop_all_servers

  sec_head C "Batches and large frames on each parser backend (jrpcd only)"
  local list
  # shellcheck disable=SC2016 # the backquotes are markdown
  list=$(sed 's/\([a-z][a-z]*\)/`\1`/g; s/ *$//; s/ /, /g' <<<"$backends")
  cat <<TEXT
jrpcd with \`parser =\` each of $list (every backend this
build accepts; one daemon each, max_frame_bytes = 8388608, max_batch = 1000,
workers = 1 on CPU 0), Unix socket, newline framing, 1 connection x
$C_WINDOW frames in flight, jrpc-bench on CPU 1; the backends take turns run by
run. \`batch:N\` is N math.add calls in one array; \`large:K\` one call of the
echo method with a K-character string, echoed back. MB/s counts request
bytes (what the parser reads); the ratios are calls/s over jsmn's.
\`jrpcd -t\` for auto on this machine: \`${tline#*: }\`.

TEXT
  printf '| workload | bytes per frame |'
  for be in $backends; do printf ' %s calls/s |' "$be"; done
  for be in $backends; do printf ' %s MB/s |' "$be"; done
  for be in $others; do printf ' %s/jsmn |' "$be"; done
  printf ' auto picks |\n|---|---:|'
  for be in $backends $backends $others; do printf -- '---:|'; done
  printf -- '---|\n'
  for wl in $C_WORKLOADS; do
    key=C_${wl/:/}
    local bytes b js
    bytes="—"
    for b in $backends; do
      local mo rq
      mo=$(med "${key}_$b" mb_s_out) rq=$(med "${key}_$b" req_s)
      if isnum "$mo" && isnum "$rq" && [[ "$rq" != 0 ]]; then
        bytes=$(awk -v m="$mo" -v r="$rq" 'BEGIN { printf "%.0f", m * 1e6 / r }')
        break
      fi
    done
    js=$(med "${key}_jsmn" calls_s)
    printf '| %s | %s |' "$wl" "$(fint "$bytes")"
    for be in $backends; do printf ' %s |' "$(fint "$(med "${key}_$be" calls_s)")"; done
    for be in $backends; do printf ' %s |' "$(fdec "$(med "${key}_$be" mb_s_out)")"; done
    for be in $others; do printf ' %s |' "$(ratio "$(med "${key}_$be" calls_s)" "$js")"; done
    printf ' %s |\n' "$(c_auto_pick "$tline" "$bytes")"
  done
}

# ----------------------------------------------------------- section D --

rpc_stats() {
  printf '%s\n' '{"jsonrpc":"2.0","method":"rpc.stats","id":1}' |
    timeout 10 socat -t 5 - "UNIX-CONNECT:$1" 2>/dev/null || true
}

# per_worker JSON: "worker connections accepted calls", one worker a line.
per_worker() {
  grep -o '"worker":[0-9]*,"connections":[0-9]*,"accepted":[0-9]*,"calls":[0-9]*' <<<"$1" |
    sed 's/"worker":\([0-9]*\),"connections":\([0-9]*\),"accepted":\([0-9]*\),"calls":\([0-9]*\)/\1 \2 \3 \4/' || true
}

section_D() {
  local w pin key
  NTOTAL=2
  REP=1
  if ! command -v socat >/dev/null 2>&1; then
    sec_head D "Workers 1 and 2: how connections and calls spread (rpc.stats)" "skipped"
    printf 'Skipped: socat is not installed (apt-get install socat).\n'
    return 0
  fi
  declare -A mid=() end=()
  for w in 2 1; do
    pin=$((w == 1 ? 1 : 0))
    local conf=$T/D-w$w.conf sock=$T/d$w.sock
    jrpcd_conf "$conf" "$w" auto
    conf_listen "$conf" unl unix "$sock" newline
    start_jrpcd "D-jrpcd-w$w" "$conf" "$pin"
    local jp=$SPID
    key=D_w${w}_unix_newline_8x64_jrpcd
    if [[ -n "$jp" ]]; then
      bench_one "$key" "$jp" "$pin" "u:$sock" -c 8 -w 64 &
      local bp=$!
      sleep "$(awk -v s="$SECS" -v w="$WARMUP" 'BEGIN { print w + s / 2 }')"
      mid[$w]=$(rpc_stats "$sock")
      wait "$bp" || true
      NRUN=$((NRUN + 1))
      end[$w]=$(rpc_stats "$sock")
      [[ -n "$(per_worker "${end[$w]}")" ]] ||
        fail_note "rpc.stats on $sock gave no per-worker figures: ${end[$w]:0:300}"
    else
      printf 'FAIL\n' >"$T/res/$key.$REP"
    fi
    stop_all_servers
  done

  sec_head D "Workers 1 and 2: how connections and calls spread (rpc.stats)" \
    "one run of $SECS s (after a $WARMUP s warm-up) per row group"
  cat <<'EOF'
jrpcd, Unix socket, newline, 8 connections x 64 in flight, small requests;
workers = 2 unpinned (client and server share both cores), workers = 1 on
CPU 0 with jrpc-bench on CPU 1. `rpc.stats` (through socat) once halfway
through the run for the connections open, and once after it for the totals.
The mid-run figure includes the rpc.stats connection itself (so 9 in all),
`accepted` both rpc.stats connections (10), and `calls` the warm-up's and the
rpc.stats calls.

| workers | run req/s | worker | connections open mid-run | accepted | calls | share of calls |
|---|---:|---:|---:|---:|---:|---:|
EOF
  for w in 2 1; do
    key=D_w${w}_unix_newline_8x64_jrpcd
    local rs total i c a k line
    rs=$(fint "$(med "$key" req_s)")
    local -a rows=()
    mapfile -t rows < <(per_worker "${end[$w]:-}")
    declare -A midc=()
    while read -r i c a k; do
      [[ -n "$i" ]] && midc[$i]=$c
    done < <(per_worker "${mid[$w]:-}")
    total=0
    for line in "${rows[@]}"; do
      read -r i c a k <<<"$line"
      total=$((total + k))
    done
    if ((${#rows[@]} == 0)); then
      printf '| %s | %s | FAIL | FAIL | FAIL | FAIL | FAIL |\n' "$w" "$rs"
    fi
    for line in "${rows[@]}"; do
      read -r i c a k <<<"$line"
      printf '| %s | %s | %s | %s | %s | %s | %s |\n' "$w" "$rs" "$i" "${midc[$i]:-?}" \
        "$(fint "$a")" "$(fint "$k")" \
        "$( ((total > 0)) && awk -v k="$k" -v t="$total" 'BEGIN { printf "%.1f%%", 100 * k / t }' || echo —)"
    done
    unset midc
  done
}

# ----------------------------------------------------------- section E --

E_SHAPES="1x1 1x64 8x64"
E_PEERS_NOTE=""

peers_setup() {
  local what ok=0
  E_NODE=0 E_CPP=0
  if [[ ! -x "$PEERS/setup.sh" && ! -f "$PEERS/setup.sh" ]]; then
    E_PEERS_NOTE="bench/peers/setup.sh is missing: peers skipped."
    return 1
  fi
  for what in node cpp; do
    if bash "$PEERS/setup.sh" "$what" >"$T/log/peers-setup-$what.log" 2>&1; then
      ok=1
      [[ $what == node ]] && E_NODE=1
      [[ $what == cpp ]] && E_CPP=1
    else
      E_PEERS_NOTE="$E_PEERS_NOTE bench/peers/setup.sh $what failed: $(tail -n 2 "$T/log/peers-setup-$what.log" | tr '\n' ' ')"
      fail_note "bench/peers/setup.sh $what failed: $(tail -n 2 "$T/log/peers-setup-$what.log" | tr '\n' ' ')"
    fi
  done
  ((ok))
}

E_ROWS=()

section_E() {
  local shape c win key name
  REP=1
  declare -A ep=() esock=()
  if ! peers_setup; then
    sec_head E "Peers: other JSON-RPC 2.0 servers against jrpcd" "skipped"
    printf 'Skipped: %s\n' "${E_PEERS_NOTE# }"
    return 0
  fi
  # Every server on CPU 0 (a Node server's helper threads too), jrpc-bench
  # on CPU 1.
  if ((E_NODE)); then
    start_server E-json-rpc-2.0 '^listening' taskset -c 0 node "$PEERS/jsonrpc2_server.js" --unix "$T/e-jr2.sock" || true
    ep[json-rpc-2.0]=$SPID esock[json-rpc-2.0]=$T/e-jr2.sock
    start_server E-jayson '^listening' taskset -c 0 node "$PEERS/jayson_server.js" --unix "$T/e-jay.sock" || true
    ep[jayson]=$SPID esock[jayson]=$T/e-jay.sock
  fi
  if ((E_CPP)); then
    start_server E-libjson-rpc-cpp 'listening' taskset -c 0 "$PEERS/build/jsonrpccpp_server" --unix "$T/e-cpp.sock" || true
    ep[libjson-rpc-cpp]=$SPID esock[libjson-rpc-cpp]=$T/e-cpp.sock
    start_server E-libjson-rpc-cpp-lines 'listening' taskset -c 0 "$PEERS/build/jsonrpccpp_server" \
      --unix "$T/e-cppl.sock" --connector lines || true
    ep[libjson-rpc-cpp-lines]=$SPID esock[libjson-rpc-cpp-lines]=$T/e-cppl.sock
  fi
  local conf=$T/E.conf
  jrpcd_conf "$conf" 1 auto
  conf_listen "$conf" unl unix "$T/e-jrpcd.sock" newline
  start_jrpcd E-jrpcd "$conf" 1
  ep[jrpcd]=$SPID esock[jrpcd]=$T/e-jrpcd.sock

  # The rows, in table order: "shape server [reconnect]".
  E_ROWS=()
  for shape in $E_SHAPES; do
    ((E_NODE)) && E_ROWS+=("$shape json-rpc-2.0" "$shape jayson")
    ((E_CPP)) && E_ROWS+=("$shape libjson-rpc-cpp-lines")
    E_ROWS+=("$shape jrpcd")
    if [[ $shape == 1x1 ]] && ((E_CPP)); then
      E_ROWS+=("$shape libjson-rpc-cpp reconnect" "$shape jrpcd reconnect")
    fi
  done
  NTOTAL=$((${#E_ROWS[@]} * REPS))
  local row rc
  for shape in $E_SHAPES; do
    c=${shape%x*} win=${shape#*x}
    for ((REP = 1; REP <= REPS; REP++)); do
      for row in "${E_ROWS[@]}"; do
        [[ "$row" == "$shape "* ]] || continue
        read -r _ name rc <<<"$row"
        key=E_${shape}_${name}${rc:+_reconnect1}
        if [[ -n "$rc" ]]; then
          bench_one "$key" "${ep[$name]:-}" 1 "u:${esock[$name]:-}" -c "$c" -w "$win" --reconnect 1
        else
          bench_one "$key" "${ep[$name]:-}" 1 "u:${esock[$name]:-}" -c "$c" -w "$win"
        fi
      done
    done
  done
  stop_all_servers

  sec_head E "Peers: other JSON-RPC 2.0 servers against jrpcd"
  local v1 v2
  v1=$(node -p "require('$PEERS/node_modules/json-rpc-2.0/package.json').version" 2>/dev/null || echo '?')
  v2=$(node -p "require('$PEERS/node_modules/jayson/package.json').version" 2>/dev/null || echo '?')
  cat <<EOF
Small requests (math.add \`[1,2]\`), Unix socket, newline framing; every
server on CPU 0 (a Node server's helper threads too), jrpc-bench on CPU 1;
jrpcd with workers = 1. Servers (bench/peers/, set up by
bench/peers/setup.sh): json-rpc-2.0 $v1 and jayson $v2 on Node.js
$(node --version 2>/dev/null || echo '?'), libjson-rpc-cpp $(pkg-config --modversion libjsonrpccpp-server 2>/dev/null || echo '?') (Debian's, with
its own UnixDomainSocketServer). That connector answers one request per
connection and then closes it, and its accept loop sleeps 25 ms whenever no
connection is waiting (bench/peers/README.md), so it runs 1 x 1 only, with
\`jrpc-bench --reconnect 1\` (a new connection per request); jrpcd runs that
same load in the row below it. "libjson-rpc-cpp, lines connector" is the
library's request handling behind bench/peers' own persistent, pipelining
connector (thread per connection; not part of the library), as the
json-rpc-2.0 row is that library behind our Node framing; jayson serves with
its own \`Server#tcp()\`. The runs take turns server by server within each
repetition. Server CPU comes from /proc/PID/stat in 10 ms ticks, coarse for
the slowest rows. Last column: jrpcd's req/s over this server's at the same
load; the bold row divides by the fastest peer at that load.

| C x W | server | req/s | p50 / p99 µs | server CPU ns/req | jrpcd / this |
|---|---|---:|---:|---:|---:|
EOF
  for shape in $E_SHAPES; do
    local jr best=0 bestname="" r
    jr=$(med "E_${shape}_jrpcd" req_s)
    for row in "${E_ROWS[@]}"; do
      [[ "$row" == "$shape "* ]] || continue
      read -r _ name rc <<<"$row"
      key=E_${shape}_${name}${rc:+_reconnect1}
      r=$(med "$key" req_s)
      local cmp=$jr label=$shape
      [[ -n "$rc" ]] && {
        cmp=$(med "E_${shape}_jrpcd_reconnect1" req_s)
        label="$shape, reconnect 1"
      }
      if [[ "$name" != jrpcd && -z "$rc" ]] && isnum "$r" &&
        awk -v a="$r" -v b="$best" 'BEGIN { exit !(a > b) }'; then
        best=$r bestname=$name
      fi
      local rat
      rat=$(ratio "$cmp" "$r")
      [[ "$name" == jrpcd ]] && rat="—"
      local shown=$name
      case $name in
      libjson-rpc-cpp) shown="libjson-rpc-cpp (its UnixDomainSocketServer)" ;;
      libjson-rpc-cpp-lines) shown="libjson-rpc-cpp, lines connector" ;;
      esac
      printf '| %s | %s | %s | %s | %s | %s |\n' "$label" "$shown" "$(fint "$r")" \
        "$(pair "$(med "$key" p50_us)" "$(med "$key" p99_us)")" \
        "$(fint "$(med "$key" ns_per_req_cpu)")" "$rat"
    done
    if [[ -n "$bestname" ]]; then
      [[ "$bestname" == libjson-rpc-cpp-lines ]] && bestname="libjson-rpc-cpp, lines connector"
      printf '| %s | **jrpcd / best peer (%s)** | | | | **%s** |\n' "$shape" "$bestname" "$(ratio "$jr" "$best")"
    fi
  done
  if [[ -n "$E_PEERS_NOTE" ]]; then
    printf '\nNot run: %s\n' "${E_PEERS_NOTE# }"
  fi
}

# ----------------------------------------------------------- section F --

section_F() {
  local n hard
  n=10000
  hard=$(ulimit -Hn)
  if [[ "$hard" != unlimited ]] && ((hard < n + 100)); then
    n=$((hard - 100))
  fi
  NTOTAL=$REPS
  for ((REP = 1; REP <= REPS; REP++)); do
    local conf=$T/F.conf
    jrpcd_conf "$conf" 1 auto "max_connections = 20000"
    conf_listen "$conf" unl unix "$T/f.sock" newline
    start_jrpcd "F-jrpcd-$REP" "$conf" 1
    NRUN=$((NRUN + 1))
    if [[ -n "$SPID" ]]; then
      if run_rec F_connmem taskset -c 1 "$CONNMEM" -u "$T/f.sock" -p "$SPID" -n "$n"; then
        printf '[F %d/%d] conn-memory -n %d: %s bytes per idle connection\n' "$NRUN" "$NTOTAL" "$n" \
          "$(fint "$(field F_connmem bytes_per_conn)")" >&2
      fi
    else
      printf 'FAIL\n' >"$T/res/F_connmem.$REP"
    fi
    stop_all_servers
  done

  sec_head F "Memory per idle connection (conn-memory)" \
    "median of $REPS run$( ((REPS == 1)) || echo s), a fresh daemon each"
  cat <<EOF
jrpcd (workers = 1 on CPU 0, max_connections = 20000), Unix socket, newline.
\`conn-memory -n $n\` warms the daemon with one call on one connection, reads
its VmRSS, opens $(fint "$n") connections and makes one call on each, waits
0.3 s and reads VmRSS again (idle), then closes them and reads it a third time.
Bytes per idle connection = (idle - before) / connections.

| connections | RSS before KiB | RSS idle KiB | RSS after closing KiB | bytes per idle connection |
|---:|---:|---:|---:|---:|
EOF
  printf '| %s | %s | %s | %s | %s |\n' "$(fint "$(med F_connmem conns)")" \
    "$(fint "$(med F_connmem rss_before_kib)")" "$(fint "$(med F_connmem rss_idle_kib)")" \
    "$(fint "$(med F_connmem rss_closed_kib)")" "$(fint "$(med F_connmem bytes_per_conn)")"
  if ((n != 10000)); then
    printf '\nThe hard open-file limit here is %s: %s connections instead of 10,000.\n' "$hard" "$n"
  fi
}

# ----------------------------------------------------------- section G --

# malloc_counts PID FILE: "allocs frees" of the preloaded daemon, or "".
malloc_counts() {
  local i
  rm -f -- "$2"
  kill -USR2 "$1" 2>/dev/null || return 0
  for ((i = 0; i < 500; i++)); do
    if [[ -s "$2" ]]; then
      sed -n 's/^allocs \([0-9]*\) frees \([0-9]*\).*/\1 \2/p' "$2"
      return 0
    fi
    sleep 0.01
  done
}

section_G() {
  local cf=$T/g.counts
  REP=1
  NTOTAL=3
  local conf=$T/G.conf
  jrpcd_conf "$conf" 1 auto
  conf_listen "$conf" unl unix "$T/g.sock" newline
  declare -A al=() fr=()
  local -a labels=(start run1 run2 run3) ns=(0 10000 10000 1000000)
  local jp=""
  if [[ ! -f "$MALLOC_COUNT" ]]; then
    fail_note "missing $MALLOC_COUNT (a sanitizer build has none)"
  else
    start_server G-jrpcd "$JRPCD_READY" env "LD_PRELOAD=$MALLOC_COUNT" "MALLOC_COUNT_OUT=$cf" \
      taskset -c 0 "$JRPCD" -c "$conf" || true
    jp=$SPID
  fi
  local i a f ok=1
  if [[ -n "$jp" ]]; then
    read -r a f <<<"$(malloc_counts "$jp" "$cf")"
    al[start]=${a:-} fr[start]=${f:-}
    [[ -n "${a:-}" ]] || {
      ok=0
      fail_note "malloc_count.so wrote nothing to $cf on SIGUSR2 (was it preloaded?)"
    }
    for i in 1 2 3; do
      ((ok)) || break
      NRUN=$((NRUN + 1))
      local n=${ns[$i]} key=G_run$i
      if run_rec "$key" taskset -c 1 "$BENCH" -q -u "$T/g.sock" -c 1 -w 64 -n "$n" -p "$jp"; then
        printf '[G %d/3] %s requests: %s req/s\n' "$i" "$(fint "$n")" "$(fint "$(field "$key" req_s)")" >&2
      else
        ok=0
        break
      fi
      read -r a f <<<"$(malloc_counts "$jp" "$cf")"
      al[${labels[$i]}]=${a:-} fr[${labels[$i]}]=${f:-}
      [[ -n "${a:-}" ]] || {
        ok=0
        fail_note "malloc_count.so wrote nothing after run $i"
      }
    done
  else
    ok=0
  fi
  stop_all_servers

  sec_head G "Heap allocations per request (malloc_count.so)" "three runs on one daemon"
  cat <<'EOF'
jrpcd (workers = 1 on CPU 0, parser auto) with tests/e2e/malloc_count.so
preloaded; after each jrpc-bench run (1 connection x 64 in flight, small
requests, no warm-up, so exactly the requests named) SIGUSR2 makes it write
its allocation and free counts. Each run opens a new connection, which
allocates; so the figure is whether a run of 1,000,000 requests allocates
more than a run of 10,000: per request = ((A3 - A2) - (A2 - A1)) / 990,000.

| after | requests served so far | allocations | frees | allocations in this run | frees in this run |
|---|---:|---:|---:|---:|---:|
EOF
  local cum=0 prev_a="" prev_f="" lab
  local -a names=("daemon start" "run 1: 10,000 requests" "run 2: 10,000 requests" "run 3: 1,000,000 requests")
  for i in 0 1 2 3; do
    lab=${labels[$i]}
    cum=$((cum + ns[i]))
    a=${al[$lab]:-FAIL} f=${fr[$lab]:-FAIL}
    local da="—" df="—"
    if ((i > 0)) && isnum "$a" && isnum "$prev_a"; then
      da=$(fint $((a - prev_a))) df=$(fint $((f - prev_f)))
    fi
    printf '| %s (A%d) | %s | %s | %s | %s | %s |\n' "${names[$i]}" "$i" "$(fint "$cum")" \
      "$(fint "$a")" "$(fint "$f")" "$da" "$df"
    prev_a=$a prev_f=$f
  done
  printf '\n'
  if ((ok)) && isnum "${al[run3]:-}"; then
    local d1=$((al[run2] - al[run1])) d2=$((al[run3] - al[run2]))
    local e1=$((fr[run2] - fr[run1])) e2=$((fr[run3] - fr[run2]))
    if ((d1 == d2 && e1 == e2)); then
      printf '**0 allocations per request**: a run of 1,000,000 requests allocated as often as a run of 10,000 (A3 - A2 = A2 - A1 = %s; frees %s each): what opening and closing its connection costs, nothing per request.\n' \
        "$(fint "$d1")" "$(fint "$e1")"
    else
      printf '**Not zero**: A3 - A2 = %s but A2 - A1 = %s (frees %s vs %s): %s allocations per request.\n' \
        "$(fint "$d2")" "$(fint "$d1")" "$(fint "$e2")" "$(fint "$e1")" \
        "$(awk -v a="$d2" -v b="$d1" 'BEGIN { printf "%.4f", (a - b) / 990000 }')"
      fail_note "allocations per request are not zero: A3-A2=$d2, A2-A1=$d1"
    fi
  else
    printf 'No verdict: the counts are incomplete (see the failures below).\n'
  fi
}

# ------------------------------------------------------------ the block --

write_block() {
  local file=$1 nb ne
  [[ -f "$file" ]] || die "$file does not exist"
  nb=$(grep -c -x -F -- "$BEGIN_MARK" "$file" || true)
  ne=$(grep -c -x -F -- "$END_MARK" "$file" || true)
  local pre=$T/pre.md block=$T/block.md post=$T/post.md
  if ((nb == 0 && ne == 0)); then
    cp -- "$file" "$pre"
    [[ -z "$(tail -c 1 "$pre")" ]] || printf '\n' >>"$pre"
    printf '\n' >>"$pre"
    : >"$block"
    : >"$post"
  elif ((nb == 1 && ne == 1)); then
    awk -v b="$BEGIN_MARK" -v e="$END_MARK" -v pre="$pre" -v blk="$block" -v post="$post" '
      BEGIN { out = pre; printf "" > pre; printf "" > blk; printf "" > post }
      $0 == b && out == pre { out = blk; next }
      $0 == e && out == blk { out = post; next }
      { print > out }' "$file"
  else
    die "$file: expected one '$BEGIN_MARK' and one '$END_MARK' line, found $nb and $ne; fix it by hand"
  fi
  # The sections of the old block, each from its marker line on.
  awk -v dir="$T/old" '
    /^<!-- bench\/run.sh: section [A-Z] -->$/ { s = $0; sub(/^<!-- bench\/run.sh: section /, "", s); out = dir "/" substr(s, 1, 1) ".md" }
    out != "" { print > out }' "$block"
  local new=$T/newfile.md s
  {
    cat "$pre"
    printf '%s\n' "$BEGIN_MARK"
    cat <<EOF
## Server benchmarks: \`bench/run.sh\`

Written by \`bench/run.sh\`, which builds what it needs, runs the whole
matrix below (about $(fint "$((FULL_ESTIMATE / 60))") minutes with the defaults: 3 repetitions of
2 s) and rewrites this block; \`bench/run.sh --only X\` reruns section X
alone and leaves the others as they are. Each section names the command,
date, machine, build and commit of its own figures. Load generator:
\`build/run/bench/jrpc-bench\`; baseline: \`build/run/bench/echo-server\`.
The machine is a shared 2-core VM: compare figures within one table, where
the runs alternate, rather than across tables or dates. Edits between these
markers are overwritten.

EOF
    for s in $ALL_SECTIONS; do
      if [[ -f "$T/sec/$s.md" ]]; then
        printf '<!-- bench/run.sh: section %s -->\n' "$s"
        cat "$T/sec/$s.md"
        printf '\n'
      elif [[ -f "$T/old/$s.md" ]]; then
        cat "$T/old/$s.md"
      fi
    done
    printf '%s\n' "$END_MARK"
    cat "$post"
  } >"$new"
  cat -- "$new" >"$file"
  log "wrote the block into $file"
}

# ------------------------------------------------------------------ main --

estimate() {
  # seconds per timed run: warm-up, measurement, connecting and the rest.
  local per total=0 s
  per=$(awk -v s="$1" -v w="$WARMUP" 'BEGIN { print s + w + 0.2 }')
  for s in $2; do
    case $s in
    A) total=$(awk -v t="$total" -v p="$per" -v r="$3" 'BEGIN { print t + 48 * r * p + 2 }') ;;
    B) total=$(awk -v t="$total" -v p="$per" -v r="$3" 'BEGIN { print t + 10 * r * p + 1 }') ;;
    C) total=$(awk -v t="$total" -v p="$per" -v r="$3" 'BEGIN { print t + 16 * r * (p + 0.3) + 1 }') ;;
    D) total=$(awk -v t="$total" -v p="$per" 'BEGIN { print t + 2 * (p + 1) }') ;;
    E) total=$(awk -v t="$total" -v p="$per" -v r="$3" 'BEGIN { print t + 14 * r * p + 8 }') ;;
    F) total=$(awk -v t="$total" -v r="$3" 'BEGIN { print t + 4 * r }') ;;
    G) total=$(awk -v t="$total" 'BEGIN { print t + 8 }') ;;
    esac
  done
  printf '%.0f' "$total"
}

main() {
  parse_args "$@"
  T=$(mktemp -d /tmp/jrpcd-bench.XXXXXX)
  trap cleanup EXIT
  trap 'exit 130' INT TERM HUP
  mkdir -p "$T/res" "$T/log" "$T/sec" "$T/old"
  command -v taskset >/dev/null 2>&1 || die "taskset is required (util-linux)"
  local t0=$SECONDS est
  build
  metadata
  FULL_ESTIMATE=$(estimate 2 "$ALL_SECTIONS" 3)
  est=$(estimate "$SECS" "$SELECTED" "$REPS")
  log "sections: $SELECTED; $REPS repetition(s) of $SECS s (+${WARMUP} s warm-up) per cell"
  log "machine: $MACHINE; $BTYPE build ($COMPILER); commit $COMMIT"
  log "estimated duration: about $((est / 60)) min $((est % 60)) s"
  local s nfail=0
  for s in $SELECTED; do
    SECTION=$s NRUN=0 NTOTAL=0
    : >"$T/fail.$s"
    log "section $s"
    {
      "section_$s"
      sec_failures
    } >"$T/sec/$s.md"
    cat "$T/sec/$s.md"
    printf '\n'
    if [[ -s "$T/fail.$s" ]]; then
      nfail=$((nfail + $(wc -l <"$T/fail.$s")))
    fi
  done
  if ((WRITE)); then
    write_block "$OUT_FILE"
  fi
  log "done in $(((SECONDS - t0) / 60)) min $(((SECONDS - t0) % 60)) s; $nfail failure(s)"
  ((nfail == 0)) || exit 1
}

main "$@"
