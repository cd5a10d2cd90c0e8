"""The one exception tree of wireproto.

Every error the library raises on purpose is a :class:`WireprotoError`. Blame is
built into the tree: ``Local*`` means this process did something wrong (a bug
in the caller), ``Remote*`` means the peer sent something it should not have.
Library errors from msgspec, anyio or websockets are converted at a single
point each and chained with ``from``.

::

    WireprotoError
    ├── LocalProtocolError          this side misused the API or broke the protocol
    ├── RemoteProtocolError         the peer broke the protocol
    │   ├── InvalidMessage          an inbound message that cannot be accepted;
    │   │                           carries the JSON-RPC error to answer with
    │   └── MessageTooLarge         an inbound message over the size limit
    ├── RpcError                    a JSON-RPC error object (code, message, data):
    │   │                           raised by ``Peer.request`` when the peer
    │   │                           answers with an error, and by handlers to
    │   │                           answer with one
    │   └── RequestCancelled        -32800: the request was cancelled
    ├── ConnectionClosed            the connection ended; pending work failed
    │   └── ProcessExited           ... because the spawned peer process exited
    │                               (exit status and last stderr lines attached)
    ├── InvalidVersion              a protocol version string that does not parse
    │                               or has no supported match (also a ValueError)
    └── AgentError                  a protocol-neutral agent failure; each adapter
        │                           maps it to its protocol's error code
        ├── AuthRequired            authentication is needed / failed
        ├── InvalidArgument         bad input (unknown option, auth method, cursor)
        ├── NotFound                unknown session, file ...
        ├── Busy                    a turn is already running
        └── AgentFailed             the agent's code raised something else
                                    (answered as an internal error)

One meaning, one exception, in every module (as h11 does it):

* **misuse** of an object (a client, peer or server used outside its
  ``async with`` or before it is served, or in a way its configuration
  excludes) raises :class:`LocalProtocolError`;
* **the connection is gone** (the peer closed it, or an agent calls its
  client after the connection ended) raises :class:`ConnectionClosed`;
* what the peer answered is :class:`RpcError`; what it sent wrongly is
  :class:`RemoteProtocolError`.

``docs/api.md#exceptions`` shows the same tree with these rules.
"""

from __future__ import annotations

import json
from typing import Any

__all__ = [
    "AgentError",
    "AgentFailed",
    "AuthRequired",
    "Busy",
    "ConnectionClosed",
    "InvalidArgument",
    "InvalidMessage",
    "InvalidVersion",
    "LocalProtocolError",
    "MessageTooLarge",
    "NotFound",
    "ProcessExited",
    "RemoteProtocolError",
    "RequestCancelled",
    "RpcError",
    "WireprotoError",
]


class WireprotoError(Exception):
    """Base class of every exception raised by wireproto on purpose."""


class LocalProtocolError(WireprotoError):
    """This side tried to do something the protocol forbids (the caller's bug)."""


class RemoteProtocolError(WireprotoError):
    """The peer sent something the protocol forbids."""


class InvalidMessage(RemoteProtocolError):
    """An inbound message that cannot be accepted.

    Attributes:
        code: the JSON-RPC error code to answer with.
        message: the error message to answer with.
        data: optional error data.
        id: the id to answer with (``None`` when it is unknown).
        reply: whether the protocol wants an answer at all (some
            malformed inputs are only logged).
        response: the message is a response to the request ``id`` that
            cannot be read: that request fails with this error (an answer,
            when ``reply``, has a null id).
    """

    def __init__(
        self,
        code: int,
        message: str,
        data: Any = None,
        *,
        id: int | str | None = None,
        reply: bool = True,
        response: bool = False,
    ) -> None:
        super().__init__(f"{message} ({code})")
        self.code = code
        self.message = message
        self.data = data
        self.id = id
        self.reply = reply
        self.response = response


class MessageTooLarge(RemoteProtocolError):
    """An inbound message exceeded the configured maximum size.

    The offending bytes were discarded; the stream stays usable.
    """

    def __init__(self, max_bytes: int) -> None:
        super().__init__(f"message larger than {max_bytes} bytes discarded")
        self.max_bytes = max_bytes


