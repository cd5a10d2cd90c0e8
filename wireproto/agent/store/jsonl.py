"""Sessions as JSON Lines files, one per session: :class:`JsonlStore`.

Theory of operation
-------------------
A :class:`JsonlStore` keeps its files in one directory, by default
``$WIREPROTO_HOME/sessions`` (``~/.wireproto/sessions`` when the variable is
unset). Session ``ID`` lives in ``ID.jsonl``; ids are checked with
:func:`~wireproto.agent.store.base.valid_session_id`, so an id can never
name a path outside the directory. The directory is created 0700 and the
files 0600.

Line 1 is the header::

    {"type":"session","session_id":"sess_1","cwd":"/p","roots":[],"version":1,"ts":"...Z"}

:meth:`JsonlStore.create` writes it to a temporary file first and then links
that file to ``ID.jsonl`` (an atomic rename that fails when the name
exists), so a crash leaves either a complete header or no session. Every
later line is one event of :mod:`wireproto.agent.events` (a tagged msgspec
Struct) with the time it was recorded::

    {"event":{"type":"message","text":"Hi","message_id":"msg_1"},"ts":"2026-01-02T03:04:05.123456Z"}

Writing: the store keeps one file descriptor per session, opened for append
(at most :data:`MAX_OPEN` at once, least recently used closed first), and
writes the lines of one :meth:`~JsonlStore.append` call with a single
``write``. Nothing is buffered in the process, so a crash, even ``kill -9``
in the middle of a turn, loses at most the lines being written. Before the
first append of a process to a file that does not end in a newline (a line
cut short by a crash), a newline is written first, so the partial line stays
isolated. A file deleted behind the store's back (by another process) is
noticed before each write: the events then go to a new file of that name
if there is one, else they are dropped with a warning.

Reading decodes line by line and skips (with a warning) any line that does
not decode, so a truncated or corrupt line is never fatal. A file whose
header cannot be read is renamed to ``ID.jsonl.unreadable-<time>`` (kept for
inspection, logged at warning) the first time a load or listing meets it:
the session is then unknown and its id can be created again.

``ts`` is the last key of every line, header included. The newest activity of
a session is therefore found in the last few bytes of its file: listing reads
the header and the file's tail; the title (the last one the agent set, else
the first prompt's) is found once per process by a scan that decodes only the
lines that can hold it, then remembered and kept current by :meth:`append`.
"""

from __future__ import annotations

import builtins
import logging
import os
import tempfile
import weakref
from collections.abc import Iterator
from datetime import datetime
from pathlib import Path
from typing import BinaryIO

import msgspec

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
    wireproto_home,
)
from wireproto.errors import InvalidArgument, NotFound

__all__ = ["MAX_OPEN", "JsonlStore"]

log = logging.getLogger(__name__)

MAX_OPEN = 128
"""File descriptors a :class:`JsonlStore` keeps open for appending, at most."""

_SUFFIX = ".jsonl"
_ASIDE = ".unreadable-"
_TAIL_BYTES = 256


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


class _Summary(msgspec.Struct):
    """What listing remembers about a file: its header line and title.

    The raw header line identifies the file (it holds the creation time to
    the microsecond), so a session deleted and created again is noticed.
    """

    raw_header: bytes
    header: _Header
    title: str | None


