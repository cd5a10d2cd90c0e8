"""The Wire client role: drive any Wire server (docs/protocol-wire.md).

Theory of operation
-------------------
``async with WireClient(stream, ...) as client`` runs a
:class:`~wireproto.rpc.peer.Peer` with the Wire dialect. Requests to the
server carry **string** ids (``"prompt-3"``): the reference server rejects
numeric ids with ``-32600``.

* :meth:`WireClient.initialize` sends the ``initialize`` handshake (our newest
  version, external tools, capabilities, hook subscriptions) with a timeout.
  A ``-32601`` answer or no answer at all means a server older than the
  handshake: the client logs it, sets :attr:`WireClient.legacy` and carries on
  in v1 mode (protocol-wire.md#compatibility).
* ``event`` notifications are decoded (unknown types become
  :class:`~.messages.UnknownEvent`, never an error) and handled in arrival
  order: passed to ``on_event`` and put on a bounded queue read with
  :meth:`WireClient.events` / :meth:`WireClient.take_events`. A full queue
  makes the reader wait (backpressure); a prompt's events are all queued
  before its response is delivered.
* ``request``\\ s are answered by the handler table :data:`_REQUEST_HANDLERS`
  (approval, external tool, question, hook), each with a safe default:
  reject, an error tool result, dismissed, allow. When the server resolves a
  request by itself (an ``ApprovalResponse`` / ``ToolResult`` event naming a
  request still being handled, protocol-wire.md#visible-resolution), the
  handler is cancelled and the default answer is sent.
"""

from __future__ import annotations

import itertools
import logging
from collections.abc import AsyncIterator, Awaitable, Callable, Mapping, Sequence
from types import TracebackType
from typing import Any, TypeVar

import anyio
import anyio.abc
import msgspec
from anyio.streams.memory import MemoryObjectReceiveStream, MemoryObjectSendStream

from wireproto import __version__
from wireproto.errors import LocalProtocolError, RpcError
from wireproto.jsonrpc.codec import TOO_DEEP, WIRE_DIALECT
from wireproto.jsonrpc.messages import ErrorCode
from wireproto.rpc.peer import Peer
from wireproto.rpc.router import Router

from . import messages as m
from .envelope import decode_event, decode_request
from .methods import (
    CANCEL,
    EVENT_METHOD,
    INITIALIZE,
    PROMPT,
    REPLAY,
    REQUEST_METHOD,
    SET_PLAN_MODE,
    STEER,
    ClientInfo,
    ExternalTool,
    ExternalToolsResult,
    HooksInfo,
    HookSubscription,
    InitializeParams,
    InitializeResult,
    PromptParams,
    PromptResult,
    ReplayResult,
    ServerCapabilities,
    ServerInfo,
    SetPlanModeParams,
    SetPlanModeResult,
    SlashCommand,
    SteerParams,
    SteerResult,
    WireClientCapabilities,
    WireMethod,
)
from .versions import CURRENT_VERSION

__all__ = [
    "ApprovalHandler",
    "EventHandler",
    "HookHandler",
    "QuestionHandler",
    "ToolHandler",
    "WireClient",
]

log = logging.getLogger(__name__)

R = TypeVar("R")

WireEvent = m.Event | m.UnknownEvent
"""What the event stream yields."""

ApprovalHandler = Callable[[m.ApprovalRequest], Awaitable[m.ApprovalResponse | m.ApprovalKind]]
"""Answers an approval: a full response, or just ``"approve"`` / ``"approve_for_session"`` /
``"reject"``."""

ToolHandler = Callable[[Any], Awaitable[m.ToolReturnValue | str]]
"""Runs an external tool with its decoded JSON arguments; a string is a successful output."""

QuestionHandler = Callable[[m.QuestionRequest], Awaitable[dict[str, str]]]
"""Answers questions: question text -> label (comma-joined labels for multi-select)."""

HookHandler = Callable[[m.HookRequest], Awaitable[m.HookResponse | m.HookAction]]
"""Decides a hook: a full response, or just ``"allow"`` / ``"block"``."""

EventHandler = Callable[[WireEvent], Awaitable[None]]
"""Sees every event, in order, before it is queued."""


