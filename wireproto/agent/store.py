"""Session persistence: one JSON Lines file per session, appended per event.

Theory of operation
-------------------
A :class:`SessionStore` keeps its files in one directory, by default
``$WIREPROTO_HOME/sessions`` (``~/.wireproto/sessions`` when the variable is
unset). Session ``ID`` lives in ``ID.jsonl``; ids are checked against a
conservative pattern (letters, digits, ``_``, ``-``, ``.``; starting with a
letter or digit; at most 128 characters) so that an id can never name a path
outside the directory.

Line 1 is the header, written once by :meth:`SessionStore.create`::

    {"type":"session","session_id":"sess_1","cwd":"/p","roots":[],"version":1,"ts":"...Z"}

Every later line is one event of :mod:`wireproto.agent.events` (a tagged
msgspec Struct) with the time it was recorded::

    {"event":{"type":"message","text":"Hi","message_id":"msg_1"},"ts":"2026-01-02T03:04:05.123456Z"}

Each event is written with a single ``write`` on a file opened for append,
so nothing is buffered in the process: a crash, even ``kill -9`` in the middle
of a turn, loses at most the line being written. Readers decode line by line
and skip (with a warning) any line that does not decode, so a truncated or
corrupt line is never fatal. Before the first append of a process to a file
that does not end in a newline (a line cut short by a crash), a newline is
written first, so the partial line stays isolated.

``ts`` is the last key of every line, header included. The newest activity of
a session is therefore found in the last few bytes of its file: listing reads
the header, the lines up to the first prompt (for the title; remembered once
found) and the file's tail, never the whole history. Timestamps come from a
process-wide clock that never repeats, so sessions written by one process
sort deterministically.

What :meth:`SessionStore.load` restores:

* ``events``: every event after the last ``HistoryCleared``, in order and
  with their original message ids, except ``OptionChanged`` and
  ``HistoryCleared`` themselves;
* ``options`` (every ``OptionChanged`` of the file, the last one winning) and
  ``plan_mode`` (the last ``PlanModeChanged``), both surviving a clear;
* ``title``: see :func:`title_of`. The title names the session, so it is taken
  from the first prompt of the whole file and **survives** ``/clear``.
"""

from __future__ import annotations

import base64
import binascii
import builtins
import logging
import os
import re
import threading
from datetime import datetime, timedelta, timezone
from pathlib import Path
from typing import BinaryIO

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
from wireproto.errors import InvalidArgument, NotFound

__all__ = [
    "PAGE_SIZE",
    "SessionStore",
    "StoredSession",
    "title_of",
    "valid_session_id",
    "wireproto_home",
]

log = logging.getLogger(__name__)

PAGE_SIZE = 50
"""Sessions per :meth:`SessionStore.list` page."""

TITLE_LENGTH = 80
"""The longest title, in characters (cut, no ellipsis)."""

_ID = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.\-]{0,127}")
_SUFFIX = ".jsonl"
_TAIL_BYTES = 256
_TAIL_TS = re.compile(rb'"ts":"([0-9T:.+\-Z]+)"}\n\Z')
_CURSOR_PREFIX = "c1:"


def wireproto_home() -> Path:
    """Return ``$WIREPROTO_HOME`` (``~/.wireproto`` when unset or empty)."""
    env = os.environ.get("WIREPROTO_HOME")
    return Path(env).expanduser() if env else Path.home() / ".wireproto"


def valid_session_id(session_id: str) -> bool:
    """Whether ``session_id`` can name a session file (no path tricks possible)."""
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


def _iso(moment: datetime) -> str:
    """ISO 8601 in UTC, always with microseconds: ``2026-01-02T03:04:05.123456Z``."""
    return moment.astimezone(timezone.utc).strftime("%Y-%m-%dT%H:%M:%S.%fZ")


def _micros(moment: datetime) -> int:
    delta = moment - datetime(1970, 1, 1, tzinfo=timezone.utc)
    return (delta.days * 86_400 + delta.seconds) * 1_000_000 + delta.microseconds


class _Clock:
    """UTC wall clock that never returns the same instant twice in a process."""

    def __init__(self) -> None:
        self._last = datetime.min.replace(tzinfo=timezone.utc)
        self._lock = threading.Lock()

    def now(self) -> datetime:
        with self._lock:
            now = datetime.now(timezone.utc)
            if now <= self._last:
                now = self._last + timedelta(microseconds=1)
            self._last = now
            return now


_clock = _Clock()


class _Header(msgspec.Struct, tag="session"):
    """The first line of a session file."""

    session_id: str
    cwd: str
    roots: list[str]
    version: int
    ts: datetime


class _Line(msgspec.Struct):
    """One event line; ``ts`` must stay the last field (see the tail scan)."""

    event: Event
    ts: datetime


_encoder = msgspec.json.Encoder()
_header_decoder = msgspec.json.Decoder(_Header)
_line_decoder = msgspec.json.Decoder(_Line)
_ts_decoder = msgspec.json.Decoder(datetime)


