#!/usr/bin/env bash
# tls.sh JRPCD HANDLERS_DIR FIXTURE_DIR REPO_ROOT
#
# TLS on TCP listeners (tls_cert, tls_key, tls_client_ca). Keys and
# certificates are made here with the openssl command, never committed: a
# CA, the server's, clients alice (CN), bob (a DNS SAN), dave (neither in
# `peers`), one from another CA and an expired one. Both framings over TLS
# (socat's OPENSSL client as the README shows it, and a python3 ssl client
# for length framing); mutual TLS with and without a client certificate;
# plain bytes to a TLS port and a TLS client on a plain port; a handshake
# that never finishes; a client gone mid-record; cert: and san: peers; a
# SIGHUP with a new certificate and one with a broken key. Each failure
# closes the connection with a log line and the daemon keeps serving.
set -euo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
# shellcheck source-path=SCRIPTDIR source=lib.sh
source "$here/lib.sh"

cli_args "$@"

# mkcert NAME CN SERIAL [SAN [CA]]: NAME.key and NAME.pem signed by CA
# (default ca), valid for two days.
mkcert() {
  local name=$1 cn=$2 serial=$3 san=${4:-} ca=${5:-ca}
  openssl req -new -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes \
    -keyout "$T/$name.key" -out "$T/$name.csr" -subj "/CN=$cn" 2>/dev/null
  if [[ -n "$san" ]]; then
    printf 'subjectAltName=%s\n' "$san" >"$T/$name.ext"
  else
    : >"$T/$name.ext"
  fi
  openssl x509 -req -in "$T/$name.csr" -CA "$T/$ca.pem" -CAkey "$T/$ca.key" \
    -set_serial "$serial" -days 2 -extfile "$T/$name.ext" \
    -out "$T/$name.pem" 2>/dev/null
}

mkca() { # NAME CN
  openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes \
    -keyout "$T/$1.key" -out "$T/$1.pem" -days 2 -subj "/CN=$2" 2>/dev/null
}

# An expired client certificate: `openssl ca` takes explicit dates.
mkexpired() {
  mkdir -p "$T/ca.db"
  : >"$T/ca.db/index.txt"
  echo 4001 >"$T/ca.db/serial"
  cat >"$T/ca.cnf" <<CNF
[ca]
default_ca = d
[d]
database = $T/ca.db/index.txt
new_certs_dir = $T/ca.db
serial = $T/ca.db/serial
default_md = sha256
policy = p
[p]
commonName = supplied
CNF
  openssl req -new -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes \
    -keyout "$T/old.key" -out "$T/old.csr" -subj "/CN=alice" 2>/dev/null
  openssl ca -batch -config "$T/ca.cnf" -cert "$T/ca.pem" -keyfile "$T/ca.key" \
    -in "$T/old.csr" -out "$T/old.pem" -notext \
    -startdate 20200101000000Z -enddate 20200102000000Z 2>/dev/null
}

