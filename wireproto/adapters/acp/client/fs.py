"""The file system an ACP client offers its agent (``fs/read_text_file``, ``fs/write_text_file``).

:class:`FileSystem` is what :class:`~.connection.ClientConnection`
calls; installing one advertises ``fs.readTextFile`` and ``fs.writeTextFile``.
:class:`LocalFileSystem` serves local files **confined to the session's
roots** ``[cwd, *additionalDirectories]`` (protocol-acp.md#sessions): paths must be absolute,
symbolic links are resolved first, and a path that does not resolve into a
root is refused with ``-32602``. Error answers:

======================  ==========================================
``-32602``              relative path, outside the roots, a directory,
                        a FIFO, device or socket (not a regular file),
                        a NUL character, a name too long
``-32002``              the file does not exist (read)
``-32603``              any other OS error, or a file (or a ``line`` /
                        ``limit`` selection) over ``max_bytes``
======================  ==========================================

Text is read and written as UTF-8 without newline translation (undecodable
bytes are replaced). The containment check and the file operation are not
atomic: a root the agent can change by other means (a symlink swapped in
between) is not a security boundary.
"""

from __future__ import annotations

import errno
import os
from typing import Protocol, TextIO

import anyio.to_thread

from wireproto.adapters.acp import schema as s
from wireproto.adapters.acp.client.state import RESOURCE_NOT_FOUND, ClientSession
from wireproto.agent.files import NotRegularFile, open_regular, within_roots
from wireproto.errors import RpcError
from wireproto.jsonrpc.messages import ErrorCode

__all__ = ["FileSystem", "LocalFileSystem"]

_SKIP_CHUNK = 64 * 1024
"""Lines before ``line`` are skipped this many characters at a time."""


class FileSystem(Protocol):
    """Serves ``fs/read_text_file`` and ``fs/write_text_file`` for the agent.

    Raise :class:`~wireproto.errors.RpcError` to answer with an error.
    """

    async def read_text_file(self, session: ClientSession, request: s.ReadTextFileRequest) -> str:
        """Return the file's text (from ``request.line``, at most ``request.limit`` lines)."""

    async def write_text_file(
        self, session: ClientSession, request: s.WriteTextFileRequest
    ) -> None:
        """Write the file, creating it (and missing parent directories) when needed."""


class LocalFileSystem:
    """Local files, confined to each session's roots.

    Args:
        max_bytes: the largest file read whole; a read with ``line`` /
            ``limit`` may come from a larger file but returns at most this
            many bytes.
    """

    def __init__(self, *, max_bytes: int = 16 * 1024 * 1024) -> None:
        self.max_bytes = max_bytes

    def resolve(self, session: ClientSession, path: str) -> str:
        """Return the real path of ``path`` if it lies within the session's roots.

        Raises:
            RpcError: ``-32602`` for a relative path or one outside the roots.
        """
        if "\x00" in path:
            raise RpcError(ErrorCode.INVALID_PARAMS, f"Path contains a NUL character: {path!r}")
        if not os.path.isabs(path):
            raise RpcError(ErrorCode.INVALID_PARAMS, f"Path must be absolute: {path}")
        real = within_roots(path, session.roots)
        if real is None:
            raise RpcError(ErrorCode.INVALID_PARAMS,
                           f"Path is outside the session's roots: {path}")
        return real

    async def read_text_file(self, session: ClientSession, request: s.ReadTextFileRequest) -> str:
        """Read a file within the roots (1-based ``line``, ``limit`` lines).

        Raises:
            RpcError: see the module's table.
        """
        path = self.resolve(session, request.path)
        line = request.line if isinstance(request.line, int) else None
        limit = request.limit if isinstance(request.limit, int) else None
        return await anyio.to_thread.run_sync(self._read, path, line, limit)

    async def write_text_file(
        self, session: ClientSession, request: s.WriteTextFileRequest
    ) -> None:
        """Write a file within the roots, creating it and its parents.

        Raises:
            RpcError: see the module's table.
        """
        path = self.resolve(session, request.path)
        await anyio.to_thread.run_sync(self._write, path, request.content)

    def _read(self, path: str, line: int | None, limit: int | None) -> str:
        try:
            fd = open_regular(path)
            with open(fd, encoding="utf-8", errors="replace", newline="") as f:
                if line is None and limit is None:
                    if os.fstat(f.fileno()).st_size > self.max_bytes:
                        raise RpcError(ErrorCode.INTERNAL_ERROR,
                                       f"File larger than {self.max_bytes} bytes: {path}")
                    return f.read()
                return self._read_lines(f, path, max(line or 1, 1), limit)
        except OSError as exc:
            raise _os_error("read", path, exc) from exc

    def _read_lines(self, f: TextIO, path: str, first: int, limit: int | None) -> str:
        # Never more than a bounded piece in memory, even for a line without an end.
        if not _skip_lines(f, first - 1):
            return ""
        parts: list[str] = []
        size = 0
        while limit is None or len(parts) < limit:
            text = f.readline(self.max_bytes - size + 1)
            if not text:
                break
            size += len(text)
            if size > self.max_bytes:
                raise RpcError(ErrorCode.INTERNAL_ERROR,
                               f"Selection larger than {self.max_bytes} bytes: {path}; "
                               "ask for fewer lines")
            parts.append(text)
        return "".join(parts)

    def _write(self, path: str, content: str) -> None:
        try:
            os.makedirs(os.path.dirname(path), exist_ok=True)
            with open(open_regular(path, write=True), "w", encoding="utf-8", newline="") as f:
                f.write(content)
        except OSError as exc:
            raise _os_error("write", path, exc) from exc


def _skip_lines(f: TextIO, count: int) -> bool:
    """Skip ``count`` lines a bounded piece at a time; false at the end of the file."""
    while count > 0:
        piece = f.readline(_SKIP_CHUNK)
        if not piece:
            return False
        if piece.endswith("\r") and len(piece) == _SKIP_CHUNK:  # cut: maybe inside "\r\n"
            mark = f.tell()
            if f.read(1) != "\n":
                f.seek(mark)
        if piece.endswith(("\n", "\r")):
            count -= 1
    return True


def _os_error(action: str, path: str, exc: OSError) -> RpcError:
    if isinstance(exc, NotRegularFile):
        return RpcError(ErrorCode.INVALID_PARAMS,
                        f"Not a regular file (a FIFO, device or socket): {path}; "
                        "only regular files can be read or written")
    if exc.errno == errno.ENOENT and action == "read":
        return RpcError(RESOURCE_NOT_FOUND, f"File not found: {path}")
    if exc.errno in (errno.EISDIR, errno.ENOTDIR):
        return RpcError(ErrorCode.INVALID_PARAMS, f"Not a file: {path}")
    if exc.errno == errno.ENAMETOOLONG:
        return RpcError(ErrorCode.INVALID_PARAMS, f"Path too long: {path[:80]}...")
    return RpcError(ErrorCode.INTERNAL_ERROR, f"Cannot {action} {path}: {exc.strerror or exc}")
