"""Readable terminal rendering of ACP updates and Wire events.

:class:`Printer` owns the output: agent text and thoughts are streamed as
they arrive; everything else (tool calls, plans, approvals) is printed as a
whole line starting with a ``[tag]``. Two tables map each message type to a
renderer: :data:`ACP_RENDERERS` (session updates) and :data:`WIRE_RENDERERS`
(events); types missing from them (usage, status, options) are not shown.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterable
from typing import Any, TextIO

from wireproto.adapters.acp import schema as s
from wireproto.adapters.wire import display as d
from wireproto.adapters.wire import messages as m
from wireproto.cli.controls import printable

__all__ = ["ACP_RENDERERS", "WIRE_RENDERERS", "Printer", "render_acp", "render_wire"]

_PLAN_MARKS = {"completed": "[x]", "done": "[x]", "in_progress": "[~]"}
_MAX_DETAIL = 100


def _short(text: str, limit: int = _MAX_DETAIL) -> str:
    first = text.strip().splitlines()[0] if text.strip() else ""
    more = len(first) > limit or "\n" in text.strip()
    return (first[:limit] + " ...") if more else first


_STREAM_PREFIX = {"thought": "(thinking) ", "subagent": "  (subagent) "}


class Printer:
    """Writes a conversation to ``out`` (flushed after every write), the peer's
    terminal control characters made visible (:func:`~wireproto.cli.controls.printable`).

    When the reader of ``out`` goes away, :attr:`closed` is set and further
    output is dropped.

    Attributes:
        tools: tool-call id -> name, to label updates that carry no title.
    """

    def __init__(self, out: TextIO) -> None:
        self.out = out
        self.closed = False  # the reader went away (e.g. "| head"): writes are dropped
        self.tools: dict[str, str] = {}
        self._mode: str | None = None  # "text" / "thought" while streaming
        self._message: object = None  # the id of the message being streamed

    def _write(self, text: str) -> None:
        if self.closed:
            return
        try:
            self.out.write(printable(text))
            self.out.flush()
        except BrokenPipeError:
            self.closed = True
            try:  # so that the interpreter's final flush does not fail either
                devnull = os.open(os.devnull, os.O_WRONLY)
                os.dup2(devnull, self.out.fileno())
                os.close(devnull)
            except (OSError, ValueError):
                pass

    def _stream(self, mode: str, text: str, message: object = None) -> None:
        if not text:
            return
        if message is not None and message != self._message:
            self.break_line()
        self._message = message
        if self._mode != mode:
            self.break_line()
            self._mode = mode
            if mode in _STREAM_PREFIX:
                self._write(_STREAM_PREFIX[mode])
        self._write(text)

    def text(self, text: str, message: object = None) -> None:
        """Stream agent text; a new ``message`` id starts a new line."""
        self._stream("text", text, message)

    def thought(self, text: str, message: object = None) -> None:
        """Stream agent thoughts (prefixed ``(thinking)``)."""
        self._stream("thought", text, message)

    def subagent(self, text: str, message: object = None) -> None:
        """Stream a sub-agent's text (prefixed ``(subagent)``)."""
        self._stream("subagent", text, message)

    def break_line(self) -> None:
        """End a streamed run with a newline, if one is open."""
        if self._mode is not None:
            self._write("\n")
            self._mode = None

    def line(self, text: str) -> None:
        """Print a whole line, on a line of its own."""
        self.break_line()
        self._write(text + "\n")

    def plan(self, entries: Iterable[tuple[str, str]]) -> None:
        """Print a plan: ``(content, status)`` pairs."""
        self.line("[plan]")
        for content, status in entries:
            self._write(f"  {_PLAN_MARKS.get(status, '[ ]')} {content}\n")


# ------------------------------------------------------------------ ACP


def _acp_block(block: Any) -> str:
    if isinstance(block, s.TextContent):
        return block.text
    if isinstance(block, s.ResourceLink):
        return f"[link {block.uri}]"
    mime = getattr(block, "mime_type", "")
    return f"[{getattr(block, 'type', 'content')} {mime}]".replace(" ]", "]")


