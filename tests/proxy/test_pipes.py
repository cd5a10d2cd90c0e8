"""The relay over pipes: bytes pass unchanged however they are chunked, observers see
each message once and in order, and the relay ends like ``relay_messages``."""

from __future__ import annotations

import io
import os
import select
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass

import anyio
import pytest
from timeouts import units

from wireproto.proxy import Direction, RelayedMessage, TraceWriter, relay_messages, relay_pipes
from wireproto.transports.memory import memory_pair
from wireproto.transports.stdio import FdReceiveStream, FdSendStream, StdioStream

pytestmark = pytest.mark.anyio


@dataclass
class Ends:
    """The raw pipe ends around the relay: what the client and the agent hold."""

    client_w: int  # the client writes here
    client_r: int  # and reads the agent's answers here
    agent_r: int  # the agent reads what the client sent here
    agent_w: int  # and writes its answers here

    def close(self, *names: str) -> None:
        for name in names:
            fd = getattr(self, name)
            if fd >= 0:
                os.close(fd)
                setattr(self, name, -1)


async def _read(fd: int, size: int) -> bytes:
    """Read exactly ``size`` bytes (fewer at the end of the pipe)."""
    got = b""
    while len(got) < size:
        chunk = await anyio.to_thread.run_sync(os.read, fd, size - len(got))
        if not chunk:
            break
        got += chunk
    return got


async def _taken(stream: StdioStream) -> None:
    """Wait until the relay has read all that was written to ``stream``'s pipe.

    What is written next then comes in a read of its own, whatever the
    scheduler does to the relay's thread (a pause of the writer would not
    promise that on a loaded machine).
    """
    rx = stream.byte_streams[0]
    assert isinstance(rx, FdReceiveStream)
    with anyio.fail_after(units(2)):
        while select.select([rx.fd], [], [], 0)[0]:  # noqa: ASYNC110 (a read is no event)
            await anyio.sleep(0.001)


@asynccontextmanager
async def _pipes() -> AsyncIterator[tuple[StdioStream, StdioStream, Ends]]:
    """A front and a back stream over pipes, as ``wireproto proxy`` has on stdio."""
    front_r, client_w = os.pipe()
    client_r, front_w = os.pipe()
    agent_r, back_w = os.pipe()
    back_r, agent_w = os.pipe()
    front = StdioStream(FdReceiveStream(front_r), FdSendStream(front_w))
    back = StdioStream(FdReceiveStream(back_r), FdSendStream(back_w))
    ends = Ends(client_w, client_r, agent_r, agent_w)
    try:
        yield front, back, ends
    finally:
        await front.aclose()
        await back.aclose()
        ends.close("client_w", "client_r", "agent_r", "agent_w")


class Batches:
    """An observer taking batches, as a trace writer does."""

    def __init__(self) -> None:
        self.seen: list[tuple[str, list[bytes]]] = []

    def __call__(self, message: RelayedMessage) -> None:
        raise AssertionError("a batch observer is shown batches")

    def batch(self, direction: str, messages: list[bytes], at: float) -> None:
        self.seen.append((direction, list(messages)))


async def test_chunks_pass_unchanged_and_observers_see_each_message_in_order() -> None:
    seen: list[RelayedMessage] = []
    batches = Batches()
    sink = io.BytesIO()
    sent = [b'{"id":1}\n', b'{"id":2,"x" : "spaces kept"}\r\n\n  \n[3', b']\n', b'{"id"',
            b':4}\n{"id":5}\n']
    async with _pipes() as (front, back, ends), anyio.create_task_group() as tg:
        tg.start_soon(relay_pipes, front, back, [seen.append, batches, TraceWriter(sink)])
        for chunk in sent:
            os.write(ends.client_w, chunk)
            await _taken(front)  # (one read per chunk)
        expected = b"".join(sent)
        assert await _read(ends.agent_r, len(expected)) == expected  # every byte, unchanged
        os.write(ends.agent_w, b"not json\n")
        assert await _read(ends.client_r, 9) == b"not json\n"
        ends.close("agent_w")  # the agent's end ends the relay
    messages = [(m.direction, m.data) for m in seen]
    assert messages == [
        (Direction.TO_AGENT, b'{"id":1}'), (Direction.TO_AGENT, b'{"id":2,"x" : "spaces kept"}'),
        (Direction.TO_AGENT, b"[3]"), (Direction.TO_AGENT, b'{"id":4}'),
        (Direction.TO_AGENT, b'{"id":5}'), (Direction.TO_CLIENT, b"not json"),
    ]
    assert [m for _, ms in batches.seen for m in ms] == [data for _, data in messages]
    assert ("send", [b'{"id":4}', b'{"id":5}']) in batches.seen  # read together: one batch
    assert [m.time for m in seen] == sorted(m.time for m in seen)
    lines = sink.getvalue().splitlines()
    assert [line.split(b'"dir":', 1)[1] for line in lines] == [
        b'"send","msg":{"id":1}}', b'"send","msg":{"id":2,"x" : "spaces kept"}}',
        b'"send","msg":[3]}', b'"send","msg":{"id":4}}', b'"send","msg":{"id":5}}',
        b'"recv","text":"not json"}',
    ]


