#!/usr/bin/env python3
"""push.py - server push end to end (issue 23): the pubsub sample plugin on
a jrpcd with two workers and a listener of every streaming framing (Unix
newline and length, TCP newline, content-length, and TLS when the build
has it and the openssl command is there), plus one HTTP listener.

Checks: subscribe answers an id (and rpc.discover shows its
x-subscription); a publish from another connection (on
another framing, so mostly another worker) reaches every subscriber exactly
once and in order, as the notification shape of geth and jsonrpsee;
unsubscribe answers true, then false, and false for another connection's
id; a closed connection's subscriptions end (rpc.stats counts them);
subscribing over HTTP POST answers -32010; a storm of subscribe and
unsubscribe pairs under publishing leaves nothing behind; subscribers
closed at random points of a fan-out (RST, half-read, FIN, calls in flight)
while others subscribe leave the survivors every message once and in order
and no subscription behind; /metrics has the
push counters; max_subscriptions_per_connection
answers -32011; a subscriber that stops reading under a fast publisher
costs the daemon bounded memory, another subscriber keeps receiving, and
once it reads again it gets an rpc.lagged notice whose count, added to
what it received, is exactly what was published. A deferred call
(sleep.work_ms with a progress token) sends its caller $/progress notifications in order before
its reply, on every streaming framing. A reload that keeps pubsub keeps its
subscriptions; one that removes it ends them (under ASan: no call into the
unloaded plugin), and so does one whose [access] no longer lets the client
call the subscription method. `max_subscriptions` answers -32011 too; a subscriber
outlives idle_timeout_ms; push_overflow = close closes a subscriber that
does not read (rpc.stats push.overflow_closed).

Eight threads of a plugin (tests/plugins/fx_push) publishing at once reach
every subscriber exactly once or are accounted for by rpc.lagged, each
thread's messages in order (scripts/test.sh runs this under ThreadSanitizer).

Usage: push.py JRPCD HANDLERS_DIR FIXTURE_DIR REPO_ROOT [burst]
(with `burst`, only the eight publishing threads: the ThreadSanitizer run)
"""
import json
import os
import random
import shutil
import signal
import socket
import ssl
import struct
import subprocess
import sys
import tempfile
import threading
import time

FAILURES = 0
DEADLINE_S = 20
FX = ""  # the fixture plugins' folder
SANITIZED = False  # a sanitizer build: memory is not the daemon's own


def fail(msg):
    global FAILURES
    FAILURES += 1
    print("FAIL: " + msg, file=sys.stderr)


def ok(msg):
    print("ok: " + msg)


HANDED_OUT = set()


def free_port():
    # Below the kernel's ephemeral range (32768 and up), as lib.sh's
    # free_port: a port the kernel hands out at random may become a
    # client socket of a test running beside this one before jrpcd binds.
    # Never the same one twice: a test that takes several ports before it
    # starts what binds them would otherwise meet itself.
    for port in random.sample(range(20000, 32000), 50):
        if port in HANDED_OUT:
            continue
        s = socket.socket()
        try:
            s.bind(("127.0.0.1", port))
            HANDED_OUT.add(port)
            return port
        except OSError:
            continue
        finally:
            s.close()
    raise RuntimeError("no free TCP port found")


class Conn:
    """One client connection with its framing; bounded reads."""

    def __init__(self, sock, framing):
        self.s = sock
        self.framing = framing
        self.buf = b""
        self.s.settimeout(DEADLINE_S)

    def send(self, obj):
        data = json.dumps(obj, separators=(",", ":")).encode()
        if self.framing == "newline":
            frame = data + b"\n"
        elif self.framing == "length":
            frame = struct.pack(">I", len(data)) + data
        else:
            frame = b"Content-Length: %d\r\n\r\n" % len(data) + data
        self.s.sendall(frame)

    def _fill(self):
        chunk = self.s.recv(65536)
        if not chunk:
            raise EOFError("connection closed")
        self.buf += chunk

    def recv(self):
        while True:
            if self.framing == "newline":
                i = self.buf.find(b"\n")
                if i >= 0:
                    line, self.buf = self.buf[:i], self.buf[i + 1:]
                    return json.loads(line)
            elif self.framing == "length":
                if len(self.buf) >= 4:
                    (n,) = struct.unpack(">I", self.buf[:4])
                    if len(self.buf) >= 4 + n:
                        data, self.buf = self.buf[4:4 + n], self.buf[4 + n:]
                        return json.loads(data)
            else:
                i = self.buf.find(b"\r\n\r\n")
                if i >= 0:
                    head = self.buf[:i].decode()
                    n = int([h.split(":")[1] for h in head.split("\r\n")
                             if h.lower().startswith("content-length")][0])
                    if len(self.buf) >= i + 4 + n:
                        data = self.buf[i + 4:i + 4 + n]
                        self.buf = self.buf[i + 4 + n:]
                        return json.loads(data)
            self._fill()

    def call(self, method, params, id_=1):
        self.send({"jsonrpc": "2.0", "method": method, "params": params,
                   "id": id_})
        while True:
            m = self.recv()
            if m.get("id") == id_:
                return m

    def close(self):
        self.s.close()


