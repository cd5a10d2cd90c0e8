"""A session store in the process's memory: :class:`MemoryStore`.

Nothing is written anywhere: sessions live as long as the store object
(and so, usually, the process). It is the default of an embedded runtime
(``Runtime(agent)``, ``serve_acp(agent)``, ``serve_wire(agent)``), the
store for tests, and a reference for writing other stores.

Events are kept by reference, not copied: an agent must not change an
event after emitting it (the built-in :class:`~wireproto.agent.turn.Turn`
methods never do).
"""

from __future__ import annotations

import builtins
import logging
from dataclasses import dataclass, field
from datetime import datetime

from wireproto.agent.api import SessionInfo
from wireproto.agent.events import Event, TitleChanged, UserMessage
from wireproto.agent.store.base import (
    PAGE_SIZE,
    StoredSession,
    iso,
    now,
    page_of,
    title_of,
    valid_session_id,
)
from wireproto.errors import InvalidArgument, NotFound

__all__ = ["MemoryStore"]

log = logging.getLogger(__name__)


@dataclass
class _Session:
    cwd: str
    roots: list[str]
    created: datetime
    updated: datetime
    title: str | None = None
    events: list[tuple[Event, datetime]] = field(default_factory=list)


class MemoryStore:
    """Sessions in a dictionary (implements :class:`~wireproto.agent.store.base.Store`).

    Share one instance between runtimes to share their sessions.
    """

    def __init__(self) -> None:
        self._sessions: dict[str, _Session] = {}

    def create(self, session_id: str, cwd: str, roots: list[str]) -> None:
        """Create an empty session.

        Raises:
            InvalidArgument: invalid id, or a session with this id exists.
        """
        _check(session_id)
        if session_id in self._sessions:
            raise InvalidArgument(f"session {session_id} already exists")
        created = now()
        self._sessions[session_id] = _Session(cwd, list(roots), created, created)

    def append(self, session_id: str, *events: Event) -> None:
        """Record ``events``; events of an unknown session are dropped with a warning.

        Raises:
            InvalidArgument: invalid id.
        """
        _check(session_id)
        session = self._sessions.get(session_id)
        if session is None:
            log.warning("session %s does not exist; %d event(s) not recorded",
                        session_id, len(events))
            return
        ts = now()
        for event in events:
            session.events.append((event, ts))
            session.updated = ts
            if session.title is None and isinstance(event, UserMessage):
                session.title = title_of(event.content)
            elif isinstance(event, TitleChanged):
                session.title = event.title

    def load(self, session_id: str) -> StoredSession:
        """The session's history, options and title.

        Raises:
            NotFound: no such session (or an invalid id).
        """
        session = self._sessions.get(session_id)
        if session is None:
            raise NotFound(f"Session {session_id} not found")
        stored = StoredSession(
            session_id=session_id, cwd=session.cwd, roots=list(session.roots), options={},
            plan_mode=False, title=None, updated_at=session.created, events=[],
        )
        for event, ts in session.events:
            stored.record(event, ts)
        return stored

    def list(
        self, *, cwd: str | None = None, cursor: str | None = None, limit: int = PAGE_SIZE
    ) -> tuple[builtins.list[SessionInfo], str | None]:
        """List sessions, newest activity first (see :func:`page_of`).

        Raises:
            InvalidArgument: the cursor is invalid.
        """
        rows = (
            (s.updated, SessionInfo(sid, s.cwd, s.title, iso(s.updated), tuple(s.roots)))
            for sid, s in self._sessions.items()
        )
        return page_of(rows, cwd=cwd, cursor=cursor, limit=limit)

    def delete(self, session_id: str) -> None:
        """Forget a session; unknown ids are ignored."""
        self._sessions.pop(session_id, None)


def _check(session_id: str) -> None:
    if not valid_session_id(session_id):
        raise InvalidArgument(f"invalid session id {session_id!r}")
