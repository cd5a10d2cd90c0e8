"""Public helpers for testing code built on wireproto.

Everything here runs in memory, on any anyio backend:

* :class:`RecordingStream` wraps an ``ObjectStream[bytes]`` and records what
  is written through it, including how many messages each write carried
  (to observe the peer's writer coalescing);
* :class:`NdjsonProbe` is the far end of a newline-delimited byte stream,
  driven with raw bytes: it hands a :class:`~wireproto.rpc.peer.Peer` a stream
  that frames exactly as a stdio transport does (so oversized lines raise
  :class:`~wireproto.errors.MessageTooLarge`), and reads back the raw bytes
  the peer wrote;
* :func:`peer_pair` and :func:`probe_peer` open ready-to-use peers;
* :func:`wait_all_tasks_blocked` is anyio's, without its 0.1 s polling on asyncio;
* :class:`RecordingChannel` is a client for the protocol-neutral agent API
  (:mod:`wireproto.agent`): it records events and answers approvals, file
  operations and external tools programmatically.

Example::

    async with probe_peer(router) as (peer, probe):
        await probe.write(b'{"jsonrpc":"2.0","id":1,"method":"ping"}\\n')
        assert await probe.read_json() == {"jsonrpc": "2.0", "id": 1, "result": "pong"}
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Callable, Sequence
from contextlib import asynccontextmanager
from typing import Any

import anyio
import anyio.abc
import anyio.lowlevel
import msgspec
from anyio.streams.memory import MemoryObjectReceiveStream, MemoryObjectSendStream

from wireproto._backend import current_backend
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
from wireproto.agent.events import AgentMessageChunk, Event
from wireproto.errors import RpcError
from wireproto.jsonrpc.framing import DEFAULT_MAX_MESSAGE_BYTES, LineFramer
from wireproto.rpc.peer import Peer
from wireproto.rpc.router import Router
from wireproto.transports.memory import memory_pair

__all__ = [
    "ClientCall",
    "NdjsonProbe",
    "RecordingChannel",
    "RecordingStream",
    "peer_pair",
    "probe_peer",
    "wait_all_tasks_blocked",
]

_SPIN_ROUNDS = 1000
"""Loop turns :func:`wait_all_tasks_blocked` yields before it polls with a sleep."""


async def wait_all_tasks_blocked() -> None:
    """Return once every other task of the event loop is blocked.

    The same condition as :func:`anyio.wait_all_tasks_blocked`, which on
    asyncio sleeps 0.1 s each time it finds a task ready to run; this one
    yields a loop turn instead (falling back to anyio's polling only while
    some task stays ready for a thousand turns), so a test that waits for
    quiet does not wait 0.1 s more. On trio it is trio's own.
    """
    if current_backend() != "asyncio":
        await anyio.wait_all_tasks_blocked()
        return
    this = asyncio.current_task()
    await anyio.lowlevel.checkpoint()
    for _ in range(_SPIN_ROUNDS):
        for task in asyncio.all_tasks():
            waiter = getattr(task, "_fut_waiter", None)
            if task is not this and (waiter is None or waiter.done()):
                await asyncio.sleep(0)
                break
        else:
            return
    await anyio.wait_all_tasks_blocked()


class RecordingStream(anyio.abc.ObjectStream[bytes]):
    """An ``ObjectStream[bytes]`` that records every write, then forwards it.

    Args:
        inner: the stream written to and read from.

    Attributes:
        sent: every message written, in order.
        batches: the number of messages of each write operation (``1`` for
            :meth:`send`, ``len(items)`` for :meth:`send_many`).
    """

    def __init__(self, inner: anyio.abc.ObjectStream[bytes]) -> None:
        self.inner = inner
        self.sent: list[bytes] = []
        self.batches: list[int] = []

    async def send(self, item: bytes) -> None:
        """Record and forward one message."""
        self.sent.append(item)
        self.batches.append(1)
        await self.inner.send(item)

    async def send_many(self, items: Sequence[bytes]) -> None:
        """Record and forward several messages as one write."""
        self.sent.extend(items)
        self.batches.append(len(items))
        for item in items:
            await self.inner.send(item)

    async def receive(self) -> bytes:
        """Receive from the wrapped stream."""
        return await self.inner.receive()

    async def send_eof(self) -> None:
        """Forward end-of-file to the wrapped stream."""
        await self.inner.send_eof()

    async def aclose(self) -> None:
        """Close the wrapped stream."""
        await self.inner.aclose()


class _FramedEnd(anyio.abc.ObjectStream[bytes]):
    """The peer's side of an :class:`NdjsonProbe`: frames raw chunks into messages."""

    def __init__(
        self,
        chunks: MemoryObjectReceiveStream[bytes],
        out: MemoryObjectSendStream[bytes],
        max_bytes: int,
    ) -> None:
        self._chunks = chunks
        self._out = out
        self.framer = LineFramer(max_bytes)
        self._eof = False

    async def receive(self) -> bytes:
        while True:
            message = self.framer.next_message()  # may raise MessageTooLarge
            if message is not None:
                return message
            if self._eof:
                raise anyio.EndOfStream
            try:
                self.framer.feed(await self._chunks.receive())
            except anyio.EndOfStream:
                self._eof = True
                self.framer.feed(b"\n")  # an unterminated last line counts, as on stdio

    async def send(self, item: bytes) -> None:
        await self._out.send(item)

    async def send_eof(self) -> None:
        self._out.close()

    async def aclose(self) -> None:
        self._out.close()
        self._chunks.close()


