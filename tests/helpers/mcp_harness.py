"""An external harness for the host tests: an ACP agent on the official Python SDK
(``agent-client-protocol`` 0.12.1) that connects to the stdio MCP servers it is given.

Usage: ``python mcp_harness.py [--image] [--require-auth] [--print-env NAME]``.
It serves ACP on stdio; it advertises ``sessionCapabilities.resume``, image prompts only with
``--image``, and with ``--require-auth`` the auth method ``login`` which must
be completed (``session/new`` / ``session/resume`` answer ``-32000`` until
``authenticate``). With ``--print-env NAME`` it behaves badly on purpose: at
``session/new`` it prints the value of its environment variable NAME and the
env of every MCP server it was given to stderr. The first text block of a
prompt is a command; the answer is one ``agent_message_chunk`` (JSON where
structured):

``session``                   ``{"id", "how"}`` (``new`` or ``resume``)
``servers``                   the MCP servers received:
                              ``[{"name", "command", "args", "env": [names]}]``
``tools``                     ``{server: [tool names] | {"error", "message"}}``
``call SERVER TOOL JSON``     ``{"text", "isError"}`` or ``{"error", "message"}``

Each MCP server is connected (with our MCP client, as a harness would with
its own) on first use and stays connected for the session.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import logging
import os
import sys
from collections.abc import Awaitable, Callable
from typing import Any

import acp
from acp.schema import (
    AgentCapabilities,
    AuthMethodAgent,
    Implementation,
    InitializeResponse,
    NewSessionResponse,
    PromptCapabilities,
    PromptResponse,
    ResumeSessionResponse,
    SessionCapabilities,
    SessionResumeCapabilities,
)

from wireproto.adapters.mcp import connect_mcp
from wireproto.adapters.mcp.client import ToolClient
from wireproto.errors import RpcError

log = logging.getLogger("mcp-harness")

Job = Callable[[ToolClient], Awaitable[Any]]


class McpLink:
    """One MCP server, connected on first use by a task that owns the connection."""

    def __init__(self, server: Any) -> None:
        self.server = server
        self.jobs: asyncio.Queue[tuple[Job, asyncio.Future[Any]]] = asyncio.Queue()
        self.task: asyncio.Task[None] | None = None

    async def _run(self) -> None:
        env = {**os.environ, **{e.name: e.value for e in self.server.env}}
        async with connect_mcp([self.server.command, *self.server.args], env=env) as client:
            while True:
                job, future = await self.jobs.get()
                try:
                    future.set_result(await job(client))
                except Exception as exc:
                    future.set_exception(exc)

    async def do(self, job: Job) -> Any:
        if self.task is None:
            self.task = asyncio.create_task(self._run())
        future: asyncio.Future[Any] = asyncio.get_running_loop().create_future()
        await self.jobs.put((job, future))
        await asyncio.wait({future, self.task}, return_when=asyncio.FIRST_COMPLETED)
        if future.done():
            return future.result()
        exc = self.task.exception()
        raise RuntimeError(f"MCP server {self.server.name} ended: {exc!r}")


class Harness:
    """The agent: see the module docstring."""

    def __init__(self, image: bool, require_auth: bool, print_env: str | None = None) -> None:
        self.print_env = print_env
        self.image = image
        self.require_auth = require_auth
        self.authenticated = False
        self._conn: Any = None
        self._count = 0
        self.sessions: dict[str, dict[str, Any]] = {}

    def on_connect(self, conn: Any) -> None:
        self._conn = conn

    async def initialize(self, protocol_version: int, **kwargs: Any) -> InitializeResponse:
        return InitializeResponse(
            protocol_version=1,
            agent_capabilities=AgentCapabilities(
                prompt_capabilities=PromptCapabilities(image=self.image),
                session_capabilities=SessionCapabilities(resume=SessionResumeCapabilities()),
            ),
            agent_info=Implementation(name="mcp-harness", version="1.0"),
            auth_methods=[AuthMethodAgent(id="login", name="Log in")] if self.require_auth else [],
        )

    async def authenticate(self, method_id: str, **kwargs: Any) -> None:
        if method_id != "login":
            raise acp.RequestError.invalid_params({"methodId": method_id})
        self.authenticated = True

    def _check_auth(self) -> None:
        if self.require_auth and not self.authenticated:
            raise acp.RequestError.auth_required({"authMethods": ["login"]})

    def _open(self, sid: str, how: str, mcp_servers: Any) -> None:
        servers = [s for s in (mcp_servers or []) if hasattr(s, "command")]
        self.sessions[sid] = {"how": how, "servers": servers,
                              "links": {s.name: McpLink(s) for s in servers}}

    async def new_session(self, cwd: str, mcp_servers: Any = None, **kwargs: Any) -> Any:
        self._check_auth()
        self._count += 1
        sid = f"h-{os.getpid()}-{self._count}"
        self._open(sid, "new", mcp_servers)
        if self.print_env:
            print(f"my {self.print_env}={os.environ.get(self.print_env)}", file=sys.stderr)
            for server in self.sessions[sid]["servers"]:
                pairs = " ".join(f"{v.name}={v.value}" for v in server.env)
                print(f"mcp server {server.name}: {pairs}", file=sys.stderr, flush=True)
        return NewSessionResponse(session_id=sid)

    async def resume_session(self, session_id: str, cwd: str, mcp_servers: Any = None,
                             **kwargs: Any) -> Any:
        self._check_auth()
        self._open(session_id, "resume", mcp_servers)
        return ResumeSessionResponse()

    async def cancel(self, session_id: str, **kwargs: Any) -> None:
        pass

    async def prompt(self, prompt: list[Any], session_id: str, **kwargs: Any) -> PromptResponse:
        text = next((b.text for b in prompt if getattr(b, "type", "") == "text"), "")
        command, _, rest = text.partition(" ")
        session = self.sessions[session_id]
        answer: Any
        if command == "session":
            answer = {"id": session_id, "how": session["how"]}
        elif command == "servers":
            answer = [{"name": s.name, "command": s.command, "args": list(s.args),
                       "env": [e.name for e in s.env]} for s in session["servers"]]
        elif command == "tools":
            answer = {name: await _tools(link) for name, link in session["links"].items()}
        elif command == "call":
            server, tool, arguments = rest.split(" ", 2)
            answer = await _call(session["links"][server], tool, json.loads(arguments))
        else:
            answer = f"unknown command {command!r}"
        await self._conn.session_update(session_id, acp.update_agent_message_text(
            answer if isinstance(answer, str) else json.dumps(answer)))
        return PromptResponse(stop_reason="end_turn")


async def _tools(link: McpLink) -> Any:
    try:
        tools = await link.do(lambda c: c.list_tools())
    except RpcError as exc:
        return {"error": exc.code, "message": exc.message}
    return [t.name for t in tools]


async def _call(link: McpLink, tool: str, arguments: dict[str, Any]) -> Any:
    try:
        result = await link.do(lambda c: c.call_tool(tool, arguments))
    except RpcError as exc:
        return {"error": exc.code, "message": exc.message}
    return {"text": result.text, "isError": bool(result.is_error)}


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--image", action="store_true")
    parser.add_argument("--require-auth", action="store_true")
    parser.add_argument("--print-env", metavar="NAME")
    args = parser.parse_args()
    logging.basicConfig(stream=sys.stderr, level=os.environ.get("HARNESS_LOG", "WARNING"))
    # session/resume is stable in ACP v1 but behind this flag in SDK 0.12.1
    asyncio.run(acp.run_agent(Harness(args.image, args.require_auth, args.print_env),
                              use_unstable_protocol=True))


if __name__ == "__main__":
    main()
