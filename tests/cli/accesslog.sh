#!/usr/bin/env bash
# accesslog.sh JRPCD HANDLERS_DIR FIXTURE_DIR REPO_ROOT
#
# [server] access_log (issue 25, point 6). Calls over a Unix newline
# listener, a TCP length listener, an HTTP listener and a TLS listener, a
# batch, a notification, a deferred call and a frame that is not JSON:
# each gives exactly one line whose fields (listener, kind, code, bytes as
# the client got them, peer, method, time, duration) are right, as JSON
# lines (parsed with python3's json) and as text lines (split with awk). A
# hostile method name (quotes, a newline and a whole forged line in it, a
# 300-byte one) cannot forge a line or break the JSON. SIGUSR1 after a mv:
# the lines before it in the moved file, those after in a new one, none
# lost or doubled while calls go on. A log on a FIFO nobody reads: calls
# are answered at their usual pace, the lines that do not fit are dropped
# and counted in rpc.stats and /metrics, and the stop still ends in time;
# on /dev/full the write error is logged once, not every round. A SIGHUP
# that changes access_log says it is not applied.
# Config: -t refuses a file in a missing directory (file, line, key), an
# unknown format; a start on a FIFO with no reader fails saying so.
set -euo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
# shellcheck source-path=SCRIPTDIR source=lib.sh
source "$here/lib.sh"

cli_args "$@"
need_file "$JRPCD" jrpcd
need_cmd socat
need_cmd curl
need_cmd openssl
need_cmd python3
setup_tmp

PY=/usr/bin/python3
[[ -x $PY ]] || PY=$(command -v python3)

# The client: MODE ADDRESS N REQUEST... sends the requests (one frame each)
# and prints the first N replies, one a line. MODE: unix (newline), length
# (TCP), tls (newline over TLS; CA in $CA).
cat >"$T/client.py" <<'PY'
import os, socket, ssl, struct, sys

mode, addr, n, reqs = sys.argv[1], sys.argv[2], int(sys.argv[3]), sys.argv[4:]
if mode == "unix":
    s = socket.socket(socket.AF_UNIX)
    s.connect(addr)
else:
    host, port = addr.rsplit(":", 1)
    s = socket.create_connection((host, int(port)))
    if mode == "tls":
        c = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
        c.load_verify_locations(os.environ["CA"])
        s = c.wrap_socket(s, server_hostname="localhost")
s.settimeout(10)
for r in reqs:
    b = r.encode()
    s.sendall(struct.pack(">I", len(b)) + b if mode == "length" else b + b"\n")
buf = b""
out = []
while len(out) < n:
    if mode == "length" and len(buf) >= 4:
        k = struct.unpack(">I", buf[:4])[0]
        if len(buf) >= 4 + k:
            out.append(buf[4:4 + k])
            buf = buf[4 + k:]
            continue
    elif mode != "length" and b"\n" in buf:
        line, buf = buf.split(b"\n", 1)
        out.append(line)
        continue
    got = s.recv(65536)
    if not got:
        break
    buf += got
for o in out:
    print(o.decode())
PY
client() { timeout 20 "$PY" "$T/client.py" "$@"; }

# wait_lines FILE N: FILE has at least N lines within a few seconds (the
# writer comes every 100 ms).
wait_lines() {
  local i
  for ((i = 0; i < 100; i++)); do
    [[ -f $1 ]] && (($(wc -l <"$1") >= $2)) && return 0
    sleep 0.05
  done
  return 1
}

# ---- the configuration ------------------------------------------------------

bad_config missing_dir "access_log = $T/nowhere/access.log" access_log \
  "cannot be made: its directory $T/nowhere: No such file or directory" <<CONF
[server]
access_log = $T/nowhere/access.log
[listen a]
unix = $T/a.sock
CONF

bad_config bad_format "access_log_format = xml" access_log_format \
  "is not an access log format" <<CONF