# The python3 client: MODE PORT ...; prints the reply or "closed".
write_client() {
  cat >"$T/client.py" <<'PY'
import socket, ssl, struct, sys

mode, port = sys.argv[1], int(sys.argv[2])
ca = sys.argv[3] if len(sys.argv) > 3 else None
cert = sys.argv[4] if len(sys.argv) > 4 else None
REQ = b'{"jsonrpc":"2.0","method":"math.add","params":[1,2],"id":1}'

def ctx():
    c = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
    c.load_verify_locations(ca)
    if cert:
        c.load_cert_chain(cert + ".pem", cert + ".key")
    return c

def recv_all(s, n):
    got = b""
    while len(got) < n:
        b = s.recv(n - len(got))
        if not b:
            break
        got += b
    return got

raw = socket.create_connection(("127.0.0.1", port), timeout=10)
try:
    if mode == "length":  # length framing: two calls, one connection
        s = ctx().wrap_socket(raw, server_hostname="127.0.0.1")
        out = []
        for _ in range(2):
            s.sendall(struct.pack(">I", len(REQ)) + REQ)
            (n,) = struct.unpack(">I", recv_all(s, 4))
            out.append(recv_all(s, n).decode())
        print("\n".join(out))
    elif mode == "newline":  # a call; the reply, or how it ended
        try:
            s = ctx().wrap_socket(raw, server_hostname="127.0.0.1")
            s.sendall(REQ + b"\n")
            got = s.recv(4096)
            print(got.decode().strip() if got else "closed")
        except (ssl.SSLError, OSError) as e:
            print("closed", e)
    elif mode == "bulk":  # 6 MB of replies to a small window, read late
        import threading, time
        raw.close()
        raw = socket.socket()
        raw.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 8192)
        raw.settimeout(20)
        raw.connect(("127.0.0.1", port))
        s = ctx().wrap_socket(raw, server_hostname="127.0.0.1")
        blob = b"x" * 150000
        def send():
            for i in range(40):
                s.sendall(b'{"jsonrpc":"2.0","method":"echo","params":["%s"],"id":%d}\n'
                          % (blob, i))
        t = threading.Thread(target=send)
        t.start()
        time.sleep(1)
        buf, lines = b"", []
        while len(lines) < 40:
            b = s.recv(65536)
            if not b:
                break
            buf += b
            *done, buf = buf.split(b"\n")
            lines += done
        t.join()
        ok = sum(1 for i, l in enumerate(lines)
                 if l == b'{"jsonrpc":"2.0","result":["%s"],"id":%d}' % (blob, i))
        print("%d of 40 whole" % ok)
    elif mode == "held":  # 3 deferred calls, 3 records, one write
        s = ctx().wrap_socket(raw, server_hostname="127.0.0.1")
        for i in range(3):  # a record each
            s.sendall(b'{"jsonrpc":"2.0","method":"sleep.ms","params":[50],'
                      b'"id":%d}\n' % i)
        buf = b""
        while buf.count(b"\n") < 3:
            b = s.recv(4096)
            if not b:
                break
            buf += b
        print(buf.decode().strip().replace("\n", " "))
    elif mode == "partial":  # half a request line, then nothing
        s = ctx().wrap_socket(raw, server_hostname="127.0.0.1")
        s.sendall(REQ[:20])
        got = b""
        while True:
            b = s.recv(4096)
            if not b:
                break
            got += b
        print(got.decode().strip(), "closed")
    elif mode == "stall":  # half a ClientHello, then nothing
        raw.sendall(b"\x16\x03\x01\x02\x00\x01\x00\x01\xfc\x03\x03")
        got = raw.recv(4096)
        print("closed" if not got else "got %d bytes" % len(got))
    elif mode == "midrecord":  # a handshake, half a record, then FIN
        inc, outg = ssl.MemoryBIO(), ssl.MemoryBIO()
        o = ctx().wrap_bio(inc, outg, server_hostname="127.0.0.1")
        while True:
            try:
                o.do_handshake()
                break
            except ssl.SSLWantReadError:
                raw.sendall(outg.read())
                b = raw.recv(65536)
                if not b:
                    print("closed in handshake")
                    sys.exit(0)
                inc.write(b)
        raw.sendall(outg.read())
        o.write(REQ + b"\n")
        rec = outg.read()
        raw.sendall(rec[: len(rec) // 2])
        raw.shutdown(socket.SHUT_WR)
        while raw.recv(65536):
            pass
        print("closed")
finally:
    raw.close()
PY
}

# The admission client (issue 21, point 3): MODE and its arguments; what
# it prints is matched in admission().
write_adm_client() {
  cat >"$T/adm.py" <<'PY'
import os, socket, ssl, sys, time

ca = os.environ["CA"]
REQ = b'{"jsonrpc":"2.0","method":"math.add","params":[1,2],"id":1}\n'

def conn(port, src="127.0.0.1", path=None):
    if path:
        s = socket.socket(socket.AF_UNIX)
        s.settimeout(5)
        s.connect(path)
        return s
    return socket.create_connection(("127.0.0.1", port), timeout=5,
                                    source_address=(src, 0))

def closed_soon(s, secs):
    # True when the server closes s (EOF or reset) within secs.
    s.settimeout(secs)
    try:
        return s.recv(4096) == b""
    except ConnectionResetError:
        return True
    except socket.timeout:
        return False

def tls(s, cert=None):
    c = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
    c.load_verify_locations(ca)
    if cert:
        c.load_cert_chain(cert + ".pem", cert + ".key")
    return c.wrap_socket(s, server_hostname="127.0.0.1")

def call(s):
    # The reply to one call, or "closed".
    try:
        s.sendall(REQ)
        got = s.recv(4096)
        return got.decode().strip() if got else "closed"
    except (OSError, ssl.SSLError):
        return "closed"

def held(port, src, n, secure):
    # n connections from src, each served a call: admitted and counted.
    out = []
    for _ in range(n):
        s = conn(port, src)
        if secure:
            s = tls(s)
        r = call(s)
        if r == "closed":
            print("held connection refused")
        out.append(s)
    return out

mode = sys.argv[1]
if mode == "lockout":  # TLSPORT PLAINPORT N: N silent from 127.0.0.9
    tport, pport, n = int(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4])
    silent = []
    for _ in range(n):
        try:
            silent.append(conn(tport, "127.0.0.9"))
        except OSError:
            break
    time.sleep(0.3)
    try:
        print("plain:", call(conn(pport)))
    except OSError as e:
        print("plain: refused", e)
    print("closed %d of %d" % (sum(closed_soon(s, 2) for s in silent), n))
elif mode == "silent":  # PORT: a connection that sends nothing
    s = conn(int(sys.argv[2]))
    print("silent", "closed" if closed_soon(s, 1) else "held")
elif mode == "hscap":  # PORT N: N silent handshakes, then one more
    port, n = int(sys.argv[2]), int(sys.argv[3])
    silent = [conn(port, "127.0.0.%d" % (20 + i)) for i in range(n)]
    time.sleep(0.2)
    extra = conn(port, "127.0.0.%d" % (20 + n))
    print("extra", "closed" if closed_soon(extra, 1) else "held")
    print("open %d of %d" % (sum(not closed_soon(s, 0.05) for s in silent), n))
    for s in silent:
        s.close()
    time.sleep(0.2)
    print("after:", call(tls(conn(port), os.environ["ALICE"])))
elif mode == "apart":  # PORT tls|plain LIMIT: A at its limit, then B
    port, secure, limit = int(sys.argv[2]), sys.argv[3] == "tls", int(sys.argv[4])
    a = held(port, "127.0.0.2", limit, secure)
    extra = conn(port, "127.0.0.2")
    print("A over:", "closed" if closed_soon(extra, 1) else "held")
    b = conn(port, "127.0.0.3")
    print("B:", call(tls(b) if secure else b))
    print("A still:", " ".join(call(s) for s in a).count('"result":3'))
elif mode == "uids":  # SOCKET LIMIT: root at its limit, then uid 65534
    path, limit = sys.argv[2], int(sys.argv[3])
    a = [conn(0, path=path) for _ in range(limit)]
    print("root:", sum(call(s) != "closed" for s in a))
    print("root over:", "closed" if closed_soon(conn(0, path=path), 1) else "held")
    r, w = os.pipe()
    pid = os.fork()
    if pid == 0:
        os.close(r)
        os.setgid(65534)
        os.setuid(65534)
        os.write(w, call(conn(0, path=path)).encode())
        os._exit(0)
    os.close(w)
    got = os.read(r, 4096).decode()
    os.waitpid(pid, 0)
    print("nobody:", got)
    print("root still:", sum('"result":3' in call(s) for s in a))
PY
}

