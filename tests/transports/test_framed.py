"""FramedStream.try_send: writing from the producer without waiting, partial writes;
FdReceiveStream.interrupt_receive."""

from __future__ import annotations

import os

import anyio
import anyio.abc
import anyio.lowlevel
import pytest
from timeouts import units

from wireproto.transports._framed import YIELD_EVERY, FramedStream
from wireproto.transports.memory import memory_pair
from wireproto.transports.stdio import FdReceiveStream, FdSendStream

pytestmark = pytest.mark.anyio


def _pipe_pair() -> tuple[FramedStream, FramedStream]:
    """(writer, reader) framed over one OS pipe."""
    r, w = os.pipe()
    return FramedStream(None, FdSendStream(w)), FramedStream(FdReceiveStream(r), None)


@pytest.mark.fastpath  # (try_send declines without the fast paths)
async def test_try_send_writes_at_once_when_the_pipe_has_room() -> None:
    writer, reader = _pipe_pair()
    async with writer, reader:
        assert writer.try_send(b'{"a":1}\n')
        assert writer.try_send(b'{"a":2}')  # the terminator is added when missing
        assert not writer.needs_flush
        assert [await reader.receive() for _ in range(2)] == [b'{"a":1}', b'{"a":2}']


@pytest.mark.fastpath  # (try_send declines without the fast paths)
async def test_a_partial_write_is_kept_and_flushed_first() -> None:
    writer, reader = _pipe_pair()
    big = b'"' + b"x" * (256 * 1024) + b'"'  # more than a pipe holds
    async with writer, reader:
        assert writer.try_send(big)  # taken: part written, the rest kept
        assert writer.needs_flush
        assert not writer.try_send(b"1")  # nothing may overtake the kept rest
        received: list[bytes] = []

        async def read_two() -> None:
            received.extend([await reader.receive(), await reader.receive()])

        async with anyio.create_task_group() as tg:
            tg.start_soon(read_two)
            await writer.send_many([])  # only flushes
            assert not writer.needs_flush
            await writer.send(b"2")
        assert received == [big, b"2"]


@pytest.mark.fastpath  # (try_send declines without the fast paths)
async def test_try_send_refuses_a_full_pipe_without_writing() -> None:
    writer, reader = _pipe_pair()
    async with writer, reader:
        chunk = b'"' + b"y" * 1000 + b'"'  # under PIPE_BUF: written whole or not at all
        sent = 0
        while writer.try_send(chunk):
            sent += 1
        assert sent > 0
        assert not writer.needs_flush  # refused, not half written
        assert not writer.try_send(chunk)
        assert [await reader.receive() for _ in range(sent)] == [chunk] * sent
        assert writer.try_send(chunk)  # room again


async def test_try_send_after_close_raises() -> None:
    writer, reader = _pipe_pair()
    async with reader:
        await writer.aclose()
        with pytest.raises(anyio.ClosedResourceError):
            writer.try_send(b"1")


class _WaitingWriter(anyio.abc.ByteSendStream):
    """A byte stream that can only write by waiting."""

    async def send(self, item: bytes) -> None:
        await anyio.lowlevel.checkpoint()

    async def aclose(self) -> None:
        await anyio.lowlevel.checkpoint()


async def test_try_send_without_a_non_blocking_writer_declines() -> None:
    # no byte stream that can write without waiting: the caller must queue
    assert not FramedStream(None, _WaitingWriter()).try_send(b"1")
    with pytest.raises(anyio.ClosedResourceError):  # no byte stream at all
        FramedStream(None, None).try_send(b"1")


async def test_memory_stream_try_send_takes_whole_messages_while_there_is_room() -> None:
    a, b = memory_pair(max_buffer=1)
    async with a, b:
        assert a.try_send(b"1\n")
        assert not a.try_send(b"2\n")  # the buffer is full
        assert not a.needs_flush
        assert await b.receive() == b"1"


async def test_interrupt_receive_ends_the_receive_in_progress_wherever_it_is() -> None:
    # The interrupt may come while the receive is still on its way to waiting
    # for bytes (its first checkpoint): it must not be lost, or the receive
    # would wait forever on a pipe whose writer stays open.
    r, w = os.pipe()
    stream = FdReceiveStream(r)
    try:
        for i in range(200):
            started = anyio.Event()
            result: list[BaseException] = []

            async def receive(started: anyio.Event, result: list[BaseException]) -> None:
                started.set()
                try:
                    await stream.receive()
                except anyio.ClosedResourceError as exc:
                    result.append(exc)

            with anyio.fail_after(units(1)):
                async with anyio.create_task_group() as tg:
                    tg.start_soon(receive, started, result)
                    await started.wait()
                    for _ in range(i % 4):
                        await anyio.lowlevel.checkpoint()
                    stream.interrupt_receive()
            assert len(result) == 1
        stream.interrupt_receive()  # no receive in progress: the next one is not affected
        os.write(w, b"x")
        with anyio.fail_after(units(1)):
            assert await stream.receive() == b"x"
    finally:
        await stream.aclose()
        os.close(w)


async def test_send_many_frames_what_lacks_a_terminator_and_joins_the_rest() -> None:
    writer, reader = _pipe_pair()
    async with writer, reader:
        await writer.send_many([b'{"a":1}\n', b'{"a":2}\n'])  # framed already: joined as is
        await writer.send_many([b'{"a":3}', b'{"a":4}\n', b'{"a":5}'])  # mixed
        await writer.send_many([bytearray(b'{"a":6}\n'), b'{"a":7}'])  # not all bytes
        expected = [b'{"a":%d}' % n for n in range(1, 8)]
        assert [await reader.receive() for _ in range(7)] == expected


async def test_receive_buffered_hands_out_a_read_in_order_and_leaves_yields_to_receive() -> None:
    writer, reader = _pipe_pair()
    sent = [b'{"n":%d}' % i for i in range(100)]
    async with writer, reader:
        await writer.send_many(sent)
        got = [await reader.receive()]  # one read brings them all
        batches = []
        while len(got) < len(sent):
            batch = reader.receive_buffered()
            if not batch:  # a yield is due: receive hands out the next one
                got.append(await reader.receive())
                continue
            batches.append(batch)
            got += batch
        assert got == sent
        # at most YIELD_EVERY messages between two trips through receive
        assert max(map(len, batches)) == YIELD_EVERY - 1
        assert reader.receive_buffered() == []  # nothing left
        await writer.send_many(sent[:3])
        assert await reader.receive() == sent[0]
        await reader.aclose()
        assert reader.receive_buffered() == []  # closed: nothing more, receive raises
        with pytest.raises(anyio.ClosedResourceError):
            await reader.receive()


async def test_receive_nowait_hands_out_one_buffered_message_or_sends_to_receive() -> None:
    writer, reader = _pipe_pair()
    async with writer, reader:
        await writer.send_many([b'{"n":1}', b'{"n":2}'])
        assert await reader.receive() == b'{"n":1}'
        assert reader.receive_nowait() == b'{"n":2}'
        with pytest.raises(anyio.WouldBlock):
            reader.receive_nowait()  # nothing buffered: receive waits for more
