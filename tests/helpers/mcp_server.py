"""Our MCP tool server on stdio (a child process for the interop tests).

Usage: ``python mcp_server.py [--page-size N] [--backend asyncio|trio]``.

Tools:

``echo {text}``        returns the text
``add {a, b}``         returns the sum as text and ``structuredContent {"sum"}``
``fail``               a tool failure (``isError: true``)
``slow``               runs until cancelled (``notifications/cancelled``)
``slow_started``       answers once a ``slow`` call is running
``cancellations``      answers, once a ``slow`` call was cancelled, with how many were
``extra_0..extra_4``   filler for pagination
"""

from __future__ import annotations

import argparse
import functools
import logging
import os
import sys
from typing import Any

import anyio

from wireproto.adapters.mcp import messages as m
from wireproto.adapters.mcp.server import ToolServer
from wireproto.errors import InvalidArgument, NotFound
from wireproto.transports.stdio import open_stdio

OBJECT: dict[str, Any] = {"type": "object", "properties": {}}


class Provider:
    """The demo tools."""

    def __init__(self) -> None:
        self.started = anyio.Event()
        self.cancelled = anyio.Event()
        self.cancel_count = 0
        self.tools = [
            m.Tool(name="echo", description="Echo the text",
                   input_schema={"type": "object", "properties": {"text": {"type": "string"}},
                                 "required": ["text"]}),
            m.Tool(name="add", description="Add two integers",
                   input_schema={"type": "object",
                                 "properties": {"a": {"type": "integer"},
                                                "b": {"type": "integer"}},
                                 "required": ["a", "b"]},
                   output_schema={"type": "object", "properties": {"sum": {"type": "integer"}},
                                  "required": ["sum"]}),
            m.Tool(name="fail", description="Always fails", input_schema=OBJECT),
            m.Tool(name="slow", description="Runs until cancelled", input_schema=OBJECT),
            m.Tool(name="slow_started", description="Wait for slow", input_schema=OBJECT),
            m.Tool(name="cancellations", description="Count cancellations", input_schema=OBJECT),
            *(m.Tool(name=f"extra_{i}", input_schema=OBJECT) for i in range(5)),
        ]

    async def list_tools(self) -> list[m.Tool]:
        return self.tools

    async def call_tool(self, name: str, arguments: dict[str, Any]) -> m.CallToolResult:
        if name == "echo":
            if not isinstance(arguments.get("text"), str):
                raise InvalidArgument("echo needs a string 'text'")
            return m.text_result(arguments["text"])
        if name == "add":
            total = int(arguments["a"]) + int(arguments["b"])
            return m.CallToolResult(content=[m.TextContent(text=str(total))],
                                    structured_content={"sum": total})
        if name == "fail":
            return m.text_result("it failed", is_error=True)
        if name == "slow":
            self.started.set()
            try:
                await anyio.sleep_forever()
            except anyio.get_cancelled_exc_class():
                self.cancel_count += 1
                self.cancelled.set()
                raise
        if name == "slow_started":
            await self.started.wait()
            return m.text_result("started")
        if name == "cancellations":
            await self.cancelled.wait()
            return m.text_result(str(self.cancel_count))
        if name.startswith("extra_"):
            return m.text_result(name)
        raise NotFound("")


async def main(args: argparse.Namespace) -> None:
    server = ToolServer(
        Provider(), server_info=m.Implementation(name="wireproto-test-tools", version="1.0"),
        page_size=args.page_size, instructions="test tools",
    )
    async with open_stdio() as stdio:
        await server.serve(stdio)


if __name__ == "__main__":
    parser = argparse.ArgumentParser()
    parser.add_argument("--page-size", type=int, default=4)
    parser.add_argument("--backend", default="asyncio", choices=("asyncio", "trio"))
    arguments = parser.parse_args()
    logging.basicConfig(level=os.environ.get("MCP_SERVER_LOG", "WARNING"), stream=sys.stderr)
    anyio.run(functools.partial(main, arguments), backend=arguments.backend)
