"""The session store protocol and what every store shares.

A :class:`Store` keeps the history of sessions: the runtime creates a
session, appends every event it sent to the client, and loads the history
back to replay or resume it. Two stores ship with wireproto:
:class:`~wireproto.agent.store.jsonl.JsonlStore` (one JSON Lines file per
session, what the CLI uses) and :class:`~wireproto.agent.store.memory.MemoryStore`
(nothing outside the process). Another store (a database, say) implements
the five methods of :class:`Store` and passes the conformance suite of
:mod:`wireproto.agent.store.conformance`.

The helpers here give every store the same behaviour where the protocol
pins it down: what a load restores (:meth:`StoredSession.record`), the
titles (:func:`title_of`), the listing order and its cursors
(:func:`page_of`), and a clock whose timestamps never repeat (:func:`now`).
"""

from __future__ import annotations

import base64
import binascii
import builtins
import os
import re
import threading
from collections.abc import Iterable
from datetime import datetime, timedelta, timezone
from pathlib import Path
from typing import Protocol, runtime_checkable

import msgspec

from wireproto.agent.api import SessionInfo
from wireproto.agent.content import ContentBlock, ResourceBlob, render_prompt
from wireproto.agent.events import (
    Event,
    HistoryCleared,
    OptionChanged,
    PlanModeChanged,
    TitleChanged,
    UserMessage,
)
from wireproto.errors import InvalidArgument

__all__ = [
    "PAGE_SIZE",
    "TITLE_LENGTH",
    "Store",
    "StoredSession",
    "iso",
    "now",
    "page_of",
    "title_of",
    "valid_session_id",
    "wireproto_home",
]

PAGE_SIZE = 50
"""Sessions per :meth:`Store.list` page."""

TITLE_LENGTH = 80
"""The longest title, in characters (cut, no ellipsis)."""

_ID = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.\-]{0,127}")
_CURSOR_PREFIX = "c1:"
_EPOCH = datetime(1970, 1, 1, tzinfo=timezone.utc)


def wireproto_home() -> Path:
    """Return ``$WIREPROTO_HOME`` (``~/.wireproto`` when unset or empty)."""
    env = os.environ.get("WIREPROTO_HOME")
    return Path(env).expanduser() if env else Path.home() / ".wireproto"


def valid_session_id(session_id: str) -> bool:
    """Whether ``session_id`` is a valid session id.

    Letters, digits, ``_``, ``-`` and ``.``, starting with a letter or digit,
    at most 128 characters: such an id can name a file without path tricks.
    """
    return _ID.fullmatch(session_id) is not None


def title_of(content: list[ContentBlock]) -> str | None:
    """The title a prompt gives its session.

    The first line of the prompt text (:func:`render_prompt`) that is not
    blank, cut to its first 80 characters with no ellipsis; ``None`` when the
    whole prompt is blank. Blob resources (which leave no text) are ignored
    without a warning.
    """
    text = render_prompt([b for b in content if not isinstance(b, ResourceBlob)])
    for line in text.splitlines():
        if line.strip():
            return line[:TITLE_LENGTH]
    return None


def iso(moment: datetime) -> str:
    """ISO 8601 in UTC, always with microseconds: ``2026-01-02T03:04:05.123456Z``."""
    utc = moment.astimezone(timezone.utc)
    if utc.microsecond:  # msgspec writes the same, ~30x faster than strftime
        return _encode_json(utc)[1:-1].decode()
    return utc.strftime("%Y-%m-%dT%H:%M:%S.%fZ")  # (msgspec would drop ".000000")


_encode_json = msgspec.json.Encoder().encode


def _micros(moment: datetime) -> int:
    delta = moment - _EPOCH
    return (delta.days * 86_400 + delta.seconds) * 1_000_000 + delta.microseconds


class _Clock:
    """UTC wall clock that never returns the same instant twice in a process."""

    def __init__(self) -> None:
        self._last = datetime.min.replace(tzinfo=timezone.utc)
        self._lock = threading.Lock()

    def now(self) -> datetime:
        with self._lock:
            moment = datetime.now(timezone.utc)
            if moment <= self._last:
                moment = self._last + timedelta(microseconds=1)
            self._last = moment
            return moment


_clock = _Clock()


def now() -> datetime:
    """The current UTC time, later than any earlier call in this process.

    Stores stamp sessions and events with it, so that sessions written by one
    process sort deterministically.
    """
    return _clock.now()


class StoredSession(msgspec.Struct):
    """A session as loaded from a store.

    Attributes:
        session_id: the id.
        cwd: the working directory the session was created with.
        roots: its extra root directories.
        options: option values recorded by ``OptionChanged`` events (the last
            one of each option wins; they survive ``HistoryCleared``).
        plan_mode: the last recorded ``PlanModeChanged`` state.
        title: the first prompt's title (``None`` before the first prompt
            with text); it survives ``HistoryCleared``.
        updated_at: when the last event was recorded (UTC), or the creation
            time when there is none.
        events: the history to replay: every event after the last
            ``HistoryCleared``, in order, except ``OptionChanged`` and
            ``HistoryCleared`` themselves.
    """

    session_id: str
    cwd: str
    roots: list[str]
    options: dict[str, str | bool]
    plan_mode: bool
    title: str | None
    updated_at: datetime
    events: list[Event]

    def record(self, event: Event, ts: datetime) -> None:
        """Fold one stored event (recorded at ``ts``) into this session.

        A store's :meth:`Store.load` starts from the session's header (empty
        history, ``updated_at`` its creation time) and records every stored
        event in order; this gives every store the same load semantics.
        """
        self.updated_at = ts
        if isinstance(event, OptionChanged):
            self.options[event.option_id] = event.value
            return
        if isinstance(event, HistoryCleared):
            self.events.clear()
            return
        if isinstance(event, PlanModeChanged):
            self.plan_mode = event.enabled
        elif isinstance(event, UserMessage) and self.title is None:
            self.title = title_of(event.content)
        elif isinstance(event, TitleChanged):  # set by the agent: the latest wins
            self.title = event.title
        self.events.append(event)