[server]
access_log = $T/x.log
access_log_format = xml
[listen a]
unix = $T/a.sock
CONF

mkfifo "$T/noreader.fifo"
printf '[server]\nplugin_dir = %s\naccess_log = %s\n[listen a]\nunix = %s\n' \
  "$HANDLERS" "$T/noreader.fifo" "$T/nr.sock" >"$T/noreader.conf"
run_jrpcd noreader -c "$T/noreader.conf"
if expect_rc noreader 1 &&
  expect_in noreader err "noreader.conf: [server] access_log: cannot open $T/noreader.fifo: a FIFO with no reader"; then
  pass "a FIFO nobody reads fails the start, saying so"
fi

# ---- JSON lines over every transport ---------------------------------------

TLS=1
if "$JRPCD" -V | grep -q "^TLS: no"; then
  TLS=0
  printf 'note: built without TLS; the TLS listener is not checked\n'
else
  openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes \
    -keyout "$T/server.key" -out "$T/server.pem" -days 2 -subj "/CN=localhost" \
    -addext "subjectAltName=DNS:localhost" 2>/dev/null
fi
export CA=$T/server.pem

plen=$(free_port)
phttp=$(free_port)
ptls=$(free_port)
conf_all() { # FORMAT LOG
  cat <<CONF
[server]
workers = 2
plugin_dir = $HANDLERS
access_log = $2
access_log_format = $1
[listen local]
unix = $T/s.sock
[listen len]
tcp = 127.0.0.1:$plen
framing = length
[listen web]
tcp = 127.0.0.1:$phttp
framing = http
metrics = yes
stats = full
[plugin math]
path = math.so
[plugin sleep]
path = sleep.so
CONF
  if ((TLS)); then
    printf '[listen tls]\ntcp = 127.0.0.1:%s\ntls_cert = %s\ntls_key = %s\n' \
      "$ptls" "$T/server.pem" "$T/server.key"
  fi
}
conf_all json "$T/json.log" >"$T/json.conf"
start_daemon json "$T/json.conf" "$T/s.sock"

ADD2='{"jsonrpc":"2.0","method":"math.add","params":[2,3],"id":7}'
BATCH='[{"jsonrpc":"2.0","method":"math.add","params":[1,1],"id":1},{"jsonrpc":"2.0","method":"no.such","id":2},{"jsonrpc":"2.0","method":"math.add","params":[5,5]},{"jsonrpc":"2.0","method":"math.divide","params":[1,0],"id":"z"}]'
SLEEP='{"jsonrpc":"2.0","method":"sleep.ms","params":{"ms":60},"id":9}'
# What the clients got, a reply a line, then what the log must say of
# each call in order: LISTENER KIND CODE METHOD (- for none); BYTES are
# taken from the replies.
{
  client unix "$T/s.sock" 4 "$ADD2" "$BATCH" "$SLEEP" '{not json'
  client length "127.0.0.1:$plen" 1 "$ADD2"
  curl -sS --max-time 10 -H 'Content-Type: application/json' \
    -d "$ADD2" "http://127.0.0.1:$phttp/"
  echo
  ((TLS)) && client tls "127.0.0.1:$ptls" 1 "$ADD2"
} >"$T/replies.txt" 2>"$T/clients.err" || true
want_calls=9
((TLS)) && want_calls=10
if wait_lines "$T/json.log" "$want_calls"; then
  pass "JSON log: $want_calls lines arrived"
else
  fail "JSON log: expected $want_calls lines"
  show "$T/json.log" "$T/replies.txt" "$T/clients.err"
fi
# Python checks every line against what was sent and what came back.
cat >"$T/check_json.py" <<'PY'
import json, re, sys, time

log, replies, tls = sys.argv[1], sys.argv[2], sys.argv[3] == "1"
lines = open(log, encoding="utf-8").read().split("\n")
assert lines[-1] == "", "the file ends with a newline"
recs = [json.loads(l) for l in lines[:-1]]
rep = [l for l in open(replies).read().split("\n") if l]
def size(v):
    return len(json.dumps(v, separators=(",", ":")).encode())
