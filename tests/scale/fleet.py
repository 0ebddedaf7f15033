#!/usr/bin/env python3
"""fleet.py - push across a fleet behind HAProxy (issue 24, point 5).

Debian's nats-server on a free port; three jrpcd instances (two workers
each, [cluster] nats = that server, the pubsub plugin, an HTTP listener with
websocket = yes and drain_ms = 3000 as scale.sh's http mode, and an
operator's HTTP listener with stats = full); Debian's haproxy in front of
them with packaging/haproxy/jrpcd-http.cfg itself (addresses from the
environment, as scale.sh runs it). Subscribers are WebSocket clients
connected THROUGH HAProxy (fleet_ws.py); which instance each one reached is
read from HAProxy (`show sess`, by the client's port) and checked against
each instance's own rpc.stats (push.subscriptions).

1. Every instance has subscribers; publishes through each instance
   directly (HTTP POST and WebSocket) and through HAProxy (HTTP POST, whose
   requests HAProxy spreads over the instances, and WebSocket): every
   subscriber receives every message exactly once, each publisher's in
   order (the fleet orders per publishing connection: for the HTTP
   publisher through HAProxy, per instance that served it, read from
   HAProxy's log, where each request's path carries its number).
2. The broker is killed and started again while a publisher on jrpcd1
   publishes without pause: every instance keeps serving (/health 200
   "degraded", HAProxy keeps it up), jrpcd1's own subscribers get every
   one of its messages (local delivery never stops), one of them a client
   of jrpcd1 directly that reads nothing from before the broker goes until
   it is back, while megabytes wait for it in jrpcd1 (a slow reader is
   not a lost one: the lag notice must not cost it local messages),
   the others get none twice and none out of order, every message from
   MARGIN_S after all instances are back on the broker, and an rpc.lagged
   for their subscription; every instance counts its reconnect (rpc.stats
   and /metrics), jrpcd1 the messages beyond cluster_buffer_bytes that it
   dropped.
3. Rolling restart (SIGTERM, HAProxy's check sees it down, the exit
   after the drain, start, seen up) of the three instances while a client
   publishes through HAProxy over HTTP without pause: no publish fails;
   subscribers whose connection closes (with a close frame, 1001 going
   away) reconnect through HAProxy and subscribe again (what issue 24 has
   docs/scaling.md tell clients to do); at the end every one is subscribed
   again (HAProxy's sessions and the instances' counts
   agree), and for each of its subscriptions it got every message
   published from MARGIN_S after the subscription was answered until
   MARGIN_S before that connection closed (to the end for the last),
   exactly once.
Every jrpcd exits 0 on SIGTERM, sanitizer-clean.

MARGIN_S: interest reaches the broker asynchronously (an instance's first
subscriber of a topic subscribes there from the cluster's thread), and
publishes leave an instance asynchronously too, so "after" needs a margin:
a second, where both take milliseconds, under a sanitizer too.

Usage: fleet.py JRPCD HANDLERS_DIR REPO_ROOT
Skipped (77) without haproxy, nats-server or a NATS build, unless CI=true.
FLEET_LOGS=1 prints the daemons' and HAProxy's logs even when it passes;
FLEET_NO_RESUBSCRIBE=1 makes the clients give up at a close (the test must
fail then).
"""
import http.client
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

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "cli"))
from cluster import built_with_nats, wait_port  # noqa: E402
from fleet_ws import WebSocket  # noqa: E402
from push import fail, free_port, ok  # noqa: E402
import push  # noqa: E402

DEADLINE_S = 20  # any one wait; the sanitizer build is several times slower
DRAIN_MS = 3000  # > HAProxy's fall x inter (2 x 1 s), as scale.sh
MARGIN_S = 1.0
TOPIC = "news"
SUBSCRIBERS = 9
PAD = 8000  # bytes of padding in each message published across the outage
SANITIZER = re.compile(r"AddressSanitizer|LeakSanitizer|ThreadSanitizer|"
                       r"UndefinedBehaviorSanitizer|runtime error")


def missing(why):
    """A prerequisite is not on this machine: skip, or under CI fail."""
    if os.environ.get("CI") == "true":
        print("FAIL: %s (CI=true: every check must run)" % why)
        sys.exit(1)
    print("SKIP: " + why)
    sys.exit(77)


