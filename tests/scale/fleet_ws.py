"""fleet_ws.py - a small WebSocket client (RFC 6455) for fleet.py, standard
library only: the opening handshake (its Sec-WebSocket-Accept checked),
masked text frames out, text messages in (fragments put together), pings
answered with pongs, and a close answered and reported as Closed (an
EOFError). Every read is bounded by the socket's timeout; one that times
out (socket.timeout) loses nothing, the next call goes on."""
import base64
import hashlib
import os
import socket
import struct

GUID = b"258EAFA5-E914-47DA-95CA-C5AB0DC85B11"
OP_CONT, OP_TEXT, OP_BINARY, OP_CLOSE, OP_PING, OP_PONG = 0, 1, 2, 8, 9, 10


class Closed(EOFError):
    """The peer closed: code is its close status, or None for a bare EOF."""

    def __init__(self, code):
        super().__init__("WebSocket closed (%s)" % code)
        self.code = code


class WebSocket:
    def __init__(self, host, port, timeout, path="/", rcvbuf=None):
        self.s = socket.socket()
        if rcvbuf:  # before connect: the window offered follows it
            self.s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, rcvbuf)
        self.s.settimeout(timeout)
        self.s.connect((host, port))
        self.buf = b""
        self.parts = []  # a fragmented message's fragments so far
        key = base64.b64encode(os.urandom(16))
        self.s.sendall(b"GET %s HTTP/1.1\r\nHost: %s:%d\r\n"
                       b"Upgrade: websocket\r\nConnection: Upgrade\r\n"
                       b"Sec-WebSocket-Key: %s\r\n"
                       b"Sec-WebSocket-Version: 13\r\n\r\n"
                       % (path.encode(), host.encode(), port, key))
        while b"\r\n\r\n" not in self.buf:
            self._fill()
        head, self.buf = self.buf.split(b"\r\n\r\n", 1)
        lines = head.split(b"\r\n")
        if not lines[0].startswith(b"HTTP/1.1 101"):
            self.s.close()
            raise ConnectionError("upgrade refused: %r" % lines[0])
        want = base64.b64encode(hashlib.sha1(key + GUID).digest())
        accept = [v.strip() for k, _, v in (ln.partition(b":") for ln in lines)
                  if k.strip().lower() == b"sec-websocket-accept"]
        if accept != [want]:
            self.s.close()
            raise ConnectionError("bad Sec-WebSocket-Accept: %r" % accept)

    def local_port(self):
        return self.s.getsockname()[1]

    def _fill(self):
        chunk = self.s.recv(65536)
        if not chunk:
            raise Closed(None)
        self.buf += chunk

    def _frame(self):
        """The next whole frame (fin, opcode, payload). A read that times
        out leaves the buffer as it was, so the caller may try again."""
        while True:
            if len(self.buf) >= 2:
                b0, b1 = self.buf[0], self.buf[1]
                if b1 & 0x80:
                    raise ConnectionError("the server masked a frame")
                n, at = b1 & 0x7F, 2
                if n == 126 and len(self.buf) >= 4:
                    n, at = struct.unpack("!H", self.buf[2:4])[0], 4
                elif n == 127 and len(self.buf) >= 10:
                    n, at = struct.unpack("!Q", self.buf[2:10])[0], 10
                if n < 126 or at > 2:
                    if len(self.buf) >= at + n:
                        payload = self.buf[at:at + n]
                        self.buf = self.buf[at + n:]
                        return b0 & 0x80, b0 & 0x0F, payload
            self._fill()

    def _send_frame(self, op, payload):
        mask = os.urandom(4)
        n = len(payload)
        if n < 126:
            head = struct.pack("!BB", 0x80 | op, 0x80 | n)
        elif n < 65536:
            head = struct.pack("!BBH", 0x80 | op, 0x80 | 126, n)
        else:
            head = struct.pack("!BBQ", 0x80 | op, 0x80 | 127, n)
        # XOR with the key repeated, as one big integer: fast enough for
        # messages of kilobytes at hundreds a second.
        key = (mask * (n // 4 + 1))[:n]
        body = (int.from_bytes(payload, "big") ^
                int.from_bytes(key, "big")).to_bytes(n, "big")
        self.s.sendall(head + mask + body)

    def send_text(self, text):
        self._send_frame(OP_TEXT, text.encode())

    def recv_text(self):
        """The next text or binary message, as str; raises Closed."""
        while True:
            fin, op, payload = self._frame()
            if op == OP_PING:
                self._send_frame(OP_PONG, payload)
            elif op == OP_CLOSE:
                code = (struct.unpack("!H", payload[:2])[0]
                        if len(payload) >= 2 else None)
                try:
                    self._send_frame(OP_CLOSE, payload[:2])
                except OSError:
                    pass
                raise Closed(code)
            elif op in (OP_TEXT, OP_BINARY, OP_CONT):
                self.parts.append(payload)
                if fin:
                    text = b"".join(self.parts).decode()
                    self.parts = []
                    return text

    def close(self):
        try:
            self._send_frame(OP_CLOSE, struct.pack("!H", 1000))
        except OSError:
            pass
        self.s.close()
