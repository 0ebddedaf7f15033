#!/usr/bin/env bash
# metrics.sh JRPCD HANDLERS_DIR FIXTURE_DIR REPO_ROOT
#
# What operators expect of /metrics (issue 25 point 6) and HEAD on the
# routes (point 5). Each new series is made to move by the traffic that it
# counts, and by exactly that much: a connection turned away for each
# reason (peers, max_connections_per_peer, max_connections, max_handshakes,
# a failed TLS handshake), a call in flight, one timed out, one cancelled
# by $/cancelRequest and one by its connection closing; the process series
# against /proc and `jrpcd -V`; rpc.stats giving the same figures; the
# whole exposition passing Debian's `promtool check metrics`. HEAD /health
# and HEAD /metrics with curl -I (GET's head and Content-Length, no body:
# checked on the wire with a GET pipelined behind), other methods 405 with
# `Allow: GET, HEAD`.
set -euo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
# shellcheck source-path=SCRIPTDIR source=lib.sh
source "$here/lib.sh"

cli_args "$@"
readonly PY=/usr/bin/python3 # Debian's, with python3-prometheus-client

make_certs() {
  openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes \
    -keyout "$T/srv.key" -out "$T/srv.pem" -days 2 -subj "/CN=127.0.0.1" 2>/dev/null
}

write_config() {
  local tls=""
  if ((HAVE_TLS)); then
    tls="[listen tls]
tcp = 127.0.0.1:$TLS
tls_cert = $T/srv.pem
tls_key = $T/srv.key
max_handshakes = 1
"
  fi
  cat >"$T/jrpcd.conf" <<EOF
[server]
workers = 2
plugin_dir = $HANDLERS
max_connections = 8
max_connections_per_peer = 3
call_timeout_ms = 1500
frame_timeout_ms = 30000

[listen admin]
unix = $T/admin.sock

[listen web]
tcp = 127.0.0.1:$WEB
framing = http
metrics = yes

[listen picky]
tcp = 127.0.0.1:$PICKY
peers = 127.0.0.9

$tls
[plugin math]
path = math.so

[plugin sleep]
path = sleep.so
EOF
}

# head_of URL [CURL ARGS]: the status line and headers curl -I shows,
# CRs dropped.
head_of() {
  timeout 20 curl -sS --max-time 10 -I "$@" | tr -d '\r'
}

