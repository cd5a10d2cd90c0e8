"""The demo's /ask, /title, /retry and /subagent over Wire (memory, websocket, subprocess).

Also the typed decoding of the events in a replay, and the Wire rendering of
the other progress events (golden event sequences).
"""

from __future__ import annotations

from collections.abc import Callable
from contextlib import AbstractAsyncContextManager
from typing import Any

import msgspec
import pytest

from wireproto.adapters.wire import messages as m
from wireproto.adapters.wire.envelope import decode_event, encode_event
from wireproto.adapters.wire.translate import Translator
from wireproto.agent.api import Agent, Question
from wireproto.agent.events import (
    AgentMessageChunk,
    CommandsChanged,
    CompactionEnded,
    CompactionStarted,
    SideQuestionEnded,
    SideQuestionStarted,
    SlashCommandInfo,
    StepRetried,
    StopReason,
    SubagentEvent,
    TitleChanged,
    ToolArgumentsChunk,
    ToolCallStarted,
    ToolCallUpdated,
    ToolStatus,
)
from wireproto.agent.turn import Turn

pytestmark = pytest.mark.anyio

KINDS = ["memory", "websocket", "subprocess"]
OpenWire = Callable[..., AbstractAsyncContextManager[Any]]


def text_of(events: list[Any]) -> str:
    return "".join(e.text for e in events if isinstance(e, m.TextPart))


def of_type(events: list[Any], cls: type) -> list[Any]:
    return [e for e in events if isinstance(e, cls)]


class Answerer:
    def __init__(self, answers: dict[str, str]) -> None:
        self.answers = answers
        self.requests: list[m.QuestionRequest] = []

    async def __call__(self, request: m.QuestionRequest) -> dict[str, str]:
        self.requests.append(request)
        return self.answers


@pytest.mark.parametrize("kind", KINDS)
async def test_ask(open_wire: OpenWire, kind: str) -> None:
    answerer = Answerer({"Which color?": "blue"})
    async with open_wire(kind, on_question=answerer) as served:
        await served.client.prompt("/ask Which color? red|blue|green")
        events = served.client.take_events()
    assert text_of(events) == "You chose: blue"
    [request] = answerer.requests
    assert request.tool_call_id.startswith("call_")
    assert request.questions == [m.QuestionItem(
        question="Which color?", header="",
        options=[m.QuestionOption(label=x) for x in ("red", "blue", "green")],
    )]


@pytest.mark.parametrize("kind", ["memory", "subprocess"])
async def test_ask_dismissed_or_unsupported(open_wire: OpenWire, kind: str) -> None:
    async with open_wire(kind, on_question=Answerer({})) as served:
        await served.client.prompt("/ask Which color? red|blue")
        assert text_of(served.client.take_events()) == "No answer"
    async with open_wire(kind) as served:  # no handler: supports_question false
        await served.client.prompt("/ask Which color? red|blue")
        assert text_of(served.client.take_events()) == "Questions are not supported by this client"


@pytest.mark.parametrize("kind", KINDS)
async def test_title_retry_subagent(open_wire: OpenWire, kind: str) -> None:
    async with open_wire(kind) as served:
        client = served.client
        await client.prompt("/title My session")
        title = client.take_events()
        await client.prompt("/retry")
        retry = client.take_events()
        await client.prompt("/subagent hello from below")
        sub = client.take_events()
    assert text_of(title) == "Title set"  # Wire has no titles: nothing else is sent
    assert [type(e) for e in title] == [m.TurnBegin, m.StepBegin, m.TextPart, m.TurnEnd]
    assert of_type(retry, m.StepRetry) == [m.StepRetry(
        n=1, next_attempt=2, max_attempts=3, wait_s=0.0, error_type="TimeoutError")]
    assert text_of(retry) == "Recovered"
    [call] = of_type(sub, m.ToolCall)
    assert call.function.name == "subagent"
    nested = of_type(sub, m.SubagentEvent)
    assert nested and all(e.parent_tool_call_id == call.id for e in nested)
    assert all(e.subagent_type == "demo" for e in nested)
    inner = [e.event.payload for e in nested]
    assert all(isinstance(p, m.TextPart) for p in inner)  # typed by the client
    assert "".join(p.text for p in inner) == "hello from below"
    [result] = of_type(sub, m.ToolResult)
    assert result.tool_call_id == call.id and result.return_value.output == "hello from below"
    assert text_of(sub) == "Subagent done"
    assert sub.index(nested[-1]) < sub.index(result)


