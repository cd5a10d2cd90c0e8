"""The embedded demo agent: deterministic, no LLM, every protocol feature.

This is what ``wireproto acp`` and ``wireproto wire`` serve when no agent is
given. Its exact behaviour (texts, defaults, statuses, tool names) is the
contract in ``docs/demo-agent.md``; it is written once against the
protocol-neutral API and served by both adapters.

Theory of operation: a prompt whose text (:attr:`Turn.text`) does not start
with ``/`` is echoed as ``You said: TEXT`` in several chunks of one message.
Otherwise the first word names a command, looked up in the table
:data:`COMMANDS` (name, description, input hint, handler); the rest of the
text is the handler's argument string. Every handler ends the turn with
``end_turn``; cancellation arrives as anyio cancellation and the runtime
answers ``cancelled``.

Decisions the spec leaves open:

* ``REASON`` in ``Cannot read PATH: REASON`` is the client's error message
  for a client read, ``OSError.strerror`` for a local one (e.g. ``No such
  file or directory``; ``str(exc)`` when the error has no ``strerror``, such
  as a path outside the session's roots), else ``str(exc)``.
* Missing or malformed arguments reply ``Usage: /NAME HINT``.
* ``/tool`` answers ``External tools are not available over ACP`` when the
  tool is not registered and the client's protocol carries no external tools
  at all (:attr:`ClientCapabilities.external_tools_supported` false).
* "Allow for the session" on ``/write`` is remembered in
  ``session.state["demo.allow_write"]`` (live sessions only, not persisted).
"""

from __future__ import annotations

import os
import re
from collections.abc import Awaitable, Callable

import anyio
import msgspec

from wireproto import __version__
from wireproto.agent.api import (
    Agent,
    AgentInfo,
    AuthMethod,
    BooleanOption,
    Choice,
    Decision,
    SelectOption,
    SlashCommand,
)
from wireproto.agent.content import Diff, Text
from wireproto.agent.demo_extras import EXTRA_COMMANDS, pieces
from wireproto.agent.events import Location, PlanEntry, StopReason, ToolKind, ToolStatus
from wireproto.agent.store import wireproto_home
from wireproto.agent.turn import Turn
from wireproto.errors import AuthRequired, InvalidArgument, RemoteProtocolError, RpcError
from wireproto.jsonrpc.framing import DEFAULT_MAX_MESSAGE_BYTES

__all__ = ["COMMANDS", "DemoAgent", "token_configured"]

TICK_SECONDS = 0.05
"""The interval of ``/slow`` ticks."""

BIG_LIMIT = DEFAULT_MAX_MESSAGE_BYTES
"""The largest N of ``/big N`` (a larger reply would not reach a client with the default
message size limit; it only took the agent's memory)."""

PLAN_STEPS = ("Understand the request", "Make the change", "Check the result")
"""The entries of the ``/plan`` plan."""

_ALLOW_WRITES = "demo.allow_write"
_COMMAND = re.compile(r"/(\S*)(?:\s(.*))?", re.DOTALL)
_FILE_ERRORS = (OSError, RpcError, RemoteProtocolError, UnicodeError, ValueError)

Handler = Callable[[Turn, str], Awaitable[None]]
"""A command handler: ``(turn, argument text)``."""


def token_configured() -> bool:
    """Whether a login token is configured (``WIREPROTO_TOKEN`` or ``$WIREPROTO_HOME/token``)."""
    return bool(os.environ.get("WIREPROTO_TOKEN")) or (wireproto_home() / "token").is_file()


def _reason(exc: BaseException) -> str:
    """The message of a file error (see the module docstring)."""
    if isinstance(exc, RpcError):
        return exc.message
    if isinstance(exc, OSError) and exc.strerror:
        return exc.strerror
    return str(exc)


def _split_first(args: str) -> tuple[str, str]:
    """``"PATH rest of text"`` -> ``("PATH", "rest of text")`` (one separator dropped)."""
    parts = re.split(r"\s", args.lstrip(), maxsplit=1)
    return parts[0], parts[1] if len(parts) > 1 else ""