def _acp_tool_content(printer: Printer, content: Any) -> None:
    for item in content if isinstance(content, list) else ():
        if isinstance(item, s.Diff):
            old = item.old_text if isinstance(item.old_text, str) else None
            new = len(item.new_text.splitlines())
            what = "new file" if old is None else f"{len(old.splitlines())} -> {new} lines"
            printer.line(f"    diff {item.path} ({what})")
        elif isinstance(item, s.Content):
            text = _acp_block(item.content)
            if text.strip():
                printer.line(f"    {_short(text)}")
        elif isinstance(item, s.Terminal):
            printer.line(f"    terminal {item.terminal_id}")


def _id(message_id: object) -> object:
    return message_id if isinstance(message_id, str) else None


def _acp_user(printer: Printer, update: s.UserMessageChunk) -> None:
    printer.line(f"> {_acp_block(update.content)}")


def _acp_agent(printer: Printer, update: s.AgentMessageChunk) -> None:
    printer.text(_acp_block(update.content), _id(update.message_id))


def _acp_thought(printer: Printer, update: s.AgentThoughtChunk) -> None:
    printer.thought(_acp_block(update.content), _id(update.message_id))


def _acp_tool(printer: Printer, update: s.ToolCall) -> None:
    printer.tools[update.tool_call_id] = update.title
    kind = f" ({update.kind})" if isinstance(update.kind, str) else ""
    status = f" {update.status}" if isinstance(update.status, str) else ""
    printer.line(f"[tool] {update.title}{kind}{status}")
    _acp_tool_content(printer, update.content)


def _acp_progress(printer: Printer, update: s.ToolCallProgress) -> None:
    if isinstance(update.title, str):
        printer.tools[update.tool_call_id] = update.title
    title = printer.tools.get(update.tool_call_id, update.tool_call_id)
    status = update.status if isinstance(update.status, str) else "updated"
    printer.line(f"[tool] {title}: {status}")
    _acp_tool_content(printer, update.content)


def _acp_plan(printer: Printer, update: s.Plan) -> None:
    printer.plan((e.content, e.status) for e in update.entries)


def _acp_mode(printer: Printer, update: s.CurrentModeUpdate) -> None:
    printer.line(f"[mode] {update.current_mode_id}")


def _acp_notice(printer: Printer, update: s.Notice) -> None:
    detail = f": {update.description}" if isinstance(update.description, str) else ""
    printer.line(f"[{update.severity}] {update.title}{detail}")


def _acp_compaction(printer: Printer, update: s.CompactionUpdate) -> None:
    printer.line(f"[compaction] {update.status}")


ACP_RENDERERS: dict[type, Callable[[Printer, Any], None]] = {
    s.CompactionUpdate: _acp_compaction,
    s.UserMessageChunk: _acp_user,
    s.AgentMessageChunk: _acp_agent,
    s.AgentThoughtChunk: _acp_thought,
    s.ToolCall: _acp_tool,
    s.ToolCallProgress: _acp_progress,
    s.Plan: _acp_plan,
    s.CurrentModeUpdate: _acp_mode,
    s.Notice: _acp_notice,
}
"""ACP session update type -> how it is shown."""


def render_acp(printer: Printer, update: Any) -> None:
    """Show one ACP session update (unlisted types are not shown)."""
    renderer = ACP_RENDERERS.get(type(update))
    if renderer is not None:
        renderer(printer, update)


# ----------------------------------------------------------------- Wire


def _wire_input(user_input: m.UserInput) -> str:
    if isinstance(user_input, str):
        return user_input
    return "\n".join(p.text if isinstance(p, m.TextPart) else f"[{type(p).__name__}]"
                     for p in user_input)


def _wire_blocks(printer: Printer, blocks: Iterable[Any]) -> None:
    for block in blocks:
        if isinstance(block, d.TodoDisplayBlock):
            printer.plan((item.title, item.status) for item in block.items)
        elif isinstance(block, d.DiffDisplayBlock):
            what = "new file" if not block.old_text else "changed"
            printer.line(f"    diff {block.path} ({what})")
        elif isinstance(block, d.BriefDisplayBlock) and block.text:
            printer.line(f"    {_short(block.text)}")
        elif isinstance(block, d.ShellDisplayBlock):
            printer.line(f"    $ {block.command}")


