"""A raw ACP client for black-box tests of ACP agents, and a conformance checker.

Load it with ``importlib`` (the tests have no packages), e.g. through
``tests/adapters/acp/conftest.py``. :class:`RawAcp` drives an agent with
plain JSON values over any ``ObjectStream[bytes]`` (memory pair, subprocess,
websocket) and reads back what the agent writes. :class:`CheckedStream`
wraps either end of a connection driven by something else (our
``ClientConnection``) and checks the same way.

:class:`Conformance` checks every message the agent writes
(:meth:`RawAcp.receive` raises :class:`AssertionError` on the first problem;
:class:`CheckedStream` collects the problems in ``errors``):

* it validates against the official schema (``schema.json``): the params of
  agent requests and notifications, the results of responses (by the method
  of our request with that id), error objects;
* gating (protocol-acp.md#gating): ``fs/*`` only when advertised, never
  ``terminal/*``; ``elicitation/create`` only in a mode the client
  advertised (``elicitation/complete`` only with ``elicitation.url``),
  ``notice`` only with ``session.notices``, compaction updates only with
  ``session.compaction``,
  boolean config options only with ``session.configOptions.boolean``;
* ordering (protocol-acp.md#ordering): an update names a session the client knows (a
  ``session/new`` response named it, or its load/resume was answered), or a
  session being loaded (then only history variants, no commands or options);
  turn variants (chunks, tool calls, plans) only while a ``session/prompt``
  or ``session/load`` of that session is unanswered.

Requests the agent makes are answered automatically when :attr:`RawAcp.answers`
has a callable for the method (its return value is the result; raise
:class:`Reject` to answer with an error); otherwise the test answers them with
:meth:`RawAcp.answer`.
"""

from __future__ import annotations

import functools
import itertools
import logging
from collections.abc import Awaitable, Callable
from typing import Any

import anyio
import anyio.abc
import msgspec
from timeouts import units

from wireproto.adapters.acp import schema as S
from wireproto.adapters.acp.validation import schema_errors

Message = dict[str, Any]

TURN_VARIANTS = frozenset((
    "user_message_chunk", "agent_message_chunk", "agent_thought_chunk", "tool_call",
    "tool_call_update", "plan",
))
"""``sessionUpdate`` values that belong to a turn (or to a replay)."""

SETUP_METHODS = frozenset(("session/load", "session/resume"))

QUIET_LIMIT = units(4)
"""Seconds :meth:`RawAcp.receive` waits for the agent's next message before failing
(a bound well below the test timeout, so a hang fails fast and says where)."""


@functools.cache
def _schema_errors(definition: str, encoded: bytes) -> tuple[str, ...]:
    """:func:`schema_errors` of a JSON value, once per distinct value (a third repeat)."""
    return tuple(schema_errors(definition, msgspec.json.decode(encoded)))


log = logging.getLogger(__name__)


class Reject(Exception):
    """Raised by an answer callable: answer the agent's request with this error."""

    def __init__(self, code: int, message: str) -> None:
        super().__init__(message)
        self.code = code
        self.message = message


def def_name(type_: Any) -> str:
    """The schema definition a generated type (Struct or marker union) validates against."""
    return S.DEF_OF.get(type_) or type_.__name__


def is_response(msg: Message) -> bool:
    return "method" not in msg and ("result" in msg or "error" in msg)


def same_id(a: Any, b: Any) -> bool:
    """JSON id equality: same type and value (``1`` != ``"1"``)."""
    return type(a) is type(b) and a == b


def chunk_text(msg: Message) -> str | None:
    """The text of a message / thought / user chunk update (``None`` for anything else)."""
    if msg.get("method") != "session/update":
        return None
    update = msg["params"]["update"]
    content = update.get("content") if update["sessionUpdate"].endswith("_chunk") else None
    return content.get("text") if isinstance(content, dict) else None