def _count(args: str) -> int | None:
    try:
        value = int(args.strip())
    except ValueError:
        return None
    return value if value >= 0 else None


async def _usage(turn: Turn, name: str) -> None:
    hint = next(c.input_hint for c, _ in COMMANDS if c.name == name)
    await turn.say(f"Usage: /{name} {hint}")


# ----------------------------------------------------------------- commands


async def _help(turn: Turn, args: str) -> None:
    await turn.say("\n".join(f"/{c.name} - {c.description}" for c, _ in COMMANDS))


async def _read(turn: Turn, args: str) -> None:
    path = args.strip()
    if not path:
        return await _usage(turn, "read")
    call = await turn.start_tool(
        "read", f"Read {path}", kind=ToolKind.READ, status=ToolStatus.IN_PROGRESS,
        locations=[Location(str(turn.resolve(path)))], raw_input={"path": path},
    )
    try:
        text = await turn.read_text_file(path)
    except _FILE_ERRORS as exc:
        reason = _reason(exc)
        await call.fail(reason)
        await turn.say(f"Cannot read {path}: {reason}")
        return
    await call.complete([Text(text)])
    await turn.say(f"Read {len(text.splitlines())} lines from {path}")


async def _old_text(turn: Turn, path: str) -> str | None:
    try:
        return await turn.read_text_file(path)
    except _FILE_ERRORS:
        return None


async def _write(turn: Turn, args: str) -> None:
    path, text = _split_first(args)
    if not path:
        return await _usage(turn, "write")
    full = str(turn.resolve(path))
    call = await turn.start_tool(
        "write", f"Write {path}", kind=ToolKind.EDIT, status=ToolStatus.PENDING,
        locations=[Location(full)], raw_input={"path": path, "content": text},
    )
    if not turn.session.state.get(_ALLOW_WRITES):
        preview = Diff(path=full, new_text=text, old_text=await _old_text(turn, path))
        approval = await turn.request_approval(call, "write file", f"Write {path}", [preview])
        if not approval.allowed:
            await call.fail(approval.feedback or "rejected by the user")
            await turn.say(f"Write to {path} rejected")
            return
        if approval.decision is Decision.ALLOW_SESSION:
            turn.session.state[_ALLOW_WRITES] = True
    await call.update(status=ToolStatus.IN_PROGRESS)
    try:
        diff = await turn.write_text_file(path, text)
    except _FILE_ERRORS as exc:
        reason = _reason(exc)
        await call.fail(reason)
        await turn.say(f"Cannot write {path}: {reason}")
        return
    await call.complete([diff])
    await turn.say(f"Wrote {path}")


async def _plan(turn: Turn, args: str) -> None:
    for done in range(len(PLAN_STEPS) + 1):
        await turn.plan(
            [
                PlanEntry(step, "completed" if index < done else "pending")
                for index, step in enumerate(PLAN_STEPS)
            ]
        )
    await turn.say("Plan done")


async def _think(turn: Turn, args: str) -> None:
    if args:
        for piece in pieces(args):
            await turn.think(piece)
    await turn.say("Done thinking")


async def _slow(turn: Turn, args: str) -> None:
    count = _count(args)
    if count is None:
        return await _usage(turn, "slow")
    for tick in range(1, count + 1):
        if tick > 1:
            await anyio.sleep(TICK_SECONDS)
        await turn.take_steering()
        await turn.say(f"tick {tick}")
    await turn.take_steering()


async def _big(turn: Turn, args: str) -> None:
    count = _count(args)
    if count is None or count > BIG_LIMIT:
        return await _usage(turn, "big")
    await turn.say("x" * count)