def wait_for(what, cond, limit=DEADLINE_S):
    end = time.time() + limit
    while time.time() < end:
        if cond():
            return True
        time.sleep(0.1)
    fail("never within %ds: %s" % (limit, what))
    return False


def rpc(method, params, id_=1):
    return json.dumps({"jsonrpc": "2.0", "method": method, "params": params,
                       "id": id_})


class Broker:
    def __init__(self, tmp):
        self.port = free_port()
        self.log = os.path.join(tmp, "nats.log")
        self.p = None

    def start(self):
        with open(self.log, "a") as log:
            self.p = subprocess.Popen(
                ["nats-server", "-a", "127.0.0.1", "-p", str(self.port)],
                stdout=log, stderr=subprocess.STDOUT)
        wait_port(self.port, self.p, "nats-server")

    def kill(self):
        if self.p and self.p.poll() is None:
            self.p.kill()
            self.p.wait()


class Instance:
    """jrpcd I: `port` behind HAProxy, `ops` the operator's own port."""

    def __init__(self, i, tmp, jrpcd, handlers, nats_port):
        self.i, self.tmp, self.jrpcd = i, tmp, jrpcd
        self.port, self.ops = free_port(), free_port()
        self.lives, self.p = [], None
        self.conf = os.path.join(tmp, "j%d.conf" % i)
        with open(self.conf, "w") as f:
            # max_push_bytes: room for broker_outage's subscriber that
            # stops reading for a while (megabytes).
            f.write("[server]\nworkers = 2\nplugin_dir = %s\ndrain_ms = %d\n"
                    "max_push_bytes = 67108864\n"
                    "[listen lb]\ntcp = 127.0.0.1:%d\nframing = http\n"
                    "websocket = yes\n"
                    "[listen ops]\ntcp = 127.0.0.1:%d\nframing = http\n"
                    "stats = full\nmetrics = yes\n"
                    "[plugin pubsub]\npath = pubsub.so\n"
                    "[cluster]\nnats = nats://127.0.0.1:%d\n"
                    # Small, so that an outage of a second overflows it.
                    "cluster_buffer_bytes = 16384\n"
                    % (handlers, DRAIN_MS, self.port, self.ops, nats_port))

    def start(self):
        log = os.path.join(self.tmp, "j%d.%d.log" % (self.i, len(self.lives)))
        self.lives.append(log)
        with open(log, "w") as f:
            self.p = subprocess.Popen([self.jrpcd, "-c", self.conf],
                                      stdout=f, stderr=subprocess.STDOUT)
        wait_port(self.ops, self.p, "jrpcd%d" % self.i)
        wait_port(self.port, self.p, "jrpcd%d" % self.i)

    def term(self):
        self.p.send_signal(signal.SIGTERM)

    def wait_exit(self):
        """After term(): it must exit 0 within the drain and a bound."""
        try:
            rc = self.p.wait(DRAIN_MS / 1000 + DEADLINE_S)
        except subprocess.TimeoutExpired:
            self.p.kill()
            self.p.wait()
            fail("jrpcd%d did not exit after SIGTERM (killed)" % self.i)
            return
        if rc != 0:
            fail("jrpcd%d exited %s after SIGTERM, expected 0" % (self.i, rc))

    def call(self, method, params):
        c = http.client.HTTPConnection("127.0.0.1", self.ops, timeout=DEADLINE_S)
        c.request("POST", "/", rpc(method, params),
                  {"Content-Type": "application/json"})
        reply = json.loads(c.getresponse().read())
        c.close()
        return reply["result"]

    def stats(self):
        return self.call("rpc.stats", {})

    def get(self, path):
        c = http.client.HTTPConnection("127.0.0.1", self.ops, timeout=DEADLINE_S)
        c.request("GET", path)
        r = c.getresponse()
        out = r.status, r.read().decode()
        c.close()
        return out

    def health(self):
        status, body = self.get("/health")
        return status, json.loads(body).get("status")

    def metric(self, name):
        text = self.get("/metrics")[1]
        m = re.search(r"^%s (\d+)$" % re.escape(name), text, re.M)
        return int(m.group(1)) if m else None


