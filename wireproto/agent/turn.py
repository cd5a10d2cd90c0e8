"""The :class:`Turn` handed to :meth:`Agent.prompt`: everything a turn can do.

Every operation is async and backpressured (it waits for the client's
connection to take the event). Cancellation is structured: when the client
cancels, the runtime cancels the scope the turn runs in, so whatever the
turn awaits (a chunk send, an approval, a client file read, an external
tool) is cancelled and the pending client request with it.
"""

from __future__ import annotations

import os
import random
import uuid
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

import anyio
import anyio.lowlevel
import anyio.to_thread

from wireproto.agent.activity import Activity, text_of
from wireproto.agent.api import (
    Approval,
    ApprovalRequest,
    Channel,
    ClientCapabilities,
    Decision,
    Question,
    Session,
    ToolOutcome,
)
from wireproto.agent.content import (
    ContentBlock,
    Diff,
    Text,
    ToolContent,
    render_prompt,
    tool_blocks,
)
from wireproto.agent.events import (
    AgentMessageChunk,
    ApprovalResolved,
    Event,
    Location,
    PlanEntry,
    PlanUpdated,
    SteerReceived,
    StepStarted,
    ThoughtChunk,
    ToolCallStarted,
    ToolCallUpdated,
    ToolKind,
    ToolStatus,
    UsageUpdated,
    plan_entries,
)
from wireproto.agent.files import read_regular, through_client, within_roots, write_regular
from wireproto.agent.history import HistoryMessage
from wireproto.agent.questions import Asking
from wireproto.errors import ConnectionClosed, InvalidArgument

if TYPE_CHECKING:
    from wireproto.agent.runtime import Runtime

__all__ = ["ToolCall", "Turn", "new_id"]

_FINAL = (ToolStatus.COMPLETED, ToolStatus.FAILED)
_FULL_CHECK_EVERY = 8  # emits between checks of the enclosing scopes' cancellation


# Ids need to be unique, not secret (any client can list the sessions): a
# generator of its own, seeded from the OS and again in a forked child, gives
# 64 random bits without the system call of os.urandom (two per prompt), and
# an agent seeding the random module cannot make ids repeat.
_ids = random.Random()
if hasattr(os, "register_at_fork"):  # (no fork, no need: Windows)
    os.register_at_fork(after_in_child=_ids.seed)


def new_id(prefix: str) -> str:
    """Return a fresh unique id such as ``msg_3f2a...`` (64 random bits in hex)."""
    return f"{prefix}_{_ids.getrandbits(64):016x}"


class ToolCall:
    """A started tool call (from :meth:`Turn.start_tool`); update it, finish it once.

    Attributes:
        turn: the turn it belongs to.
        id: its id (unique among the turn's open calls).
        name: the tool's name.
        status: its last status.
    """

    def __init__(self, turn: Turn, id: str, name: str) -> None:
        self.turn = turn
        self.id = id
        self.name = name
        self.status = ToolStatus.PENDING

    async def update(
        self,
        *,
        status: ToolStatus | None = None,
        title: str | None = None,
        content: Sequence[ToolContent] | None = None,
        message: str | None = None,
    ) -> None:
        """Send a change (absent arguments are unchanged; ``content`` replaces)."""
        blocks = None if content is None else tool_blocks(content, "ToolCall.update()/complete()")
        if status is not None:
            if status.__class__ is not ToolStatus:  # (its value, as a str, is fine too)
                status = ToolStatus(status)
            self.status = status
            if status in _FINAL:
                self.turn._open_calls.pop(self.id, None)
        await self.turn.emit(
            ToolCallUpdated(
                id=self.id,
                status=status,
                title=title,
                content=blocks,
                message=message,
            )
        )

    async def complete(self, content: Sequence[ToolContent] = (), message: str = "") -> None:
        """Finish successfully with ``content``."""
        await self.update(status=ToolStatus.COMPLETED, content=content, message=message)

    async def fail(self, message: str, content: Sequence[ToolContent] | None = None) -> None:
        """Finish with an error; ``message`` explains it."""
        message = text_of(message, "ToolCall.fail")
        body = [Text(message)] if content is None else content
        await self.update(status=ToolStatus.FAILED, content=body, message=message)


