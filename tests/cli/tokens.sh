#!/usr/bin/env bash
# tokens.sh JRPCD HANDLERS_DIR FIXTURE_DIR REPO_ROOT
#
# HTTP bearer tokens (tokens_file) with curl over TCP: tokens made by
# `jrpcd --hash-token` used as they come; no token, a wrong one and one
# that is not a bearer token are 401 with WWW-Authenticate: Bearer and a
# -32006 body, counted in rpc.stats and /metrics, logged without the token;
# [access] rules naming token:NAME allow one method and deny another per
# token; /health is open and /metrics is not; a keep-alive connection
# that switches tokens is refused and closed; SIGHUP reads the file again
# (a removed token is refused after, on an open connection too) and a bad
# file on reload is refused with its reason while the old tokens serve
# on; a file others may read stops the start; a listener without
# tokens_file asks for nothing; config misuse names its line.
set -euo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
# shellcheck source-path=SCRIPTDIR source=lib.sh
source "$here/lib.sh"

cli_args "$@"
need_cmd curl
need_cmd python3
readonly JSON='Content-Type: application/json'

trap cleanup EXIT
setup_tmp
P=$(free_port)
OPEN=$(free_port)

# hcurl ARGS...: curl bounded in time; prints "STATUS BODY" and keeps the
# reply's head in $T/head.
hcurl() {
  timeout 20 curl -sS --max-time 10 -D "$T/head" -o "$T/body" -w '%{http_code}' "$@" >"$T/code" 2>"$T/curl.err" || true
  printf '%s %s' "$(cat "$T/code")" "$(tr -d '\n' <"$T/body")"
}

# rpc TOKEN METHOD: a call of METHOD [6,3] on the token listener with
# TOKEN (none when empty); prints "STATUS BODY".
rpc() {
  local auth=()
  [[ -n "$1" ]] && auth=(-H "Authorization: Bearer $1")
  hcurl "${auth[@]}" -H "$JSON" \
    -d "{\"jsonrpc\":\"2.0\",\"method\":\"$2\",\"params\":[6,3],\"id\":1}" \
    "http://127.0.0.1:$P/"
}

readonly ADD9='200 {"jsonrpc":"2.0","result":9,"id":1}'
readonly DIV2='200 {"jsonrpc":"2.0","result":2,"id":1}'
denied() { # METHOD
  printf '200 {"jsonrpc":"2.0","error":{"code":-32006,"message":"Access denied","data":"%s"},"id":1}' "$1"
}
unauth() { # REASON
  printf '401 {"jsonrpc":"2.0","error":{"code":-32006,"message":"Unauthorized","data":"%s"},"id":null}' "$1"
}

# A token made by jrpcd --hash-token NAME: the token (stderr) in
# $T/NAME.token, the line (stdout) appended to FILE as it is.
make_token() { # NAME FILE
  if "$JRPCD" --hash-token "$1" 2>"$T/$1.token" >>"$2"; then
    pass "--hash-token $1: made"
  else
    fail "--hash-token $1 failed"
    show "$T/$1.token"
  fi
}

write_conf() {
  cat >"$T/jrpcd.conf" <<CONF
$(conf_server)
# Debug: the check that no token is in the log covers every line.
log_level = debug
[listen local]
unix = $T/jrpcd.sock
[listen web]
tcp = 127.0.0.1:$P
framing = http
metrics = yes
tokens_file = $T/tokens
[listen open]
tcp = 127.0.0.1:$OPEN
framing = http
[access]
math.add = token:app token:ops
math.divide = token:ops
$(conf_plugins math)
CONF
}

# Keep-alive: a first request with TOKEN1, a second on the same connection
# with TOKEN2; prints each reply's status line, then "closed" when the
# server closed the connection after them.
switch_tokens() { # TOKEN1 TOKEN2
  timeout 20 python3 - "$P" "$1" "$2" <<'PY'
import socket, sys
port, t1, t2 = int(sys.argv[1]), sys.argv[2], sys.argv[3]
body = b'{"jsonrpc":"2.0","method":"math.add","params":[1,2],"id":1}'
def req(tok):
    return (b"POST / HTTP/1.1\r\nHost: t\r\nAuthorization: Bearer %s\r\n"
            b"Content-Type: application/json\r\nContent-Length: %d\r\n\r\n"
            % (tok.encode(), len(body))) + body
s = socket.create_connection(("127.0.0.1", port), timeout=10)
got = b""
for replies, tok in enumerate((t1, t2), 1):
    s.sendall(req(tok))
    while got.count(b"HTTP/1.1 ") < replies or not got.endswith(b"\n"):
        d = s.recv(65536)
        if not d:
            break
        got += d
for part in got.split(b"HTTP/1.1 ")[1:]:
    print(part.split(b"\r\n")[0].decode())
s.settimeout(5)
try:
    print("closed" if s.recv(1) == b"" else "open")
except socket.timeout:
    print("open")
PY
}

