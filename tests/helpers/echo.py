"""Echo peer shared by the transport suite.

Imported by the tests (in-process echo over memory and websocket) and run as a
script (``python echo.py BACKEND MAX_BYTES``) to echo over :func:`open_stdio`.

Every message is sent back (without a trailing newline, so the transport has
to add one), except these commands:

``!big N``   answer with a message of N bytes ``x``
``!close``   finish sending (``send_eof``) but keep reading
``!exit``    vanish: the script exits at once, in-process the stream closes
``!print``   write to stdout behind the transport's back, answer ``!printed``

An oversized inbound message is answered with ``!too-large``; the end of
input with ``!eof`` (when the sending side is still open).
"""

from __future__ import annotations

import os
import sys

import anyio
import anyio.abc

from wireproto.errors import MessageTooLarge

GONE = (anyio.BrokenResourceError, anyio.ClosedResourceError)


async def echo(stream: anyio.abc.ObjectStream[bytes], *, in_process: bool = True) -> None:
    """Echo messages on ``stream`` until its end, obeying the commands above."""
    sending = True
    while True:
        try:
            msg = await stream.receive()
        except MessageTooLarge:
            await stream.send(b"!too-large")
            continue
        except anyio.EndOfStream:
            if sending:
                try:
                    await stream.send(b"!eof")
                except GONE:
                    pass
            return
        except GONE:
            return
        if msg.startswith(b"!big "):
            await stream.send(b"x" * int(msg[5:]))
        elif msg == b"!close":
            sending = False
            await stream.send_eof()
        elif msg == b"!exit":
            if not in_process:
                os._exit(3)
            await stream.aclose()
            return
        elif msg == b"!print":
            print("stray print from the echo child")
            os.write(1, b"stray write to fd 1\n")
            await stream.send(b"!printed")
        else:
            await stream.send(msg)


async def _main(max_bytes: int) -> None:
    from wireproto.transports.stdio import open_stdio

    async with open_stdio(max_bytes=max_bytes) as stream:
        await echo(stream, in_process=False)


if __name__ == "__main__":
    anyio.run(_main, int(sys.argv[2]), backend=sys.argv[1])
