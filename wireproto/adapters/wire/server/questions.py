"""Wire ``QuestionRequest`` for the neutral multi-question API.

One request carries every question of :meth:`Turn.ask_questions
<wireproto.agent.questions.Asking.ask_questions>` as a ``QuestionItem`` (its
``body``, ``other_label`` and ``multi_select`` included). The answer maps each
question text to a label, or to comma-joined labels for a multi-select
question (matched against the option labels, so a label may hold a comma);
a free-text ("other") answer is its text. An empty map means the
user dismissed the questions (:attr:`AskStatus.DECLINED`); no answer at all
(a failure, or the turn was cancelled) is :attr:`AskStatus.CANCELLED`.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from wireproto.agent.api import Question
from wireproto.agent.questions import Answers, AskStatus

from .. import messages as m

__all__ = ["answers_of", "question_request"]


def question_request(
    request_id: str, tool_call_id: str, questions: Sequence[Question]
) -> m.QuestionRequest:
    """The ``QuestionRequest`` asking ``questions``."""
    return m.QuestionRequest(
        id=request_id,
        tool_call_id=tool_call_id,
        questions=[
            m.QuestionItem(
                question=q.question, header=q.header,
                options=[m.QuestionOption(label=label) for label in q.options],
                multi_select=q.multi_select, body=q.body, other_label=q.other_label,
            )
            for q in questions
        ],
    )


_ENDS = re.compile(r"\s*(?:,|\Z)")
"""What follows a whole label in a multi-select answer (matched in place: no copy of the
rest of the answer per label, which made a long answer quadratic)."""


def _labels(question: Question, answer: str) -> tuple[str, ...]:
    if not question.multi_select:
        return (answer,) if answer else ()
    return _split(answer, sorted(question.options, key=len, reverse=True))


def _split(answer: str, known: Sequence[str]) -> tuple[str, ...]:
    """The labels of a comma-joined multi-select answer.

    A label may itself hold a comma, so at each place the longest option
    label that fits (followed by a comma or the end) is taken whole; text
    that is no option label (a free-text answer) runs to the next comma.
    """
    labels: list[str] = []
    at, end = 0, len(answer)
    while at < end:
        while at < end and answer[at].isspace():
            at += 1
        for label in known:
            stop = at + len(label)
            if label and answer.startswith(label, at) and _ENDS.match(answer, stop):
                labels.append(label)
                comma = answer.find(",", stop)
                at = end if comma < 0 else comma + 1
                break
        else:
            comma = answer.find(",", at)
            piece = answer[at:] if comma < 0 else answer[at:comma]
            if piece.strip():
                labels.append(piece.strip())
            at = end if comma < 0 else comma + 1
    return tuple(labels)


def answers_of(questions: Sequence[Question], response: m.Response | None) -> Answers:
    """The neutral :class:`Answers` of a client's response (``None``: none came)."""
    if not isinstance(response, m.QuestionResponse):
        return Answers(AskStatus.CANCELLED)
    if not response.answers:
        return Answers(AskStatus.DECLINED)
    return Answers(
        AskStatus.ANSWERED,
        tuple(_labels(q, response.answers.get(q.question, "")) for q in questions),
    )
