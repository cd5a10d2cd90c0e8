"""Our ACP client's elicitation handler: advertising, checks of schema and answer, round trips.

Against a scripted raw agent (exact messages) and against our own demo agent
(the round trip of /ask through both of our roles). Also: ``usage_update``
counts sent as ``null``.
"""

from __future__ import annotations

import logging
import sys
from typing import Any

import anyio
import pytest

from wireproto.adapters.acp import bounded_answer_problem, bounded_schema_problem, serve_acp
from wireproto.adapters.acp import schema as S
from wireproto.adapters.acp.client.connection import ClientConnection
from wireproto.adapters.acp.client.elicitation import FormOrUrl, answer_problem, schema_problem
from wireproto.adapters.acp.codec import decode
from wireproto.agent.demo import DemoAgent
from wireproto.transports.memory import memory_pair

from .test_client import Recorder, connected, open_session

pytestmark = pytest.mark.anyio


class Answers:
    """An elicitation handler answering from a list, recording the requests."""

    def __init__(self, *answers: S.CreateElicitationResponse) -> None:
        self.answers = list(answers)
        self.requests: list[FormOrUrl] = []

    async def __call__(self, request: FormOrUrl) -> S.CreateElicitationResponse:
        self.requests.append(request)
        return self.answers.pop(0)


FORM = {
    "sessionId": "s1", "mode": "form", "message": "Which branch?",
    "requestedSchema": {"type": "object", "properties": {
        "branch": {"type": "string", "enum": ["main", "dev"]},
        "push": {"type": "boolean", "default": False},
        "count": {"type": "integer", "minimum": 1, "maximum": 3},
        "tags": {"type": "array", "items": {"type": "string", "enum": ["a", "b"]},
                 "maxItems": 1},
    }, "required": ["branch"]},
}


async def test_elicitation_is_advertised_only_with_a_handler() -> None:
    async with connected() as (_, _, request):
        assert "elicitation" not in request["params"]["clientCapabilities"]
    async with connected(on_elicitation=Answers()) as (_, _, request):
        assert request["params"]["clientCapabilities"]["elicitation"] == {"form": {}, "url": {}}
    async with connected(on_elicitation=Answers(), elicitation_modes=["form"]) as (_, _, req):
        assert req["params"]["clientCapabilities"]["elicitation"] == {"form": {}}


async def _ask(agent: Any, params: Any, rid: int = 7) -> Any:
    await agent.send({"id": rid, "method": "elicitation/create", "params": params})
    reply = await agent.receive()
    assert reply["id"] == rid, reply
    return reply


async def test_a_valid_answer_goes_through() -> None:
    answers = Answers(S.AcceptElicitationResponse(content={"branch": "dev", "count": 2}))
    async with connected(on_elicitation=answers) as (client, agent, _):
        await open_session(client, agent)
        reply = await _ask(agent, FORM)
    assert reply["result"] == {"action": "accept", "content": {"branch": "dev", "count": 2}}
    [request] = answers.requests
    assert isinstance(request, S.CreateFormElicitationRequest)
    assert request.message == "Which branch?"


@pytest.mark.parametrize("content", [
    {},  # required field missing
    {"branch": "feature"},  # not in the enum
    {"branch": "main", "count": 7},  # above the maximum
    {"branch": "main", "count": 1.5},  # not an integer
    {"branch": "main", "push": "yes"},  # not a boolean
    {"branch": "main", "tags": ["a", "b"]},  # more than maxItems
    {"branch": "main", "tags": ["c"]},  # not a choice
    {"branch": "main", "extra": 1},  # not in the form
])
async def test_an_invalid_answer_is_sent_as_cancel(
    content: Any, caplog: pytest.LogCaptureFixture
) -> None:
    answers = Answers(S.AcceptElicitationResponse(content=content))
    async with connected(on_elicitation=answers) as (client, agent, _):
        await open_session(client, agent)
        with caplog.at_level(logging.ERROR):
            reply = await _ask(agent, FORM)
    assert reply["result"] == {"action": "cancel"}
    assert "answer is invalid" in caplog.text


@pytest.mark.parametrize("properties, problem", [
    ({"x": {"type": "object"}}, "unsupported type 'object'"),
    ({"x": {"type": "string", "minLength": 5, "maxLength": 2}}, "minLength"),
    ({"x": {"type": "string", "enum": ["a"], "default": "b"}}, "not one of"),
    ({"x": {"type": "number", "minimum": 3, "maximum": 1}}, "minimum"),
    ({"x": {"type": "array", "items": {"type": "number"}}}, "multi-select items"),
    ({"x": {"type": "string", "pattern": "("}}, "invalid pattern"),
])
async def test_a_schema_outside_the_restricted_subset_is_invalid_params(
    properties: Any, problem: str
) -> None:
    answers = Answers()
    params = {**FORM, "requestedSchema": {"properties": properties}}
    async with connected(on_elicitation=answers) as (client, agent, _):
        await open_session(client, agent)
        reply = await _ask(agent, params)
    assert reply["error"]["code"] == -32602
    assert problem in reply["error"]["message"]
    assert answers.requests == []