def chunk(text: str, session_id: str | None = None) -> Callable[[Message], bool]:
    """A predicate: a chunk update with exactly ``text`` (of ``session_id``)."""
    return lambda m: chunk_text(m) == text and (
        session_id is None or m["params"]["sessionId"] == session_id
    )


class RawAcp:
    """The client end of an ACP connection, driven with raw JSON values.

    Args:
        stream: our end of the connection (whole messages).
        check: run the conformance checks of the module docstring.

    Attributes:
        log: every message the agent wrote, in order.
        answers: method -> callable answering the agent's requests of that
            method automatically (params -> result; may be async).
        conformance: the checker (it also tracks what we sent).
    """

    def __init__(self, stream: anyio.abc.ObjectStream[bytes], *, check: bool = True) -> None:
        self.stream = stream
        self.check = check
        self.log: list[Message] = []
        self.answers: dict[str, Callable[[Any], Any]] = {}
        self.conformance = Conformance()
        self._ids = itertools.count()
        self._taken: set[int] = set()  # indexes of log returned by next() / wait_for()
        self._first = 0  # the first index not taken

    # -------------------------------------------------------------- sending

    async def send_raw(self, data: bytes) -> None:
        """Send one raw message (any bytes)."""
        await self.stream.send(data)

    async def send(self, message: Any) -> None:
        """Send one JSON value (a message, or anything else); requests are tracked."""
        self.conformance.client_sent(message)
        await self.stream.send(msgspec.json.encode(message))

    async def request(self, method: str, params: Any = None, *, id: Any = None) -> Any:
        """Send a request (without waiting); returns its id (integers from 0)."""
        rid = next(self._ids) if id is None else id
        message: Message = {"jsonrpc": "2.0", "id": rid, "method": method}
        if params is not None:
            message["params"] = params
        await self.send(message)
        return rid

    async def notify(self, method: str, params: Any = None) -> None:
        """Send a notification."""
        message: Message = {"jsonrpc": "2.0", "method": method}
        if params is not None:
            message["params"] = params
        await self.send(message)

    async def answer(self, request: Message, result: Any = None, *,
                     error: tuple[int, str] | None = None) -> None:
        """Answer a request the agent made."""
        if error is not None:
            await self.send({"jsonrpc": "2.0", "id": request["id"],
                             "error": {"code": error[0], "message": error[1]}})
        else:
            await self.send({"jsonrpc": "2.0", "id": request["id"], "result": result})

    # -------------------------------------------------------------- reading

    async def receive(self) -> Message:
        """Read, check and log the next message the agent wrote.

        Raises:
            anyio.EndOfStream: the agent closed the connection.
            AssertionError: the message breaks a rule.
            TimeoutError: the agent wrote nothing for :data:`QUIET_LIMIT` seconds.
        """
        with anyio.fail_after(QUIET_LIMIT):
            raw = await self.stream.receive()
        assert b"\n" not in raw.rstrip(b"\n"), f"a raw newline inside a message: {raw!r}"
        msg = msgspec.json.decode(raw)
        self.log.append(msg)
        if self.check:
            self.conformance.agent_sent(msg)
        if "method" in msg and "id" in msg and msg["method"] in self.answers:
            await self._auto_answer(msg)
        return msg

    async def _auto_answer(self, msg: Message) -> None:
        try:
            result = self.answers[msg["method"]](msg.get("params"))
            if isinstance(result, Awaitable):
                result = await result
        except Reject as exc:
            await self.answer(msg, error=(exc.code, exc.message))
        else:
            await self.answer(msg, result)

    async def next(self) -> Message:
        """The first message not yet taken by :meth:`next` / :meth:`wait_for`."""
        return await self.wait_for(lambda m: True)

    async def wait_for(self, predicate: Callable[[Message], bool]) -> Message:
        """Take the first message not yet taken that matches ``predicate``.

        Messages read on the way stay available (in order) for later calls.
        """
        index = self._first
        while True:
            while index < len(self.log):
                if index not in self._taken and predicate(self.log[index]):
                    self._taken.add(index)
                    while self._first in self._taken:
                        self._first += 1
                    return self.log[index]
                index += 1
            await self.receive()

    def index(self, msg: Message) -> int:
        """The position of ``msg`` (this very object) in :attr:`log`."""
        return next(i for i, m in enumerate(self.log) if m is msg)

    async def following(self, msg: Message) -> Message:
        """Take the message written right after ``msg``."""
        wanted = self.index(msg) + 1
        while len(self.log) <= wanted:
            await self.receive()
        self._taken.add(wanted)
        while self._first in self._taken:
            self._first += 1
        return self.log[wanted]

    async def response(self, rid: Any) -> Message:
        """Wait for the response to our request ``rid``."""
        return await self.wait_for(lambda m: is_response(m) and same_id(m.get("id"), rid))

    async def call(self, method: str, params: Any = None) -> Message:
        """Send a request and return its response message (result or error)."""
        return await self.response(await self.request(method, params))

    async def result(self, method: str, params: Any = None) -> Any:
        """Send a request and return its result (an error fails the test)."""
        msg = await self.call(method, params)
        assert "result" in msg, f"{method} failed: {msg}"
        return msg["result"]

    async def error(self, method: str, params: Any = None) -> dict[str, Any]:
        """Send a request and return its error object (a result fails the test)."""
        msg = await self.call(method, params)
        assert "error" in msg, f"{method} unexpectedly succeeded: {msg}"
        error: dict[str, Any] = msg["error"]
        return error

    async def agent_request(self, method: str) -> Message:
        """Wait for a request of ``method`` from the agent."""
        return await self.wait_for(lambda m: m.get("method") == method and "id" in m)

    async def nothing_before(self, method: str = "session/list", params: Any = None) -> Message:
        """Send a sentinel request; fail unless its response is the next message.

        The agent reads messages in order and answers invalid ones at once, so
        this proves that what was sent before got no answer.
        """
        rid = await self.request(method, params if params is not None else {})
        msg = await self.next()
        assert is_response(msg) and same_id(msg.get("id"), rid), f"unexpected message: {msg}"
        return msg

    # ------------------------------------------------------------ shortcuts

    async def initialize(self, capabilities: dict[str, Any] | None = None,
                         version: int = 1) -> Any:
        """``initialize`` with the given client capabilities; returns the result."""
        return await self.result("initialize", {
            "protocolVersion": version,
            "clientCapabilities": capabilities or {},
            "clientInfo": {"name": "raw-test", "version": "1.0"},
        })

    async def new_session(
        self, cwd: str, servers: list[Any] | None = None, *, commands: bool = True
    ) -> Any:
        """``session/new``; returns the result.

        With ``commands``, also waits for the ``available_commands_update``
        that follows (so later reads start after it).
        """
        result = await self.result("session/new", {"cwd": cwd, "mcpServers": servers or []})
        if commands:
            sid = result["sessionId"]
            await self.wait_for(
                lambda m: m.get("method") == "session/update"
                and m["params"]["sessionId"] == sid
                and m["params"]["update"]["sessionUpdate"] == "available_commands_update"
            )
        return result

    async def prompt(self, session_id: str, text: str | list[Any]) -> tuple[Message, list[Any]]:
        """Run one prompt; returns ``(response, updates of this turn)``.

        The updates are the turn variants (chunks, tool calls, plans) and
        usage updates of the session read while waiting for the response.
        """
        blocks = [{"type": "text", "text": text}] if isinstance(text, str) else text
        start = len(self.log)
        rid = await self.request("session/prompt", {"sessionId": session_id, "prompt": blocks})
        response = await self.response(rid)
        turn = [m["params"]["update"] for m in self.log[start:]
                if m.get("method") == "session/update" and m["params"]["sessionId"] == session_id
                and m["params"]["update"]["sessionUpdate"] in TURN_VARIANTS | {"usage_update"}]
        return response, turn

    def updates(self, session_id: str | None = None, kind: str | None = None) -> list[Any]:
        """Every update logged so far (for one session / of one variant)."""
        return [
            m["params"]["update"] for m in self.log
            if m.get("method") == "session/update"
            and (session_id is None or m["params"]["sessionId"] == session_id)
            and (kind is None or m["params"]["update"]["sessionUpdate"] == kind)
        ]


