"""The agent -> client requests of an ACP agent connection: :class:`ClientCalls`.

The half of the :class:`~wireproto.agent.api.Channel` an agent uses to ask
its client for something: permissions (``session/request_permission``) and
files (``fs/read_text_file`` / ``fs/write_text_file``, only when the client
advertised them), and questions as a form elicitation (``elicitation/create``
with one required ``answer`` field: a string enum, or an array of the labels
for a multi-select) when the client advertised form elicitation. ACP has no
client tools or hooks: those answer at once.
:class:`~wireproto.adapters.acp.agent.AgentConnection` inherits it and
provides :attr:`ClientCalls.peer`, :attr:`ClientCalls.capabilities` and
:attr:`ClientCalls.name`. Results are decoded with the schema's leniency; a
client's failure to answer a permission request rejects the operation.
"""

from __future__ import annotations

import logging
from typing import Any, TypeVar

import msgspec
from msgspec import UNSET

from wireproto.adapters.acp import codec, translate
from wireproto.adapters.acp import schema as S
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
from wireproto.errors import LocalProtocolError, RemoteProtocolError, RpcError
from wireproto.rpc.peer import Peer

__all__ = ["ANSWER_FIELD", "ClientCalls"]

log = logging.getLogger(__name__)
T = TypeVar("T")

ANSWER_FIELD = "answer"
"""The form field a question's answer goes in."""


def _question_form(question: Question) -> S.ElicitationSchema:
    """One required field: the labels as a string enum (an array for multi-select)."""
    title = question.header or UNSET
    field: S.ElicitationPropertySchema
    if question.multi_select:
        field = S.MultiSelectPropertySchema(
            title=title, description=question.question,
            items=S.TitledMultiSelectItems(
                any_of=[S.EnumOption(const=label, title=label) for label in question.options]),
        )
    else:
        field = S.StringPropertySchema(title=title, description=question.question,
                                       enum=list(question.options))
    return S.ElicitationSchema(properties={ANSWER_FIELD: field}, required=[ANSWER_FIELD])


class ClientCalls:
    """Requests to the ACP client (a mixin: see the module docstring).

    Attributes:
        name: a label for log lines.
        capabilities: what the client declared.
    """

    name: str
    capabilities: ClientCapabilities

    @property
    def peer(self) -> Peer:
        """The running peer (provided by the connection)."""
        raise NotImplementedError

    async def _client_call(self, method: str, params: Any, result_type: type[T]) -> T:
        raw = await self.peer.request(method, params, result_type=msgspec.Raw)
        try:
            return codec.decode(raw, result_type)
        except msgspec.DecodeError as exc:
            raise RemoteProtocolError(f"invalid result of {method}: {exc}") from exc

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
        """Ask with a form elicitation (only when the client advertised it).

        Returns:
            the chosen labels; ``[]`` when declined, cancelled, failed or unsupported.
        """
        if not self.capabilities.questions:
            return []
        params = S.CreateFormElicitationRequest(
            message=question.question, requested_schema=_question_form(question),
            session_id=session.id, tool_call_id=tool_call_id,
        )
        try:
            response = await self._client_call(
                "elicitation/create", params, S.CreateElicitationResponse)
        except (RpcError, RemoteProtocolError) as exc:
            log.warning("%s: question failed, dismissed: %s", self.name, exc)
            return []
        if not isinstance(response, S.AcceptElicitationResponse) or \
                not isinstance(response.content, dict):
            return []
        value = response.content.get(ANSWER_FIELD)
        chosen = value if isinstance(value, list) else [value] if isinstance(value, str) else []
        return [label for label in chosen if label in question.options]

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