class HAProxy:
    def __init__(self, tmp, cfg, instances):
        self.sock = os.path.join(tmp, "haproxy.sock")
        self.log = os.path.join(tmp, "haproxy.log")
        self.port = free_port()
        env = dict(os.environ, HAPROXY_STATS_SOCKET=self.sock,
                   JRPC_HTTP_BIND="127.0.0.1:%d" % self.port)
        for j in instances:
            env["JRPCD%d_HTTP" % j.i] = "127.0.0.1:%d" % j.port
        with open(self.log, "w") as f:
            self.p = subprocess.Popen(["haproxy", "-db", "-f", cfg], env=env,
                                      stdout=f, stderr=subprocess.STDOUT)
        wait_for("haproxy's stats socket answers",
                 lambda: self.p.poll() is None and os.path.exists(self.sock)
                 and self.command("show info"))
        if self.p.poll() is not None:
            raise SystemExit("FAIL: haproxy -f %s exited %s" % (cfg, self.p.returncode))

    def command(self, cmd):
        try:
            s = socket.socket(socket.AF_UNIX)
            s.settimeout(5)
            s.connect(self.sock)
            return push.exchange(s, cmd.encode() + b"\n").decode()
        except OSError:
            return ""

    def status(self, i):
        for line in self.command("show stat").splitlines():
            f = line.split(",")
            if len(f) > 17 and f[1] == "jrpcd%d" % i:
                return f[17]
        return None

    def wait_status(self, i, want):
        return wait_for("HAProxy sees jrpcd%d %s" % (i, want),
                        lambda: self.status(i) == want)

    def server_of_ports(self):
        """Client port -> the jrpcd (1..3) of each session HAProxy holds."""
        out = {}
        for line in self.command("show sess").splitlines():
            m = re.search(r"src=127\.0\.0\.1:(\d+) .*srv=jrpcd(\d)", line)
            if m:
                out[int(m.group(1))] = int(m.group(2))
        return out

    def served(self, name):
        """seq -> jrpcd of each POST /NAME/SEQ HAProxy logged."""
        out = {}
        with open(self.log, errors="replace") as f:
            for line in f:
                m = re.search(r"jrpcd_http/jrpcd(\d) .*\"POST /%s/(\d+) "
                              % re.escape(name), line)
                if m:
                    out[int(m.group(2))] = int(m.group(1))
        return out

    def stop(self):
        if self.p.poll() is None:
            self.p.terminate()
            try:
                self.p.wait(DEADLINE_S)
            except subprocess.TimeoutExpired:
                self.p.kill()
                self.p.wait()


class HttpPublisher:
    """pubsub.publish over HTTP POST on one keep-alive connection; the
    path (/NAME/SEQ) puts the message's number in HAProxy's log."""

    def __init__(self, name, port):
        self.name = name
        self.c = http.client.HTTPConnection("127.0.0.1", port,
                                            timeout=DEADLINE_S)

    def publish(self, n, pad=""):
        msg = {"from": self.name, "n": n, "pad": pad}
        try:
            self.c.request("POST", "/%s/%d" % (self.name, n),
                           rpc("pubsub.publish", [TOPIC, msg], n),
                           {"Content-Type": "application/json"})
            r = self.c.getresponse()
            body = r.read()
            if r.status != 200 or json.loads(body).get("result") is not True:
                return "HTTP %d %.200r" % (r.status, body)
            return None
        except (OSError, http.client.HTTPException, ValueError) as e:
            self.c.close()
            return "%s: %s" % (type(e).__name__, e)

    def close(self):
        self.c.close()


class WsPublisher:
    """pubsub.publish over one WebSocket connection."""

    def __init__(self, name, port):
        self.name = name
        self.ws = WebSocket("127.0.0.1", port, DEADLINE_S)

    def publish(self, n, pad=""):
        msg = {"from": self.name, "n": n, "pad": pad}
        try:
            self.ws.send_text(rpc("pubsub.publish", [TOPIC, msg], n))
            while True:
                r = json.loads(self.ws.recv_text())
                if r.get("id") == n:
                    return None if r.get("result") is True else repr(r)
        except (OSError, EOFError, ValueError) as e:
            return "%s: %s" % (type(e).__name__, e)

    def close(self):
        self.ws.close()


