"""How a :class:`~.connection.WireClient` answers the server's requests.

Each request type has a row in :data:`REQUEST_HANDLERS`: the method that asks
the program's handler (approval, external tool, question, hook) and the safe
default answer used when there is no handler or the request was dismissed:
reject, an error tool result, no answers, allow.

An external tool handler gets the decoded arguments and a
:class:`~.turn.ToolContext` (tool-call id, name, the iterated turn);
a handler raising an exception answers an error result naming it.
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING, Any

import anyio
import msgspec

from wireproto.jsonrpc.codec import TOO_DEEP

from .. import messages as m
from ..methods import ExternalTool
from .turn import Reject, ToolContext

if TYPE_CHECKING:
    from .turn import WireTurn

__all__ = [
    "REQUEST_HANDLERS",
    "ApprovalHandler",
    "HookHandler",
    "LegacyToolHandler",
    "QuestionHandler",
    "RequestAnswers",
    "ToolEntry",
    "ToolHandler",
    "with_context",
]

log = logging.getLogger(__name__)

ApprovalHandler = Callable[
    [m.ApprovalRequest], Awaitable[m.ApprovalResponse | m.ApprovalKind | Reject]
]
"""Answers an approval: ``"approve"`` / ``"approve_for_session"`` / ``"reject"``,
:class:`~.turn.Reject` with feedback for the model, or a full response."""

ToolHandler = Callable[[Any, ToolContext], Awaitable[m.ToolReturnValue | str]]
"""Runs an external tool with its decoded JSON arguments and a
:class:`~.turn.ToolContext`; a string is a successful output."""

LegacyToolHandler = Callable[[Any], Awaitable[m.ToolReturnValue | str]]
"""The older form of a tool handler, given only the arguments (``external_tools=``)."""

ToolEntry = tuple[ExternalTool, ToolHandler]
"""An external tool offered with ``tools=``: its spec (which names it) and its handler."""

QuestionHandler = Callable[[m.QuestionRequest], Awaitable[dict[str, str]]]
"""Answers questions: question text -> label (comma-joined labels for multi-select)."""

HookHandler = Callable[[m.HookRequest], Awaitable[m.HookResponse | m.HookAction]]
"""Decides a hook: a full response, or just ``"allow"`` / ``"block"``."""


class RequestAnswers:
    """The request-answering half of the Wire client (a mixin; see the module docstring)."""

    name: str
    tools: dict[str, ToolEntry]
    on_approval: ApprovalHandler | None
    on_question: QuestionHandler | None
    on_hook: HookHandler | None
    _turn: WireTurn | None
    _iterated: bool
    _turn_tools: set[str]
    _handling: dict[str, anyio.CancelScope]

    async def _approval(self, request: m.ApprovalRequest) -> m.Response:
        if self.on_approval is None:
            return _reject(request)
        answer = await self.on_approval(request)
        if isinstance(answer, str):
            return m.ApprovalResponse(request_id=request.id, response=answer)
        if isinstance(answer, Reject):
            return m.ApprovalResponse(request_id=request.id, response="reject",
                                      feedback=answer.feedback)
        return answer

    async def _tool_call(self, request: m.ToolCallRequest) -> m.Response:
        entry = self.tools.get(request.name)
        if entry is None:
            return _tool_error(request, f"Unknown external tool {request.name}")
        try:
            arguments = msgspec.json.decode(request.arguments or "{}")
        except RecursionError:
            return _tool_error(request, f"Invalid JSON arguments: {TOO_DEEP}")
        except msgspec.DecodeError as exc:
            return _tool_error(request, f"Invalid JSON arguments: {exc}")
        turn = self._turn
        context = ToolContext(request.id, request.name, turn if self._iterated else None)
        if turn is not None:
            self._turn_tools.add(request.id)
        try:
            value = await entry[1](arguments, context)
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


def with_context(handler: LegacyToolHandler) -> ToolHandler:
    """Adapt a handler that takes only the arguments."""

    async def call(arguments: Any, context: ToolContext) -> m.ToolReturnValue | str:
        return await handler(arguments)

    return call


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


_RequestAnswer = Callable[[Any, Any], Awaitable[m.Response]]

REQUEST_HANDLERS: dict[type, tuple[_RequestAnswer, Callable[[Any], m.Response]]] = {
    m.ApprovalRequest: (RequestAnswers._approval, _reject),
    m.ToolCallRequest: (RequestAnswers._tool_call, _tool_error),
    m.QuestionRequest: (RequestAnswers._question, _dismiss_question),
    m.HookRequest: (RequestAnswers._hook, _allow),
}
"""Request type -> (answer with the client's handler, the safe default answer)."""