class Conformance:
    """The checks of the module docstring, for one connection.

    Feed it both directions: :meth:`client_sent` with every message the
    client writes (it tracks requests, capabilities, prompts and setups),
    :meth:`agent_sent` with every message the agent writes (it checks them).

    Attributes:
        capabilities: the client capabilities sent with ``initialize``.
        checked: how many agent messages were checked.
    """

    def __init__(self) -> None:
        self.capabilities: dict[str, Any] = {}
        self.checked = 0
        self._sent: dict[tuple[type, Any], tuple[str, Any]] = {}  # id -> (method, params)
        self._known: set[str] = set()
        self._loading: set[str] = set()
        self._prompting: dict[str, int] = {}

    def client_sent(self, message: Any) -> None:
        """Track a message the client wrote (requests only; anything else is ignored)."""
        if not isinstance(message, dict) or "method" not in message:
            return
        rid = message.get("id")
        if not isinstance(rid, (int, str)):
            return
        method, params = message["method"], message.get("params")
        self._sent[(type(rid), rid)] = (method, params)
        if not isinstance(params, dict):
            return
        if method == "initialize":
            self.capabilities = params.get("clientCapabilities") or {}
        if method == "session/prompt":
            sid = params.get("sessionId")
            self._prompting[sid] = self._prompting.get(sid, 0) + 1
        if method in SETUP_METHODS:
            self._loading.add(params.get("sessionId"))

    def agent_sent(self, msg: Message) -> None:
        """Check a message the agent wrote.

        Raises:
            AssertionError: it breaks a rule.
        """
        self.checked += 1
        assert msg.get("jsonrpc") == "2.0", msg
        assert msg.get("params", {}) is not None, f"null params: {msg}"
        if is_response(msg):
            self._check_response(msg)
        elif "id" in msg:
            self._check_request(msg)
        else:
            self._check_notification(msg)

    def _cap(self, *path: str) -> Any:
        value: Any = self.capabilities
        for key in path:
            value = value.get(key) if isinstance(value, dict) else None
        return value

    def _schema(self, type_: Any, value: Any, what: str) -> None:
        errors = _schema_errors(def_name(type_), msgspec.json.encode(value))
        assert not errors, f"{what} breaks the schema: {errors}\n{value}"

    def _check_response(self, msg: Message) -> None:
        sent = self._sent.get((type(msg["id"]), msg["id"]))
        if "error" in msg:
            self._schema(S.Error, msg["error"], "error")
            assert "result" not in msg
        if sent is None:
            assert msg["id"] is None, f"response to an id never sent: {msg}"
            return
        method, params = sent
        if isinstance(params, dict):
            sid = params.get("sessionId")
            if method in SETUP_METHODS:  # (a session loaded again is judged as known)
                self._loading.discard(sid)
                if "result" in msg:
                    self._known.add(sid)
            if method == "session/prompt":
                self._prompting[sid] -= 1
        if "error" in msg:
            return
        result = msg["result"]
        if method == "session/new":
            self._known.add(result["sessionId"])
        spec = S.METHODS.get(method)
        if spec is not None:
            self._schema(spec.result, result, f"result of {method}")
            self._check_options(result.get("configOptions") or [])
        elif method == "session/set_model":
            assert result == {}, result

    def _check_request(self, msg: Message) -> None:
        method = msg["method"]
        spec = S.CLIENT_METHODS.get(method)
        assert spec is not None and spec.result is not None, f"unknown agent request {msg}"
        assert not method.startswith("terminal/"), f"not expected: {msg}"
        if method == "elicitation/create":
            mode = msg["params"].get("mode")
            assert self._cap("elicitation", mode) is not None, f"not advertised: {msg}"
        if method == "fs/read_text_file":
            assert self._cap("fs", "readTextFile") is True, f"not advertised: {msg}"
        if method == "fs/write_text_file":
            assert self._cap("fs", "writeTextFile") is True, f"not advertised: {msg}"
        self._schema(spec.params, msg["params"], method)

    def _check_notification(self, msg: Message) -> None:
        method = msg["method"]
        if method == "$/cancel_request":
            self._schema(S.CancelRequestNotification, msg["params"], method)
            return
        if method == "elicitation/complete":
            assert self._cap("elicitation", "url") is not None, f"not advertised: {msg}"
            self._schema(S.CompleteElicitationNotification, msg["params"], method)
            return
        assert method == "session/update", f"unexpected notification {msg}"
        self._schema(S.SessionNotification, msg["params"], method)
        sid = msg["params"]["sessionId"]
        update = msg["params"]["update"]
        kind = update["sessionUpdate"]
        if kind in ("compaction_update", "compaction_summary_chunk"):
            assert self._cap("session", "compaction") is not None, f"not advertised: {msg}"
        if kind == "notice":
            assert self._cap("session", "notices") is not None, f"not advertised: {msg}"
        if kind == "config_option_update":
            self._check_options(update["configOptions"])
        if sid in self._loading and sid not in self._known:
            assert kind in TURN_VARIANTS, f"{kind} before the load/resume response: {msg}"
            return
        assert sid in self._known, f"update for a session the client does not know: {msg}"
        if kind in TURN_VARIANTS:
            busy = self._prompting.get(sid, 0) > 0 or sid in self._loading
            assert busy, f"turn update outside a turn: {msg}"

    def _check_options(self, options: list[Any]) -> None:
        if self._cap("session", "configOptions", "boolean") is None:
            for option in options:
                assert option.get("type") != "boolean", f"boolean option not advertised: {option}"