class Publishing(threading.Thread):
    """One publisher without pause (every `gap` seconds) until stopped;
    records (n, sent, answered, error) for each publish."""

    def __init__(self, pub, gap, pad=""):
        super().__init__(daemon=True)
        self.pub, self.gap, self.pad = pub, gap, pad
        self.done = []
        self.halt = threading.Event()

    def run(self):
        n = 0
        while not self.halt.is_set():
            sent = time.time()
            err = self.pub.publish(n, self.pad)
            self.done.append((n, sent, time.time(), err))
            n += 1
            self.halt.wait(self.gap)

    def stop(self):
        self.halt.set()
        self.join(DEADLINE_S * 2)
        self.pub.close()


class Subscriber(threading.Thread):
    """A WebSocket client through HAProxy subscribed to TOPIC; with
    `resubscribe`, one whose connection closes connects again (through
    HAProxy) and subscribes again. Each subscription is an epoch: its id,
    the client's port, when it was answered, when its connection closed,
    and the messages and rpc.lagged notices it brought."""

    def __init__(self, k, port, rcvbuf=None):
        super().__init__(daemon=True)
        self.k, self.port, self.rcvbuf = k, port, rcvbuf
        self.resubscribe = False
        self.paused = threading.Event()  # set: it reads nothing
        self.epochs = []
        self.problems = []
        self.lock = threading.Lock()
        self.halt = threading.Event()
        self.ws = None
        self.connect()

    def connect(self):
        ws = WebSocket("127.0.0.1", self.port, DEADLINE_S, rcvbuf=self.rcvbuf)
        ws.send_text(rpc("pubsub.subscribe", [TOPIC]))
        r = json.loads(ws.recv_text())
        if not isinstance(r.get("result"), str):
            ws.close()
            raise ConnectionError("subscribe answered %r" % r)
        ws.s.settimeout(0.2)
        with self.lock:
            self.epochs.append({"id": r["result"], "port": ws.local_port(),
                                "start": time.time(), "end": None,
                                "got": [], "lagged": []})
        self.ws = ws

    def reconnect(self):
        end = time.time() + DEADLINE_S
        while not self.halt.is_set():
            try:
                self.connect()
                return True
            except (OSError, EOFError, ValueError) as e:
                if time.time() > end:
                    self.problems.append("no new subscription within %ds: %s"
                                         % (DEADLINE_S, e))
                    return False
                time.sleep(0.1)
        return False

    def run(self):
        while not self.halt.is_set():
            if self.paused.is_set():
                time.sleep(0.05)
                continue
            try:
                text = self.ws.recv_text()
            except socket.timeout:
                continue
            except (OSError, EOFError) as e:
                with self.lock:
                    self.epochs[-1]["end"] = time.time()
                    self.epochs[-1]["code"] = getattr(e, "code", None)
                if self.halt.is_set():
                    return
                if not self.resubscribe:
                    self.problems.append("connection closed: %s" % e)
                    return
                if not self.reconnect():
                    return
                continue
            self.note(json.loads(text))

    def note(self, m):
        e = self.epochs[-1]
        p = m.get("params") if isinstance(m.get("params"), dict) else {}
        msg = p.get("result")
        msg = msg.get("message") if isinstance(msg, dict) else None
        if m.get("method") == "pubsub.message" and isinstance(msg, dict) and \
                p.get("subscription") == e["id"]:
            with self.lock:
                e["got"].append((msg.get("from"), msg.get("n"), time.time()))
        elif m.get("method") == "rpc.lagged" and p.get("subscription") == e["id"]:
            with self.lock:
                e["lagged"].append((time.time(), p))
        else:
            self.problems.append("unexpected: %.200r" % m)

    def received(self, since=0.0, source=None):
        """(from, n) of every message received after `since`, in order."""
        with self.lock:
            return [(f, n) for e in self.epochs for f, n, t in e["got"]
                    if t >= since and (source is None or f == source)]

    def lagged(self, since):
        with self.lock:
            return [p for e in self.epochs for t, p in e["lagged"] if t >= since]

    def stop(self):
        self.halt.set()
        self.join(DEADLINE_S)
        self.ws.close()


