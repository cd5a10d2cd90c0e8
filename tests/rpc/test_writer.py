"""The peer's Writer: order, back-to-back items and partial direct writes.

A fake stream that, at random, refuses a direct write, takes it whole, or
takes only part of it (keeping the rest, as a full pipe makes the framed
stream do) is driven by several producers mixing ``send`` (queued),
``send_soon`` (direct when idle) and list items. Whatever happens, every
producer's messages come out whole, in its order, and a list item's messages
stay back to back.
"""

from __future__ import annotations

import random
from collections.abc import Sequence

import anyio
import anyio.abc
import anyio.lowlevel
import pytest

from wireproto.errors import ConnectionClosed
from wireproto.rpc._waiter import waiter_factory
from wireproto.rpc._writer import Writer
from wireproto.testing import wait_all_tasks_blocked

pytestmark = pytest.mark.anyio


class _FlakyPipe(anyio.abc.ObjectSendStream[bytes]):
    """Records a byte stream; direct writes are refused, whole or partial at random."""

    def __init__(self, rng: random.Random) -> None:
        self.rng = rng
        self.data = bytearray()
        self.rest = b""  # what a partial direct write left to write first

    def try_send(self, item: bytes) -> bool:
        if self.rest:
            return False
        roll = self.rng.random()
        if roll < 0.3:
            return False
        if roll < 0.5 and len(item) > 1:
            cut = self.rng.randrange(1, len(item))
            self.data += item[:cut]
            self.rest = item[cut:]
            return True
        self.data += item
        return True

    @property
    def needs_flush(self) -> bool:
        return bool(self.rest)

    async def send(self, item: bytes) -> None:
        await self.send_many([item])

    async def send_many(self, items: Sequence[bytes]) -> None:
        await anyio.lowlevel.checkpoint()  # a write that waits
        self.data += self.rest + b"".join(items)
        self.rest = b""

    async def send_eof(self) -> None:
        pass

    async def aclose(self) -> None:
        pass


@pytest.mark.parametrize("seed", range(8))
async def test_random_direct_partial_and_queued_writes_keep_order(seed: int) -> None:
    rng = random.Random(seed)
    pipe = _FlakyPipe(rng)
    writer = Writer(pipe, 8, lambda exc: None, "t")
    async with anyio.create_task_group() as tg:
        writer.start(tg, waiter_factory())

        async def produce(p: int) -> None:
            for i in range(60):
                line = b"p%d-%d\n" % (p, i)
                kind = rng.random()
                if kind < 0.4:
                    await writer.send(line)
                elif kind < 0.8:
                    await writer.send_soon(line)
                else:  # an answer and its follow-ups, written back to back
                    await writer.send_soon([line, b"p%d-%d-a\n" % (p, i), b"p%d-%d-b\n" % (p, i)])
                if rng.random() < 0.3:
                    await anyio.lowlevel.checkpoint()

        async with anyio.create_task_group() as producers:
            for p in range(4):
                producers.start_soon(produce, p)
        writer.close()
        await writer.wait_done()
    assert not pipe.rest
    lines = bytes(pipe.data).split(b"\n")
    assert lines.pop() == b""
    for p in range(4):
        mine = [line for line in lines if line.startswith(b"p%d-" % p)]
        expected = []
        for i in range(60):
            expected.append(b"p%d-%d" % (p, i))
            if b"p%d-%d-a" % (p, i) in mine:
                expected += [b"p%d-%d-a" % (p, i), b"p%d-%d-b" % (p, i)]
        assert mine == expected
    for i, line in enumerate(lines):  # follow-ups come right after their answer
        if line.endswith(b"-a"):
            assert lines[i - 1] == line[:-2] and lines[i + 1] == line[:-2] + b"-b"


async def test_producers_get_connection_closed_once_the_writer_is_closed() -> None:
    pipe = _FlakyPipe(random.Random(0))
    writer = Writer(pipe, 2, lambda exc: None, "t")
    async with anyio.create_task_group() as tg:
        writer.start(tg, waiter_factory())
        writer.close()
        with pytest.raises(ConnectionClosed):
            await writer.send(b"x\n")
        with pytest.raises(ConnectionClosed):
            await writer.send_soon(b"y\n")
        assert not writer.send_nowait(b"z\n")
        await writer.wait_done()
    assert pipe.data == b""


class _HalfPipe(_FlakyPipe):
    """Takes the first half of every direct write."""

    def try_send(self, item: bytes) -> bool:
        if self.rest:
            return False
        half = len(item) // 2
        self.data += item[:half]
        self.rest = item[half:]
        return True


