"""Answering an agent's questions at the keyboard (``wireproto connect``).

* **ACP form elicitations** are asked one field at a time: its title and
  description, the choices numbered (a number or the label answers), the
  default in brackets (an empty line takes it; an optional field without a
  default is skipped). An invalid value is explained and asked again.
  ``/decline`` refuses the whole form, ``/cancel`` (or end of input) cancels
  it.
* **ACP URL elicitations** show the message and the full URL as a link to
  open; the answer says whether the person opened it (``accept``) or not
  (``decline``). Nothing is opened automatically.
* **Wire questions** (``QuestionRequest``) are asked the same way, each
  question a single- or multi-select field.

Without a keyboard (``--script``) every question is declined, and said so.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from msgspec import UNSET

from wireproto.adapters.acp import schema as s
from wireproto.adapters.acp.client.elicitation import FormOrUrl, bounded_value_problem
from wireproto.adapters.wire import messages as m

if TYPE_CHECKING:
    from wireproto.cli.connect import Ui

__all__ = ["answer_elicitation", "answer_questions"]

_DECLINE, _CANCEL = "/decline", "/cancel"


class _Stop(Exception):
    """The person declined or cancelled (``action``)."""

    def __init__(self, action: str) -> None:
        super().__init__(action)
        self.action = action


def _given(value: Any) -> bool:
    return value is not UNSET and value is not None


def _choices(prop: Any) -> list[tuple[str, str]]:
    """``(value, label)`` of a select field (``[]`` for a free field)."""
    if isinstance(prop, s.StringPropertySchema):
        if _given(prop.one_of):
            return [(o.const, o.title) for o in prop.one_of]  # type: ignore[union-attr]
        if _given(prop.enum):
            return [(v, v) for v in prop.enum]  # type: ignore[union-attr]
    if isinstance(prop, s.MultiSelectPropertySchema):
        items = prop.items
        if isinstance(items, s.StringMultiSelectItems):
            return [(v, v) for v in items.enum]
        if isinstance(items, s.TitledMultiSelectItems):
            return [(o.const, o.title) for o in items.any_of]
    return []


def _pick(answer: str, choices: list[tuple[str, str]]) -> str:
    """A number or a label/value -> the value (the answer itself when nothing matches)."""
    # (digits int() takes: not "²", nor thousands of them)
    if answer.isascii() and answer.isdigit() and len(answer) < 10 \
            and 1 <= int(answer) <= len(choices):
        return choices[int(answer) - 1][0]
    for value, label in choices:
        if answer in (value, label):
            return value
    return answer


_BOOLEANS = {"y": True, "yes": True, "true": True, "n": False, "no": False, "false": False}


def _parse(prop: Any, answer: str, choices: list[tuple[str, str]]) -> Any:
    if isinstance(prop, s.MultiSelectPropertySchema):
        return [_pick(part.strip(), choices) for part in answer.split(",") if part.strip()]
    if isinstance(prop, s.BooleanPropertySchema):
        return _BOOLEANS.get(answer.lower(), answer)
    if isinstance(prop, s.IntegerPropertySchema | s.NumberPropertySchema):
        try:
            number = float(answer)
        except ValueError:
            return answer
        return int(number) if isinstance(prop, s.IntegerPropertySchema) and number.is_integer() \
            else number
    return _pick(answer, choices) if choices else answer


async def _read(ui: Ui, prompt: str) -> str:
    assert ui.keyboard is not None
    line = await ui.keyboard.read(prompt)
    if line is None or line.strip() == _CANCEL:
        raise _Stop("cancel")
    if line.strip() == _DECLINE:
        raise _Stop("decline")
    return line.strip()


async def _field(ui: Ui, name: str, prop: Any, required: bool) -> Any:
    """Ask one field; ``UNSET`` when an optional field is skipped."""
    printer = ui.printer
    title = prop.title if _given(getattr(prop, "title", None)) else name
    printer.line(f"  {title}" + ("" if required else " (optional)"))
    if _given(getattr(prop, "description", None)) and prop.description != title:
        for line in str(prop.description).splitlines():
            printer.line(f"    {line}")
    choices = _choices(prop)
    for number, (_, label) in enumerate(choices, 1):
        printer.line(f"    {number}) {label}")
    default = getattr(prop, "default", UNSET)
    hint = "several, comma-separated" if isinstance(prop, s.MultiSelectPropertySchema) else ""
    if isinstance(prop, s.BooleanPropertySchema):
        hint = "y/n"
    suffix = f" [{default}]" if _given(default) else ""
    while True:
        answer = await _read(ui, f"  {title}{' (' + hint + ')' if hint else ''}{suffix}: ")
        if not answer:
            if _given(default):
                return default
            if not required:
                return UNSET
            printer.line("    an answer is required (/decline refuses the form)")
            continue
        value = _parse(prop, answer, choices)
        problem = await bounded_value_problem(prop, value)  # (the agent's pattern)
        if problem is None:
            return value
        printer.line(f"    {problem}; try again")


async def _form(ui: Ui, request: s.CreateFormElicitationRequest) -> s.CreateElicitationResponse:
    schema = request.requested_schema
    required = set(schema.required or ())
    content: dict[str, Any] = {}
    for name, prop in schema.properties.items():
        value = await _field(ui, name, prop, name in required)
        if value is not UNSET:
            content[name] = value
    return s.AcceptElicitationResponse(content=content)


async def _url(ui: Ui, request: s.CreateUrlElicitationRequest) -> s.CreateElicitationResponse:
    ui.printer.line(f"  open this link: {request.url}")
    answer = (await _read(ui, "  did you open it? [y]es / [N]o: ")).lower()
    if answer in ("y", "yes"):
        return s.AcceptElicitationResponse()
    return s.DeclineElicitationResponse()


async def answer_elicitation(ui: Ui, request: FormOrUrl) -> s.CreateElicitationResponse:
    """Ask the person an ACP elicitation (see the module docstring)."""
    ui.printer.line(f"[question] {request.message}")
    if ui.keyboard is None:
        ui.printer.line("  -> declined (no keyboard with --script)")
        return s.DeclineElicitationResponse()
    ui.printer.line(f"  (answer each field; {_DECLINE} refuses, {_CANCEL} cancels)")
    try:
        if isinstance(request, s.CreateUrlElicitationRequest):
            return await _url(ui, request)
        return await _form(ui, request)
    except _Stop as stop:
        ui.printer.line(f"  -> {stop.action}")
        if stop.action == "decline":
            return s.DeclineElicitationResponse()
        return s.CancelElicitationResponse()


def _as_property(item: m.QuestionItem) -> Any:
    labels = [o.label for o in item.options]
    description = "\n".join(x for x in (item.question, item.body) if x)
    if item.multi_select:
        return s.MultiSelectPropertySchema(
            title=item.header or item.question, description=description, min_items=1,
            items=s.StringMultiSelectItems(enum=labels),
        )
    if item.other_label:
        return s.StringPropertySchema(title=item.header or item.question,
                                      description=f"{description}\n{', '.join(labels)} "
                                                  f"or {item.other_label}: type it",
                                      min_length=1)
    return s.StringPropertySchema(title=item.header or item.question, description=description,
                                  enum=labels)


async def answer_questions(ui: Ui, request: m.QuestionRequest) -> dict[str, str]:
    """Ask a Wire ``QuestionRequest``; ``{}`` (dismissed) when refused or without keyboard."""
    ui.printer.line(f"[question] {' / '.join(item.question for item in request.questions)}")
    if ui.keyboard is None:
        ui.printer.line("  -> dismissed (no keyboard with --script)")
        return {}
    answers: dict[str, str] = {}
    try:
        for item in request.questions:
            value = await _field(ui, item.question, _as_property(item), True)
            answers[item.question] = ", ".join(value) if isinstance(value, list) else str(value)
    except _Stop as stop:
        ui.printer.line(f"  -> {stop.action}")
        return {}
    return answers
