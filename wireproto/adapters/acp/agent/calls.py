"""The agent -> client requests of an ACP agent connection: :class:`ClientCalls`.

The half of the :class:`~wireproto.agent.api.Channel` an agent uses to ask
its client for something: permissions (``session/request_permission``) and
files (``fs/read_text_file`` / ``fs/write_text_file``, only when the client
advertised them), and questions (``elicitation/create``, only when the client
advertised the mode used: see :mod:`.elicitation`). ACP has no client tools
or hooks: those answer at once. :class:`~.connection.AgentConnection`
owns one (as the Wire server owns its
:class:`~wireproto.adapters.wire.server.channel.WireChannel`), gives it the way to its
running peer, and keeps :attr:`ClientCalls.capabilities` up to date. Results
are decoded with the schema's leniency; a client's failure to answer a
permission request rejects the operation.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import Any, TypeVar

import msgspec
from msgspec import UNSET

from wireproto.adapters.acp import codec, translate
from wireproto.adapters.acp import schema as S
from wireproto.adapters.acp.agent import elicitation
from wireproto.agent.api import (
    Approval,
    ApprovalRequest,
    ClientCapabilities,
    Decision,
    ExternalTool,
    Question,
    Session,
    ToolOutcome,
)
from wireproto.agent.questions import Answers, AskStatus
from wireproto.errors import LocalProtocolError, RemoteProtocolError, RpcError
from wireproto.rpc.peer import Peer

__all__ = ["ClientCalls"]

log = logging.getLogger(__name__)
T = TypeVar("T")


class ClientCalls:
    """Requests to the ACP client of one connection.

    Args:
        peer: returns the connection's running peer (raising
            :class:`~wireproto.errors.ConnectionClosed` when it is not served).
        name: a label for log lines.

    Attributes:
        name: a label for log lines.
        capabilities: what the client declared (set by the connection on
            ``initialize``).
    """

    def __init__(self, peer: Callable[[], Peer], name: str) -> None:
        self._peer = peer
        self.name = name
        self.capabilities = ClientCapabilities()

    @property
    def peer(self) -> Peer:
        """The running peer.

        Raises:
            ConnectionClosed: the connection is not being served.
        """
        return self._peer()

    async def _client_call(self, method: str, params: Any, result_type: type[T]) -> T:
        def lenient(raw: msgspec.Raw) -> T:
            try:
                return codec.decode(raw, result_type)
            except msgspec.DecodeError as exc:
                raise RemoteProtocolError(f"invalid result of {method}: {exc}") from exc

        return await self.peer.request(
            method, params, result_type=result_type, dec_hook=codec.dec_hook, lenient=lenient
        )

    async def request_approval(self, session: Session, request: ApprovalRequest) -> Approval:
        """Ask with ``session/request_permission``; a failure or ``cancelled`` rejects."""
        params = S.RequestPermissionRequest(
            session_id=session.id,
            tool_call=S.ToolCallUpdate(
                tool_call_id=request.tool_call_id, title=request.title or request.description,
                status="pending", content=translate.tool_content(request.display) or UNSET,
            ),
            options=list(translate.PERMISSION_OPTIONS),
        )
        try:
            response = await self._client_call(
                "session/request_permission", params, S.RequestPermissionResponse
            )
        except (RpcError, RemoteProtocolError) as exc:
            log.warning("%s: permission request failed, rejecting: %s", self.name, exc)
            return Approval(Decision.REJECT, "the permission request failed")
        outcome = response.outcome
        if isinstance(outcome, S.CancelledPermissionOutcome):
            return Approval(Decision.REJECT, "cancelled")
        decision = translate.DECISION_OF_OPTION.get(outcome.option_id)
        if decision is None:
            log.warning("%s: unknown permission option %r, rejecting", self.name,
                        outcome.option_id)
            return Approval(Decision.REJECT, "unknown option")
        return Approval(decision)

    async def read_text_file(self, session: Session, path: str) -> str:
        """Read through ``fs/read_text_file`` (only when the client advertised it).

        Raises:
            LocalProtocolError: the client did not advertise it.
            RpcError: the client refused.
            RemoteProtocolError: an invalid answer.
        """
        if not self.capabilities.read_text_file:
            raise LocalProtocolError("the client cannot read files")
        response = await self._client_call(
            "fs/read_text_file", S.ReadTextFileRequest(session_id=session.id, path=path),
            S.ReadTextFileResponse,
        )
        return response.content

    async def write_text_file(self, session: Session, path: str, content: str) -> None:
        """Write through ``fs/write_text_file`` (only when the client advertised it).

        Raises:
            LocalProtocolError: the client did not advertise it.
            RpcError: the client refused.
        """
        if not self.capabilities.write_text_file:
            raise LocalProtocolError("the client cannot write files")
        await self.peer.request(  # the result ({} or, from some clients, null) is ignored
            "fs/write_text_file",
            S.WriteTextFileRequest(session_id=session.id, path=path, content=content),
        )

    async def ask(self, session: Session, tool_call_id: str, question: Question) -> list[str]:
        """One question as a form elicitation; ``[]`` when not answered or unsupported."""
        answers = await self.ask_questions(session, tool_call_id, [question])
        return list(answers.of(0))

    async def ask_questions(
        self, session: Session, tool_call_id: str, questions: list[Question]
    ) -> Answers:
        """Ask with a form-mode ``elicitation/create`` (see :mod:`.elicitation`).

        No request when the client did not advertise ``elicitation.form``
        (``UNSUPPORTED``); a failed request counts as cancelled. Cancelling
        the caller cancels the request (``$/cancel_request``).
        """
        if not self.capabilities.questions:
            return Answers(AskStatus.UNSUPPORTED)
        params = elicitation.form_request(session.id, tool_call_id, questions)
        try:
            response = await self._client_call(
                "elicitation/create", params, S.CreateElicitationResponse
            )
        except (RpcError, RemoteProtocolError) as exc:
            log.warning("%s: elicitation failed, counted as cancelled: %s", self.name, exc)
            return Answers(AskStatus.CANCELLED)
        return elicitation.answers_of(questions, response)

    async def ask_url(
        self, session: Session, tool_call_id: str, elicitation_id: str, message: str, url: str
    ) -> AskStatus:
        """Ask with a URL-mode ``elicitation/create`` (only when ``elicitation.url``)."""
        if not self.capabilities.url_questions:
            return AskStatus.UNSUPPORTED
        params = elicitation.url_request(session.id, tool_call_id, elicitation_id, message, url)
        try:
            response = await self._client_call(
                "elicitation/create", params, S.CreateElicitationResponse
            )
        except (RpcError, RemoteProtocolError) as exc:
            log.warning("%s: URL elicitation failed, counted as cancelled: %s", self.name, exc)
            return AskStatus.CANCELLED
        return elicitation.url_status(response)

    async def complete_url(self, session: Session, elicitation_id: str) -> None:
        """Send ``elicitation/complete`` (only when ``elicitation.url``)."""
        if self.capabilities.url_questions:
            await self.peer.notify(
                "elicitation/complete",
                S.CompleteElicitationNotification(elicitation_id=elicitation_id),
            )

    async def call_tool(
        self, session: Session, call_id: str, tool: ExternalTool, arguments: Any
    ) -> ToolOutcome:
        """ACP clients provide no tools: an error outcome."""
        return ToolOutcome(True, "", "External tools are not available over ACP")

    async def run_hook(
        self, session: Session, event: str, target: str, input: dict[str, Any]
    ) -> tuple[bool, str]:
        """ACP has no hooks: allowed."""
        return True, ""
