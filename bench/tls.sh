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
# With --handshakes, only new TLS connections, each making one call: full
# handshakes beside resumed ones (the session of the previous connection,
# by ticket or, with no_ticket, by session id), TLS 1.3 and 1.2, on a TLS
# listener and a mutual-TLS one. The client is python3's ssl (openssl
# s_time never reads a TLS 1.3 ticket, so it cannot resume), one
# connection at a time; per row the connections per second it made, how
# many resumed, and jrpcd's CPU time per connection (from /proc: the
# server's cost, whatever the client's speed).
#
#   bench/tls.sh [--handshakes] [build-dir] [seconds]  (default build/run, 3)
set -euo pipefail
cd "$(dirname "$0")/.."
only_handshakes=0
if [ "${1:-}" = --handshakes ]; then
  only_handshakes=1
  shift
fi
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
# A client certificate for the mutual-TLS listener, signed by the server's.
openssl req -new -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes \
  -subj /CN=bench -keyout "$dir/ck.pem" -out "$dir/c.csr" 2>/dev/null
openssl x509 -req -in "$dir/c.csr" -CA "$dir/c.pem" -CAkey "$dir/k.pem" \
  -set_serial 2 -days 2 -out "$dir/cc.pem" 2>/dev/null
pn=$(port) pl=$(port) tn=$(port) tl=$(port) tm=$(port)
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
[listen tm]
tcp = 127.0.0.1:$tm
tls_cert = $dir/c.pem
tls_key = $dir/k.pem
tls_client_ca = $dir/c.pem
peers = cert:bench
[plugin math]
path = math.so
EOF
"$bin" -c "$dir/j.conf" 2>"$dir/j.log" &
jpid=$!
pids+=("$jpid")
for _ in $(seq 100); do grep -q serving "$dir/j.log" && break; sleep 0.05; done

cpu_ticks() { awk '{ print $14 + $15 }' "/proc/$jpid/stat"; }
cat >"$dir/hs.py" <<'PY'
import socket, ssl, sys, time
port, ver, mode, secs, ca = int(sys.argv[1]), sys.argv[2], sys.argv[3], float(sys.argv[4]), sys.argv[5]
c = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
c.load_verify_locations(ca)
if len(sys.argv) > 6:
    c.load_cert_chain(sys.argv[6], sys.argv[7])
v = ssl.TLSVersion.TLSv1_3 if ver == "1.3" else ssl.TLSVersion.TLSv1_2
c.minimum_version = c.maximum_version = v
if mode == "id":
    c.options |= ssl.OP_NO_TICKET
req = b'{"jsonrpc":"2.0","method":"math.add","params":[1,2],"id":1}\n'
sess, n, reused, end = None, 0, 0, time.time() + secs
while time.time() < end:
    raw = socket.create_connection(("127.0.0.1", port))
    raw.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)  # as jrpcd
    try:
        s = c.wrap_socket(raw, server_hostname="127.0.0.1",
                          session=sess if mode != "new" else None)
    except ssl.SSLError as e:  # a server that cannot resume may refuse
        print(n, reused, "(%s)" % e.reason)
        sys.exit(0)
    s.sendall(req)
    s.recv(4096)  # the reply; a TLS 1.3 ticket comes before it
    reused += s.session_reused
    sess = s.session
    s.close()
    n += 1
print(n, reused)
PY
handshakes() { # PORT VERSION MODE [cert key] -> "conn/s resumed us_cpu/conn"
  local port=$1 v=$2 mode=$3 t0 t1 c0 c1 n r
  shift 3
  c0=$(cpu_ticks)
  t0=$(date +%s.%N)
  read -r n r why < <(python3 "$dir/hs.py" "$port" "$v" "$mode" "$secs" "$dir/c.pem" "$@")
  t1=$(date +%s.%N)
  c1=$(cpu_ticks)
  awk -v n="$n" -v r="$r" -v t="$(echo "$t1 - $t0" | bc -l)" -v c=$((c1 - c0)) \
    -v hz="$(getconf CLK_TCK)" -v why="$why" 'BEGIN {
      printf "%d %d/%d %.0f %s\n", n / t, r, n, n ? c / hz * 1e6 / n : 0, why }'
}
if [ "$only_handshakes" = 1 ]; then
  printf '%-8s %-7s %-8s %8s %12s %18s\n' listener version session conn/s \
    resumed "jrpcd CPU us/conn"
  for l in tls mtls; do
    for v in 1.3 1.2; do
      for m in new ticket id; do
        [ "$v/$m" = 1.3/id ] && continue # TLS 1.3 resumes by ticket only
        if [ $l = tls ]; then
          read -r r k u why < <(handshakes "$tn" "$v" "$m")
        else
          read -r r k u why < <(handshakes "$tm" "$v" "$m" "$dir/cc.pem" "$dir/ck.pem")
        fi
        printf '%-8s %-7s %-8s %8s %12s %18s %s\n' "$l" "$v" "$m" "$r" "$k" "$u" "$why"
      done
    done
  done
  exit 0
fi
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
