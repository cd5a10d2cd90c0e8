"""One suite over every transport: memory, stdio, subprocess and websocket.

Each case talks to the echo peer of ``tests/helpers/echo.py`` (see
``conftest.py``), so the same assertions hold for every transport.
"""

from __future__ import annotations

import itertools
import logging
from collections.abc import Callable, Sequence
from contextlib import AbstractAsyncContextManager

import anyio
import anyio.abc
import pytest
from timeouts import units

from wireproto.errors import MessageTooLarge
from wireproto.rpc.peer import SupportsSendMany
from wireproto.testing import wait_all_tasks_blocked
from wireproto.transports.subprocess import SubprocessStream

from .conftest import KINDS, Case

pytestmark = pytest.mark.anyio

OpenCase = Callable[..., AbstractAsyncContextManager[Case]]
LIMIT = 1024 * 1024


def arrived(sent: bytes) -> bytes:
    """What ``receive`` returns for ``sent``: every transport drops the ``\\n``."""
    return sent.removesuffix(b"\n")


async def exchange(
    stream: anyio.abc.ObjectStream[bytes], batches: Sequence[Sequence[bytes]]
) -> list[bytes]:
    """Send the batches (one ``send_many`` each) while reading every echo back."""
    expected = sum(len(batch) for batch in batches)
    received: list[bytes] = []

    async def produce() -> None:
        for batch in batches:
            if len(batch) == 1:
                await stream.send(batch[0])
            else:
                assert isinstance(stream, SupportsSendMany)
                await stream.send_many(batch)

    with anyio.fail_after(units(6)):
        async with anyio.create_task_group() as tg:
            tg.start_soon(produce)
            while len(received) < expected:
                received.append(await stream.receive())
    return received


@pytest.mark.parametrize("kind", KINDS)
async def test_round_trip_small_large_and_non_ascii(open_case: OpenCase, kind: str) -> None:
    big = b'{"data":"' + b"z" * (5 * 1024 * 1024) + b'"}\n'
    text = '{"text":"héllo wörld ✓ 🎉 日本語 \\n escaped"}\n'.encode()
    messages = [b'{"a":1}\n', text, big, b'{"after":"big"}\n']
    async with open_case(kind) as case:
        received = await exchange(case.stream, [[m] for m in messages])
        assert received == [arrived(m) for m in messages]
    assert received[1].rstrip().decode() == '{"text":"héllo wörld ✓ 🎉 日本語 \\n escaped"}'


@pytest.mark.parametrize("kind", KINDS)
async def test_order_is_preserved_and_send_many_batches(open_case: OpenCase, kind: str) -> None:
    messages = [b'{"n":%d}\n' % i for i in range(500)]
    messages[7] = messages[7].rstrip(b"\n")  # a message without terminator is framed too
    batches: list[list[bytes]] = []
    sizes = itertools.cycle([1, 2, 64, 17])
    while (start := sum(map(len, batches))) < len(messages):
        batches.append(messages[start : start + next(sizes)])
    sent = [m for batch in batches for m in batch]
    assert sent == messages
    async with open_case(kind) as case:
        many = case.stream
        assert isinstance(many, SupportsSendMany)
        await many.send_many([])  # nothing to send is fine
        received = await exchange(case.stream, batches)
        assert received == [arrived(m) for m in sent]


@pytest.mark.parametrize("kind", KINDS)
async def test_send_eof(open_case: OpenCase, kind: str) -> None:
    async with open_case(kind) as case:
        stream = case.stream
        if case.half_close:
            await stream.send(b"last\n")
            await stream.send_eof()
            # Still receiving after our EOF, until the echo saw it.
            assert await stream.receive() == arrived(b"last\n")
            assert await stream.receive() == b"!eof"
        else:
            await stream.send_eof()
        with pytest.raises(anyio.EndOfStream):
            await stream.receive()
        with pytest.raises(anyio.ClosedResourceError):
            await stream.send(b"too late\n")


@pytest.mark.parametrize("kind", KINDS)
async def test_remote_end_of_stream(open_case: OpenCase, kind: str) -> None:
    async with open_case(kind) as case:
        await case.stream.send(b"before\n")
        await case.stream.send(b"!close\n")
        assert await case.stream.receive() == arrived(b"before\n")
        with pytest.raises(anyio.EndOfStream):
            await case.stream.receive()
        with pytest.raises(anyio.EndOfStream):  # and it stays ended
            await case.stream.receive()