# ---- tokens, the file and the start ----
umask 077
: >"$T/tokens"
printf '# clients of the web listener\n\n' >>"$T/tokens"
make_token app "$T/tokens"
make_token ops "$T/tokens"
APP=$(cat "$T/app.token")
OPS=$(cat "$T/ops.token")
if [[ "$APP" =~ ^[A-Za-z0-9_-]{43}$ ]]; then
  pass "--hash-token: 32 random bytes, base64url, on stderr"
else
  fail "--hash-token: token \"$APP\" is not 43 base64url characters"
fi
if grep -qxE "app sha256:$(printf '%s' "$APP" | sha256sum | cut -c1-64)" "$T/tokens"; then
  pass "--hash-token: its stdout line is NAME sha256:HEX of the token"
else
  fail "--hash-token: no line of the token's SHA-256"
  show "$T/tokens"
fi
if grep -qF -- "$APP" "$T/tokens"; then
  fail "--hash-token: the token itself went to stdout"
fi
write_conf

chmod 0644 "$T/tokens"
run_jrpcd readable -c "$T/jrpcd.conf"
expect_rc readable 1 && expect_in readable err "$T/tokens: mode 0644 lets others read or write it" &&
  pass "a tokens file others may read stops the start"
run_jrpcd readable_t -t -c "$T/jrpcd.conf"
expect_rc readable_t 1 && expect_in readable_t err "tokens_file: $T/tokens: mode 0644" &&
  pass "-t: the same, naming the listener's key"
chmod 0640 "$T/tokens"

start_daemon tok "$T/jrpcd.conf" "$T/jrpcd.sock"

# ---- who gets in, and what they may call ----
expect_eq "no token: 401" "$(rpc "" math.add)" "$(unauth "a bearer token is required")"
if grep -qi '^WWW-Authenticate: Bearer' "$T/head" && grep -qi '^Connection: close' "$T/head"; then
  pass "401: WWW-Authenticate: Bearer, Connection: close"
else
  fail "401 head"
  show "$T/head"
fi
expect_eq "a wrong token: 401" "$(rpc "x$APP" math.add)" "$(unauth "the token is not valid")"
expect_eq "Basic credentials: 401" \
  "$(hcurl -u "app:$APP" -H "$JSON" -d '{"jsonrpc":"2.0","method":"math.add","params":[6,3],"id":1}' "http://127.0.0.1:$P/")" \
  "$(unauth "not a bearer token")"
expect_eq "token:app may call math.add" "$(rpc "$APP" math.add)" "$ADD9"
expect_eq "token:app may not call math.divide" "$(rpc "$APP" math.divide)" "$(denied math.divide)"
expect_eq "token:ops may call math.divide" "$(rpc "$OPS" math.divide)" "$DIV2"
expect_eq "token:ops may call math.add" "$(rpc "$OPS" math.add)" "$ADD9"
got=$(hcurl "http://127.0.0.1:$P/health")
expect_eq "/health: open without a token" "$got" '200 {"status":"serving"}'
got=$(hcurl "http://127.0.0.1:$P/metrics")
expect_eq "/metrics without a token: 401" "${got%% *}" "401"
got=$(hcurl -H "Authorization: Bearer $OPS" "http://127.0.0.1:$P/metrics")
# 401s so far: none, wrong, Basic, /metrics.
if [[ "${got%% *}" == 200 ]] && grep -qE '^jrpcd_worker_unauthorized_total\{worker="[0-9]+"\} [1-9]' "$T/body" &&
  [[ $(awk '/^jrpcd_worker_unauthorized_total/ {n += $2} END {print n}' "$T/body") == 4 ]]; then
  pass "/metrics with a token: 200, jrpcd_worker_unauthorized_total 4"
else
  fail "/metrics with a token: ${got:0:60}..."
