"""Session persistence (placeholder interface; implemented by the store task)."""

from __future__ import annotations

import msgspec
from datetime import datetime
from pathlib import Path

from wireproto.agent.api import SessionInfo
from wireproto.agent.events import Event


class StoredSession(msgspec.Struct):
    """A session as loaded from disk."""

    session_id: str
    cwd: str
    roots: list[str]
    options: dict[str, str | bool]
    plan_mode: bool
    title: str | None
    updated_at: datetime
    events: list[Event]


class SessionStore:
    """JSON Lines session files under a directory."""

    def __init__(self, root: Path | None = None) -> None:
        self.root = root

    def create(self, session_id: str, cwd: str, roots: list[str]) -> None:
        raise NotImplementedError

    def append(self, session_id: str, event: Event) -> None:
        raise NotImplementedError

    def load(self, session_id: str) -> StoredSession:
        raise NotImplementedError

    def list(
        self, *, cwd: str | None = None, cursor: str | None = None, limit: int = 50
    ) -> tuple[list[SessionInfo], str | None]:
        raise NotImplementedError

    def delete(self, session_id: str) -> None:
        raise NotImplementedError