# pycall MODE PORT [CERT]: the python client against our CA.
pycall() {
  timeout 20 /usr/bin/python3 "$T/client.py" "$1" "$2" "$T/ca.pem" ${3:+"$T/$3"} 2>&1 || true
}

# socat_call PORT [CERT]: one newline-framed call with socat's OPENSSL
# client, as the README shows it.
socat_call() {
  local opts="cafile=$T/ca.pem"
  [[ -n "${2:-}" ]] && opts+=",cert=$T/$2.pem,key=$T/$2.key"
  printf '%s\n' "$ADD" | timeout 10 socat -t 5 - "OPENSSL:127.0.0.1:$1,$opts" 2>&1 || true
}

# logged NAME TEXT: the daemon's log gets TEXT within a few seconds.
logged() {
  local i
  for ((i = 0; i < 100; i++)); do
    grep -qF -- "$2" "$T/tls.err" && { pass "$1"; return 0; }
    sleep 0.05
  done
  fail "$1: the log lacks \"$2\""
  show "$T/tls.err"
}

expect_reply() { # NAME GOT
  if [[ "$2" == "$THREE" ]]; then pass "$1"; else fail "$1: expected the reply, got: $2"; fi
}

expect_closed() { # NAME GOT
  if [[ "$2" == closed* || -z "$2" ]] && [[ "$2" != *'"result"'* ]]; then
    pass "$1"
  else
    fail "$1: expected a closed connection, got: $2"
  fi
}

# serial PORT: the serial of the certificate the server shows now.
serial() {
  timeout 10 openssl s_client -connect "127.0.0.1:$1" -CAfile "$T/ca.pem" \
    </dev/null 2>/dev/null | openssl x509 -noout -serial 2>/dev/null || true
}

# expect_serial NAME PORT WANT: the server shows the certificate WANT
# ("serial=07D2").
expect_serial() {
  local got
  got=$(serial "$2")
  if [[ "$got" == "$3" ]]; then
    pass "$1"
  else
    fail "$1: expected $3, got: $got"
  fi
}

# reloads: how many reloads the log has.
reloads() { grep -c "reloaded" "$T/tls.err" || true; }

hup() { # waits for the next "reloaded"
  local before i
  before=$(reloads)
  kill -HUP "$PID"
  for ((i = 0; i < 100; i++)); do
    (($(reloads) > before)) && return 0
    sleep 0.05
  done
  fail "no reload logged after SIGHUP"
}

# A build with -DJRPC_TLS=OFF: each tls_ key is refused, saying why.
without_tls() {
  printf '[listen t]\ntcp = 127.0.0.1:1\ntls_key = /k.pem\ntls_cert = /c.pem\n' >"$T/off.conf"
  run_jrpcd off -t -c "$T/off.conf"
  if expect_rc off 1; then
    expect_in off err "off.conf:3: [listen t] tls_key: needs a build with TLS (-DJRPC_TLS=ON)" || true
  fi
  finish
}

# free_ports VAR...: a free port in each.
free_ports() {
  local v
  for v; do printf -v "$v" '%s' "$(free_port)"; done
}

# mkchain: carol1 (one intermediate CA, int1) and carol2 (two: int1 and
# int2 under it), each .pem holding the client's chain as a client sends it.
mkchain() {
  printf 'basicConstraints=critical,CA:TRUE\nkeyUsage=keyCertSign,cRLSign\n' >"$T/int.ext"
  local name issuer serial=5001
  for name in int1 int2; do
    issuer=$([[ $name == int1 ]] && echo ca || echo int1)
    openssl req -new -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes \
      -keyout "$T/$name.key" -out "$T/$name.csr" -subj "/CN=$name" 2>/dev/null
    openssl x509 -req -in "$T/$name.csr" -CA "$T/$issuer.pem" -CAkey "$T/$issuer.key" \
      -set_serial $((serial++)) -days 2 -extfile "$T/int.ext" -out "$T/$name.pem" 2>/dev/null
  done
  mkcert carol1 carol 5101 "" int1
  mkcert carol2 carol 5102 "" int2
  cat "$T/int1.pem" >>"$T/carol1.pem"
  cat "$T/int2.pem" "$T/int1.pem" >>"$T/carol2.pem"
}

