"""The proxy's translation tables: complete, and each row what docs/proxy.md says."""

from __future__ import annotations

import logging
from typing import get_args, get_type_hints

import pytest

from wireproto.adapters.acp import schema as s
from wireproto.adapters.acp.client.turn import KNOWN_STOP_REASONS
from wireproto.adapters.acp.translate import STOP_REASONS
from wireproto.adapters.wire.methods import PromptResult
from wireproto.adapters.wire.translate import STOP_REASON_STATUS
from wireproto.agent.api import Decision
from wireproto.agent.content import Diff, Text
from wireproto.agent.events import StopReason
from wireproto.proxy.acpback import OPTION_KINDS, STOP_OF_ACP, _content
from wireproto.proxy.questions import form_content, form_questions
from wireproto.proxy.refusals import refuse_once
from wireproto.proxy.wireback import STATUS_TO_STOP, wire_command


def test_every_acp_stop_reason_has_a_neutral_one_and_back() -> None:
    assert set(STOP_OF_ACP) == set(KNOWN_STOP_REASONS)
    for acp, neutral in STOP_OF_ACP.items():
        assert STOP_REASONS[neutral] == acp  # ACP -> neutral -> ACP is the identity


def test_every_wire_status_has_a_neutral_one_and_back() -> None:
    statuses = set(get_args(get_type_hints(PromptResult)["status"]))
    assert statuses and set(STATUS_TO_STOP) == statuses
    for status, neutral in STATUS_TO_STOP.items():
        assert STOP_REASON_STATUS[neutral] == status


@pytest.mark.parametrize(("decision", "kinds", "chosen"), [
    (Decision.ALLOW_ONCE, ["allow_once", "allow_always", "reject_once"], "allow_once"),
    (Decision.ALLOW_SESSION, ["allow_once", "allow_always", "reject_once"], "allow_always"),
    (Decision.ALLOW_SESSION, ["allow_once", "reject_once"], "allow_once"),
    (Decision.REJECT, ["allow_once", "reject_always"], "reject_always"),
])
def test_decisions_choose_the_nearest_permission_option(
    decision: Decision, kinds: list[str], chosen: str
) -> None:
    first = next(kind for kind in OPTION_KINDS[decision] if kind in kinds)
    assert first == chosen


def test_acp_tool_content_becomes_neutral_with_terminals_as_text() -> None:
    content = _content([
        s.Diff(path="/p/a.txt", old_text=None, new_text="new"),
        s.Content(content=s.TextContent(text="out")),
        s.Terminal(terminal_id="term-1"),
    ])
    assert content == [Diff(path="/p/a.txt", new_text="new", old_text=None), Text("out"),
                       Text("[terminal term-1]")]


def test_the_wire_sdk_spawn_convention() -> None:
    assert wire_command(["kimi"], "s1", "/w") == ["kimi", "--session", "s1", "--work-dir", "/w",
                                                  "--wire"]
    assert wire_command(["kimi", "--wire"], "s1", "/w", thinking=True) == [
        "kimi", "--wire", "--session", "s1", "--work-dir", "/w", "--thinking"]


def test_a_refusal_is_a_warning_once(caplog: pytest.LogCaptureFixture) -> None:
    with caplog.at_level(logging.DEBUG, logger="wireproto.proxy"):
        first = refuse_once("test feature xyz", "it has no counterpart")
        refuse_once("test feature xyz", "it has no counterpart")
    warnings = [r for r in caplog.records if r.levelno == logging.WARNING]
    assert len(warnings) == 1 and warnings[0].getMessage() == first
    assert "test feature xyz cannot be translated" in first
    assert StopReason.END_TURN in STATUS_TO_STOP.values()


def test_forms_of_choice_fields_become_questions_and_answers_their_content() -> None:
    form = s.CreateFormElicitationRequest(
        message="Pick", session_id="s1",
        requested_schema=s.ElicitationSchema(properties={
            "color": s.StringPropertySchema(title="Color", description="Which color?",
                                            enum=["red", "blue"]),
            "tags": s.MultiSelectPropertySchema(items=s.TitledMultiSelectItems(any_of=[
                s.EnumOption(const="a", title="A"), s.EnumOption(const="b", title="B")])),
        }),
    )
    questions = form_questions(form)
    assert questions is not None
    assert [(name, q.question, q.options, q.multi_select) for name, q in questions] == [
        ("color", "Which color?", ("red", "blue"), False), ("tags", "Pick", ("a", "b"), True)]
    accepted = form_content(questions, [["blue"], ["a", "b"]])
    assert accepted == s.AcceptElicitationResponse(content={"color": "blue", "tags": ["a", "b"]})
    assert isinstance(form_content(questions, [["blue"], []]), s.DeclineElicitationResponse)
    free_text = s.CreateFormElicitationRequest(
        message="Name?", session_id="s1",
        requested_schema=s.ElicitationSchema(properties={"name": s.StringPropertySchema()}))
    assert form_questions(free_text) is None