class Daemon:
    def __init__(self, jrpcd, handlers, tmp, extra="", tls=None):
        self.tmp = tmp
        self.ports = {k: free_port() for k in ("nl", "cl", "http", "tls")}
        conf = os.path.join(tmp, "push.conf")
        if "idle_timeout_ms" not in extra:
            extra += "\nidle_timeout_ms = 0"
        text = ("[server]\nworkers = 2\nplugin_dir = %s\n%s\n"
                % (handlers, extra))
        text += "[listen unl]\nunix = %s/nl.sock\nframing = newline\n" % tmp
        text += "[listen ulen]\nunix = %s/len.sock\nframing = length\n" % tmp
        text += ("[listen tnl]\ntcp = 127.0.0.1:%d\nframing = newline\n"
                 % self.ports["nl"])
        text += ("[listen tcl]\ntcp = 127.0.0.1:%d\nframing = content-length\n"
                 % self.ports["cl"])
        text += ("[listen thttp]\ntcp = 127.0.0.1:%d\nframing = http\n"
                 "metrics = yes\n" % self.ports["http"])
        if tls:
            text += ("[listen ttls]\ntcp = 127.0.0.1:%d\nframing = newline\n"
                     "tls_cert = %s\ntls_key = %s\n"
                     % (self.ports["tls"], tls[0], tls[1]))
        self.conf, self.base = conf, text
        text += "[plugin pubsub]\npath = pubsub.so\n"
        text += "[plugin sleep]\npath = sleep.so\n"
        text += "[plugin kv]\npath = kv.so\n"
        text += "[plugin fx_push]\npath = %s/fx_push.so\n" % FX
        with open(conf, "w") as f:
            f.write(text)
        self.log = open(os.path.join(tmp, "jrpcd.err"), "w+")
        self.p = subprocess.Popen([jrpcd, "-c", conf], stdout=self.log,
                                  stderr=self.log)
        self.tls = tls
        end = time.time() + DEADLINE_S
        while time.time() < end:
            try:
                self.connect("unl").close()
                return
            except OSError:
                if self.p.poll() is not None:
                    break
                time.sleep(0.05)
        self.log.seek(0)
        sys.exit("FAIL: jrpcd did not start:\n" + self.log.read())

    def connect(self, name):
        if name in ("unl", "ulen"):
            s = socket.socket(socket.AF_UNIX)
            s.settimeout(DEADLINE_S)
            s.connect(os.path.join(self.tmp, "nl.sock" if name == "unl"
                                   else "len.sock"))
            return Conn(s, "newline" if name == "unl" else "length")
        port = self.ports[{"tnl": "nl", "tcl": "cl", "ttls": "tls"}[name]]
        s = socket.create_connection(("127.0.0.1", port), DEADLINE_S)
        if name == "ttls":
            ctx = ssl.create_default_context()
            ctx.check_hostname = False
            ctx.verify_mode = ssl.CERT_NONE
            s = ctx.wrap_socket(s)
        return Conn(s, "content-length" if name == "tcl" else "newline")

    def reload(self, plugins):
        """New plugin sections, SIGHUP, and wait for the reload's line."""
        with open(self.conf + ".new", "w") as f:
            f.write(self.base + plugins)
        os.rename(self.conf + ".new", self.conf)
        self.log.seek(0)
        before = self.log.read().count("reloaded")
        self.p.send_signal(signal.SIGHUP)
        end = time.time() + DEADLINE_S
        while time.time() < end:
            self.log.seek(0)
            if self.log.read().count("reloaded") > before:
                return
            time.sleep(0.05)
        fail("no reload within %d s" % DEADLINE_S)

    def rss_kib(self):
        with open("/proc/%d/status" % self.p.pid) as f:
            for line in f:
                if line.startswith("VmRSS:"):
                    return int(line.split()[1])
        return 0

    def stop(self):
        self.p.send_signal(signal.SIGTERM)
        try:
            rc = self.p.wait(DEADLINE_S)
        except subprocess.TimeoutExpired:
            self.p.kill()
            rc = -1
        self.log.seek(0)
        text = self.log.read()
        if rc != 0 or "Sanitizer" in text:
            fail("jrpcd exit %d:\n%s" % (rc, text))


def exchange(s, request):
    """request on the connected socket s, then everything the peer sends
    until it closes; s is closed."""
    s.sendall(request)
    data = b"".join(iter(lambda: s.recv(65536), b""))
    s.close()
    return data


