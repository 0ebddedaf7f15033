#!/usr/bin/env bash
# introspect.sh JRPCD HANDLERS_DIR FIXTURE_DIR REPO_ROOT
#
# rpc.stats and GET /metrics show a caller only what its listener and the
# [access] rules let it call, and no other client's identity; `stats =
# full` shows everything. One daemon, TCP listeners whose [access] rules
# tell clients bound to 127.0.0.1 and 127.0.0.2 apart, and a full admin
# socket:
#   - app (stats = listener, methods = math.* sleep.ms fx.* rpc.stats):
#     echo and sleep.work_ms hidden; math.divide and sleep.ms denied to
#     127.0.0.1, served to 127.0.0.2;
#   - slow calls of a hidden method (sleep.work_ms, on the admin socket),
#     of a method denied to the reader (sleep.ms, by 127.0.0.2), of a
#     served one by another client (fx.block, by 127.0.0.2) and by the
#     reader itself (fx.block, on its own connection);
#   - rpc.stats on app from each address, /metrics (parsed by Debian's
#     python3-prometheus-client) on an http listener with the same methods
#     from each address, rpc.stats and /metrics with stats = full, and a
#     Unix socket left at its default stats.
set -euo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
# shellcheck source-path=SCRIPTDIR source=lib.sh
source "$here/lib.sh"

cli_args "$@"
readonly PY=/usr/bin/python3 # Debian's, with python3-prometheus-client

write_conf() {
  cat >"$T/i.conf" <<CONF
$(conf_server)
slow_call_ms = 20
[listen app]
tcp = 127.0.0.1:$APP
stats = listener
methods = math.* sleep.ms fx.* rpc.stats
[listen apphttp]
tcp = 127.0.0.1:$APPHTTP
framing = http
metrics = yes
stats = listener
methods = math.* sleep.ms fx.*
[listen local]
unix = $T/local.sock
methods = math.* fx.* rpc.stats
[listen admin]
unix = $T/admin.sock
mode = 0600
stats = full
[listen adminhttp]
tcp = 127.0.0.1:$ADMINHTTP
framing = http
metrics = yes
stats = full
$(conf_plugins math echo sleep)
[plugin fx]
path = $FX/fx_count.so
[access]
math.divide = 127.0.0.2
sleep.ms = 127.0.0.2
CONF
}