@pytest.mark.parametrize("kind", ["memory", "subprocess"])
async def test_replay_keeps_the_events_typed(open_wire: OpenWire, kind: str) -> None:
    async with open_wire(kind, session_id="sess-cov") as served:
        await served.client.prompt("/retry")
        await served.client.prompt("/subagent nested")
        live = served.client.take_events()
    async with open_wire(kind, session_id="sess-cov") as served:
        await served.client.replay()
        replayed = served.client.take_events()
    assert of_type(replayed, m.StepRetry) == of_type(live, m.StepRetry)
    nested = of_type(replayed, m.SubagentEvent)
    assert [e.event for e in nested] == [e.event for e in of_type(live, m.SubagentEvent)]
    assert all(isinstance(e.event.payload, m.TextPart) for e in nested)


def _wire(events: list[Any]) -> list[dict[str, Any]]:
    """The Wire envelopes as JSON values (golden comparison)."""
    return [msgspec.to_builtins(encode_event(e)) for e in events]


def test_golden_progress_events() -> None:
    tr = Translator()
    out: list[Any] = []
    for event in [
        StepRetried(n=2, next_attempt=3, max_attempts=5, wait_s=1.5, error_type="RateLimit",
                    status_code=429),
        CompactionStarted(id="c1"),
        CompactionEnded(id="c1", summary="short"),
        SideQuestionStarted(id="b1", question="Why?"),
        SideQuestionEnded(id="b1", response="Because."),
        ToolCallStarted(id="call_1", name="Shell", title="Run"),
        ToolArgumentsChunk(id="call_1", part='{"cmd":'),
        ToolArgumentsChunk(id="call_1", part='"ls"}'),
        SubagentEvent(parent_tool_call_id="call_1", agent_id="a1", subagent_type="explorer",
                      event=AgentMessageChunk(text="hi", message_id="m1")),
        SubagentEvent(parent_tool_call_id="call_1",
                      event=ToolCallStarted(id="call_1", name="Read", title="Read")),
        SubagentEvent(parent_tool_call_id="call_1",
                      event=ToolCallUpdated(id="call_1", status=ToolStatus.COMPLETED)),
        TitleChanged(title="ignored"),
        CommandsChanged(commands=[SlashCommandInfo("x", "y")]),
    ]:
        out += tr.translate(event)
    assert _wire(out) == [
        {"type": "StepRetry", "payload": {"n": 2, "next_attempt": 3, "max_attempts": 5,
                                          "wait_s": 1.5, "error_type": "RateLimit",
                                          "status_code": 429}},
        {"type": "CompactionBegin", "payload": {}},
        {"type": "CompactionEnd", "payload": {}},
        {"type": "BtwBegin", "payload": {"id": "b1", "question": "Why?"}},
        {"type": "BtwEnd", "payload": {"id": "b1", "response": "Because.", "error": None}},
        {"type": "ToolCall", "payload": {"type": "function", "id": "call_1",
                                         "function": {"name": "Shell", "arguments": None},
                                         "extras": None}},
        {"type": "ToolCallPart", "payload": {"arguments_part": '{"cmd":'}},
        {"type": "ToolCallPart", "payload": {"arguments_part": '"ls"}'}},
        {"type": "SubagentEvent", "payload": {
            "parent_tool_call_id": "call_1", "agent_id": "a1", "subagent_type": "explorer",
            "event": {"type": "ContentPart", "payload": {"type": "text", "text": "hi"}}}},
        {"type": "SubagentEvent", "payload": {
            "parent_tool_call_id": "call_1", "agent_id": None, "subagent_type": None,
            "event": {"type": "ToolCall", "payload": {
                "type": "function", "id": "call_1",
                "function": {"name": "Read", "arguments": None}, "extras": None}}}},
        {"type": "SubagentEvent", "payload": {
            "parent_tool_call_id": "call_1", "agent_id": None, "subagent_type": None,
            "event": {"type": "ToolResult", "payload": {
                "tool_call_id": "call_1",
                "return_value": {"is_error": False, "output": "", "message": "",
                                 "display": [], "extras": None}}}}},
    ]
    # and they decode back to the same typed events (as the client reads them)
    assert [decode_event(msgspec.json.encode(e)) for e in _wire(out)] == out


