"""metrics_checks.py PID WEB PICKY TLS ADMIN_SOCK HAVE_TLS VERSION ABI TLSLIB OUT

For tests/cli/metrics.sh: makes each event a new /metrics series counts
happen against the jrpcd of PID (config written by metrics.sh), and checks
that the series moved by exactly that much and nothing else of them moved.
WEB is its http listener with metrics = yes, PICKY a listener whose peers
is 127.0.0.9, TLS a TLS listener with max_handshakes = 1, ADMIN_SOCK a
newline Unix listener; max_connections = 8, max_connections_per_peer = 3,
call_timeout_ms = 1500. The last scrape is written to OUT for promtool.
Exits 1 after reporting every check that failed."""

import json
import os
import socket
import sys
import time
import urllib.request

from prometheus_client.parser import text_string_to_metric_families

(pid, web, picky, tls_port, admin, have_tls, version, abi, tlslib,
 out) = sys.argv[1:]
web, picky, tls_port, have_tls = int(web), int(picky), int(tls_port), int(have_tls)
bad = 0
REASONS = ["peers", "per_peer_limit", "max_connections", "max_handshakes",
           "tls_handshake"]


def check(what, ok, detail=""):
    global bad
    if ok:
        print("ok: %s" % what)
    else:
        print("FAIL: %s %s" % (what, detail))
        bad += 1


def scrape():
    """The families of one GET /metrics, retried while the daemon has not
    yet let go of connections closed just before (max_connections)."""
    last = None
    for _ in range(100):
        try:
            with urllib.request.urlopen("http://127.0.0.1:%d/metrics" % web,
                                        timeout=10) as r:
                text = r.read().decode()
            with open(out, "w") as f:
                f.write(text)
            return {f.name: f for f in text_string_to_metric_families(text)}
        except OSError as e:
            last = e
            time.sleep(0.05)
    raise SystemExit("FAIL: /metrics cannot be read: %s" % last)


def value(fams, name, **labels):
    f = fams[name]
    return sum(s.value for s in f.samples
               if all(s.labels.get(k) == v for k, v in labels.items()))


def refused(fams):
    return {r: value(fams, "jrpcd_connections_refused", reason=r)
            for r in REASONS}


def wait_for(what, pred):
    """Scrapes until pred(families) holds (5 s at most)."""
    for _ in range(100):
        fams = scrape()
        if pred(fams):
            return fams
        time.sleep(0.05)
    check(what, False, "(not within 5 s)")
    return fams


def settled():
    """Once the daemon holds only the scrape's own connection."""
    return wait_for("connections closed",
                    lambda f: value(f, "jrpcd_connections") == 1)


def expect_refusals(what, before, **want):
    after = refused(scrape())
    got = {r: after[r] - before[r] for r in REASONS}
    exp = {r: want.get(r, 0) for r in REASONS}
    check("%s: refused by reason moved by %s" % (what, want), got == exp,
          "got %s" % got)
    return after


def connect(port, src="127.0.0.1"):
    s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    s.settimeout(10)
    s.bind((src, 0))
    s.connect(("127.0.0.1", port))
    return s


def closed_at_once(s):
    """True when the daemon closes s without a word."""
    try:
        return s.recv(4096) == b""
    except ConnectionResetError:
        return True
    finally:
        s.close()


def served(s):
    """A call on an http connection, kept alive: answered."""
    body = b'{"jsonrpc":"2.0","method":"math.add","params":[1,2],"id":1}'
    s.sendall(b"POST / HTTP/1.1\r\nHost: t\r\nContent-Type: application/json"
              b"\r\nContent-Length: %d\r\n\r\n%s" % (len(body), body))
    got = b""
    while b'"result":3' not in got:
        d = s.recv(4096)
        if not d:
            return False
        got += d
    return True


def hold(port, src, n):
    held = [connect(port, src) for _ in range(n)]
    check("%d connections from %s served" % (n, src), all(served(s) for s in held))
    return held


def fd_count():
    return len(os.listdir("/proc/%s/fd" % pid))