# The unix replies: ADD2, the batch (3 elements), the parse error, then the
# sleep's (it finished last).
add = rep[0]
batch = json.loads(rep[1])
want = [
    ("local", "call", 0, "math.add", len(add)),
    ("local", "call", 0, "math.add", size(batch[0])),
    ("local", "call", -32601, "no.such", size(batch[1])),
    ("local", "notification", 0, "math.add", 0),
    ("local", "call", -32602, "math.divide", size(batch[2])),
    ("local", "call", -32700, None, None),
    ("local", "call", 0, "sleep.ms", None),
    ("len", "call", 0, "math.add", len(add)),
    ("web", "call", 0, "math.add", len(add)),
]
if tls:
    want.append(("tls", "call", 0, "math.add", len(add)))
by_listener = {}
for r in recs:
    by_listener.setdefault(r["listener"], []).append(r)
got = [r for l in ("local", "len", "web", "tls") for r in by_listener.get(l, [])]
assert len(got) == len(recs) == len(want), (len(recs), len(want), recs)
# Within a listener lines are in the order the calls ended; the parse error
# and the sleep end after the batch, the sleep last.
local = by_listener["local"]
order = {(r["method"], r["code"]) for r in local}
now = time.time()
for r in recs:
    assert set(r) >= {"time", "listener", "kind", "code", "us", "bytes", "peer", "method"}, r
    assert re.fullmatch(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z", r["time"]), r
    t = time.mktime(time.strptime(r["time"][:19], "%Y-%m-%dT%H:%M:%S")) - time.timezone
    assert abs(now - t) < 120, ("time is now, in UTC", r)
    assert isinstance(r["us"], int) and r["us"] >= 0, r
    if r["listener"] == "local":
        assert re.fullmatch(r"pid \d+ uid \d+", r["peer"]), r
    else:
        assert re.fullmatch(r"127\.0\.0\.1:\d+", r["peer"]), r
for w in want:
    match = [r for r in got if (r["listener"], r["kind"], r["code"], r["method"]) == w[:4]]
    assert len(match) >= 1, ("no line for", w, recs)
    r = match[0]
    got.remove(r)
    if w[4] is not None:
        assert r["bytes"] == w[4], ("bytes", w, r)
    if w[3] == "sleep.ms":
        assert r["us"] >= 60000, ("a deferred call's duration", r)
        assert r["bytes"] == len('{"jsonrpc":"2.0","result":60,"id":9}'), r
    if w[2] == -32700:
        assert r["bytes"] == len('{"jsonrpc":"2.0","error":{"code":-32700,"message":"Parse error"},"id":null}'), r
assert not got, got
print("ok")
PY
if out=$("$PY" "$T/check_json.py" "$T/json.log" "$T/replies.txt" "$TLS" 2>&1); then
  pass "JSON log: one line per call, every field right (newline, length, http$( ((TLS)) && echo ', tls'), batch, notification, deferred, parse error)"
else
  fail "JSON log: $out"
  show "$T/json.log" "$T/replies.txt"
fi

# A hostile method: a quote, a newline and a forged line in it; a control
# character and an escape sequence for the terminal; 300 bytes.
FORGED='x\"\n2020-01-01T00:00:00.000Z local call 0 1 1 \"pid 1 uid 0\" \"forged'
LONG=$(printf 'L%.0s' {1..300})
CTRL=$(printf '\\u0001%.0s' {1..200})
n0=$(wc -l <"$T/json.log")
client unix "$T/s.sock" 4 "{\"jsonrpc\":\"2.0\",\"method\":\"$CTRL\",\"id\":4}" \
  "{\"jsonrpc\":\"2.0\",\"method\":\"$FORGED\",\"id\":1}" \
  '{"jsonrpc":"2.0","method":"a\u0000b\u001b[31m","id":2}' \
  "{\"jsonrpc\":\"2.0\",\"method\":\"$LONG\",\"id\":3}" >/dev/null || true
if wait_lines "$T/json.log" $((n0 + 4)); then
  if out=$(tail -n 4 "$T/json.log" | "$PY" -c '
import json, sys
rs = [json.loads(l) for l in sys.stdin]
assert len(rs) == 4, rs
k, f, c, l = rs
assert k["method"] == "\x01" * 128 and k.get("method_cut") is True, k
assert f["method"] == "x\"\n2020-01-01T00:00:00.000Z local call 0 1 1 \"pid 1 uid 0\" \"forged", f
assert c["method"] == "a\x00b\x1b[31m", c
assert l["method"] == "L" * 128 and l.get("method_cut") is True, l
assert all(r["code"] == -32601 for r in rs), rs
print("ok")' 2>&1); then
    pass "JSON log: a hostile method stays inside its string (quote, newline, NUL, ESC, cut at 128, 200 control characters)"
  else
    fail "JSON log, hostile method: $out"
    tail -n 3 "$T/json.log" >&2
  fi
else
  fail "JSON log: no lines for the hostile methods"
fi
stop_daemon json "$PID" "$T/s.sock"

# ---- text lines --------------------------------------------------------------

conf_all text "$T/text.log" >"$T/text.conf"
start_daemon text "$T/text.conf" "$T/s.sock"
client unix "$T/s.sock" 4 "$ADD2" "$BATCH" \
  "{\"jsonrpc\":\"2.0\",\"method\":\"$FORGED\",\"id\":1}" \
  "{\"jsonrpc\":\"2.0\",\"method\":\"$LONG\",\"id\":3}" >/dev/null || true
client length "127.0.0.1:$plen" 1 "$ADD2" >/dev/null || true
if wait_lines "$T/text.log" 8; then
  # Fixed fields by whitespace, the quoted ones by quote. Workers' lines
  # may come in either order: each listener's are in order (one
  # connection, one worker).
  got=$(awk '$2 == "local" {print $2, $3, $4, $6} $2 == "len" {len = $0} END {split(len, f); print f[2], f[3], f[4], f[6]}' "$T/text.log" | tr '\n' ';')
  expect_eq "text log: listener, kind, code, bytes by awk" "$got" \
    "local call 0 35;local call 0 35;local call -32601 77;local notification 0 0;local call -32602 126;local call -32601 77;local call -32601 77;len call 0 35;"
  got=$(awk -F'"' '$1 ~ / local / {print $4}' "$T/text.log" | tr '\n' ';')
  expect_eq "text log: methods by awk -F'\"', the hostile one escaped, the long one cut with \\..." \
    "$got" "math.add;math.add;no.such;math.add;math.divide;x\\x22\\x0a2020-01-01T00:00:00.000Z local call 0 1 1 \\x22pid 1 uid 0\\x22 \\x22forged;$(printf 'L%.0s' {1..128})\\...;"
  if grep -q '^2020-01-01' "$T/text.log"; then
    fail "text log: a method name forged a line"
  else
    pass "text log: no forged line"
  fi
  if awk '{ if (NF < 8 || $1 !~ /^[0-9][0-9][0-9][0-9]-[0-9][0-9]-[0-9][0-9]T[0-9][0-9]:[0-9][0-9]:[0-9][0-9]\.[0-9][0-9][0-9]Z$/ || $5 !~ /^[0-9]+$/) bad = 1 } END { exit bad }' "$T/text.log" &&
    awk -F'"' '{ if (NF != 5 || $2 !~ /^pid [0-9]+ uid [0-9]+$|^127\.0\.0\.1:[0-9]+$/) bad = 1 } END { exit bad }' "$T/text.log"; then
    pass "text log: time, microseconds and peer in their places on every line"
  else
    fail "text log: a line out of shape"
    show "$T/text.log"
  fi
else
  fail "text log: expected 8 lines"
  show "$T/text.log"
fi

# SIGUSR1 after mv: calls go on throughout (one connection, each call a
# method of its own); every one is in exactly one of the two files.
N=400
"$PY" - "$T/s.sock" "$N" >"$T/rot.out" 2>&1 <<'PY' &
import socket, sys, time
s = socket.socket(socket.AF_UNIX)
s.connect(sys.argv[1])
f = s.makefile("rwb")
for i in range(int(sys.argv[2])):
    f.write(b'{"jsonrpc":"2.0","method":"seq.%d","id":%d}\n' % (i, i))
    f.flush()
    f.readline()
    time.sleep(0.004)
print("done")
PY
rot=$!
sleep 0.5
mv "$T/text.log" "$T/text.log.1"
kill -USR1 "$PID"
wait "$rot" || true
if [[ "$(cat "$T/rot.out")" != done ]]; then
  fail "SIGUSR1: the calling client failed: $(cat "$T/rot.out")"
fi
sleep 0.4
if [[ -s "$T/text.log" && -s "$T/text.log.1" ]]; then
  got=$(cat "$T/text.log.1" "$T/text.log" | awk -F'"' '$4 ~ /^seq\./ {print $4}' | sort | uniq -c | awk '$1 != 1' | wc -l)
  n=$(cat "$T/text.log.1" "$T/text.log" | grep -c '"seq\.' || true)
  after=$(grep -c '"seq\.' "$T/text.log" || true)
  if ((n == N && got == 0 && after > 0)); then
    pass "SIGUSR1 after mv: $((N - after)) lines in the moved file, $after in the new one, none lost or doubled"
  else
    fail "SIGUSR1 after mv: $n of $N lines ($got doubled), $after in the new file"
  fi
else
  fail "SIGUSR1 after mv: one of the files is empty"
  show "$T/text.err"
fi
expect_in text err "access_log: reopened $T/text.log" || true
# A reopen that fails (the path is now a directory): logged, and lines
# go on to the file open before.
mv "$T/text.log" "$T/text.log.2"
mkdir "$T/text.log"
kill -USR1 "$PID"
for ((i = 0; i < 100; i++)); do
  grep -qF "cannot reopen $T/text.log" "$T/text.err" && break
  sleep 0.05
done
n0=$(wc -l <"$T/text.log.2")
client unix "$T/s.sock" 1 "$ADD2" >/dev/null || true
if expect_in text err "access_log: cannot reopen $T/text.log: Is a directory; still writing to the file opened before" &&
  wait_lines "$T/text.log.2" $((n0 + 1)); then
  pass "a failed reopen is logged and the open file kept"
else
  fail "a failed reopen: lines did not go on to the file open before"
fi
rmdir "$T/text.log"
mv "$T/text.log.2" "$T/text.log"
# Restart-only: a SIGHUP that changes it says so, and lines go on where
# they went.
sed -i "s|^access_log = .*|access_log = $T/other.log|" "$T/text.conf"
kill -HUP "$PID"
for ((i = 0; i < 100; i++)); do
  grep -qF "[server] access_log changed, but it takes effect only at a restart" "$T/text.err" && break
  sleep 0.05
done
expect_in text err "[server] access_log changed, but it takes effect only at a restart: not applied" || true
n0=$(wc -l <"$T/text.log")
client unix "$T/s.sock" 1 "$ADD2" >/dev/null || true
if wait_lines "$T/text.log" $((n0 + 1)) && [[ ! -e "$T/other.log" ]]; then
  pass "SIGHUP with a new access_log: logged as not applied, lines go on to the file open"
else
  fail "SIGHUP with a new access_log: lines did not go on to $T/text.log"
fi
stop_daemon text "$PID" "$T/s.sock"

# ---- a FIFO nobody reads ------------------------------------------------------

mkfifo "$T/stuck.fifo"
# A reader that never reads: the daemon can open the FIFO, and its writes
# fill the pipe and then wait.
exec 3<>"$T/stuck.fifo"
conf_all text "$T/stuck.fifo" >"$T/stuck.conf"
start_daemon stuck "$T/stuck.conf" "$T/s.sock"
BIG=$("$PY" -c '
import json
print(json.dumps([{"jsonrpc":"2.0","method":"math.add","params":[1,2],"id":i} for i in range(1000)], separators=(",",":")))')
start=$(date +%s%N)
replies=$("$PY" - "$T/s.sock" "$BIG" <<'PY'
import socket, sys
s = socket.socket(socket.AF_UNIX)
s.connect(sys.argv[1])
s.settimeout(10)
f = s.makefile("rwb")
n = 0
for _ in range(20):
    f.write(sys.argv[2].encode() + b"\n")
    f.flush()
    n += f.readline().count(b'"result":3')
print(n)
PY
) || replies="client failed"
ms=$((($(date +%s%N) - start) / 1000000))
if [[ "$replies" == 20000 ]] && ((ms < 10000)); then
  pass "FIFO nobody reads: 20000 calls answered in ${ms} ms"
else
  fail "FIFO nobody reads: $replies of 20000 results in ${ms} ms"
fi
stats=$(curl -sS --max-time 10 -H 'Content-Type: application/json' \
  -d '{"jsonrpc":"2.0","method":"rpc.stats","id":1}' "http://127.0.0.1:$phttp/")
dropped=$(printf '%s' "$stats" | "$PY" -c 'import json,sys; print(json.load(sys.stdin)["result"]["access_log_dropped"])' 2>&1) || true
metric=$(curl -sS --max-time 10 "http://127.0.0.1:$phttp/metrics" | awk '$1 == "jrpcd_access_log_dropped_total" {print $2}')
if [[ "$dropped" =~ ^[0-9]+$ ]] && ((dropped > 0)) && [[ "$metric" =~ ^[0-9]+$ ]] && ((metric >= dropped)); then
  pass "FIFO nobody reads: dropped lines counted (rpc.stats $dropped, /metrics $metric)"
else
  fail "FIFO nobody reads: access_log_dropped '$dropped', jrpcd_access_log_dropped_total '$metric'"
fi
stop_daemon stuck "$PID" "$T/s.sock"
expect_in stuck err "lines dropped since the start" || true
exec 3<&-

# A file that refuses every write (/dev/full: ENOSPC): calls are served,
# the error is logged once (not every round), the lines counted dropped.
if [[ -w /dev/full ]]; then
  printf '[server]\nplugin_dir = %s\naccess_log = /dev/full\n[listen a]\nunix = %s\nstats = full\n[plugin math]\npath = math.so\n' \
    "$HANDLERS" "$T/full.sock" >"$T/full.conf"
  start_daemon full "$T/full.conf" "$T/full.sock"
  for i in 1 2 3 4 5; do
    expect_call "/dev/full log, call $i" "$T/full.sock" "$ADD" "$THREE"
    sleep 0.15
  done
  got=$(call "$T/full.sock" '{"jsonrpc":"2.0","method":"rpc.stats","id":1}' |
    "$PY" -c 'import json,sys; print(json.load(sys.stdin)["result"]["access_log_dropped"])' 2>&1) || true
  errs=$(grep -c "cannot write: No space left on device" "$T/full.err" || true)
  if [[ "$got" =~ ^[0-9]+$ ]] && ((got >= 5 && errs == 1)); then
    pass "/dev/full: calls served, $got lines counted dropped, the error logged once"
  else
    fail "/dev/full: access_log_dropped '$got', error logged $errs times"
    show "$T/full.err"
  fi
  stop_daemon full "$PID" "$T/full.sock"
fi

finish
