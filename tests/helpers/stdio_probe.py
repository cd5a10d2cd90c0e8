"""Reports what open_stdio did to the standard streams (``python stdio_probe.py BACKEND MODE``).

Echoes one message, then (MODE ``close``) closes the stream itself or
(MODE ``keep``) leaves that to ``open_stdio``; after the context it prints
a JSON report to whatever stdout then is.
"""

from __future__ import annotations

import json
import os
import sys

import anyio

from wireproto.transports.stdio import open_stdio


async def main(mode: str) -> None:
    before = [os.get_blocking(0), os.get_blocking(1)]
    async with open_stdio() as stream:
        during = [os.get_blocking(0), os.get_blocking(stream._tx.fd)]  # type: ignore[union-attr]
        await stream.send(await stream.receive())
        if mode == "close":
            await stream.aclose()
    after = [os.get_blocking(0), os.get_blocking(1)]
    report = {"before": before, "during": during, "after": after}
    print(json.dumps(report), flush=True)


if __name__ == "__main__":
    anyio.run(main, sys.argv[2], backend=sys.argv[1])
