"""ACP elicitation, agent side: the demo's /ask, several questions, URL mode, cancellation.

Golden messages: the exact ``elicitation/create`` params the agent sends; the
conformance checker of the raw client validates every message against the
schema and checks the mode was advertised.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from wireproto.agent.api import Agent, Question
from wireproto.agent.events import StopReason
from wireproto.agent.questions import AskStatus, check_questions
from wireproto.agent.turn import Turn

from ..conftest import OpenAcp, Reject

pytestmark = pytest.mark.anyio

FORM = {"elicitation": {"form": {}}}
BOTH = {"elicitation": {"form": {}, "url": {}}}


def text_of(updates: list[Any]) -> str:
    return "".join(u["content"]["text"] for u in updates
                   if u["sessionUpdate"] == "agent_message_chunk")


async def _session(client: Any, workdir: Path, caps: dict[str, Any] | None = None, *,
                   commands: bool = True) -> str:
    await client.initialize(caps)
    return str((await client.new_session(str(workdir), commands=commands))["sessionId"])


def _requests(client: Any, method: str = "elicitation/create") -> list[Any]:
    return [m for m in client.log if m.get("method") == method and "id" in m]


async def test_ask_is_one_form_field(acp: OpenAcp, workdir: Path) -> None:
    async with acp() as client:
        sid = await _session(client, workdir, FORM)
        client.answers["elicitation/create"] = lambda p: {
            "action": "accept", "content": {"q1": "blue"}}
        response, turn = await client.prompt(sid, "/ask Which color? red|blue")
    assert response["result"] == {"stopReason": "end_turn"}
    assert text_of(turn) == "You chose: blue"
    [request] = _requests(client)
    assert request["params"] == {
        "sessionId": sid, "mode": "form", "message": "Which color?",
        "requestedSchema": {  # "type": "object" is the default, left out
            "properties": {"q1": {"type": "string", "title": "Which color?",
                                  "description": "Which color?", "enum": ["red", "blue"]}},
            "required": ["q1"],
        },
    }


@pytest.mark.parametrize("answer", [
    {"action": "decline"},
    {"action": "cancel"},
    {"action": "accept", "content": {"q1": "green"}},  # not an option
    {"action": "accept"},  # no content
    {"action": "_acme/later"},  # a custom action
])
async def test_ask_not_answered(acp: OpenAcp, workdir: Path, answer: Any) -> None:
    async with acp() as client:
        sid = await _session(client, workdir, FORM)
        client.answers["elicitation/create"] = lambda p: answer
        _, turn = await client.prompt(sid, "/ask Which color? red|blue")
    assert text_of(turn) == "No answer"


async def test_a_failed_elicitation_is_no_answer(acp: OpenAcp, workdir: Path) -> None:
    async with acp() as client:
        sid = await _session(client, workdir, FORM)

        def refuse(params: Any) -> Any:
            raise Reject(-32602, "Invalid params")

        client.answers["elicitation/create"] = refuse
        response, turn = await client.prompt(sid, "/ask Which color? red|blue")
    assert response["result"] == {"stopReason": "end_turn"}
    assert text_of(turn) == "No answer"


@pytest.mark.parametrize("caps", [
    None,
    {"elicitation": {}},  # {} advertises no mode
    {"elicitation": {"form": None, "url": None}},
    {"elicitation": {"url": {}}},  # URL only: no form questions
])
async def test_no_form_mode_no_request(acp: OpenAcp, workdir: Path, caps: Any) -> None:
    async with acp() as client:
        sid = await _session(client, workdir, caps)
        _, turn = await client.prompt(sid, "/ask Which color? red|blue")
    assert text_of(turn) == "Questions are not supported by this client"
    assert _requests(client) == []


async def test_ask_usage(acp: OpenAcp, workdir: Path) -> None:
    async with acp() as client:
        sid = await _session(client, workdir, FORM)
        _, turn = await client.prompt(sid, "/ask no question mark red|blue")
        _, one = await client.prompt(sid, "/ask Only one? red")
    assert text_of(turn) == text_of(one) == "Usage: /ask QUESTION? OPTION1|OPTION2[|...]"


async def test_cancelling_the_turn_cancels_the_elicitation(acp: OpenAcp, workdir: Path) -> None:
    async with acp() as client:
        sid = await _session(client, workdir, FORM)
        rid = await client.request("session/prompt", {
            "sessionId": sid, "prompt": [{"type": "text", "text": "/ask Which color? red|blue"}]})
        request = await client.agent_request("elicitation/create")
        await client.notify("session/cancel", {"sessionId": sid})
        cancel = await client.wait_for(lambda m: m.get("method") == "$/cancel_request")
        assert cancel["params"] == {"requestId": request["id"]}
        await client.answer(request, error=(-32800, "Request cancelled"))
        response = await client.response(rid)
    assert response["result"] == {"stopReason": "cancelled"}


class Asker(Agent):
    """Asks what the prompt names: ``many``, ``url``; reports the outcome."""

    async def prompt(self, turn: Turn) -> StopReason:
        if turn.text == "many":
            call = await turn.start_tool("setup", "Set up")
            answers = await turn.ask_questions([
                Question("Which languages?", ("Python", "Rust", "Go"), header="Languages",
                         multi_select=True),
                Question("Which license?", ("MIT", "Apache-2.0"), header="License",
                         body="Pick the project's license.", other_label="Other"),
            ], tool_call_id=call.id)
            await call.complete()
            await turn.say(f"{answers.status.value} {list(answers.labels)}")
        elif turn.text == "url":
            status = await turn.ask_url("Sign in to continue", "https://example.com/login",
                                        elicitation_id="el-1")
            if status is AskStatus.ANSWERED:
                await turn.complete_url("el-1")
            await turn.say(status.value)
        return StopReason.END_TURN


async def test_several_questions_are_one_form(acp: OpenAcp, workdir: Path) -> None:
    async with acp(Asker()) as client:
        sid = await _session(client, workdir, FORM, commands=False)
        client.answers["elicitation/create"] = lambda p: {
            "action": "accept", "content": {"q1": ["Python", "Go"], "q2": "BSD-3"}}
        _, turn = await client.prompt(sid, "many")
    [request] = _requests(client)
    call_id = next(u["toolCallId"] for u in turn if u["sessionUpdate"] == "tool_call")
    assert request["params"] == {
        "sessionId": sid, "toolCallId": call_id, "mode": "form",
        "message": "Which languages?\nWhich license?",
        "requestedSchema": {  # "type": "object" is the default, left out
            "properties": {
                "q1": {"type": "array", "title": "Languages", "description": "Which languages?",
                       "minItems": 1, "items": {"type": "string",
                                                "enum": ["Python", "Rust", "Go"]}},
                "q2": {"type": "string", "title": "License", "minLength": 1,
                       "description": "Which license?\nChoose one of: MIT, Apache-2.0, or "
                                      "Other: type your own.\n\nPick the project's license."},
            },
            "required": ["q1", "q2"],
        },
    }
    assert text_of(turn) == "answered [('Python', 'Go'), ('BSD-3',)]"


async def test_url_mode_and_complete(acp: OpenAcp, workdir: Path) -> None:
    async with acp(Asker()) as client:
        sid = await _session(client, workdir, BOTH, commands=False)
        client.answers["elicitation/create"] = lambda p: {"action": "accept"}
        _, turn = await client.prompt(sid, "url")
    [request] = _requests(client)
    assert request["params"] == {
        "sessionId": sid, "mode": "url", "message": "Sign in to continue",
        "elicitationId": "el-1", "url": "https://example.com/login",
    }
    [complete] = [m for m in client.log if m.get("method") == "elicitation/complete"]
    assert complete["params"] == {"elicitationId": "el-1"}
    assert client.index(request) < client.index(complete)
    assert text_of(turn) == "answered"


async def test_url_mode_not_advertised(acp: OpenAcp, workdir: Path) -> None:
    async with acp(Asker()) as client:
        sid = await _session(client, workdir, FORM, commands=False)
        _, turn = await client.prompt(sid, "url")
    assert text_of(turn) == "unsupported"
    assert _requests(client) == []
    assert not [m for m in client.log if m.get("method") == "elicitation/complete"]


async def test_url_declined(acp: OpenAcp, workdir: Path) -> None:
    async with acp(Asker()) as client:
        sid = await _session(client, workdir, BOTH, commands=False)
        client.answers["elicitation/create"] = lambda p: {"action": "decline"}
        _, turn = await client.prompt(sid, "url")
    assert text_of(turn) == "declined"
    assert not [m for m in client.log if m.get("method") == "elicitation/complete"]


async def test_many_questions_rejected_locally() -> None:
    with pytest.raises(ValueError, match="1 to 4"):
        check_questions([Question(f"q{i}?", ("a", "b")) for i in range(5)])
    with pytest.raises(ValueError, match="differ"):
        check_questions([Question("same?", ("a", "b"))] * 2)
    for options in [("a",), ("a", "a"), ("a", "b", "c", "d", "e")]:
        with pytest.raises(ValueError, match="2 to 4 distinct options"):
            check_questions([Question("Which?", options)])
