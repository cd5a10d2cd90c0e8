"""The JSON Lines store: file format, damage tolerance, torn headers, open files.

What every store must do is checked by ``test_conformance.py``; these tests
cover what depends on the files.
"""

from __future__ import annotations

import json
import logging
import os
import stat
from pathlib import Path

import pytest

from wireproto.agent.content import Text
from wireproto.agent.events import AgentMessageChunk, HistoryCleared, UserMessage
from wireproto.agent.store import JsonlStore, SessionStore, title_of, wireproto_home
from wireproto.agent.store import jsonl as jsonl_module
from wireproto.agent.store.base import iso
from wireproto.errors import InvalidArgument, NotFound

TORN = b'{"type":"session","session_id":"t","cwd":"/tm'
"""The partial first line a crash while creating session ``t`` could leave (before)."""


@pytest.fixture
def store(tmp_path: Path) -> JsonlStore:
    return JsonlStore(tmp_path / "sessions")


def prompt(store: JsonlStore, session_id: str, text: str, message_id: str = "u") -> None:
    store.append(session_id, UserMessage(content=[Text(text)], message_id=message_id))


def aside(store: JsonlStore, session_id: str) -> list[Path]:
    return sorted(store.root.glob(f"{session_id}.jsonl.unreadable-*"))


def test_default_root_is_wireproto_home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("WIREPROTO_HOME", str(tmp_path))
    assert wireproto_home() == tmp_path
    assert JsonlStore().root == tmp_path / "sessions"
    monkeypatch.delenv("WIREPROTO_HOME")
    assert wireproto_home() == Path.home() / ".wireproto"
    assert JsonlStore("/elsewhere").root == Path("/elsewhere")
    assert SessionStore is JsonlStore  # the first name still works


def test_file_format_and_modes(store: JsonlStore) -> None:
    store.create("s1", "/project", ["/extra"])
    store.append("s1", AgentMessageChunk(text="hi", message_id="m1"))
    lines = (store.root / "s1.jsonl").read_text(encoding="utf-8").splitlines()
    header, line = (json.loads(x) for x in lines)
    assert header["type"] == "session"
    assert (header["session_id"], header["cwd"], header["roots"]) == ("s1", "/project", ["/extra"])
    assert line["event"] == {"type": "message", "text": "hi", "message_id": "m1"}
    assert list(line) == ["event", "ts"] and list(header)[-1] == "ts"
    assert stat.S_IMODE(store.root.stat().st_mode) == 0o700
    assert stat.S_IMODE(store.path("s1").stat().st_mode) == 0o600
    assert sorted(p.name for p in store.root.iterdir()) == ["s1.jsonl"]  # no temporary left


def test_one_write_per_append_and_one_descriptor_per_session(
    store: JsonlStore, monkeypatch: pytest.MonkeyPatch
) -> None:
    store.create("s1", "/p", [])
    opened: list[str] = []
    writes: list[bytes] = []
    real_open, real_write = os.open, os.write

    def counting_open(path: str, *args: int) -> int:
        opened.append(str(path))
        return real_open(path, *args)

    def counting_write(fd: int, data: bytes) -> int:
        writes.append(bytes(data))
        return real_write(fd, data)

    monkeypatch.setattr(jsonl_module.os, "open", counting_open)
    monkeypatch.setattr(jsonl_module.os, "write", counting_write)
    prompt(store, "s1", "hello")
    store.append("s1", *[AgentMessageChunk(text=f"c{n}", message_id="m") for n in range(4)])
    store.append("s1", HistoryCleared())
    monkeypatch.undo()
    assert opened == [str(store.path("s1"))]
    assert [w.count(b"\n") for w in writes] == [1, 4, 1]  # each call one write, whole lines
    store.close()
    assert len(store.load("s1").events) == 0  # cleared; the file is still readable