class NdjsonProbe:
    """The far end of a newline-delimited JSON byte stream, driven with raw bytes.

    Give :attr:`stream` to the code under test (usually a
    :class:`~wireproto.rpc.peer.Peer`); then :meth:`write` raw bytes in any
    chunking and :meth:`read` the raw messages it answers with.

    Args:
        max_bytes: the framer's maximum message size.
        buffer: chunks / messages buffered per direction before a writer waits.
    """

    def __init__(self, *, max_bytes: int = DEFAULT_MAX_MESSAGE_BYTES, buffer: int = 64) -> None:
        self._chunks_in, chunks_out = anyio.create_memory_object_stream[bytes](buffer)
        out_in, self._answers = anyio.create_memory_object_stream[bytes](buffer)
        self._end = _FramedEnd(chunks_out, out_in, max_bytes)

    @property
    def stream(self) -> anyio.abc.ObjectStream[bytes]:
        """The stream for the code under test (whole messages in, bytes out)."""
        return self._end

    @property
    def framer(self) -> LineFramer:
        """The framer splitting what :meth:`write` sends (to inspect buffering)."""
        return self._end.framer

    async def write(self, data: bytes) -> None:
        """Send raw bytes (any part of a line, or several lines)."""
        await self._chunks_in.send(data)

    async def write_json(self, message: Any) -> None:
        """Send one value as a compact JSON line."""
        await self.write(msgspec.json.encode(message) + b"\n")

    def write_eof(self) -> None:
        """End the input: the reader under test sees end-of-stream."""
        self._chunks_in.close()

    async def read(self) -> bytes:
        """Return the next raw message written by the code under test.

        Raises:
            anyio.EndOfStream: the code under test closed its side.
        """
        return await self._answers.receive()

    async def read_json(self) -> Any:
        """Return the next message written by the code under test, decoded."""
        return msgspec.json.decode(await self.read())

    def read_nowait(self) -> bytes:
        """Return an already written message.

        Raises:
            anyio.WouldBlock: nothing is waiting.
        """
        return self._answers.receive_nowait()

    async def assert_silent(self) -> None:
        """Let every task run until blocked; fail if anything was written."""
        await wait_all_tasks_blocked()
        try:
            extra = self._answers.receive_nowait()
        except (anyio.WouldBlock, anyio.EndOfStream):
            return
        raise AssertionError(f"unexpected message: {extra!r}")

    async def aclose(self) -> None:
        """Close both directions of the probe (and the stream's ends)."""
        self._chunks_in.close()
        self._answers.close()
        await self._end.aclose()


