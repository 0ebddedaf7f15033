#!/usr/bin/env python3
"""fake_http.py MODE SOCKET - a stand-in JSON-RPC over HTTP server for
jrpc's tests (jrpc -u SOCKET -f http), for the replies jrpcd never sends.

Listens on the Unix socket SOCKET, one thread per connection, HTTP/1.1
keep-alive, until killed. rpc.discover is -32601; every other call's
result is {"method": ..., "params": ..., "head": [the request's header
lines]}, so a test sees what jrpc sent. How the reply goes out:

  chunked   Transfer-Encoding: chunked, 7-byte chunks with an extension,
            then a trailer
  eof       no length: the body ends when the connection closes
  continue  a 100 Continue before the 200
  close     Connection: close on every reply, then the connection closes
            half a second later (a client must not send another request
            on it in between)
  status    503 Service Unavailable with a JSON-RPC error body
  html      404 Not Found with an HTML body
  leak      401 with the request's Authorization header in its reason
"""
import json
import os
import socket
import sys
import threading
import time


def read_request(conn, buf):
    """(head lines, body, rest of buf), or None at the end."""
    while b"\r\n\r\n" not in buf:
        d = conn.recv(65536)
        if not d:
            return None
        buf += d
    head, _, buf = buf.partition(b"\r\n\r\n")
    lines = head.decode("latin-1").split("\r\n")
    length = 0
    for line in lines[1:]:
        name, _, value = line.partition(":")
        if name.lower() == "content-length":
            length = int(value.strip())
    while len(buf) < length:
        d = conn.recv(65536)
        if not d:
            return None
        buf += d
    return lines, buf[:length], buf[length:]


def answer(lines, body):
    req = json.loads(body)
    if req.get("method") == "rpc.discover":
        return {"jsonrpc": "2.0", "id": req.get("id"),
                "error": {"code": -32601, "message": "Method not found"}}
    return {"jsonrpc": "2.0", "id": req.get("id"),
            "result": {"method": req.get("method"),
                       "params": req.get("params"), "head": lines}}


def serve(conn, mode):
    buf = b""
    with conn:
        while True:
            got = read_request(conn, buf)
            if got is None:
                return
            lines, body, buf = got
            out = json.dumps(answer(lines, body)).encode() + b"\n"
            if mode == "chunked":
                parts = [out[i:i + 7] for i in range(0, len(out), 7)]
                msg = b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n"
                for p in parts:
                    msg += b"%x;x=y\r\n%s\r\n" % (len(p), p)
                msg += b"0\r\nX-Trailer: t\r\n\r\n"
                conn.sendall(msg)
            elif mode == "eof":
                conn.sendall(b"HTTP/1.1 200 OK\r\nConnection: close\r\n\r\n" + out)
                return
            elif mode == "continue":
                conn.sendall(b"HTTP/1.1 100 Continue\r\n\r\n")
                conn.sendall(b"HTTP/1.1 200 OK\r\nContent-Length: %d\r\n\r\n%s"
                             % (len(out), out))
            elif mode == "close":
                conn.sendall(b"HTTP/1.1 200 OK\r\nConnection: close\r\n"
                             b"Content-Length: %d\r\n\r\n%s" % (len(out), out))
                time.sleep(0.5)
                return
            elif mode == "status":
                err = (b'{"jsonrpc":"2.0","error":{"code":-32000,'
                       b'"message":"Server error","data":"draining"},"id":null}')
                conn.sendall(b"HTTP/1.1 503 Service Unavailable\r\n"
                             b"Content-Length: %d\r\n\r\n%s" % (len(err), err))
            elif mode == "leak":
                auth = [l for l in lines if l.lower().startswith("authorization:")]
                err = json.dumps({"jsonrpc": "2.0", "id": None, "error": {
                    "code": -32006, "message": "Unauthorized",
                    "data": "you sent " + " ".join(auth)}}).encode()
                conn.sendall(b"HTTP/1.1 401 Unauthorized\r\n"
                             b"Content-Length: %d\r\n\r\n%s" % (len(err), err))
            elif mode == "html":
                page = b"<html><body>\x1b[31mnot here</body></html>"
                conn.sendall(b"HTTP/1.1 404 Not Found\r\nContent-Type: text/html"
                             b"\r\nContent-Length: %d\r\n\r\n%s" % (len(page), page))


def main():
    mode, path = sys.argv[1], sys.argv[2]
    try:
        os.unlink(path)
    except FileNotFoundError:
        pass
    srv = socket.socket(socket.AF_UNIX)
    srv.bind(path)
    srv.listen(16)
    while True:
        conn, _ = srv.accept()
        threading.Thread(target=serve, args=(conn, mode), daemon=True).start()


if __name__ == "__main__":
    main()