# s_client PORT ARGS...: openssl s_client against our CA, sending a call to
# fx.peer; its whole output.
s_client() {
  local port=$1
  shift
  (printf '%s\n' '{"jsonrpc":"2.0","method":"fx.peer","id":1}'; sleep 0.5) |
    timeout 10 openssl s_client -connect "127.0.0.1:$port" -CAfile "$T/ca.pem" \
      "$@" 2>&1 || true
}

# resumes NAME PORT CERT ARGS...: a session saved from one connection
# resumes on the next ("Reused"), and the resumed connection is let in by
# the certificate's identity and shows it to the handler.
resumes() {
  local name=$1 port=$2 cert=$3 first again
  shift 3
  rm -f "$T/sess"
  first=$(s_client "$port" -cert "$T/$cert.pem" -key "$T/$cert.key" -sess_out "$T/sess" "$@")
  again=$(s_client "$port" -cert "$T/$cert.pem" -key "$T/$cert.key" -sess_in "$T/sess" "$@")
  if [[ "$first" == *'"result"'* && "$again" == *"Reused, TLSv1."* &&
    "$again" == *'"cert_cn":"'"$cert"'"'* ]]; then
    pass "$name: resumed, and the handler sees cert_cn $cert"
  else
    fail "$name: expected a resumed session with cert_cn $cert; first: $(grep -E 'result|error|New|Reused' <<<"$first"); again: $(grep -E 'result|error|New|Reused' <<<"$again")"
  fi
}

# refused_version NAME PORT FLAG: a client of that old version gets no
# session, even with OpenSSL's security level lowered on its side.
refused_version() {
  local got
  got=$(timeout 10 openssl s_client "$3" -cipher 'DEFAULT:@SECLEVEL=0' \
    -connect "127.0.0.1:$2" -CAfile "$T/ca.pem" </dev/null 2>&1 || true)
  if [[ "$got" == *"Cipher is (NONE)"* && "$got" != *"New, TLSv1"* ]]; then
    pass "$1"
  else
    fail "$1: $(grep -E 'New,|Protocol|alert' <<<"$got")"
  fi
}

# Issue 21, point 4: resumption keeps the identity, old versions and
# suites are refused by default, a client chain is verified to a bound.
resumption_and_suites() { # PN PM PLOW PDEEP
  local pn=$1 pm=$2 plow=$3 pdeep=$4 got
  resumes "TLS 1.3 ticket, mutual TLS, cert:alice" "$pm" alice
  resumes "TLS 1.2 ticket, mutual TLS" "$pm" alice -tls1_2
  resumes "TLS 1.2 session id, mutual TLS" "$pm" alice -tls1_2 -no_ticket
  # bob is let in by san:bob.example: his SANs survive resumption too.
  rm -f "$T/sess"
  s_client "$pm" -cert "$T/bob.pem" -key "$T/bob.key" -sess_out "$T/sess" >/dev/null
  got=$(s_client "$pm" -cert "$T/bob.pem" -key "$T/bob.key" -sess_in "$T/sess")
  if [[ "$got" == *"Reused, TLSv1."* && "$got" == *'"cert_cn":"bob"'* ]]; then
    pass "resumed: bob still let in by san:bob.example"
  else
    fail "resumed with san:bob.example: $(grep -E 'result|error|New|Reused' <<<"$got")"
  fi
  got=$(s_client "$pn" -sess_out "$T/sess0")
  got=$(s_client "$pn" -sess_in "$T/sess0")
  if [[ "$got" == *"Reused, TLSv1.3"* ]]; then
    pass "resumed on a TLS listener without client certificates"
  else
    fail "no resumption without client certificates: $(grep -E 'New|Reused' <<<"$got")"
  fi

  refused_version "TLS 1.0 refused by default" "$pn" -tls1
  refused_version "TLS 1.1 refused by default" "$pn" -tls1_1
  refused_version "TLS 1.0 refused with tls_ciphers at @SECLEVEL=0" "$plow" -tls1
  refused_version "TLS 1.1 refused with tls_ciphers at @SECLEVEL=0" "$plow" -tls1_1
  got=$(s_client "$plow" -tls1_2 -cipher 'ECDHE-ECDSA-AES128-SHA:@SECLEVEL=0')
  # (s_client names the version a suite came with: TLSv1.0 for this one.)
  if [[ "$got" == *"Cipher is ECDHE-ECDSA-AES128-SHA"* && "$got" == *"Protocol  : TLSv1.2"* ]]; then
    pass "tls_ciphers overrides the default suites (a CBC suite when asked)"
  else
    fail "tls_ciphers = DEFAULT:@SECLEVEL=0: no CBC suite: $(grep -E 'New,|alert' <<<"$got")"
  fi
  local suite
  for suite in ECDHE-ECDSA-AES128-SHA ECDHE-ECDSA-AES256-SHA384 AES128-GCM-SHA256; do
    got=$(s_client "$pn" -tls1_2 -cipher "$suite:@SECLEVEL=0")
    if [[ "$got" == *"Cipher is (NONE)"* ]]; then
      pass "default TLS 1.2 suites: $suite refused"
    else
      fail "default TLS 1.2 suites let $suite in: $(grep -E 'New,' <<<"$got")"
    fi
  done
  got=$(s_client "$pn" -tls1_2)
  if [[ "$got" == *"New, TLSv1.2, Cipher is ECDHE-ECDSA-"*"-GCM-SHA"* ||
    "$got" == *"New, TLSv1.2, Cipher is ECDHE-ECDSA-CHACHA20-POLY1305"* ]]; then
    pass "default TLS 1.2 suite: ECDHE with an AEAD"
  else
    fail "default TLS 1.2 suite: $(grep -E 'New,' <<<"$got")"
  fi

  # verify_depth = 1 on the deep port: one intermediate CA, not two.
  expect_reply "verify_depth = 1: a chain with one intermediate" "$(pycall newline "$pdeep" carol1)"
  expect_closed "verify_depth = 1: a chain with two intermediates" "$(pycall newline "$pdeep" carol2)"
  logged "too long a chain: logged" "client certificate: certificate chain too long"
}