class WireClient:
    """A Wire client over any message stream.

    Args:
        stream: the connection to the server.
        client_info: sent in ``initialize`` (default: ``wireproto`` and its version).
        external_tools: tool name -> (spec, handler) offered to the server.
        on_approval: answers ``ApprovalRequest``\\ s (default: reject).
        on_question: answers ``QuestionRequest``\\ s (default: dismiss); giving
            one declares ``supports_question``.
        on_hook: decides ``HookRequest``\\ s (default: allow).
        on_event: called with every event, in order.
        hooks: hook subscriptions sent in ``initialize``.
        supports_plan_mode: declared in ``initialize``.
        event_buffer: events queued for :meth:`events` before the reader waits;
            ``0`` queues nothing (use ``on_event``).
        initialize_timeout: seconds to wait for the ``initialize`` answer.
        name: a label for log lines.

    Attributes:
        initialized: the server answered ``initialize``.
        legacy: the server predates ``initialize`` (v1 mode).
        protocol_version: the negotiated version (``None`` in v1 mode).
        server_info: what the ``initialize`` answer said (likewise
            ``slash_commands``, ``external_tools_result``, ``hooks_info``
            and ``server_capabilities``).
    """

    def __init__(
        self,
        stream: anyio.abc.ObjectStream[bytes],
        *,
        client_info: ClientInfo | None = None,
        external_tools: Mapping[str, tuple[ExternalTool, ToolHandler]] | None = None,
        on_approval: ApprovalHandler | None = None,
        on_question: QuestionHandler | None = None,
        on_hook: HookHandler | None = None,
        on_event: EventHandler | None = None,
        hooks: Sequence[HookSubscription] = (),
        supports_plan_mode: bool = False,
        event_buffer: int = 1024,
        initialize_timeout: float = 5.0,
        name: str = "wire client",
    ) -> None:
        self._stream = stream
        self.client_info = client_info or ClientInfo(name="wireproto", version=__version__)
        self.external_tools: dict[str, tuple[ExternalTool, ToolHandler]] = dict(
            external_tools or {}
        )
        self.on_approval = on_approval
        self.on_question = on_question
        self.on_hook = on_hook
        self.on_event = on_event
        self.hooks = list(hooks)
        self.supports_plan_mode = supports_plan_mode
        self.event_buffer = event_buffer
        self.initialize_timeout = initialize_timeout
        self.name = name
        self.initialized = False
        self.legacy = False
        self.protocol_version: str | None = None
        self.server_info: ServerInfo | None = None
        self.slash_commands: list[SlashCommand] = []
        self.external_tools_result: ExternalToolsResult | None = None
        self.hooks_info: HooksInfo | None = None
        self.server_capabilities: ServerCapabilities | None = None
        self._ids = itertools.count(1)
        self._handling: dict[str, anyio.CancelScope] = {}
        self._peer: Peer | None = None
        self._events_in: MemoryObjectSendStream[WireEvent] | None = None
        self._events_out: MemoryObjectReceiveStream[WireEvent] | None = None

    # ------------------------------------------------------------- lifecycle

    async def __aenter__(self) -> WireClient:
        router = Router()
        router.add(EVENT_METHOD, self._on_event, msgspec.Raw, notification=True)
        router.add(REQUEST_METHOD, self._on_request, msgspec.Raw)
        if self.event_buffer > 0:
            self._events_in, self._events_out = anyio.create_memory_object_stream[WireEvent](
                self.event_buffer
            )
        self._peer = Peer(self._stream, router, dialect=WIRE_DIALECT, name=self.name)
        await self._peer.__aenter__()
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        try:
            if self._peer is not None:
                await self._peer.__aexit__(exc_type, exc, tb)
        finally:
            if self._events_in is not None:
                self._events_in.close()
            if self._events_out is not None:
                self._events_out.close()

    @property
    def peer(self) -> Peer:
        """The running peer.

        Raises:
            LocalProtocolError: the client is not running (use ``async with``).
        """
        if self._peer is None:
            raise LocalProtocolError("the Wire client is not running: use 'async with client'")
        return self._peer

    async def wait_closed(self) -> None:
        """Wait until the server's side of the connection ends."""
        await self.peer.wait_closed()

    # ---------------------------------------------------------------- calls

    async def _call(
        self, spec: WireMethod[Any, R], params: Any = msgspec.UNSET, limit: float | None = None
    ) -> R:
        result: R = await self.peer.request(
            spec.name, params, result_type=spec.result, timeout=limit,
            id=f"{spec.name}-{next(self._ids)}",
        )
        return result

    async def initialize(
        self, *, timeout: float | None = None  # noqa: ASYNC109 (the handshake's deadline)
    ) -> InitializeResult | None:
        """Send ``initialize``; fall back to v1 mode on ``-32601`` or no answer.

        Args:
            timeout: seconds to wait (default :attr:`initialize_timeout`).

        Returns:
            the server's answer, or ``None`` in v1 mode (:attr:`legacy` set).

        Raises:
            RpcError: any other error answer (e.g. ``-32000`` during a turn).
        """
        params = InitializeParams(
            protocol_version=CURRENT_VERSION,
            client=self.client_info,
            external_tools=[spec for spec, _ in self.external_tools.values()] or None,
            hooks=self.hooks or None,
            capabilities=WireClientCapabilities(
                supports_question=self.on_question is not None,
                supports_plan_mode=self.supports_plan_mode,
            ),
        )
        wait = self.initialize_timeout if timeout is None else timeout
        try:
            result = await self._call(INITIALIZE, params, limit=wait)
        except TimeoutError:
            self._fall_back(f"no answer to initialize within {wait:g} s")
            return None
        except RpcError as exc:
            if exc.code != ErrorCode.METHOD_NOT_FOUND:
                raise
            self._fall_back(f"initialize answered {exc.code} {exc.message!r}")
            return None
        self.initialized, self.legacy = True, False
        self.protocol_version = result.protocol_version
        self.server_info = result.server
        self.slash_commands = list(result.slash_commands)
        tools = result.external_tools
        self.external_tools_result = tools if isinstance(tools, ExternalToolsResult) else None
        self.hooks_info = result.hooks
        self.server_capabilities = result.capabilities
        for rejected in self.external_tools_result.rejected if self.external_tools_result else ():
            log.warning("%s: the server rejected external tool %s: %s", self.name,
                        rejected.name, rejected.reason)
        log.info("%s: connected to %s %s, protocol %s", self.name, result.server.name,
                 result.server.version, result.protocol_version)
        return result

    def _fall_back(self, why: str) -> None:
        self.initialized, self.legacy = False, True
        log.warning("%s: %s; falling back to v1 mode without handshake "
                    "(no external tools, no slash command list)", self.name, why)

    async def prompt(self, user_input: m.UserInput) -> PromptResult:
        """Run one turn; events stream meanwhile. Returns the final status.

        Raises:
            RpcError: ``-32000`` when a turn is already running, or another error.
            ConnectionClosed: the connection ended first.
        """
        return await self._call(PROMPT, PromptParams(user_input=user_input))

    async def steer(self, user_input: m.UserInput) -> SteerResult:
        """Add input to the running turn (``-32000`` when none runs)."""
        return await self._call(STEER, SteerParams(user_input=user_input))

    async def cancel(self) -> None:
        """Cancel the running turn or replay (``-32000`` when none runs)."""
        await self._call(CANCEL)

    async def replay(self) -> ReplayResult:
        """Stream the session's history as events; returns the counts."""
        return await self._call(REPLAY)

    async def set_plan_mode(self, enabled: bool) -> SetPlanModeResult:
        """Switch plan mode (``-32000`` when the agent has none)."""
        return await self._call(SET_PLAN_MODE, SetPlanModeParams(enabled=enabled))

    # --------------------------------------------------------------- events

    def events(self) -> AsyncIterator[WireEvent]:
        """Iterate over the queued events in arrival order until the client is closed.

        A plain iterator (not an async generator): breaking out of the loop
        needs no clean-up, and several loops may take turns.

        Raises:
            LocalProtocolError: events are not queued (``event_buffer=0``).
        """
        if self._events_out is None:
            raise LocalProtocolError(
                "events are not queued: pass event_buffer > 0 or use on_event="
            )
        return _EventIterator(self._events_out)

    def take_events(self) -> list[WireEvent]:
        """Return (and remove) every event queued so far, without waiting.

        After :meth:`prompt` returns, every event of that turn is queued.
        """
        taken: list[WireEvent] = []
        if self._events_out is None:
            return taken
        while True:
            try:
                taken.append(self._events_out.receive_nowait())
            except (anyio.WouldBlock, anyio.EndOfStream, anyio.ClosedResourceError):
                return taken

    async def _on_event(self, raw: msgspec.Raw) -> None:
        try:
            event = decode_event(raw)
        except RpcError as exc:
            log.warning("%s: invalid event dropped: %s %s", self.name, exc.message, exc.data)
            return
        self._dismiss(event)
        if self.on_event is not None:
            await self.on_event(event)
        if self._events_in is not None:
            await self._events_in.send(event)

    def _dismiss(self, event: WireEvent) -> None:
        """Cancel a handler whose request the server resolved by itself.

        See protocol-wire.md#visible-resolution.
        """
        key = None
        if isinstance(event, m.ApprovalResponse):
            key = event.request_id
        elif isinstance(event, m.ToolResult):
            key = event.tool_call_id
        scope = self._handling.get(key) if key is not None else None
        if scope is not None:
            log.info("%s: request %s resolved by the server; dismissing it", self.name, key)
            scope.cancel()

    # ------------------------------------------------------------- requests

    async def _on_request(self, raw: msgspec.Raw) -> m.Response:
        request = decode_request(raw)  # RpcError -32602 answers a bad envelope
        answer, fallback = _REQUEST_HANDLERS[type(request)]
        scope = anyio.CancelScope()
        self._handling[request.id] = scope
        try:
            with scope:
                return await answer(self, request)
        finally:
            if self._handling.get(request.id) is scope:
                del self._handling[request.id]
        return fallback(request)  # dismissed by the server: send the safe default

    async def _approval(self, request: m.ApprovalRequest) -> m.Response:
        if self.on_approval is None:
            return _reject(request)
        answer = await self.on_approval(request)
        if isinstance(answer, str):
            return m.ApprovalResponse(request_id=request.id, response=answer)
        return answer

    async def _tool_call(self, request: m.ToolCallRequest) -> m.Response:
        entry = self.external_tools.get(request.name)
        if entry is None:
            return _tool_error(request, f"Unknown external tool {request.name}")
        try:
            arguments = msgspec.json.decode(request.arguments or "{}")
        except RecursionError:
            return _tool_error(request, f"Invalid JSON arguments: {TOO_DEEP}")
        except msgspec.DecodeError as exc:
            return _tool_error(request, f"Invalid JSON arguments: {exc}")
        try:
            value = await entry[1](arguments)
        except Exception as exc:
            log.exception("%s: external tool %s failed", self.name, request.name)
            return _tool_error(request, f"{request.name} failed: {exc}")
        if isinstance(value, str):
            value = m.ToolReturnValue.ok(value)
        return m.ToolResult(tool_call_id=request.id, return_value=value)

    async def _question(self, request: m.QuestionRequest) -> m.Response:
        if self.on_question is None:
            return _dismiss_question(request)
        return m.QuestionResponse(request_id=request.id, answers=await self.on_question(request))

    async def _hook(self, request: m.HookRequest) -> m.Response:
        if self.on_hook is None:
            return _allow(request)
        answer = await self.on_hook(request)
        if isinstance(answer, str):
            return m.HookResponse(request_id=request.id, action=answer)
        return answer


