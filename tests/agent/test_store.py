"""The JSON Lines session store: format, replay, listing, damage tolerance."""

from __future__ import annotations

import json
import logging
import re
from pathlib import Path

import pytest

from wireproto.agent.content import ResourceBlob, ResourceLink, Text
from wireproto.agent.events import (
    AgentMessageChunk,
    Event,
    HistoryCleared,
    OptionChanged,
    PlanModeChanged,
    StopReason,
    ThoughtChunk,
    ToolCallStarted,
    TurnEnded,
    UserMessage,
)
from wireproto.agent.store import SessionStore, title_of, wireproto_home
from wireproto.errors import InvalidArgument, NotFound

ISO = re.compile(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{6}Z")


def prompt(store: SessionStore, session_id: str, text: str, message_id: str = "u") -> None:
    store.append(session_id, UserMessage(content=[Text(text)], message_id=message_id))


def test_default_root_is_wireproto_home(home: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    assert wireproto_home() == home
    assert SessionStore().root == home / "sessions"
    monkeypatch.delenv("WIREPROTO_HOME")
    assert wireproto_home() == Path.home() / ".wireproto"
    assert SessionStore("/elsewhere").root == Path("/elsewhere")


def test_file_format(store: SessionStore) -> None:
    store.create("s1", "/project", ["/extra"])
    store.append("s1", AgentMessageChunk(text="hi", message_id="m1"))
    lines = (store.root / "s1.jsonl").read_text(encoding="utf-8").splitlines()
    header, line = (json.loads(x) for x in lines)
    assert header["type"] == "session"
    assert (header["session_id"], header["cwd"], header["roots"]) == ("s1", "/project", ["/extra"])
    assert line["event"] == {"type": "message", "text": "hi", "message_id": "m1"}
    assert list(line) == ["event", "ts"] and list(header)[-1] == "ts"


def test_round_trip_keeps_order_and_message_ids(store: SessionStore) -> None:
    store.create("s1", "/p", [])
    events: list[Event] = [
        UserMessage(content=[Text("hello"), ResourceLink(uri="file:///a", name="a")],
                    message_id="user_1"),
        ThoughtChunk(text="hmm", message_id="thought_1"),
        AgentMessageChunk(text="You said", message_id="msg_1"),
        AgentMessageChunk(text=": hello", message_id="msg_1"),
        ToolCallStarted(id="call_1", name="read", title="Read x", raw_input={"path": "x"}),
        TurnEnded(stop_reason=StopReason.END_TURN),
    ]
    for event in events:
        store.append("s1", event)
    loaded = store.load("s1")
    assert loaded.events == events
    assert (loaded.cwd, loaded.roots, loaded.title) == ("/p", [], "hello")


def test_clear_options_and_plan_mode(store: SessionStore) -> None:
    store.create("s1", "/p", [])
    prompt(store, "s1", "first prompt")
    store.append("s1", OptionChanged("model", "demo-large"))
    store.append("s1", PlanModeChanged(enabled=True))
    store.append("s1", AgentMessageChunk(text="old", message_id="m1"))
    store.append("s1", HistoryCleared())
    store.append("s1", OptionChanged("thinking", True))
    store.append("s1", AgentMessageChunk(text="new", message_id="m2"))
    loaded = store.load("s1")
    assert loaded.events == [AgentMessageChunk(text="new", message_id="m2")]
    assert loaded.options == {"model": "demo-large", "thinking": True}
    assert loaded.plan_mode is True
    assert loaded.title == "first prompt"  # survives the clear
    store.append("s1", PlanModeChanged(enabled=False))
    loaded = store.load("s1")
    assert loaded.plan_mode is False
    assert loaded.events[-1] == PlanModeChanged(enabled=False)  # kept in the replay


def test_load_unknown_and_invalid(store: SessionStore) -> None:
    with pytest.raises(NotFound):
        store.load("nope")
    for bad in ["../etc/passwd", "a/b", "", ".hidden", "x" * 129, "a b", "a\n", "/abs"]:
        with pytest.raises(NotFound):
            store.load(bad)
        with pytest.raises(InvalidArgument):
            store.create(bad, "/p", [])
        with pytest.raises(InvalidArgument):
            store.append(bad, HistoryCleared())
        store.delete(bad)  # ignored
    assert not (store.root.parent / "etc").exists()


def test_create_twice(store: SessionStore) -> None:
    store.create("s1", "/p", [])
    with pytest.raises(InvalidArgument):
        store.create("s1", "/q", [])
    assert store.load("s1").cwd == "/p"


def test_delete_is_idempotent(store: SessionStore) -> None:
    store.create("s1", "/p", [])
    store.delete("s1")
    store.delete("s1")
    store.delete("never")
    with pytest.raises(NotFound):
        store.load("s1")
    assert store.list() == ([], None)


def test_append_after_delete_is_dropped(
    store: SessionStore, caplog: pytest.LogCaptureFixture
) -> None:
    store.create("s1", "/p", [])
    store.delete("s1")
    with caplog.at_level(logging.WARNING):
        store.append("s1", HistoryCleared())
    assert not store.path("s1").exists()
    assert caplog.records


# ------------------------------------------------------------------- damage


def test_truncated_trailing_line(store: SessionStore, caplog: pytest.LogCaptureFixture) -> None:
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
    assert infos[0].title == "hi" and ISO.fullmatch(infos[0].updated_at)
    assert infos[0].updated_at == loaded.updated_at.strftime("%Y-%m-%dT%H:%M:%S.%fZ")

    # a new process appending starts a fresh line: the partial one stays isolated
    again = SessionStore(store.root)
    again.append("s1", AgentMessageChunk(text="after", message_id="m2"))
    assert again.load("s1").events[-2:] == [
        AgentMessageChunk(text="ok", message_id="m1"),
        AgentMessageChunk(text="after", message_id="m2"),
    ]


def test_corrupt_middle_lines_are_skipped(
    store: SessionStore, caplog: pytest.LogCaptureFixture
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


def test_headerless_file_is_not_a_session(
    store: SessionStore, caplog: pytest.LogCaptureFixture
) -> None:
    store.create("good", "/p", [])
    store.path("empty").write_bytes(b"")
    store.path("junk").write_bytes(b'{"type":"sess')
    (store.root / "notes.txt").write_text("ignored", encoding="utf-8")
    (store.root / "bad name.jsonl").write_text("ignored", encoding="utf-8")
    with caplog.at_level(logging.WARNING, logger="wireproto.agent.store"):
        infos, _ = store.list()
        with pytest.raises(NotFound):
            store.load("junk")
    assert [i.session_id for i in infos] == ["good"]


# ------------------------------------------------------------------ listing


def test_list_order_follows_activity(store: SessionStore) -> None:
    for sid in ["a", "b", "c"]:
        store.create(sid, "/p", [])
    assert [i.session_id for i in store.list()[0]] == ["c", "b", "a"]
    store.append("a", AgentMessageChunk(text="x", message_id="m"))
    infos, cursor = store.list()
    assert [i.session_id for i in infos] == ["a", "c", "b"]
    assert cursor is None
    assert infos[0].updated_at == store.list()[0][0].updated_at  # stable
    loaded = store.load("a")
    assert infos[0].updated_at == loaded.updated_at.strftime("%Y-%m-%dT%H:%M:%S.%fZ")
    assert all(ISO.fullmatch(i.updated_at) for i in infos)
    assert infos[0].updated_at > infos[1].updated_at > infos[2].updated_at


def test_list_filters_by_cwd(store: SessionStore) -> None:
    store.create("a", "/one", ["/r"])
    store.create("b", "/two", [])
    store.create("c", "/one/", [])
    infos, _ = store.list(cwd="/one")
    assert [i.session_id for i in infos] == ["c", "a"]
    assert infos[1].cwd == "/one" and infos[1].roots == ("/r",)
    assert store.list(cwd="/three") == ([], None)


def test_list_pagination(store: SessionStore) -> None:
    ids = [f"s{n:03}" for n in range(120)]
    for sid in ids:
        store.create(sid, "/p", [])
    seen: list[str] = []
    cursor: str | None = None
    sizes = []
    while True:
        infos, cursor = store.list(cursor=cursor)
        sizes.append(len(infos))
        seen += [i.session_id for i in infos]
        if cursor is None:
            break
    assert sizes == [50, 50, 20]
    assert seen == list(reversed(ids))

    # activity between pages does not duplicate or lose the rest of the walk
    _, cursor = store.list()
    store.append(ids[0], HistoryCleared())  # the oldest becomes the newest
    second, _ = store.list(cursor=cursor)
    assert [i.session_id for i in second] == list(reversed(ids))[50:100]
    assert store.list()[0][0].session_id == ids[0]


@pytest.mark.parametrize("cursor", ["garbage", "!!!", "YWJj", "YzE6WzEsMiwzXQ"])
def test_invalid_cursor(store: SessionStore, cursor: str) -> None:
    store.create("a", "/p", [])
    with pytest.raises(InvalidArgument):
        store.list(cursor=cursor)


def test_titles(store: SessionStore) -> None:
    store.create("s1", "/p", [])
    assert store.list()[0][0].title is None
    assert store.load("s1").title is None
    store.append("s1", OptionChanged("model", "demo-large"))
    prompt(store, "s1", "\n  \n" + "y" * 100 + "\nsecond line")
    prompt(store, "s1", "not the title")
    (info,), _ = store.list()
    assert info.title == "y" * 80
    assert store.load("s1").title == "y" * 80


def test_title_of() -> None:
    assert title_of([Text("Fix the bug\nin main.py")]) == "Fix the bug"
    assert title_of([Text("   ")]) is None
    assert title_of([]) is None
    assert title_of([ResourceBlob(uri="file:///b", blob="AA"), Text("after blob")]) == "after blob"
    assert title_of([ResourceLink(uri="file:///a", name="a"), Text("x")]) == (
        '<resource_link uri="file:///a" name="a"/>'
    )


def test_list_sees_changes_by_another_store(store: SessionStore) -> None:
    store.create("s1", "/p", [])
    assert store.list()[0][0].title is None
    other = SessionStore(store.root)
    prompt(other, "s1", "from elsewhere")
    assert store.list()[0][0].title == "from elsewhere"
    other.delete("s1")
    other.create("s1", "/q", [])
    (info,), _ = store.list()
    assert (info.cwd, info.title) == ("/q", None)


def test_empty_store_lists_nothing(tmp_path: Path) -> None:
    assert SessionStore(tmp_path / "missing").list() == ([], None)
