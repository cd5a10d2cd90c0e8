"""ACP SDK agent for the peer benchmark: the SDK's own stdio agent connection.

Started by ``peer_acp_sdk.py`` through the SDK's ``spawn_agent_process``.
Serves ``session/set_mode`` (answers ``{}``) and ``session/prompt`` (whose
text is a number N: streams N ``agent_message_chunk`` updates through the
SDK's ``AgentSideConnection.session_update``, then answers ``end_turn``),
exactly as an SDK-based agent would, via ``acp.run_agent``.
"""

from __future__ import annotations

import asyncio
from typing import Any

import acp
from _messages import CHUNK_TEXT
from acp import schema
from acp.helpers import update_agent_message_text


class BenchAgent:
    """The smallest agent doing the benchmark's work."""

    def on_connect(self, conn: Any) -> None:
        self._conn = conn

    async def initialize(self, protocol_version: int, **kwargs: Any) -> schema.InitializeResponse:
        return schema.InitializeResponse(protocol_version=1)

    async def set_session_mode(
        self, session_id: str, mode_id: str, **kwargs: Any
    ) -> schema.SetSessionModeResponse:
        return schema.SetSessionModeResponse()

    async def prompt(self, prompt: list[Any], session_id: str, **kwargs: Any
                     ) -> schema.PromptResponse:
        count = int(prompt[0].text)
        for _ in range(count):
            await self._conn.session_update(session_id, update_agent_message_text(CHUNK_TEXT))
        return schema.PromptResponse(stop_reason="end_turn")


if __name__ == "__main__":
    asyncio.run(acp.run_agent(BenchAgent()))  # type: ignore[arg-type]
