"""The Wire client role: drive any Wire server (docs/protocol-wire.md).

Theory of operation
-------------------
``async with WireClient(stream, ...) as client`` runs a
:class:`~wireproto.rpc.peer.Peer` with the Wire dialect. Requests to the
server carry **string** ids (``"prompt-3"``): the reference server rejects
numeric ids with ``-32600``.

* :meth:`WireClient.initialize` sends the handshake (our newest version,
  external tools, capabilities, hook subscriptions) with a timeout
  (:data:`HANDSHAKE_TIMEOUT` by default). A ``-32601`` answer or no answer at
  all means a server older than the handshake: the client logs a warning with
  the reason, sets :attr:`WireClient.legacy` and carries on in v1 mode, unless
  ``require_handshake`` is set (then it raises).
* **Turns.** ``async with client.prompt(text) as turn: async for event in
  turn`` yields the turn's events and ends at the ``prompt`` response
  (:class:`~.turn.WireTurn`; ``await client.prompt(text)`` still runs a
  turn to its end). One turn at a time per connection.
* **Events** are decoded (unknown types become :class:`~..messages.UnknownEvent`,
  never an error) and handled in arrival order: passed to ``on_event``, then
  to the iterated turn when one is running, else to the stream of events
  *outside turns* read with :meth:`WireClient.events` /
  :meth:`WireClient.take_events` (replays, events of awaited prompts). That
  stream holds ``event_buffer`` events; when nobody reads it, the oldest is
  dropped (logged once per overflow) and the connection never stalls.
  An iterated turn's buffer is bounded too, but makes the reader wait.
* ``request``\\ s are answered by the handler table :data:`~.requests.REQUEST_HANDLERS`
  (approval, external tool, question, hook), each with a safe default:
  reject, an error tool result, dismissed, allow. When the server resolves a
  request by itself (an ``ApprovalResponse`` / ``ToolResult`` event naming a
  request still being handled), the handler is cancelled and the default
  answer is sent. When a ``prompt`` response arrives, the external tool
  handlers of that turn still running are cancelled the same way (after a
  cancel the server never closes a pending tool call).
* **Replay.** The requests a server re-sends during :meth:`WireClient.replay`
  are history: no handler runs for them and they get no answer at all (the
  protocol says replayed requests must not be answered). The client treats
  every request as history from the moment ``replay`` is sent until the next
  ``prompt`` (they are logged at debug level).
* **Deadlines.** Every call takes ``timeout=`` (seconds, ``None``: wait
  forever): ``initialize`` :data:`HANDSHAKE_TIMEOUT`, ``steer`` / ``cancel``
  / ``set_plan_mode`` / extension calls :data:`CALL_TIMEOUT`, ``prompt`` and
  ``replay`` none. Wire cannot cancel a single request: a call that timed out
  raises ``TimeoutError`` and its late answer is dropped; a ``replay`` that
  timed out is stopped with ``cancel``.
"""

from __future__ import annotations

import itertools
import logging
from collections.abc import AsyncIterator, Awaitable, Callable, Mapping, Sequence
from types import TracebackType
from typing import TYPE_CHECKING, Any, TypeVar

import anyio
import anyio.abc
import msgspec

from wireproto import __version__
from wireproto.adapters._shared import after_notifications, running_peer
from wireproto.errors import LocalProtocolError, RemoteProtocolError, RpcError
from wireproto.jsonrpc.codec import WIRE_DIALECT, IncomingResponse
from wireproto.jsonrpc.messages import ErrorCode
from wireproto.rpc.peer import Peer
from wireproto.rpc.router import NO_REPLY, Router

