"""Sans-I/O newline framing for byte-stream transports (stdio, subprocess).

Theory of operation
-------------------
:class:`LineFramer` keeps one byte buffer and a scan offset, so every byte is
examined once however the stream is chunked (linear time). :meth:`feed`
appends bytes; :meth:`next_message` returns the next complete line without
its terminator (``\\r\\n`` tolerated), skips blank lines, and returns
``None`` when more input is needed. When every complete line buffered is
plain (no ``\\r``, no blank line, none over the limit: the usual case),
they are split off in one go and handed out one by one from a queue, so a
read that brings many small messages costs one split, not a search per line
(not with ``WIREPROTO_NO_FAST_PATHS=1``: line by line then).

A line longer than ``max_bytes`` is never buffered whole: the framer drops
what it holds, discards input up to the next ``\\n``, and reports the overflow
once (as a :class:`~wireproto.errors.MessageTooLarge` from
:meth:`next_message`). Framing then resumes with the following line, so the
connection stays usable.
"""

from __future__ import annotations

from wireproto._switches import FAST_PATHS
from wireproto.errors import MessageTooLarge

__all__ = ["DEFAULT_MAX_MESSAGE_BYTES", "LineFramer", "frame"]

DEFAULT_MAX_MESSAGE_BYTES = 64 * 1024 * 1024
"""Default maximum size of one message: 64 MiB."""

_BLANK = frozenset(b" \t\r")  # JSON whitespace (besides the \n terminator)


def frame(message: bytes) -> bytes:
    """Return ``message`` terminated by exactly one ``\\n``."""
    return message if message.endswith(b"\n") else message + b"\n"


class LineFramer:
    """Split a byte stream into newline-delimited messages.

    Args:
        max_bytes: the largest accepted message, terminator excluded.
    """

    def __init__(self, max_bytes: int = DEFAULT_MAX_MESSAGE_BYTES) -> None:
        if max_bytes < 1:
            raise ValueError("max_bytes must be positive")
        self.max_bytes = max_bytes
        self._buf = bytearray()
        self._ready: list[bytes] = []  # whole plain lines split off _buf, in order,
        self._head = 0  # from _ready[_head] on (not handed out yet)
        self._scan = 0  # bytes of _buf known to hold no newline
        self._discarding = False  # inside an oversized line
        self._overflows = 0  # oversized lines not yet reported

    @property
    def buffered(self) -> int:
        """Bytes held: lines not handed out yet, and the start of the next one."""
        return len(self._buf) + sum(len(line) + 1 for line in self._ready[self._head :])

    def feed(self, data: bytes | bytearray | memoryview) -> None:
        """Append received bytes."""
        if self._discarding:
            if isinstance(data, memoryview):
                data = bytes(data)
            nl = data.find(b"\n")
            if nl < 0:
                return
            self._discarding = False
            data = data[nl + 1 :]
        self._buf += data
        self._check_overflow()

    def _check_overflow(self) -> None:
        # Only the unscanned tail can hold a newline; an oversized line with
        # no newline yet is dropped now so memory stays bounded.
        while len(self._buf) > self.max_bytes + 2:
            nl = self._buf.find(b"\n", self._scan)
            if nl < 0:
                del self._buf[:]
                self._scan = 0
                self._discarding = True
                self._overflows += 1
                return
            if nl > self.max_bytes + 1:
                del self._buf[: nl + 1]
                self._scan = 0
                self._overflows += 1
                continue
            return

    def next_message(self) -> bytes | None:
        """Return the next complete message, or ``None`` if more bytes are needed.

        Raises:
            MessageTooLarge: an oversized line was discarded (reported once
                per line; call again to continue).
        """
        ready, head = self._ready, self._head
        if head < len(ready):
            if head + 1 < len(ready):
                self._head = head + 1
            else:  # (not pinned once handed out)
                self._ready, self._head = [], 0
            return ready[head]
        while True:
            if self._overflows:
                self._overflows -= 1
                raise MessageTooLarge(self.max_bytes)
            buf = self._buf
            if FAST_PATHS and self._split():
                return self.next_message()  # (from _ready now)
            nl = buf.find(b"\n", self._scan)
            if nl < 0:
                if len(buf) > self.max_bytes + 2:
                    # an oversized tail fed together with complete lines
                    del buf[:]
                    self._scan = 0
                    self._discarding = True
                    raise MessageTooLarge(self.max_bytes)
                self._scan = len(buf)
                return None
            end = nl - 1 if nl > 0 and buf[nl - 1] == 13 else nl
            line = bytes(buf[:end])
            del buf[: nl + 1]
            self._scan = 0
            if len(line) > self.max_bytes:
                raise MessageTooLarge(self.max_bytes)
            if not line or (line[0] in _BLANK and not line.strip(b" \t\r")):
                continue
            return line

    def take(self, limit: int) -> list[bytes]:
        """Return up to ``limit`` complete messages (possibly none), stopping before an overflow.

        Plain lines split off at once are handed out by slicing, without a
        search or a call per line (see the module doc); others one by one.
        An overflow is left to :meth:`next_message` to report, so the order
        of messages and reports is the same either way.
        """
        ready, head = self._ready, self._head
        if head >= len(ready):
            if not self._buf or self._overflows:
                return []
            if not FAST_PATHS or not self._split():
                return self._take_lines(limit)
            ready, head = self._ready, 0
        end = head + limit
        if end < len(ready):
            self._head = end
        else:  # (not pinned once handed out)
            self._ready, self._head = [], 0
        return ready[head:end]

    def _take_lines(self, limit: int) -> list[bytes]:
        out: list[bytes] = []
        while len(out) < limit and not self._overflows:
            try:
                msg = self.next_message()
            except MessageTooLarge:  # (already dropped: reported by the next call)
                self._overflows += 1
                break
            if msg is None:
                break
            out.append(msg)
        return out

    def _split(self) -> bool:
        """Queue every complete line at once if all are plain; return whether any was."""
        buf = self._buf
        end = buf.rfind(b"\n", self._scan)
        if end <= 0 or end > self.max_bytes:
            return False
        with memoryview(buf) as view:
            chunk = bytes(view[:end])
        lines = chunk.split(b"\n")
        # a blank line or one starting with a blank (the smallest line shows
        # it), or a CR anywhere: line by line instead
        if min(lines)[:1] <= b" " or b"\r" in chunk:
            return False
        del buf[: end + 1]
        self._scan = 0
        self._ready, self._head = lines, 0
        return True

    def messages(self) -> list[bytes]:
        """Return every complete message buffered so far (overflows skipped).

        Prefer :meth:`next_message` when overflows must be reported.
        """
        out: list[bytes] = []
        while True:
            try:
                msg = self.next_message()
            except MessageTooLarge:
                continue
            if msg is None:
                return out
            out.append(msg)
