"""The ACP agent's method table: method -> connection method, params decoder.

Theory of operation
-------------------
:func:`method_table` builds, once per kind of agent, the
:class:`~wireproto.rpc.router.Router` that every
:class:`~.connection.AgentConnection` of such agents binds
(:meth:`~wireproto.rpc.router.Router.bind`: a handler is called with the
connection). Each handler is wrapped by :func:`route`: ``-32600`` until
``initialize`` was answered, ``-32602`` for params that did not decode (the
lenient decoder :func:`lenient` turned them into an :class:`Invalid`), and
agent API errors as ACP error answers (:data:`ERROR_CODES`).
"""

from __future__ import annotations

import functools
from collections.abc import Awaitable, Callable
from typing import Any

import msgspec

from wireproto.adapters._shared import rpc_error
from wireproto.adapters.acp import codec, extra
from wireproto.adapters.acp import schema as S
from wireproto.adapters.acp.agent.mcp import decode_setup
from wireproto.errors import (
    AgentError,
    AuthRequired,
    Busy,
    InvalidArgument,
    InvalidMessage,
    NotFound,
)
from wireproto.jsonrpc.codec import validation_error_data
from wireproto.jsonrpc.messages import ErrorCode
from wireproto.rpc.router import Decode, Router

__all__ = ["BUSY_CODE", "ERROR_CODES", "Invalid", "Method", "lenient", "method_table", "route"]

BUSY_CODE = -32001
"""Implementation-defined error code for :class:`~wireproto.errors.Busy` (a turn
is already running in the session). ACP defines no code for it; -32001 lies in
JSON-RPC's server-error range and is not used by ACP."""

ERROR_CODES: dict[type[AgentError], int] = {
    AuthRequired: -32000,
    InvalidArgument: ErrorCode.INVALID_PARAMS,
    NotFound: -32002,
    Busy: BUSY_CODE,
}
"""Agent API error -> ACP error code (others: -32603)."""


class Invalid:
    """Params that do not decode: the route's handler raises :attr:`error` once
    it checked "initialize first" (so a call before ``initialize`` answers
    ``-32600`` whatever its params)."""

    __slots__ = ("error",)

    def __init__(self, error: InvalidMessage) -> None:
        self.error = error


def lenient(type_: Any, decode: Callable[[msgspec.Raw], Any] | None = None) -> Decode:
    """A lenient route decoder; params it rejects become an :class:`Invalid`
    answering ``-32602`` with a message naming the field and its path."""
    inner = decode or (lambda raw: codec.decode(raw, type_))

    def run(raw: msgspec.Raw) -> Any:
        try:
            return inner(raw)
        except msgspec.ValidationError as exc:
            data = validation_error_data(exc)
            where = "" if data["path"] == "$" else f" at {data['path']}"
            return Invalid(InvalidMessage(
                ErrorCode.INVALID_PARAMS, f"Invalid params: {data['reason']}{where}", data
            ))

    return run


Method = Callable[[Any, Any], Awaitable[Any]]
"""An :class:`~.connection.AgentConnection` method serving one ACP method:
``(connection, params)``."""


def route(method: Method, *, first: bool = False) -> Method:
    """``method`` as a route handler of the shared table: ``-32600`` until
    ``initialize`` was answered (unless ``first``), then ``-32602`` for
    params that did not decode, and agent API errors as ACP error answers."""

    async def run(connection: Any, params: Any) -> Any:
        if not first and not connection.initialized:
            raise InvalidMessage(ErrorCode.INVALID_REQUEST,
                                 "Invalid request: initialize must come first")
        if type(params) is Invalid:
            raise params.error
        try:
            return await method(connection, params)
        except AgentError as exc:
            raise rpc_error(exc, ERROR_CODES) from exc

    return run


@functools.cache
def method_table(cls: Any, supports_delete: bool, supports_logout: bool) -> Router:
    """The method table of ``cls`` (:class:`~.connection.AgentConnection`), shared
    by the connections of such agents (see its ``router``).

    Params are decoded strictly first (in one pass with the envelope when
    the codec can) and leniently only when that fails; the session set-up
    requests split the MCP servers, so they keep a decoder of their own.
    """
    c = cls
    requests: list[tuple[str, Method, Any, bool]] = [
        ("initialize", c._initialize, S.InitializeRequest, False),
        ("authenticate", c._authenticate, S.AuthenticateRequest, False),
        ("session/new", c._new, S.NewSessionRequest, True),
        ("session/load", c._load, S.LoadSessionRequest, True),
        ("session/resume", c._resume, S.ResumeSessionRequest, True),
        ("session/list", c._list, S.ListSessionsRequest, False),
        ("session/close", c._close, S.CloseSessionRequest, False),
        ("session/prompt", c._prompt, S.PromptRequest, False),
        ("session/set_mode", c._set_mode, S.SetSessionModeRequest, False),
        ("session/set_config_option", c._set_config_option,
         S.SetSessionConfigOptionRequest, False),
        ("session/set_model", c._set_model, extra.SetSessionModelRequest, False),
    ]
    if supports_delete:
        requests.append(("session/delete", c._delete, S.DeleteSessionRequest, False))
    if supports_logout:
        requests.append(("logout", c._logout, S.LogoutRequest, False))
    table = Router()
    for method, handler, type_, setup in requests:
        run = route(handler, first=method == "initialize")
        if setup:
            table.add(method, run, decode=lenient(None, decode_setup(type_)))
        else:
            table.add(method, run, type_, dec_hook=codec.dec_hook, lenient=lenient(type_),
                      cancel=c._cancel_prompt if method == "session/prompt" else None)
    table.add("session/cancel", route(c._cancel, first=True), S.CancelNotification,
              notification=True, dec_hook=codec.dec_hook, lenient=lenient(S.CancelNotification))
    return table
