#!/usr/bin/env python3
"""fake_bytes.py DIR - fixed replies for jrpc's failure tests.

For each DIR/NAME.reply, listens on the Unix socket DIR/NAME.sock (or,
when NAME starts with "tcp", on a free 127.0.0.1 port written to
DIR/NAME.port). On each connection it waits for the request (the first
bytes, then a pause of 0.2 s), writes the file's bytes as they are, and
closes; when NAME ends in "_rst" it writes nothing and resets the
connection instead (SO_LINGER 0). Writes DIR/ready once all listen; runs
until killed.
"""
import os
import socket
import struct
import sys
import threading


def serve(listener, reply, reset):
    while True:
        conn, _ = listener.accept()
        threading.Thread(target=answer, args=(conn, reply, reset), daemon=True).start()


def answer(conn, reply, reset):
    try:
        conn.settimeout(5)
        conn.recv(65536)
        conn.settimeout(0.2)
        try:
            while conn.recv(65536):
                pass
        except socket.timeout:
            pass
        if reset:
            conn.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
        else:
            conn.sendall(reply)
    except OSError:
        pass
    finally:
        conn.close()


def main():
    folder = sys.argv[1]
    for entry in sorted(os.listdir(folder)):
        if not entry.endswith(".reply"):
            continue
        name = entry[: -len(".reply")]
        with open(os.path.join(folder, entry), "rb") as f:
            reply = f.read()
        if name.startswith("tcp"):
            s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
            s.bind(("127.0.0.1", 0))
            with open(os.path.join(folder, name + ".port"), "w") as f:
                f.write(str(s.getsockname()[1]))
        else:
            s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
            s.bind(os.path.join(folder, name + ".sock"))
        s.listen(16)
        threading.Thread(target=serve, args=(s, reply, name.endswith("_rst")), daemon=True).start()
    open(os.path.join(folder, "ready"), "w").close()
    threading.Event().wait()


main()