def http_exchange(port, request):
    """One HTTP request with Connection: close; the whole response."""
    return exchange(socket.create_connection(("127.0.0.1", port), DEADLINE_S),
                    request)


def http_call(port, obj):
    body = json.dumps(obj).encode()
    data = http_exchange(
        port, b"POST / HTTP/1.1\r\nHost: x\r\nContent-Type: application/json"
        b"\r\nContent-Length: %d\r\nConnection: close\r\n\r\n"
        % len(body) + body)
    return json.loads(data.split(b"\r\n\r\n", 1)[1])


def subscribe(c, channel, id_=1):
    r = c.call("pubsub.subscribe", [channel], id_)
    sid = r.get("result")
    if not isinstance(sid, str) or len(sid) != 32:
        fail("subscribe answered %r" % r)
    return sid


def check_fanout(d, names):
    subs = {}
    for n in names:
        c = d.connect(n)
        subs[n] = (c, subscribe(c, "news"))
    ids = [sid for _, sid in subs.values()]
    if len(set(ids)) != len(ids):
        fail("subscription ids repeat: %r" % ids)
    pub = d.connect("ulen")
    for k in range(50):
        r = pub.call("pubsub.publish", ["news", {"k": k}], k + 1)
        if r.get("result") is not True:
            fail("publish answered %r" % r)
    other = d.connect("unl")
    other.call("pubsub.publish", ["sport", 1])  # nobody listens there
    for n, (c, sid) in subs.items():
        got = [c.recv() for _ in range(50)]
        want = [{"jsonrpc": "2.0", "method": "pubsub.message",
                 "params": {"subscription": sid,
                            "result": {"channel": "news",
                                       "message": {"k": k}}}}
                for k in range(50)]
        if got != want:
            fail("%s: notifications %r..." % (n, got[:2]))
            continue
        # exactly once: the next thing is our own call's reply
        r = c.call("pubsub.publish", ["elsewhere", 0], 99)
        if r != {"jsonrpc": "2.0", "result": True, "id": 99}:
            fail("%s: after 50 notifications came %r" % (n, r))
        ok("%s: 50 notifications, once each, in order" % n)
    c, sid = subs[names[0]]
    r = c.call("pubsub.unsubscribe", [sid], 7)
    if r.get("result") is not True:
        fail("unsubscribe answered %r" % r)
    r = c.call("pubsub.unsubscribe", {"subscription": sid}, 8)
    if r.get("result") is not False:
        fail("a second unsubscribe answered %r" % r)
    c2, sid2 = subs[names[1]]
    r = c.call("pubsub.unsubscribe", [sid2], 9)
    if r.get("result") is not False:
        fail("another connection's id was ended: %r" % r)
    pub.call("pubsub.publish", ["news", "after"], 100)
    r = next_is_reply(c, 10)
    if r.get("id") != 10:
        fail("a notification after unsubscribe: %r" % r)
    m = c2.recv()
    if m.get("params", {}).get("result", {}).get("message") != "after":
        fail("the other subscription ended with it: %r" % m)
    ok("unsubscribe: true, false, false for another connection's id")
    for c, _ in subs.values():
        c.close()
    pub.close()
    other.close()


def next_is_reply(c, id_):
    """A call on c, and the next thing c receives: its reply, unless a
    notification came first."""
    c.send({"jsonrpc": "2.0", "method": "pubsub.publish",
            "params": ["elsewhere", 0], "id": id_})
    return c.recv()


def wait_subscriptions(d, n):
    """Waits (bounded) for rpc.stats to count n subscriptions; the count."""
    end = time.time() + DEADLINE_S
    live = live_subscriptions(d)
    while time.time() < end and live != n:
        time.sleep(0.05)
        live = live_subscriptions(d)
    return live


def rpc_stats(d):
    c = d.connect("unl")
    r = c.call("rpc.stats", [], 1)
    c.close()
    return r["result"]


def live_subscriptions(d):
    return rpc_stats(d).get("push", {}).get("subscriptions")


def check_close_ends(d):
    c = d.connect("unl")
    for k in range(5):
        subscribe(c, "ch%d" % k, k + 1)
    before = live_subscriptions(d)
    c.close()
    after = wait_subscriptions(d, before - 5)
    if after != before - 5:
        fail("closing ended %r of 5 subscriptions" % (before - after))
    else:
        ok("a closed connection's 5 subscriptions ended")


