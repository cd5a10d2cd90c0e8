"""An ACP backend's form elicitations, asked as questions of a Wire front client.

The proxy's ACP client advertises form elicitation only. A form whose
fields are all choices (a string ``enum`` or ``oneOf``, or an array of such)
becomes one :class:`~wireproto.agent.api.Question` per field
(:func:`form_questions`); the labels chosen come back as the form's content
(:func:`form_content`). A form with any other field (free text, numbers,
booleans) has no Wire counterpart: it is declined, and the refusal logged.
"""

from __future__ import annotations

from typing import Any

from wireproto.adapters.acp import schema as s
from wireproto.agent.api import Question

__all__ = ["form_content", "form_questions"]

def _labels(field: Any) -> tuple[list[str], bool] | None:
    """A field's choices and whether several may be chosen; ``None``: not a choice."""
    if isinstance(field, s.StringPropertySchema):
        if isinstance(field.enum, list):
            return list(field.enum), False
        if isinstance(field.one_of, list):
            return [o.const for o in field.one_of], False
    if isinstance(field, s.MultiSelectPropertySchema):
        items = field.items
        if isinstance(items, s.TitledMultiSelectItems):
            return [o.const for o in items.any_of], True
        values = getattr(items, "enum", None)
        if isinstance(values, list):
            return [str(v) for v in values], True
    return None


def form_questions(request: s.CreateFormElicitationRequest) -> list[tuple[str, Question]] | None:
    """One question per field of the form; ``None`` when a field is not a choice."""
    questions: list[tuple[str, Question]] = []
    for name, field in request.requested_schema.properties.items():
        found = _labels(field)
        if found is None or not found[0]:
            return None
        labels, multi = found
        title = getattr(field, "title", None)
        text = getattr(field, "description", None)
        questions.append((name, Question(
            question=text if isinstance(text, str) and text else request.message,
            options=tuple(labels), header=title if isinstance(title, str) else "",
            multi_select=multi,
        )))
    return questions


def form_content(questions: list[tuple[str, Question]], answers: list[list[str]]) -> (
    s.CreateElicitationResponse
):
    """The form's answer: accepted with every field answered, else declined."""
    content: dict[str, Any] = {}
    for (name, question), chosen in zip(questions, answers, strict=True):
        if not chosen:
            return s.DeclineElicitationResponse()
        content[name] = chosen if question.multi_select else chosen[0]
    return s.AcceptElicitationResponse(content=content)