@asynccontextmanager
async def peer_pair(
    a_router: Router | None = None,
    b_router: Router | None = None,
    *,
    max_buffer: int = 64,
    **options: Any,
) -> AsyncIterator[tuple[Peer, Peer]]:
    """Open two peers connected back to back in memory.

    Args:
        a_router: the handlers of side ``a``.
        b_router: the handlers of side ``b``.
        max_buffer: messages buffered per direction of the memory transport.
        options: keyword arguments for both :class:`~wireproto.rpc.peer.Peer`\\ s.

    Yields:
        ``(a, b)``, both running; both are closed on exit.
    """
    sa, sb = memory_pair(max_buffer)
    async with Peer(sa, a_router, name="a", **options) as a, Peer(
        sb, b_router, name="b", **options
    ) as b:
        yield a, b


@asynccontextmanager
async def probe_peer(
    router: Router | None = None,
    *,
    max_bytes: int = DEFAULT_MAX_MESSAGE_BYTES,
    **options: Any,
) -> AsyncIterator[tuple[Peer, NdjsonProbe]]:
    """Open a peer whose other end is an :class:`NdjsonProbe`.

    Yields:
        ``(peer, probe)``; the peer is closed, then the probe, on exit.
    """
    probe = NdjsonProbe(max_bytes=max_bytes)
    try:
        options.setdefault("name", "peer")
        async with Peer(probe.stream, router, **options) as peer:
            yield peer, probe
    finally:
        await probe.aclose()


# ------------------------------------------------------------------ agent API


class ClientCall:
    """One request an agent made through a :class:`RecordingChannel`.

    Attributes:
        method: the :class:`~wireproto.agent.api.Channel` method name
            (``request_approval``, ``ask``, ``read_text_file``,
            ``write_text_file``, ``call_tool``, ``run_hook``).
        args: its arguments after the session.
        state: ``pending``, then ``answered``, ``failed`` or ``cancelled``
            (the caller was cancelled while the call was pending).
    """

    def __init__(self, method: str, args: tuple[Any, ...]) -> None:
        self.method = method
        self.args = args
        self.state = "pending"

    def __repr__(self) -> str:
        return f"ClientCall({self.method!r}, state={self.state!r})"