def check_storm(d):
    """2,000 subscribe/unsubscribe pairs, 8 at a time (the daemon's
    max_subscriptions_per_connection) pipelined on two connections while
    a third publishes: every unsubscribe true, nothing left, memory flat."""
    base = live_subscriptions(d)
    conns = [d.connect("unl"), d.connect("tnl")]
    pub = d.connect("ulen")
    rss0 = d.rss_kib()
    for rnd in range(125):
        for c in conns:
            c.send([{"jsonrpc": "2.0", "method": "pubsub.subscribe",
                     "params": ["storm%d" % (k % 7)], "id": k}
                    for k in range(8)])
        pub.send({"jsonrpc": "2.0", "method": "pubsub.publish",
                  "params": ["storm3", rnd], "id": 1})
        for c in conns:
            ids = []
            while len(ids) < 8:
                m = c.recv()
                if isinstance(m, list):
                    ids += [r.get("result") for r in m]
            c.send([{"jsonrpc": "2.0", "method": "pubsub.unsubscribe",
                     "params": [sid], "id": k} for k, sid in enumerate(ids)])
            answers = None
            while answers is None:
                m = c.recv()
                answers = m if isinstance(m, list) else None
            if [r.get("result") for r in answers] != [True] * 8:
                fail("storm: unsubscribe answered %r" % answers[:3])
                return
        pub.recv()
    left = wait_subscriptions(d, base)
    grown = d.rss_kib() - rss0
    if left != base or (not SANITIZED and grown > 8 * 1024):
        fail("storm: %r subscriptions left (of %r), jrpcd grew %d KiB"
             % (left, base, grown))
    else:
        ok("a storm of 2,000 subscribe/unsubscribe pairs under publishing: "
           "none left, jrpcd grew %d KiB" % grown)
    for c in conns + [pub]:
        c.close()


def close_abruptly(c, how):
    """Ends a subscriber the way a crashing or impatient client does: an
    RST (SO_LINGER 0), a read of part of what is queued then a close, a
    FIN while the daemon still has output for it, or a close with a
    pipelined batch of calls still unanswered."""
    try:
        if how == "rst":
            c.s.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER,
                           struct.pack("ii", 1, 0))
        elif how == "half-read":
            c.s.settimeout(0.2)
            c.s.recv(3000)
        elif how == "fin":
            c.s.shutdown(socket.SHUT_WR)
        elif how == "in-flight":
            c.send([{"jsonrpc": "2.0", "method": "pubsub.publish",
                     "params": ["nobody", "z" * 1000], "id": k}
                    for k in range(20)])
    except OSError:
        pass  # the daemon may already have closed it (TLS, a full queue)
    c.close()


