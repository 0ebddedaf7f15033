#!/usr/bin/env bash
# websocket.sh JRPCD HANDLERS_DIR FIXTURE_DIR REPO_ROOT
#
# websocket = yes on an http listener, with real third-party clients: npm's
# ws (pinned) and @open-rpc/client-js's WebSocket transport (pinned),
# installed into this test's folder as tests/cli/lsp.sh does. A call, a
# batch, a notification (no reply), deferred calls answered as they finish,
# a reply over 64 KiB; a ping answered; the daemon's keepalive ping, and a
# client that does not answer it closed (1001); the close handshake (1000
# back); close codes provoked: an unmasked frame (1002), a message over
# max_frame_bytes in fragments (1009), a text message that is not UTF-8
# (1007), a fragment left unfinished past frame_timeout_ms (1008); bad
# handshakes (400, 426); the origins: a listed Origin opens a WebSocket
# and POSTs, another is refused (403) on both, a CORS preflight is
# answered only for a listed one; and on a listener with tokens_file, the
# upgrade needs the bearer token as a POST does (401 without).
set -euo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
# shellcheck source-path=SCRIPTDIR source=lib.sh
source "$here/lib.sh"

cli_args "$@"
readonly WS=ws@8.18.3 OPENRPC=@open-rpc/client-js@1.8.1
readonly TOKEN=s3cret-websocket-token

write_client() {
  cat >"$T/client.js" <<'JS'
const WebSocket = require("ws");
const net = require("net");
const crypto = require("crypto");
const [port, tport, token] = process.argv.slice(2);
const url = `ws://127.0.0.1:${port}/`;
const ADD = (id) => ({ jsonrpc: "2.0", method: "math.add", params: [1, 2], id });
const out = (name, v) => console.log(name + " " + JSON.stringify(v));

// Opens a WebSocket; resolves with it, or with the refusal's status.
function open(u, opts = {}) {
  return new Promise((res) => {
    const ws = new WebSocket(u, opts);
    ws.on("open", () => res(ws));
    ws.on("unexpected-response", (req, r) => res(r.statusCode));
    ws.on("error", (e) => res("error " + e.message));
  });
}
// The next n messages, parsed.
function messages(ws, n) {
  return new Promise((res) => {
    const got = [];
    ws.on("message", (d, bin) => {
      got.push(bin ? "binary!" : JSON.parse(d.toString()));
      if (got.length === n) res(got);
    });
  });
}
function closed(ws) {
  return new Promise((res) => ws.on("close", (code) => res(code)));
}

async function calls() {
  const ws = await open(url);
  const m = messages(ws, 4);
  ws.send(JSON.stringify(ADD(1)));
  ws.send(JSON.stringify({ jsonrpc: "2.0", method: "echo", params: ["n"] }));
  ws.send(JSON.stringify([ADD(2), { jsonrpc: "2.0", method: "echo", params: ["x"], id: 3 }]));
  ws.send(JSON.stringify({ jsonrpc: "2.0", method: "sleep.ms", params: [80], id: 4 }));
  ws.send(Buffer.from(JSON.stringify({ jsonrpc: "2.0", method: "sleep.ms", params: [10], id: 5 })), { binary: true });
  const got = await m;
  out("calls", got.map((r) => (Array.isArray(r) ? r.map((x) => x.id) : r.id)));
  const big = messages(ws, 1);
  ws.send(JSON.stringify({ jsonrpc: "2.0", method: "echo", params: ["y".repeat(70000)], id: 6 }));
  out("big", (await big)[0].result[0].length);
  const pong = new Promise((res) => ws.on("pong", (d) => res(d.toString())));
  ws.ping("hi");
  out("pong", await pong);
  const c = closed(ws);
  ws.close(1000);
  out("close", await c);
}

async function keepalive() {
  const ws = await open(url);
  const ping = new Promise((res) => ws.on("ping", () => res("ping")));
  out("keepalive", await ping);
  ws.terminate();
  const mute = await open(url, { autoPong: false });
  const t0 = Date.now();
  const code = await closed(mute);
  out("unanswered", [code, Date.now() - t0 < 8000]);
}

// A raw frame on the socket under a ws client, then the close code.
async function provoke(name, send) {
  const ws = await open(url);
  const c = closed(ws);
  send(ws);
  out(name, await c);
}

async function handshakes() {
  // Written by hand: the clients always send good ones.
  const ask = (lines) =>
    new Promise((res) => {
      const s = net.connect(Number(port), "127.0.0.1");
      let d = "";
      s.on("data", (b) => (d += b.toString("latin1")));
      s.on("close", () => res(d.split("\r\n")[0]));
      s.on("error", () => res("error"));
      s.write("GET / HTTP/1.1\r\nHost: x\r\n" + lines.join("\r\n") + "\r\nConnection: close\r\n\r\n");
    });
  const key = "Sec-WebSocket-Key: " + crypto.randomBytes(16).toString("base64");
  out("badkey", await ask(["Upgrade: websocket", "Connection: Upgrade", "Sec-WebSocket-Version: 13", "Sec-WebSocket-Key: short"]));
  out("version", await ask(["Upgrade: websocket", "Connection: Upgrade", "Sec-WebSocket-Version: 8", key]));
  out("noconn", await ask(["Upgrade: websocket", "Sec-WebSocket-Version: 13", key]));
}

async function origins() {
  const ok = await open(url, { origin: "https://ok.example" });
  const m = messages(ok, 1);
  ok.send(JSON.stringify(ADD(7)));
  out("origin_ok", (await m)[0].result);
  ok.close();
  out("origin_bad", await open(url, { origin: "https://evil.example" }));
  out("origin_null", await open(url, { origin: "null" }));
}

async function tokens() {
  const turl = `ws://127.0.0.1:${tport}/`;
  out("token_none", await open(turl));
  out("token_bad", await open(turl, { headers: { Authorization: "Bearer nope" } }));
  const ws = await open(turl, { headers: { Authorization: "Bearer " + token } });
  const m = messages(ws, 1);
  ws.send(JSON.stringify(ADD(8)));
  out("token_good", (await m)[0].result);
  ws.close();
}

async function openrpc() {
  const { RequestManager, Client, WebSocketTransport } = require("@open-rpc/client-js");
  const t = new WebSocketTransport(url);
  const c = new Client(new RequestManager([t]));
  const r = await c.request({ method: "math.add", params: [20, 22] });
  let err;
  try {
    await c.request({ method: "no.such.method", params: [] });
  } catch (e) {
    err = e.code;
  }
  out("openrpc", [r, err]);
  c.close();
}

// "revoked": opens with the token, says so, and reports its close.
async function revoked() {
  const ws = await open(`ws://127.0.0.1:${tport}/`, { headers: { Authorization: "Bearer " + token } });
  const c = closed(ws);
  out("revoked_open", typeof ws === "object");
  out("revoked", await c);
}

(async () => {
  setTimeout(() => { console.log("timeout"); process.exit(2); }, 40000);
  if (process.argv[5] === "revoked") {
    await revoked();
    process.exit(0);
  }
  await calls();
  await keepalive();
  await provoke("unmasked", (ws) => ws._socket.write(Buffer.from([0x81, 0x02, 0x7b, 0x7d])));
  await provoke("oversized", (ws) => {
    ws.send("[" + " ".repeat(60000), { fin: false });
    ws.send(" ".repeat(60000) + "]", { fin: true });
  });
  await provoke("utf8", (ws) => ws.send(Buffer.from([0x22, 0xff, 0xfe, 0x22]), { binary: false }));
  await provoke("stalled", (ws) => ws.send("[1,", { fin: false }));
  await handshakes();
  await origins();
  await tokens();
  await openrpc();
  process.exit(0);
})().catch((e) => { console.log("error " + e.stack); process.exit(1); });
JS
}

