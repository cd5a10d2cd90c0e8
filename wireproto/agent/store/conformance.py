"""The conformance suite every :class:`~wireproto.agent.store.base.Store` passes.

Use it from a pytest test module: subclass :class:`StoreConformance` in a
class whose name starts with ``Test`` and give it a ``store`` fixture that
returns a new, empty store. A persistent store also overrides
:meth:`StoreConformance.reopen` to return a second store over the same data
(as another process would open it)::

    import pytest
    from wireproto.agent.store.conformance import StoreConformance

    class TestSqliteStore(StoreConformance):
        @pytest.fixture
        def store(self, tmp_path):
            return SqliteStore(tmp_path / "sessions.db")

        def reopen(self, store):
            return SqliteStore(store.path)

The suite checks what the :class:`~wireproto.agent.store.base.Store`
protocol promises and nothing about how a store keeps its data; damage
handling that depends on the format (torn files, for instance) belongs in
the store's own tests. pytest is imported only when a check runs.
"""

from __future__ import annotations

import logging
from typing import Any

from wireproto.agent.content import ResourceLink, Text
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
from wireproto.agent.store.base import Store, iso
from wireproto.errors import InvalidArgument, NotFound

__all__ = ["StoreConformance"]

BAD_IDS = ("../etc/passwd", "a/b", "", ".hidden", "x" * 129, "a b", "a\n", "/abs")
"""Session ids every store refuses."""


def _raises(kind: type[BaseException]) -> Any:
    import pytest  # only when the suite runs

    return pytest.raises(kind)


def _prompt(text: str, message_id: str = "u") -> UserMessage:
    return UserMessage(content=[Text(text)], message_id=message_id)


