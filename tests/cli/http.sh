#!/usr/bin/env bash
# http.sh JRPCD HANDLERS_DIR FIXTURE_DIR REPO_ROOT
#
# framing = http over real sockets: curl over a Unix socket, TCP and TLS;
# pipelined requests on one TCP connection; chunked bodies; the statuses a
# client can cause; GET /metrics parsed by Debian's python3-prometheus-client
# (/usr/bin/python3, Debian's) and its figures checked against the traffic
# sent; the routes turned off; and drain_ms: after SIGTERM /health says 503
# while calls are still served, then jrpcd stops.
set -euo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
# shellcheck source-path=SCRIPTDIR source=lib.sh
source "$here/lib.sh"

cli_args "$@"
readonly PY=/usr/bin/python3 # Debian's, with python3-prometheus-client
readonly JSON='Content-Type: application/json'

# hcurl ARGS...: curl bounded in time; prints "STATUS BODY".
hcurl() {
  timeout 20 curl -sS --max-time 10 -o "$T/body" -w '%{http_code}' "$@" >"$T/code" 2>"$T/curl.err" || true
  printf '%s %s' "$(cat "$T/code")" "$(tr -d '\n' <"$T/body")"
}

make_certs() {
  openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes \
    -keyout "$T/ca.key" -out "$T/ca.pem" -days 2 -subj "/CN=test ca" 2>/dev/null
  openssl req -new -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes \
    -keyout "$T/srv.key" -out "$T/srv.csr" -subj "/CN=127.0.0.1" 2>/dev/null
  printf 'subjectAltName=IP:127.0.0.1\n' >"$T/srv.ext"
  openssl x509 -req -in "$T/srv.csr" -CA "$T/ca.pem" -CAkey "$T/ca.key" \
    -set_serial 2 -days 2 -extfile "$T/srv.ext" -out "$T/srv.pem" 2>/dev/null
}

write_config() { # DRAIN_MS
  TLS_SECTION=""
  if ((HAVE_TLS)); then
    TLS_SECTION="[listen tls]
tcp = 127.0.0.1:$TLS
framing = http
tls_cert = $T/srv.pem
tls_key = $T/srv.key
"
  fi
  cat >"$T/jrpcd.conf" <<EOF
$(conf_server)
drain_ms = $1

[listen local]
unix = $T/http.sock
framing = http

[listen tcp]
tcp = 127.0.0.1:$TCP
framing = http
metrics = yes

[listen quiet]
tcp = 127.0.0.1:$QUIET
framing = http
health = no

$TLS_SECTION
$(conf_plugins math)

$(conf_plugins echo)
EOF
}

ADD2='{"jsonrpc":"2.0","method":"math.add","params":[2,3],"id":7}'
FIVE='{"jsonrpc":"2.0","result":5,"id":7}'

