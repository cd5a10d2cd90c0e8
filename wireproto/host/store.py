"""The host's session records and capability observations, on disk.

Theory of operation
-------------------
A :class:`HostStore` keeps one JSON file per session under
``DIR/sessions/`` (the :class:`SessionRecord`: executor, working directory,
profile, ``execution.overrides``, the harness's session id per agent) and,
**apart from it**, the capability observations under ``DIR/observations/``:
what running harnesses reported about themselves (see
:class:`Observation`). Observations are never mixed with the host's own
settings or with any check the host makes of its own connection settings.
Files are replaced atomically, so a host that restarts (a cold resume)
reads exactly what was saved.
"""

from __future__ import annotations

import enum
import os
import re
import tempfile
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

import msgspec

from wireproto.errors import InvalidArgument, NotFound

__all__ = ["AuthState", "Execution", "HostStore", "Observation", "SessionRecord", "now"]

_SAFE_ID = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.-]{0,127}$")


class AuthState(str, enum.Enum):
    """The authentication state a harness reported."""

    NEEDS_AUTHENTICATION = "needs_authentication"
    AUTHENTICATED = "authenticated"
    UNKNOWN = "unknown"


class Execution(msgspec.Struct, kw_only=True, omit_defaults=True):
    """A session's execution settings; ``overrides`` are the session override layer."""

    overrides: dict[str, Any] = msgspec.field(default_factory=dict)


class SessionRecord(msgspec.Struct, kw_only=True, omit_defaults=True):
    """What the host saves about one of its sessions.

    Attributes:
        session_id: the host's session id.
        executor: the executor of the main agent.
        cwd: the working directory given to harnesses.
        profile: the profile the session uses (``None``: none).
        execution: holds ``overrides`` (``execution.overrides.<setting>``).
        harness_sessions: agent -> the harness's ACP session id (for resuming).
    """

    session_id: str
    executor: str
    cwd: str
    profile: str | None = None
    execution: Execution = msgspec.field(default_factory=Execution)
    harness_sessions: dict[str, str] = msgspec.field(default_factory=dict)


class Observation(msgspec.Struct, frozen=True, kw_only=True, omit_defaults=True):
    """One thing a running harness reported about itself.

    Attributes:
        kind: what was observed (``"auth"``).
        state: the observed state (an :class:`AuthState` value for ``auth``).
        source: the protocol message it came from (e.g. ``"acp session/new error -32000"``).
        cwd: the working directory of the binding.
        observed_at: when, ISO 8601 UTC.
        binding_id / agent: the binding that observed it.
        detail: extra facts (e.g. the advertised ``authMethods`` ids).
    """

    kind: str
    state: str
    source: str
    cwd: str
    observed_at: str
    binding_id: str
    agent: str
    detail: dict[str, Any] = msgspec.field(default_factory=dict)


def now() -> str:
    """The current time, ISO 8601 UTC with microseconds."""
    return datetime.now(timezone.utc).isoformat(timespec="microseconds").replace("+00:00", "Z")


def check_id(session_id: str) -> str:
    """Return ``session_id`` if it is safe as a file name; else raise InvalidArgument."""
    if not _SAFE_ID.match(session_id):
        raise InvalidArgument(f"invalid session id {session_id!r}")
    return session_id


class HostStore:
    """Session records and observations under one directory.

    Args:
        directory: created if missing.
    """

    def __init__(self, directory: str | os.PathLike[str]) -> None:
        self.directory = Path(directory)
        self._sessions = self.directory / "sessions"
        self._observations = self.directory / "observations"
        self._records = msgspec.json.Decoder(SessionRecord)
        self._obs = msgspec.json.Decoder(list[Observation])

    def _write(self, path: Path, data: bytes) -> None:
        path.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=".tmp-")
        try:
            with os.fdopen(fd, "wb") as f:
                f.write(data)
            os.replace(tmp, path)
        except BaseException:
            Path(tmp).unlink(missing_ok=True)
            raise

    def save(self, record: SessionRecord) -> None:
        """Write ``record`` (atomically)."""
        path = self._sessions / f"{check_id(record.session_id)}.json"
        self._write(path, msgspec.json.encode(record))

    def load(self, session_id: str) -> SessionRecord:
        """Read a session record.

        Raises:
            NotFound: no such session.
        """
        path = self._sessions / f"{check_id(session_id)}.json"
        try:
            return self._records.decode(path.read_bytes())
        except FileNotFoundError:
            raise NotFound(f"Session {session_id} not found") from None

    def exists(self, session_id: str) -> bool:
        """Whether a record for ``session_id`` exists."""
        return (self._sessions / f"{check_id(session_id)}.json").exists()

    def observations(self, session_id: str) -> list[Observation]:
        """The saved observations of a session, oldest first (``[]`` when none)."""
        path = self._observations / f"{check_id(session_id)}.json"
        try:
            return self._obs.decode(path.read_bytes())
        except FileNotFoundError:
            return []

    def observe(self, session_id: str, observation: Observation) -> None:
        """Append one observation."""
        items = self.observations(session_id)
        items.append(observation)
        self._write(self._observations / f"{check_id(session_id)}.json",
                    msgspec.json.encode(items))

    def clear_observations(self, session_id: str, agent: str) -> int:
        """Drop the observations made for ``agent`` (its binding changed); returns how many."""
        items = self.observations(session_id)
        kept = [o for o in items if o.agent != agent]
        if len(kept) != len(items):
            self._write(self._observations / f"{check_id(session_id)}.json",
                        msgspec.json.encode(kept))
        return len(items) - len(kept)