class StoredSession(msgspec.Struct):
    """A session as loaded from disk.

    Attributes:
        session_id: the id.
        cwd: the working directory the session was created with.
        roots: its extra root directories.
        options: option values recorded by ``OptionChanged`` events.
        plan_mode: the last recorded plan-mode state.
        title: the first prompt's title (``None`` before the first prompt).
        updated_at: when the last event was recorded (UTC).
        events: the history to replay (see the module docstring).
    """

    session_id: str
    cwd: str
    roots: list[str]
    options: dict[str, str | bool]
    plan_mode: bool
    title: str | None
    updated_at: datetime
    events: list[Event]


class _Summary(msgspec.Struct):
    """What listing remembers about a file: its header line and title.

    The raw header line identifies the file (it holds the creation time to
    the microsecond), so a session deleted and created again is noticed.
    """

    raw_header: bytes
    header: _Header
    title: str | None


class SessionStore:
    """JSON Lines session files in one directory.

    Args:
        root: the directory holding the session files (default
            ``$WIREPROTO_HOME/sessions``, read when the store is made). It is
            created on the first :meth:`create`.

    All methods are synchronous and cheap (one small write per event); they
    are called from the event loop.
    """

    def __init__(self, root: Path | str | None = None) -> None:
        self.root = Path(root) if root is not None else wireproto_home() / "sessions"
        self._clean: set[str] = set()  # files known to end with a newline
        self._summaries: dict[str, _Summary] = {}

    # --------------------------------------------------------------- paths

    def path(self, session_id: str) -> Path:
        """The file of ``session_id``.

        Raises:
            InvalidArgument: the id is not a valid session id.
        """
        if not valid_session_id(session_id):
            raise InvalidArgument(f"invalid session id {session_id!r}")
        return self.root / f"{session_id}{_SUFFIX}"

    # ------------------------------------------------------------- writing

    def create(self, session_id: str, cwd: str, roots: list[str]) -> None:
        """Create the file of a new session (its header line).

        Raises:
            InvalidArgument: invalid id, or a session with this id exists.
        """
        path = self.path(session_id)
        self.root.mkdir(mode=0o700, parents=True, exist_ok=True)
        header = _Header(session_id, cwd, list(roots), 1, _clock.now())
        try:
            fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_APPEND, 0o600)
        except FileExistsError:
            raise InvalidArgument(f"session {session_id} already exists") from None
        try:
            _write_all(fd, _encoder.encode(header) + b"\n")
        finally:
            os.close(fd)
        self._summaries.pop(session_id, None)
        self._clean.add(session_id)

    def append(self, session_id: str, event: Event) -> None:
        """Append ``event`` to the session's file, flushed to the OS at once.

        An event for a session whose file is gone (deleted meanwhile) is
        dropped with a warning.

        Raises:
            InvalidArgument: invalid id.
        """
        path = self.path(session_id)
        data = _encoder.encode(_Line(event, _clock.now())) + b"\n"
        try:
            fd = os.open(path, os.O_RDWR | os.O_APPEND)
        except FileNotFoundError:
            log.warning(
                "session %s has no file; %s event not recorded", session_id, type(event).__name__
            )
            return
        try:
            if session_id not in self._clean:
                size = os.fstat(fd).st_size
                if size and os.pread(fd, 1, size - 1) != b"\n":
                    log.warning("%s: ends with a partial line; starting a new line", path)
                    data = b"\n" + data
                self._clean.add(session_id)
            _write_all(fd, data)
        finally:
            os.close(fd)

    def delete(self, session_id: str) -> None:
        """Delete a session's file; unknown (and invalid) ids are ignored."""
        self._clean.discard(session_id)
        self._summaries.pop(session_id, None)
        if valid_session_id(session_id):
            self.path(session_id).unlink(missing_ok=True)

    # ------------------------------------------------------------- reading

    def load(self, session_id: str) -> StoredSession:
        """Read a whole session (see the module docstring for what is restored).

        Raises:
            NotFound: no such session (or its header is unreadable).
        """
        if not valid_session_id(session_id):
            raise NotFound(f"Session {session_id} not found")
        path = self.path(session_id)
        try:
            data = path.read_bytes()
        except (FileNotFoundError, NotADirectoryError):
            raise NotFound(f"Session {session_id} not found") from None
        lines = data.split(b"\n")
        header = _decode_header(path, lines[0])
        if header is None:
            raise NotFound(f"Session {session_id} not found")
        stored = StoredSession(
            session_id=session_id, cwd=header.cwd, roots=header.roots, options={},
            plan_mode=False, title=None, updated_at=header.ts, events=[],
        )
        for number, raw in enumerate(lines[1:], start=2):
            line = _decode_line(path, number, raw)
            if line is None:
                continue
            stored.updated_at = line.ts
            _apply(stored, line.event)
        return stored

    def list(
        self, *, cwd: str | None = None, cursor: str | None = None, limit: int = PAGE_SIZE
    ) -> tuple[builtins.list[SessionInfo], str | None]:
        """List sessions, newest activity first (ties: by id).

        Args:
            cwd: only sessions with this working directory.
            cursor: the ``next`` cursor of the previous page (``None`` or
                ``""`` for the first page).
            limit: the page size.

        Returns:
            ``(sessions, next_cursor)``; ``next_cursor`` is ``None`` on the
            last page.

        Raises:
            InvalidArgument: the cursor is invalid.
        """
        after = _decode_cursor(cursor) if cursor else None
        wanted = os.path.normpath(cwd) if cwd is not None else None
        rows: builtins.list[tuple[tuple[int, str], SessionInfo]] = []
        for session_id, path in self._files():
            found = self._summary(session_id, path)
            if found is None:
                continue
            summary, updated = found
            header = summary.header
            if wanted is not None and os.path.normpath(header.cwd) != wanted:
                continue
            key = (-_micros(updated), session_id)
            if after is not None and key <= after:
                continue
            info = SessionInfo(
                session_id, header.cwd, summary.title, _iso(updated), tuple(header.roots)
            )
            rows.append((key, info))
        rows.sort(key=lambda row: row[0])
        page = rows[: max(limit, 1)]
        more = len(rows) > len(page)
        next_cursor = _encode_cursor(page[-1][0]) if more and page else None
        return [info for _, info in page], next_cursor

    def _files(self) -> builtins.list[tuple[str, Path]]:
        try:
            entries = list(os.scandir(self.root))
        except FileNotFoundError:
            return []
        found: builtins.list[tuple[str, Path]] = []
        for entry in entries:
            session_id = entry.name[: -len(_SUFFIX)]
            if entry.name.endswith(_SUFFIX) and valid_session_id(session_id):
                found.append((session_id, Path(entry.path)))
        return found

    def _summary(self, session_id: str, path: Path) -> tuple[_Summary, datetime] | None:
        """A file's header and title (cached once the title is known) and newest ``ts``."""
        try:
            with path.open("rb") as file:
                first = file.readline()
                summary = self._summaries.get(session_id)
                if summary is None or summary.raw_header != first or summary.title is None:
                    summary = _scan_summary(path, first, file)
                    if summary is None:
                        self._summaries.pop(session_id, None)
                        return None
                    self._summaries[session_id] = summary
                updated = _tail_ts(file)
        except FileNotFoundError:
            return None
        if updated is None:  # a damaged last line: find the newest good one
            updated = summary.header.ts
            for raw in path.read_bytes().split(b"\n")[1:]:
                try:
                    updated = _line_decoder.decode(raw).ts
                except msgspec.DecodeError:
                    continue
        return summary, updated


