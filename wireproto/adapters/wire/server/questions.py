"""Wire ``QuestionRequest`` for the neutral multi-question API.

One request carries every question of :meth:`Turn.ask_questions
<wireproto.agent.questions.Asking.ask_questions>` as a ``QuestionItem`` (its
``body``, ``other_label`` and ``multi_select`` included). The answer maps each
question text to a label, or to comma-joined labels for a multi-select
question; a free-text ("other") answer is its text. An empty map means the
user dismissed the questions (:attr:`AskStatus.DECLINED`); no answer at all
(a failure, or the turn was cancelled) is :attr:`AskStatus.CANCELLED`.
"""

from __future__ import annotations

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


def _labels(question: Question, answer: str) -> tuple[str, ...]:
    if not question.multi_select:
        return (answer,) if answer else ()
    return tuple(label.strip() for label in answer.split(",") if label.strip())


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