class StoreConformance:
    """Checks of the store protocol; subclass it with a ``store`` fixture (see above)."""

    def reopen(self, store: Any) -> Store:
        """A second store over the same data as ``store`` (default: ``store`` itself)."""
        return store  # type: ignore[no-any-return]

    # ------------------------------------------------------------ protocol

    def test_is_a_store(self, store: Store) -> None:
        assert isinstance(store, Store)

    # ---------------------------------------------------------- round trip

    def test_round_trip_keeps_order_and_message_ids(self, store: Store) -> None:
        store.create("s1", "/p", ["/extra"])
        events: list[Event] = [
            UserMessage(content=[Text("hello"), ResourceLink(uri="file:///a", name="a")],
                        message_id="user_1"),
            ThoughtChunk(text="hmm", message_id="thought_1"),
            AgentMessageChunk(text="You said", message_id="msg_1"),
            AgentMessageChunk(text=": hello", message_id="msg_1"),
            ToolCallStarted(id="call_1", name="read", title="Read x", raw_input={"path": "x"}),
            TurnEnded(stop_reason=StopReason.END_TURN),
        ]
        store.append("s1", events[0])
        store.append("s1", *events[1:4])  # several at once
        for event in events[4:]:
            store.append("s1", event)
        store.append("s1")  # nothing: a no-op
        loaded = self.reopen(store).load("s1")
        assert loaded.session_id == "s1"
        assert loaded.events == events
        assert (loaded.cwd, loaded.roots, loaded.title) == ("/p", ["/extra"], "hello")

    def test_new_session_is_empty(self, store: Store) -> None:
        store.create("s1", "/p", [])
        loaded = store.load("s1")
        assert (loaded.events, loaded.options, loaded.plan_mode, loaded.title) == (
            [], {}, False, None
        )
        assert loaded.updated_at.utcoffset() is not None  # an aware time

    def test_clear_options_and_plan_mode(self, store: Store) -> None:
        store.create("s1", "/p", [])
        store.append("s1", _prompt("first prompt"))
        store.append("s1", OptionChanged("model", "demo-large"))
        store.append("s1", PlanModeChanged(enabled=True))
        store.append("s1", AgentMessageChunk(text="old", message_id="m1"))
        store.append("s1", HistoryCleared())
        store.append("s1", OptionChanged("thinking", True))
        store.append("s1", AgentMessageChunk(text="new", message_id="m2"))
        loaded = self.reopen(store).load("s1")
        assert loaded.events == [AgentMessageChunk(text="new", message_id="m2")]
        assert loaded.options == {"model": "demo-large", "thinking": True}
        assert loaded.plan_mode is True
        assert loaded.title == "first prompt"  # survives the clear
        store.append("s1", PlanModeChanged(enabled=False))
        loaded = store.load("s1")
        assert loaded.plan_mode is False
        assert loaded.events[-1] == PlanModeChanged(enabled=False)  # kept in the replay

    def test_titles(self, store: Store) -> None:
        store.create("s1", "/p", [])
        assert store.list()[0][0].title is None
        store.append("s1", OptionChanged("model", "demo-large"))
        store.append("s1", _prompt("   "))  # blank: no title yet
        store.append("s1", _prompt("\n  \n" + "y" * 100 + "\nsecond line"))
        store.append("s1", _prompt("not the title"))
        (info,), _ = self.reopen(store).list()
        assert info.title == "y" * 80
        assert store.load("s1").title == "y" * 80

    # ---------------------------------------------------------- lifecycle

    def test_invalid_ids(self, store: Store) -> None:
        with _raises(NotFound):
            store.load("nope")
        for bad in BAD_IDS:
            with _raises(NotFound):
                store.load(bad)
            with _raises(InvalidArgument):
                store.create(bad, "/p", [])
            with _raises(InvalidArgument):
                store.append(bad, HistoryCleared())
            store.delete(bad)  # ignored
        assert store.list() == ([], None)

    def test_create_twice(self, store: Store) -> None:
        store.create("s1", "/p", [])
        with _raises(InvalidArgument):
            store.create("s1", "/q", [])
        with _raises(InvalidArgument):
            self.reopen(store).create("s1", "/q", [])
        assert store.load("s1").cwd == "/p"

    def test_delete_is_idempotent(self, store: Store) -> None:
        store.create("s1", "/p", [])
        store.delete("s1")
        store.delete("s1")
        store.delete("never")
        with _raises(NotFound):
            store.load("s1")
        assert store.list() == ([], None)
        store.create("s1", "/q", [])  # the id is free again, with nothing of the old one
        assert (store.load("s1").cwd, store.load("s1").events) == ("/q", [])

    def test_append_after_delete_is_dropped(self, store: Store, caplog: Any) -> None:
        store.create("s1", "/p", [])
        store.append("s1", _prompt("before"))
        store.delete("s1")
        with caplog.at_level(logging.WARNING):
            store.append("s1", HistoryCleared())
        assert any(r.levelno == logging.WARNING for r in caplog.records)
        with _raises(NotFound):
            store.load("s1")

    def test_appends_of_another_store_are_seen(self, store: Store) -> None:
        store.create("s1", "/p", [])
        other = self.reopen(store)
        other.append("s1", _prompt("from elsewhere"))
        store.append("s1", AgentMessageChunk(text="here", message_id="m"))
        assert [type(e) for e in other.load("s1").events] == [UserMessage, AgentMessageChunk]
        assert store.list()[0][0].title == "from elsewhere"
        other.delete("s1")
        other.create("s1", "/q", [])
        (info,), _ = store.list()
        assert (info.cwd, info.title) == ("/q", None)
        store.append("s1", _prompt("new life"))
        assert other.load("s1").events == [_prompt("new life")]

    # ------------------------------------------------------------ listing

    def test_list_order_follows_activity(self, store: Store) -> None:
        for sid in ["a", "b", "c"]:
            store.create(sid, "/p", [])
        assert [i.session_id for i in store.list()[0]] == ["c", "b", "a"]
        store.append("a", AgentMessageChunk(text="x", message_id="m"))
        infos, cursor = store.list()
        assert [i.session_id for i in infos] == ["a", "c", "b"]
        assert cursor is None
        assert infos[0].updated_at == iso(store.load("a").updated_at)
        assert infos[0].updated_at > infos[1].updated_at > infos[2].updated_at

    def test_list_filters_by_cwd(self, store: Store) -> None:
        store.create("a", "/one", ["/r"])
        store.create("b", "/two", [])
        store.create("c", "/one/", [])
        infos, _ = store.list(cwd="/one")
        assert [i.session_id for i in infos] == ["c", "a"]
        assert infos[1].cwd == "/one" and infos[1].roots == ("/r",)
        assert store.list(cwd="/three") == ([], None)

    def test_list_pagination(self, store: Store) -> None:
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
        assert len(store.list(limit=7)[0]) == 7

        # activity between pages does not duplicate or lose the rest of the walk
        _, cursor = store.list()
        store.append(ids[0], HistoryCleared())  # the oldest becomes the newest
        second, _ = store.list(cursor=cursor)
        assert [i.session_id for i in second] == list(reversed(ids))[50:100]
        assert store.list()[0][0].session_id == ids[0]

    def test_invalid_cursor(self, store: Store) -> None:
        store.create("a", "/p", [])
        for cursor in ["garbage", "!!!", "YWJj", "YzE6WzEsMiwzXQ"]:
            with _raises(InvalidArgument):
                store.list(cursor=cursor)

    def test_empty_store_lists_nothing(self, store: Store) -> None:
        assert store.list() == ([], None)
        assert store.list(cursor="") == ([], None)