SLOW = "^(a|aa)+$"  # backtracks ~1.6**n steps on n "a" and a "!"


@pytest.mark.parametrize(("field", "answer", "reply"), [
    # the agent's own default is checked against its pattern: refused
    ({"type": "string", "pattern": SLOW, "default": "a" * 60 + "!"}, None, None),
    # the program's answer is: sent as cancel
    ({"type": "string", "pattern": SLOW}, "a" * 60 + "!", {"action": "cancel"}),
    # a pattern that is quick to check still is
    ({"type": "string", "pattern": "^a+$", "default": "aa"}, "aaa",
     {"action": "accept", "content": {"q": "aaa"}}),
    ({"type": "string", "pattern": "^a+$"}, "ab", {"action": "cancel"}),
])
async def test_an_agents_pattern_is_checked_in_bounded_time(
    field: Any, answer: str | None, reply: Any, caplog: pytest.LogCaptureFixture
) -> None:
    answers = Answers(S.AcceptElicitationResponse(content={"q": answer}))
    params = {**FORM, "requestedSchema": {"properties": {"q": field}}}
    async with connected(on_elicitation=answers) as (client, agent, _):
        await open_session(client, agent)
        with caplog.at_level(logging.ERROR):
            got = await _ask(agent, params)  # (never a frozen event loop)
    if reply is None:
        assert got["error"] == {"code": -32602, "message": "Invalid params: requestedSchema: "
                                "a pattern takes longer than 2 s to check"}
        assert answers.requests == []
    else:
        assert got["result"] == reply
        assert ("answer is invalid" in caplog.text) is (reply["action"] == "cancel")



async def test_the_public_bounded_checks_stop_a_slow_pattern() -> None:
    slow = decode(b'{"properties": {"q": {"type": "string", "pattern": "' + SLOW.encode()
                  + b'", "default": "' + b"a" * 60 + b'!"}}}', S.ElicitationSchema)
    too_long = "a pattern takes longer than 2 s to check"
    assert await bounded_schema_problem(slow) == too_long
    assert await bounded_answer_problem(slow, {"q": "a" * 60 + "!"}) == too_long
    quick = decode(b'{"properties": {"q": {"type": "string", "pattern": "^a+$"}}}',
                   S.ElicitationSchema)
    for content in ({"q": "aa"}, {"q": "ab"}, {"q": 1}, None):
        assert await bounded_answer_problem(quick, content) == answer_problem(quick, content)
    assert await bounded_schema_problem(quick) is None



PROGRAM = """
import pathlib, sys
import anyio
from wireproto.adapters.acp import schema as S
from wireproto.adapters.acp import bounded_answer_problem, bounded_schema_problem
from wireproto.adapters.acp.codec import decode

with pathlib.Path(sys.argv[1]).open("a") as runs:  # what a program does when it starts
    runs.write("started\\n")

async def main() -> None:
    field = b'{"properties": {"q": {"type": "string", "pattern": "^a+$", "default": "aa"}}}'
    schema = decode(field, S.ElicitationSchema)
    answer = await bounded_answer_problem(schema, {"q": "b"})
    print(await bounded_schema_problem(schema), answer)

anyio.run(main)
"""


async def test_the_pattern_search_never_runs_the_programs_own_code(tmp_path: Any) -> None:
    # (a worker that imports the program's __main__ again started it twice, or, for
    # python -m wireproto, ran the CLI in the worker, which exited: the check failed)
    program, runs = tmp_path / "client.py", tmp_path / "runs"
    program.write_text(PROGRAM)
    done = await anyio.run_process([sys.executable, str(program), str(runs)], check=False)
    assert done.returncode == 0, done.stderr.decode()
    assert done.stdout.decode().split() == ["None", "field", "'q':", "does", "not", "match",
                                            "'^a+$'"]
    assert runs.read_text() == "started\n"


async def test_an_integer_too_large_for_a_float_is_checked_not_raised() -> None:
    # (math.isfinite converts to float: OverflowError, an internal error for the agent)
    big = b"9" * 400
    schema = decode(b'{"properties": {"n": {"type": "integer", "maximum": 5, "default": '
                    + big + b"}}}", S.ElicitationSchema)
    assert schema_problem(schema) == "field 'n': greater than 5"
    assert answer_problem(schema, {"n": 10**400}) == "field 'n': greater than 5"


async def test_required_must_name_a_field() -> None:
    schema = decode(b'{"properties": {"a": {"type": "string"}}, "required": ["b"]}',
                    S.ElicitationSchema)
    assert schema_problem(schema) == "required field 'b' is not among the properties"
    assert answer_problem(schema, {"a": "x"}) == "required field 'b' is missing"