main() {
  need_file "$JRPCD" jrpcd
  need_file "$HANDLERS/sleep.so" "the sleep plugin"
  need_file "$FX/fx_count.so" "the fx_count fixture"
  need_cmd socat
  need_cmd curl
  need_prometheus_client
  setup_tmp
  APP=$(free_port)
  APPHTTP=$(free_port)
  ADMINHTTP=$(free_port)
  write_conf
  start_daemon introspect "$T/i.conf" "$T/admin.sock"
  local pid=$PID

  # A slow call of a method app hides, by another process on the admin
  # socket: "pid P uid U" is its peer.
  local got
  got=$(call "$T/admin.sock" \
    '{"jsonrpc":"2.0","method":"sleep.work_ms","params":[40],"id":1}') || true
  [[ $got == '{"jsonrpc":"2.0","result":40,"id":1}' ]] ||
    fail "sleep.work_ms on the admin socket: $got"

  if timeout 60 "$PY" - "$APP" "$APPHTTP" "$ADMINHTTP" "$T" <<'PY'; then
import http.client, json, socket, sys
from prometheus_client.parser import text_string_to_metric_families

app, apphttp, adminhttp, tmp = int(sys.argv[1]), int(sys.argv[2]), int(sys.argv[3]), sys.argv[4]
bad = 0
def check(what, ok, detail=""):
    global bad
    if ok:
        print("ok: %s" % what)
    else:
        bad += 1
        print("FAIL: %s%s" % (what, ": " + str(detail) if detail != "" else ""))

class Conn:
    """A newline-framed connection, to a TCP port from a bound address or
    to a Unix socket."""
    def __init__(self, port=None, src=None, path=None):
        if path:
            self.s = socket.socket(socket.AF_UNIX)
            self.s.settimeout(10)
            self.s.connect(path)
        else:
            self.s = socket.create_connection(("127.0.0.1", port), 10, (src, 0))
        self.f = self.s.makefile("rb")
        self.n = 0
    def call(self, method, params=None):
        self.n += 1
        req = {"jsonrpc": "2.0", "method": method, "id": self.n}
        if params is not None:
            req["params"] = params
        self.s.sendall(json.dumps(req).encode() + b"\n")
        return json.loads(self.f.readline())
    def me(self):
        a, p = self.s.getsockname()
        return "%s:%d" % (a, p)

# 127.0.0.2 makes a slow call of sleep.ms (served to it, denied to
# 127.0.0.1) and of fx.block (served to both); 127.0.0.1 one of fx.block on
# the connection it then asks on.
b = Conn(app, "127.0.0.2")
check("127.0.0.2 may call sleep.ms", b.call("sleep.ms", [40]).get("result") == 40)
check("fx.block for 127.0.0.2", b.call("fx.block", [40, False]).get("result") is not None)
a = Conn(app, "127.0.0.1")
check("sleep.ms is denied to 127.0.0.1",
      a.call("sleep.ms", [1]).get("error", {}).get("code") == -32006)
check("fx.block for 127.0.0.1", a.call("fx.block", [40, False]).get("result") is not None)

def stats(conn):
    r = conn.call("rpc.stats")
    if "result" not in r:
        check("rpc.stats answers", False, json.dumps(r))
        return {"methods": {}, "slow_calls": []}, ""
    return r["result"], json.dumps(r)

# app, from 127.0.0.1: what it may call, and of the slow calls only those
# of such methods, with its own peer only.
sa, text = stats(a)
methods = set(sa["methods"])
check("app/127.0.0.1: rpc.stats lists what it may call",
      {"math.add", "fx.block", "rpc.stats"} <= methods, sorted(methods))
for m in ("echo", "sleep.work_ms", "math.divide", "sleep.ms"):
    check("app/127.0.0.1: rpc.stats does not list %s" % m, m not in methods)
    check("app/127.0.0.1: no slow call of %s" % m,
          all(e["method"] != m for e in sa["slow_calls"]))
fx = [e for e in sa["slow_calls"] if e["method"] == "fx.block"]
check("app/127.0.0.1: both fx.block slow calls listed", len(fx) == 2, json.dumps(sa["slow_calls"]))
check("app/127.0.0.1: its own slow call carries its own peer",
      [e.get("peer") for e in fx].count(a.me()) == 1, json.dumps(fx))
check("app/127.0.0.1: the other client's slow call has no peer",
      sum("peer" not in e for e in fx) == 1, json.dumps(fx))
check("app/127.0.0.1: no other client's identity anywhere",
      "127.0.0.2" not in text and "pid " not in text, text)

# app, from 127.0.0.2: its own view (math.divide and sleep.ms are served to
# it), its own sleep.ms with its peer, 127.0.0.1's fx.block without.
sb, text = stats(b)
methods = set(sb["methods"])
check("app/127.0.0.2: rpc.stats lists math.divide and sleep.ms, served to it",
      {"math.divide", "sleep.ms", "fx.block"} <= methods, sorted(methods))
check("app/127.0.0.2: still not the hidden ones",
      not methods & {"echo", "sleep.work_ms"}, sorted(methods))
own = [e for e in sb["slow_calls"] if e.get("peer") == b.me()]
check("app/127.0.0.2: its own slow calls with its peer",
      sorted(e["method"] for e in own) == ["fx.block", "sleep.ms"], json.dumps(sb["slow_calls"]))
check("app/127.0.0.2: nothing of 127.0.0.1 or the admin socket's peer",
      "127.0.0.1:" not in text and "pid " not in text and "sleep.work_ms" not in text, text)

def scrape(port, src):
    h = http.client.HTTPConnection("127.0.0.1", port, timeout=10, source_address=(src, 0))
    h.request("GET", "/metrics")
    r = h.getresponse()
    body = r.read().decode()
    check("/metrics on %d from %s: 200" % (port, src), r.status == 200, body[:200])
    fams = {f.name: f for f in text_string_to_metric_families(body)}
    per = {}
    for name in ("jrpcd_method_calls", "jrpcd_method_errors", "jrpcd_method_duration_seconds"):
        per[name] = {s.labels["method"] for s in fams[name].samples}
    check("/metrics on %d from %s: every method family names the same methods" % (port, src),
          len({frozenset(v) for v in per.values()}) == 1, repr(per))
    return per["jrpcd_method_calls"], fams

# /metrics with the methods of app (rpc.stats aside), from each address.
m1, fams = scrape(apphttp, "127.0.0.1")
check("apphttp/127.0.0.1: /metrics names what it may call",
      {"math.add", "fx.block"} <= m1, sorted(m1))
# rpc.discover is served on every listener (discover = yes), so it is named.
check("apphttp/127.0.0.1: /metrics names nothing else",
      not m1 & {"echo", "sleep.work_ms", "math.divide", "sleep.ms", "rpc.stats"},
      sorted(m1))
fxcalls = sum(s.value for s in fams["jrpcd_method_calls"].samples
              if s.labels["method"] == "fx.block")
check("apphttp: fx.block's calls on every listener counted", fxcalls == 2, fxcalls)
m2, _ = scrape(apphttp, "127.0.0.2")
check("apphttp/127.0.0.2: /metrics names math.divide and sleep.ms, served to it",
      {"math.divide", "sleep.ms"} <= m2 and not m2 & {"echo", "sleep.work_ms"}, sorted(m2))

# stats = full: everything, peers too.
everything = {"echo", "sleep.work_ms", "sleep.ms", "math.divide", "math.add",
              "fx.block", "rpc.stats", "rpc.discover"}
m3, _ = scrape(adminhttp, "127.0.0.1")
check("adminhttp (full): /metrics names every method", everything <= m3, sorted(m3))
adm = Conn(path=tmp + "/admin.sock")
sf, text = stats(adm)
check("admin (full): rpc.stats lists every method", everything <= set(sf["methods"]),
      sorted(sf["methods"]))
peers = {(e["method"], e.get("peer", "").split(":")[0].split(" ")[0]) for e in sf["slow_calls"]}
check("admin (full): every slow call with its peer",
      {("sleep.work_ms", "pid"), ("sleep.ms", "127.0.0.2"), ("fx.block", "127.0.0.2"),
       ("fx.block", "127.0.0.1")} <= peers, json.dumps(sf["slow_calls"]))
sys.exit(1 if bad else 0)
PY
    pass "introspection follows each connection's view; stats = full shows all"
  else
    fail "introspection shows more than the caller's view"
  fi

  # A Unix socket at its default stats (listener): the admin socket's slow
  # call of a method it hides is not there, nor another process's peer.
  got=$(call "$T/local.sock" '{"jsonrpc":"2.0","method":"rpc.stats","id":1}') || true
  if [[ $got == *'"slow_calls":[{"method":"fx.block"'* && $got != *sleep.* &&
    $got != *'pid '* && $got != *127.0.0.* ]]; then
    pass "unix default (listener): no hidden method, no other client's peer"
  else
    fail "rpc.stats on a unix socket at its default stats: $got"
  fi
  got=$(timeout 20 curl -sS --max-time 10 -H 'Content-Type: application/json' \
    -d '{"jsonrpc":"2.0","method":"rpc.stats","id":1}' "http://127.0.0.1:$APPHTTP/") || true
  if [[ $got == *'"code":-32601'* ]]; then
    pass "rpc.stats outside a listener's methods is -32601"
  else
    fail "rpc.stats on apphttp: $got"
  fi
  stop_daemon introspect "$pid" "$T/admin.sock"
  finish
}

main