def idle():
    """Waits until the daemon holds no client connection, by its open
    descriptors (a scrape would be one): a hold of max_connections must
    not meet a connection the daemon has not let go of yet."""
    for _ in range(200):
        if fd_count() <= idle_fds:
            return
        time.sleep(0.025)
    check("the daemon let go of its connections", False, (fd_count(), idle_fds))


def release(held):
    for s in held:
        s.close()
    idle()


base = refused(settled())
idle_fds = fd_count()
for _ in range(20):  # the least over half a second: the scrape's gone
    time.sleep(0.025)
    idle_fds = min(idle_fds, fd_count())

# peers: 127.0.0.1 is not 127.0.0.9.
check("a peer not in `peers` is closed at once", closed_at_once(connect(picky)))
base = expect_refusals("a peer not in peers", base, peers=1)

# max_connections_per_peer = 3: a fourth from one address. The file
# descriptors the daemon holds move with them.
fds = value(scrape(), "process_open_fds")
held = hold(web, "127.0.0.2", 3)
check("process_open_fds: three connections more held",
      value(scrape(), "process_open_fds") >= fds + 3)
check("a fourth connection from 127.0.0.2 is closed at once",
      closed_at_once(connect(web, "127.0.0.2")))
base = expect_refusals("max_connections_per_peer", base, per_peer_limit=1)
release(held)

# max_connections = 8: eight held from three addresses, then a ninth. No
# scrape while they are held: it would be the one refused.
idle()
held = hold(web, "127.0.0.3", 3) + hold(web, "127.0.0.4", 3) + \
    hold(web, "127.0.0.5", 2)
check("a ninth connection is closed at once",
      closed_at_once(connect(web, "127.0.0.6")))
release(held)
base = expect_refusals("max_connections", base, max_connections=1)

if have_tls:
    # Plain text to a TLS port: a failed handshake.
    s = connect(tls_port)
    s.sendall(b"GET / HTTP/1.0\r\n\r\n")
    check("plain text on the TLS port is closed", closed_at_once(s))
    settled()
    base = expect_refusals("a failed handshake", base, tls_handshake=1)
    # max_handshakes = 1: one handshake in progress, then a second.
    s = connect(tls_port)
    wait_for("a handshake in progress", lambda f: value(f, "jrpcd_connections") == 2)
    check("a second handshake is refused at once", closed_at_once(connect(tls_port)))
    base = expect_refusals("max_handshakes", base, max_handshakes=1)
    # Abandoned half way: a handshake that failed too.
    s.close()
    settled()
    base = expect_refusals("a handshake abandoned", base, tls_handshake=1)
else:
    print("ok: TLS reasons not checked (a build with -DJRPC_TLS=OFF)")


# Deferred calls on the admin socket: sleep.ms waits past call_timeout_ms.
def method_sums(fams):
    return (value(fams, "jrpcd_method_timeouts", method="sleep.ms"),
            value(fams, "jrpcd_method_cancellations", method="sleep.ms"),
            value(fams, "jrpcd_calls_in_flight"))


def sleep_call(u, id_):
    """A sleep.ms call of 5 s on u, once it counts as in flight."""
    u.sendall(b'{"jsonrpc":"2.0","method":"sleep.ms","params":[5000],"id":%d}\n' % id_)
    wait_for("jrpcd_calls_in_flight 1 while sleep.ms %d runs" % id_,
             lambda f: value(f, "jrpcd_calls_in_flight") == 1)


def sums_moved(what, want):
    """(timeouts, cancellations) of sleep.ms since t0, c0 are want, and
    nothing is in flight."""
    t, c, f = method_sums(scrape())
    check(what, (t - t0, c - c0, f) == want + (0,), (t - t0, c - c0, f))


def reply(u):
    got = b""
    while not got.endswith(b"\n"):
        d = u.recv(4096)
        if not d:
            break
        got += d
    return json.loads(got)


t0, c0, f0 = method_sums(scrape())
check("no call in flight to begin with", f0 == 0, "(%s)" % f0)
u = socket.socket(socket.AF_UNIX)
u.settimeout(10)
u.connect(admin)
sleep_call(u, 1)
r = reply(u)
check("sleep.ms past call_timeout_ms: -32004", r.get("error", {}).get("code") == -32004, r)
sums_moved("timeouts of sleep.ms +1, cancellations +0, in flight 0", (1, 0))