# expect NAME WANT: the client's line for NAME.
expect() {
  local got
  got=$(grep -m1 "^$1 " "$T/client.out" | cut -d' ' -f2- || true)
  if [[ "$got" == "$2" ]]; then
    pass "$1: $got"
  else
    fail "$1: expected $2, got ${got:-nothing}"
  fi
}

# curl_status ARGS...: the status line of a request to the listener.
curl_status() {
  curl -s -o /dev/null -w '%{http_code}' --max-time 10 "$@" || true
}

main() {
  need_file "$JRPCD" jrpcd
  if ! command -v npm >/dev/null || ! command -v node >/dev/null; then
    missing "npm and node are needed for the ws client (scripts/deps.sh)"
  fi
  command -v curl >/dev/null || missing "curl is needed (scripts/deps.sh)"
  setup_tmp
  local port tport
  port=$(free_port)
  tport=$(free_port)
  printf 'app sha256:%s\n' "$(printf '%s' "$TOKEN" | sha256sum | cut -c1-64)" >"$T/tokens"
  chmod 600 "$T/tokens"
  cat >"$T/ws.conf" <<CONF
[server]
workers = 2
plugin_dir = $HANDLERS
max_frame_bytes = 100000
frame_timeout_ms = 1500
ws_ping_ms = 700
[listen local]
unix = $T/ws.sock
[listen web]
tcp = 127.0.0.1:$port
framing = http
websocket = yes
origins = https://ok.example http://localhost:8080
[listen guarded]
tcp = 127.0.0.1:$tport
framing = http
websocket = yes
tokens_file = $T/tokens
$(conf_plugins math echo sleep)
CONF
  npm_install "$WS" "$OPENRPC"
  write_client
  start_daemon ws "$T/ws.conf" "$T/ws.sock"
  (cd "$T" && NODE_PATH="$T/npm/node_modules" timeout 60 node client.js "$port" "$tport" "$TOKEN" >"$T/client.out" 2>&1) || true
  expect calls '[1,[2,3],5,4]'
  expect big 70000
  expect pong '"hi"'
  expect close 1000
  expect keepalive '"ping"'
  expect unanswered '[1001,true]'
  expect unmasked 1002
  expect oversized 1009
  expect utf8 1007
  expect stalled 1008
  expect badkey '"HTTP/1.1 400 Bad Request"'
  expect version '"HTTP/1.1 426 Upgrade Required"'
  expect noconn '"HTTP/1.1 400 Bad Request"'
  expect origin_ok 3
  expect origin_bad 403
  expect origin_null 403
  expect token_none 401
  expect token_bad 401
  expect token_good 3
  expect openrpc '[42,-32601]'
  if grep -q "^error\|^timeout" "$T/client.out"; then
    fail "the client: $(grep -m1 "^error\|^timeout" "$T/client.out")"
  fi

  # A reload that removes a WebSocket's token ends it (as it would refuse
  # the connection's next POST).
  (cd "$T" && NODE_PATH="$T/npm/node_modules" timeout 30 node client.js "$port" "$tport" "$TOKEN" revoked >"$T/client.out" 2>&1) &
  local bg=$! i
  for ((i = 0; i < 200; i++)); do
    grep -q "^revoked_open" "$T/client.out" && break
    sleep 0.05
  done
  printf 'other sha256:%s\n' "$(printf other | sha256sum | cut -c1-64)" >"$T/tokens"
  kill -HUP "$PID"
  wait "$bg" || true
  expect revoked_open true
  expect revoked 1006

  # CORS, over plain HTTP on the same listener.
  local u="http://127.0.0.1:$port/" post=(-H 'Content-Type: application/json' -d "$ADD")
  local pre
  pre=$(curl -s -i -X OPTIONS --max-time 10 -H 'Origin: https://ok.example' \
    -H 'Access-Control-Request-Method: POST' \
    -H 'Access-Control-Request-Headers: content-type' "$u" | tr -d '\r')
  if grep -q '^HTTP/1.1 204' <<<"$pre" &&
    grep -qx 'Access-Control-Allow-Origin: https://ok.example' <<<"$pre" &&
    grep -q '^Access-Control-Allow-Headers: Content-Type, Authorization' <<<"$pre"; then
    pass "a preflight from a listed origin: 204 with its Access-Control-Allow-* lines"
  else
    fail "a preflight from a listed origin: $pre"
  fi
  pre=$(curl -s -i -X OPTIONS --max-time 10 -H 'Origin: https://evil.example' \
    -H 'Access-Control-Request-Method: POST' "$u" | tr -d '\r')
  if grep -q '^HTTP/1.1 403' <<<"$pre" && ! grep -qi '^Access-Control' <<<"$pre"; then
    pass "a preflight from another origin: 403, no Access-Control lines"
  else
    fail "a preflight from another origin: $pre"
  fi
  local got
  got=$(curl -s -i --max-time 10 -H 'Origin: https://ok.example' "${post[@]}" "$u" | tr -d '\r')
  if grep -qx 'Access-Control-Allow-Origin: https://ok.example' <<<"$got" &&
    grep -qF "$THREE" <<<"$got"; then
    pass "a POST from a listed origin: answered, with Access-Control-Allow-Origin"
  else
    fail "a POST from a listed origin: $got"
  fi
  got=$(curl_status -H 'Origin: https://evil.example' "${post[@]}" "$u")
  [[ "$got" == 403 ]] && pass "a POST from another origin: 403" ||
    fail "a POST from another origin: expected 403, got $got"
  got=$(curl_status "${post[@]}" "$u")
  [[ "$got" == 200 ]] && pass "a POST without Origin (no browser): 200" ||
    fail "a POST without Origin: expected 200, got $got"
  # Two of the same POST from another origin on one connection: each is
  # judged (the head memo keeps no head with an Origin).
  got=$(curl -s --max-time 10 -H 'Origin: https://evil.example' "${post[@]}" "$u" -o /dev/null \
    -H 'Origin: https://evil.example' "${post[@]}" "$u" -o /dev/null -w '%{http_code} ')
  [[ "$got" == "403 403 " ]] && pass "two POSTs from another origin on one connection: both 403" ||
    fail "two POSTs from another origin on one connection: $got"
  stop_daemon ws "$PID" "$T/ws.sock"
  finish
}

main "$@"
