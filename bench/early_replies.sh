#!/usr/bin/env bash
# early_reply_frames = 0 against 32 (the default), side by side: two
# daemons (1 worker, pinned to CPU 0) on their own sockets, jrpc-bench on
# CPU 1, runs alternating between them, REPS each per load; prints every
# run and the medians.
#
#   bench/early_replies.sh [build-dir (build/run)] [reps (5)] [seconds (2)]
#                          [unix|tcp (unix)]
set -euo pipefail
cd "$(dirname "$0")/.."
build=${1:-build/run}
reps=${2:-5}
secs=${3:-2}
transport=${4:-unix}
case $transport in unix | tcp) ;; *) echo "transport: unix or tcp" >&2; exit 2 ;; esac
# A TCP port nothing listens on (a connect that fails), for each daemon.
free_port() {
  local p
  for p in $(shuf -i 20000-60000 -n 100); do
    # shellcheck disable=SC2016 # $1 is the inner shell's
    timeout 1 bash -c 'exec 3<>"/dev/tcp/127.0.0.1/$1"' _ "$p" 2>/dev/null || { echo "$p"; return 0; }
  done
  echo "no free TCP port" >&2
  exit 1
}
cmake --build "$build" --target jrpcd math jrpc-bench >/dev/null
tmp=$(mktemp -d)
pids=()
trap 'kill "${pids[@]}" 2>/dev/null; wait 2>/dev/null; rm -rf "$tmp"' EXIT
declare -A addr
for b in 0 32; do
  if [ "$transport" = tcp ]; then
    port=$(free_port)
    listen="tcp = 127.0.0.1:$port"
    addr[$b]="-t 127.0.0.1:$port"
  else
    listen="unix = $tmp/e$b.sock"
    addr[$b]="-u $tmp/e$b.sock"
  fi
  cat >"$tmp/e$b.conf" <<CONF
[server]
workers = 1
early_reply_frames = $b
plugin_dir = $PWD/$build/handlers
[listen u]
$listen
[plugin math]
path = math.so
CONF
  taskset -c 0 "$build/daemon/jrpcd" -c "$tmp/e$b.conf" 2>"$tmp/e$b.log" &
  pids+=($!)
  echo $! >"$tmp/e$b.pid"
done
for b in 0 32; do
  for _ in $(seq 100); do
    grep -q 'serving ' "$tmp/e$b.log" 2>/dev/null && break
    sleep 0.05
  done
done
field() { sed -n "s/.* $1=\([^ ]*\).*/\1/p"; }
for load in "1 1" "1 64" "8 64"; do
  read -r c w <<<"$load"
  for _ in $(seq "$reps"); do
    for b in 0 32; do
      r=$(taskset -c 1 "$build/bench/jrpc-bench" -q ${addr[$b]} -c "$c" -w "$w" \
        -d "$secs" --warmup 0.3 -p "$(cat "$tmp/e$b.pid")" | grep '^RESULT')
      echo "${c}x$w $b $(field req_s <<<"$r") $(field p99_us <<<"$r") $(field ns_per_req_cpu <<<"$r")"
    done
  done
done | tee "$tmp/runs"
echo
echo "medians: load, early_reply_frames, req/s, p99 us, server CPU ns/req"
awk '{ k = $1 " " $2; n[k]++; r[k, n[k]] = $3; p[k, n[k]] = $4; c[k, n[k]] = $5 }
  function med(a, k, m,   i, j, t, v) {
    for (i = 1; i <= m; i++) v[i] = a[k, i]
    for (i = 1; i <= m; i++) for (j = i + 1; j <= m; j++) if (v[j] + 0 < v[i] + 0) { t = v[i]; v[i] = v[j]; v[j] = t }
    return v[int((m + 1) / 2)]
  }
  END { for (k in n) print k, med(r, k, n[k]), med(p, k, n[k]), med(c, k, n[k]) }' "$tmp/runs" | sort