# Issue 21, point 3: peers and per-peer limits decide at accept on TLS
# listeners, handshakes in progress are bounded, and peers count apart.
admission() {
  local pg pc po pq pz got
  free_ports pg pc po pq pz
  cat >"$T/adm.conf" <<CONF
$(conf_server)
frame_timeout_ms = 3000
max_connections = 40
max_connections_per_peer = 3
[listen local]
unix = $T/adm.sock
mode = 0666
[listen guarded]
tcp = 127.0.0.1:$pg
tls_cert = $T/server.pem
tls_key = $T/server.key
peers = 10.0.0.0/8
[listen certs]
tcp = 127.0.0.1:$pc
tls_cert = $T/server.pem
tls_key = $T/server.key
tls_client_ca = $T/ca.pem
peers = cert:alice
max_handshakes = 3
[listen nocacert]
tcp = 127.0.0.1:$pz
tls_cert = $T/server.pem
tls_key = $T/server.key
peers = cert:alice
[listen open]
tcp = 127.0.0.1:$po
tls_cert = $T/server.pem
tls_key = $T/server.key
[listen plain]
tcp = 127.0.0.1:$pq
$(conf_plugins math)
CONF
  write_adm_client
  start_daemon tls "$T/adm.conf" "$T/adm.sock"
  adm() { CA="$T/ca.pem" ALICE="$T/alice" timeout 30 /usr/bin/python3 "$T/adm.py" "$@" 2>&1 || true; }

  # 100 silent connections from outside `peers` on a TLS port: each is
  # closed at accept, and a plain port still serves (max_connections 40).
  got=$(adm lockout "$pg" "$pq" 100)
  if [[ "$got" == *"plain: $THREE"* ]]; then
    pass "100 silent TLS connections from outside peers: a plain port still serves"
  else
    fail "silent TLS connections from outside peers locked others out: $got"
  fi
  if [[ "$got" == *"closed 100 of 100"* ]]; then
    pass "... and each was closed before its handshake"
  else
    fail "silent TLS connections from outside peers were held: $got"
  fi
  logged "outside peers on TLS: logged at accept" "127.0.0.9"

  # cert: peers can be judged only after the handshake: max_handshakes.
  got=$(adm hscap "$pc" 3)
  if [[ "$got" == *"extra closed"* && "$got" == *"open 3 of 3"* ]]; then
    pass "max_handshakes = 3: a fourth handshake is closed at once"
  else
    fail "max_handshakes = 3: $got"
  fi
  logged "max_handshakes: logged" "3 TLS handshakes in progress, max_handshakes"
  if [[ "$got" == *"after: $THREE"* ]]; then
    pass "max_handshakes: places come back when handshakes end"
  else
    fail "max_handshakes: alice not served after the stalled handshakes left: $got"
  fi

  # cert: peers where no client certificate is asked for (no
  # tls_client_ca) can never match: judged at accept, no handshake.
  got=$(adm silent "$pz")
  if [[ "$got" == "silent closed" ]]; then
    pass "cert: peers without tls_client_ca: closed at accept"
  else
    fail "cert: peers without tls_client_ca: a silent connection was $got"
  fi

  # max_connections_per_peer = 3: while 127.0.0.2 holds three, its fourth
  # is closed at accept and 127.0.0.3 is served.
  local kind port
  for kind in tls plain; do
    port=$([[ $kind == tls ]] && echo "$po" || echo "$pq")
    got=$(adm apart "$port" "$kind" 3)
    if [[ "$got" == *"A over: closed"* && "$got" == *"B: $THREE"* &&
      "$got" == *"A still: 3"* && "$got" != *"held connection refused"* ]]; then
      pass "per-peer limit on $kind: two addresses counted apart while both hold"
    else
      fail "per-peer limit on $kind: $got"
    fi
  done
  if ((EUID == 0)); then
    chmod o+x "$T"
    got=$(adm uids "$T/adm.sock" 3)
    if [[ "$got" == *"root: 3"* && "$got" == *"root over: closed"* &&
      "$got" == *"nobody: $THREE"* && "$got" == *"root still: 3"* ]]; then
      pass "per-peer limit on a Unix socket: two uids counted apart while both hold"
    else
      fail "per-peer limit by uid: $got"
    fi
  else
    echo "skip: two uids on a Unix socket need root"
  fi
  stop_daemon tls "$PID" "$T/adm.sock"
}