sleep_call(u, 2)
u.sendall(b'{"jsonrpc":"2.0","method":"$/cancelRequest","params":{"id":2}}\n')
r = reply(u)
check("$/cancelRequest: -32800", r.get("error", {}).get("code") == -32800, r)
sums_moved("cancellations of sleep.ms +1 after $/cancelRequest, timeouts +0", (1, 1))

sleep_call(u, 3)
u.close()
fams = wait_for("in flight 0 once its connection closed",
                lambda f: value(f, "jrpcd_calls_in_flight") == 0)
t, c, f = method_sums(fams)
check("cancellations of sleep.ms +1 when its connection closed",
      (t - t0, c - c0) == (1, 2), (t - t0, c - c0))

# The process series against what /proc says of the daemon.
fams = scrape()
limits = open("/proc/%s/limits" % pid).read()
soft = [ln.split()[3] for ln in limits.splitlines() if ln.startswith("Max open files")][0]
check("process_max_fds is the soft RLIMIT_NOFILE", value(fams, "process_max_fds") == float(soft),
      (value(fams, "process_max_fds"), soft))
statm = [int(x) for x in open("/proc/%s/statm" % pid).read().split()[:2]]
page = 4096
rss, vm = value(fams, "process_resident_memory_bytes"), value(fams, "process_virtual_memory_bytes")
check("process_resident_memory_bytes near /proc's", 0.5 < rss / (statm[1] * page) < 2, (rss, statm))
check("process_virtual_memory_bytes near /proc's", 0.5 < vm / (statm[0] * page) < 2, (vm, statm))
fds = fd_count()
check("process_open_fds near /proc's", abs(value(fams, "process_open_fds") - fds) <= 2,
      (value(fams, "process_open_fds"), fds))
cpu = value(fams, "process_cpu_seconds")
check("process_cpu_seconds_total moves", cpu > 0 and value(scrape(), "process_cpu_seconds") >= cpu)
b = fams["jrpcd_build_info"].samples
check("jrpcd_build_info: one sample of 1 with jrpcd -V's facts",
      len(b) == 1 and b[0].value == 1 and b[0].labels.get("version") == version and
      b[0].labels.get("abi") == abi and b[0].labels.get("tls") == tlslib and
      "native" in b[0].labels.get("parsers", "").split(","), b)
types = {n: fams[n].type for n in ["process_cpu_seconds", "process_open_fds", "jrpcd_build_info",
                                   "jrpcd_connections_refused", "jrpcd_calls_in_flight",
                                   "jrpcd_method_timeouts", "jrpcd_method_cancellations"]}
check("types", types == {"process_cpu_seconds": "counter", "process_open_fds": "gauge",
                         "jrpcd_build_info": "gauge", "jrpcd_connections_refused": "counter",
                         "jrpcd_calls_in_flight": "gauge", "jrpcd_method_timeouts": "counter",
                         "jrpcd_method_cancellations": "counter"}, types)

# rpc.stats: the same figures.
u = socket.socket(socket.AF_UNIX)
u.settimeout(10)
u.connect(admin)
u.sendall(b'{"jsonrpc":"2.0","method":"rpc.stats","id":1}\n')
st = reply(u)["result"]
u.close()
fams = scrape()
check("rpc.stats refused is /metrics'", st["refused"] == {r: int(v) for r, v in refused(fams).items()},
      (st["refused"], refused(fams)))
check("rpc.stats calls_in_flight 0", st["calls_in_flight"] == 0, st["calls_in_flight"])
m = st["methods"]["sleep.ms"]
t, c, f = method_sums(fams)
check("rpc.stats timeouts and cancelled of sleep.ms are /metrics'",
      (m["timeouts"], m["cancelled"]) == (t, c), (m, t, c))
p = st["process"]
check("rpc.stats process: max_fds, and the others there",
      p["max_fds"] == value(fams, "process_max_fds") and p["cpu_us"] > 0 and
      p["rss_bytes"] > 0 and p["vm_bytes"] > 0 and p["open_fds"] > 0, p)
sys.exit(1 if bad else 0)