def where(haproxy, subs):
    """jrpcd (1..3) of each subscriber's current connection, per HAProxy."""
    ports = haproxy.server_of_ports()
    return {s.k: ports.get(s.epochs[-1]["port"]) for s in subs}


def check_placement(haproxy, subs, instances, live):
    """Each subscriber's instance as HAProxy has it agrees with each
    instance's own count of subscriptions; returns the placement."""
    at = where(haproxy, subs)
    lost = [k for k, i in at.items() if i is None]
    if lost:
        fail("HAProxy holds no session for subscribers %s" % lost)
    counts = {j.i: j.stats()["push"]["subscriptions"] for j in instances}
    by_haproxy = {j.i: sum(1 for i in at.values() if i == j.i) for j in instances}
    if counts != by_haproxy:
        fail("subscriptions per instance: rpc.stats says %r, HAProxy's "
             "sessions %r" % (counts, by_haproxy))
    else:
        ok("%s: subscriptions per instance %r (rpc.stats on each instance's "
           "own port = HAProxy's sessions)" % (live, counts))
    return at


def exactly_once(name, got, want, in_order_of=None, may=()):
    """got (a list of (from, n)) holds each of want once and, of want's
    sources, nothing else but what is in `may`; in_order_of: groups (sets
    of messages) whose members must come in order."""
    seen = {}
    for m in got:
        seen[m] = seen.get(m, 0) + 1
    twice = [m for m, c in seen.items() if c > 1]
    absent = [m for m in want if m not in seen]
    sources = set(f for f, _ in want)
    known = set(want) | set(may)
    extra = [m for m in seen if m[0] in sources and m not in known]
    if twice or absent or extra:
        fail("%s: %d of %d messages; twice %s, missing %s, unexpected %s" % (
            name, len(set(got) & set(want)), len(want), twice[:5], absent[:5],
            extra[:5]))
        return False
    for group, members in (in_order_of or {}).items():
        order = [n for f, n in got if (f, n) in members]
        if order != sorted(order):
            fail("%s: %s out of order: %s" % (name, group, order[:20]))
            return False
    return True


def ordered(got, source):
    """No message of source twice and none out of order."""
    ns = [n for f, n in got if f == source]
    return ns == sorted(set(ns))


def first_round(instances, haproxy, subs):
    """1: publishes through each instance, directly and through HAProxy."""
    pubs = []
    for j in instances:
        pubs.append(HttpPublisher("d%dh" % j.i, j.port))
        pubs.append(WsPublisher("d%dw" % j.i, j.port))
    pubs.append(HttpPublisher("hh", haproxy.port))
    for k in range(3):
        pubs.append(WsPublisher("hw%d" % k, haproxy.port))
    want = []
    for n in range(20):
        for p in pubs:
            err = p.publish(n)
            if err:
                fail("publish %s/%d: %s" % (p.name, n, err))
            want.append((p.name, n))
    for p in pubs:
        p.close()
    wait_for("every subscriber has the %d messages" % len(want),
             lambda: all(len(s.received()) >= len(want) for s in subs))
    time.sleep(0.3)  # anything more would show here
    # The fleet orders per publishing connection; HAProxy spread hh's
    # requests over the instances: in order per instance that served it.
    served = haproxy.served("hh")
    groups = {p.name: [(p.name, n) for n in range(20)]
              for p in pubs if p.name != "hh"}
    for i in (1, 2, 3):
        groups["hh via jrpcd%d" % i] = [("hh", n) for n, s in served.items()
                                        if s == i]
    if len(served) != 20 or set(served.values()) != {1, 2, 3}:
        fail("HAProxy spread hh's 20 POSTs over %r, not the three instances"
             % sorted(set(served.values())))
    good = [s.k for s in subs if exactly_once(
        "subscriber %d" % s.k, s.received(), want,
        {g: set(ms) for g, ms in groups.items()})]
    if len(good) == len(subs):
        ok("%d messages from %d publishers (each instance directly by POST "
           "and WebSocket, through HAProxy by POST over jrpcd%s and by "
           "WebSocket): each of %d subscribers got each exactly once, in "
           "order per publisher" % (len(want), len(pubs),
                                    sorted(set(served.values())), len(subs)))


