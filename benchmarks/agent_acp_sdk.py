"""An ACP agent on the official Python SDK doing the demo agent's ``hello`` work (bench_agent.py).

Run as ``python agent_acp_sdk.py SESSIONS_DIR``: it serves ACP on stdin/stdout
with ``acp.run_agent``. For each prompt it does what wireproto's demo agent
does for a plain-text prompt, as an SDK user would write it:

* sends ``"You said: TEXT"`` as four ``agent_message_chunk`` updates sharing
  one message id, then a ``session_info_update`` (title, updated time);
* keeps the same history in a JSON Lines file per session: a header on
  ``session/new``, then one record per event (the prompt, each chunk, the
  turn's end), each record one ``write`` on a handle opened once per
  session and never buffered in the process (so ``kill -9`` loses nothing
  already sent), encoded with the standard library's ``json``.
"""

from __future__ import annotations

import asyncio
import json
import os
import sys
import uuid
from datetime import datetime, timezone
from pathlib import Path
from typing import Any, BinaryIO

import acp
from acp import schema


def _now() -> str:
    return datetime.now(timezone.utc).strftime("%Y-%m-%dT%H:%M:%S.%fZ")


def _pieces(text: str, parts: int = 4) -> list[str]:
    """Split ``text`` into up to ``parts`` chunks, as the demo agent does."""
    if len(text) < 2:
        return [text]
    size = -(-len(text) // parts)
    return [text[i : i + size] for i in range(0, len(text), size)]


class EchoAgent:
    """Echo each prompt the way the demo agent does (see the module docstring)."""

    def __init__(self, sessions: Path) -> None:
        self._dir = sessions
        self._files: dict[str, BinaryIO] = {}
        self._titles: dict[str, str] = {}
        self._conn: Any = None

    def on_connect(self, conn: Any) -> None:
        self._conn = conn

    async def initialize(self, protocol_version: int, **kwargs: Any) -> schema.InitializeResponse:
        return schema.InitializeResponse(
            protocol_version=1,
            agent_capabilities=schema.AgentCapabilities(load_session=True),
            agent_info=schema.Implementation(name="sdk-echo", version=acp.__name__),
        )

    async def new_session(self, cwd: str, mcp_servers: Any = None, **kwargs: Any
                          ) -> schema.NewSessionResponse:
        session_id = f"sess_{uuid.uuid4().hex[:16]}"
        self._dir.mkdir(parents=True, exist_ok=True)
        file = open(self._dir / f"{session_id}.jsonl", "ab", buffering=0)  # noqa: ASYNC230
        header = {"type": "session", "session_id": session_id, "cwd": cwd, "roots": [],
                  "version": 1, "ts": _now()}
        file.write(json.dumps(header, separators=(",", ":")).encode() + b"\n")
        self._files[session_id] = file
        return schema.NewSessionResponse(session_id=session_id)

    def _record(self, session_id: str, event: dict[str, Any]) -> None:
        line = {"event": event, "ts": _now()}
        self._files[session_id].write(json.dumps(line, separators=(",", ":")).encode() + b"\n")

    async def prompt(self, prompt: list[Any], session_id: str, **kwargs: Any
                     ) -> schema.PromptResponse:
        text = "".join(b.text for b in prompt if getattr(b, "type", "") == "text")
        self._record(session_id, {
            "type": "user_message", "content": [{"type": "text", "text": text}],
            "message_id": f"user_{uuid.uuid4().hex[:16]}",
        })
        message_id = f"msg_{uuid.uuid4().hex[:16]}"
        for piece in _pieces(f"You said: {text}"):
            await self._conn.session_update(session_id, schema.AgentMessageChunk(
                session_update="agent_message_chunk",
                content=schema.TextContentBlock(type="text", text=piece),
                message_id=message_id,
            ))
            self._record(session_id, {"type": "message", "text": piece, "message_id": message_id})
        title = self._titles.setdefault(session_id, text.splitlines()[0][:80] if text else "")
        await self._conn.session_update(session_id, schema.SessionInfoUpdate(
            session_update="session_info_update", title=title, updated_at=_now(),
        ))
        self._record(session_id, {"type": "turn_end", "stop_reason": "end_turn"})
        return schema.PromptResponse(stop_reason="end_turn")

    async def cancel(self, session_id: str, **kwargs: Any) -> None:
        return None


if __name__ == "__main__":
    os.umask(0o077)
    asyncio.run(acp.run_agent(EchoAgent(Path(sys.argv[1]))))  # type: ignore[arg-type]
