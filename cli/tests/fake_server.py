#!/usr/bin/env python3
"""fake_server.py MODE SOCKET - a stand-in JSON-RPC server for jrpc's tests.

Listens on the Unix socket SOCKET, newline framing, one thread per
connection, until killed. rpc.discover returns the fixed OpenRPC document
below in MODE "discover" and -32601 in every other mode. Other methods:

  discover, plain  the result is {"method": ..., "params": ...} as received,
                   so a test sees what jrpc sent; batches get one such
                   response per request with an id, in reverse order (as
                   JSON-RPC allows: the client must pair them by id);
                   "say" answers with its first param (a string for -r)
  garbage          a line that is not JSON
  truncated        half a response, then the connection closes
  wrongid          a well-formed response with id 999
  silent           nothing, ever (the client must time out)
  noreply          closes the connection without replying
  dropone          like plain, but a batch's last response and, with
                   --stdin, the last request's response are left out
"""
import json
import os
import socket
import sys
import threading
import time

DOC = {
    "openrpc": "1.2.6",
    "info": {"title": "fake", "version": "0"},
    "methods": [
        {
            "name": "math.add",
            "summary": "Adds two numbers",
            "paramStructure": "by-position",
            "params": [
                {"name": "a", "required": True, "schema": {"type": "number"}},
                {"name": "b", "required": True, "schema": {"type": "number"},
                 "summary": "the second addend"},
            ],
            "result": {"name": "sum", "schema": {"type": "number"}},
            "examples": [
                {"name": "one and two",
                 "params": [{"name": "a", "value": 1}, {"name": "b", "value": 2}],
                 "result": {"name": "sum", "value": 3}}
            ],
        },
        {
            "name": "greet",
            "summary": "Greets someone",
            "description": "Says hello to NAME, loudly if asked.",
            "paramStructure": "by-name",
            "params": [
                {"name": "name", "required": True, "schema": {"type": "string"}},
                {"name": "loud", "schema": {"type": "boolean"}},
                {"name": "times", "schema": {"type": ["integer", "null"]}},
            ],
            "result": {"name": "greeting", "schema": {"type": "string"}},
        },
        {"name": "ping"},
    ],
}


def response(req, mode):
    if not isinstance(req, dict) or "id" not in req:
        return None
    rid = req["id"]
    if req.get("method") == "rpc.discover":
        if mode == "discover":
            return {"jsonrpc": "2.0", "result": DOC, "id": rid}
        return {"jsonrpc": "2.0", "id": rid,
                "error": {"code": -32601, "message": "Method not found"}}
    if req.get("method") == "say" and req.get("params"):
        # Its first param back as the result: a string for jrpc -r.
        return {"jsonrpc": "2.0", "result": req["params"][0], "id": rid}
    result = {"method": req.get("method")}
    if "params" in req:
        result["params"] = req["params"]
    return {"jsonrpc": "2.0", "result": result, "id": rid}


def send(conn, obj):
    conn.sendall(json.dumps(obj, separators=(",", ":")).encode() + b"\n")


def serve(conn, mode):
    buf = b""
    last_reply = None  # dropone holds each reply back until the next
    with conn:
        while True:
            data = conn.recv(65536)
            if not data:
                if mode == "silent":
                    time.sleep(120)  # not even a close: the client must give up
                if last_reply is not None and mode != "dropone":
                    send(conn, last_reply)
                return
            buf += data
            while b"\n" in buf:
                line, buf = buf.split(b"\n", 1)
                req = json.loads(line)
                if isinstance(req, dict) and req.get("method") == "rpc.discover":
                    send(conn, response(req, mode))
                    continue
                if mode == "garbage":
                    conn.sendall(b"this is not JSON\n")
                elif mode == "truncated":
                    conn.sendall(b'{"jsonrpc":"2.0","result":')
                    return
                elif mode == "wrongid":
                    send(conn, {"jsonrpc": "2.0", "result": 1, "id": 999})
                elif mode == "silent":
                    continue
                elif mode == "noreply":
                    return
                elif isinstance(req, list):
                    replies = [r for r in (response(x, mode) for x in req) if r]
                    replies.reverse()
                    if mode == "dropone":
                        replies = replies[:-1]
                    if replies:
                        send(conn, replies)
                else:
                    r = response(req, mode)
                    if r is None:
                        continue
                    if mode == "dropone":
                        if last_reply is not None:
                            send(conn, last_reply)
                        last_reply = r
                    else:
                        send(conn, r)


def main():
    mode, path = sys.argv[1], sys.argv[2]
    srv = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    srv.bind(path + ".tmp")
    srv.listen(16)
    os.rename(path + ".tmp", path)  # appears only once it listens
    while True:
        conn, _ = srv.accept()
        threading.Thread(target=serve, args=(conn, mode), daemon=True).start()


if __name__ == "__main__":
    main()
