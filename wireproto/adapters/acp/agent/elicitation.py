"""ACP elicitation, agent side: questions as form requests, URL interactions.

Theory of operation
-------------------
* **Questions -> one form.** :func:`form_request` turns the 1-4 neutral
  :class:`~wireproto.agent.api.Question`\\ s of one request into a form-mode
  ``elicitation/create`` with one required field per question, named
  ``q1`` ... ``q4`` (:func:`field_name`): a single-select string (``enum`` of
  the labels), or a multi-select array (``items.enum``, ``minItems: 1``). A
  question with an ``other_label`` accepts free text, so its field is a plain
  string whose description lists the labels. The field's ``title`` is the
  question's header (else its text), its ``description`` the question text and
  body. The ``message`` is the question for one question, else the questions
  one per line.
* **Answers back.** :func:`answers_of`: ``accept`` with every field present
  and valid gives :attr:`AskStatus.ANSWERED` (a label outside the options of
  a closed question makes the whole answer invalid: logged, and counted as
  declined); ``decline`` -> ``DECLINED``; ``cancel`` -> ``CANCELLED``; a
  custom or future action -> ``DECLINED``.
* **URL mode.** :func:`url_request` builds the URL-mode request;
  ``elicitation/complete`` is a notification naming the same id.
* Requests are session-scoped, with the tool call's id when there is one.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from typing import Any

from msgspec import UNSET

from wireproto.adapters.acp import schema as S
from wireproto.agent.api import Question
from wireproto.agent.questions import Answers, AskStatus

__all__ = ["answers_of", "field_name", "form_request", "url_request"]

log = logging.getLogger(__name__)


def field_name(index: int) -> str:
    """The form field of question ``index`` (0-based): ``q1`` ... ``q4``."""
    return f"q{index + 1}"


def _description(q: Question) -> str:
    text = q.question
    if q.other_label:
        text += f"\nChoose one of: {', '.join(q.options)}, or {q.other_label}: type your own."
    return f"{text}\n\n{q.body}" if q.body else text


def _field(q: Question) -> S.ElicitationPropertySchema:
    title = q.header or q.question
    if q.multi_select:
        return S.MultiSelectPropertySchema(
            title=title, description=_description(q), min_items=1,
            items=S.StringMultiSelectItems(enum=list(q.options)),
        )
    if q.other_label:
        return S.StringPropertySchema(title=title, description=_description(q), min_length=1)
    return S.StringPropertySchema(title=title, description=_description(q), enum=list(q.options))


def form_request(
    session_id: str, tool_call_id: str, questions: Sequence[Question]
) -> S.CreateFormElicitationRequest:
    """The form-mode ``elicitation/create`` params asking ``questions``."""
    names = [field_name(i) for i in range(len(questions))]
    message = (questions[0].question if len(questions) == 1
               else "\n".join(q.question for q in questions))
    return S.CreateFormElicitationRequest(
        session_id=session_id,
        tool_call_id=tool_call_id or UNSET,
        message=message,
        requested_schema=S.ElicitationSchema(
            properties={name: _field(q) for name, q in zip(names, questions, strict=True)},
            required=names,
        ),
    )


def url_request(
    session_id: str, tool_call_id: str, elicitation_id: str, message: str, url: str
) -> S.CreateUrlElicitationRequest:
    """The URL-mode ``elicitation/create`` params."""
    return S.CreateUrlElicitationRequest(
        session_id=session_id, tool_call_id=tool_call_id or UNSET,
        elicitation_id=elicitation_id, message=message, url=url,
    )


def _labels(q: Question, value: Any) -> tuple[str, ...] | None:
    """The labels of one field's value, ``None`` when it does not answer ``q``."""
    if q.multi_select:
        if not isinstance(value, list) or not value:
            return None
        labels = tuple(v for v in value if isinstance(v, str))
        if len(labels) != len(value):
            return None
    elif isinstance(value, str) and value:
        labels = (value,)
    else:
        return None
    if q.other_label and not q.multi_select:
        return labels
    return labels if all(label in q.options for label in labels) else None


def answers_of(questions: Sequence[Question], response: S.CreateElicitationResponse) -> Answers:
    """The neutral :class:`Answers` of an ``elicitation/create`` response."""
    if isinstance(response, S.CancelElicitationResponse):
        return Answers(AskStatus.CANCELLED)
    if not isinstance(response, S.AcceptElicitationResponse):
        return Answers(AskStatus.DECLINED)
    content = response.content if isinstance(response.content, dict) else {}
    found: list[tuple[str, ...]] = []
    for index, q in enumerate(questions):
        labels = _labels(q, content.get(field_name(index)))
        if labels is None:
            log.warning("elicitation answer %r does not answer %r; counted as declined",
                        content.get(field_name(index)), q.question)
            return Answers(AskStatus.DECLINED)
        found.append(labels)
    return Answers(AskStatus.ANSWERED, tuple(found))


def url_status(response: S.CreateElicitationResponse) -> AskStatus:
    """The neutral status of a URL-mode response."""
    if isinstance(response, S.AcceptElicitationResponse):
        return AskStatus.ANSWERED
    if isinstance(response, S.CancelElicitationResponse):
        return AskStatus.CANCELLED
    return AskStatus.DECLINED