class JsonlStore:
    """JSON Lines session files in one directory (see the module docstring).

    Implements :class:`~wireproto.agent.store.base.Store`.

    Args:
        root: the directory holding the session files (default
            ``$WIREPROTO_HOME/sessions``, read when the store is made). It is
            created on the first :meth:`create`.

    Call :meth:`close` to release the open files early; the store stays
    usable (files are opened again when needed), and they are released
    when the store is garbage collected anyway.
    """

    def __init__(self, root: Path | str | None = None) -> None:
        self.root = Path(root) if root is not None else wireproto_home() / "sessions"
        self._clean: set[str] = set()  # files known to end with a newline
        self._summaries: dict[str, _Summary] = {}
        self._fds: dict[str, int] = {}  # session id -> append descriptor, oldest use first
        self._finalizer = weakref.finalize(self, _close_all, self._fds)

    def path(self, session_id: str) -> Path:
        """The file of ``session_id``.

        Raises:
            InvalidArgument: the id is not a valid session id.
        """
        if not valid_session_id(session_id):
            raise InvalidArgument(f"invalid session id {session_id!r}")
        return self.root / f"{session_id}{_SUFFIX}"

    def close(self) -> None:
        """Close the files kept open for appending."""
        _close_all(self._fds)

    # ------------------------------------------------------------- writing

    def create(self, session_id: str, cwd: str, roots: list[str]) -> None:
        """Create the file of a new session (its header line), atomically.

        A file of that name whose header cannot be read (a crash of an older
        version while creating it) is moved aside first.

        Raises:
            InvalidArgument: invalid id, or a session with this id exists.
        """
        path = self.path(session_id)
        self.root.mkdir(mode=0o700, parents=True, exist_ok=True)
        header = _encoder.encode(_Header(session_id, cwd, list(roots), 1, now())) + b"\n"
        fd, tmp = tempfile.mkstemp(dir=self.root, prefix=f".{session_id}.", suffix=".tmp")
        try:
            try:
                _write_all(fd, header)
            finally:
                os.close(fd)
            try:
                os.link(tmp, path)  # fails if the name exists, unlike a rename
            except FileExistsError:
                if self._readable(session_id, path):  # else it was moved aside
                    raise InvalidArgument(f"session {session_id} already exists") from None
                try:
                    os.link(tmp, path)
                except FileExistsError:
                    raise InvalidArgument(f"session {session_id} already exists") from None
        finally:
            os.unlink(tmp)
        self._release(session_id)
        self._summaries.pop(session_id, None)
        self._clean.add(session_id)

    def append(self, session_id: str, *events: Event) -> None:
        """Append ``events`` to the session's file with one write (one time stamp).

        Events for a session whose file is gone (deleted meanwhile) are
        dropped with a warning.

        Raises:
            InvalidArgument: invalid id.
            OSError: the file could not be written (e.g. the disk is full).
        """
        if session_id not in self._fds:  # an open file: the id was checked before
            self.path(session_id)
        if not events:
            return
        ts = b',"ts":' + _encoder.encode(now()) + b"}\n"  # as _Line encodes; one time a call
        data = b'{"event":' + (ts + b'{"event":').join(map(_encoder.encode, events)) + ts
        fd = self._fd(session_id, self._fds.pop(session_id, None))
        if fd is None:
            log.warning("session %s has no file; %d event(s) not recorded", session_id, len(events))
            return
        if session_id not in self._clean:
            size = os.fstat(fd).st_size
            if size and os.pread(fd, 1, size - 1) != b"\n":
                log.warning("%s: ends with a partial line; starting a new line",
                            self.path(session_id))
                data = b"\n" + data
            self._clean.add(session_id)
        try:
            _write_all(fd, data)
        except OSError:
            self._release(session_id)  # it may end with a partial line now
            raise
        summary = self._summaries.get(session_id)
        if summary is not None:  # listing shows the agent's latest title
            titles = [e.title for e in events if isinstance(e, TitleChanged)]
            if titles:
                summary.title = titles[-1]

    def delete(self, session_id: str) -> None:
        """Delete a session's file; unknown (and invalid) ids are ignored."""
        self._release(session_id)
        self._summaries.pop(session_id, None)
        if valid_session_id(session_id):
            self.path(session_id).unlink(missing_ok=True)

    def _fd(self, session_id: str, fd: int | None) -> int | None:
        """The session's append descriptor: ``fd`` if its file is still there, else
        its file opened again; ``None``: no file."""
        if fd is not None and os.fstat(fd).st_nlink == 0:  # deleted by someone else
            os.close(fd)
            self._clean.discard(session_id)
            fd = None
        if fd is None:
            try:
                fd = os.open(self.path(session_id), os.O_RDWR | os.O_APPEND | os.O_CLOEXEC)
            except FileNotFoundError:
                return None
            while len(self._fds) >= MAX_OPEN:
                oldest = next(iter(self._fds))
                self._release(oldest)
        self._fds[session_id] = fd  # (re)inserted: the most recently used
        return fd

    def _release(self, session_id: str) -> None:
        self._clean.discard(session_id)
        fd = self._fds.pop(session_id, None)
        if fd is not None:
            os.close(fd)

    # ------------------------------------------------------------- reading

    def load(self, session_id: str) -> StoredSession:
        """Read a whole session (see :class:`~wireproto.agent.store.base.StoredSession`).

        Raises:
            NotFound: no such session, or its header is unreadable (the file
                is then moved aside).
        """
        if not valid_session_id(session_id):
            raise NotFound(f"Session {session_id} not found")
        path = self.path(session_id)
        try:
            data = path.read_bytes()
        except (FileNotFoundError, NotADirectoryError):
            raise NotFound(f"Session {session_id} not found") from None
        lines = data.split(b"\n")
        header = self._header(session_id, path, lines[0])
        if header is None:
            raise NotFound(f"Session {session_id} not found")
        stored = StoredSession(
            session_id=session_id, cwd=header.cwd, roots=header.roots, options={},
            plan_mode=False, title=None, updated_at=header.ts, events=[],
        )
        for number, raw in enumerate(lines[1:], start=2):
            line = _decode_line(path, number, raw)
            if line is not None:
                stored.record(line.event, line.ts)
        return stored

    def list(
        self, *, cwd: str | None = None, cursor: str | None = None, limit: int = PAGE_SIZE
    ) -> tuple[builtins.list[SessionInfo], str | None]:
        """List sessions, newest activity first (ties: by id).

        Files with an unreadable header are moved aside and not listed.

        Raises:
            InvalidArgument: the cursor is invalid.
        """
        return page_of(self._rows(), cwd=cwd, cursor=cursor, limit=limit)

    def _rows(self) -> Iterator[tuple[datetime, SessionInfo]]:
        for session_id, path in self._files():
            found = self._summary(session_id, path)
            if found is None:
                continue
            summary, updated = found
            header = summary.header
            yield updated, SessionInfo(
                session_id, header.cwd, summary.title, iso(updated), tuple(header.roots)
            )

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
                    header = self._header(session_id, path, first)
                    if header is None:
                        self._summaries.pop(session_id, None)
                        return None
                    summary = _Summary(first, header, _scan_title(file))
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

    # -------------------------------------------------------- damaged files

    def _header(self, session_id: str, path: Path, raw: bytes) -> _Header | None:
        """Decode a header line; an unreadable one moves the file aside (``None``)."""
        try:
            return _header_decoder.decode(raw)
        except msgspec.DecodeError as exc:
            self._move_aside(session_id, path, str(exc))
            return None

    def _readable(self, session_id: str, path: Path) -> bool:
        """Whether the existing file has a readable header (else it is moved aside)."""
        try:
            with path.open("rb") as file:
                first = file.readline()
        except FileNotFoundError:
            return False
        return self._header(session_id, path, first) is not None

    def _move_aside(self, session_id: str, path: Path, reason: str) -> None:
        aside = path.with_name(f"{path.name}{_ASIDE}{now().strftime('%Y%m%dT%H%M%S%fZ')}")
        self._release(session_id)
        try:
            os.rename(path, aside)
        except FileNotFoundError:
            return  # already moved (or deleted) by another store
        log.warning(
            "%s: unreadable session header (%s); moved to %s, the id %s can be used again",
            path, reason, aside.name, session_id,
        )