@runtime_checkable
class Store(Protocol):
    """Where the history of sessions lives: the protocol every store implements.

    Methods are synchronous and meant to be cheap: the runtime calls them
    from the event loop, once per burst of events. Session ids are checked
    with :func:`valid_session_id`.

    Guarantees a store gives (the conformance suite checks them):

    * **Create is atomic.** After a crash a session exists with its
      ``cwd`` and ``roots``, or not at all; a half-created session never
      blocks its id.
    * **Appends are durable against a crash of the process.** Once
      :meth:`append` returns, its events survive the process being killed
      (``kill -9``); losing power may lose the newest ones. The events of one
      call are kept in order; a call cut short by a crash loses at most its
      own events, never earlier ones, and never makes the session unreadable.
    * **Damage is never fatal.** A damaged event is skipped on load (with a
      warning). A session whose header cannot be read is moved out of the way
      (kept for inspection, with a warning): it is not listed, loading it is
      ``NotFound``, and its id can be created again.
    * **Several stores over the same data** (e.g. two processes) see each
      other's sessions on :meth:`list` and :meth:`load`.
    """

    def create(self, session_id: str, cwd: str, roots: list[str]) -> None:
        """Create an empty session.

        Raises:
            InvalidArgument: the id is invalid, or a session with this id exists.
        """

    def append(self, session_id: str, *events: Event) -> None:
        """Record ``events`` (in order) at the end of the session's history.

        Events for a session that does not exist (deleted meanwhile) are
        dropped with a warning.

        Raises:
            InvalidArgument: the id is invalid.
        """

    def load(self, session_id: str) -> StoredSession:
        """Read a whole session (see :class:`StoredSession` for what is restored).

        Raises:
            NotFound: no such session, an invalid id, or an unreadable header.
        """

    def list(
        self, *, cwd: str | None = None, cursor: str | None = None, limit: int = PAGE_SIZE
    ) -> tuple[builtins.list[SessionInfo], str | None]:
        """List sessions, newest activity first (ties: by id); see :func:`page_of`.

        Raises:
            InvalidArgument: the cursor is invalid.
        """

    def delete(self, session_id: str) -> None:
        """Delete a session; unknown and invalid ids are ignored."""


# -------------------------------------------------------------- listing


def page_of(
    sessions: Iterable[tuple[datetime, SessionInfo]],
    *,
    cwd: str | None = None,
    cursor: str | None = None,
    limit: int = PAGE_SIZE,
) -> tuple[list[SessionInfo], str | None]:
    """One page of a session listing, as :meth:`Store.list` returns it.

    Args:
        sessions: every session with its last activity (UTC); its
            ``SessionInfo.updated_at`` should be :func:`iso` of that time.
        cwd: keep only sessions with this working directory (compared
            normalized, so ``/p/`` matches ``/p``).
        cursor: the ``next`` cursor of the previous page (``None`` or ``""``
            for the first page). A walk with cursors neither repeats nor
            skips a session when others change between pages.
        limit: the page size (at least 1).

    Returns:
        ``(sessions, next_cursor)``, newest activity first, ties by id;
        ``next_cursor`` is ``None`` on the last page.

    Raises:
        InvalidArgument: the cursor is invalid.
    """
    after = _decode_cursor(cursor) if cursor else None
    wanted = os.path.normpath(cwd) if cwd is not None else None
    rows: list[tuple[tuple[int, str], SessionInfo]] = []
    for updated, info in sessions:
        if wanted is not None and os.path.normpath(info.cwd) != wanted:
            continue
        key = (-_micros(updated), info.session_id)
        if after is not None and key <= after:
            continue
        rows.append((key, info))
    rows.sort(key=lambda row: row[0])
    page = rows[: max(limit, 1)]
    more = len(rows) > len(page)
    next_cursor = _encode_cursor(page[-1][0]) if more and page else None
    return [info for _, info in page], next_cursor


def _encode_cursor(key: tuple[int, str]) -> str:
    raw = _CURSOR_PREFIX + msgspec.json.encode(list(key)).decode()
    return base64.urlsafe_b64encode(raw.encode()).decode().rstrip("=")


def _decode_cursor(cursor: str) -> tuple[int, str]:
    try:
        padded = cursor + "=" * (-len(cursor) % 4)
        raw = base64.urlsafe_b64decode(padded.encode("ascii")).decode()
        if not raw.startswith(_CURSOR_PREFIX):
            raise ValueError("unknown cursor version")
        micros, session_id = msgspec.json.decode(
            raw[len(_CURSOR_PREFIX) :].encode(), type=tuple[int, str]
        )
    except (ValueError, binascii.Error, msgspec.DecodeError, UnicodeError):
        raise InvalidArgument(f"invalid cursor {cursor!r}") from None
    return micros, session_id