def kernel_send_max():
    """The most a TCP socket's send buffer grows to (tcp_wmem's max)."""
    try:
        with open("/proc/sys/net/ipv4/tcp_wmem") as f:
            return int(f.read().split()[2])
    except (OSError, ValueError, IndexError):
        return 4 << 20


def broker_outage(instances, haproxy, broker, subs, at):
    """2: the broker killed and started again under publishing on jrpcd1."""
    j1 = instances[0]
    before = {j.i: j.stats()["cluster"] for j in instances}
    # And one more on jrpcd1, directly, that reads nothing until the broker
    # is back, then reads it all: a slow reader, not a lost one. Its
    # notifications fill the kernel's buffers (the client's receive buffer
    # made small, jrpcd1's send buffer at most tcp_wmem's largest), then
    # wait in jrpcd1 (under max_push_bytes) when the broker goes.
    slow = Subscriber(SUBSCRIBERS, j1.port, rcvbuf=4096)
    slow.paused.set()
    slow.start()
    t0 = time.time()
    pub = Publishing(WsPublisher("c1", j1.port), 0.004, "x" * PAD)
    pub.start()
    wait_for("more published on jrpcd1 than the kernel holds for a client",
             lambda: len(pub.done) * PAD > kernel_send_max() + (1 << 20))
    broker.kill()
    wait_for("every instance sees the broker away",
             lambda: all(j.stats()["cluster"]["broker"] == "away"
                         for j in instances))
    time.sleep(1.0)
    # The broker away: each instance says degraded, still 200, so that
    # HAProxy keeps every one in rotation.
    for j in instances:
        health = j.health()
        if health != (200, "degraded") or haproxy.status(j.i) != "UP":
            fail("jrpcd%d with the broker away: /health %r, HAProxy has it %s"
                 % (j.i, health, haproxy.status(j.i)))
        else:
            ok("jrpcd%d with the broker away: /health 200 degraded, HAProxy "
               "keeps it UP" % j.i)
    broker.start()
    wait_for("every instance reconnects to the broker",
             lambda: all(j.stats()["cluster"]["broker"] == "connected" and
                         j.stats()["cluster"]["reconnects"] >
                         before[j.i]["reconnects"] for j in instances))
    back = time.time()
    slow.paused.clear()
    time.sleep(MARGIN_S + 1.0)
    pub.stop()
    failed = [(n, e) for n, _, _, e in pub.done if e]
    if failed:
        fail("publishes on jrpcd1 failed during the outage: %s" % failed[:5])
    published = [("c1", n) for n, _, _, e in pub.done if not e]
    after = [("c1", n) for n, sent, _, e in pub.done
             if not e and sent >= back + MARGIN_S]
    local = [s for s in subs if at[s.k] == 1] + [slow]
    remote = [s for s in subs if at[s.k] != 1]
    wait_for("jrpcd1's subscribers have its %d messages" % len(published),
             lambda: all(len(s.received(t0, "c1")) >= len(published)
                         for s in local))
    time.sleep(0.3)
    whole = [exactly_once("jrpcd1's subscriber %d" % s.k, s.received(t0, "c1"),
                          published, {"c1": set(published)}) for s in local]
    if all(whole):
        ok("broker killed and restarted: jrpcd1's %d own subscribers (one of "
           "them not reading across the outage) got all %d messages "
           "published there, in order (local delivery never stopped)"
           % (len(local), len(published)))
    else:
        for s, good in zip(local, whole):
            if not good:
                fail("jrpcd1's subscriber %d was told rpc.lagged %r; jrpcd1's "
                     "push stats %r" % (s.k, s.lagged(t0), j1.stats()["push"]))
    slow.stop()
    good = 0
    for s in remote:
        got = s.received(t0, "c1")
        lag = s.lagged(t0)
        if not ordered(got, "c1"):
            fail("subscriber %d on jrpcd%d: jrpcd1's messages twice or out of "
                 "order across the outage" % (s.k, at[s.k]))
        elif not exactly_once("subscriber %d on jrpcd%d after the broker is "
                              "back" % (s.k, at[s.k]),
                              [m for m in got if m in set(after)], after):
            pass
        elif not lag:
            fail("subscriber %d on jrpcd%d: no rpc.lagged for the messages "
                 "lost with the broker (got %d of %d)" % (
                     s.k, at[s.k], len(got), len(published)))
        else:
            good += 1
    if good == len(remote):
        ok("the %d subscribers on jrpcd2 and jrpcd3: none twice, none out of "
           "order, all %d published from %.1fs after the broker was back, "
           "each told by rpc.lagged" % (len(remote), len(after), MARGIN_S))
    for j in instances:
        st = j.stats()["cluster"]
        rec, drop = j.metric("jrpcd_cluster_reconnects_total"), \
            j.metric("jrpcd_cluster_dropped_total")
        if st["reconnects"] <= before[j.i]["reconnects"] or rec != st["reconnects"]:
            fail("jrpcd%d: reconnects: rpc.stats %r, /metrics %r" % (j.i, st, rec))
        elif j is j1 and (st["dropped"] <= before[j.i]["dropped"] or
                          drop != st["dropped"]):
            fail("jrpcd1 published past cluster_buffer_bytes while away but "
                 "counts no drop: rpc.stats %r, /metrics %r" % (st, drop))
        else:
            ok("jrpcd%d counts the outage: %d reconnect(s), %d dropped "
               "(rpc.stats = /metrics)" % (j.i, st["reconnects"], st["dropped"]))