def check_disconnects(d, names):
    """Disconnects in the middle of a fan-out: 20 subscribers over every
    framing (and so both workers) on one channel, some on a second one
    too; a publisher pipelines 2 KB messages while victims that do not
    read (their notifications queued in the daemon) are closed at random
    points in four ways and new ones subscribe. After: jrpcd answers, the
    survivors, which keep up, got every message once and in order, and
    the live subscriptions return to the base."""
    seed = int(os.environ.get("PUSH_SEED", time.time()))
    rng = random.Random(seed)
    print("disconnects: PUSH_SEED=%d repeats this run's closes" % seed)
    base = live_subscriptions(d)
    survivors = []  # (conn, {subscription id: channel})
    for k in range(8):
        c = d.connect(names[k % len(names)])
        subs = {subscribe(c, "fan", 1): "fan"}
        if k % 2:
            subs[subscribe(c, "fan2", 2)] = "fan2"
        survivors.append((c, subs))
    victims = []

    def new_victim(k):
        c = d.connect(names[k % len(names)])
        c.s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
        subscribe(c, "fan", 1)
        if k % 3 == 0:
            subscribe(c, "fan2", 2)
        victims.append(c)

    for k in range(12):
        new_victim(k)
    stats = rpc_stats(d)
    spread = [w["connections"] for w in stats["workers"]]
    if len(spread) != 2 or min(spread) < 5:
        fail("disconnects: the 20 subscribers are not over both workers: "
             "%r" % spread)
    dropped0 = stats["push"]["dropped"]
    received = [dict((sid, []) for sid in subs) for _, subs in survivors]
    lagged = [0] * len(survivors)

    def read(i):
        c, subs = survivors[i]
        ends = 0
        while ends < len(subs):
            try:
                m = c.recv()
            except (socket.timeout, EOFError, OSError) as e:
                fail("survivor %d (%s): %s" % (i, c.framing, e))
                return
            p = m.get("params", {})
            if m.get("method") == "rpc.lagged":
                lagged[i] += p["dropped"]
            elif p.get("result", {}).get("message") == "end":
                ends += 1
            else:
                received[i][p["subscription"]].append(
                    p["result"]["message"]["n"])

    readers = [threading.Thread(target=read, args=(i,))
               for i in range(len(survivors))]
    for t in readers:
        t.start()
    pub = d.connect("ulen")
    payload = "p" * 2000
    sent = {"fan": 0, "fan2": 0}
    closes = dict.fromkeys(("rst", "half-read", "fin", "in-flight"), 0)
    for rnd in range(60):
        batch = []
        for k in range(10):
            ch = "fan2" if k % 4 == 3 else "fan"
            batch.append({"jsonrpc": "2.0", "method": "pubsub.publish",
                          "params": [ch, {"n": sent[ch], "p": payload}],
                          "id": k})
            sent[ch] += 1
        pub.send(batch)
        if rnd % 2 and victims:
            how = rng.choice(sorted(closes))
            closes[how] += 1
            close_abruptly(victims.pop(rng.randrange(len(victims))), how)
            new_victim(rnd)
        r = pub.recv()
        if [x.get("result") for x in r] != [True] * 10:
            fail("disconnects: a publish batch answered %r" % r[:1])
            break
        # the survivors keep up (each round is well under max_push_bytes),
        # so any loss of theirs is the daemon's, not a lag
        end = time.time() + DEADLINE_S
        while time.time() < end and any(
                t.is_alive() and len(received[i][sid]) + lagged[i] < sent[ch]
                for i, (t, (_, subs)) in enumerate(zip(readers, survivors))
                for sid, ch in subs.items()):
            time.sleep(0.002)
    for ch in sent:
        pub.call("pubsub.publish", [ch, "end"], 99)
    for t in readers:
        t.join(DEADLINE_S)
    bad = 0
    for i, (c, subs) in enumerate(survivors):
        for sid, ch in subs.items():
            seq = received[i][sid]
            if seq != list(range(sent[ch])):
                fail("disconnects: survivor %d (%s) on %s got %d of %d, "
                     "in order %r" % (i, c.framing, ch, len(seq), sent[ch],
                                      seq == sorted(set(seq))))
                bad += 1
        if lagged[i]:
            fail("disconnects: survivor %d told of %d dropped: it kept up"
                 % (i, lagged[i]))
            bad += 1
        if next_is_reply(c, 77).get("id") != 77:
            fail("disconnects: survivor %d got more after the end" % i)
            bad += 1
    for c in victims:
        close_abruptly(c, "rst")
    want = base + sum(len(subs) for _, subs in survivors)
    left = wait_subscriptions(d, want)
    for c, _ in survivors:
        c.close()
    pub.close()
    after = wait_subscriptions(d, base)
    if left != want or after != base:
        fail("disconnects: %r subscriptions with the survivors (want %d), "
             "%r after them (base %d)" % (left, want, after, base))
    dropped = rpc_stats(d)["push"]["dropped"] - dropped0
    if not dropped:
        fail("disconnects: no victim's queue was ever full (nothing dropped)")
    elif not bad:
        ok("disconnects mid-fan-out (seed %d; closes %r): %d survivors got "
           "all %d messages once, in order; victims' queues were full (%d "
           "dropped); subscriptions back to %d"
           % (seed, closes, len(survivors), sum(sent.values()), dropped,
              base))


def check_metrics(d):
    text = http_exchange(d.ports["http"], b"GET /metrics HTTP/1.1\r\nHost: x"
                         b"\r\nConnection: close\r\n\r\n")
    want = [b'jrpcd_worker_subscriptions{worker="0"}',
            b"# TYPE jrpcd_worker_notifications_dropped_total counter",
            b'jrpcd_worker_subscriptions_refused_total{worker="1"}',
            b"jrpcd_worker_lag_notices_total", b"jrpcd_worker_publishes_lost_total",
            b"jrpcd_worker_push_overflow_closed_total",
            b"jrpcd_worker_notifications_total"]
    missing = [w for w in want if w not in text]
    if missing:
        fail("/metrics lacks %r" % missing)
    else:
        ok("/metrics has the push counters of each worker")


def check_http_refused(d):
    r = http_call(d.ports["http"], {"jsonrpc": "2.0", "method":
                                    "pubsub.subscribe", "params": ["x"],
                                    "id": 1})
    err = r.get("error", {})
    if err.get("code") != -32010 or "streaming" not in err.get("message", ""):
        fail("subscribe over HTTP POST answered %r" % r)
    else:
        ok("subscribe over HTTP POST: -32010 (%s)" % err["message"])


def check_limits(d):
    """max_subscriptions_per_connection = 4, max_subscriptions = 6."""
    c = d.connect("unl")
    for k in range(4):
        subscribe(c, "lim", k + 1)
    r = c.call("pubsub.subscribe", ["lim"], 5)
    if r.get("error", {}).get("code") != -32011:
        fail("a fifth subscription answered %r" % r)
    else:
        ok("max_subscriptions_per_connection: -32011 (%s)"
           % r["error"]["message"])
    c2 = d.connect("tnl")
    for k in range(2):
        subscribe(c2, "lim", k + 1)
    r = c2.call("pubsub.subscribe", ["lim"], 3)
    if "max_subscriptions = 6" not in r.get("error", {}).get("message", ""):
        fail("a seventh subscription in the daemon answered %r" % r)
    else:
        ok("max_subscriptions: -32011 (%s)" % r["error"]["message"])
    c2.close()
    return c