@pytest.mark.parametrize("kind", KINDS)
async def test_remote_vanishes(open_case: OpenCase, kind: str) -> None:
    async with open_case(kind) as case:
        await case.stream.send(b"!exit\n")
        gone = (anyio.EndOfStream, anyio.BrokenResourceError)
        with anyio.fail_after(units(2)), pytest.raises(gone):
            await case.stream.receive()
        if isinstance(case.stream, SubprocessStream):
            # Its end of our pipe may close just after its stdout did.
            assert await case.stream.wait() == 3
        with anyio.fail_after(units(2)), pytest.raises(anyio.BrokenResourceError):
            await case.stream.send(b"anyone?\n")


@pytest.mark.parametrize("kind", KINDS)
async def test_close_semantics(open_case: OpenCase, kind: str) -> None:
    async with open_case(kind) as case:
        stream = case.stream
        await stream.send(b"hello\n")
        assert await stream.receive() == arrived(b"hello\n")
        outcome: list[type[BaseException]] = []

        async def pending_receive() -> None:
            try:
                await stream.receive()
            except Exception as exc:
                outcome.append(type(exc))

        async with anyio.create_task_group() as tg:
            tg.start_soon(pending_receive)
            await wait_all_tasks_blocked()
            await stream.aclose()
        assert outcome == [anyio.ClosedResourceError]
        with pytest.raises(anyio.ClosedResourceError):
            await stream.receive()
        with pytest.raises(anyio.ClosedResourceError):
            await stream.send(b"x\n")
        many = stream
        assert isinstance(many, SupportsSendMany)
        with pytest.raises(anyio.ClosedResourceError):
            await many.send_many([b"x\n", b"y\n"])
        await stream.aclose()  # idempotent


@pytest.mark.parametrize("kind", ["stdio", "subprocess", "websocket"])
async def test_oversized_inbound_message(
    open_case: OpenCase, kind: str, caplog: pytest.LogCaptureFixture
) -> None:
    async with open_case(kind, max_bytes=LIMIT) as case:
        await case.stream.send(b"!big %d\n" % (2 * LIMIT))
        if kind == "websocket":
            with pytest.raises(anyio.BrokenResourceError):
                await case.stream.receive()
            assert f"1009: inbound message over the {LIMIT}-byte size limit" in caplog.text
            return
        with pytest.raises(MessageTooLarge) as info:
            await case.stream.receive()
        assert info.value.max_bytes == LIMIT
        await case.stream.send(b"!big %d\n" % LIMIT)  # exactly at the limit is fine
        assert await case.stream.receive() == b"x" * LIMIT
        await case.stream.send(b"after\n")
        assert await case.stream.receive() == b"after"


@pytest.mark.parametrize("kind", ["stdio", "websocket"])
async def test_oversized_outbound_message(
    open_case: OpenCase, kind: str, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.INFO)
    async with open_case(kind, max_bytes=LIMIT) as case:
        oversized = b'"' + b"y" * (2 * LIMIT) + b'"\n'
        if kind == "websocket":
            await case.stream.send(oversized)
            with pytest.raises(anyio.BrokenResourceError):
                await case.stream.receive()
            # The logged reason tells why the server closed the connection.
            assert "1009: outbound message over the peer's size limit" in caplog.text
            return
        # The child's open_stdio reports the oversized line and stays usable.
        received = await exchange(case.stream, [[oversized], [b"after\n"]])
        assert received == [b"!too-large", b"after"]


async def test_stdio_reserves_stdout(open_case: OpenCase, caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.INFO)
    async with open_case("stdio") as case:
        await case.stream.send(b"!print\n")
        assert await case.stream.receive() == b"!printed"
        await case.stream.send(b"after\n")
        assert await case.stream.receive() == b"after"
    # The stray output reached stderr, which the subprocess transport logs.
    logged = "\n".join(r.getMessage() for r in caplog.records)
    assert "stray print from the echo child" in logged
    assert "stray write to fd 1" in logged