# ----------------------------------------------------------------- helpers


def _close_all(fds: dict[str, int]) -> None:
    while fds:
        _, fd = fds.popitem()
        try:
            os.close(fd)
        except OSError:
            pass


def _write_all(fd: int, data: bytes) -> None:
    view = memoryview(data)
    while view:
        written = os.write(fd, view)
        view = view[written:]


def _decode_line(path: Path, number: int, raw: bytes) -> _Line | None:
    if not raw.strip():
        return None
    try:
        return _line_decoder.decode(raw)
    except msgspec.DecodeError as exc:
        log.warning("%s:%d: corrupt line skipped (%s)", path, number, exc)
        return None


def _scan_title(file: BinaryIO) -> str | None:
    """The session's title: an agent-set one (the last), else the first prompt's.

    Lines are decoded only when they may hold a prompt (until a title is
    found) or an agent-set title.
    """
    title: str | None = None
    for raw in file:
        if title is None and b'"user_message"' in raw:
            try:
                event = _line_decoder.decode(raw).event
            except msgspec.DecodeError:
                continue
            if isinstance(event, UserMessage):
                title = title_of(event.content)
        elif b'"title"' in raw:
            try:
                event = _line_decoder.decode(raw).event
            except msgspec.DecodeError:
                continue
            if isinstance(event, TitleChanged):
                title = event.title
    return title


def _tail_ts(file: BinaryIO) -> datetime | None:
    """The ``ts`` of the file's last line, from its last bytes (``None`` if damaged)."""
    size = os.fstat(file.fileno()).st_size
    file.seek(max(0, size - _TAIL_BYTES))
    tail = file.read()
    if not tail.endswith(b'"}\n'):
        return None
    start = tail.rfind(b'"ts":"')
    if start < 0:
        return None
    try:
        return _ts_decoder.decode(tail[start + 5 : -2])
    except msgspec.DecodeError:
        return None