check_transports() {
  local got i
  for i in 1 2 3; do
    got=$(hcurl --unix-socket "$T/http.sock" -H "$JSON" -d "$ADD2" http://x/)
    expect_eq "unix: a call, 200 ($i)" "$got" "200 $FIVE"
  done
  if ((HAVE_TLS)); then
    got=$(hcurl --cacert "$T/ca.pem" -H "$JSON" -d "$ADD2" "https://127.0.0.1:$TLS/rpc")
    expect_eq "tls: a call, 200" "$got" "200 $FIVE"
  else
    pass "tls: not checked (a build with -DJRPC_TLS=OFF)"
  fi
  got=$(hcurl --unix-socket "$T/http.sock" -H "$JSON" \
    -d '{"jsonrpc":"2.0","method":"echo","params":[1]}' http://x/)
  expect_eq "unix: a notification, 204 without a body" "$got" "204 "
  got=$(hcurl --unix-socket "$T/http.sock" -H "$JSON" \
    -d '[{"jsonrpc":"2.0","method":"math.add","params":[2,3],"id":7},{"jsonrpc":"2.0","method":"nope","id":8}]' http://x/)
  expect_eq "unix: a batch with an error, 200" "$got" \
    '200 [{"jsonrpc":"2.0","result":5,"id":7},{"jsonrpc":"2.0","error":{"code":-32601,"message":"Method not found"},"id":8}]'
  got=$(hcurl --unix-socket "$T/http.sock" -H 'Content-Type: text/plain' -d "$ADD2" http://x/)
  expect_eq "unix: text/plain, 415" "${got%% *}" "415"
  got=$(hcurl --unix-socket "$T/http.sock" http://x/)
  expect_eq "unix: GET /, 405" "${got%% *}" "405"
  got=$(hcurl --unix-socket "$T/http.sock" -H "$JSON" -H 'Transfer-Encoding: chunked' -d "$ADD2" http://x/)
  expect_eq "unix: a chunked body, 200" "$got" "200 $FIVE"
  got=$(hcurl "http://127.0.0.1:$QUIET/health")
  expect_eq "health = no: GET /health is 405" "${got%% *}" "405"
  got=$(hcurl "http://127.0.0.1:$QUIET/metrics")
  expect_eq "metrics off on tcp by default: GET /metrics is 405" "${got%% *}" "405"
}

# Two calls and a GET /health in one write; the replies in order.
check_pipelined() {
  local got
  got=$(timeout 20 "$PY" - "$TCP" <<'PY'
import socket, sys
port = int(sys.argv[1])
body = b'{"jsonrpc":"2.0","method":"math.add","params":[%d,1],"id":%d}'
req = b""
for i in (1, 2):
    b = body % (i, i)
    req += (b"POST / HTTP/1.1\r\nHost: t\r\nContent-Type: application/json\r\n"
            b"Content-Length: %d\r\n\r\n" % len(b)) + b
req += b"GET /health HTTP/1.1\r\nHost: t\r\nConnection: close\r\n\r\n"
s = socket.create_connection(("127.0.0.1", port), timeout=10)
s.sendall(req)
got = b""
while True:
    d = s.recv(65536)
    if not d:
        break
    got += d
for part in got.split(b"HTTP/1.1 ")[1:]:
    print(part.split(b"\r\n")[0].decode(), part.split(b"\r\n\r\n", 1)[1].decode().strip())
PY
)
  expect_eq "tcp: two pipelined calls and GET /health, in order" "$got" \
    '200 OK {"jsonrpc":"2.0","result":2,"id":1}
200 OK {"jsonrpc":"2.0","result":3,"id":2}
200 OK {"status":"serving"}'
}

# /metrics, parsed by prometheus_client, against what was sent: math.add
# 3 (unix) + 1 (tls, when built) + 1 (batch) + 1 (chunked) + 2 (pipelined)
# = 8 calls, echo 1; calls 10 in all (with the unknown method); errors 3
# (-32601, 415, 405 on GET /; the 405s of the quiet listener too: 5).
check_metrics() {
  timeout 20 curl -sS --max-time 10 -D "$T/mhead" "http://127.0.0.1:$TCP/metrics" >"$T/metrics" ||
    fail "GET /metrics failed"
  if grep -qi '^Content-Type: text/plain; version=0.0.4' "$T/mhead"; then
    pass "/metrics: Prometheus text format 0.0.4"
  else
    fail "/metrics: Content-Type"
    show "$T/mhead"
  fi
  if timeout 20 "$PY" - "$T/metrics" "$HAVE_TLS" <<'PY'; then
import sys, time
from prometheus_client.parser import text_string_to_metric_families
fams = {f.name: f for f in text_string_to_metric_families(open(sys.argv[1]).read())}
tls = int(sys.argv[2])
def total(name, **labels):
    f = fams[name]
    return sum(s.value for s in f.samples
               if all(s.labels.get(k) == v for k, v in labels.items()))
checks = [
    ("math.add calls", total("jrpcd_method_calls", method="math.add"), 7 + tls),
    ("echo calls", total("jrpcd_method_calls", method="echo"), 1),
    ("math.add errors", total("jrpcd_method_errors", method="math.add"), 0),
    ("calls of the workers", total("jrpcd_worker_calls"), 9 + tls),
    ("errors of the workers", total("jrpcd_worker_errors"), 5),
    ("workers", len(fams["jrpcd_worker_calls"].samples), 2),
]
bad = 0
for what, got, want in checks:
    if got != want:
        print("FAIL: /metrics %s: %s, expected %s" % (what, got, want))
        bad += 1
    else:
        print("ok: /metrics %s: %s" % (what, got))
start = fams["process_start_time_seconds"].samples[0].value
if not time.time() - 300 < start <= time.time():
    print("FAIL: process_start_time_seconds %s is not the last 5 minutes" % start); bad += 1
if fams["jrpcd_connections"].samples[0].value < 1:
    print("FAIL: jrpcd_connections below 1 (this scrape's)"); bad += 1
if total("jrpcd_worker_received_bytes") <= 0 or total("jrpcd_worker_sent_bytes") <= 0:
    print("FAIL: no bytes counted"); bad += 1
# The latency histogram of math.add: every call that ended is counted once
# (so _count is its calls), buckets never fall as le grows, +Inf is _count,
# and the calls took some time in all.
d = fams["jrpcd_method_duration_seconds"]
if d.type != "histogram":
    print("FAIL: jrpcd_method_duration_seconds is a %s" % d.type); bad += 1
buckets = sorted((float(s.labels["le"]), s.value) for s in d.samples
                 if s.name.endswith("_bucket") and s.labels["method"] == "math.add")
def dur(suffix):
    return sum(s.value for s in d.samples
               if s.name == d.name + suffix and s.labels["method"] == "math.add")
count, dsum = dur("_count"), dur("_sum")
if count != 7 + tls:
    print("FAIL: math.add duration _count %s, expected %s" % (count, 7 + tls)); bad += 1
if len(buckets) < 20 or buckets[-1] != (float("inf"), count):
    print("FAIL: math.add buckets %s" % buckets); bad += 1
if any(b[1] > a[1] for b, a in zip(buckets, buckets[1:])):
    print("FAIL: math.add buckets fall: %s" % buckets); bad += 1
if not dsum > 0:
    print("FAIL: math.add duration _sum %s" % dsum); bad += 1
if fams["jrpcd_worker_calls"].type != "counter" or fams["jrpcd_connections"].type != "gauge":
    print("FAIL: metric types"); bad += 1
sys.exit(1 if bad else 0)
PY
    pass "/metrics parsed by prometheus_client and matches the traffic"
  else
    fail "/metrics does not match the traffic"
    show "$T/metrics"
  fi
}

check_drain() {
  local got i
  write_config 3000
  start_daemon drain "$T/jrpcd.conf" "$T/http.sock"
  got=$(hcurl "http://127.0.0.1:$TCP/health")
  expect_eq "drain: /health before SIGTERM" "$got" '200 {"status":"serving"}'
  kill -TERM "$PID"
  for ((i = 0; i < 100; i++)); do
    got=$(hcurl "http://127.0.0.1:$TCP/health")
    [[ "$got" == 503* ]] && break
    sleep 0.05
  done
  expect_eq "drain: /health after SIGTERM" "$got" '503 {"status":"draining"}'
  got=$(hcurl --unix-socket "$T/http.sock" -H "$JSON" -d "$ADD2" http://x/)
  expect_eq "drain: calls are still served" "$got" "200 $FIVE"
  if alive "$PID"; then
    pass "drain: still running during drain_ms"
  else
    fail "drain: jrpcd stopped before drain_ms was over"
  fi
  stop_daemon drain "$PID" "$T/http.sock" 0
  if grep -q 'draining for 3000 ms' "$T/drain.err" && grep -q 'drain_ms over: stopping' "$T/drain.err"; then
    pass "drain: logged"
  else
    fail "drain: the log does not say so"
    show "$T/drain.err"
  fi
}

main() {
  need_file "$JRPCD" jrpcd
  need_cmd curl
  need_cmd openssl
  need_prometheus_client
  setup_tmp
  TCP=$(free_port)
  QUIET=$(free_port)
  TLS=$(free_port)
  ((HAVE_TLS == 0)) || make_certs
  write_config 0
  start_daemon http "$T/jrpcd.conf" "$T/http.sock"
  check_transports
  check_pipelined
  check_metrics
  stop_daemon http "$PID" "$T/http.sock"
  check_drain
  finish
}

main "$@"
