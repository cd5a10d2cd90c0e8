"""Opening local files for the agent and the ACP client: regular files only.

Opening a FIFO waits for a writer and reading a device may never end, which
would hold a worker thread forever. :func:`open_regular` opens without
waiting and refuses anything but a regular file with :class:`NotRegularFile`.
"""

from __future__ import annotations

import errno
import os
import stat
from collections.abc import Awaitable, Iterable
from typing import TypeVar

from wireproto.errors import RequestCancelled, RpcError

__all__ = [
    "ClientFileError",
    "ClientFileNotFound",
    "NotRegularFile",
    "open_regular",
    "read_regular",
    "through_client",
    "within_roots",
    "write_regular",
]

T = TypeVar("T")

RESOURCE_NOT_FOUND = -32002
"""The code of a client's answer for a file it does not have (ACP's ``Resource not found``)."""

_FLAGS = getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_NOCTTY", 0) | getattr(os, "O_CLOEXEC", 0)


class NotRegularFile(OSError):
    """The path names a FIFO, a device or a socket, not a regular file."""

    def __init__(self, path: str | os.PathLike[str]) -> None:
        super().__init__(
            errno.EINVAL,
            "not a regular file (a FIFO, device or socket); "
            "only regular files can be read or written",
            os.fspath(path),
        )


class ClientFileError(RpcError, OSError):
    """The client refused to read or write a file for the agent.

    Both the client's :class:`~wireproto.errors.RpcError` (its ``code``,
    ``message`` and ``data``) and an :class:`OSError` (``errno`` ``EACCES``),
    so that the ``except OSError`` of an agent handles a file the editor
    cannot give like a local one: ``Turn.read_text_file`` behaves the same
    with or without a client that serves files.
    """

    errno_code = errno.EACCES

    def __init__(self, code: int, message: str, data: object = None) -> None:
        super().__init__(code, message, data)
        self.errno, self.strerror = self.errno_code, message


class ClientFileNotFound(ClientFileError, FileNotFoundError):
    """The client has no such file (``-32002``): also a :class:`FileNotFoundError`."""

    errno_code = errno.ENOENT


async def through_client(operation: Awaitable[T]) -> T:
    """Await a file operation of the client; its refusal raised as a :class:`ClientFileError`.

    A request the client cancelled (``-32800``, e.g. its user stopped the turn)
    stays a :class:`~wireproto.errors.RequestCancelled`: no ``except OSError``
    of the agent takes it for a file it may go on without.
    """
    try:
        return await operation
    except (ClientFileError, RequestCancelled):
        raise
    except RpcError as exc:
        kind = ClientFileNotFound if exc.code == RESOURCE_NOT_FOUND else ClientFileError
        raise kind(exc.code, exc.message, exc.data) from exc


def within_roots(
    path: str | os.PathLike[str], roots: Iterable[str | os.PathLike[str]]
) -> str | None:
    """The real path of ``path`` when it is one of ``roots`` or lies below one, else ``None``.

    Symbolic links are resolved on both sides, so a link cannot lead out of the roots.
    """
    real = os.path.realpath(path)
    for root in roots:
        base = os.path.realpath(root)
        if real == base or real.startswith(base.rstrip(os.sep) + os.sep):
            return real
    return None


def open_regular(path: str | os.PathLike[str], *, write: bool = False) -> int:
    """Open ``path`` (truncated when ``write``, created if missing); return the descriptor.

    Raises:
        IsADirectoryError: ``path`` is a directory.
        NotRegularFile: ``path`` is a FIFO, a device or a socket.
        OSError: any other failure to open it.
    """
    flags = (os.O_WRONLY | os.O_CREAT if write else os.O_RDONLY) | _FLAGS
    try:
        fd = os.open(path, flags, 0o666)
    except OSError as exc:
        if exc.errno == errno.ENXIO:  # a socket, or a FIFO nobody reads
            raise NotRegularFile(path) from None
        raise
    try:
        mode = os.fstat(fd).st_mode
        if stat.S_ISDIR(mode):
            raise IsADirectoryError(errno.EISDIR, os.strerror(errno.EISDIR), os.fspath(path))
        if not stat.S_ISREG(mode):
            raise NotRegularFile(path)
        os.set_blocking(fd, True)
        if write:
            os.ftruncate(fd, 0)
    except BaseException:
        os.close(fd)
        raise
    return fd


def read_regular(path: str | os.PathLike[str]) -> bytes:
    """The bytes of a regular file (see :func:`open_regular`)."""
    with open(open_regular(path), "rb") as f:
        return f.read()


def write_regular(path: str | os.PathLike[str], data: bytes) -> None:
    """Replace a regular file's bytes, creating it (see :func:`open_regular`)."""
    with open(open_regular(path, write=True), "wb") as f:
        f.write(data)