async def test_modes_not_advertised_and_unknown_sessions() -> None:
    answers = Answers()
    url = {"sessionId": "s1", "mode": "url", "message": "Sign in",
           "elicitationId": "e1", "url": "https://example.com"}
    async with connected(on_elicitation=answers, elicitation_modes=["form"]) as (c, agent, _):
        await open_session(c, agent)
        not_advertised = await _ask(agent, url, 1)
        custom = await _ask(agent, {**url, "mode": "_acme/voice"}, 2)
        unknown = await _ask(agent, {**FORM, "sessionId": "nope"}, 3)
    assert not_advertised["error"]["code"] == -32602
    assert "'url' was not advertised" in not_advertised["error"]["message"]
    assert custom["error"]["code"] == -32602
    assert unknown["error"]["code"] == -32002
    assert answers.requests == []


async def test_url_mode_and_complete_reach_the_program() -> None:
    completed: list[str] = []

    async def on_complete(elicitation_id: str) -> None:
        completed.append(elicitation_id)

    answers = Answers(S.AcceptElicitationResponse())
    url = {"sessionId": "s1", "mode": "url", "message": "Sign in",
           "elicitationId": "e1", "url": "https://example.com/login"}
    async with connected(on_elicitation=answers, on_elicitation_complete=on_complete) as (
        client, agent, _
    ):
        await open_session(client, agent)
        reply = await _ask(agent, url)
        await agent.send({"method": "elicitation/complete", "params": {"elicitationId": "e1"}})
        await _ask(agent, {**FORM, "sessionId": "nope"}, 8)  # a round trip: handled by now
    assert reply["result"] == {"action": "accept"}
    assert isinstance(answers.requests[0], S.CreateUrlElicitationRequest)
    assert answers.requests[0].url == "https://example.com/login"
    assert completed == ["e1"]


async def test_the_agent_cancelling_cancels_the_handler() -> None:
    started, cancelled = anyio.Event(), anyio.Event()

    async def slow(request: FormOrUrl) -> S.CreateElicitationResponse:
        started.set()
        try:
            await anyio.sleep_forever()
        finally:
            cancelled.set()
        raise AssertionError("unreachable")

    async with connected(on_elicitation=slow) as (client, agent, _):
        await open_session(client, agent)
        await agent.send({"id": 9, "method": "elicitation/create", "params": FORM})
        await started.wait()
        await agent.send({"method": "$/cancel_request", "params": {"requestId": 9}})
        reply = await agent.receive()
    assert reply["id"] == 9 and reply["error"]["code"] == -32800
    assert cancelled.is_set()


async def test_usage_update_with_null_counts_is_kept() -> None:
    recorder = Recorder()
    async with connected(on_update=recorder) as (client, agent, _):
        await open_session(client, agent)
        await agent.send({"method": "session/update", "params": {"sessionId": "s1", "update": {
            "sessionUpdate": "usage_update", "used": None, "size": 200000, "cost": None}}})
        await _ask(agent, {**FORM, "sessionId": "nope"}, 8)  # answered -32601: handled by now
    [event] = [e for e in recorder.events if isinstance(e.update, S.UsageUpdate)]
    assert (event.update.used, event.update.size) == (0, 200000)


# ------------------------------------------------------------ round trip


async def _demo(answers: Answers | None, prompt: str) -> str:
    ours, theirs = memory_pair()
    stop = anyio.Event()
    async with anyio.create_task_group() as tg:
        tg.start_soon(lambda: serve_acp(DemoAgent(), theirs, stop=stop))
        options: dict[str, Any] = {} if answers is None else {"on_elicitation": answers}
        async with ClientConnection(ours, **options) as client:
            await client.initialize()
            session = await client.new_session("/")
            text = ""
            async with client.prompt(session.session_id, prompt) as turn:
                async for update in turn:
                    if isinstance(update, S.AgentMessageChunk) and isinstance(
                        update.content, S.TextContent
                    ):
                        text += update.content.text
        stop.set()
    return text


async def test_round_trip_through_both_of_our_roles(tmp_path: Any,
                                                    monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("WIREPROTO_HOME", str(tmp_path))
    answers = Answers(S.AcceptElicitationResponse(content={"q1": "tea"}))
    assert await _demo(answers, "/ask Coffee or tea? coffee|tea") == "You chose: tea"
    [request] = answers.requests
    assert isinstance(request, S.CreateFormElicitationRequest)
    field = request.requested_schema.properties["q1"]
    assert isinstance(field, S.StringPropertySchema) and field.enum == ["coffee", "tea"]
    assert await _demo(Answers(S.DeclineElicitationResponse()),
                       "/ask Coffee or tea? coffee|tea") == "No answer"
    assert await _demo(None, "/ask Coffee or tea? coffee|tea") == (
        "Questions are not supported by this client")