fi
stats=$(call "$T/jrpcd.sock" '{"jsonrpc":"2.0","method":"rpc.stats","id":1}')
n=$(printf '%s' "$stats" | python3 -c 'import json,sys; print(sum(w["unauthorized"] for w in json.load(sys.stdin)["result"]["workers"]))')
expect_eq "rpc.stats: unauthorized 4" "$n" 4
got=$(hcurl -H "$JSON" -d '{"jsonrpc":"2.0","method":"math.multiply","params":[6,3],"id":1}' "http://127.0.0.1:$OPEN/")
expect_eq "a listener without tokens_file: no token asked" "$got" '200 {"jsonrpc":"2.0","result":18,"id":1}'
expect_eq "... and token: rules match no one there" "$(hcurl -H "$JSON" -H "Authorization: Bearer $OPS" \
  -d '{"jsonrpc":"2.0","method":"math.divide","params":[6,3],"id":1}' "http://127.0.0.1:$OPEN/")" "$(denied math.divide)"
expect_eq "keep-alive: the same token twice, the connection stays" \
  "$(switch_tokens "$APP" "$APP")" $'200 OK\n200 OK\nopen'
expect_eq "keep-alive: another valid token on the same connection: 401, closed" \
  "$(switch_tokens "$APP" "$OPS")" $'200 OK\n401 Unauthorized\nclosed'

# ---- SIGHUP ----
grep -v '^app ' "$T/tokens" >"$T/tokens.new"
make_token late "$T/tokens.new"
LATE=$(cat "$T/late.token")
chmod 0600 "$T/tokens.new"
mv "$T/tokens.new" "$T/tokens"
kill -HUP "$PID"
for _ in $(seq 100); do
  grep -q 'reloaded' "$T/tok.err" && break
  sleep 0.05
done
expect_eq "reload: a removed token is refused" "$(rpc "$APP" math.add)" "$(unauth "the token is not valid")"
expect_eq "reload: a new token gets in; token:late is no token:app ([access])" \
  "$(rpc "$LATE" math.add)" "$(denied math.add)"
expect_eq "reload: a kept token (ops) serves on" "$(rpc "$OPS" math.divide)" "$DIV2"
printf 'broken line\n' >>"$T/tokens"
kill -HUP "$PID"
for _ in $(seq 100); do
  grep -q 'reload failed' "$T/tok.err" && break
  sleep 0.05
done
if grep -qF "reload failed, still serving the previous plugins: $T/jrpcd.conf: [listen web] tokens_file: $T/tokens: line" "$T/tok.err"; then
  pass "reload: a bad tokens file is refused, with its line"
else
  fail "reload: no refusal of the bad tokens file"
  show "$T/tok.err"
fi
expect_eq "reload refused: the previous tokens serve on" "$(rpc "$OPS" math.divide)" "$DIV2"

# ---- the log ----
if grep -q '401 Unauthorized, a bearer token is required' "$T/tok.err"; then
  pass "the log says why a request was refused"
else
  fail "no 401 line in the log"
  show "$T/tok.err"
fi
leaked=0
for t in "$APP" "$OPS" "$LATE"; do
  grep -qF -- "$t" "$T/tok.err" && leaked=1
done
if ((leaked)); then
  fail "a token is in the log"
elif ! grep -q 'bearer token app$' "$T/tok.err"; then
  fail "the debug log does not name the connection's token"
  show "$T/tok.err"
else
  pass "no token in the log (debug level), only its name"
fi
stop_daemon tok "$PID" "$T/jrpcd.sock"

# ---- config misuse ----
# refused_listen NAME EXPECTED FRAMING KEY-LINE: a listener of FRAMING with
# KEY-LINE on its line 4, refused by -t with EXPECTED.
refused_listen() {
  refused_conf "$1" "$2" "[listen a]
tcp = 127.0.0.1:$P
framing = $3
$4
[plugin math]
path = $HANDLERS/math.so"
}
refused_listen newline_tokens "newline_tokens.conf:4: [listen a] tokens_file: needs framing = http" \
  newline "tokens_file = $T/tokens"
refused_listen peers_token "peers are let in at connect" http "peers = token:app"
printf 'app sha256:%s\napp sha256:%s\n' "$(printf a | sha256sum | cut -c1-64)" \
  "$(printf b | sha256sum | cut -c1-64)" >"$T/dup"
refused_listen dup_name "$T/dup: line 2: the name is on line 1 already" http "tokens_file = $T/dup"
finish