async def _tool(turn: Turn, args: str) -> None:
    name, raw = _split_first(args)
    if not name:
        return await _usage(turn, "tool")
    client = turn.client
    if name not in client.external_tools and not client.external_tools_supported:
        await turn.say("External tools are not available over ACP")
        return
    try:
        arguments = msgspec.json.decode(raw.strip() or "{}")
    except RecursionError:
        await turn.say(f"Tool {name} failed: invalid JSON arguments (nested too deeply)")
        return
    except msgspec.DecodeError as exc:
        await turn.say(f"Tool {name} failed: invalid JSON arguments ({exc})")
        return
    outcome = await turn.call_tool(name, arguments)
    if outcome.is_error:
        await turn.say(f"Tool {name} failed: {outcome.message or outcome.output}")
    else:
        await turn.say(f"Tool {name} returned: {outcome.output}")


async def _mcp(turn: Turn, args: str) -> None:
    servers = turn.session.mcp_servers
    lines = [f"{server.name} ({server.transport})" for server in servers]
    await turn.say("\n".join(lines) if lines else "No MCP servers")


async def _clear(turn: Turn, args: str) -> None:
    await turn.runtime.clear_history(turn.session)
    await turn.say("History cleared")


COMMANDS: tuple[tuple[SlashCommand, Handler], ...] = (
    (SlashCommand("help", "Show the available commands"), _help),
    (SlashCommand("read", "Read a file", input_hint="PATH"), _read),
    (SlashCommand("write", "Write TEXT to a file, after approval", input_hint="PATH TEXT"), _write),
    (SlashCommand("plan", "Make a three-step plan and work through it"), _plan),
    (SlashCommand("think", "Think TEXT out loud", input_hint="TEXT"), _think),
    (SlashCommand("slow", "Stream N ticks, one every 50 ms", input_hint="N"), _slow),
    (SlashCommand("big", "Reply with N bytes of x", input_hint="N"), _big),
    (
        SlashCommand("tool", "Call the client's tool NAME with JSON arguments",
                     input_hint="NAME JSON"),
        _tool,
    ),
    (SlashCommand("mcp", "List the MCP servers of this session"), _mcp),
    (SlashCommand("clear", "Clear the session history"), _clear),
    *EXTRA_COMMANDS,
)
"""The command table: what is advertised and who handles it."""

_HANDLERS: dict[str, Handler] = {command.name: handler for command, handler in COMMANDS}


class DemoAgent(Agent):
    """The deterministic demo agent of ``docs/demo-agent.md``.

    Args:
        require_auth: sessions can only be used after ``login`` succeeded
            (the adapters enforce it per connection).
    """

    info = AgentInfo(name="wireproto-demo", version=__version__, title="wireproto demo agent")
    commands = tuple(command for command, _ in COMMANDS)
    tools = ("read", "write", "SetTodoList")
    options = (
        SelectOption(
            "mode", "Mode",
            (Choice("ask", "Ask", "Ask before acting"), Choice("code", "Code", "Write code")),
            default="ask", category="mode",
        ),
        SelectOption(
            "model", "Model",
            (Choice("demo-small", "Demo small"), Choice("demo-large", "Demo large")),
            default="demo-small", category="model",
        ),
        BooleanOption("thinking", "Thinking", default=False, category="thought_level"),
    )
    auth_methods = (
        AuthMethod("login", "Log in", "Use the token of WIREPROTO_TOKEN or $WIREPROTO_HOME/token"),
    )
    hook_events = ()

    def __init__(self, *, require_auth: bool = False) -> None:
        self.require_auth = require_auth

    async def authenticate(self, method_id: str) -> None:
        """Log in with ``login``.

        Raises:
            InvalidArgument: any other method id.
            AuthRequired: no token is configured.
        """
        if method_id != "login":
            raise InvalidArgument(f"unknown authentication method {method_id!r}")
        if not token_configured():
            raise AuthRequired("authentication required")

    async def prompt(self, turn: Turn) -> StopReason:
        """Echo the prompt, or run the slash command it names."""
        text = turn.text
        match = _COMMAND.fullmatch(text)
        if match is None:
            for piece in pieces(f"You said: {text}"):
                await turn.say(piece)
            return StopReason.END_TURN
        name, args = match.group(1), match.group(2) or ""
        handler = _HANDLERS.get(name)
        if handler is None:
            await turn.say(f'Unknown slash command "/{name}".')
        else:
            await handler(turn, args)
        return StopReason.END_TURN
