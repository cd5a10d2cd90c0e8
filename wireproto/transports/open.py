"""One call to reach a peer: spawn a command or connect to a WebSocket URL.

The client entry points (``connect_acp``, ``connect_wire``, ``connect_mcp``
and the CLI) all start the same way; this is that start, with the concrete
transport modules imported only when used.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Collection, Mapping, Sequence
from contextlib import asynccontextmanager
from typing import Literal

import anyio.abc

from wireproto.errors import ConnectionClosed
from wireproto.jsonrpc.framing import DEFAULT_MAX_MESSAGE_BYTES

__all__ = ["open_stream"]


@asynccontextmanager
async def open_stream(
    cmd: Sequence[str] | None = None,
    *,
    url: str | None = None,
    headers: Mapping[str, str] | None = None,
    env: Mapping[str, str] | None = None,
    cwd: str | None = None,
    stderr: Literal["inherit", "log"] = "log",
    max_bytes: int = DEFAULT_MAX_MESSAGE_BYTES,
    start_new_session: bool = False,
    redact: Collection[str] = (),
    inherit_env: bool = True,
    shutdown_timeout: float = 5.0,
) -> AsyncIterator[anyio.abc.ObjectStream[bytes]]:
    """Yield a message stream to ``cmd`` (spawned) or to ``url`` (WebSocket).

    Args:
        cmd: the program and its arguments; talks over its stdin/stdout.
        url: a ``ws://`` or ``wss://`` URL (``headers`` sent with the handshake).
        env: for a spawned command: variables set on top of our environment,
            unless ``inherit_env=False`` (see
            :func:`~wireproto.transports.subprocess.open_subprocess`; likewise
            ``cwd``, ``stderr``, ``start_new_session``, ``redact`` and
            ``shutdown_timeout``).
        inherit_env: ``False``: a spawned command gets exactly ``env``.
        max_bytes: the largest accepted inbound message.

    Raises:
        ValueError: both or neither of ``cmd`` and ``url``.
        OSError: the command could not be started or the socket not opened.
        ConnectionClosed: the WebSocket handshake was refused.
        ProcessExited: a :class:`ConnectionClosed` left the body because the
            spawned command exited (or closed its output): raised instead,
            with its exit status and last stderr lines (``stderr="log"``).
    """
    if (cmd is None) == (url is None):
        raise ValueError("give exactly one of cmd and url")
    if cmd is not None:
        from wireproto.transports.subprocess import open_subprocess

        async with open_subprocess(
            cmd, env=env, cwd=cwd, stderr=stderr, max_bytes=max_bytes,
            start_new_session=start_new_session, redact=redact, inherit_env=inherit_env,
            shutdown_timeout=shutdown_timeout,
        ) as child:
            try:
                yield child
            except ConnectionClosed as exc:
                explained = await child.explain(exc)
                if explained is exc:
                    raise
                raise explained from exc
    else:
        assert url is not None
        from wireproto.transports.websocket import connect_websocket

        async with connect_websocket(url, headers=headers, max_bytes=max_bytes) as ws:
            yield ws