class RecordingChannel:
    """An in-memory :class:`~wireproto.agent.api.Channel` for driving agents in tests.

    It records every event sent (with the session id and the replay flag)
    and answers the agent's requests programmatically: approvals with
    :attr:`decision`, file operations from the in-memory :attr:`files`
    (``RpcError(-32002, "Resource not found")`` for a missing file), external
    tools with the callables of :attr:`tools`, questions with
    :attr:`answers`. A method named in :attr:`hold` never answers: the call
    stays pending until the caller is cancelled (its state then reads
    ``cancelled``). :meth:`pause` makes :meth:`send` wait (a slow client,
    to observe backpressure) until :meth:`resume`.

    Args:
        capabilities: what the simulated client supports.
        decision: the answer to every approval request.
        files: the client's files by absolute path.
        tools: external tool implementations by name.

    Example::

        channel = RecordingChannel(ClientCapabilities(read_text_file=True))
        session = await runtime.new_session(channel, str(tmp_path))
        await runtime.prompt(session, [Text("hello")])
        assert channel.text(session.id) == "You said: hello"
    """

    def __init__(
        self,
        capabilities: ClientCapabilities | None = None,
        *,
        decision: Decision = Decision.ALLOW_ONCE,
        files: dict[str, str] | None = None,
        tools: dict[str, Callable[[Any], ToolOutcome]] | None = None,
    ) -> None:
        self.capabilities = capabilities if capabilities is not None else ClientCapabilities()
        self.decision = decision
        self.feedback = ""
        self.answers: list[str] = []
        self.files: dict[str, str] = dict(files or {})
        self.tools: dict[str, Callable[[Any], ToolOutcome]] = dict(tools or {})
        self.hold: set[str] = set()
        self.records: list[tuple[str, Event, bool]] = []
        self.calls: list[ClientCall] = []
        self.blocked_sends = 0
        self._paused = False
        self._changed: anyio.Event | None = None

    # ------------------------------------------------------------ inspecting

    def events(self, session_id: str | None = None, *, replay: bool = False) -> list[Event]:
        """The events sent (live ones, or replayed ones with ``replay``)."""
        return [
            event for sid, event, replayed in self.records
            if replayed is replay and (session_id is None or sid == session_id)
        ]

    def text(self, session_id: str | None = None, *, replay: bool = False) -> str:
        """The concatenated agent message text sent."""
        return "".join(
            e.text for e in self.events(session_id, replay=replay)
            if isinstance(e, AgentMessageChunk)
        )

    def clear(self) -> None:
        """Forget the recorded events and calls."""
        self.records.clear()
        self.calls.clear()

    async def wait_until(self, predicate: Callable[[], bool]) -> None:
        """Wait until ``predicate()`` holds, re-checking after every event or call."""
        while not predicate():
            if self._changed is None:
                self._changed = anyio.Event()
            await self._changed.wait()

    async def wait_for_call(self, method: str) -> ClientCall:
        """Wait for a pending call of ``method`` and return it."""

        def pending() -> ClientCall | None:
            return next(
                (c for c in self.calls if c.method == method and c.state == "pending"), None
            )

        await self.wait_until(lambda: pending() is not None)
        call = pending()
        assert call is not None
        return call

    def pause(self) -> None:
        """Make :meth:`send` wait until :meth:`resume` (:attr:`blocked_sends` counts waiters)."""
        self._paused = True

    def resume(self) -> None:
        """Let waiting and later sends through."""
        self._paused = False
        self._notify()

    def _notify(self) -> None:
        if self._changed is not None:
            self._changed.set()
            self._changed = None

    async def _call(self, method: str, args: tuple[Any, ...], answer: Callable[[], Any]) -> Any:
        call = ClientCall(method, args)
        self.calls.append(call)
        self._notify()
        try:
            await anyio.lowlevel.checkpoint()
            if method in self.hold:
                await anyio.sleep_forever()
            result = answer()
        except anyio.get_cancelled_exc_class():
            call.state = "cancelled"
            raise
        except BaseException:
            call.state = "failed"
            raise
        finally:
            self._notify()
        call.state = "answered"
        return result

    # --------------------------------------------------------------- Channel

    async def send(self, session: Session, event: Event, *, replay: bool = False) -> None:
        """Record ``event`` (after waiting while paused)."""
        if self._paused:
            self.blocked_sends += 1
            self._notify()
            try:
                await self.wait_until(lambda: not self._paused)
            finally:
                self.blocked_sends -= 1
                self._notify()
        self.records.append((session.id, event, replay))
        self._notify()
        await anyio.lowlevel.checkpoint()

    async def request_approval(self, session: Session, request: ApprovalRequest) -> Approval:
        """Answer with :attr:`decision` and :attr:`feedback`."""
        answer: Approval = await self._call(
            "request_approval", (request,), lambda: Approval(self.decision, self.feedback)
        )
        return answer

    async def ask(self, session: Session, tool_call_id: str, question: Question) -> list[str]:
        """Answer with :attr:`answers`."""
        answer: list[str] = await self._call(
            "ask", (tool_call_id, question), lambda: list(self.answers)
        )
        return answer

    def _read(self, path: str) -> str:
        if path not in self.files:
            raise RpcError(-32002, "Resource not found")
        return self.files[path]

    async def read_text_file(self, session: Session, path: str) -> str:
        """Read from :attr:`files`."""
        text: str = await self._call("read_text_file", (path,), lambda: self._read(path))
        return text

    async def write_text_file(self, session: Session, path: str, content: str) -> None:
        """Write into :attr:`files`."""
        await self._call(
            "write_text_file", (path, content), lambda: self.files.__setitem__(path, content)
        )

    async def call_tool(
        self, session: Session, call_id: str, tool: ExternalTool, arguments: Any
    ) -> ToolOutcome:
        """Run the tool from :attr:`tools` (an error outcome when it has none)."""

        def run() -> ToolOutcome:
            impl = self.tools.get(tool.name)
            if impl is None:
                return ToolOutcome(True, "", f"no tool {tool.name}")
            return impl(arguments)

        outcome: ToolOutcome = await self._call("call_tool", (call_id, tool, arguments), run)
        return outcome

    async def run_hook(
        self, session: Session, event: str, target: str, input: dict[str, Any]
    ) -> tuple[bool, str]:
        """Allow everything."""
        result: tuple[bool, str] = await self._call(
            "run_hook", (event, target, input), lambda: (True, "")
        )
        return result