main() {
  need_cmd openssl
  need_cmd socat
  [[ -x /usr/bin/python3 ]] || die "/usr/bin/python3 is required"
  setup_tmp
  if "$JRPCD" -V | grep -q "^TLS: no (built with -DJRPC_TLS=OFF)$"; then
    without_tls
    return
  fi
  mkca ca test-ca
  mkca other other-ca
  mkcert server localhost 1001 "IP:127.0.0.1,DNS:localhost"
  mkcert server2 localhost 2002 "IP:127.0.0.1,DNS:localhost"
  mkcert alice alice 3001
  mkcert bob bob 3002 "DNS:bob.example"
  mkcert dave dave 3003 "DNS:dave.example"
  mkcert stranger alice 3004 "" other
  mkexpired
  mkchain
  cp "$T/server.pem" "$T/live.pem"
  cp "$T/server.key" "$T/live.key"
  write_client
  local pn pl pm pp plow pdeep
  free_ports pn pl pm pp plow pdeep
  cat >"$T/tls.conf" <<CONF
$(conf_server)
frame_timeout_ms = 1000
max_pending_calls = 1
[listen local]
unix = $T/local.sock
[listen tls]
tcp = 127.0.0.1:$pn
tls_cert = $T/live.pem
tls_key = $T/live.key
[listen tls-length]
tcp = 127.0.0.1:$pl
framing = length
tls_cert = $T/server.pem
tls_key = $T/server.key
tls_min_version = 1.3
[listen mtls]
tcp = 127.0.0.1:$pm
tls_cert = $T/server.pem
tls_key = $T/server.key
tls_client_ca = $T/ca.pem
peers = cert:alice san:bob.example
[listen plain]
tcp = 127.0.0.1:$pp
[listen low]
tcp = 127.0.0.1:$plow
tls_cert = $T/server.pem
tls_key = $T/server.key
tls_ciphers = DEFAULT:@SECLEVEL=0
[listen deep]
tcp = 127.0.0.1:$pdeep
tls_cert = $T/server.pem
tls_key = $T/server.key
tls_client_ca = $T/ca.pem
verify_depth = 1
$(conf_plugins math echo sleep)
[plugin peer]
path = $FX/fx_peer.so
CONF
  run_jrpcd version -V
  if expect_rc version 0; then
    expect_in version out "TLS: OpenSSL 3." || true
  fi
  run_jrpcd check -t -c "$T/tls.conf"
  if expect_rc check 0; then
    expect_in check out "listen mtls: tcp:127.0.0.1:$pm, newline framing, TLS (certificate valid until" || true
    expect_in check out "listen plain: tcp:127.0.0.1:$pp, newline framing
" || true
  fi
  start_daemon tls "$T/tls.conf" "$T/local.sock"

  expect_reply "socat OPENSSL, newline framing" "$(socat_call "$pn")"
  local got
  got=$(pycall length "$pl")
  if [[ "$got" == "$THREE"$'\n'"$THREE" ]]; then
    pass "python ssl, length framing, two calls"
  else
    fail "length framing over TLS: got: $got"
  fi
  expect_reply "python ssl, newline framing" "$(pycall newline "$pn")"
  # jrpc's own TLS client: --cafile, --cert, --key.
  local jrpc
  jrpc=$(dirname "$JRPCD")/../cli/jrpc
  if [[ -x "$jrpc" ]]; then
    got=$("$jrpc" -t "127.0.0.1:$pm" --cafile "$T/ca.pem" --cert "$T/alice.pem" \
      --key "$T/alice.key" --compact math.add 1 2 2>&1) || true
    if [[ "$got" == 3 ]]; then
      pass "jrpc over mutual TLS"
    else
      fail "jrpc over mutual TLS: $got"
    fi
    got=$("$jrpc" -t "127.0.0.1:$pl" -f length --cafile "$T/ca.pem" \
      --compact math.add 2 2 2>&1) || true
    if [[ "$got" == 4 ]]; then
      pass "jrpc over TLS, length framing"
    else
      fail "jrpc over TLS, length framing: $got"
    fi
    local rc=0
    got=$("$jrpc" -t "127.0.0.1:$pn" --cafile "$T/other.pem" math.add 1 2 2>&1) || rc=$?
    if ((rc == 2)) && [[ "$got" == *"TLS handshake: unable to get local issuer certificate"* ]]; then
      pass "jrpc refuses a server its --cafile does not vouch for (exit 2)"
    else
      fail "jrpc with another CA: exit $rc: $got"
    fi
    rc=0
    got=$("$jrpc" -t "127.0.0.1:$pm" --cafile "$T/ca.pem" math.add 1 2 2>&1) || rc=$?
    if ((rc == 2)); then
      pass "jrpc without a client certificate to a mutual-TLS port: exit 2"
    else
      fail "jrpc, no client certificate, mutual TLS: exit $rc: $got"
    fi
  else
    fail "no jrpc at $jrpc"
  fi

  # What a handler sees (jrpc_peer, ABI 1.2): TLS, and the verified CN.
  got=$(printf '%s\n' '{"jsonrpc":"2.0","method":"fx.peer","id":1}' |
    timeout 10 socat -t 5 - \
      "OPENSSL:127.0.0.1:$pm,cafile=$T/ca.pem,cert=$T/alice.pem,key=$T/alice.key" 2>&1) || true
  if [[ "$got" == *'"transport":"tls"'*'"cert_cn":"alice"'* ]]; then
    pass "jrpc_peer over mutual TLS: transport tls, cert_cn alice"
  else
    fail "jrpc_peer over mutual TLS: $got"
  fi
  got=$(printf '%s\n' '{"jsonrpc":"2.0","method":"fx.peer","id":1}' |
    timeout 10 socat -t 5 - "OPENSSL:127.0.0.1:$pn,cafile=$T/ca.pem" 2>&1) || true
  if [[ "$got" == *'"transport":"tls"'*'"cert_cn":""'* ]]; then
    pass "jrpc_peer over TLS without a client certificate: no cert_cn"
  else
    fail "jrpc_peer over TLS, no client certificate: $got"
  fi
  # More output than the socket and output_high_water take: written in
  # pieces, reading paused and resumed, every reply whole and in order.
  got=$(pycall bulk "$pn")
  if [[ "$got" == "40 of 40 whole" ]]; then
    pass "6 MB of replies to a client that reads late"
  else
    fail "6 MB of replies over TLS: $got"
  fi

  # docs/security.md's command, as written there, against this daemon's mTLS
  # port, with its files named as docs/security.md names them.
  local cmd
  cmd=$(sed -n '/<!-- tls-example/,/<!-- \/tls-example/{s/^\$ //p}' "$ROOT/docs/security.md")
  if [[ "$cmd" == *"socat - OPENSSL:127.0.0.1:7443,cafile=ca.pem,cert=client.pem,key=client.key" ]]; then
    cp "$T/alice.pem" "$T/client.pem"
    cp "$T/alice.key" "$T/client.key"
    got=$(
      cd "$T" || exit
      timeout 10 bash -c "${cmd//7443/$pm}" 2>&1 || true
    )
    expect_reply "the README's socat OPENSSL command" "$got"
  else
    fail "docs/security.md: no tls-example socat command found (got: $cmd)"
  fi

  # Mutual TLS and cert:/san: peers.
  expect_reply "mTLS: alice by cert:alice (socat)" "$(socat_call "$pm" alice)"
  expect_reply "mTLS: bob by san:bob.example" "$(pycall newline "$pm" bob)"
  expect_closed "mTLS: dave is not among the peers" "$(pycall newline "$pm" dave)"
  logged "dave's refusal is logged" "is not among its peers"
  expect_closed "mTLS: no client certificate" "$(pycall newline "$pm")"
  logged "no certificate: logged" "TLS: handshake"
  expect_closed "mTLS: another CA's certificate" "$(pycall newline "$pm" stranger)"
  logged "another CA: logged" "client certificate: unable to get local issuer certificate"
  expect_closed "mTLS: an expired certificate" "$(pycall newline "$pm" old)"
  logged "expired: logged" "client certificate: certificate has expired"

  # max_pending_calls = 1: the second and third calls wait, decrypted or
  # not, until the first is answered; reading then goes on from what the
  # session holds, with nothing more coming from the socket.
  got=$(pycall held "$pn")
  if [[ "$got" == '{"jsonrpc":"2.0","result":50,"id":0} {"jsonrpc":"2.0","result":50,"id":1} {"jsonrpc":"2.0","result":50,"id":2}' ]]; then
    pass "deferred calls over max_pending_calls: all three answered"
  else
    fail "three deferred calls over TLS, max_pending_calls = 1: got: $got"
  fi

  # tls_min_version = 1.3 on the length-framed port: a TLS 1.2 client is
  # turned away in the handshake.
  got=$(timeout 10 openssl s_client -tls1_2 -connect "127.0.0.1:$pl" \
    -CAfile "$T/ca.pem" </dev/null 2>&1 || true)
  if [[ "$got" != *"New, TLSv1.2, Cipher is"* && "$got" == *"Cipher is (NONE)"* ]]; then
    pass "tls_min_version = 1.3: no TLS 1.2 session"
  else
    fail "tls_min_version = 1.3 let a TLS 1.2 client in"
  fi
  logged "TLS 1.2 client on a 1.3 port: logged" "TLS: handshake: unsupported protocol"

  # frame_timeout_ms holds over TLS as on plain connections.
  got=$(pycall partial "$pn")
  if [[ "$got" == *'"code":-32009'*closed ]]; then
    pass "a frame incomplete over TLS: -32009, then closed"
  else
    fail "a frame incomplete over TLS: expected -32009 and a close, got: $got"
  fi

  # Wrong protocol on either side.
  got=$(printf '%s\n' "$ADD" | timeout 10 socat -t 5 - "TCP:127.0.0.1:$pn" 2>&1 || true)
  expect_closed "plain bytes to a TLS port" "$got"
  logged "plain bytes: logged" "TLS: handshake: "
  got=$(socat_call "$pp")
  if [[ "$got" != *'"result"'* && "$got" != *'"error"'* ]]; then
    pass "a TLS client on a plain port: closed"
  else
    fail "a TLS client on a plain port got a JSON reply: $got"
  fi
  logged "TLS client on a plain port: logged" "a TLS handshake on a listener without TLS"
  expect_reply "still serving on the plain port" \
    "$(printf '%s\n' "$ADD" | timeout 10 socat -t 5 - "TCP:127.0.0.1:$pp" 2>&1 || true)"
  got=$(pycall stall "$pn")
  expect_closed "a handshake that never finishes" "$got"
  logged "handshake timeout: logged" "TLS: handshake not done after 1000 ms"
  expect_closed "a client gone mid-record" "$(pycall midrecord "$pn")"
  logged "mid-record: logged" "closed the connection in the middle of a record"
  expect_reply "still serving over TLS" "$(socat_call "$pn")"

  resumption_and_suites "$pn" "$pm" "$plow" "$pdeep"
  s_client "$pm" -cert "$T/alice.pem" -key "$T/alice.key" -sess_out "$T/sess" >/dev/null

  # SIGHUP: a new certificate for new connections; a broken key keeps it.
  expect_serial "serial 1001 before the reload" "$pn" serial=03E9
  cp "$T/server2.pem" "$T/live.pem"
  cp "$T/server2.key" "$T/live.key"
  # tls_cert on the plain listener too: it stays plain until a restart.
  sed -i "/^tcp = 127.0.0.1:$pp\$/a tls_cert = $T/server.pem\ntls_key = $T/server.key" \
    "$T/tls.conf"
  hup
  logged "tls_cert added by a reload: said to wait for a restart" \
    "[listen plain]: tls_cert is new, but TLS changes only on a restart"
  expect_reply "the plain listener still plain after the reload" \
    "$(printf '%s\n' "$ADD" | timeout 10 socat -t 5 - "TCP:127.0.0.1:$pp" 2>&1 || true)"
  expect_serial "SIGHUP: new connections get serial 2002" "$pn" serial=07D2
  # A reload makes new contexts, with their own session caches and ticket
  # keys: a session from before it is not resumed (its client's identity
  # is verified again, by the CAs in the file now).
  got=$(s_client "$pm" -cert "$T/alice.pem" -key "$T/alice.key" -sess_in "$T/sess")
  if [[ "$got" == *"New, TLSv1.3"* && "$got" == *'"cert_cn":"alice"'* ]]; then
    pass "SIGHUP: a session from before the reload gets a full handshake"
  else
    fail "a session from before the reload: $(grep -E 'result|New|Reused' <<<"$got")"
  fi
  echo "not a key" >"$T/live.key"
  hup
  logged "a broken key: logged" "[listen tls] tls_key: $T/live.key"
  logged "a broken key: the old one stays" "new connections keep the previous certificate and key"
  expect_serial "after a broken key, serial 2002 still" "$pn" serial=07D2
  expect_reply "serving after the broken key" "$(socat_call "$pn")"
  stop_daemon tls "$PID" "$T/local.sock"
  admission

  # Files and settings that cannot work stop jrpcd -t, each with its line.
  bad_tls() { # NAME TEXT KEY-LINES...
    local name=$1 want=$2
    shift 2
    printf '[listen t]\ntcp = 127.0.0.1:%s\n' "$pn" >"$T/$name.conf"
    printf '%s\n' "$@" >>"$T/$name.conf"
    run_jrpcd "$name" -t -c "$T/$name.conf"
    if expect_rc "$name" 1 && expect_in "$name" err "$want"; then
      pass "$name: $want"
    fi
  }
  bad_tls wrong_key "tls_key: $T/alice.key is not the key of tls_cert $T/server.pem" \
    "tls_cert = $T/server.pem" "tls_key = $T/alice.key"
  bad_tls no_cert "tls_cert: $T/none.pem: " \
    "tls_cert = $T/none.pem" "tls_key = $T/server.key"
  bad_tls bad_ciphers 'tls_ciphers: "NO-SUCH-CIPHER": ' \
    "tls_cert = $T/server.pem" "tls_key = $T/server.key" "tls_ciphers = NO-SUCH-CIPHER"

  # At start, a broken key is fatal, with its reason.
  run_jrpcd broken -c "$T/tls.conf"
  if expect_rc broken 1; then
    expect_in broken err "[listen tls] tls_key: $T/live.key" || true
  fi
  finish
}

main