class RpcError(WireprotoError):
    """A JSON-RPC error: raised by ``Peer.request`` and by handlers.

    ``str()`` gives the message and code, followed by the peer's ``data``
    when there is some (its ``message`` / ``details`` field when it is an
    object holding one, else the whole value as JSON), cut to
    :data:`DATA_TEXT_LIMIT` characters.

    Attributes:
        code: the JSON-RPC error code.
        message: the human-readable message.
        data: optional structured detail (``None`` when absent).
    """

    def __init__(self, code: int, message: str, data: Any = None) -> None:
        super().__init__(f"{message} ({code})")
        self.code = code
        self.message = message
        self.data = data

    def __str__(self) -> str:
        text = f"{self.message} ({self.code})"
        detail = _data_text(self.data)
        shown = detail and detail != self.message and not self.message.endswith(": " + detail)
        return f"{text}: {detail}" if shown else text  # (the data once, not twice)

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self.code!r}, {self.message!r}, {self.data!r})"


DATA_TEXT_LIMIT = 500
"""The most characters of an error's ``data`` shown by ``str(RpcError)``."""

_DATA_FIELDS = ("message", "details", "detail", "error", "reason")
"""Fields of an object ``data`` that hold its human-readable text, in order of preference."""


def _data_text(data: Any) -> str:
    if data is None or data == "" or data == {} or data == []:
        return ""
    if isinstance(data, dict):
        for key in _DATA_FIELDS:
            value = data.get(key)
            if isinstance(value, str) and value:
                data = value
                break
    if isinstance(data, str):
        text = data
    else:
        try:
            text = json.dumps(data, ensure_ascii=False, default=repr)
        except (TypeError, ValueError):
            text = repr(data)
    if len(text) > DATA_TEXT_LIMIT:
        text = text[:DATA_TEXT_LIMIT] + "..."
    return text


class RequestCancelled(RpcError):
    """The request was cancelled (JSON-RPC code -32800)."""

    def __init__(self, message: str = "Request cancelled", data: Any = None) -> None:
        super().__init__(-32800, message, data)


class ConnectionClosed(WireprotoError):
    """The connection ended; the request or send could not complete."""


class ProcessExited(ConnectionClosed):
    """The connection ended because the spawned peer process exited (or closed its output).

    ``str()`` is the reason, the exit status, then the last lines of the
    process's stderr (indented, secrets masked) when they were captured.

    Attributes:
        reason: what failed (e.g. ``connection closed before initialize was answered``).
        program: the program's name.
        returncode: its exit status (negative: killed by that signal); ``None``
            when it closed its output but had not exited yet.
        stderr: the last lines it wrote to stderr (bounded; may be empty).
    """

    def __init__(
        self, reason: str, program: str, returncode: int | None, stderr: tuple[str, ...] = ()
    ) -> None:
        self.reason = reason
        self.program = program
        self.returncode = returncode
        self.stderr = stderr
        super().__init__(self.summary + "".join(f"\n    {line}" for line in stderr))

    @property
    def summary(self) -> str:
        """One line: the reason and how the process ended."""
        if self.returncode is None:
            ended = f"{self.program} closed its output"
        elif self.returncode < 0:
            ended = f"{self.program} was killed by signal {-self.returncode}"
        else:
            ended = f"{self.program} exited with status {self.returncode}"
        return f"{self.reason}: {ended}" + ("; its last stderr lines:" if self.stderr else "")


class InvalidVersion(WireprotoError, ValueError):
    """A protocol version string that does not parse, or that no supported version matches."""


class AgentError(WireprotoError):
    """A protocol-neutral failure raised by agent code or the agent runtime.

    Adapters translate each subclass into their protocol's error (a table
    in each adapter). ``message`` is safe to show to the client, and so is
    ``data`` (sent as the error's ``data``; ``None``: none).
    """

    def __init__(self, message: str, data: Any = None) -> None:
        super().__init__(message)
        self.message = message
        self.data = data


class AuthRequired(AgentError):
    """Authentication is required first, or it failed."""


class InvalidArgument(AgentError):
    """The request carried an invalid value (option, auth method, cursor ...)."""


class NotFound(AgentError):
    """The named session (or other resource) does not exist."""


class Busy(AgentError):
    """The session already runs a turn."""


class AgentFailed(AgentError):
    """The agent's code raised an exception that is not an :class:`AgentError`.

    Raised by the runtime, chained (``from``) to the original exception.
    Adapters answer it as an internal error (``-32603``) whose ``data`` is
    ``{"type": ..., "message": ...}`` of the original, or ``None`` when the
    agent opted out (``Agent.error_details = False``).
    """


def first_leaf(exc: BaseException) -> BaseException:
    """The first exception inside (nested) exception groups, else ``exc`` itself.

    A helper for the library (not in ``__all__``: the public names of this module are the
    exception tree).
    """
    inner = getattr(exc, "exceptions", None)
    while isinstance(inner, tuple) and inner and isinstance(inner[0], BaseException):
        exc = inner[0]
        inner = getattr(exc, "exceptions", None)
    return exc
