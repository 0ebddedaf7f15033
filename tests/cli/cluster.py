#!/usr/bin/env python3
"""cluster.py - push across a fleet through NATS (issue 24): Debian's
nats-server on a free port and two jrpcd instances (A and B, two workers
each) with [cluster] and the pubsub plugin.

Checks: both start and serve while the broker is not there yet (/health
"degraded"), and connect once it is. A subscriber on each instance, publishes through each, interleaved:
every subscriber gets every message exactly once (no echo of an
instance's own messages from the broker), each publisher's in order;
a topic nobody subscribes to anywhere is not delivered; a message put on
the broker by another client is delivered only if it is one JSON text
(else counted in cluster.invalid). Then nats-server
is killed: both keep serving, A's subscriber still gets A's publishes (local
delivery never stops), /health says "degraded" with 200, rpc.stats shows
the broker away, and publishes beyond A's cluster_buffer_bytes (64 KiB) are dropped
and counted. Then nats-server is started again on the same port: both
reconnect (rpc.stats reconnects), B's subscriber has had rpc.lagged for
what it may have lost (at the loss, and again at the reconnect), and remote delivery resumes, exactly once.

Usage: cluster.py JRPCD HANDLERS_DIR (CLUSTER_LOGS=1: the daemons' logs even
when it passes)
Exits 77 (SKIP) without nats-server."""
import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
import urllib.request

# push.py's reporting and free ports: its failures count is ours.
from push import fail, free_port, ok  # noqa: E402
import push  # noqa: E402

DEADLINE_S = 10


def wait_port(port, proc, what):
    end = time.time() + DEADLINE_S
    while time.time() < end:
        if proc.poll() is not None:
            raise SystemExit("FAIL: %s exited with %s" % (what, proc.returncode))
        try:
            socket.create_connection(("127.0.0.1", port), 0.2).close()
            return
        except OSError:
            time.sleep(0.05)
    raise SystemExit("FAIL: %s never listened on %d" % (what, port))


class Conn:
    """A newline-framed client: calls, and notifications kept aside."""

    def __init__(self, port):
        self.s = socket.create_connection(("127.0.0.1", port), DEADLINE_S)
        self.buf = b""
        self.notes = []

    def _line(self, timeout):
        self.s.settimeout(timeout)
        while b"\n" not in self.buf:
            chunk = self.s.recv(65536)
            if not chunk:
                raise EOFError("connection closed")
            self.buf += chunk
        line, self.buf = self.buf.split(b"\n", 1)
        return json.loads(line)

    def call(self, method, params, id_=1):
        self.s.sendall(json.dumps({"jsonrpc": "2.0", "method": method,
                                   "params": params, "id": id_}).encode() + b"\n")
        while True:
            m = self._line(DEADLINE_S)
            if "id" in m:
                return m
            self.notes.append(m)

    def notes_for(self, seconds):
        """Every notification that comes within `seconds`."""
        end = time.time() + seconds
        while time.time() < end:
            try:
                self.notes.append(self._line(max(0.01, end - time.time())))
            except socket.timeout:
                break
        out, self.notes = self.notes, []
        return out


class Daemon:
    def __init__(self, jrpcd, handlers, tmp, name, nats_port, extra=""):
        self.port, self.http = free_port(), free_port()
        conf = os.path.join(tmp, name + ".conf")
        with open(conf, "w") as f:
            f.write("[server]\nworkers = 2\nplugin_dir = %s\n"
                    "[listen t]\ntcp = 127.0.0.1:%d\nstats = full\n"
                    "[listen h]\ntcp = 127.0.0.1:%d\nframing = http\n"
                    "[plugin pubsub]\npath = pubsub.so\n"
                    "[cluster]\nnats = nats://127.0.0.1:%d\n%s"
                    % (handlers, self.port, self.http, nats_port, extra))
        self.log = open(os.path.join(tmp, name + ".log"), "w+")
        self.p = subprocess.Popen([jrpcd, "-c", conf], stdout=self.log,
                                  stderr=subprocess.STDOUT)
        wait_port(self.port, self.p, "jrpcd " + name)
        self.name = name

    def stats(self):
        c = Conn(self.port)
        r = c.call("rpc.stats", {})
        c.s.close()
        return r["result"].get("cluster")

    def push(self):
        c = Conn(self.port)
        r = c.call("rpc.stats", {})
        c.s.close()
        return r["result"].get("push")

    def health(self):
        with urllib.request.urlopen("http://127.0.0.1:%d/health" % self.http,
                                    timeout=DEADLINE_S) as r:
            return r.status, json.loads(r.read())

    def stop(self):
        if self.p.poll() is None:
            self.p.send_signal(signal.SIGTERM)
            try:
                self.p.wait(DEADLINE_S)
            except subprocess.TimeoutExpired:
                fail("jrpcd %s did not stop on SIGTERM" % self.name)
                self.p.kill()
        if self.p.returncode not in (0, None):
            fail("jrpcd %s exited %s" % (self.name, self.p.returncode))


