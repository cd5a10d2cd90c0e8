"""The protocol-neutral agent API: write an agent once, serve it over Wire and ACP.

An agent subclasses :class:`Agent`, declares what it offers (identity, slash
commands, tool names, session options, auth methods, hook events) and
implements :meth:`Agent.prompt`, which receives a
:class:`~wireproto.agent.turn.Turn`. Everything protocol-specific lives in
the adapters; they reach the client through a :class:`Channel`.

Example::

    class Echo(Agent):
        info = AgentInfo(name="echo", version="1.0")

        async def prompt(self, turn: Turn) -> StopReason:
            await turn.say(f"You said: {turn.text}")
            return StopReason.END_TURN
"""

from __future__ import annotations

import enum
from collections.abc import Awaitable, Callable, Sequence
from datetime import datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any, ClassVar, Protocol, TypeVar

import msgspec

from wireproto.agent._argcheck import arguments_problem, bounded_arguments_problem
from wireproto.agent.content import ToolContent
from wireproto.agent.events import Event, StopReason
from wireproto.errors import InvalidArgument

if TYPE_CHECKING:
    from wireproto.agent.turn import Turn

_Method = TypeVar("_Method", bound=Callable[..., Any])

__all__ = [
    "Agent",
    "AgentInfo",
    "Approval",
    "ApprovalRequest",
    "AuthMethod",
    "BooleanOption",
    "Channel",
    "Choice",
    "ClientCapabilities",
    "CommandHandler",
    "Decision",
    "ExternalTool",
    "McpServer",
    "Option",
    "Question",
    "SelectOption",
    "Session",
    "SessionInfo",
    "SlashCommand",
    "ToolOutcome",
    "command",
]


class AgentInfo(msgspec.Struct, frozen=True):
    """The agent's identity."""

    name: str
    version: str
    title: str | None = None


CommandHandler = Callable[["Turn", str], Awaitable["StopReason | None"]]
"""Runs a slash command: ``(turn, input after the name)`` -> stop reason (``None``: end turn)."""


class SlashCommand(msgspec.Struct, frozen=True):
    """A command the user runs by sending ``/NAME [input]`` as a prompt.

    With a ``handler`` (or declared with :func:`command` on an agent method)
    the runtime runs it instead of :meth:`Agent.prompt` when a prompt starts
    with ``/NAME`` or ``/ALIAS``; without one the prompt goes to
    :meth:`Agent.prompt` unchanged (the agent looks at ``turn.text``).
    """

    name: str
    description: str
    aliases: tuple[str, ...] = ()
    input_hint: str | None = None
    handler: CommandHandler | None = None


def command(
    name: str, description: str, *, aliases: Sequence[str] = (), input_hint: str | None = None
) -> Callable[[_Method], _Method]:
    """Declare an agent method as the handler of the slash command ``/name``.

    The method is called as ``await self.method(turn, input)`` (``input``:
    the text after the command name) and returns a stop reason or ``None``
    (end turn). The command is added to the class's :attr:`Agent.commands`.

    Example::

        class Coder(Agent):
            @command("clear", "Forget the conversation")
            async def clear(self, turn: Turn, input: str) -> None:
                await turn.say("Cleared.")
    """

    def mark(method: _Method) -> _Method:
        method.__wireproto_command__ = SlashCommand(  # type: ignore[attr-defined]
            name, description, tuple(aliases), input_hint)
        return method

    return mark


class Choice(msgspec.Struct, frozen=True):
    """One value of a select option."""

    value: str
    name: str
    description: str | None = None


class SelectOption(msgspec.Struct, frozen=True):
    """A session option with a fixed set of string values."""

    id: str
    name: str
    choices: tuple[Choice, ...]
    default: str
    category: str | None = None
    description: str | None = None

    def coerce(self, value: str | bool) -> str:
        """Validate ``value``; raises :class:`InvalidArgument`."""
        if isinstance(value, str) and any(c.value == value for c in self.choices):
            return value
        raise InvalidArgument(f"invalid value {value!r} for option {self.id!r}")


class BooleanOption(msgspec.Struct, frozen=True):
    """An on/off session option.

    Clients that cannot show boolean options get a select with
    ``off_value`` / ``on_value`` instead.
    """

    id: str
    name: str
    default: bool = False
    category: str | None = None
    description: str | None = None
    off_value: str = "off"
    on_value: str = "on"

    def coerce(self, value: str | bool) -> bool:
        """Validate ``value`` (a bool, or the select fallback strings)."""
        if isinstance(value, bool):
            return value
        if value in (self.off_value, self.on_value):
            return value == self.on_value
        raise InvalidArgument(f"invalid value {value!r} for option {self.id!r}")