def rolling_restart(instances, haproxy, subs):
    """3: each instance restarted in turn under publishing through HAProxy."""
    for s in subs:
        s.resubscribe = not os.environ.get("FLEET_NO_RESUBSCRIBE")
    pub = Publishing(HttpPublisher("r", haproxy.port), 0.01)
    pub.start()
    time.sleep(0.5)
    for j in instances:
        j.term()
        haproxy.wait_status(j.i, "DOWN")
        j.wait_exit()
        j.start()
        haproxy.wait_status(j.i, "UP")
        ok("jrpcd%d: SIGTERM under publishing, seen down, drained, exited 0, "
           "started, seen up" % j.i)
    # Long enough for the last clients to resubscribe, plus the margin.
    time.sleep(MARGIN_S + 1.5)
    pub.stop()
    time.sleep(0.5)
    failed = [(n, e) for n, _, _, e in pub.done if e]
    if failed:
        fail("%d of %d publishes through HAProxy over HTTP failed during the "
             "rolling restart: %s" % (len(failed), len(pub.done), failed[:5]))
    else:
        ok("%d publishes through HAProxy over HTTP during the rolling "
           "restart, none failed" % len(pub.done))
    for s in subs:
        if s.problems:
            fail("subscriber %d: %s" % (s.k, s.problems[:3]))
    at = check_placement(haproxy, subs, instances, "after the rolling restart")
    if len(set(at.values()) - {None}) < 2:
        fail("all subscribers ended on one instance %r: nothing crossed the "
             "broker at the end" % at)
    served = haproxy.served("r")
    by_instance = {"r via jrpcd%d" % i: set(
        ("r", n) for n, v in served.items() if v == i) for i in (1, 2, 3)}
    # Near a subscription's start and end, a message may or may not come.
    published = [("r", n) for n, _, _, err in pub.done if not err]
    good = 0
    for s in subs:
        problems = []
        with s.lock:
            epochs = [dict(e, got=list(e["got"])) for e in s.epochs]
        every = [(f, n) for e in epochs for f, n, _ in e["got"] if f == "r"]
        if len(every) != len(set(every)):
            problems.append("a message twice")
        if len(epochs) < 2:
            problems.append("never reconnected, though its instance restarted")
        if epochs[-1]["end"] is not None:
            problems.append("not subscribed at the end")
        # A stopping instance says so (1001, going away), which clients
        # tell from a broken connection.
        codes = [e.get("code") for e in epochs[:-1]]
        if any(code != 1001 for code in codes):
            problems.append("closed with %s, not 1001" % codes)
        for k, e in enumerate(epochs):
            end = e["end"] or float("inf")
            want = [("r", n) for n, sent, answered, err in pub.done
                    if not err and sent >= e["start"] + MARGIN_S and
                    answered <= end - MARGIN_S]
            got = [(f, n) for f, n, _ in e["got"] if f == "r"]
            if not exactly_once("subscriber %d, subscription %d" % (s.k, k + 1),
                                got, want, by_instance, published):
                problems.append("subscription %d" % (k + 1))
        if problems:
            fail("subscriber %d (%d subscriptions): %s" % (s.k, len(epochs),
                                                          problems))
        else:
            good += 1
    if good == len(subs):
        ok("all %d clients resubscribed after their instance's restart (%d "
           "subscriptions in all) and got every message published while "
           "subscribed exactly once" % (
               len(subs), sum(len(s.epochs) for s in subs)))


