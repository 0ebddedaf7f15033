#!/usr/bin/env python3
"""fake_ws.py PORTFILE MODE - a WebSocket server that answers one
connection the way MODE says, for what jrpcd never does on its own:

  fragments  the reply to the first request in three fragments with a
             ping between the first two (the pong it gets back is
             checked: the ping's payload, masked); the result is the
             request's params joined
  badaccept  a 101 whose Sec-WebSocket-Accept is not the key's
  masked     a reply frame masked (only clients mask)
  close1009  a close with status 1009 and a reason instead of a reply

It writes the port it listens on to PORTFILE, serves one connection and
exits 0, or 1 when the client did something wrong (said on stderr)."""
import base64
import hashlib
import json
import os
import socket
import struct
import sys

GUID = b"258EAFA5-E914-47DA-95CA-C5AB0DC85B11"


def read_exact(conn, n):
    data = b""
    while len(data) < n:
        more = conn.recv(n - len(data))
        if not more:
            raise EOFError("the client closed")
        data += more
    return data


def read_frame(conn):
    """One client frame: (opcode, payload); it must be masked."""
    b0, b1 = read_exact(conn, 2)
    if not b1 & 0x80:
        raise ValueError("an unmasked client frame")
    n = b1 & 0x7F
    if n == 126:
        n = struct.unpack(">H", read_exact(conn, 2))[0]
    elif n == 127:
        n = struct.unpack(">Q", read_exact(conn, 8))[0]
    mask = read_exact(conn, 4)
    data = bytes(c ^ mask[i % 4] for i, c in enumerate(read_exact(conn, n)))
    return b0 & 0x0F, data


def frame(op, payload, fin=True, mask=None):
    head = bytes([(0x80 if fin else 0) | op])
    n = len(payload)
    mbit = 0x80 if mask else 0
    if n < 126:
        head += bytes([mbit | n])
    else:
        head += bytes([mbit | 126]) + struct.pack(">H", n)
    if mask:
        payload = bytes(c ^ mask[i % 4] for i, c in enumerate(payload))
        head += mask
    return head + payload


def main():
    portfile, mode = sys.argv[1], sys.argv[2]
    srv = socket.socket()
    srv.bind(("127.0.0.1", 0))
    srv.listen(1)
    with open(portfile + ".tmp", "w") as f:
        f.write(str(srv.getsockname()[1]))
    os.rename(portfile + ".tmp", portfile)
    srv.settimeout(20)
    conn, _ = srv.accept()
    conn.settimeout(20)
    head = b""
    while b"\r\n\r\n" not in head:
        head += conn.recv(4096)
    key = [l.split(b":", 1)[1].strip() for l in head.split(b"\r\n")
           if l.lower().startswith(b"sec-websocket-key:")][0]
    if len(base64.b64decode(key)) != 16:
        print("fake_ws: the key is not 16 bytes in base64", file=sys.stderr)
        return 1
    accept = base64.b64encode(hashlib.sha1(key + GUID).digest())
    if mode == "badaccept":
        accept = base64.b64encode(hashlib.sha1(b"x" + GUID).digest())
    conn.sendall(b"HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\n"
                 b"Connection: Upgrade\r\nSec-WebSocket-Accept: " + accept +
                 b"\r\n\r\n")
    if mode == "badaccept":
        conn.recv(1)
        return 0
    # rpc.discover first unless --no-check: jrpc is run with --no-check.
    op, data = read_frame(conn)
    req = json.loads(data)
    if mode == "close1009":
        conn.sendall(frame(0x8, struct.pack(">H", 1009) + b"too big"))
        op, data = read_frame(conn)
        if op != 0x8 or data[:2] != struct.pack(">H", 1009):
            print("fake_ws: the close was not echoed", file=sys.stderr)
            return 1
        return 0
    reply = json.dumps({"jsonrpc": "2.0", "id": req["id"],
                        "result": "".join(req["params"])}).encode()
    if mode == "masked":
        conn.sendall(frame(0x1, reply, mask=b"abcd"))
        conn.recv(100)
        return 0
    third = len(reply) // 3
    conn.sendall(frame(0x1, reply[:third], fin=False) +
                 frame(0x9, b"are you there") +
                 frame(0x0, reply[third:2 * third], fin=False))
    op, data = read_frame(conn)
    if op != 0xA or data != b"are you there":
        print("fake_ws: no pong for the ping (got %d %r)" % (op, data),
              file=sys.stderr)
        return 1
    conn.sendall(frame(0x0, reply[2 * third:]))
    op, data = read_frame(conn)
    if op != 0x8 or data != struct.pack(">H", 1000):
        print("fake_ws: no close 1000 at the end (got %d %r)" % (op, data),
              file=sys.stderr)
        return 1
    conn.sendall(frame(0x8, data))
    return 0


if __name__ == "__main__":
    sys.exit(main())