def check_idle_and_close(d, idle):
    """idle_timeout_ms = 300 leaves a subscriber open; push_overflow =
    close closes one that does not read."""
    time.sleep(1.0)
    pub = d.connect("ulen")
    pub.call("pubsub.publish", ["lim", "still here"], 1)
    try:
        m = idle.recv()
    except (EOFError, OSError) as e:
        m = {"closed": str(e)}
    if m.get("params", {}).get("result", {}).get("message") != "still here":
        fail("an idle subscriber: %r" % m)
    else:
        ok("a subscriber outlives idle_timeout_ms = 300 by 1 s")
    slow = d.connect("unl")
    slow.s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
    subscribe(slow, "flood")
    for first in range(0, 4000, 100):
        pub.send([{"jsonrpc": "2.0", "method": "pubsub.publish",
                   "params": ["flood", "y" * 500], "id": first + k}
                  for k in range(100)])
        pub.recv()
    slow.s.settimeout(5)
    closed = False
    try:
        while True:
            slow.recv()
    except (EOFError, ConnectionResetError):
        closed = True
    except socket.timeout:
        pass
    pub.close()
    pub = d.connect("unl")
    stats = pub.call("rpc.stats", [], 2)["result"]["push"]
    if not closed or stats.get("overflow_closed") != 1:
        fail("push_overflow = close: closed %r, counted %r" % (closed, stats))
    else:
        ok("push_overflow = close: the subscriber that did not read was "
           "closed, and counted")
    pub.close()


def check_slow_subscriber(d):
    total = 20000
    slow = d.connect("unl")
    slow.s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
    slow_id = subscribe(slow, "firehose")
    fast = d.connect("ulen")
    fast_id = subscribe(fast, "firehose")
    pub = d.connect("tnl")
    rss0 = d.rss_kib()
    payload = "x" * 1000
    batch = 50
    counts = {"got": 0, "dropped": 0}

    def read_fast():  # the other subscriber reads all along
        while counts["got"] + counts["dropped"] < total:
            try:
                m = fast.recv()
            except (socket.timeout, EOFError, OSError):
                return
            if m["method"] == "rpc.lagged":
                counts["dropped"] += m["params"]["dropped"]
            else:
                counts["got"] += 1

    reader = threading.Thread(target=read_fast)
    reader.start()
    for first in range(0, total, batch):
        pub.send([{"jsonrpc": "2.0", "method": "pubsub.publish",
                   "params": ["firehose", payload], "id": first + k}
                  for k in range(batch)])
        r = pub.recv()
        if len(r) != batch:
            fail("a publish batch answered %r" % r[:1])
    grown = d.rss_kib() - rss0
    if SANITIZED:
        # ASan's quarantine keeps freed blocks (every message is one), so
        # RSS says nothing of what jrpcd holds: the accounting below is
        # still exact.
        print("note: RSS not bounded under a sanitizer (grew %d KiB)" % grown)
    elif grown > 16 * 1024:
        fail("a subscriber that does not read grew jrpcd by %d KiB" % grown)
    else:
        ok("20 MB published at a subscriber that does not read: jrpcd grew "
           "%d KiB" % grown)
    # now the slow one reads: what it got, then its notice, adds up
    got = dropped = 0
    slow.s.settimeout(5)
    while got + dropped < total:
        try:
            m = slow.recv()
        except (socket.timeout, EOFError):
            break
        if m["method"] == "rpc.lagged":
            if m["params"]["subscription"] != slow_id:
                fail("a lag notice for another id: %r" % m)
            dropped += m["params"]["dropped"]
        else:
            got += 1
    if got + dropped != total or dropped == 0:
        fail("the slow subscriber: %d received + %d dropped of %d"
             % (got, dropped, total))
    else:
        ok("the slow subscriber: %d received, then rpc.lagged for %d: "
           "all %d accounted for" % (got, dropped, total))
    reader.join(DEADLINE_S)
    fast_got, fast_dropped = counts["got"], counts["dropped"]
    if fast_got + fast_dropped != total or fast_got < 4 * got:
        fail("the reading subscriber: %d received + %d dropped of %d"
             % (fast_got, fast_dropped, total))
    else:
        ok("the reading subscriber kept receiving: %d of %d (%d dropped, "
           "told)" % (fast_got, total, fast_dropped))
    for c in (slow, fast, pub):
        c.close()
    _ = fast_id


