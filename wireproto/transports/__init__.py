"""Message streams: every transport is an ``anyio.abc.ObjectStream[bytes]`` of whole messages.

In memory (:func:`memory_pair`), this process's stdio (:func:`open_stdio`), a
child process's stdio (:func:`open_subprocess`), WebSocket
(:func:`connect_websocket`, :func:`serve_websocket`), or whichever of the
last two a command or URL calls for (:func:`open_stream`).
:class:`FramedStream` turns any pair of byte streams into a message stream
(one message per line). Each transport's module is imported on first use.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from wireproto._lazy import attach

if TYPE_CHECKING:
    from ._framed import FramedStream, SupportsWriteNowait
    from .memory import MemoryStream, memory_pair
    from .open import open_stream
    from .stdio import StdioStream, open_stdio
    from .subprocess import StderrMode, SubprocessStream, open_subprocess
    from .websocket import (
        Refusal,
        RequestCheck,
        WebSocketHandler,
        WebSocketRequest,
        WebSocketServer,
        WebSocketStream,
        connect_websocket,
        serve_websocket,
    )

__all__ = [
    "FramedStream",
    "MemoryStream",
    "Refusal",
    "RequestCheck",
    "StderrMode",
    "StdioStream",
    "SubprocessStream",
    "SupportsWriteNowait",
    "WebSocketHandler",
    "WebSocketRequest",
    "WebSocketServer",
    "WebSocketStream",
    "connect_websocket",
    "memory_pair",
    "open_stdio",
    "open_stream",
    "open_subprocess",
    "serve_websocket",
]

__getattr__, __dir__ = attach(
    __name__,
    {
        "MemoryStream": ".memory",
        "memory_pair": ".memory",
        "StdioStream": ".stdio",
        "open_stdio": ".stdio",
        "StderrMode": ".subprocess",
        "SubprocessStream": ".subprocess",
        "open_subprocess": ".subprocess",
        "Refusal": ".websocket",
        "RequestCheck": ".websocket",
        "WebSocketHandler": ".websocket",
        "WebSocketRequest": ".websocket",
        "WebSocketServer": ".websocket",
        "WebSocketStream": ".websocket",
        "connect_websocket": ".websocket",
        "serve_websocket": ".websocket",
        "open_stream": ".open",
        "FramedStream": "._framed",
        "SupportsWriteNowait": "._framed",
    },
)