Option = SelectOption | BooleanOption
"""A declared session option."""


class AuthMethod(msgspec.Struct, frozen=True):
    """A way to authenticate, performed by the agent itself."""

    id: str
    name: str
    description: str | None = None


class ExternalTool(msgspec.Struct, frozen=True):
    """A tool implemented by the client (Wire's external tools: protocol-wire.md#external-tools)."""

    name: str
    description: str
    parameters: dict[str, Any]

    def arguments_problem(self, arguments: Any) -> str | None:
        """Why ``arguments`` do not fit :attr:`parameters`, or ``None`` when they do.

        The schema is applied as JSON Schema 2020-12 (the dialect Wire checks it
        in when the tool is registered, whatever its ``$schema`` says). A schema
        that cannot be applied (a ``$ref`` to nothing or to another document,
        never fetched; a reference cycle) is a problem of the call, not an error.
        """
        return arguments_problem(self.parameters, arguments)

    async def check_arguments(self, arguments: Any) -> str | None:
        """:meth:`arguments_problem`, bounded in time: a schema with a ``pattern`` comes
        from the client and may backtrack for ever, so it is checked in a child Python,
        stopped after 2 seconds of checking (the call then has that problem).
        :meth:`Turn.call_tool <wireproto.agent.turn.Turn.call_tool>` uses it."""
        return await bounded_arguments_problem(self.parameters, arguments)


class ClientCapabilities(msgspec.Struct):
    """What the connected client can do, in protocol-neutral terms.

    Attributes:
        name / version: the client's identity, when it told.
        read_text_file / write_text_file: it reads/writes files for the agent
            (:meth:`Turn.read_text_file` / :meth:`Turn.write_text_file` use it).
        terminal: it runs terminals (tool-call content :class:`Terminal`).
        boolean_options: it can show :class:`BooleanOption` as a switch.
        notices: it shows live :class:`~wireproto.agent.events.Notice` events.
        compaction: it shows context compactions with their summary (ACP
            ``session.compaction``).
        questions: it answers :meth:`Turn.ask` (ACP: ``elicitation.form``).
        url_questions: it opens pages for :meth:`Turn.ask_url` (ACP:
            ``elicitation.url``; Wire: never).
        plan_mode: it knows plan mode.
        external_tools: the client-provided tools registered so far, by name.
        external_tools_supported: whether the protocol can carry client-provided
            tools at all (Wire: yes, even when none are registered; ACP: no).
    """

    name: str | None = None
    version: str | None = None
    read_text_file: bool = False
    write_text_file: bool = False
    terminal: bool = False
    boolean_options: bool = False
    notices: bool = False
    compaction: bool = False
    questions: bool = False
    url_questions: bool = False
    plan_mode: bool = False
    external_tools: dict[str, ExternalTool] = {}
    external_tools_supported: bool = False


class McpServer(msgspec.Struct, frozen=True, omit_defaults=True):
    """An MCP server configured for a session.

    ``env`` and ``headers`` may hold secrets: never log them.
    """

    name: str
    transport: str  # stdio | http | sse
    command: str | None = None
    args: tuple[str, ...] = ()
    env: dict[str, str] = {}
    url: str | None = None
    headers: dict[str, str] = {}

    def __repr__(self) -> str:  # keep secrets out of logs
        return f"McpServer(name={self.name!r}, transport={self.transport!r})"


class Decision(str, enum.Enum):
    """The client's answer to an approval request."""

    ALLOW_ONCE = "allow_once"
    ALLOW_SESSION = "allow_session"
    REJECT = "reject"


class ApprovalRequest(msgspec.Struct, frozen=True):
    """What the agent asks the client to approve (built by :meth:`Turn.request_approval`).

    Attributes:
        id: a unique request id (a UUID).
        tool_call_id: the tool call asking.
        tool: the tool's name.
        action / description: what would be done, short and long.
        title: an optional title.
        display: what to show (e.g. the :class:`Diff` of a write).
    """

    id: str
    tool_call_id: str
    tool: str
    action: str
    description: str
    title: str = ""
    display: tuple[ToolContent, ...] = ()


class Approval(msgspec.Struct, frozen=True):
    """The client's decision, with optional feedback for the agent."""

    decision: Decision
    feedback: str = ""

    @property
    def allowed(self) -> bool:
        """Whether the operation may run."""
        return self.decision is not Decision.REJECT


class Question(msgspec.Struct, frozen=True):
    """A multiple-choice question for the user (:meth:`Turn.ask`).

    Attributes:
        question: the text (also the key of the answer on Wire).
        options: the labels to choose from (2-4).
        header: a short label (about 12 characters).
        multi_select: several labels may be chosen.
        body: a longer explanation shown with the question.
        other_label: when set, the user may type an answer of their own
            instead of choosing; this labels that choice (e.g. ``"Other"``).
    """

    question: str
    options: tuple[str, ...]
    header: str = ""
    multi_select: bool = False
    body: str = ""
    other_label: str = ""


