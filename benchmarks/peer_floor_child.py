"""The floor's child: echoes newline-delimited JSON over stdio with bare asyncio.

Reads stdin line by line with an ``asyncio.StreamReader`` and writes each line
back to stdout unchanged, draining when the pipe pushes back. No parsing, no
protocol: the cheapest message handling an asyncio process can do.
"""

from __future__ import annotations

import asyncio
import sys


async def main() -> None:
    loop = asyncio.get_running_loop()
    reader = asyncio.StreamReader(limit=64 * 1024 * 1024)
    await loop.connect_read_pipe(lambda: asyncio.StreamReaderProtocol(reader), sys.stdin)
    transport, protocol = await loop.connect_write_pipe(
        asyncio.streams.FlowControlMixin, sys.stdout
    )
    writer = asyncio.StreamWriter(transport, protocol, None, loop)
    while True:
        line = await reader.readline()
        if not line:
            break
        writer.write(line)
        if transport.get_write_buffer_size() > 1 << 16:
            await writer.drain()
    await writer.drain()


if __name__ == "__main__":
    asyncio.run(main())
