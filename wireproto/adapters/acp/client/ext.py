"""The ACP client's default deadlines and its extension calls (``_vendor/...`` methods).

Every client call takes ``timeout=`` (seconds; ``None`` waits forever). The
defaults: :data:`INITIALIZE_TIMEOUT` for ``initialize``, :data:`CALL_TIMEOUT`
for every other call, and none for a prompt turn, which may run for hours.
A request that times out raises ``TimeoutError`` and is cancelled on the
wire with ``$/cancel_request``, so the agent may stop working on it.
"""

from __future__ import annotations

from typing import Any, TypeVar

import msgspec

from wireproto.adapters.acp.client.turn import decode_result
from wireproto.rpc.peer import Peer

__all__ = ["CALL_TIMEOUT", "INITIALIZE_TIMEOUT", "ExtensionCalls"]

R = TypeVar("R")

INITIALIZE_TIMEOUT = 30.0
"""Default seconds ``initialize`` waits for the agent."""

CALL_TIMEOUT = 60.0
"""Default seconds every other call except a prompt waits (session set-up may
start MCP servers first)."""


def check_extension(method: str) -> None:
    """Refuse a method name that is not an extension.

    Raises:
        ValueError: ``method`` does not start with ``_``.
    """
    if not method.startswith("_"):
        raise ValueError(f"extension methods start with '_' (e.g. '_vendor/{method}'): "
                         f"{method!r}")


class ExtensionCalls:
    """``ext_request`` / ``ext_notify`` of the ACP ``ClientConnection``."""

    @property
    def peer(self) -> Peer:  # pragma: no cover (defined by the connection)
        raise NotImplementedError

    def _require(self, method: str) -> None:  # pragma: no cover (defined by the connection)
        raise NotImplementedError

    async def ext_request(
        self,
        method: str,
        params: Any = None,
        *,
        result_type: type[R] | None = None,
        timeout: float | None = CALL_TIMEOUT,
    ) -> Any:
        """Send an extension request (a method starting with ``_``, e.g. ``_zed/x``).

        Args:
            method: the method name; it must start with ``_``.
            params: any JSON-encodable value or msgspec Struct (``None``: ``{}``).
            result_type: decode the result as this type (default: plain JSON values).
            timeout: seconds to wait (then cancelled on the wire); ``None``: forever.

        Returns:
            the result, as ``result_type`` when given.

        Raises:
            ValueError: ``method`` does not start with ``_``.
            LocalProtocolError: ``initialize`` was not called.
            RpcError / TimeoutError / RemoteProtocolError: an error answer, no
                answer in time, or a result that does not fit ``result_type``.
        """
        check_extension(method)
        self._require(method)
        raw = await self.peer.request(method, {} if params is None else params,
                                      result_type=msgspec.Raw, timeout=timeout)
        if result_type is None:
            return msgspec.json.decode(raw)
        return decode_result(method, raw, result_type)

    async def ext_notify(self, method: str, params: Any = None) -> None:
        """Send an extension notification (a method starting with ``_``).

        Raises:
            ValueError: ``method`` does not start with ``_``.
            ConnectionClosed: the connection is closed.
        """
        check_extension(method)
        await self.peer.notify(method, {} if params is None else params)