class CheckedStream(anyio.abc.ObjectStream[bytes]):
    """One end of an ACP connection whose every message goes through :class:`Conformance`.

    Args:
        inner: the end to wrap.
        agent_side: ``True`` for the agent's end (what it sends is checked),
            ``False`` for the client's end (what it receives is checked).

    Sends are serialized, so a test may :meth:`send` raw bytes of its own
    while the connection writes.

    Attributes:
        conformance: the checker.
        messages: every JSON message the agent wrote, in order.
        errors: the rules broken, in order (the stream itself never raises
            them: a test asserts ``errors == []`` at its end).
    """

    def __init__(self, inner: anyio.abc.ObjectStream[bytes], *, agent_side: bool) -> None:
        self.inner = inner
        self.agent_side = agent_side
        self.conformance = Conformance()
        self.errors: list[str] = []
        self.messages: list[Any] = []
        self._sending = anyio.Lock()

    def _observe(self, data: bytes, from_agent: bool) -> None:
        try:
            msg = msgspec.json.decode(data)
        except msgspec.DecodeError:
            return  # not JSON: the peer answers it, nothing to check
        if not from_agent:
            self.conformance.client_sent(msg)
            return
        self.messages.append(msg)
        try:
            assert b"\n" not in data.rstrip(b"\n"), f"a raw newline inside a message: {data!r}"
            assert isinstance(msg, dict), f"not a JSON-RPC message: {msg}"
            self.conformance.agent_sent(msg)
        except AssertionError as exc:
            log.error("ACP conformance: %s", exc)
            self.errors.append(str(exc))

    async def send(self, item: bytes) -> None:
        async with self._sending:
            self._observe(item, from_agent=self.agent_side)
            await self.inner.send(item)

    async def receive(self) -> bytes:
        item = await self.inner.receive()
        self._observe(item, from_agent=not self.agent_side)
        return item

    async def send_eof(self) -> None:
        await self.inner.send_eof()

    async def aclose(self) -> None:
        await self.inner.aclose()
