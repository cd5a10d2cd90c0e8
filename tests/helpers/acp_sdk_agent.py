"""An ACP agent built on the official Python SDK (``agent-client-protocol`` 0.12.1).

Run as a script (``python acp_sdk_agent.py``): it serves ACP on stdin/stdout
with ``acp.run_agent`` and logs only to stderr. The tests of our client
drive it; the first text block of each prompt is a command, and results are
reported back as ``agent_message_chunk`` text:

``stream N``          N chunks ``"chunk 0"`` ... ``"chunk N-1"``, then ``end_turn``
``permission``        a ``tool_call``, then ``session/request_permission`` with
                      the options ``allow`` (allow_once) and ``deny`` (reject_once);
                      reports ``"selected <id>"`` or ``"cancelled"`` (the prompt
                      then ends with stopReason ``cancelled``)
``read PATH``         ``fs/read_text_file``; reports the text or ``"error <code>"``
``write PATH TEXT``   ``fs/write_text_file``; reports ``"written"`` or ``"error <code>"``
``terminal JSON``     ``terminal/create`` with ``{"command", "args", "limit", "kill"}``,
                      then (``kill``: ``terminal/kill``) ``wait_for_exit``,
                      ``output``, ``release``; reports a JSON summary
``caps``              reports the client capabilities received, as JSON
"""

from __future__ import annotations

import asyncio
import json
import logging
import sys
from typing import Any

import acp
from acp.schema import (
    AgentCapabilities,
    Implementation,
    InitializeResponse,
    NewSessionResponse,
    PermissionOption,
    PromptResponse,
    ToolCallUpdate,
)

log = logging.getLogger("sdk-agent")


class SdkAgent:
    """The agent: see the module docstring for its commands."""

    def __init__(self) -> None:
        self._conn: Any = None
        self._client_caps: Any = None
        self._sessions = 0
        self.cancelled: set[str] = set()

    def on_connect(self, conn: Any) -> None:
        self._conn = conn

    async def initialize(
        self, protocol_version: int, client_capabilities: Any = None, client_info: Any = None,
        **kwargs: Any,
    ) -> InitializeResponse:
        self._client_caps = client_capabilities
        log.info("initialize from %s", client_info.name if client_info else "?")
        return InitializeResponse(
            protocol_version=1,
            agent_capabilities=AgentCapabilities(),
            agent_info=Implementation(name="sdk-agent", version="0.12.1"),
        )

    async def new_session(self, cwd: str, mcp_servers: Any = None, **kwargs: Any) -> Any:
        self._sessions += 1
        return NewSessionResponse(session_id=f"sdk-{self._sessions}")

    async def cancel(self, session_id: str, **kwargs: Any) -> None:
        log.info("cancel %s", session_id)
        self.cancelled.add(session_id)

    async def prompt(self, prompt: list[Any], session_id: str, **kwargs: Any) -> PromptResponse:
        self.cancelled.discard(session_id)
        text = next((b.text for b in prompt if getattr(b, "type", "") == "text"), "")
        command, _, rest = text.partition(" ")
        handler = getattr(self, "_" + command, None)
        if handler is None:
            await self._say(session_id, f"unknown command {command!r}")
            return PromptResponse(stop_reason="end_turn")
        return await handler(session_id, rest)

    async def _say(self, session_id: str, text: str) -> None:
        await self._conn.session_update(session_id, acp.update_agent_message_text(text))

    async def _stream(self, sid: str, rest: str) -> PromptResponse:
        for i in range(int(rest)):
            await self._say(sid, f"chunk {i}")
        return PromptResponse(stop_reason="end_turn")

    async def _permission(self, sid: str, rest: str) -> PromptResponse:
        await self._conn.session_update(
            sid, acp.start_tool_call("tc-1", "Run the thing", kind="execute", status="pending")
        )
        response = await self._conn.request_permission(
            session_id=sid,
            tool_call=ToolCallUpdate(tool_call_id="tc-1", title="Run the thing"),
            options=[
                PermissionOption(option_id="allow", name="Allow", kind="allow_once"),
                PermissionOption(option_id="deny", name="Deny", kind="reject_once"),
            ],
        )
        outcome = response.outcome
        if outcome.outcome == "cancelled":
            await self._say(sid, "cancelled")
            return PromptResponse(stop_reason="cancelled")
        await self._say(sid, f"selected {outcome.option_id}")
        return PromptResponse(stop_reason="end_turn")

    async def _read(self, sid: str, rest: str) -> PromptResponse:
        try:
            result = await self._conn.read_text_file(session_id=sid, path=rest)
        except acp.RequestError as exc:
            await self._say(sid, f"error {exc.code}")
        else:
            await self._say(sid, result.content)
        return PromptResponse(stop_reason="end_turn")

    async def _write(self, sid: str, rest: str) -> PromptResponse:
        path, _, content = rest.partition(" ")
        try:
            await self._conn.write_text_file(session_id=sid, path=path, content=content)
        except acp.RequestError as exc:
            await self._say(sid, f"error {exc.code}")
        else:
            await self._say(sid, "written")
        return PromptResponse(stop_reason="end_turn")

    async def _terminal(self, sid: str, rest: str) -> PromptResponse:
        spec = json.loads(rest)
        created = await self._conn.create_terminal(
            session_id=sid, command=spec["command"], args=spec.get("args"),
            output_byte_limit=spec.get("limit"),
        )
        tid = created.terminal_id
        if spec.get("kill"):
            await self._conn.kill_terminal(session_id=sid, terminal_id=tid)
        status = await self._conn.wait_for_terminal_exit(session_id=sid, terminal_id=tid)
        output = await self._conn.terminal_output(session_id=sid, terminal_id=tid)
        await self._conn.release_terminal(session_id=sid, terminal_id=tid)
        try:
            await self._conn.terminal_output(session_id=sid, terminal_id=tid)
            after_release = "still there"
        except acp.RequestError as exc:
            after_release = exc.code
        summary = {
            "exit_code": status.exit_code,
            "signal": status.signal,
            "output": output.output,
            "truncated": output.truncated,
            "exited": output.exit_status is not None,
            "after_release": after_release,
        }
        await self._say(sid, json.dumps(summary))
        return PromptResponse(stop_reason="end_turn")

    async def _caps(self, sid: str, rest: str) -> PromptResponse:
        caps = self._client_caps.model_dump(mode="json", by_alias=True, exclude_none=True)
        await self._say(sid, json.dumps(caps))
        return PromptResponse(stop_reason="end_turn")


def main() -> None:
    logging.basicConfig(stream=sys.stderr, level=logging.INFO)
    asyncio.run(acp.run_agent(SdkAgent()))


if __name__ == "__main__":
    main()