def check_progress(d, name):
    c = d.connect(name)
    for params, token in (({"ms": 80, "progress": "t1"}, "t1"), ([40, 7], 7)):
        c.send({"jsonrpc": "2.0", "method": "sleep.work_ms",
                "params": params, "id": 5})
        got = [c.recv() for _ in range(11)]
        want = [{"jsonrpc": "2.0", "method": "$/progress",
                 "params": {"token": token, "value": {"kind": "report",
                                                      "percentage": p}}}
                for p in range(10, 101, 10)]
        want.append({"jsonrpc": "2.0", "result": params[0] if token == 7
                     else 80, "id": 5})
        if got != want:
            fail("%s: sleep.work_ms with progress sent %r" % (name, got))
            break
    else:
        ok("%s: ten $/progress notifications, in order, then the reply"
           % name)
    c.close()


def check_kv_watch(d, names):
    """kv.watch(prefix): sets and deletes from other connections (on the
    other worker too) arrive as kv.changed {key, value, op}."""
    watchers = []
    for n in names:
        c = d.connect(n)
        r = c.call("kv.watch", {"prefix": "user:"}, 1)
        watchers.append((c, r.get("result")))
    w_all = d.connect("unl")
    all_id = w_all.call("kv.watch", [""], 1).get("result")
    writer = d.connect("tnl")
    writer.call("kv.set", ["user:1", {"n": 1}], 2)
    writer.call("kv.set", ["item:1", 5], 3)
    writer.call("kv.del", ["user:1"], 4)
    writer.call("kv.del", ["user:2"], 5)  # no such key: no change
    changes = [{"key": "user:1", "value": {"n": 1}, "op": "set"},
               {"key": "user:1", "value": None, "op": "del"}]
    for (c, sid), n in zip(watchers, names):
        got = [c.recv() for _ in range(2)]
        want = [{"jsonrpc": "2.0", "method": "kv.changed",
                 "params": {"subscription": sid, "result": ch}}
                for ch in changes]
        if got != want:
            fail("%s: kv.watch got %r" % (n, got))
        r = c.call("kv.unwatch", [sid], 9)
        if r.get("result") is not True:
            fail("%s: kv.unwatch answered %r" % (n, r))
    got = [w_all.recv()["params"]["result"]["key"] for _ in range(3)]
    if got != ["user:1", "item:1", "user:1"]:
        fail("kv.watch(\"\") got %r" % got)
    ok("kv.watch: sets and deletes from another connection reach watchers "
       "of their prefix on %s" % ", ".join(names))
    for c, _ in watchers:
        c.close()
    w_all.close()
    writer.close()
    _ = all_id


def check_discover(d):
    c = d.connect("unl")
    r = c.call("rpc.discover", [], 1)
    c.close()
    m = [m for m in r["result"]["methods"] if m["name"] == "pubsub.subscribe"]
    want = {"unsubscribe": "pubsub.unsubscribe",
            "notification": "pubsub.message"}
    if not m or m[0].get("x-subscription") != want:
        fail("rpc.discover shows pubsub.subscribe as %r" % m)
    else:
        ok("rpc.discover: pubsub.subscribe has x-subscription %r" % want)


def check_reload(d):
    subs = []
    for n in ("unl", "tnl", "ulen"):
        c = d.connect(n)
        subs.append((c, subscribe(c, "r")))
    pub = d.connect("unl")
    # pubsub kept (sleep removed): its subscriptions stay
    d.reload("[plugin pubsub]\npath = pubsub.so\n")
    pub.call("pubsub.publish", ["r", "kept"], 1)
    for c, sid in subs:
        m = c.recv()
        if m.get("params") != {"subscription": sid, "result":
                               {"channel": "r", "message": "kept"}}:
            fail("after a reload keeping pubsub: %r" % m)
    ok("a reload that keeps pubsub keeps its 3 subscriptions")
    # pubsub removed: they end; its unsubscribe method is gone with it
    d.reload("[plugin sleep]\npath = sleep.so\n")
    left = wait_subscriptions(d, 0)
    if left != 0:
        fail("a reload without pubsub left %r subscriptions" % left)
    else:
        ok("a reload that removes pubsub ends its subscriptions")
    c, sid = subs[0]
    r = c.call("pubsub.unsubscribe", [sid], 3)
    if r.get("error", {}).get("code") != -32601:
        fail("pubsub.unsubscribe after pubsub left: %r" % r)
    d.reload("[plugin pubsub]\npath = pubsub.so\n")
    pub.close()
    pub = d.connect("unl")
    pub.call("pubsub.publish", ["r", "back"], 4)
    r = next_is_reply(c, 5)
    if r.get("id") != 5:
        fail("an ended subscription came back: %r" % r)
    # pubsub kept, but [access] no longer lets this client subscribe: its
    # subscriptions end as if it had never been allowed
    sid = subscribe(c, "r", 6)
    d.reload("[plugin pubsub]\npath = pubsub.so\n[access]\n"
             "pubsub.subscribe = uid:4242\n")
    left = wait_subscriptions(d, 0)
    r = c.call("pubsub.subscribe", ["r"], 7)
    if left != 0 or r.get("error", {}).get("code") != -32006:
        fail("[access] denying pubsub.subscribe after a reload: %r "
             "subscriptions left, a new one answered %r" % (left, r))
    else:
        ok("a reload whose [access] denies pubsub.subscribe ends its "
           "subscriptions (and a new one answers -32006)")
    _ = sid
    for c, _ in subs:
        c.close()
    pub.close()


