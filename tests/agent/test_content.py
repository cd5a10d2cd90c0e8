"""Prompt rendering: every block kind, escaping, dropped blobs."""

from __future__ import annotations

import logging
from pathlib import Path

import pytest

from wireproto.agent.content import (
    Audio,
    ContentBlock,
    Image,
    ResourceBlob,
    ResourceLink,
    ResourceText,
    Text,
    Video,
    attr_escape,
    render_prompt,
)
from wireproto.agent.events import AgentMessageChunk, StopReason
from wireproto.agent.runtime import Runtime
from wireproto.testing import RecordingChannel


@pytest.mark.parametrize(
    ("block", "expected"),
    [
        (Text("plain <b>text</b> & more"), "plain <b>text</b> & more"),
        (
            ResourceText(uri="file:///a.py", text="x = 1 < 2\n"),
            '<resource uri="file:///a.py">x = 1 < 2\n</resource>',
        ),
        (
            ResourceLink(uri="file:///doc.md", name="doc.md"),
            '<resource_link uri="file:///doc.md" name="doc.md"/>',
        ),
        (Image(mime_type="image/png", data="AAAA"), "[image image/png]"),
        (Image(url="https://example.invalid/cat.png"), "[image]"),
        (Audio(mime_type="audio/wav", data="AAAA"), "[audio audio/wav]"),
        (Video(url="https://example.invalid/v.mp4"), "[video]"),
    ],
)
def test_each_block_kind(block: ContentBlock, expected: str) -> None:
    assert render_prompt([block]) == expected


def test_attributes_are_escaped_text_is_not() -> None:
    uri = 'file:///a&b/<c>/"d".txt'
    blocks: list[ContentBlock] = [
        ResourceText(uri=uri, text='<raw & "kept">'),
        ResourceLink(uri=uri, name='n<a>m&e"'),
    ]
    escaped = "file:///a&amp;b/&lt;c&gt;/&quot;d&quot;.txt"
    assert render_prompt(blocks) == (
        f'<resource uri="{escaped}"><raw & "kept"></resource>\n'
        f'<resource_link uri="{escaped}" name="n&lt;a&gt;m&amp;e&quot;"/>'
    )
    assert attr_escape("&amp;") == "&amp;amp;"


def test_blocks_joined_in_order_with_newlines() -> None:
    blocks: list[ContentBlock] = [Text("one"), Image(mime_type="image/jpeg"), Text("two")]
    assert render_prompt(blocks) == "one\n[image image/jpeg]\ntwo"


def test_blob_dropped_with_warning_and_no_empty_line(caplog: pytest.LogCaptureFixture) -> None:
    blocks: list[ContentBlock] = [
        Text("before"),
        ResourceBlob(uri="file:///bin.dat", blob="AAEC", mime_type="application/octet-stream"),
        Text("after"),
    ]
    with caplog.at_level(logging.WARNING, logger="wireproto.agent.content"):
        assert render_prompt(blocks) == "before\nafter"
    warnings = [r for r in caplog.records if r.levelno == logging.WARNING]
    assert len(warnings) == 1
    assert "file:///bin.dat" in warnings[0].getMessage()


def test_only_a_blob_renders_empty(caplog: pytest.LogCaptureFixture) -> None:
    with caplog.at_level(logging.WARNING):
        assert render_prompt([ResourceBlob(uri="file:///x", blob="AA==")]) == ""
    assert caplog.records


@pytest.mark.anyio
async def test_demo_echoes_every_block_kind(
    runtime: Runtime, channel: RecordingChannel, workdir: Path, caplog: pytest.LogCaptureFixture
) -> None:
    session = await runtime.new_session(channel, str(workdir))
    prompt: list[ContentBlock] = [
        Text("look at"),
        ResourceText(uri="file:///a&b.py", text="print(1)"),
        ResourceBlob(uri="file:///img.bin", blob="AAAA"),
        ResourceLink(uri="file:///c.md", name='"c"'),
        Image(mime_type="image/png", data="AAAA"),
        Audio(mime_type="audio/mpeg", data="AAAA"),
        Video(url="https://example.invalid/v.webm"),
    ]
    with caplog.at_level(logging.WARNING, logger="wireproto.agent.content"):
        stop = await runtime.prompt(session, prompt)
    assert stop is StopReason.END_TURN
    assert channel.text(session.id) == (
        "You said: look at\n"
        '<resource uri="file:///a&amp;b.py">print(1)</resource>\n'
        '<resource_link uri="file:///c.md" name="&quot;c&quot;"/>\n'
        "[image image/png]\n"
        "[audio audio/mpeg]\n"
        "[video]"
    )
    assert any("file:///img.bin" in r.getMessage() for r in caplog.records)
    chunks = [e for e in channel.events(session.id) if isinstance(e, AgentMessageChunk)]
    assert len(chunks) >= 2