def main():
    jrpcd, handlers, root = sys.argv[1:4]
    cfg = os.path.join(root, "packaging", "haproxy", "jrpcd-http.cfg")
    for cmd in ("haproxy", "nats-server"):
        if not shutil.which(cmd):
            missing("%s is not installed (scripts/deps.sh installs it)" % cmd)
    tmp = tempfile.mkdtemp(prefix="jrpcd-fleet-")
    if not built_with_nats(jrpcd, tmp):
        shutil.rmtree(tmp, ignore_errors=True)
        missing("this jrpcd was built without NATS (-DJRPC_NATS=OFF)")
    broker = Broker(tmp)
    instances, haproxy, subs = [], None, []
    finished = False  # False in `finally`: a check gave up (SystemExit)
    try:
        broker.start()
        instances = [Instance(i, tmp, jrpcd, handlers, broker.port)
                     for i in (1, 2, 3)]
        for j in instances:
            j.start()
        wait_for("every instance on the broker",
                 lambda: all(j.stats()["cluster"]["broker"] == "connected"
                             for j in instances))
        haproxy = HAProxy(tmp, cfg, instances)
        for j in instances:
            haproxy.wait_status(j.i, "UP")
        subs = [Subscriber(k, haproxy.port) for k in range(SUBSCRIBERS)]
        for s in subs:
            s.start()
        at = check_placement(haproxy, subs, instances, "subscribed through "
                             "HAProxy over WebSocket")
        if any(list(at.values()).count(j.i) < 2 for j in instances):
            fail("not every instance has two subscribers: %r" % at)
        # Interest reaches the broker asynchronously: probe through each
        # instance until every subscriber hears each.
        probes = [HttpPublisher("probe%d" % j.i, j.port) for j in instances]
        n = 0

        def heard():
            nonlocal n
            n += 1
            for p in probes:
                p.publish(n)
            time.sleep(0.1)
            return all(set(f for f, _ in s.received()) >= set(
                p.name for p in probes) for s in subs)
        wait_for("every subscriber hears every instance", heard)
        for p in probes:
            p.close()
        first_round(instances, haproxy, subs)
        broker_outage(instances, haproxy, broker, subs, at)
        rolling_restart(instances, haproxy, subs)
        for s in subs:
            s.stop()
        for j in instances:
            j.term()
        for j in instances:
            j.wait_exit()
        finished = True
    finally:
        for s in subs:
            s.halt.set()
        for j in instances:
            if j.p and j.p.poll() is None:
                j.p.kill()
                j.p.wait()
        if haproxy:
            haproxy.stop()
        broker.kill()
        logs = [log for j in instances for log in j.lives]
        for log in logs:
            with open(log, errors="replace") as f:
                if SANITIZER.search(f.read()):
                    fail("sanitizer report in %s" % os.path.basename(log))
        if push.FAILURES or not finished or os.environ.get("FLEET_LOGS"):
            for log in logs + ([haproxy.log] if haproxy else []) + [broker.log]:
                if not os.path.exists(log):
                    continue
                with open(log, errors="replace") as f:
                    print("--- %s:\n%s" % (os.path.basename(log),
                                          f.read()[-4000:]), file=sys.stderr)
        shutil.rmtree(tmp, ignore_errors=True)
    if push.FAILURES:
        print("fleet.py: %d check(s) failed" % push.FAILURES, file=sys.stderr)
        return 1
    print("fleet.py: all checks passed")
    return 0


if __name__ == "__main__":
    sys.exit(main())