def _wire_turn(printer: Printer, event: m.TurnBegin) -> None:
    printer.line(f"> {_wire_input(event.user_input)}")


def _wire_text(printer: Printer, event: m.TextPart) -> None:
    printer.text(event.text)


def _wire_think(printer: Printer, event: m.ThinkPart) -> None:
    printer.thought(event.think)


def _wire_tool(printer: Printer, event: m.ToolCall) -> None:
    name = event.function.name
    printer.tools[event.id] = name
    args = f" {_short(event.function.arguments, 60)}" if event.function.arguments else ""
    printer.line(f"[tool] {name}{args}")


def _wire_result(printer: Printer, event: m.ToolResult) -> None:
    name = printer.tools.get(event.tool_call_id, event.tool_call_id)
    value = event.return_value
    outcome = "failed" if value.is_error else "done"
    message = f": {_short(value.message)}" if value.message else ""
    printer.line(f"[tool] {name}: {outcome}{message}")
    _wire_blocks(printer, [b for b in value.display
                           if not (isinstance(b, d.BriefDisplayBlock) and b.text == value.message)])


def _wire_interrupted(printer: Printer, event: m.StepInterrupted) -> None:
    printer.line("[interrupted]")


def _wire_resolved(printer: Printer, event: m.ApprovalResponse) -> None:
    printer.line(f"[approval] answered: {event.response}")


def _wire_notification(printer: Printer, event: m.Notification) -> None:
    printer.line(f"[{event.severity}] {event.title}: {_short(event.body)}")


def _wire_plan(printer: Printer, event: m.PlanDisplay) -> None:
    printer.line(f"[plan] {event.file_path}")
    printer.line(event.content.rstrip())


def _wire_retry(printer: Printer, event: m.StepRetry) -> None:
    printer.line(f"[retry] step {event.n} failed ({event.error_type or 'error'}); "
                 f"attempt {event.next_attempt} of {event.max_attempts}")


def _wire_subagent(printer: Printer, event: m.SubagentEvent) -> None:
    inner = event.event.payload
    if isinstance(inner, m.TextPart):
        printer.subagent(inner.text, ("subagent", event.parent_tool_call_id))
    elif isinstance(inner, m.ToolCall | m.ToolResult):
        renderer = WIRE_RENDERERS[type(inner)]
        renderer(printer, inner)


def _wire_btw(printer: Printer, event: m.BtwBegin | m.BtwEnd) -> None:
    if isinstance(event, m.BtwBegin):
        printer.line(f"[btw] {event.question}")
    else:
        printer.line(f"[btw] {event.response if event.error is None else event.error}")


WIRE_RENDERERS: dict[type, Callable[[Printer, Any], None]] = {
    m.StepRetry: _wire_retry,
    m.CompactionBegin: lambda p, e: p.line("[compacting the context]"),
    m.CompactionEnd: lambda p, e: p.line("[context compacted]"),
    m.SubagentEvent: _wire_subagent,
    m.BtwBegin: _wire_btw,
    m.BtwEnd: _wire_btw,
    m.TurnBegin: _wire_turn,
    m.SteerInput: _wire_turn,
    m.TextPart: _wire_text,
    m.ThinkPart: _wire_think,
    m.ToolCall: _wire_tool,
    m.ToolResult: _wire_result,
    m.StepInterrupted: _wire_interrupted,
    m.ApprovalResponse: _wire_resolved,
    m.Notification: _wire_notification,
    m.PlanDisplay: _wire_plan,
}
"""Wire event type -> how it is shown."""


def render_wire(printer: Printer, event: Any, *, replay: bool = False) -> None:
    """Show one Wire event (unlisted types are not shown).

    ``TurnBegin`` echoes the prompt, so it is shown only in a replay.
    """
    if isinstance(event, (m.TurnBegin, m.SteerInput)) and not replay:
        return
    renderer = WIRE_RENDERERS.get(type(event))
    if renderer is not None:
        renderer(printer, event)