def test_tool_media_and_resources_are_output_parts() -> None:
    from wireproto.agent.content import (
        Diff,
        Image,
        ResourceBlob,
        ResourceLink,
        ResourceText,
        Text,
    )

    tr = Translator()
    tr.translate(ToolCallStarted(id="c", name="chart", title="Chart"))
    [result] = tr.translate(ToolCallUpdated(id="c", status=ToolStatus.COMPLETED, content=[
        Text("chart:"), Image(mime_type="image/png", data="iVBO"),
        Image(url="https://example.com/a.png"),
        ResourceText(uri="file:///d.csv", text="a,b"), ResourceLink(uri="https://x/r", name="r"),
        ResourceBlob(uri="file:///b", blob="AA"), Diff(path="/p", new_text="x"),
    ]))
    assert isinstance(result, m.ToolResult)
    assert result.return_value.output == [
        m.TextPart(text="chart:"),
        m.ImageURLPart(image_url=m.MediaURL(url="data:image/png;base64,iVBO")),
        m.ImageURLPart(image_url=m.MediaURL(url="https://example.com/a.png")),
        m.TextPart(text="[resource file:///d.csv]\na,b"),
        m.TextPart(text="[resource link: r <https://x/r>]"),
        m.TextPart(text="[binary resource file:///b (unknown type), not shown]"),
    ]
    assert [type(d).__name__ for d in result.return_value.display] == ["DiffDisplayBlock"]
    tr.translate(ToolCallStarted(id="t", name="t", title="t"))
    [plain] = tr.translate(ToolCallUpdated(id="t", status=ToolStatus.COMPLETED,
                                           content=[Text("a"), Text("b")]))
    assert plain.return_value.output == "a\nb"  # text only: a plain string, as before


class Asker(Agent):
    """Asks two questions in one request and reports the outcome."""

    async def prompt(self, turn: Turn) -> StopReason:
        answers = await turn.ask_questions([
            Question("Which languages?", ("Python", "Rust", "Go"), header="Langs",
                     multi_select=True, body="All that apply."),
            Question("Which license?", ("MIT", "BSD"), other_label="Other"),
        ])
        await turn.say(f"{answers.status.value} {list(answers.labels)}")
        return StopReason.END_TURN


@pytest.mark.parametrize("kind", ["memory", "websocket"])
async def test_several_questions_in_one_request(open_wire: OpenWire, kind: str) -> None:
    answerer = Answerer({"Which languages?": "Python, Go", "Which license?": "GPL"})
    async with open_wire(kind, agent=Asker(), on_question=answerer) as served:
        await served.client.prompt("go")
        events = served.client.take_events()
    assert text_of(events) == "answered [('Python', 'Go'), ('GPL',)]"
    [request] = answerer.requests
    payload = msgspec.to_builtins(request)
    assert payload["questions"] == [
        {"question": "Which languages?", "header": "Langs",
         "options": [{"label": x, "description": ""} for x in ("Python", "Rust", "Go")],
         "multi_select": True, "body": "All that apply.", "other_label": "",
         "other_description": ""},
        {"question": "Which license?", "header": "",
         "options": [{"label": x, "description": ""} for x in ("MIT", "BSD")],
         "multi_select": False, "body": "", "other_label": "Other", "other_description": ""},
    ]


class Busy(Agent):
    """Compacts, asks a side question, streams arguments, runs a sub-agent."""

    async def prompt(self, turn: Turn) -> StopReason:
        async with turn.compaction():
            pass
        await turn.side_question("Why?", "Because.")
        call = await turn.start_tool("search", "Search")
        await turn.stream_arguments(call, '{"query": ')
        await turn.stream_arguments(call, '"parser"}')
        await turn.subagent(call).say("found it")
        await call.complete()
        return StopReason.END_TURN


@pytest.mark.parametrize("kind", ["memory", "websocket"])
async def test_progress_events_through_our_client(open_wire: OpenWire, kind: str) -> None:
    async with open_wire(kind, agent=Busy()) as served:
        await served.client.prompt("go")
        events = served.client.take_events()
    names = [type(e).__name__ for e in events]
    for name in ("CompactionBegin", "CompactionEnd", "BtwBegin", "BtwEnd", "ToolCallPart",
                 "SubagentEvent"):
        assert name in names, name
    parts = [e.arguments_part for e in of_type(events, m.ToolCallPart)]
    assert "".join(parts) == '{"query": "parser"}'
    assert names.index("ToolCallPart") > names.index("ToolCall")
