"""One ACP prompt turn as seen by the client: an async stream of updates.

A :class:`PromptTurn` is made by :meth:`ClientConnection.prompt
<wireproto.adapters.acp.client.connection.ClientConnection.prompt>` and run with
``async with``: entering it sends ``session/prompt`` from a task the turn
owns and returns once the request is queued (so a ``session/cancel`` sent
afterwards always follows it on the wire); the connection hands it the
live updates of its session through a bounded buffer; the response's
delivery hook closes the buffer, so the iteration ends right after the last
update that preceded the response on the wire, and nothing that arrives
later is attributed to this turn.
"""

from __future__ import annotations

import logging
from types import TracebackType
from typing import TYPE_CHECKING, Any, TypeVar, get_args

import anyio
import anyio.abc
import msgspec
from msgspec import UNSET, UnsetType, field

from wireproto.adapters._shared import TurnItems, enter_turn, leave_turn
from wireproto.adapters.acp import codec as acp_codec
from wireproto.adapters.acp import schema as s
from wireproto.errors import ConnectionClosed, LocalProtocolError, RemoteProtocolError
from wireproto.jsonrpc.codec import IncomingResponse

if TYPE_CHECKING:
    from wireproto.adapters.acp.client.connection import ClientConnection

__all__ = ["KNOWN_STOP_REASONS", "PromptResult", "PromptTurn", "decode_result"]

log = logging.getLogger(__name__)
R = TypeVar("R")

KNOWN_STOP_REASONS: frozenset[str] = frozenset(get_args(s.StopReason))
"""The stop reasons of ACP v1; others are reported as received (protocol-acp.md#client-side)."""

CANCEL_WAIT = 1.0
"""Seconds a turn left with an exception waits for its ``session/cancel`` to be sent."""


class PromptResult(s.Base, kw_only=True):
    """The ``session/prompt`` result with an open stop reason.

    The schema's ``StopReason`` is a closed enum; a client must report an
    unknown value rather than fail on it.
    """

    stop_reason: str = field(name="stopReason")
    meta: dict[str, Any] | UnsetType | None = field(default=UNSET, name="_meta")


def decode_result(method: str, raw: msgspec.Raw, type_: type[R]) -> R:
    """Decode a result leniently; ``null`` is ``{}`` where nothing is required.

    See protocol-acp.md#schema-over-docs.

    Raises:
        RemoteProtocolError: the result does not fit ``type_``.
    """
    try:
        if bytes(raw).strip() == b"null":
            return type_()
        return acp_codec.decode(raw, type_)
    except (msgspec.DecodeError, TypeError) as exc:  # ValidationError is a DecodeError
        raise RemoteProtocolError(f"invalid {method} result: {exc}") from exc


class PromptTurn:
    """A running prompt turn: ``async for update in turn`` until the response.

    Example::

        async with client.prompt(session_id, "Fix the bug") as turn:
            async for update in turn:
                ...
        print(turn.stop_reason)

    The iteration yields the session's live updates (schema Structs of the
    ``SessionUpdate`` union) read after the prompt was sent, and ends when
    the agent answers; when it answered with an error, the iteration raises
    it (``RpcError``). Updates read before the prompt was sent (e.g. late
    ones of the previous turn) are never yielded; ACP v1 has no turn ids, so
    a session-level update the agent sent just before it saw the prompt
    (available commands, config options) may still be. ``on_update`` sees
    every update either way. Leaving
    the ``async with`` before the end cancels the turn (``session/cancel``)
    and waits for the answer; leaving it with an exception also cancels our
    request (the peer sends ``$/cancel_request``).

    Attributes:
        session_id: the session.
        prompt: the content blocks sent.
        stop_reason: the stop reason once answered (``None`` before, or
            after an error); any string the agent sent.
        meta: the response's ``_meta`` (``None`` when absent).
        accepting: whether the connection routes the session's updates here.
    """

    def __init__(
        self,
        client: ClientConnection,
        session_id: str,
        prompt: list[s.ContentBlock],
        buffer: int,
    ) -> None:
        self.session_id = session_id
        self.prompt = prompt
        self.stop_reason: str | None = None
        self.meta: dict[str, Any] | None = None
        self._client = client
        self._buffer = buffer
        self._answered = False
        self._started = False
        self.accepting = False  # set once the updates read before the prompt are handled

    async def __aenter__(self) -> PromptTurn:
        if self._started:
            raise LocalProtocolError("a PromptTurn can be run only once")
        self._started = True
        self._client._start_turn(self)
        self._items = TurnItems[s.SessionUpdate](self._buffer, self._client.name, "update")
        self._tg = await enter_turn(self._run)  # returns once the prompt is queued
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        await leave_turn(
            exc_type is not None, self._items, answered=self._answered, cancel=self._cancel,
            tg=self._tg, stop=self._tg.cancel_scope, cancel_wait=CANCEL_WAIT,
            await_answer=False, close=self._close,
        )

    def __aiter__(self) -> PromptTurn:
        return self

    async def __anext__(self) -> s.SessionUpdate:
        return await self._items.next()

    async def collect(self) -> list[s.SessionUpdate]:
        """Read the rest of the turn; return its updates.

        Raises:
            RpcError: the agent answered the prompt with an error.
        """
        return [update async for update in self]

    @property
    def done(self) -> bool:
        """Whether the turn has ended (answered, failed or cancelled)."""
        return self._started and self._items.done.is_set()

    # ---------------------------------------------------------- internals

    async def _run(self, *, task_status: anyio.abc.TaskStatus[None]) -> None:
        params = s.PromptRequest(session_id=self.session_id, prompt=self.prompt)
        started = False

        def sent() -> None:
            nonlocal started
            started = True
            # updates read before the prompt went out are not the turn's (protocol-acp.md#ordering)
            self._client.peer.call_in_order(self._accept)
            task_status.started()

        try:
            result = await self._client.peer.request(
                "session/prompt", params, result_type=PromptResult,
                on_response=self._on_response, on_sent=sent, dec_hook=acp_codec.dec_hook,
                lenient=lambda raw: decode_result("session/prompt", raw, PromptResult),
            )
            self.stop_reason = result.stop_reason
            self.meta = result.meta if isinstance(result.meta, dict) else None
            if result.stop_reason not in KNOWN_STOP_REASONS:
                log.warning("%s: unknown stop reason %r for session %s", self._client.name,
                            result.stop_reason, self.session_id)
        except Exception as exc:
            self._items.error = exc
        finally:
            self._close()
            self._items.done.set()
            if not started:  # failed before it was sent
                task_status.started()

    def _accept(self) -> None:
        self.accepting = not self._answered

    def _on_response(self, response: IncomingResponse) -> None:
        self._answered = True
        self.accepting = False
        self._close()

    def _close(self) -> None:
        self.accepting = False
        self._client._end_turn(self)
        self._items.close()

    async def _deliver(self, update: s.SessionUpdate) -> None:
        await self._items.deliver(update)

    async def _cancel(self) -> None:
        try:
            await self._client.cancel(self.session_id)
        except ConnectionClosed:
            pass  # the request fails by itself
