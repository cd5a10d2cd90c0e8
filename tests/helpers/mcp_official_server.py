"""A stdio MCP server built on the official ``mcp`` SDK (1.x ``FastMCP``), for interop tests.

Usage: ``python mcp_official_server.py``. Tools: ``add(a, b)`` (structured
output), ``echo(text)``, ``boom()`` (raises: a tool error), ``wait()`` (sleeps
until cancelled; ``wait_started()`` answers once it runs, ``cancelled_calls()``
once one was cancelled, with how many were).
"""

from __future__ import annotations

import anyio
from mcp.server.fastmcp import FastMCP

server = FastMCP("official-test-server")
state = {"cancelled": 0}
started = anyio.Event()
cancelled = anyio.Event()


@server.tool()
def add(a: int, b: int) -> int:
    """Add two integers."""
    return a + b


@server.tool()
def echo(text: str) -> str:
    """Echo the text."""
    return text


@server.tool()
def boom() -> str:
    """Always raises."""
    raise ValueError("boom failed")


@server.tool()
async def wait() -> str:
    """Sleep until cancelled."""
    started.set()
    try:
        await anyio.sleep_forever()
    except anyio.get_cancelled_exc_class():
        state["cancelled"] += 1
        cancelled.set()
        raise
    return "never"


@server.tool()
async def wait_started() -> str:
    """Return once a wait() call is running."""
    await started.wait()
    return "started"


@server.tool()
async def cancelled_calls() -> int:
    """Wait until a wait() call was cancelled; return how many were."""
    await cancelled.wait()
    return state["cancelled"]


if __name__ == "__main__":
    server.run()
