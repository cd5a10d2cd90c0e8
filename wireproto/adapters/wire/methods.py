"""Client -> server methods of the Wire protocol: params, results, error codes.

Protocol: protocol-wire.md#methods, protocol-wire.md#error-codes, protocol-wire.md#hooks and
protocol-wire.md#external-tools.

Theory of operation
-------------------
:data:`METHODS` is the whole inbound method table of a Wire server: method
name -> :class:`WireMethod` (params Struct, result Struct, protocol version
that introduced it). A server routes on it and decodes params with
:meth:`WireMethod.decode_params`, which raises the ``-32602`` error to answer
(``data = {"path": "$.user_input[0].type", "reason": ...}``); a client decodes
answers with :meth:`WireMethod.decode_result`. ``cancel`` and ``replay``
ignore their params (any value, absent or ``null``), so their spec has
``params=None``.

The two server -> client methods are :data:`EVENT_METHOD` and
:data:`REQUEST_METHOD`; their params are envelopes (see :mod:`.envelope`).

Error codes -32000...-32004 (:class:`WireErrorCode`) are Wire's own meanings
in JSON-RPC's implementation-defined range; the fixed texts of the reference
are in :class:`WireErrorMessage` and :class:`WireText`.
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import Enum, IntEnum
from typing import Annotated, Any, Final, Generic, Literal, TypeVar, cast

import msgspec

from wireproto.agent.api import ExternalTool
from wireproto.errors import RemoteProtocolError

from .envelope import decode_value, invalid_params
from .messages import UserInput
from .versions import VERSION_PATTERN

__all__ = [
    "CANCEL",
    "EVENT_METHOD",
    "HOOK_EVENTS",
    "INITIALIZE",
    "METHODS",
    "PROMPT",
    "REPLAY",
    "REQUEST_METHOD",
    "SET_PLAN_MODE",
    "STEER",
    "CancelResult",
    "ClientInfo",
    "ExternalTool",
    "ExternalToolsResult",
    "HookSubscription",
    "HooksInfo",
    "InitializeParams",
    "InitializeResult",
    "PromptParams",
    "PromptResult",
    "RejectedTool",
    "ReplayResult",
    "ServerCapabilities",
    "ServerInfo",
    "SetPlanModeParams",
    "SetPlanModeResult",
    "SlashCommand",
    "SteerParams",
    "SteerResult",
    "WireClientCapabilities",
    "WireErrorCode",
    "WireErrorMessage",
    "WireMethod",
    "WireText",
]

EVENT_METHOD: Final = "event"
"""Server -> client notification carrying an event envelope."""

REQUEST_METHOD: Final = "request"
"""Server -> client request carrying a request envelope."""

HOOK_EVENTS: Final[tuple[str, ...]] = (
    "PreToolUse",
    "PostToolUse",
    "PostToolUseFailure",
    "UserPromptSubmit",
    "Stop",
    "StopFailure",
    "SessionStart",
    "SessionEnd",
    "SubagentStart",
    "SubagentStop",
    "PreCompact",
    "PostCompact",
    "Notification",
)
"""Hook events a client may subscribe to at protocol 1.10 (protocol-wire.md#hooks)."""


class WireErrorCode(IntEnum):
    """Wire-specific JSON-RPC error codes (protocol-wire.md#error-codes)."""

    INVALID_STATE = -32000
    """A turn/replay is (not) running, or plan mode is unsupported."""
    LLM_NOT_SET = -32001
    """No model is configured."""
    LLM_NOT_SUPPORTED = -32002
    """The model lacks a capability the input needs (e.g. ``image_in``)."""
    CHAT_PROVIDER_ERROR = -32003
    """The model provider failed (API error, connection error, 5xx...)."""
    AUTH_EXPIRED = -32004
    """HTTP 401 while the session uses OAuth login."""


class WireErrorMessage(str, Enum):
    """Fixed ``error.message`` texts of the reference (``{method}`` to be formatted)."""

    INVALID_JSON = "Invalid JSON format"
    INVALID_REQUEST = "Invalid request"
    INVALID_RESPONSE = "Invalid response"
    MESSAGE_TOO_LARGE = "Message too large"
    UNEXPECTED_METHOD = "Unexpected method received: {method}"
    INVALID_PARAMS = "Invalid parameters for method `{method}`"
    INTERNAL_ERROR = "Internal error"
    TURN_IN_PROGRESS = "An agent turn is already in progress"
    NO_TURN_IN_PROGRESS = "No agent turn is in progress"
    PLAN_MODE_UNSUPPORTED = "Plan mode is not supported"
    LLM_NOT_SET = "LLM is not set"
    REPLAY_FAILED = "Replay failed"


class WireText(str, Enum):
    """Other fixed texts of the reference (tool results, rejections)."""

    TOOL_CONNECTION_CLOSED = "Wire connection closed before tool result was received."
    TOOL_CONNECTION_CLOSED_BRIEF = "Wire closed"
    TOOL_TURN_ENDED = "Agent turn ended before tool result was received."
    TOOL_TURN_ENDED_BRIEF = "Turn ended"
    TOOL_INVALID_RESULT = "Invalid tool result payload from client."
    TOOL_CLIENT_ERROR_BRIEF = "External tool error"
    TOOL_CONFLICTS_WITH_BUILTIN = "conflicts with builtin tool"
    TOOL_INVALID_SCHEMA = "invalid schema"
    TOOL_NO_DESCRIPTION = "No description provided."
    REJECTED_BY_USER = "Rejected by user"
    QUESTIONS_UNSUPPORTED = "client does not support interactive questions"


# --------------------------------------------------------------------------- initialize


class ClientInfo(msgspec.Struct, kw_only=True):
    """``initialize.client``: the client's name and version (for the User-Agent)."""

    name: str
    version: str | None = None


class WireClientCapabilities(msgspec.Struct, kw_only=True):
    """``initialize.capabilities`` declared by the client."""

    supports_question: bool = False
    supports_plan_mode: bool = False


class HookSubscription(msgspec.Struct, kw_only=True):
    """(1.7) A hook the client handles; ``matcher`` is a regex (``""`` = everything)."""

    id: str
    event: str
    matcher: str = ""
    timeout: int = 30


class InitializeParams(msgspec.Struct, kw_only=True):
    """Params of ``initialize`` (since 1.1).

    ``protocol_version`` is required and must be dot-separated decimal integers
    (checked on decode; an invalid value fails with path ``$.protocol_version``).
    """

    protocol_version: Annotated[str, msgspec.Meta(pattern=VERSION_PATTERN)]
    client: ClientInfo | None = None
    external_tools: list[ExternalTool] | None = None
    hooks: list[HookSubscription] | None = None
    capabilities: WireClientCapabilities | None = None


class ServerInfo(msgspec.Struct, kw_only=True):
    """``initialize.result.server``."""

    name: str
    version: str


class SlashCommand(msgspec.Struct, kw_only=True):
    """A soul-level slash command, run by sending ``"/<name> [args]"`` as a prompt."""

    name: str
    description: str
    aliases: list[str] = msgspec.field(default_factory=list)


class RejectedTool(msgspec.Struct, kw_only=True):
    """An external tool the server refused, with the reason."""

    name: str
    reason: str


class ExternalToolsResult(msgspec.Struct, kw_only=True):
    """Which external tools were accepted or rejected."""

    accepted: list[str] = msgspec.field(default_factory=list)
    rejected: list[RejectedTool] = msgspec.field(default_factory=list)


class HooksInfo(msgspec.Struct, kw_only=True):
    """(1.7) Supported hook events and the number of configured hooks per event."""

    supported_events: list[str] = msgspec.field(default_factory=list)
    configured: dict[str, int] = msgspec.field(default_factory=dict)


class ServerCapabilities(msgspec.Struct, kw_only=True):
    """Server capabilities (the reference always answers ``supports_question: true``)."""

    supports_question: bool = False


class InitializeResult(msgspec.Struct, kw_only=True):
    """Result of ``initialize``.

    ``external_tools`` is left out (``UNSET``) unless the request had at least
    one tool, as in the reference.
    """

    protocol_version: str
    server: ServerInfo
    slash_commands: list[SlashCommand] = msgspec.field(default_factory=list)
    external_tools: ExternalToolsResult | msgspec.UnsetType | None = msgspec.UNSET
    hooks: HooksInfo = msgspec.field(default_factory=HooksInfo)
    capabilities: ServerCapabilities = msgspec.field(default_factory=ServerCapabilities)


# --------------------------------------------------------------------------- turns


class PromptParams(msgspec.Struct, kw_only=True):
    """Params of ``prompt``: text or content parts (an unknown part type is invalid)."""

    user_input: UserInput


PromptStatus = Literal["finished", "cancelled", "max_steps_reached"]


class PromptResult(msgspec.Struct, kw_only=True):
    """Result of ``prompt``; ``steps`` only with ``max_steps_reached``."""

    status: PromptStatus
    steps: int | msgspec.UnsetType = msgspec.UNSET


class CancelResult(msgspec.Struct, kw_only=True):
    """Result of ``cancel``: ``{}``."""


class SteerParams(msgspec.Struct, kw_only=True):
    """Params of ``steer`` (input queued into the running turn)."""

    user_input: UserInput


class SteerResult(msgspec.Struct, kw_only=True):
    """Result of ``steer``."""

    status: Literal["steered"] = "steered"


class ReplayResult(msgspec.Struct, kw_only=True):
    """Result of ``replay``: the numbers of events and requests streamed."""

    status: Literal["finished", "cancelled"]
    events: int = 0
    requests: int = 0


class SetPlanModeParams(msgspec.Struct, kw_only=True):
    """Params of ``set_plan_mode``."""

    enabled: bool


class SetPlanModeResult(msgspec.Struct, kw_only=True):
    """Result of ``set_plan_mode``: the state after the call."""

    status: Literal["ok"] = "ok"
    plan_mode: bool


# --------------------------------------------------------------------------- method table

P = TypeVar("P")
R = TypeVar("R")


@dataclass(frozen=True)
class WireMethod(Generic[P, R]):
    """One client -> server method.

    Attributes:
        name: the JSON-RPC method name.
        params: the params Struct, or ``None`` when params are ignored.
        result: the result Struct.
        since: the protocol version that introduced the method (protocol-wire.md#version-history).
    """

    name: str
    params: type[P] | None
    result: type[R]
    since: str

    def decode_params(self, params: Any) -> P:
        """Decode ``params`` (JSON text or builtins; ``None``/``UNSET`` = absent = ``{}``).

        Returns:
            The params Struct, or ``None`` for methods that ignore params
            (``params is None``; then ``P`` is ``None``).

        Raises:
            RpcError: ``-32602`` ``Invalid parameters for method `<name>` `` with
                ``data = {"path": <JSON path>, "reason": <message>}``.
        """
        if self.params is None:
            return cast(P, None)
        if params is None or params is msgspec.UNSET:
            params = {}
        try:
            value: P = decode_value(self.params, params)
        except msgspec.DecodeError as exc:
            raise invalid_params(self.name, exc) from exc
        return value

    def decode_result(self, result: Any) -> R:
        """Decode the server's ``result`` (JSON text or builtins).

        Raises:
            RemoteProtocolError: the result does not have the expected shape.
        """
        try:
            value: R = decode_value(self.result, result)
        except msgspec.DecodeError as exc:
            data = invalid_params(self.name, exc).data
            raise RemoteProtocolError(
                f"invalid result for `{self.name}`: {data['reason']} at {data['path']}"
            ) from exc
        return value


INITIALIZE: Final = WireMethod("initialize", InitializeParams, InitializeResult, "1.1")
PROMPT: Final = WireMethod("prompt", PromptParams, PromptResult, "1")
CANCEL: Final = WireMethod[None, CancelResult]("cancel", None, CancelResult, "1")
STEER: Final = WireMethod("steer", SteerParams, SteerResult, "1.4")
REPLAY: Final = WireMethod[None, ReplayResult]("replay", None, ReplayResult, "1.3")
SET_PLAN_MODE: Final = WireMethod("set_plan_mode", SetPlanModeParams, SetPlanModeResult, "1.4")

METHODS: Final[dict[str, WireMethod[Any, Any]]] = {
    spec.name: spec for spec in (INITIALIZE, PROMPT, CANCEL, STEER, REPLAY, SET_PLAN_MODE)
}
"""Every client -> server method by name (the reference's inbound set)."""