async def test_the_clients_end_closes_the_agents_input_and_the_agent_still_answers() -> None:
    async with _pipes() as (front, back, ends):
        with anyio.fail_after(10):
            async with anyio.create_task_group() as tg:
                tg.start_soon(relay_pipes, front, back)
                os.write(ends.client_w, b'{"id":1}\n{"unterminated":true}')
                ends.close("client_w")
                # the last line comes whole, with a newline, then the end
                assert await _read(ends.agent_r, 1000) == b'{"id":1}\n{"unterminated":true}\n'
                os.write(ends.agent_w, b'{"id":1,"result":{}}\n')
                assert await _read(ends.client_r, 21) == b'{"id":1,"result":{}}\n'
                ends.close("agent_w")  # the agent's end: the relay returns


async def test_stop_ends_the_agents_input_while_the_client_is_still_there() -> None:
    stop = anyio.Event()
    async with _pipes() as (front, back, ends):
        with anyio.fail_after(10):
            async with anyio.create_task_group() as tg:
                tg.start_soon(lambda: relay_pipes(front, back, stop=stop))
                os.write(ends.client_w, b'{"id":1}\n')
                assert await _read(ends.agent_r, 9) == b'{"id":1}\n'
                stop.set()
                assert await _read(ends.agent_r, 1) == b""  # the agent sees its input end
                os.write(ends.agent_w, b'{"bye":1}\n')  # and may still answer
                assert await _read(ends.client_r, 10) == b'{"bye":1}\n'
                ends.close("agent_w")
        assert ends.client_w >= 0  # the client never closed anything


async def test_cancelling_the_relay_stops_both_threads_even_behind_a_full_pipe() -> None:
    async with _pipes() as (front, back, ends):
        with anyio.fail_after(10):
            with anyio.CancelScope() as scope:
                async with anyio.create_task_group() as tg:
                    tg.start_soon(relay_pipes, front, back)
                    big = b'{"x":"' + b"y" * 200_000 + b'"}\n'  # the client reads none of it
                    await anyio.to_thread.run_sync(os.write, ends.agent_w, big)
                    await anyio.sleep(0.1)
                    scope.cancel()
        assert scope.cancelled_caught


async def test_a_line_over_the_limit_is_dropped_and_the_next_one_passes(
    caplog: pytest.LogCaptureFixture,
) -> None:
    seen: list[RelayedMessage] = []
    async with _pipes() as (front, back, ends), anyio.create_task_group() as tg:
        tg.start_soon(lambda: relay_pipes(front, back, [seen.append], max_bytes=100))
        os.write(ends.client_w, b'{"big":"' + b"z" * 150)
        await _taken(front)  # (the start of the long line is read alone)
        os.write(ends.client_w, b'"}\n{"ok":1}\n' + b"w" * 120 + b"\n[2]\n")
        assert await _read(ends.agent_r, 13) == b'{"ok":1}\n[2]\n'
        ends.close("agent_w")
    assert [m.data for m in seen] == [b'{"ok":1}', b"[2]"]
    assert caplog.text.count("dropped: larger than 100 bytes") == 2


async def test_whole_message_lines_read_together_are_one_batch_and_pass_unchanged() -> None:
    batches = Batches()
    sink = io.BytesIO()
    chunks = [b'{"id":1}\n[2]\n{"id":3}\n',  # whole lines starting like messages
              b'{"a":1}\n{"b":2}\n' + b'{"c":"' + b"x" * 60 + b'"}\n',  # (no line over 70)
              b'{"\xc3\xa9":"\xc3\xa9"}\n{"bad":"\xff"}\n']  # the second not UTF-8
    async with _pipes() as (front, back, ends), anyio.create_task_group() as tg:
        tg.start_soon(lambda: relay_pipes(front, back, [batches, TraceWriter(sink)],
                                          max_bytes=70))
        for chunk in chunks:
            os.write(ends.client_w, chunk)
            assert await _read(ends.agent_r, len(chunk)) == chunk  # unchanged, in one piece
        ends.close("agent_w")
    assert batches.seen == [("send", chunk[:-1].split(b"\n")) for chunk in chunks]
    lines = sink.getvalue().splitlines()
    assert len(lines) == 8
    assert lines[6].endswith(b'"msg":{"\xc3\xa9":"\xc3\xa9"}}')
    assert lines[7].endswith(b'"text":"{\\"bad\\":\\"\xef\xbf\xbd\\"}"}')  # quoted, replaced


async def test_only_streams_over_descriptors_are_pumped_by_threads() -> None:
    client_end, front = memory_pair()
    async with _pipes() as (_, back, _ends), client_end, front:
        with pytest.raises(TypeError, match="stdio or subprocess stream"):
            await relay_pipes(front, back)


