"""``wireproto demo --generic``: the protocol-only checks, for any agent.

The full demo checks the demo agent's own behaviour (its slash commands and
replies). These scenarios check only what every agent owes a client of its
protocol, so they fit an agent of your own (``--acp-cmd`` / ``--wire-cmd``):

1. the handshake (``initialize``; Wire: a real answer, not the v1 fallback);
2. ACP: a new session;
3. a prompt that ends (any stop reason but ``cancelled``);
4. a prompt cancelled at once: the turn ends (``cancelled``, or finished
   first) and the connection stays usable;
5. shutdown: the server exits with status 0 at the end of its input.
"""

from __future__ import annotations

import uuid
from typing import Any

import anyio

from wireproto.adapters.acp import schema as s
from wireproto.adapters.acp.client.connection import ClientConnection
from wireproto.adapters.wire import messages as m
from wireproto.adapters.wire.client.connection import WireClient, WireEvent
from wireproto.cli.demo import DemoContext, Report, Server, Step
from wireproto.errors import RpcError

__all__ = ["GENERIC_PROMPT", "GenericAcpScenario", "GenericWireScenario"]

GENERIC_PROMPT = "Hello from wireproto demo --generic"
"""The prompt sent to the agent."""


class DemoFailure(Exception):
    """The agent did not meet the protocol's contract."""


def _expect(condition: bool, message: str) -> None:
    if not condition:
        raise DemoFailure(message)


async def _exits_cleanly(report: Report, server: Server) -> None:
    async def check() -> str:
        _expect(server.returncode == 0,
                f"the server exited with status {server.returncode} after {server.stop}")
        return f"pid {server.pid} exited with status 0 after {server.stop}"

    await report.check("shutdown: the server exits cleanly", check)


class GenericAcpScenario:
    """The protocol-only ACP checks."""

    def __init__(self, context: DemoContext, cmd: list[str]) -> None:
        self.context = context
        self.cmd = cmd
        self.cwd = str(context.work.resolve())
        self.session_id = ""
        self.client: ClientConnection | None = None

    @property
    def _acp(self) -> ClientConnection:
        assert self.client is not None
        return self.client

    async def run(self, report: Report) -> None:
        """Run the checks; print the transcript into ``report``."""
        steps: list[Step] = [
            ("initialize", self._initialize), ("session/new", self._new_session),
            ("a prompt ends", self._prompt), ("a cancelled prompt ends", self._cancel),
        ]
        async with self.context.server(self.cmd) as server:
            self.client = ClientConnection(server.stream, name="demo acp")
            async with self.client:
                ok = await report.steps(steps)
        if ok:
            await _exits_cleanly(report, server)
        else:
            report.skip(["shutdown: the server exits cleanly"])

    async def _initialize(self) -> str:
        info = await self._acp.initialize(timeout=self.context.timeout)
        agent = info.agent_info
        name = f"{agent.name} {agent.version}" if isinstance(agent, s.Implementation) else "?"
        return f"{name}, ACP protocol {info.protocol_version}"

    async def _new_session(self) -> str:
        self.session_id = (await self._acp.new_session(self.cwd)).session_id
        return f"session {self.session_id}"

    async def _prompt(self) -> str:
        async with self._acp.prompt(self.session_id, GENERIC_PROMPT) as turn:
            updates = await turn.collect()
        _expect(turn.stop_reason not in (None, "cancelled"),
                f"the turn ended with {turn.stop_reason!r}")
        return f"stop reason {turn.stop_reason}, {len(updates)} updates"

    async def _cancel(self) -> str:
        async with self._acp.prompt(self.session_id, GENERIC_PROMPT) as turn:
            await self._acp.cancel(self.session_id)
            await turn.collect()
        _expect(turn.stop_reason is not None, "the cancelled turn has no stop reason")
        return f"stop reason {turn.stop_reason}"


class GenericWireScenario:
    """The protocol-only Wire checks."""

    def __init__(self, context: DemoContext, cmd: list[str]) -> None:
        self.context = context
        work = str(context.work.resolve())
        session = f"demo-{uuid.uuid4().hex[:12]}"
        self.cmd = [*cmd, "--work-dir", work] if context.ws \
            else [*cmd, "--session", session, "--work-dir", work]
        self.query = f"&session={session}" if context.ws else ""
        self.events: list[WireEvent] = []
        self.began = anyio.Event()
        self.client: WireClient | None = None

    @property
    def _wire(self) -> WireClient:
        assert self.client is not None
        return self.client

    async def _event(self, event: WireEvent) -> None:
        self.events.append(event)
        if isinstance(event, m.TurnBegin):
            self.began.set()

    async def run(self, report: Report) -> None:
        """Run the checks; print the transcript into ``report``."""
        steps: list[Step] = [
            ("initialize", self._initialize), ("a prompt ends", self._prompt),
            ("a cancelled prompt ends", self._cancel),
        ]
        async with self.context.server(self.cmd, self.query) as server:
            self.client = WireClient(server.stream, on_event=self._event, event_buffer=0,
                                     initialize_timeout=self.context.timeout, name="demo wire")
            async with self.client:
                ok = await report.steps(steps)
        if ok:
            await _exits_cleanly(report, server)
        else:
            report.skip(["shutdown: the server exits cleanly"])

    async def _initialize(self) -> str:
        result = await self._wire.initialize()
        _expect(result is not None, "no answer to initialize (the client fell back to v1)")
        assert result is not None
        return (f"{result.server.name} {result.server.version}, Wire protocol "
                f"{result.protocol_version}")

    async def _prompt(self) -> str:
        self.events = []
        result = await self._wire.prompt(GENERIC_PROMPT)
        _expect(result.status != "cancelled", f"the turn ended with {result.status!r}")
        _expect(any(isinstance(e, m.TurnEnd) for e in self.events), "no TurnEnd event")
        return f"status {result.status}, {len(self.events)} events"

    async def _cancel(self) -> str:
        self.events = []
        self.began = anyio.Event()
        statuses: list[Any] = []

        async def prompt() -> None:
            statuses.append((await self._wire.prompt(GENERIC_PROMPT)).status)

        async with anyio.create_task_group() as tg:
            tg.start_soon(prompt)
            await self.began.wait()
            try:
                await self._wire.cancel()
            except RpcError:  # the turn ended first: nothing left to cancel
                pass
        _expect(len(statuses) == 1, "the cancelled prompt was not answered")
        return f"status {statuses[0]}"