from .. import messages as m
from ..envelope import decode_event, decode_request
from ..methods import (
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
from ..versions import CURRENT_VERSION
from .events import EventQueue, WireEvent
from .requests import (
    REQUEST_HANDLERS,
    ApprovalHandler,
    HookHandler,
    LegacyToolHandler,
    QuestionHandler,
    RequestAnswers,
    ToolEntry,
    ToolHandler,
    with_context,
)
from .turn import WireTurn

__all__ = [
    "CALL_TIMEOUT",
    "HANDSHAKE_TIMEOUT",
    "ApprovalHandler",
    "EventHandler",
    "HookHandler",
    "QuestionHandler",
    "ToolEntry",
    "ToolHandler",
    "WireClient",
    "WireEvent",
]

log = logging.getLogger(__name__)

R = TypeVar("R")

if TYPE_CHECKING:
    from wireproto.transports.process import ProcessHandle

HANDSHAKE_TIMEOUT = 60.0
"""Default seconds ``initialize`` waits; counted from when the server process
was started (a loaded machine may need 10 s or more to start a Python agent)."""

CALL_TIMEOUT = 60.0
"""Default seconds ``steer``, ``cancel``, ``set_plan_mode`` and extension calls wait."""

EventHandler = Callable[[WireEvent], Awaitable[None]]
"""Sees every event, in order, before it is queued."""


class WireClient(RequestAnswers):
    """A Wire client over any message stream.

    Args:
        stream: the connection to the server.
        client_info: sent in ``initialize`` (default: ``wireproto`` and its version).
        tools: external tools offered to the server, as ``(spec, handler)``
            pairs; the handler gets the arguments and a :class:`ToolContext`.
        external_tools: the older form: name -> (spec, handler taking only
            the arguments).
        on_approval: answers ``ApprovalRequest``\\ s (default: reject).
        on_question: answers ``QuestionRequest``\\ s (default: dismiss); giving
            one declares ``supports_question``.
        on_hook: decides ``HookRequest``\\ s (default: allow).
        on_event: called with every event, in order.
        hooks: hook subscriptions sent in ``initialize``.
        supports_plan_mode: declared in ``initialize``.
        event_buffer: events outside turns kept for :meth:`events` (the oldest
            is dropped when it is full); ``0`` keeps none (use ``on_event``).
            Also the buffer of each iterated turn.
        initialize_timeout: seconds to wait for the ``initialize`` answer.
        require_handshake: raise instead of falling back to v1 mode.
        name: a label for log lines.

    Attributes:
        process: the spawned server (``pid``, ``returncode`` after the end)
            when :func:`~wireproto.adapters.wire.connect_wire` started one.
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
        tools: Sequence[ToolEntry] = (),
        external_tools: Mapping[str, tuple[ExternalTool, LegacyToolHandler]] | None = None,
        on_approval: ApprovalHandler | None = None,
        on_question: QuestionHandler | None = None,
        on_hook: HookHandler | None = None,
        on_event: EventHandler | None = None,
        hooks: Sequence[HookSubscription] = (),
        supports_plan_mode: bool = False,
        event_buffer: int = 1024,
        initialize_timeout: float = HANDSHAKE_TIMEOUT,
        require_handshake: bool = False,
        name: str = "wire client",
    ) -> None:
        self._stream = stream
        self.client_info = client_info or ClientInfo(name="wireproto", version=__version__)
        self.tools: dict[str, ToolEntry] = {}
        for name_, (spec, legacy) in (external_tools or {}).items():
            self.tools[name_] = (spec, with_context(legacy))
        for spec, handler in tools:
            if spec.name in self.tools:
                raise ValueError(f"external tool {spec.name!r} given twice")
            self.tools[spec.name] = (spec, handler)
        self.on_approval = on_approval
        self.on_question = on_question
        self.on_hook = on_hook
        self.on_event = on_event
        self.hooks = list(hooks)
        self.supports_plan_mode = supports_plan_mode
        self.event_buffer = event_buffer
        self.initialize_timeout = initialize_timeout
        self.require_handshake = require_handshake
        self.name = name
        self.process: ProcessHandle | None = None
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
        self._events: EventQueue | None = None
        self._turn: WireTurn | None = None
        self._iterated = False
        self._turn_tools: set[str] = set()
        self._replaying = False

    # ------------------------------------------------------------- lifecycle

    async def __aenter__(self) -> WireClient:
        router = Router()
        router.add(EVENT_METHOD, self._on_event, msgspec.Raw, notification=True)
        router.add(REQUEST_METHOD, self._on_request, msgspec.Raw)
        if self.event_buffer > 0:
            self._events = EventQueue(self.event_buffer, self.name)
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
            if self._events is not None:
                self._events.close()

    @property
    def peer(self) -> Peer:
        """The running peer (:class:`LocalProtocolError` outside ``async with``)."""
        return running_peer(self._peer, "Wire client")

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

    async def ext_request(
        self,
        method: str,
        params: Any = None,
        *,
        result_type: type[R] | None = None,
        timeout: float | None = CALL_TIMEOUT,  # noqa: ASYNC109 (a per-request deadline)
    ) -> Any:
        """Send a request the Wire protocol does not define (a vendor extension).

        Args:
            method: the method name.
            params: any JSON-encodable value or msgspec Struct (``None``: ``{}``).
            result_type: decode the result as this type (default: plain JSON values).
            timeout: seconds to wait; ``None``: forever.

        Raises:
            RpcError / TimeoutError / RemoteProtocolError: an error answer, no
                answer in time, or a result that does not fit ``result_type``.
        """
        raw = await self.peer.request(
            method, {} if params is None else params, result_type=msgspec.Raw,
            timeout=timeout, id=f"ext-{next(self._ids)}",
        )
        try:
            return msgspec.json.decode(raw, type=result_type or Any)
        except msgspec.DecodeError as exc:
            raise RemoteProtocolError(f"invalid {method} result: {exc}") from exc

    async def ext_notify(self, method: str, params: Any = None) -> None:
        """Send a notification the Wire protocol does not define.

        Raises:
            ConnectionClosed: the connection is closed.
        """
        await self.peer.notify(method, {} if params is None else params)

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
            RemoteProtocolError: the server has no handshake and
                :attr:`require_handshake` is set.
        """
        params = InitializeParams(
            protocol_version=CURRENT_VERSION,
            client=self.client_info,
            external_tools=[spec for spec, _ in self.tools.values()] or None,
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
        if self.require_handshake:
            raise RemoteProtocolError(
                f"the Wire server did not complete the handshake: {why} "
                "(raise initialize_timeout for a slow server, or allow the v1 fallback)"
            )
        self.initialized, self.legacy = False, True
        log.warning("%s: %s; falling back to v1 mode without handshake "
                    "(no external tools, no slash command list)", self.name, why)

    def prompt(self, user_input: m.UserInput) -> WireTurn:
        """A prompt turn: iterate it in ``async with``, or await it for its result.

        Example::

            async with client.prompt("fix the bug") as turn:
                async for event in turn:
                    ...
            print(turn.status)

        A turn has no deadline; cancelling the task that iterates it cancels
        it on the server.

        Raises (when run):
            RpcError: ``-32000`` when a turn is already running, or another error.
            LocalProtocolError: this client already runs a turn.
            ConnectionClosed: the connection ended first.
        """
        return WireTurn(self, user_input, self.event_buffer)

    async def _send_prompt(
        self,
        turn: WireTurn,
        on_sent: Callable[[], None] | None,
        on_response: Callable[[], None] | None,
    ) -> PromptResult:
        if self._turn is None:
            self._turn, self._iterated, self._replaying = turn, on_sent is not None, False
        elif on_sent is not None:
            raise LocalProtocolError("this Wire client already runs a turn")
        # else an awaited prompt during a turn: sent anyway, the server refuses it

        def sent() -> None:
            if on_sent is not None:
                # events read before the prompt went out are not the turn's
                self.peer.call_in_order(lambda: setattr(turn, "accepting", not turn._answered))
                on_sent()

        def responded(response: IncomingResponse) -> None:
            turn.accepting = False
            if self._turn is turn:
                self._end_tools("the prompt was answered")
            if on_response is not None:
                on_response()

        try:
            result: PromptResult = await self.peer.request(
                PROMPT.name, PromptParams(user_input=turn.user_input),
                result_type=PromptResult, id=f"{PROMPT.name}-{next(self._ids)}",
                on_sent=sent, on_response=responded,
            )
            return result
        finally:
            if self._turn is turn:
                self._turn = None

    def _end_tools(self, why: str) -> None:
        for request_id in self._turn_tools:
            scope = self._handling.get(request_id)
            if scope is not None:
                log.info("%s: external tool call %s still running: %s; cancelling it",
                         self.name, request_id, why)
                scope.cancel()
        self._turn_tools.clear()

    async def steer(
        self, user_input: m.UserInput, *, timeout: float | None = CALL_TIMEOUT  # noqa: ASYNC109
    ) -> SteerResult:
        """Add input to the running turn (``-32000`` when none runs)."""
        return await self._call(STEER, SteerParams(user_input=user_input), timeout)

    async def cancel(self, *, timeout: float | None = CALL_TIMEOUT) -> None:  # noqa: ASYNC109
        """Cancel the running turn or replay (``-32000`` when none runs)."""
        await self._call(CANCEL, limit=timeout)

    async def replay(self, *, timeout: float | None = None) -> ReplayResult:  # noqa: ASYNC109
        """Stream the session's history as events outside turns; returns the counts.

        Requests re-sent during the replay are history: no handler runs and
        nothing answers them.

        Raises:
            TimeoutError: it did not end within ``timeout`` (it is then cancelled).
        """
        self._replaying = True
        try:
            return await self._call(REPLAY, limit=timeout)
        except TimeoutError:
            with anyio.move_on_after(CALL_TIMEOUT, shield=True):
                try:
                    await self.cancel()
                except (RpcError, TimeoutError) as exc:
                    log.debug("%s: cancel of the replay: %r", self.name, exc)
            raise

    async def set_plan_mode(
        self, enabled: bool, *, timeout: float | None = CALL_TIMEOUT  # noqa: ASYNC109
    ) -> SetPlanModeResult:
        """Switch plan mode (``-32000`` when the agent has none)."""
        return await self._call(SET_PLAN_MODE, SetPlanModeParams(enabled=enabled), timeout)

    # --------------------------------------------------------------- events

    def events(self) -> AsyncIterator[WireEvent]:
        """Iterate over the events outside turns, in arrival order, until the client is closed.

        A plain iterator (not an async generator): breaking out of the loop
        needs no clean-up, and several loops may take turns.

        Raises:
            LocalProtocolError: events are not queued (``event_buffer=0``).
        """
        if self._events is None:
            raise LocalProtocolError(
                "events are not queued: pass event_buffer > 0 or use on_event="
            )
        return aiter(self._events)

    def take_events(self) -> list[WireEvent]:
        """Return (and remove) every event outside turns kept so far, without waiting.

        After an awaited :meth:`prompt` returns, every event of that turn is there.
        """
        return [] if self._events is None else self._events.take()

    async def _on_event(self, raw: msgspec.Raw) -> None:
        try:
            event = decode_event(raw)
        except RpcError as exc:
            log.warning("%s: invalid event dropped: %s %s", self.name, exc.message, exc.data)
            return
        self._dismiss(event)
        if self.on_event is not None:
            await self.on_event(event)
        turn = self._turn
        if turn is not None and turn.accepting:
            await turn._deliver(event)
        elif self._events is not None:
            self._events.put(event)

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

    async def _on_request(self, raw: msgspec.Raw) -> Any:
        request = decode_request(raw)  # RpcError -32602 answers a bad envelope
        if self._replaying:
            log.debug("%s: replayed %s %s is history: not handled, not answered",
                      self.name, request.WIRE_TYPE, request.id)
            return NO_REPLY
        answer, fallback = REQUEST_HANDLERS[type(request)]
        scope = anyio.CancelScope()
        self._handling[request.id] = scope
        try:
            with scope:
                await after_notifications(self.peer)  # the events sent before it first
                return await answer(self, request)
        finally:
            if self._handling.get(request.id) is scope:
                del self._handling[request.id]
        return fallback(request)  # dismissed by the server: send the safe default