def check_burst(d):
    """Eight threads of a plugin publish at once: each subscriber (on both
    workers) gets every message or is told of it, each thread's in order."""
    threads, each = 8, 2000
    subs = []
    for n in ("unl", "tnl", "ulen", "tcl"):
        c = d.connect(n)
        r = c.call("fxpush.sub", ["b"], 1)
        subs.append((c, r.get("result")))
    caller = d.connect("unl")
    r = caller.call("fxpush.burst", [threads, each], 2)
    if r.get("result") != threads * each:
        fail("fxpush.burst answered %r" % r)
    for c, sid in subs:
        got = dropped = 0
        last = [-1] * threads
        c.s.settimeout(5)
        while got + dropped < threads * each:
            try:
                m = c.recv()
            except (socket.timeout, EOFError):
                break
            p = m["params"]
            if p.get("subscription") != sid:
                fail("a notification for another id: %r" % m)
                break
            if m["method"] == "rpc.lagged":
                dropped += p["dropped"]
                continue
            t, k = p["result"]["t"], p["result"]["k"]
            if k <= last[t]:
                fail("thread %d's message %d after %d" % (t, k, last[t]))
            last[t] = k
            got += 1
        if got + dropped != threads * each:
            fail("8 publishing threads: %d received + %d dropped of %d"
                 % (got, dropped, threads * each))
        else:
            ok("8 publishing threads: %d received, %d dropped and told, each "
               "thread's in order" % (got, dropped))
        c.close()
    caller.close()


def make_cert(tmp):
    if not shutil.which("openssl"):
        return None
    key, pem = os.path.join(tmp, "k.pem"), os.path.join(tmp, "c.pem")
    r = subprocess.run(["openssl", "req", "-x509", "-newkey", "ec",
                        "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes",
                        "-keyout", key, "-out", pem, "-days", "1", "-subj",
                        "/CN=localhost"], capture_output=True)
    return (pem, key) if r.returncode == 0 else None


def main():
    if len(sys.argv) not in (5, 6):
        sys.exit("usage: push.py JRPCD HANDLERS_DIR FIXTURE_DIR REPO_ROOT "
                 "[burst]")
    only_burst = sys.argv[5:] == ["burst"]
    global FX, SANITIZED
    jrpcd, handlers = sys.argv[1], sys.argv[2]
    with open(jrpcd, "rb") as f:
        SANITIZED = any(s in f.read() for s in (b"__asan_init", b"__tsan_init"))
    FX = os.path.abspath(sys.argv[3])
    tmp = tempfile.mkdtemp(prefix="jrpcd-push.")
    has_tls = b"TLS: OpenSSL" in subprocess.run(
        [jrpcd, "--version"], capture_output=True).stdout
    tls = make_cert(tmp) if has_tls else None
    d = Daemon(jrpcd, handlers, tmp,
               "max_push_bytes = 65536\nmax_subscriptions_per_connection = 8",
               tls)
    if only_burst:
        try:
            check_burst(d)
        finally:
            d.stop()
        shutil.rmtree(tmp, ignore_errors=True)
        sys.exit("push.py: %d check(s) failed" % FAILURES if FAILURES else 0)
    try:
        names = ["unl", "ulen", "tnl", "tcl"] + (["ttls"] if tls else [])
        if not tls:
            print("note: no TLS listener (a build without TLS, or no "
                  "openssl command)")
        check_fanout(d, names)
        check_discover(d)
        check_kv_watch(d, names)
        for n in names:
            check_progress(d, n)
        check_close_ends(d)
        check_http_refused(d)
        check_storm(d)
        check_disconnects(d, names)
        check_metrics(d)
        check_burst(d)
        check_slow_subscriber(d)
        check_reload(d)
    finally:
        d.stop()
    d2 = Daemon(jrpcd, handlers, tmp + "/",
                "max_subscriptions_per_connection = 4\nmax_subscriptions = 6\n"
                "idle_timeout_ms = 300\npush_overflow = close\n"
                "max_push_bytes = 4096")
    try:
        idle = check_limits(d2)
        check_idle_and_close(d2, idle)
    finally:
        d2.stop()
    shutil.rmtree(tmp, ignore_errors=True)
    if FAILURES:
        sys.exit("push.py: %d check(s) failed" % FAILURES)


if __name__ == "__main__":
    main()
