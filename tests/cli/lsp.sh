#!/usr/bin/env bash
# lsp.sh JRPCD HANDLERS_DIR FIXTURE_DIR REPO_ROOT
#
# framing = content-length with a real client: vscode-jsonrpc (npm, pinned,
# installed into this test's folder as tests/cli/discover.sh does), driven
# by a node script over a Unix socket and a TCP port: calls, several in
# flight at once (deferred replies in any order), a notification, an
# unknown method (its JSON-RPC error comes back as vscode-jsonrpc's
# ResponseError), and a large body.
set -euo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
# shellcheck source-path=SCRIPTDIR source=lib.sh
source "$here/lib.sh"

cli_args "$@"
readonly VSCODE_JSONRPC=vscode-jsonrpc@8.2.1

write_client() {
  cat >"$T/client.js" <<'JS'
const net = require("net");
const rpc = require("vscode-jsonrpc/node");
const [kind, where] = process.argv.slice(2);
const sock = kind === "unix" ? net.connect(where) : net.connect(Number(where), "127.0.0.1");
const timer = setTimeout(() => { console.log("timeout"); process.exit(2); }, 20000);
sock.on("connect", async () => {
  const c = rpc.createMessageConnection(
      new rpc.StreamMessageReader(sock), new rpc.StreamMessageWriter(sock));
  c.listen();
  const out = [];
  out.push(await c.sendRequest("math.add", 1, 2));
  const slow = [40, 10, 20].map((ms) => c.sendRequest("sleep.ms", ms));
  out.push(await Promise.all(slow));
  await c.sendNotification("echo", 1);
  try {
    await c.sendRequest("no.such.method");
    out.push("no error");
  } catch (e) {
    out.push(e.code);
  }
  const big = "x".repeat(100000);
  out.push((await c.sendRequest("echo", big))[0].length);
  console.log(JSON.stringify(out));
  clearTimeout(timer);
  c.dispose();
  sock.end();
});
sock.on("error", (e) => { console.log("error " + e.message); process.exit(1); });
JS
}

main() {
  need_file "$JRPCD" jrpcd
  if ! command -v npm >/dev/null || ! command -v node >/dev/null; then
    missing "npm and node are needed for vscode-jsonrpc (scripts/deps.sh)"
  fi
  setup_tmp
  local port got want='[3,[40,10,20],-32601,100000]'
  port=$(free_port)
  cat >"$T/lsp.conf" <<CONF
$(conf_server)
[listen local]
unix = $T/lsp.sock
framing = content-length
[listen tcp]
tcp = 127.0.0.1:$port
framing = content-length
$(conf_plugins math echo sleep)
CONF
  npm_install "$VSCODE_JSONRPC"
  write_client
  start_daemon lsp "$T/lsp.conf" "$T/lsp.sock"
  got=$(cd "$T" && NODE_PATH="$T/npm/node_modules" timeout 30 node client.js unix "$T/lsp.sock" 2>&1) || true
  if [[ "$got" == "$want" ]]; then
    pass "vscode-jsonrpc over a Unix socket: $got"
  else
    fail "vscode-jsonrpc over a Unix socket: expected $want, got $got"
  fi
  got=$(cd "$T" && NODE_PATH="$T/npm/node_modules" timeout 30 node client.js tcp "$port" 2>&1) || true
  if [[ "$got" == "$want" ]]; then
    pass "vscode-jsonrpc over TCP: $got"
  else
    fail "vscode-jsonrpc over TCP: expected $want, got $got"
  fi
  stop_daemon lsp "$PID" "$T/lsp.sock"
  finish
}

main "$@"