class ToolOutcome(msgspec.Struct, frozen=True):
    """The result of a client-side (external) tool call.

    Attributes:
        is_error: the call failed (``message`` says why).
        output: the tool's output text.
        message: an explanation for the agent.
    """

    is_error: bool
    output: str
    message: str = ""


class SessionInfo(msgspec.Struct, frozen=True):
    """A listed session.

    ``updated_at`` is ISO 8601 in UTC with microseconds
    (``2026-01-02T03:04:05.123456Z``); ``roots`` are the extra root
    directories (ACP ``additionalDirectories``).
    """

    session_id: str
    cwd: str
    title: str | None
    updated_at: str
    roots: tuple[str, ...] = ()


class Session:
    """One conversation: its id, roots, MCP servers, options and agent state.

    Attributes:
        id: the session id.
        cwd: the working directory (absolute); relative paths resolve here.
        roots: directories file access is confined to (``cwd`` first).
        mcp_servers: MCP servers configured for this session.
        options: current option values by option id.
        plan_mode: whether plan mode is on.
        state: free space for the agent; not persisted.
        allowed_tools: tools the user allowed for the rest of the session
            (:attr:`Decision.ALLOW_SESSION`): :meth:`Turn.request_approval`
            grants them without asking. Live sessions only (not persisted);
            :meth:`forget_approvals` clears them.
        title: the session's title (from the first prompt), ``None`` before it.
        updated_at: the time of the last recorded event.
        channel: the connected client, ``None`` while detached.
        turn: the running turn, ``None`` between turns.
    """

    def __init__(
        self,
        id: str,
        cwd: str,
        *,
        roots: Sequence[str] = (),
        mcp_servers: Sequence[McpServer] = (),
        options: dict[str, str | bool] | None = None,
    ) -> None:
        self.id = id
        self.cwd = cwd
        self.roots: list[Path] = [Path(cwd), *(Path(r) for r in roots)]
        self.mcp_servers = list(mcp_servers)
        self.options: dict[str, str | bool] = dict(options or {})
        self.plan_mode = False
        self.state: dict[str, Any] = {}
        self.title: str | None = None
        self.updated_at = datetime.now().astimezone()
        self.channel: Channel | None = None
        self.turn: Turn | None = None
        self.allowed_tools: set[str] = set()

    def forget_approvals(self, tool: str | None = None) -> None:
        """Ask again: drop the "allow for the session" answers (of ``tool``, or all)."""
        if tool is None:
            self.allowed_tools.clear()
        else:
            self.allowed_tools.discard(tool)

    def __repr__(self) -> str:
        return f"Session({self.id!r}, cwd={self.cwd!r})"


class Channel(Protocol):
    """The client side of one connection, as an adapter presents it.

    Adapters implement this; the runtime and turns call it. Every method may
    raise :class:`~wireproto.errors.ConnectionClosed`. Cancelling the calling
    task cancels the pending client request (no leak).

    Optional: a true ``flushes_history`` attribute promises that the channel
    calls :meth:`Runtime.flush_history
    <wireproto.agent.runtime.Runtime.flush_history>` right before it writes
    anything to its client; the runtime then writes a burst's history
    records in one go (the ACP and Wire adapters do this).

    Optional methods, used when present (see :mod:`wireproto.agent.questions`):
    ``ask_questions(session, tool_call_id, questions) -> Answers`` (else each
    question goes through :meth:`ask`), ``ask_url(session, tool_call_id,
    elicitation_id, message, url) -> AskStatus`` and ``complete_url(session,
    elicitation_id)`` (else URL interactions are unsupported).
    """

    @property
    def capabilities(self) -> ClientCapabilities:
        """What the client supports."""

    async def send(self, session: Session, event: Event, *, replay: bool = False) -> None:
        """Deliver one event (waits when the client is slow)."""

    async def request_approval(self, session: Session, request: ApprovalRequest) -> Approval:
        """Ask the client to approve an operation."""

    async def ask(self, session: Session, tool_call_id: str, question: Question) -> list[str]:
        """Ask a question; returns the chosen labels (empty = dismissed)."""

    async def read_text_file(self, session: Session, path: str) -> str:
        """Read a file through the client (only when ``read_text_file``)."""

    async def write_text_file(self, session: Session, path: str, content: str) -> None:
        """Write a file through the client (only when ``write_text_file``)."""

    async def call_tool(
        self, session: Session, call_id: str, tool: ExternalTool, arguments: Any
    ) -> ToolOutcome:
        """Run a client-provided tool."""

    async def run_hook(
        self, session: Session, event: str, target: str, input: dict[str, Any]
    ) -> tuple[bool, str]:
        """Run the client's hooks for ``event``; returns (allowed, reason)."""


