#!/usr/bin/env python3
"""pty_session.py JRPC [ARG...] - drives jrpc's prompt through a pseudo
terminal, as a person would, and checks what it shows.

Reads the script from stdin: lines "send TEXT" (TEXT with Python escapes:
\\t is Tab, \\x1b[A the up arrow, \\r Enter, \\x04 Ctrl-D) and "expect TEXT"
(waits until TEXT has appeared in the output since the last expect, at most
TIMEOUT seconds), and "eof", which sends Ctrl-D every half second until
jrpc exits: a Ctrl-D typed while the terminal is still in canonical mode,
between two prompts, is an end-of-file the line discipline may drop when
libedit switches to raw mode, and a person would press it again. Ends with jrpc's exit status, which must come within
TIMEOUT seconds of the script's end. Exit 0 when everything was seen, 1
otherwise, with the terminal output printed.
"""
import os
import pty
import select
import sys
import time

TIMEOUT = float(os.environ.get("PTY_TIMEOUT", "15"))


def main():
    pid, fd = pty.fork()
    if pid == 0:
        os.environ["TERM"] = "xterm"
        os.execv(sys.argv[1], sys.argv[1:])
    seen = b""
    mark = 0

    def read_some(deadline):
        nonlocal seen
        left = deadline - time.monotonic()
        if left <= 0:
            return False
        r, _, _ = select.select([fd], [], [], left)
        if not r:
            return False
        try:
            data = os.read(fd, 4096)
        except OSError:
            return False
        if not data:
            return False
        seen += data
        return True

    def fail(why):
        sys.stderr.write("FAIL: %s\n--- terminal output ---\n%r\n" % (why, seen))
        try:
            os.kill(pid, 9)
        except OSError:
            pass
        sys.exit(1)

    eof = False
    for line in sys.stdin.read().splitlines():
        if not line.strip():
            continue
        verb, _, text = line.partition(" ")
        text = text.encode().decode("unicode_escape").encode("latin-1")
        if verb == "send":
            os.write(fd, text)
        elif verb == "eof":
            eof = True
        elif verb == "expect":
            deadline = time.monotonic() + TIMEOUT
            while text not in seen[mark:]:
                if not read_some(deadline):
                    fail("did not see %r within %gs" % (text, TIMEOUT))
            mark = seen.index(text, mark) + len(text)
        else:
            fail("unknown script line: " + line)
    deadline = time.monotonic() + TIMEOUT
    while time.monotonic() < deadline:
        done, status = os.waitpid(pid, os.WNOHANG)
        if done:
            sys.stdout.buffer.write(seen)
            code = os.waitstatus_to_exitcode(status)
            if code != 0:
                fail("jrpc exited with status %d" % code)
            return
        if eof:
            try:
                os.write(fd, b"\x04")
            except OSError:
                pass
        read_some(time.monotonic() + 0.5)
    fail("jrpc did not exit within %gs" % TIMEOUT)


if __name__ == "__main__":
    main()
