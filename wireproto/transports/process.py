"""What a client learns about the process it spawned (no transport imported here).

``connect_acp`` and ``connect_wire`` set their client's ``process`` to
:func:`process_of` the stream they opened: the spawned child as a
:class:`ProcessHandle` (``pid``, ``returncode`` once it exited and
``ended_by`` after the shutdown), or ``None`` for a WebSocket connection.
"""

from __future__ import annotations

from typing import Protocol, runtime_checkable

__all__ = ["ProcessHandle", "process_of"]


@runtime_checkable
class ProcessHandle(Protocol):
    """A spawned child process, as seen by the client that talks to it."""

    @property
    def pid(self) -> int:
        """The child's process id."""

    @property
    def returncode(self) -> int | None:
        """Its exit status (negative: the signal that killed it); ``None`` while running."""

    ended_by: str | None
    """How the shutdown ended it: ``"stdin closed"``, ``"SIGTERM"`` or ``"SIGKILL"``."""


def process_of(stream: object) -> ProcessHandle | None:
    """The child process behind ``stream`` (``None`` when there is none)."""
    return stream if isinstance(stream, ProcessHandle) else None