def test_open_descriptors_are_bounded(store: JsonlStore, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(jsonl_module, "MAX_OPEN", 3)
    for n in range(6):
        store.create(f"s{n}", "/p", [])
        prompt(store, f"s{n}", f"prompt {n}")
    assert len(store._fds) == 3
    prompt(store, "s0", "again")  # reopened after being closed
    assert [e.content for e in store.load("s0").events if isinstance(e, UserMessage)] == [
        [Text("prompt 0")], [Text("again")]
    ]
    store.close()
    assert store._fds == {}


# ------------------------------------------------------------------- damage


def test_truncated_trailing_line(store: JsonlStore, caplog: pytest.LogCaptureFixture) -> None:
    store.create("s1", "/p", [])
    prompt(store, "s1", "hi")
    store.append("s1", AgentMessageChunk(text="ok", message_id="m1"))
    path = store.path("s1")
    with path.open("ab") as file:
        file.write(b'{"event":{"type":"message","text":"cut sh')
    with caplog.at_level(logging.WARNING, logger="wireproto.agent.store"):
        loaded = store.load("s1")
    assert loaded.events[-1] == AgentMessageChunk(text="ok", message_id="m1")
    assert any("corrupt line" in r.getMessage() for r in caplog.records)
    infos, _ = store.list()
    assert infos[0].title == "hi"
    assert infos[0].updated_at == iso(loaded.updated_at)

    # a new process appending starts a fresh line: the partial one stays isolated
    again = JsonlStore(store.root)
    again.append("s1", AgentMessageChunk(text="after", message_id="m2"))
    assert again.load("s1").events[-2:] == [
        AgentMessageChunk(text="ok", message_id="m1"),
        AgentMessageChunk(text="after", message_id="m2"),
    ]


def test_corrupt_middle_lines_are_skipped(
    store: JsonlStore, caplog: pytest.LogCaptureFixture
) -> None:
    store.create("s1", "/p", [])
    store.append("s1", AgentMessageChunk(text="a", message_id="m"))
    with store.path("s1").open("ab") as file:
        file.write(b"not json at all\n")
        file.write(b'{"event":{"type":"from_the_future"},"ts":"2026-01-01T00:00:00Z"}\n')
        file.write(b"\n")
    store.append("s1", AgentMessageChunk(text="b", message_id="m"))
    with caplog.at_level(logging.WARNING, logger="wireproto.agent.store"):
        events = store.load("s1").events
    assert [e.text for e in events if isinstance(e, AgentMessageChunk)] == ["a", "b"]
    assert len([r for r in caplog.records if "corrupt line" in r.getMessage()]) == 2


def test_files_that_are_not_sessions_are_ignored(store: JsonlStore) -> None:
    store.create("good", "/p", [])
    (store.root / "notes.txt").write_text("ignored", encoding="utf-8")
    (store.root / "bad name.jsonl").write_text("ignored", encoding="utf-8")
    (store.root / ".good.jsonl.tmp").write_text("a leftover temporary", encoding="utf-8")
    assert [i.session_id for i in store.list()[0]] == ["good"]


# ------------------------------------------------------------ torn headers


@pytest.mark.parametrize("content", [TORN, b"", b"\n", b"not json\n{}\n"])
def test_torn_header_on_load_is_moved_aside_and_the_id_is_free(
    store: JsonlStore, caplog: pytest.LogCaptureFixture, content: bytes
) -> None:
    store.root.mkdir(parents=True)
    store.path("t").write_bytes(content)
    with caplog.at_level(logging.WARNING, logger="wireproto.agent.store"), pytest.raises(NotFound):
        store.load("t")
    (moved,) = aside(store, "t")
    assert moved.read_bytes() == content  # kept, for inspection
    assert not store.path("t").exists()
    assert any("unreadable session header" in r.getMessage() and r.levelno == logging.WARNING
               for r in caplog.records)
    store.create("t", "/new", [])
    assert store.load("t").cwd == "/new"


def test_torn_header_on_list_is_moved_aside(
    store: JsonlStore, caplog: pytest.LogCaptureFixture
) -> None:
    store.create("good", "/p", [])
    store.path("t").write_bytes(TORN)
    with caplog.at_level(logging.WARNING, logger="wireproto.agent.store"):
        assert [i.session_id for i in store.list()[0]] == ["good"]
    assert len(aside(store, "t")) == 1
    assert any("unreadable session header" in r.getMessage() for r in caplog.records)
    store.create("t", "/p", [])
    assert sorted(i.session_id for i in store.list()[0]) == ["good", "t"]


def test_create_over_a_torn_header(store: JsonlStore, caplog: pytest.LogCaptureFixture) -> None:
    store.root.mkdir(parents=True)
    store.path("t").write_bytes(TORN)
    with caplog.at_level(logging.WARNING, logger="wireproto.agent.store"):
        store.create("t", "/p", [])
    assert len(aside(store, "t")) == 1
    assert store.load("t").cwd == "/p"
    with pytest.raises(InvalidArgument):  # a readable one is never replaced
        store.create("t", "/q", [])


def test_a_crash_while_creating_leaves_no_torn_header(
    store: JsonlStore, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The header is complete before the session's name exists."""
    real_write = os.write
    seen: list[bool] = []

    def dying_write(fd: int, data: bytes) -> int:
        seen.append(store.path("t").exists())
        real_write(fd, bytes(data)[:10])
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(jsonl_module.os, "write", dying_write)
    with pytest.raises(OSError):
        store.create("t", "/p", [])
    monkeypatch.undo()
    assert seen == [False]
    assert not store.path("t").exists()
    assert list(store.root.iterdir()) == []  # no temporary left either
    store.create("t", "/p", [])
    assert store.load("t").events == []


def test_title_of() -> None:
    from wireproto.agent.content import ResourceBlob, ResourceLink

    assert title_of([Text("Fix the bug\nin main.py")]) == "Fix the bug"
    assert title_of([Text("   ")]) is None
    assert title_of([]) is None
    assert title_of([ResourceBlob(uri="file:///b", blob="AA"), Text("after blob")]) == "after blob"
    assert title_of([ResourceLink(uri="file:///a", name="a"), Text("x")]) == (
        '<resource_link uri="file:///a" name="a"/>'
    )


def test_missing_directory_lists_nothing(tmp_path: Path) -> None:
    assert JsonlStore(tmp_path / "missing").list() == ([], None)


def test_an_event_that_does_not_encode_writes_nothing(store: JsonlStore) -> None:
    from wireproto.agent.events import ToolCallStarted

    store.create("s1", "/p", [])
    prompt(store, "s1", "before")
    with pytest.raises(TypeError):
        store.append("s1", AgentMessageChunk(text="lost", message_id="m"),
                     ToolCallStarted(id="c", name="t", title="t", raw_input=object()))
    prompt(store, "s1", "after")
    assert len(store._fds) == 1
    assert [e.content for e in store.load("s1").events if isinstance(e, UserMessage)] == [
        [Text("before")], [Text("after")]
    ]
