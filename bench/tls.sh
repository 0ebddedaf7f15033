#!/usr/bin/env bash
# TLS against plain TCP, in one run: jrpcd (workers = 1) serves the same
# calls on a plain TCP listener and on a TLS one, each framing; jrpc-bench
# drives 1 x 64 and 8 x 64. jrpc-bench has no TLS of its own, so on the
# TLS side socat terminates TLS for it on this machine (one socat process
# per connection): the req/s there are socat's limit as much as jrpcd's,
# and the figure to compare is jrpcd's own CPU time per request (-p).
# Then new TLS connections per second (openssl s_time, full handshakes),
# against new plain connections (jrpc-bench --reconnect 1).
#
#   bench/tls.sh [build-dir] [seconds]      (default build/run, 3)
set -euo pipefail
cd "$(dirname "$0")/.."
build=$(realpath "${1:-build/run}")
secs=${2:-3}
bin=$build/daemon/jrpcd bench=$build/bench/jrpc-bench
if [ ! -x "$bin" ] || [ ! -x "$bench" ]; then
  echo "build first: cmake --build $build" >&2
  exit 1
fi
for t in socat openssl; do
  command -v "$t" >/dev/null || { echo "$t is needed (scripts/deps.sh)" >&2; exit 1; }
done
dir=$(mktemp -d)
pids=()
trap 'kill "${pids[@]}" 2>/dev/null || true; wait 2>/dev/null || true; rm -rf "$dir"' EXIT

port() { # a free port below the ephemeral range
  local p
  for p in $(shuf -i 20000-32000 -n 50); do
    if ! (exec 3<>"/dev/tcp/127.0.0.1/$p") 2>/dev/null; then echo "$p"; return; fi
  done
  exit 1
}
openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -days 2 \
  -subj /CN=127.0.0.1 -addext subjectAltName=IP:127.0.0.1 \
  -keyout "$dir/k.pem" -out "$dir/c.pem" 2>/dev/null
pn=$(port) pl=$(port) tn=$(port) tl=$(port)
cat >"$dir/j.conf" <<EOF
[server]
workers = 1
plugin_dir = $build/handlers
[listen pn]
tcp = 127.0.0.1:$pn
[listen pl]
tcp = 127.0.0.1:$pl
framing = length
[listen tn]
tcp = 127.0.0.1:$tn
tls_cert = $dir/c.pem
tls_key = $dir/k.pem
[listen tl]
tcp = 127.0.0.1:$tl
framing = length
tls_cert = $dir/c.pem
tls_key = $dir/k.pem
[plugin math]
path = math.so
EOF
"$bin" -c "$dir/j.conf" 2>"$dir/j.log" &
jpid=$!
pids+=("$jpid")
for _ in $(seq 100); do grep -q serving "$dir/j.log" && break; sleep 0.05; done
# socat relays: plain in, TLS out, one child per connection.
sn=$(port) sl=$(port)
for pair in "$sn:$tn" "$sl:$tl"; do
  socat "TCP-LISTEN:${pair%%:*},bind=127.0.0.1,reuseaddr,fork" \
    "OPENSSL:127.0.0.1:${pair##*:},cafile=$dir/c.pem" 2>/dev/null &
  pids+=($!)
done
sleep 0.3

run() { # PORT FRAMING C W -> "req/s cpu_ns_per_req"
  "$bench" -t "127.0.0.1:$1" -f "$2" -c "$3" -w "$4" -d "$secs" --warmup 0.5 \
    -q -p "$jpid" 2>/dev/null | awk '/^RESULT/ {
      for (i = 2; i <= NF; i++) { split($i, kv, "="); r[kv[1]] = kv[2] }
      printf "%s %s\n", r["req_s"], r["ns_per_req_cpu"] }'
}
printf '%-8s %-7s %-6s %14s %14s %16s %16s\n' framing load "" "plain req/s" \
  "TLS req/s" "plain CPU ns/req" "TLS CPU ns/req"
for f in newline length; do
  p=$pn s=$sn
  [ "$f" = length ] && p=$pl s=$sl
  for load in "1 64" "8 64"; do
    # shellcheck disable=SC2086 # load is "C W"
    read -r a b < <(run "$p" "$f" $load)
    # shellcheck disable=SC2086
    read -r c d < <(run "$s" "$f" $load)
    printf '%-8s %-7s %-6s %14s %14s %16s %16s\n' "$f" "${load/ /x}" "" \
      "$a" "$c" "$b" "$d"
  done
done
echo
plain=$("$bench" -t "127.0.0.1:$pn" -c 1 -w 1 --reconnect 1 -d "$secs" -q 2>/dev/null |
  awk '/^RESULT/ { for (i = 2; i <= NF; i++) { split($i, kv, "="); if (kv[1] == "req_s") print kv[2] } }')
tls=$(openssl s_time -connect "127.0.0.1:$tn" -new -time "$secs" -CAfile "$dir/c.pem" 2>/dev/null |
  awk '/connections in [0-9.]+s;/ { for (i = 1; i <= NF; i++) if ($i ~ /connections\/user/) print $(i-1) }' |
  head -1)
echo "new connections per second (one call each for plain; a full TLS handshake each with openssl s_time)"
echo "plain: $plain    TLS: ${tls:-?}"
