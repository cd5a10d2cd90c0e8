"""A blocking, dependency-free echo child for testing SubprocessStream alone.

Same commands as echo.py (``!big N``, ``!close``, ``!exit``), plus
``!stderr N``: write N bytes of log lines to stderr, then answer ``!logged``.
"""

from __future__ import annotations

import os
import sys


def main() -> None:
    out = sys.stdout.buffer
    sending = True
    for line in sys.stdin.buffer:
        msg = line.rstrip(b"\n")
        if msg.startswith(b"!big "):
            out.write(b"x" * int(msg[5:]) + b"\n")
        elif msg == b"!close":
            sending = False
            out.flush()
            os.close(1)  # closing sys.stdout would leave fd 1 open
            continue
        elif msg == b"!exit":
            os._exit(3)
        elif msg.startswith(b"!stderr "):
            remaining = int(msg[8:])
            chunk = b"log line " + b"y" * 90 + b"\n"
            while remaining > 0:
                sys.stderr.buffer.write(chunk)
                remaining -= len(chunk)
            sys.stderr.buffer.write(b"last log line\n")
            sys.stderr.flush()
            out.write(b"!logged\n")
        else:
            out.write(msg + b"\n")
        out.flush()
    if sending:
        out.write(b"!eof\n")
        out.flush()


if __name__ == "__main__":
    main()