@pytest.mark.fastpath
async def test_the_rest_of_a_partial_direct_write_is_flushed_without_further_messages() -> None:
    pipe = _HalfPipe(random.Random(0))
    writer = Writer(pipe, 4, lambda exc: None, "t")
    async with anyio.create_task_group() as tg:
        writer.start(tg, waiter_factory())
        await wait_all_tasks_blocked()  # the writer is idle: direct writes allowed
        await writer.send_soon(b'{"id":1}\n')
        assert pipe.data == b'{"id'  # half now, from the producer itself
        await wait_all_tasks_blocked()
        assert pipe.data == b'{"id":1}\n' and not pipe.rest  # the writer wrote the rest
        tg.cancel_scope.cancel()


@pytest.mark.parametrize("seed", range(4))
async def test_before_write_runs_before_any_bytes_leave(seed: int) -> None:
    """Whatever path a message takes, ``before_write`` has seen it before the stream does."""
    pipe = _FlakyPipe(random.Random(seed))
    announced: list[bytes] = []  # messages handed to the writer so far
    persisted: list[bytes] = []  # what before_write "saved"
    checked = []

    def before_write() -> None:
        checked.append(len(pipe.data))
        persisted[:] = announced

    writer = Writer(pipe, 4, lambda exc: None, "t", before_write=before_write)
    rng = random.Random(seed)
    async with anyio.create_task_group() as tg:
        writer.start(tg, waiter_factory())
        for i in range(80):
            line = b"m%d\n" % i
            announced.append(line)
            if rng.random() < 0.5:
                await writer.send(line)
            else:
                await writer.send_soon(line)
            written = bytes(pipe.data).count(b"\n") + (1 if pipe.rest else 0)
            assert written <= len(persisted)  # nothing out that was not persisted first
            if rng.random() < 0.3:
                await anyio.lowlevel.checkpoint()
        writer.close()
        await writer.wait_done()
    assert bytes(pipe.data) == b"".join(announced) and checked


@pytest.mark.parametrize("seed", range(3))
async def test_a_producer_records_what_send_queued_before_the_writer_writes_it(seed: int) -> None:
    """The agent runtime records an event once ``send`` returns: ``send`` never lets the
    writer run between queuing a message and returning, so ``before_write`` sees it first."""
    pipe = _FlakyPipe(random.Random(seed))
    recorded: list[bytes] = []  # what the producer recorded after each send returned
    persisted: list[bytes] = []  # what before_write "saved"

    def before_write() -> None:
        persisted[:] = recorded

    writer = Writer(pipe, 8, lambda exc: None, "t", before_write=before_write)
    async with anyio.create_task_group() as tg:
        writer.start(tg, waiter_factory())
        for i in range(100):
            line = b"m%d\n" % i
            await writer.send(line)  # yields now and then, waits when the queue is full
            recorded.append(line)
            written = bytes(pipe.data).count(b"\n") + (1 if pipe.rest else 0)
            assert written <= len(persisted), i  # nothing out that was not recorded first
        writer.close()
        await writer.wait_done()
    assert bytes(pipe.data) == b"".join(recorded)


class _GatedPipe(anyio.abc.ObjectSendStream[bytes]):
    """Writes wait for ``gate``: what is queued meanwhile stays counted."""

    def __init__(self) -> None:
        self.gate = anyio.Event()
        self.writes: list[list[bytes]] = []

    async def send(self, item: bytes) -> None:
        await self.send_many([item])

    async def send_many(self, items: Sequence[bytes]) -> None:
        await self.gate.wait()
        self.writes.append(list(items))

    async def send_eof(self) -> None:
        pass

    async def aclose(self) -> None:
        pass


async def test_peak_bytes_is_the_most_ever_held_at_once() -> None:
    """Kept per batch, not per message: still the true maximum, and kept after a drain."""
    pipe = _GatedPipe()
    writer = Writer(pipe, 64, lambda exc: None, "t")
    async with anyio.create_task_group() as tg:
        writer.start(tg, waiter_factory())
        assert writer.put(b"a" * 10)
        await wait_all_tasks_blocked()  # the task writes it: waits at the gate
        for n in (20, 30):
            assert writer.put(b"b" * n)
        assert writer.put_burst(b"c" * 5)
        assert (writer.queued_bytes, writer.peak_bytes) == (65, 65)
        pipe.gate.set()
        await wait_all_tasks_blocked()
        assert (writer.queued_bytes, writer.peak_bytes) == (0, 65)
        assert pipe.writes == [[b"a" * 10], [b"b" * 20, b"b" * 30, b"c" * 5]]
        assert writer.put(b"d" * 7)  # (less than the peak: the peak stays)
        await wait_all_tasks_blocked()
        assert (writer.queued_bytes, writer.peak_bytes) == (0, 65)
        pipe.gate = anyio.Event()
        for _ in range(10):
            assert writer.put(b"e" * 10)
        assert writer.peak_bytes == 100  # (while the first of them is being written)
        writer.discard()  # dropped: the peak is kept
        assert (writer.queued_bytes, writer.peak_bytes) == (0, 100)
        pipe.gate.set()