async def test_relay_messages_shows_a_batch_observer_each_message_as_a_batch() -> None:
    client_end, front = memory_pair()
    back, agent_end = memory_pair()
    batches = Batches()
    stop = anyio.Event()
    async with client_end, front, back, agent_end, anyio.create_task_group() as tg:
        tg.start_soon(lambda: relay_messages(front, back, [batches], stop=stop))
        await client_end.send(b'{"id":1}')
        assert await agent_end.receive() == b'{"id":1}'
        stop.set()  # as if the client had ended: the agent's input ends
        with pytest.raises(anyio.EndOfStream):
            await agent_end.receive()
        await agent_end.send(b'{"id":1,"result":{}}')
        assert await client_end.receive() == b'{"id":1,"result":{}}'
        await agent_end.aclose()
    assert batches.seen == [("send", [b'{"id":1}']), ("recv", [b'{"id":1,"result":{}}'])]


async def test_relay_messages_shows_what_one_read_brought_as_one_batch() -> None:
    client_end, front = memory_pair()
    batches = Batches()
    async with _pipes() as (_, back, ends), client_end, front:
        with anyio.fail_after(10):
            async with anyio.create_task_group() as tg:
                tg.start_soon(relay_messages, front, back, [batches])
                os.write(ends.agent_w, b'{"n":1}\n{"n":2}\n')  # one write, one read
                assert [await client_end.receive() for _ in range(2)] == [b'{"n":1}', b'{"n":2}']
                ends.close("agent_w")
    assert batches.seen == [("recv", [b'{"n":1}', b'{"n":2}'])]


def _fill(fd: int) -> int:
    """Fill the pipe behind the non-blocking ``fd``; return how many bytes it took."""
    filled = 0
    while True:
        try:
            filled += os.write(fd, b" " * 4096)
        except BlockingIOError:
            return filled


@pytest.mark.parametrize("lines", [200, 0], ids=["many-lines", "an-unterminated-line-only"])
async def test_a_client_reading_late_gets_every_byte_and_the_trace_every_message(
    lines: int,
) -> None:
    """The pipe to the client is full (its reader starts late): the pump waits for room."""
    sent = b"".join(b'{"n":%d,"pad":"%s"}\n' % (n, b"p" * 1000) for n in range(lines))
    sent += b'{"last":true}'  # unterminated: forwarded, with a newline, at the agent's end
    sink = io.BytesIO()
    got: list[bytes] = []
    async with _pipes() as (front, back, ends):
        tx = front.byte_streams[1]
        assert isinstance(tx, FdSendStream)
        filled = _fill(tx.fd)  # the client has not read yet: every write finds it full

        def agent() -> None:
            try:
                os.write(ends.agent_w, sent)
            except BrokenPipeError:  # (the relay ended before reading it all)
                pass
            finally:
                ends.close("agent_w")  # the agent's end ends the relay

        async def client() -> None:
            await anyio.sleep(0.3)  # (starts late: the relay has met the full pipe)
            got.append(await _read(ends.client_r, filled + len(sent) + 2))  # up to the end

        with anyio.fail_after(20):
            async with anyio.create_task_group() as tg:
                tg.start_soon(anyio.to_thread.run_sync, agent)
                tg.start_soon(client)
                await relay_pipes(front, back, [TraceWriter(sink)])
                await front.aclose()  # the client sees the end after what was relayed
                await back.aclose()
    assert got == [b" " * filled + sent + b"\n"]  # every byte, in order
    messages = [line.split(b'"msg":', 1)[1][:-1] for line in sink.getvalue().splitlines()]
    assert messages == sent.split(b"\n")


async def test_a_stream_read_from_is_refused_or_relayed_whole(anyio_backend_name: str) -> None:
    """On asyncio a stream read from is read ahead by the event loop: relaying it from
    threads would lose what the loop takes, so it is refused; on trio nothing is held."""
    sent = [b'{"n":%d}\n' % n for n in range(20)]  # (the 20 of which asyncio lost 8)
    async with _pipes() as (front, back, ends):
        os.write(ends.client_w, b'{"first":1}\n')
        assert await front.receive() == b'{"first":1}'
        with anyio.fail_after(10):
            if anyio_backend_name == "asyncio":
                with pytest.raises(ValueError, match="the client stream was read from"):
                    await relay_pipes(front, back)
                return
            async with anyio.create_task_group() as tg:
                tg.start_soon(relay_pipes, front, back)
                expected = b"".join(sent)
                os.write(ends.client_w, expected)
                assert await _read(ends.agent_r, len(expected)) == expected
                ends.close("agent_w")


async def test_a_stream_holding_a_message_read_with_another_is_refused() -> None:
    async with _pipes() as (front, back, ends):
        os.write(ends.client_w, b'{"n":1}\n{"n":2}\n')  # one read brings both
        assert await front.receive() == b'{"n":1}'
        with pytest.raises(ValueError, match="the client stream was read from"):
            await relay_pipes(front, back)
