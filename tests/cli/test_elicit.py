"""Form and URL elicitations asked at a (scripted) keyboard: every field kind."""

from __future__ import annotations

import io

import pytest

from wireproto.adapters.acp import schema as S
from wireproto.adapters.acp.codec import decode
from wireproto.cli.elicit import answer_elicitation, answer_questions
from wireproto.cli.render import Printer

pytestmark = pytest.mark.anyio


class Keys:
    """A keyboard typing the given lines, then end of input."""

    interactive = False

    def __init__(self, *lines: str) -> None:
        self.lines = list(lines)
        self.prompts: list[str] = []

    async def read(self, prompt: str = "") -> str | None:
        self.prompts.append(prompt)
        return self.lines.pop(0) if self.lines else None


class FakeUi:
    def __init__(self, keyboard: Keys | None) -> None:
        self.out = io.StringIO()
        self.printer = Printer(self.out)
        self.keyboard = keyboard


FORM = b"""{"sessionId": "s", "mode": "form", "message": "Set up the build", "requestedSchema": {
  "properties": {
    "target": {"type": "string", "title": "Target", "oneOf": [
        {"const": "dbg", "title": "Debug"}, {"const": "rel", "title": "Release"}]},
    "jobs": {"type": "integer", "minimum": 1, "maximum": 8, "default": 4},
    "ratio": {"type": "number"},
    "clean": {"type": "boolean", "default": false},
    "name": {"type": "string", "minLength": 2},
    "tags": {"type": "array", "items": {"type": "string", "enum": ["x", "y", "z"]}}
  },
  "required": ["target", "name"]}}"""


async def test_every_field_kind() -> None:
    request = decode(FORM, S.CreateElicitationRequest)
    keys = Keys("", "Release", "99", "", "abc", "0.5", "yes", "n", "nm", "1,z")
    ui = FakeUi(keys)
    answer = await answer_elicitation(ui, request)  # type: ignore[arg-type]
    assert answer == S.AcceptElicitationResponse(content={
        "target": "rel", "jobs": 4, "ratio": 0.5, "clean": True, "name": "nm",
        "tags": ["x", "z"],
    })
    out = ui.out.getvalue()
    assert "[question] Set up the build" in out
    assert "1) Debug" in out and "2) Release" in out
    assert "an answer is required" in out  # the empty first answer to a required field
    assert "greater than 8; try again" in out  # 99 jobs
    assert "expected a number; try again" in out
    assert "shorter than 2 characters; try again" in out


async def test_digits_and_numbers_that_cannot_be_sent_are_asked_again() -> None:
    request = decode(FORM, S.CreateElicitationRequest)
    keys = Keys("\u00b2", "9" * 5000, "2", "", "nan", "inf", "", "", "nm", "")  # ²: isdigit
    ui = FakeUi(keys)
    answer = await answer_elicitation(ui, request)  # type: ignore[arg-type]
    assert answer == S.AcceptElicitationResponse(content={
        "target": "rel", "jobs": 4, "clean": False, "name": "nm"})
    assert ui.out.getvalue().count("is not one of ['dbg', 'rel']; try again") == 2
    assert ui.out.getvalue().count("expected a finite number; try again") == 2  # (sent as null)


async def test_a_typed_answer_is_matched_against_the_agents_pattern_in_bounded_time() -> None:
    request = decode(b"""{"sessionId": "s", "mode": "form", "message": "m", "requestedSchema": {
      "properties": {"q": {"type": "string", "pattern": "^(a|aa)+$"}}}}""",
                     S.CreateElicitationRequest)
    ui = FakeUi(Keys("a" * 60 + "!", "ab", "aaa"))  # (the first backtracks ~1.6**60 steps)
    answer = await answer_elicitation(ui, request)  # type: ignore[arg-type]
    assert answer == S.AcceptElicitationResponse(content={"q": "aaa"})
    out = ui.out.getvalue()
    assert "a pattern takes longer than 2 s to check; try again" in out
    assert "does not match '^(a|aa)+$'; try again" in out


async def test_decline_cancel_and_no_keyboard() -> None:
    request = decode(FORM, S.CreateElicitationRequest)
    assert await answer_elicitation(FakeUi(Keys("/decline")), request) == (  # type: ignore[arg-type]
        S.DeclineElicitationResponse())
    assert await answer_elicitation(FakeUi(Keys()), request) == (  # type: ignore[arg-type]
        S.CancelElicitationResponse())
    ui = FakeUi(None)
    assert await answer_elicitation(ui, request) == (  # type: ignore[arg-type]
        S.DeclineElicitationResponse())
    assert "no keyboard" in ui.out.getvalue()


async def test_url_is_shown_as_a_link() -> None:
    request = S.CreateUrlElicitationRequest(session_id="s", message="Sign in",
                                            elicitation_id="e", url="https://example.com/x")
    ui = FakeUi(Keys("y"))
    assert await answer_elicitation(ui, request) == S.AcceptElicitationResponse()
    assert "open this link: https://example.com/x" in ui.out.getvalue()
    assert await answer_elicitation(FakeUi(Keys("")), request) == (
        S.DeclineElicitationResponse())


async def test_wire_questions() -> None:
    from wireproto.adapters.wire import messages as m

    request = m.QuestionRequest(id="q", tool_call_id="c", questions=[
        m.QuestionItem(question="Langs?", options=[m.QuestionOption(label=x) for x in "ab"],
                       multi_select=True),
        m.QuestionItem(question="License?", options=[m.QuestionOption(label="MIT")],
                       other_label="Other"),
    ])
    assert await answer_questions(FakeUi(Keys("1,2", "GPL")), request) == {  # type: ignore[arg-type]
        "Langs?": "a, b", "License?": "GPL"}
    assert await answer_questions(FakeUi(Keys("/cancel")), request) == {}  # type: ignore[arg-type]
    ui = FakeUi(None)
    assert await answer_questions(ui, request) == {}  # type: ignore[arg-type]
    assert ui.out.getvalue().splitlines() == [  # (what was not answered, said)
        "[question] Langs? / License?", "  -> dismissed (no keyboard with --script)"]