class _EventIterator:
    """Async iterator over a client's event queue."""

    def __init__(self, queue: MemoryObjectReceiveStream[WireEvent]) -> None:
        self._queue = queue

    def __aiter__(self) -> _EventIterator:
        return self

    async def __anext__(self) -> WireEvent:
        try:
            return await self._queue.receive()
        except (anyio.EndOfStream, anyio.ClosedResourceError):
            raise StopAsyncIteration from None


def _reject(request: Any) -> m.Response:
    return m.ApprovalResponse(request_id=request.id, response="reject")


def _tool_error(request: Any, message: str = "The request was dismissed.") -> m.Response:
    return m.ToolResult(
        tool_call_id=request.id,
        return_value=m.ToolReturnValue.error(message, brief="External tool error"),
    )


def _dismiss_question(request: Any) -> m.Response:
    return m.QuestionResponse(request_id=request.id, answers={})


def _allow(request: Any) -> m.Response:
    return m.HookResponse(request_id=request.id, action="allow")


_RequestAnswer = Callable[[WireClient, Any], Awaitable[m.Response]]

_REQUEST_HANDLERS: dict[type, tuple[_RequestAnswer, Callable[[Any], m.Response]]] = {
    m.ApprovalRequest: (WireClient._approval, _reject),
    m.ToolCallRequest: (WireClient._tool_call, _tool_error),
    m.QuestionRequest: (WireClient._question, _dismiss_question),
    m.HookRequest: (WireClient._hook, _allow),
}
"""Request type -> (answer with the client's handler, the safe default answer)."""
