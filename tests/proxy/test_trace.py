"""The trace writer: a batch's lines are those of its messages written one by one,
whichever way the batch is checked, and to a file as to any binary sink."""

from __future__ import annotations

import io
from pathlib import Path

import msgspec
import pytest

from wireproto.proxy import TraceWriter
from wireproto.proxy.trace import plain_lines

BATCHES = [
    [b'{"id":1}'],
    [b'{"id":1}', b'[{"id":2}]', b'{"text":"caf\xc3\xa9 \\u00e9"}'],  # all JSON: one pass
    [b"[", b"[]]  {}"],  # two values over two lines that are not JSON each
    [b"{} {}"],  # two values on one line
    [b'{"a":1}', b"{\"bad\":\"\xff\"}"],  # a string that is not UTF-8
    [b'{"a":1}\r', b"not json", b'{"a":'],
]


def lines_one_by_one(messages: list[bytes]) -> list[bytes]:
    sink = io.BytesIO()
    writer = TraceWriter(sink)
    for message in messages:
        writer.record("recv", message, writer._t0 + 1.5)
    return sink.getvalue().splitlines()


@pytest.mark.parametrize("messages", BATCHES)
def test_a_batch_writes_the_lines_of_its_messages_one_by_one(
    messages: list[bytes], tmp_path: Path
) -> None:
    expected = lines_one_by_one(messages)
    for line in expected:
        msgspec.json.decode(line)  # every line is JSON, whatever the message was
    memory = io.BytesIO()
    to_memory = TraceWriter(memory)
    to_memory.batch("recv", messages, to_memory._t0 + 1.5)
    with (tmp_path / "trace.jsonl").open("wb") as file:  # (written with os.write)
        writer = TraceWriter(file)
        writer.batch("recv", messages, writer._t0 + 1.5)
        assert (tmp_path / "trace.jsonl").read_bytes().splitlines() == expected  # unflushed
    assert memory.getvalue().splitlines() == expected


def test_plain_lines_are_lines_starting_like_a_message_without_carriage_returns() -> None:
    assert plain_lines(b'{"a":1}\n[1]\n{}')
    assert not plain_lines(b'{"a":1}\n\n{}')  # a blank line
    assert not plain_lines(b'{"a":1}\n {}')
    assert not plain_lines(b'{"a":1}\r\n{}')
    assert not plain_lines(b"not json")


def test_what_others_wrote_to_a_buffered_file_comes_before_the_batch(tmp_path: Path) -> None:
    with (tmp_path / "trace.jsonl").open("wb") as file:
        writer = TraceWriter(file)
        file.write(b"# written by another\n")  # (held in the file's buffer)
        writer.batch("send", [b'{"id":1}'], writer._t0)
        assert (tmp_path / "trace.jsonl").read_bytes().splitlines() == [
            b"# written by another", b'{"t":0.000000,"dir":"send","msg":{"id":1}}']


def test_a_buffered_sink_over_a_stream_without_a_file_gets_its_lines_through_it() -> None:
    """Only a buffered file's descriptor is written to directly; another
    buffered stream (compressed, a socket's, in memory) gets write and flush."""
    raw = io.BytesIO()
    sink = io.BufferedWriter(raw)  # type: ignore[arg-type]  # (BytesIO has no descriptor)
    writer = TraceWriter(sink)
    writer.batch("recv", [b'{"id":2}'], writer._t0)
    assert raw.getvalue() == b'{"t":0.000000,"dir":"recv","msg":{"id":2}}\n'


def test_a_new_sink_takes_the_lines_that_follow(tmp_path: Path) -> None:
    first, second = io.BytesIO(), tmp_path / "second.jsonl"
    writer = TraceWriter(first)
    writer.record("send", b'{"id":1}', writer._t0)
    with second.open("wb") as file:
        writer.sink = file
        writer.record("send", b'{"id":2}', writer._t0)
        assert writer.sink is file
    assert first.getvalue().count(b"\n") == 1
    assert second.read_bytes() == b'{"t":0.000000,"dir":"send","msg":{"id":2}}\n'
