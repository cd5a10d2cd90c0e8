"""LineFramer: newline framing with a hard size limit, independent of chunking."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from wireproto.errors import MessageTooLarge
from wireproto.jsonrpc.framing import DEFAULT_MAX_MESSAGE_BYTES, LineFramer, frame

TOO_LARGE = ("too large",)


def drain(framer: LineFramer) -> list[Any]:
    """Every event available now: messages as bytes, overflows as TOO_LARGE."""
    events: list[Any] = []
    while True:
        try:
            msg = framer.next_message()
        except MessageTooLarge as exc:
            assert exc.max_bytes == framer.max_bytes
            events.append(TOO_LARGE)
            continue
        if msg is None:
            return events
        events.append(msg)


def run(chunks: list[bytes], max_bytes: int = DEFAULT_MAX_MESSAGE_BYTES, take: int = 0
        ) -> list[Any]:
    """The events of feeding ``chunks``; with ``take``, each drain takes batches of that size
    first (``LineFramer.take``) and steps with ``next_message`` only when it hands out none."""
    framer = LineFramer(max_bytes)
    events: list[Any] = []
    for chunk in chunks:
        framer.feed(chunk)
        while take:
            batch = framer.take(take)
            assert len(batch) <= take
            events += batch
            if not batch:
                try:
                    msg = framer.next_message()
                except MessageTooLarge:
                    events.append(TOO_LARGE)
                    continue
                if msg is None:
                    break
                events.append(msg)
        events += drain(framer)
    return events


def test_default_limit_is_64_mib() -> None:
    assert DEFAULT_MAX_MESSAGE_BYTES == 64 * 1024 * 1024
    assert LineFramer().max_bytes == DEFAULT_MAX_MESSAGE_BYTES


def test_invalid_limit_rejected() -> None:
    with pytest.raises(ValueError):
        LineFramer(0)


def test_frame_adds_exactly_one_newline() -> None:
    assert frame(b"{}") == b"{}\n"
    assert frame(b"{}\n") == b"{}\n"


def test_lines_and_crlf() -> None:
    assert run([b'{"a":1}\n{"b":2}\r\n{"c":3}']) == [b'{"a":1}', b'{"b":2}']
    assert run([b"x\r\n", b"y\r", b"\n"]) == [b"x", b"y"]


def test_incomplete_line_waits() -> None:
    framer = LineFramer()
    framer.feed(b'{"a":')
    assert framer.next_message() is None
    assert framer.buffered == 5
    framer.feed(b"1}")
    assert framer.next_message() is None
    framer.feed(b"\n")
    assert framer.next_message() == b'{"a":1}'
    assert framer.buffered == 0
    assert framer.next_message() is None


def test_blank_and_whitespace_lines_skipped() -> None:
    data = b"\n\n   \n\t\r\n \t \n{}\n\r\n \r\n x \n"
    assert run([data]) == [b"{}", b" x "]
    # other control characters are not JSON whitespace: the line is a message
    # (answered -32700), whatever character it starts with
    assert run([b"\x0b\n \x0b\n\x0c \n"]) == [b"\x0b", b" \x0b", b"\x0c "]


def test_memoryview_and_bytearray_input() -> None:
    framer = LineFramer()
    framer.feed(memoryview(b"a\nb"))
    framer.feed(bytearray(b"\n"))
    assert drain(framer) == [b"a", b"b"]


def test_messages_skips_overflows() -> None:
    framer = LineFramer(4)
    framer.feed(b"ab\n" + b"x" * 10 + b"\ncd\n")
    assert framer.messages() == [b"ab", b"cd"]


def test_limit_is_exclusive_of_terminator() -> None:
    assert run([b"abcd\n"], 4) == [b"abcd"]
    assert run([b"abcd\r\n"], 4) == [b"abcd"]
    assert run([b"abcde\n"], 4) == [TOO_LARGE]
    assert run([b"abcde\r\n"], 4) == [TOO_LARGE]


def test_oversized_line_reported_once_then_stream_continues() -> None:
    framer = LineFramer(8)
    framer.feed(b'{"a":1}\n' + b"y" * 100 + b'\n{"b":2}\n')
    assert framer.next_message() == b'{"a":1}'
    with pytest.raises(MessageTooLarge) as info:
        framer.next_message()
    assert info.value.max_bytes == 8
    assert framer.next_message() == b'{"b":2}'
    assert framer.next_message() is None


def test_oversized_line_without_newline_discarded_up_to_next_newline() -> None:
    framer = LineFramer(8)
    framer.feed(b"z" * 50)
    assert framer.buffered == 0  # dropped as soon as it is known to be too long
    with pytest.raises(MessageTooLarge):
        framer.next_message()
    assert framer.next_message() is None  # reported once only
    framer.feed(b"z" * 50)
    framer.feed(b"zz\nok\n")
    assert drain(framer) == [b"ok"]


def test_oversized_tail_after_complete_line_in_one_chunk() -> None:
    framer = LineFramer(8)
    framer.feed(b"{}\n" + b"x" * 1000)
    assert framer.next_message() == b"{}"
    with pytest.raises(MessageTooLarge):
        framer.next_message()
    assert framer.buffered == 0
    framer.feed(b"x" * 1000 + b"\n[]\n")
    assert drain(framer) == [b"[]"]


def test_oversized_line_in_many_chunks_keeps_memory_bounded() -> None:
    limit = 1024
    framer = LineFramer(limit)
    events: list[Any] = []
    peak = 0
    chunk = b"q" * 100
    for _ in range(1000):  # 100 KB line
        framer.feed(chunk)
        peak = max(peak, framer.buffered)
        events += drain(framer)
    framer.feed(b"qqq\n{}\n")
    events += drain(framer)
    assert peak <= limit + 2
    assert events == [TOO_LARGE, b"{}"]


def test_oversized_line_byte_by_byte() -> None:
    framer = LineFramer(4)
    events: list[Any] = []
    for byte in b"0123456789\nab\n":
        framer.feed(bytes([byte]))
        assert framer.buffered <= 4 + 2
        events += drain(framer)
    assert events == [TOO_LARGE, b"ab"]


def test_many_oversized_lines_in_one_chunk() -> None:
    data = b"".join([b"x" * 20 + b"\n", b"ok\n", b"y" * 30 + b"\r\n", b"z" * 9 + b"\n", b"ok2\n"])
    assert run([data], 8) == [TOO_LARGE, b"ok", TOO_LARGE, TOO_LARGE, b"ok2"]


# --------------------------------------------------------------------- property


def model(stream: bytes, max_bytes: int) -> list[Any]:
    """What framing must produce for ``stream``, computed the obvious way."""
    *lines, tail = stream.split(b"\n")
    events: list[Any] = []
    for line in lines:
        if line.endswith(b"\r"):
            line = line[:-1]
        if len(line) > max_bytes:
            events.append(TOO_LARGE)
        elif line.strip(b" \t\r"):  # only JSON whitespace makes a line blank
            events.append(line)
    if len(tail) > max_bytes + 2:  # known too long before its end arrives
        events.append(TOO_LARGE)
    return events


line_bytes = st.one_of(
    st.binary(max_size=12).map(lambda b: b.replace(b"\n", b"")),
    st.sampled_from([b"", b" ", b"\r", b" \t\r", b"{}", b"x" * 20]),
)


@settings(max_examples=300, deadline=None)
@given(
    lines=st.lists(line_bytes, max_size=12),
    tail=line_bytes,
    cuts=st.lists(st.integers(min_value=0, max_value=400), max_size=20),
    max_bytes=st.integers(min_value=1, max_value=16),
    take=st.integers(min_value=1, max_value=4),
)
def test_framing_is_independent_of_chunking(
    lines: list[bytes], tail: bytes, cuts: list[int], max_bytes: int, take: int
) -> None:
    stream = b"\n".join([*lines, tail]) if lines else tail
    points = sorted({c % (len(stream) + 1) for c in cuts})
    chunks = [stream[a:b] for a, b in zip([0, *points], [*points, len(stream)], strict=True)]
    whole = run([stream], max_bytes)
    assert run(chunks, max_bytes) == whole
    assert run(chunks, max_bytes, take) == whole  # batches and single steps, in any mix
    assert run([bytes([b]) for b in stream], max_bytes) == whole
    assert whole == model(stream, max_bytes)


def test_take_hands_out_at_most_its_limit_and_leaves_overflows_to_next_message() -> None:
    framer = LineFramer(8)
    framer.feed(b"a\nbb\nccc\ndd")
    assert framer.take(2) == [b"a", b"bb"]
    framer.feed(b"\n")
    assert framer.take(2) + framer.take(2) == [b"ccc", b"dd"]  # (one or two batches)
    assert framer.take(5) == []  # nothing whole is left
    assert framer.buffered == 0
    framer.feed(b"x" * 20 + b"\nok\n")  # an overflow is reported first, by next_message
    assert framer.take(5) == []
    assert drain(framer) == [TOO_LARGE, b"ok"]
    framer.feed(b"one\n" + b"y" * 20 + b"\n\n \ntwo\n")  # blank lines are skipped
    assert framer.take(5) == [b"one"]  # stops before the overflow
    assert drain(framer) == [TOO_LARGE, b"two"]
