"""Drive a stdio MCP server with the official ``mcp`` SDK client (1.x) and report as JSON.

Usage: ``python mcp_official_client.py SCENARIO [--env NAME=VALUE]... -- CMD ARGS...``.
The server ``CMD`` is spawned with ``mcp.client.stdio.stdio_client``; one JSON object is
printed on stdout. Scenarios:

``tools``   (against ``mcp_server.py``): handshake, paginated listing,
            calls (success, structured, tool failure, unknown tool, invalid
            arguments), ping, and a call cancelled with
            ``notifications/cancelled``
``bridge``  handshake, listing, then each ``NAME JSON`` call given with
            ``--call`` (results or error codes)
"""

from __future__ import annotations

import argparse
import json
import sys
from typing import Any

import anyio
from mcp import ClientSession, StdioServerParameters, types
from mcp.client.stdio import stdio_client
from mcp.shared.exceptions import McpError


def _result(result: types.CallToolResult) -> dict[str, Any]:
    texts = [b.text for b in result.content if isinstance(b, types.TextContent)]
    return {"text": texts, "isError": result.isError, "structured": result.structuredContent}


async def _call(session: ClientSession, name: str, arguments: dict[str, Any]) -> dict[str, Any]:
    try:
        return _result(await session.call_tool(name, arguments))
    except McpError as exc:
        return {"error": exc.error.code, "message": exc.error.message}


async def _pages(session: ClientSession) -> list[list[str]]:
    pages: list[list[str]] = []
    cursor: str | None = None
    while True:
        page = await session.list_tools(params=types.PaginatedRequestParams(cursor=cursor))
        pages.append([t.name for t in page.tools])
        if page.nextCursor is None:
            return pages
        cursor = page.nextCursor


async def _cancel_slow(session: ClientSession) -> dict[str, Any]:
    """Start ``slow``, cancel it with notifications/cancelled, check the server noticed."""
    report: dict[str, Any] = {}
    sending = anyio.Event()
    async with anyio.create_task_group() as tg:

        async def slow() -> None:
            report["id"] = session._request_id  # the id the call gets (ids count up)
            sending.set()  # the call takes its id before it first yields
            report["slow"] = await _call(session, "slow", {})

        tg.start_soon(slow)
        await sending.wait()
        await _call(session, "slow_started", {})
        await session.send_notification(types.ClientNotification(types.CancelledNotification(
            params=types.CancelledNotificationParams(requestId=report["id"], reason="test")
        )))
        report["cancellations"] = (await _call(session, "cancellations", {}))["text"]
        await session.send_ping()
        tg.cancel_scope.cancel()  # the cancelled call is never answered
    return report


async def main(args: argparse.Namespace) -> None:
    cmd = args.cmd
    env = dict(item.split("=", 1) for item in args.env) if args.env else None
    params = StdioServerParameters(command=cmd[0], args=cmd[1:], env=env)
    report: dict[str, Any] = {}
    async with stdio_client(params) as (read, write), ClientSession(read, write) as session:
        init = await session.initialize()
        report["protocolVersion"] = init.protocolVersion
        report["serverInfo"] = init.serverInfo.name
        report["tools_capability"] = init.capabilities.tools is not None
        report["pages"] = await _pages(session)
        if args.scenario == "tools":
            report["add"] = await _call(session, "add", {"a": 2, "b": 3})
            report["echo"] = await _call(session, "echo", {"text": "héllo"})
            report["fail"] = await _call(session, "fail", {})
            report["unknown"] = await _call(session, "nope", {})
            report["invalid"] = await _call(session, "echo", {"text": 5})
            report["ping"] = (await session.send_ping()).model_dump()
            report["cancel"] = await _cancel_slow(session)
        else:
            report["calls"] = [
                await _call(session, name, json.loads(arguments))
                for name, arguments in (c.split(" ", 1) for c in args.call)
            ]
    json.dump(report, sys.stdout)
    sys.stdout.flush()


if __name__ == "__main__":
    parser = argparse.ArgumentParser()
    parser.add_argument("scenario", choices=("tools", "bridge"))
    parser.add_argument("--call", action="append", default=[])
    parser.add_argument("--env", action="append", default=[], help="NAME=VALUE for the server")
    parser.add_argument("cmd", nargs="+")
    anyio.run(main, parser.parse_args())