class Agent:
    """Base class of an agent. Override :meth:`prompt`; the rest is optional.

    Class attributes declare what the agent offers; the adapters advertise
    them in each protocol's terms.

    Attributes:
        info: the agent's name, version and title.
        commands: slash commands (run by sending ``/NAME args`` as the prompt);
            one with a handler (``SlashCommand(handler=...)`` or a method
            declared with :func:`command`) runs instead of :meth:`prompt`.
        tools: the names of the agent's own tools (a client tool of the same
            name is refused).
        options: session options (modes, model, thinking...); their
            ``default`` values are every new session's values.
        auth_methods: ways to log in (:meth:`authenticate`).
        hook_events: the hook events :meth:`Turn.run_hook` fires; empty = the
            agent supports no client hooks.
        supports_delete: sessions may be deleted by the client.
        supports_logout: the client may log out (:meth:`logout`; ACP
            advertises ``auth.logout``).
        supports_plan_mode: plan mode can be switched (else Wire's
            ``set_plan_mode`` is refused).
        require_auth: sessions can be used only after :meth:`authenticate`
            succeeded on the connection.
        error_details: when :meth:`prompt` raises an exception that is not an
            :class:`~wireproto.errors.AgentError`, the client's error answer
            carries its type and message (never the traceback) as ``data``;
            set ``False`` to send only ``Internal error``. The traceback is
            logged either way, with the session and turn.
    """

    info: ClassVar[AgentInfo] = AgentInfo(name="wireproto-agent", version="0.1.0")
    commands: ClassVar[Sequence[SlashCommand]] = ()
    tools: ClassVar[Sequence[str]] = ()
    options: ClassVar[Sequence[Option]] = ()
    auth_methods: ClassVar[Sequence[AuthMethod]] = ()
    hook_events: ClassVar[Sequence[str]] = ()
    supports_delete: ClassVar[bool] = True
    supports_logout: ClassVar[bool] = False
    supports_plan_mode: ClassVar[bool] = True
    error_details: ClassVar[bool] = True

    require_auth: bool = False

    _command_methods: ClassVar[dict[str, str]] = {}

    def __init_subclass__(cls, **kwargs: Any) -> None:
        """Add the methods declared with :func:`command` to :attr:`commands`."""
        super().__init_subclass__(**kwargs)
        methods = dict(cls._command_methods)
        declared = list(cls.commands)
        for attr, value in vars(cls).items():
            marked = getattr(value, "__wireproto_command__", None)
            if isinstance(marked, SlashCommand):
                declared = [c for c in declared if c.name != marked.name] + [marked]
                methods[marked.name] = attr
        cls.commands = tuple(declared)
        cls._command_methods = methods

    def command_handler(self, text: str) -> tuple[CommandHandler, str] | None:
        """The handler of the slash command ``text`` starts with, and its input.

        ``None`` when ``text`` is not ``/NAME ...`` of a command that has a
        handler (the prompt then goes to :meth:`prompt`).
        """
        if not text.startswith("/"):
            return None
        head, _, rest = text[1:].partition(" ")
        name = head.strip()
        for cmd in self.commands:
            if name != cmd.name and name not in cmd.aliases:
                continue
            method = self._command_methods.get(cmd.name)
            handler = getattr(self, method) if method is not None else cmd.handler
            return (handler, rest.strip()) if handler is not None else None
        return None

    async def authenticate(self, method_id: str) -> None:
        """Perform the login ``method_id``.

        Raises:
            InvalidArgument: unknown method id.
            AuthRequired: the login failed.
        """
        raise InvalidArgument(f"unknown authentication method {method_id!r}")

    async def logout(self) -> None:
        """Log out (only called when :attr:`supports_logout`): forget the credentials.

        What happens to running sessions is up to the agent; after it, the
        connection counts as not authenticated (``require_auth`` applies again).
        """

    async def session_started(self, session: Session, how: str) -> None:
        """Called when a session is created (``new``), ``load``-ed or ``resume``-d."""

    async def session_closed(self, session: Session) -> None:
        """Called when a session is closed or its connection ends."""

    async def option_changed(self, session: Session, option_id: str, value: str | bool) -> None:
        """Called after an option changed (the value is already stored)."""

    async def prompt(self, turn: Turn) -> StopReason:
        """Run one turn. Cancellation arrives as anyio cancellation.

        Returns:
            why the turn ended.
        """
        raise NotImplementedError