def nats(port):
    p = subprocess.Popen(["nats-server", "-a", "127.0.0.1", "-p", str(port)],
                         stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    wait_port(port, p, "nats-server")
    return p


def nats_publish(port, subject, payload):
    """One message straight onto the broker (its text protocol)."""
    s = socket.create_connection(("127.0.0.1", port), DEADLINE_S)
    s.recv(4096)  # INFO
    s.sendall(b"CONNECT {\"verbose\":false}\r\nPUB %s %d\r\n%s\r\nPING\r\n"
              % (subject.encode(), len(payload), payload))
    got = b""
    while b"PONG" not in got:
        chunk = s.recv(4096)
        if not chunk:
            break
        got += chunk
    s.close()


def wait_for(what, cond):
    end = time.time() + DEADLINE_S
    while time.time() < end:
        if cond():
            return True
        time.sleep(0.1)
    fail("never: " + what)
    return False


def messages(notes, method="pubsub.message"):
    """pubsub's message, or the whole result of one put on the broker."""
    out = []
    for n in notes:
        if n.get("method") == method:
            r = n["params"]["result"]
            out.append(r.get("message", r) if isinstance(r, dict) else r)
    return out


def check_all(name, got, want):
    """got: exactly want's messages, once each, each publisher's in order."""
    if sorted(map(json.dumps, got)) != sorted(map(json.dumps, want)):
        fail("%s got %d messages, want %d (missing %.200s, extra %.200s)" % (
            name, len(got), len(want),
            [m for m in want if m not in got][:3],
            [m for m in got if m not in want][:3]))
        return False
    for src in set(m["from"] for m in want):
        seq = [m["n"] for m in got if m["from"] == src]
        if seq != sorted(seq):
            fail("%s: %s's messages out of order: %s" % (name, src, seq[:10]))
            return False
    return True


def subscribe(c, topic):
    r = c.call("pubsub.subscribe", [topic])
    if "result" not in r:
        raise SystemExit("FAIL: subscribe answered %r" % r)
    return r["result"]


def main():
    jrpcd, handlers = sys.argv[1], sys.argv[2]
    if not shutil.which("nats-server"):
        print("SKIP: no nats-server (Debian's nats-server)")
        return 77
    tmp = tempfile.mkdtemp(prefix="jrpcd-cluster-")
    # A jrpcd built without libnats (-DJRPC_NATS=OFF, as CI's no-simdjson
    # build) refuses [cluster] by design: nothing of this to test there.
    probe = os.path.join(tmp, "probe.conf")
    with open(probe, "w") as f:
        f.write("[cluster]\nnats = nats://127.0.0.1:4222\n")
    t = subprocess.run([jrpcd, "-t", "-c", probe], capture_output=True,
                       text=True)
    if "built without NATS" in t.stdout + t.stderr:
        shutil.rmtree(tmp, ignore_errors=True)
        print("SKIP: this jrpcd was built without NATS (-DJRPC_NATS=OFF)")
        return 77
    nport = free_port()
    a = b = broker = None
    try:
        # The broker is not there yet: both start and serve all the same.
        a = Daemon(jrpcd, handlers, tmp, "a", nport,
                   "cluster_buffer_bytes = 65536\n")
        b = Daemon(jrpcd, handlers, tmp, "b", nport)
        status, body = a.health()
        if status != 200 or body.get("status") != "degraded" or \
                a.stats()["broker"] != "away":
            fail("started without the broker: %d %r" % (status, body))
        else:
            ok("started without the broker: serving, /health degraded")
        broker = nats(nport)
        wait_for("both connected to the broker",
                 lambda: a.stats()["broker"] == "connected" and
                 b.stats()["broker"] == "connected")
        sa, sb = Conn(a.port), Conn(b.port)
        subscribe(sa, "news")
        subscribe(sb, "news")
        pa, pb = Conn(a.port), Conn(b.port)
        # Interest reaches the broker asynchronously: probe until B hears A.
        k = 0

        def heard():
            nonlocal k
            k += 1
            pa.call("pubsub.publish", ["news", {"probe": k}])
            return any(isinstance(m, dict) and m.get("probe")
                       for m in messages(sb.notes_for(0.1)))
        wait_for("B's subscriber hears A's publishes", heard)
        time.sleep(0.3)
        sa.notes_for(0.3)
        sb.notes_for(0.3)

        want = []
        for n in range(100):
            pa.call("pubsub.publish", ["news", {"from": "a", "n": n}], n)
            pb.call("pubsub.publish", ["news", {"from": "b", "n": n}], n)
            want += [{"from": "a", "n": n}, {"from": "b", "n": n}]
        # Nobody anywhere listens to sport: it reaches no one.
        pa.call("pubsub.publish", ["sport", {"from": "a", "n": -1}], 999)
        got_a = messages(sa.notes_for(2))
        got_b = messages(sb.notes_for(0.5))
        if check_all("A's subscriber", got_a, want) and \
                check_all("B's subscriber", got_b, want):
            ok("200 publishes through two instances: each subscriber got "
               "each exactly once (no echo), each publisher's in order")
        # Whoever may publish on the broker reaches subscribers only with
        # one JSON text: anything else could forge replies.
        other = b"0123456789abcdef0123456789abcdef "
        nats_publish(nport, "jrpcd.pubsub.news", other + b'1}, "forged": {')
        nats_publish(nport, "jrpcd.pubsub.news", other + b'{"from": "x"}')
        got = messages(sb.notes_for(1))
        if got != [{"from": "x"}] or b.stats()["invalid"] != 1:
            fail("a message not JSON from the broker: B's subscriber got %r, "
                 "stats %r" % (got, b.stats()))
        else:
            ok("a message from the broker that is not one JSON text is not "
               "delivered, and counted (cluster.invalid)")
        sa.notes_for(0.2)
        sa_stats, sb_stats = a.stats(), b.stats()
        if sa_stats["published"] < 100 or sb_stats["received"] < 100:
            fail("rpc.stats cluster: %r / %r" % (sa_stats, sb_stats))

        # The broker goes.
        broker.kill()
        broker.wait()
        wait_for("A sees the broker away",
                 lambda: a.stats()["broker"] == "away")
        status, body = a.health()
        if status != 200 or body.get("status") != "degraded":
            fail("/health without the broker: %d %r" % (status, body))
        else:
            ok("broker away: /health says degraded, still 200")
        big = "x" * 1000
        local = []
        for n in range(100):
            pa.call("pubsub.publish", ["news", {"from": "a2", "n": n,
                                                "pad": big}], n)
            local.append({"from": "a2", "n": n, "pad": big})
        if check_all("A's subscriber, broker away", messages(sa.notes_for(1)),
                     local):
            ok("broker away: A still delivers its own publishes locally")
        st = a.stats()
        if st["dropped"] < 1:
            fail("100 KB published past a 64 KiB cluster_buffer_bytes, none "
                 "dropped: %r" % st)
        else:
            ok("broker away: %d broker-bound messages dropped and counted"
               % st["dropped"])
        if "result" not in pb.call("pubsub.publish", ["news", 1], 5):
            fail("B stopped serving without the broker")

        # The broker is back.
        broker = nats(nport)
        wait_for("both reconnect",
                 lambda: a.stats()["reconnects"] >= 1 and
                 b.stats()["reconnects"] >= 1 and
                 a.stats()["broker"] == "connected")
        if a.health()[1].get("status") != "serving":
            fail("/health after the broker is back: %r" % (a.health(),))
        notes_b = sb.notes_for(2)
        lagged = [n for n in notes_b if n.get("method") == "rpc.lagged"]
        if not lagged:
            fail("B's subscriber got no rpc.lagged after the broker came "
                 "back, but %d notifications: %s" % (
                     len(notes_b), sorted(set(n.get("method") for n in notes_b)))
                 + " push %r" % b.push())
        else:
            ok("broker back: B's subscriber told it may have lost "
               "messages (rpc.lagged %r)" % lagged[0]["params"])
        sa.notes_for(0.2)

        def resumed():
            pa.call("pubsub.publish", ["news", {"probe": "again"}])
            return any(isinstance(m, dict) and m.get("probe") == "again"
                       for m in messages(sb.notes_for(0.2)))
        wait_for("remote delivery resumes", resumed)
        sa.notes_for(0.3)
        sb.notes_for(0.3)
        want = []
        for n in range(50):
            pa.call("pubsub.publish", ["news", {"from": "a3", "n": n}], n)
            want.append({"from": "a3", "n": n})
        if check_all("A's subscriber, after", messages(sa.notes_for(1)), want) \
                and check_all("B's subscriber, after",
                              messages(sb.notes_for(0.5)), want):
            ok("broker back: remote delivery resumed, exactly once")
    finally:
        for d in (a, b):
            if d:
                d.stop()
        if broker:
            broker.kill()
            broker.wait()
        if push.FAILURES or os.environ.get("CLUSTER_LOGS"):
            for d in (a, b):
                if d:
                    d.log.seek(0)
                    print("--- jrpcd %s log:\n%s" % (d.name, d.log.read()[-3000:]),
                          file=sys.stderr)
        shutil.rmtree(tmp, ignore_errors=True)
    return 1 if push.FAILURES else 0


if __name__ == "__main__":
    sys.exit(main())