class Turn(Asking, Activity):
    """One prompt turn of a session.

    Asking several questions or for a URL interaction: see
    :class:`~wireproto.agent.questions.Asking`; titles, retries, compaction,
    sub-agents and the other progress events: see
    :class:`~wireproto.agent.activity.Activity`.

    Attributes:
        runtime: the runtime serving the agent (sessions, history).
        session: the session the turn runs in.
        prompt: the prompt as typed content blocks.
        step: the current step, 1-based (see :meth:`new_step`).
        scope: the cancel scope the agent's :meth:`Agent.prompt` runs in.
        id: the turn's id (the message id of its recorded prompt; in log lines).
    """

    def __init__(self, runtime: Runtime, session: Session, prompt: list[ContentBlock]) -> None:
        self.id = new_id("user")
        self.runtime = runtime
        self.session = session
        self.prompt = prompt
        self.scope = anyio.CancelScope()
        # events are made when first waited for: most turns never need them
        self._done: anyio.Event | None = None
        self._finished = False
        self._cancel_requested = False
        self._cancelled: anyio.Event | None = None
        self._steering: list[list[ContentBlock]] = []
        self._steered: anyio.Event | None = None
        self._message_id: str | None = None
        self._thought_id: str | None = None
        self._text: str | None = None
        self._open_calls: dict[str, ToolCall] = {}
        self._emits = 0
        self.step = 1

    # ----------------------------------------------------------- properties

    @property
    def text(self) -> str:
        """The prompt rendered as text (see :func:`render_prompt`; rendered once)."""
        if self._text is None:
            self._text = render_prompt(self.prompt)
        return self._text

    def history(self) -> list[HistoryMessage]:
        """The session's conversation so far as typed messages, for a model's context.

        One :class:`~wireproto.agent.history.HistoryMessage` per user prompt and per
        agent reply (text, reasoning, tool calls with their outcome), earlier
        turns and loaded history included; this turn's prompt is the last
        user message. Kept in memory by the runtime: cheap to call every turn.
        """
        return self.runtime.history(self.session)

    @property
    def client(self) -> ClientCapabilities:
        """What the connected client supports."""
        channel = self.session.channel
        return channel.capabilities if channel is not None else ClientCapabilities()

    @property
    def plan_mode(self) -> bool:
        """Whether plan mode is on for the session."""
        return self.session.plan_mode

    @property
    def done(self) -> anyio.Event:
        """Set when the turn is over (recorded ``TurnEnded`` or failed)."""
        if self._done is None:
            self._done = anyio.Event()
            if self._finished:
                self._done.set()
        return self._done

    def finish(self) -> None:
        """Mark the turn over (what the runtime does when it ends): sets :attr:`done`."""
        self._finished = True
        if self._done is not None:
            self._done.set()

    @property
    def cancelled(self) -> bool:
        """Whether the client asked to cancel this turn."""
        return self._cancel_requested

    async def wait_cancelled(self) -> None:
        """Wait until the client asks to cancel this turn."""
        if self._cancelled is None:
            self._cancelled = anyio.Event()
            if self._cancel_requested:
                self._cancelled.set()
        await self._cancelled.wait()

    def cancel(self) -> None:
        """Cancel the turn (what the runtime does on the client's cancel)."""
        self._cancel_requested = True
        if self._cancelled is not None:
            self._cancelled.set()
        self.scope.cancel()

    # -------------------------------------------------------------- output

    async def emit(self, event: Event) -> None:
        """Send ``event`` to the client and record it in the session's history.

        Waits while the client is slow. Once the turn is cancelled nothing more
        is sent or recorded (the cancellation is raised here first).

        Raises:
            ConnectionClosed: the client is gone (the event is still recorded).
        """
        # the turn's own cancellation is checked every time; the full check
        # (any enclosing scope) costs a backend lookup, so only now and then
        self._emits += 1
        if self.scope.cancel_called or not self._emits % _FULL_CHECK_EVERY:
            await anyio.lowlevel.checkpoint_if_cancelled()
        await self.runtime.emit(self.session, event)

    def new_message(self) -> None:
        """Start a new message: the next chunk gets a new message id."""
        self._message_id = None
        self._thought_id = None

    async def new_step(self) -> int:
        """Start the next step of an agent loop (one more model call); returns its number.

        Step 1 starts with the turn. Adapters show steps where their protocol
        has them (Wire ``StepBegin``; a ``max_steps`` outcome reports the count).
        The next chunk starts a new message.
        """
        self.step += 1
        self.new_message()
        await self.emit(StepStarted(n=self.step))
        return self.step

    async def say(self, text: str) -> str:
        """Stream a chunk of the reply (a str); returns its message id."""
        if text.__class__ is not str:  # (inline: a call per chunk costs more than the test)
            text = text_of(text, "Turn.say")
        if self._message_id is None:
            self._message_id = new_id("msg")
        self._thought_id = None
        await self.emit(AgentMessageChunk(text=text, message_id=self._message_id))
        return self._message_id

    async def think(self, text: str) -> str:
        """Stream a chunk of visible reasoning (a str); returns its message id."""
        if text.__class__ is not str:
            text = text_of(text, "Turn.think")
        if self._thought_id is None:
            self._thought_id = new_id("thought")
        self._message_id = None
        await self.emit(ThoughtChunk(text=text, message_id=self._thought_id))
        return self._thought_id

    async def start_tool(
        self,
        name: str,
        title: str,
        *,
        kind: ToolKind = ToolKind.OTHER,
        status: ToolStatus = ToolStatus.PENDING,
        locations: Sequence[Location] = (),
        raw_input: Any = None,
        id: str | None = None,
        external: bool = False,
    ) -> ToolCall:
        """Announce a tool call and return its handle.

        Args:
            name: the tool's name.
            title: a human-readable title.
            kind: what the call does (a UI hint).
            status: the initial status.
            locations: files the call touches.
            raw_input: the call's arguments (JSON values).
            id: the call's id (e.g. the model's); default a new one. An id
                equal to that of a call still open in this turn gets a
                ``~2``, ``~3`` ... suffix (the handle's :attr:`ToolCall.id`).
            external: a call of a client-provided tool.

        A call the turn leaves unfinished is failed by the runtime when the
        turn ends (see :meth:`close_open_calls`).
        """
        if kind.__class__ is not ToolKind:  # (their values, as str, are fine too)
            kind = ToolKind(kind)
        if status.__class__ is not ToolStatus:
            status = ToolStatus(status)
        call = ToolCall(self, self._unique_call_id(id or new_id("call")), name)
        call.status = status
        self._message_id = self._thought_id = None
        if status not in _FINAL:
            self._open_calls[call.id] = call
        try:
            await self.emit(
                ToolCallStarted(
                    id=call.id, name=name, title=title, kind=kind, status=status,
                    locations=list(locations), raw_input=raw_input, external=external,
                )
            )
        except anyio.get_cancelled_exc_class():
            self._open_calls.pop(call.id, None)  # never announced: nothing to close
            raise
        return call

    def _unique_call_id(self, wanted: str) -> str:
        """``wanted``, or ``wanted~2``, ``~3`` ... while an open call of this turn has it.

        Models may repeat tool-call ids (``call_0`` in every step); the ids of
        the calls open at one time must differ, or their updates would be
        ambiguous in every protocol.
        """
        candidate, n = wanted, 1
        while candidate in self._open_calls:
            n += 1
            candidate = f"{wanted}~{n}"
        return candidate

    async def close_open_calls(self) -> None:
        """Fail every tool call of this turn that is not finished yet.

        The runtime calls this when the agent's :meth:`Agent.prompt` is over
        (returned or cancelled), before ``TurnEnded``, so that no tool call is
        left ``pending``/``in_progress`` live or in a replay. The message is
        ``"cancelled"`` for a cancelled turn.

        Raises:
            ConnectionClosed: the client is gone (every call is still recorded
                as failed).
        """
        message = "cancelled" if self.cancelled else "the turn ended before the tool call finished"
        closed: ConnectionClosed | None = None
        for call in list(self._open_calls.values()):
            try:
                await call.fail(message)
            except ConnectionClosed as exc:  # recorded all the same: go on
                closed = closed or exc
        if closed is not None:
            raise closed

    async def plan(self, entries: Sequence[PlanEntry]) -> None:
        """Send the complete current plan (``TypeError`` unless a list of :class:`PlanEntry`)."""
        await self.emit(PlanUpdated(entries=plan_entries(entries, "Turn.plan()")))

    async def usage(
        self,
        *,
        used: int | None = None,
        size: int | None = None,
        input_tokens: int | None = None,
        output_tokens: int | None = None,
        cache_read_tokens: int | None = None,
        cache_write_tokens: int | None = None,
        cost: float | None = None,
        currency: str | None = None,
    ) -> None:
        """Report usage; ``None`` = unknown (see :class:`UsageUpdated` for each field)."""
        await self.emit(
            UsageUpdated(
                used=used, size=size, input_tokens=input_tokens, output_tokens=output_tokens,
                cache_read_tokens=cache_read_tokens, cache_write_tokens=cache_write_tokens,
                cost=cost, currency=currency,
            )
        )

    # -------------------------------------------------------- session state

    async def set_option(self, option_id: str, value: str | bool) -> None:
        """Change a session option from inside the turn (e.g. the agent switches mode).

        The change is recorded and sent (:class:`OptionChanged`; ACP shows it
        as ``config_option_update`` / ``current_mode_update``).

        Raises:
            InvalidArgument: unknown option or value.
        """
        await self.runtime.set_option(self.session, option_id, value, announce=True)

    async def set_plan_mode(self, enabled: bool) -> None:
        """Switch plan mode from inside the turn (recorded and sent)."""
        await self.runtime.set_plan_mode(self.session, enabled)

    # ------------------------------------------------------------- steering

    def steer(self, content: list[ContentBlock]) -> None:
        """Queue steering input (what the runtime does on the client's steer)."""
        self._steering.append(content)
        if self._steered is not None:
            self._steered.set()

    async def take_steering(self) -> list[list[ContentBlock]]:
        """Return the steering inputs received since the last call (oldest first).

        Each one taken is announced (:class:`SteerReceived`): call this where
        the input enters the agent's context, e.g. between steps.
        """
        taken, self._steering = self._steering, []
        self._steered = None
        for content in taken:
            await self.emit(SteerReceived(content=content))
        return taken

    async def wait_steering(self) -> list[list[ContentBlock]]:
        """Wait for steering input, then take it."""
        if not self._steering:
            if self._steered is None:
                self._steered = anyio.Event()
            await self._steered.wait()
        return await self.take_steering()

    # ---------------------------------------------------- asking the client

    async def request_approval(
        self,
        call: ToolCall,
        action: str,
        description: str,
        display: Sequence[ToolContent] = (),
    ) -> Approval:
        """Ask the client to approve ``call``; the answer is recorded and shown.

        Args:
            call: the tool call asking (its name is the approval's tool).
            action: what would be done, in a few words.
            description: what would be done, in a sentence.
            display: what to show, e.g. the :class:`Diff` of a write.

        Returns:
            the decision (allow once / for the session / reject) and feedback.
            A failed or abandoned request counts as a reject. After an
            "allow for the session" answer the same tool (``call.name``) is
            allowed in this session without asking (``ALLOW_SESSION`` again,
            nothing sent) until :meth:`Session.forget_approvals`.
        """
        if call.name in self.session.allowed_tools:
            return Approval(Decision.ALLOW_SESSION, "allowed for the session")
        channel = self._channel()
        request = ApprovalRequest(
            id=str(uuid.uuid4()), tool_call_id=call.id, tool=call.name, action=action,
            description=description,
            display=tuple(tool_blocks(display, "Turn.request_approval(display=)")),
        )
        approval = await channel.request_approval(self.session, request)
        await self.emit(
            ApprovalResolved(
                request_id=request.id, tool_call_id=call.id,
                decision=approval.decision.value, feedback=approval.feedback,
            )
        )
        if approval.decision is Decision.ALLOW_SESSION:
            self.session.allowed_tools.add(call.name)
        return approval

    async def ask(self, question: Question, tool_call_id: str = "") -> list[str]:
        """Ask a multiple-choice question.

        Returns:
            the chosen labels; ``[]`` when dismissed, failed or unsupported
            (:attr:`ClientCapabilities.questions` false).
        """
        if not self.client.questions:
            return []
        return await self._channel().ask(self.session, tool_call_id or new_id("call"), question)

    async def run_hook(self, event: str, target: str, input: dict[str, Any]) -> tuple[bool, str]:
        """Run the client's hooks for ``event`` (one of :attr:`Agent.hook_events`).

        Returns:
            ``(allowed, reason)``; ``(True, "")`` when the agent does not
            declare ``event`` or no client hook matches ``target``.
        """
        if event not in self.runtime.agent.hook_events or self.session.channel is None:
            return True, ""
        return await self.session.channel.run_hook(self.session, event, target, input)

    # --------------------------------------------------------------- files

    def resolve(self, path: str) -> Path:
        """Resolve ``path`` against the session's cwd (no root check).

        Raises:
            InvalidArgument: ``path`` contains a NUL character (no file has one).
        """
        if "\x00" in path:
            raise InvalidArgument(f"the path {path!r} contains a NUL character")
        return (Path(self.session.cwd) / path).resolve()

    def _confined(self, path: str) -> Path:
        full = self.resolve(path)
        if within_roots(full, self.session.roots) is None:
            raise PermissionError(f"{path} is outside the session's roots")
        return full

    async def read_text_file(self, path: str) -> str:
        """Read a text file: through the client when it can, else locally.

        Local reads are confined to the session's roots.

        Raises:
            OSError: the file cannot be read (``PermissionError`` outside the roots,
                :class:`~wireproto.agent.files.NotRegularFile` for a FIFO, a device...),
                or the client refused (a :class:`ClientFileError`, also the client's
                ``RpcError``; :class:`ClientFileNotFound` for a missing file).
            UnicodeDecodeError: a local file is not UTF-8.
            RemoteProtocolError: the client's answer is invalid.
        """
        if self.client.read_text_file:
            return await through_client(
                self._channel().read_text_file(self.session, str(self.resolve(path))))
        full = self._confined(path)
        data = await anyio.to_thread.run_sync(read_regular, full)
        return data.decode("utf-8")  # no newline translation

    async def write_text_file(self, path: str, text: str) -> Diff:
        """Write a text file through the client when it can, else locally.

        Local writes are confined to the session's roots.

        Returns:
            the change as a :class:`Diff` (``old_text`` ``None`` for a new file).

        Raises:
            OSError: the file cannot be written (``PermissionError`` outside the roots,
                :class:`~wireproto.agent.files.NotRegularFile` for a FIFO, a device...),
                or the client refused (a :class:`ClientFileError`, also its ``RpcError``).
        """
        full = self.resolve(path) if self.client.write_text_file else self._confined(path)
        try:
            old: str | None = await self.read_text_file(path)
        except Exception:
            old = None
        if self.client.write_text_file:
            await through_client(self._channel().write_text_file(self.session, str(full), text))
        else:
            await anyio.to_thread.run_sync(write_regular, full, text.encode("utf-8"))
        return Diff(path=str(full), new_text=text, old_text=old)

    # ------------------------------------------------------- external tools

    async def call_tool(self, name: str, arguments: Any) -> ToolOutcome:
        """Call a client-provided tool with JSON ``arguments``.

        Arguments are validated against the tool's schema first; invalid
        arguments (or an unknown tool) come back as an error outcome and
        nothing is sent. The call is shown as a tool call either way.

        Returns:
            the client's result (an error outcome when the request failed).
        """
        tool = self.client.external_tools.get(name)
        call = await self.start_tool(
            name, f"Calling {name}", kind=ToolKind.OTHER, status=ToolStatus.IN_PROGRESS,
            raw_input=arguments, external=tool is not None,
        )
        if tool is None:
            outcome = ToolOutcome(True, "", f"Tool {name} is not available")
        elif (problem := await tool.check_arguments(arguments)) is not None:
            outcome = ToolOutcome(True, "", problem)
        else:
            outcome = await self._channel().call_tool(self.session, call.id, tool, arguments)
        status = ToolStatus.FAILED if outcome.is_error else ToolStatus.COMPLETED
        body: list[ToolContent] = [Text(outcome.output)] if outcome.output else []
        await call.update(status=status, content=body, message=outcome.message)
        return outcome

    def _channel(self) -> Channel:
        if self.session.channel is None:
            raise ConnectionClosed("the session has no client connection")
        return self.session.channel