# ----------------------------------------------------------------- helpers


def _write_all(fd: int, data: bytes) -> None:
    view = memoryview(data)
    while view:
        written = os.write(fd, view)
        view = view[written:]


def _decode_header(path: Path, raw: bytes) -> _Header | None:
    try:
        return _header_decoder.decode(raw)
    except msgspec.DecodeError as exc:
        log.warning("%s: unreadable session header skipped (%s)", path, exc)
        return None


def _decode_line(path: Path, number: int, raw: bytes) -> _Line | None:
    if not raw.strip():
        return None
    try:
        return _line_decoder.decode(raw)
    except msgspec.DecodeError as exc:
        log.warning("%s:%d: corrupt line skipped (%s)", path, number, exc)
        return None


def _apply(stored: StoredSession, event: Event) -> None:
    """Fold one event into a session being loaded."""
    if isinstance(event, OptionChanged):
        stored.options[event.option_id] = event.value
        return
    if isinstance(event, HistoryCleared):
        stored.events.clear()
        return
    if isinstance(event, PlanModeChanged):
        stored.plan_mode = event.enabled
    elif isinstance(event, UserMessage) and stored.title is None:
        stored.title = title_of(event.content)
    elif isinstance(event, TitleChanged):  # set by the agent: the latest wins
        stored.title = event.title
    stored.events.append(event)


def _scan_summary(path: Path, first: bytes, file: BinaryIO) -> _Summary | None:
    """Decode the header, then read lines up to the first prompt with a title."""
    header = _decode_header(path, first)
    if header is None:
        return None
    for raw in file:
        if b'"user_message"' not in raw:
            continue
        try:
            event = _line_decoder.decode(raw).event
        except msgspec.DecodeError:
            continue
        if isinstance(event, UserMessage):
            title = title_of(event.content)
            if title is not None:
                return _Summary(first, header, title)
    return _Summary(first, header, None)


def _tail_ts(file: BinaryIO) -> datetime | None:
    """The ``ts`` of the file's last line, from its last bytes (``None`` if damaged)."""
    size = os.fstat(file.fileno()).st_size
    file.seek(max(0, size - _TAIL_BYTES))
    match = _TAIL_TS.search(file.read())
    if match is None:
        return None
    try:
        return _ts_decoder.decode(b'"' + match.group(1) + b'"')
    except msgspec.DecodeError:
        return None


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