check_head() {
  local h g
  h=$(head_of "http://127.0.0.1:$WEB/health")
  timeout 20 curl -sS --max-time 10 -D "$T/ghead" -o "$T/gbody" "http://127.0.0.1:$WEB/health"
  g=$(tr -d '\r' <"$T/ghead")
  expect_eq "HEAD /health: the head of GET /health" "$h" "$g"
  expect_in_text "HEAD /health: 200" "$h" "HTTP/1.1 200 OK"
  if [[ "$h" =~ Content-Length:\ *([0-9]+) ]] && ((BASH_REMATCH[1] == $(stat -c %s "$T/gbody"))); then
    pass "HEAD /health: Content-Length is GET's body's, $(stat -c %s "$T/gbody")"
  else
    fail "HEAD /health: Content-Length is not GET's body's"
  fi
  h=$(head_of "http://127.0.0.1:$WEB/metrics")
  expect_in_text "HEAD /metrics: 200" "$h" "HTTP/1.1 200 OK"
  expect_in_text "HEAD /metrics: the exposition's type" "$h" \
    "Content-Type: text/plain; version=0.0.4; charset=utf-8"
  if [[ "$h" =~ Content-Length:\ *([0-9]+) ]] && ((BASH_REMATCH[1] > 1000)); then
    pass "HEAD /metrics: Content-Length ${BASH_REMATCH[1]}, a whole exposition's"
  else
    fail "HEAD /metrics: no Content-Length of a body: $h"
  fi
  h=$(timeout 20 curl -sS --max-time 10 -i -X PUT "http://127.0.0.1:$WEB/health" | tr -d '\r')
  expect_in_text "PUT /health: still 405" "$h" "HTTP/1.1 405 Method Not Allowed"
  expect_in_text "PUT /health: Allow names GET and HEAD" "$h" "Allow: GET, HEAD"
  h=$(head_of "http://127.0.0.1:$WEB/")
  expect_in_text "HEAD /: still 405 (POST only)" "$h" "HTTP/1.1 405 Method Not Allowed"
  # On the wire: a HEAD's reply ends with its head; the GET behind it on
  # the same connection is answered right after.
  if timeout 20 "$PY" - "$WEB" <<'PY'; then
import socket, sys
s = socket.create_connection(("127.0.0.1", int(sys.argv[1])), timeout=10)
s.sendall(b"HEAD /metrics HTTP/1.1\r\nHost: t\r\n\r\n"
          b"HEAD /health HTTP/1.1\r\nHost: t\r\n\r\n"
          b"GET /health HTTP/1.1\r\nHost: t\r\nConnection: close\r\n\r\n")
got = b""
while True:
    d = s.recv(65536)
    if not d:
        break
    got += d
parts = got.split(b"\r\n\r\n")
want = [b"HTTP/1.1 200 OK", b"HTTP/1.1 200 OK", b"HTTP/1.1 200 OK"]
if [p.split(b"\r\n")[0] for p in parts[:3]] != want or parts[3] != b'{"status":"serving"}\n':
    print("FAIL: HEAD, HEAD, GET on one connection gave %r" % got[:400])
    sys.exit(1)
PY
    pass "HEAD /metrics, HEAD /health, GET /health pipelined: two heads without bodies, then GET's reply"
  else
    fail "HEAD sends a body, or spoils the requests behind it"
  fi
}

# expect_in_text NAME TEXT PART: TEXT holds PART, taken literally.
expect_in_text() {
  if [[ "$2" == *"$3"* ]]; then
    pass "$1"
  else
    fail "$1: no \"$3\" in:"
    printf '%s\n' "$2" | sed 's/^/  | /' >&2
  fi
}

# Provokes each counted event against the daemon and checks each series
# moved by exactly what was done (checks.py, in Python for the sockets).
check_series() {
  local version abi tls
  version=$("$JRPCD" -V | sed -n '1s/^jrpcd \([^ ]*\) .*/\1/p')
  abi=$("$JRPCD" -V | sed -n '1s/.*handler ABI \([0-9.]*\)).*/\1/p')
  tls=$("$JRPCD" -V | sed -n 's/^TLS: //p')
  ((HAVE_TLS)) || tls=no
  if timeout 100 "$PY" "$here/metrics_checks.py" "$PID" "$WEB" "$PICKY" "$TLS" \
    "$T/admin.sock" "$HAVE_TLS" "$version" "$abi" "$tls" "$T/last.prom"; then
    pass "every new series moved by what was done"
  else
    fail "some series did not move as they should"
  fi
  if promtool check metrics <"$T/last.prom" >"$T/promtool.out" 2>&1; then
    pass "promtool check metrics: the whole exposition passes ($(grep -c '^# TYPE' "$T/last.prom") families)"
  else
    fail "promtool check metrics"
    show "$T/promtool.out"
  fi
}

main() {
  need_file "$JRPCD" jrpcd
  need_cmd curl
  need_cmd openssl
  need_prometheus_client
  command -v promtool >/dev/null ||
    missing "promtool, of Debian's prometheus (scripts/deps.sh installs it)"
  setup_tmp
  WEB=$(free_port)
  PICKY=$(free_port)
  TLS=$(free_port)
  ((HAVE_TLS == 0)) || make_certs
  write_config
  start_daemon metrics "$T/jrpcd.conf" "$T/admin.sock"
  check_head
  check_series
  stop_daemon metrics "$PID" "$T/admin.sock"
  finish
}

main "$@"
