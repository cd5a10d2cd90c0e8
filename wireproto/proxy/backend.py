"""What both proxy agents do with a backend process once it is connected.

:func:`hold_backend` keeps the connection until the proxy lets the backend
go (``closing``) or the backend's side ends, then closes the backend's input
so it can finish by itself (its process is then shut down by
:func:`~wireproto.transports.subprocess.open_subprocess`).
:data:`START_ERRORS` are the failures of starting or running a backend;
:func:`start_failure` is the error a front client gets when the start failed.
"""

from __future__ import annotations

import contextlib
from collections.abc import Awaitable, Callable

import anyio
import anyio.abc

from wireproto.errors import ConnectionClosed, RpcError
from wireproto.jsonrpc.messages import ErrorCode
from wireproto.proxy.refusals import BackendGone

__all__ = ["START_ERRORS", "hold_backend", "start_failure"]

START_ERRORS = (OSError, ConnectionClosed, RpcError, TimeoutError)
"""A backend could not be started, initialized, or talked to."""


async def hold_backend(
    child: anyio.abc.ObjectStream[bytes],
    wait_closed: Callable[[], Awaitable[None]],
    closing: anyio.Event,
) -> None:
    """Wait until ``closing`` is set or the backend's side ends; then close its input."""
    async with anyio.create_task_group() as tg:

        async def closed() -> None:
            await wait_closed()
            tg.cancel_scope.cancel()

        tg.start_soon(closed)
        await closing.wait()
        tg.cancel_scope.cancel()
    with contextlib.suppress(anyio.BrokenResourceError, anyio.ClosedResourceError):
        await child.send_eof()  # let it finish; it may be gone already


_OTHER = {"acp": ("ACP", "wire", "a Wire"), "wire": ("Wire", "acp", "an ACP")}
"""The protocol the backend was spoken to -> its name, the other one's option value, an agent."""


def start_failure(program: str, exc: BaseException, protocol: str | None = None) -> BackendGone:
    """The error for a backend that could not be started.

    ``protocol`` (``"acp"`` or ``"wire"``) is what the backend was spoken to:
    invalid parameters for its ``initialize`` mean it speaks the other one,
    which the proxy's ``--agent-protocol`` option fixes.
    """
    if protocol in _OTHER and isinstance(exc, RpcError) and exc.code == ErrorCode.INVALID_PARAMS:
        ours, other, agent = _OTHER[protocol]
        return BackendGone(f"the backend agent {program} refused {ours}'s initialize "
                           f"({exc.message}): it looks like {agent} agent; run the proxy with "
                           f"--agent-protocol {other} (or auto)")
    return BackendGone(f"cannot start the backend agent {program}: {exc}; "
                       "check the command given after --")
