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

Then reloads of [cluster] (SIGHUP): unchanged (the connection kept, no
gap), unusable (an unreadable nats_creds: the reload fails, the connection
stays), both instances moved to a second nats-server with another
subject_prefix (subscribers told of the gap; the first server killed, the
subscribers made before still hear the other instance), removed from B
(local delivery only, /health no longer degraded) and added back. Last,
SIGTERM under publishing on a third instance: every answered publish
reaches its own subscriber and B's before it exits 0.

Usage: cluster.py JRPCD HANDLERS_DIR (CLUSTER_LOGS=1: the daemons' logs even
when it passes)
Exits 77 (SKIP) without nats-server."""
import json
import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import threading
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

    def __init__(self, port, name="?"):
        self.name = name
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


def cluster_conf(nats_port, extra=""):
    return "[cluster]\nnats = nats://127.0.0.1:%d\n%s" % (nats_port, extra)


class Daemon:
    def __init__(self, jrpcd, handlers, tmp, name, nats_port, extra="",
                 workers=2):
        self.port, self.http = free_port(), free_port()
        self.conf = os.path.join(tmp, name + ".conf")
        self.base = ("[server]\nworkers = %d\nplugin_dir = %s\n"
                     "[listen t]\ntcp = 127.0.0.1:%d\nstats = full\n"
                     "[listen h]\ntcp = 127.0.0.1:%d\nframing = http\n"
                     "[plugin pubsub]\npath = pubsub.so\n"
                     % (workers, handlers, self.port, self.http))
        with open(self.conf, "w") as f:
            f.write(self.base + cluster_conf(nats_port, extra))
        self.log = open(os.path.join(tmp, name + ".log"), "w+")
        self.p = subprocess.Popen([jrpcd, "-c", self.conf], stdout=self.log,
                                  stderr=subprocess.STDOUT)
        wait_port(self.port, self.p, "jrpcd " + name)
        self.name = name

    def log_text(self):
        self.log.seek(0)
        return self.log.read()

    def reload(self, cluster):
        """The config file with `cluster` as its [cluster] section (""
        for none), then SIGHUP: the log lines the reload wrote."""
        with open(self.conf, "w") as f:
            f.write(self.base + cluster)
        before = self.log_text()
        done = before.count("reloaded ") + before.count("reload failed")
        self.p.send_signal(signal.SIGHUP)
        end = time.time() + DEADLINE_S
        while time.time() < end:
            now = self.log_text()
            if now.count("reloaded ") + now.count("reload failed") > done:
                return now[len(before):]
            time.sleep(0.05)
        raise SystemExit("FAIL: jrpcd %s never logged its reload" % self.name)

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


def probe_until(pub, sub, what, seen=None):
    """Publishes probes through pub until sub hears one (interest reaches
    a broker asynchronously); every notification sub got meanwhile is
    added to seen. Then what is left in flight is read away."""
    k = [0]

    def heard():
        k[0] += 1
        pub.call("pubsub.publish", ["news", {"probe": k[0]}])
        notes = sub.notes_for(0.1)
        if seen is not None:
            seen.extend(notes)
        return any(isinstance(m, dict) and m.get("probe")
                   for m in messages(notes))
    found = wait_for(what, heard)
    time.sleep(0.3)
    notes = sub.notes_for(0.3)
    if seen is not None:
        seen.extend(notes)
    return found


def through(pub, subs, tag, n=50):
    """n publishes through pub: each of subs gets each exactly once, in
    order. The other notifications they had are read away first."""
    for c in subs:
        c.notes_for(0.2)
    want = []
    for i in range(n):
        pub.call("pubsub.publish", ["news", {"from": tag, "n": i}], i)
        want.append({"from": tag, "n": i})
    good = True
    for c in subs:
        good = check_all("%s's subscriber (%s)" % (c.name, tag),
                         messages(c.notes_for(1)), want) and good
    return good


def lag_notices(notes):
    return [n["params"] for n in notes if n.get("method") == "rpc.lagged"]


def subscribe(c, topic):
    r = c.call("pubsub.subscribe", [topic])
    if "result" not in r:
        raise SystemExit("FAIL: subscribe answered %r" % r)
    return r["result"]


def pump(port, tag, sent, stop):
    """Publishes on its own connection until stop is set (at most 2000),
    each message appended to sent once it is answered."""
    c = Conn(port)
    for i in range(2000):
        if stop.is_set():
            break
        m = {"from": tag, "n": i}
        if "result" in c.call("pubsub.publish", ["news", m], i):
            sent.append(m)
        time.sleep(0.002)
    c.s.close()


def reloads(jrpcd, handlers, tmp, a, b, sa, sb, pa, pb, nport, broker):
    """Reloads of [cluster] (issue 24 point 4); returns the first broker
    if it still runs."""
    # Unchanged: the connection stays, and A's publishes keep reaching B's
    # subscriber across B's reload, every one exactly once, no gap.
    r0 = b.stats()["reconnects"]
    sent, stop = [], threading.Event()
    t = threading.Thread(target=pump, args=(a.port, "r1", sent, stop))
    t.start()
    time.sleep(0.3)
    lines = b.reload(cluster_conf(nport))
    time.sleep(0.3)
    stop.set()
    t.join()
    notes = sb.notes_for(1)
    st = b.stats()
    if "[cluster] unchanged: broker connection kept" not in lines or \
            st["reconnects"] != r0 or st["broker"] != "connected":
        fail("reload with [cluster] unchanged: log %r, stats %r" % (lines, st))
    elif check_all("B's subscriber across B's reload", messages(notes),
                   sent) and not lag_notices(notes):
        ok("reload, [cluster] unchanged: connection kept (reconnects %d), "
           "%d publishes of A across it reached B's subscriber exactly once"
           % (r0, len(sent)))
    else:
        fail("rpc.lagged across a reload that kept the connection: %r"
             % lag_notices(notes))
    sa.notes_for(0.2)

    # A [cluster] that cannot be used: the reload fails, saying why, and
    # the connection it has stays.
    lines = b.reload(cluster_conf(
        nport, "nats_creds = %s\n" % os.path.join(tmp, "missing.creds")))
    if not re.search(r"reload failed.*\[cluster\] nats_creds: cannot read "
                     r".*missing\.creds.*broker connection is kept", lines):
        fail("a reload with an unreadable nats_creds: %r" % lines)
    elif through(pa, [sa, sb], "r5", 20) and \
            b.stats()["reconnects"] == r0:
        ok("reload with an unreadable nats_creds fails and says so; the "
           "broker connection is kept, delivery goes on")

    # Both to a second broker, with another subject prefix: then the first
    # broker goes, and B's subscriber (subscribed long before) still hears
    # A: B subscribed at the new broker for it.
    nport2 = free_port()
    broker2 = nats(nport2)
    to2 = cluster_conf(nport2, "subject_prefix = fleet2\n")
    moved = (r"\[cluster\] replaced \(nats, subject_prefix(, \w+)* changed\): "
             r"nats://127.0.0.1:%d -> nats://127.0.0.1:%d" % (nport, nport2))
    for d in (a, b):
        lines = d.reload(to2)
        if not re.search(moved, lines):
            fail("jrpcd %s: reload to a second broker logged %r"
                 % (d.name, lines))
    # Told once the new connection holds the topic, while the first broker
    # is still there (its loss would tell them too).
    notes = sb.notes_for(1)
    if not lag_notices(notes):
        fail("B's subscriber was not told (rpc.lagged) of the gap between "
             "the two brokers")
    else:
        ok("reload to a second broker: the subscribers were told of the gap "
           "(rpc.lagged)")
    broker.kill()
    broker.wait()
    if probe_until(pa, sb, "B's existing subscriber hears A through the "
                   "second broker, the first one gone"):
        ok("reload to a second broker: delivery goes through it (the first "
           "one killed), for subscribers made before the reload")
    through(pa, [sa, sb], "r2")
    other = b"0123456789abcdef0123456789abcdef "
    nats_publish(nport2, "fleet2.pubsub.news", other + b'{"from": "y"}')
    nats_publish(nport2, "jrpcd.pubsub.news", other + b'{"from": "z"}')
    got = messages(sb.notes_for(0.5))
    if got != [{"from": "y"}]:
        fail("after the reload to subject_prefix fleet2, B got %r" % got)
    else:
        ok("reload: the new subject_prefix is the one subscribed to")

    # [cluster] gone from B while its broker is away: /health is no longer
    # degraded by it; local delivery goes on, remote delivery stops.
    broker2.kill()
    broker2.wait()
    wait_for("B sees the second broker away",
             lambda: b.stats()["broker"] == "away")
    lines = b.reload("")
    if "[cluster] removed" not in lines or b.stats() is not None or \
            b.health() != (200, {"status": "serving"}):
        fail("reload without [cluster]: log %r, stats %r, health %r"
             % (lines, b.stats(), b.health()))
    else:
        ok("reload without [cluster]: connection closed, rpc.stats has no "
           "cluster, /health serving")
    broker2 = nats(nport2)
    wait_for("A back on the second broker",
             lambda: a.stats()["broker"] == "connected")
    time.sleep(0.5)
    if through(pb, [sb], "local", 20):
        ok("without [cluster]: local delivery goes on")
    sa.notes_for(0.2)
    for i in range(20):
        pa.call("pubsub.publish", ["news", {"from": "gone", "n": i}], i)
    got = [m for m in messages(sb.notes_for(0.5)) if isinstance(m, dict)]
    if got:
        fail("without [cluster], B still got A's publishes: %r" % got[:3])
    else:
        ok("without [cluster]: remote delivery stops")

    # And back: B subscribes at the broker for the subscriber it has.
    lines = b.reload(to2)
    if "[cluster] added: nats://127.0.0.1:%d" % nport2 not in lines:
        fail("reload adding [cluster] back: %r" % lines)
    if probe_until(pa, sb, "B's subscriber hears A again after [cluster] is back") \
            and through(pa, [sa, sb], "r4"):
        ok("reload adding [cluster]: remote delivery to the subscribers B "
           "had, exactly once")
    sigterm(jrpcd, handlers, tmp, nport2, sb)
    broker2.kill()
    broker2.wait()
    return None


def sigterm(jrpcd, handlers, tmp, nport2, sb):
    """SIGTERM under publishing: a third instance (one worker) publishes
    bursts and is stopped while they are served; its own subscriber, which
    keeps reading, gets every publish that was answered, and so does B's
    (the broker connection closes last); exit status 0."""
    lost, failed = 0, push.FAILURES
    for k, delay in enumerate((0, 0.001, 0.002, 0.003, 0.005)):
        c = Daemon(jrpcd, handlers, tmp, "c%d" % k, nport2,
                   "subject_prefix = fleet2\n", workers=1)
        wait_for("C connected", lambda: c.stats()["broker"] == "connected")
        sc, pc = Conn(c.port, "C"), Conn(c.port)
        subscribe(sc, "news")
        probe_until(pc, sb, "B hears C")
        sc.notes_for(0.2)
        tag = "c%d" % k
        batch = [{"jsonrpc": "2.0", "method": "pubsub.publish",
                  "params": ["news", {"from": tag, "n": i}], "id": i}
                 for i in range(3000)]
        pc.s.sendall(b"".join(json.dumps(batch[i:i + 1000]).encode() + b"\n"
                              for i in range(0, 3000, 1000)))
        time.sleep(delay)
        c.p.send_signal(signal.SIGTERM)
        answered = []
        for line in read_to_eof(pc):
            answered += [batch[r["id"]]["params"][1] for r in json.loads(line)
                         if r.get("result") is True]
        got_c = [json.loads(line) for line in read_to_eof(sc)]
        try:
            if c.p.wait(DEADLINE_S) != 0:
                fail("jrpcd %s exited %s after SIGTERM" % (c.name,
                                                           c.p.returncode))
        except subprocess.TimeoutExpired:
            c.stop()  # a second SIGTERM: killed, and FAIL
        got_b = messages(sb.notes_for(1))
        if push.FAILURES > failed:
            print("--- jrpcd %s log:\n%s" % (c.name, c.log_text()[-6000:]),
                  file=sys.stderr)
        failed = push.FAILURES
        for name, got in (("C's own", messages(got_c)),
                          ("B's", [m for m in got_b if m.get("from") == tag])):
            missing = [m for m in answered if m not in got]
            if missing or len(got) != len(set(map(json.dumps, got))):
                lost += 1
                fail("SIGTERM %g s into 3000 publishes: %s subscriber got "
                     "%d of the %d answered (rpc.lagged %r)"
                     % (delay, name, len(got), len(answered),
                        lag_notices(got_c)))
    if not lost:
        ok("SIGTERM under publishing (5 times): every answered publish "
           "reached the stopping instance's subscriber before its "
           "connection closed, and the other instance's through the broker")


def read_to_eof(c):
    """The lines c gets until the daemon closes it."""
    c.s.settimeout(DEADLINE_S)
    while True:
        chunk = c.s.recv(1 << 20)
        if not chunk:
            break
        c.buf += chunk
    lines, c.buf = c.buf.split(b"\n"), b""
    return [line for line in lines if line]


def built_with_nats(jrpcd, tmp):
    """Whether jrpcd can join a cluster: one built without libnats
    (-DJRPC_NATS=OFF, as CI's no-simdjson build) refuses [cluster] by
    design, and there is nothing of this to test."""
    probe = os.path.join(tmp, "probe.conf")
    with open(probe, "w") as f:
        f.write("[cluster]\nnats = nats://127.0.0.1:4222\n")
    t = subprocess.run([jrpcd, "-t", "-c", probe], capture_output=True,
                       text=True)
    return "built without NATS" not in t.stdout + t.stderr


def mapped(pid, name):
    """The files of process pid's memory map whose path holds name."""
    with open("/proc/%d/maps" % pid) as f:
        return sorted({line.split()[-1] for line in f if name in line})


def check_loading(jrpcd, handlers, tmp, a):
    """The NATS client is loaded for a [cluster] section only (nats_dl.c):
    a jrpcd without one maps none of it, and serves where the library
    cannot load, where one with [cluster] refuses to start (and -t says
    so) naming the library. The library is hidden by a bind mount of an
    empty file over it, in a mount namespace of its own."""
    plain, port = os.path.join(tmp, "plain.conf"), free_port()
    with open(plain, "w") as f:
        f.write("[server]\nworkers = 1\nplugin_dir = %s\n[listen t]\n"
                "tcp = 127.0.0.1:%d\n[plugin pubsub]\npath = pubsub.so\n"
                % (handlers, port))
    p = subprocess.Popen([jrpcd, "-c", plain], stdout=subprocess.DEVNULL,
                         stderr=subprocess.DEVNULL)
    try:
        wait_port(port, p, "jrpcd without [cluster]")
        lib, none = mapped(a.p.pid, "libnats"), mapped(p.pid, "libnats")
    finally:
        p.terminate()
        p.wait()
    if not lib or none:
        fail("libnats mapped with [cluster]: %r; without: %r (expected "
             "some, then none)" % (lib, none))
        return
    ok("the NATS client is mapped with [cluster] (%s), not without"
       % os.path.basename(lib[0]))
    if os.geteuid() != 0 or not shutil.which("unshare"):
        why = "hiding libnats needs root and unshare"
        if os.environ.get("CI") == "true":
            fail(why + " (CI=true: every check must run)")
        else:
            print("SKIP (this part): " + why)
        return
    empty = os.path.join(tmp, "empty.so")
    open(empty, "w").close()

    def hidden(conf, *args):
        return subprocess.run(
            ["unshare", "--mount", "--propagation", "private", "sh", "-c",
             'mount --bind "$1" "$2" && shift 2 && exec "$@"', "sh", empty,
             lib[0], jrpcd] + list(args) + ["-c", conf],
            capture_output=True, text=True, timeout=DEADLINE_S)
    want = "cannot load the NATS client libnats.so"
    for what, args in (("-t", ("-t",)), ("a start", ())):
        r = hidden(a.conf, *args)
        if r.returncode != 1 or want not in r.stderr:
            fail("libnats hidden, %s with [cluster]: exit %d, %r (expected "
                 "1 and %r)" % (what, r.returncode, r.stderr[-300:], want))
        else:
            ok("libnats hidden, %s with [cluster] refuses: %s"
               % (what, r.stderr.strip().splitlines()[-1]))
    r = hidden(plain, "-t")
    if r.returncode != 0:
        fail("libnats hidden, -t without [cluster]: exit %d, %r"
             % (r.returncode, r.stderr[-300:]))
    else:
        ok("libnats hidden, a config without [cluster] still passes -t")


def main():
    jrpcd, handlers = sys.argv[1], sys.argv[2]
    if not shutil.which("nats-server"):
        print("SKIP: no nats-server (Debian's nats-server)")
        return 77
    tmp = tempfile.mkdtemp(prefix="jrpcd-cluster-")
    if not built_with_nats(jrpcd, tmp):
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
        check_loading(jrpcd, handlers, tmp, a)
        broker = nats(nport)
        wait_for("both connected to the broker",
                 lambda: a.stats()["broker"] == "connected" and
                 b.stats()["broker"] == "connected")
        sa, sb = Conn(a.port, "A"), Conn(b.port, "B")
        subscribe(sa, "news")
        subscribe(sb, "news")
        pa, pb = Conn(a.port), Conn(b.port)
        # Interest reaches the broker asynchronously: probe until B hears A.
        probe_until(pa, sb, "B's subscriber hears A's publishes")
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
        probe_until(pa, sb, "remote delivery resumes")
        if through(pa, [sa, sb], "a3"):
            ok("broker back: remote delivery resumed, exactly once")
        broker = reloads(jrpcd, handlers, tmp, a, b, sa, sb, pa, pb, nport,
                         broker)
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
