"""ACP elicitation, client side: serve ``elicitation/create`` with a program's handler.

:class:`ElicitationRequests` is routed by
:class:`~.connection.ClientConnection` only when the program
installs ``on_elicitation`` (and only then is ``elicitation`` advertised, with
the modes it handles). For each request:

1. a mode that was not advertised (or a custom/future one) is answered
   ``-32602``; a session-scoped request names a session of this connection
   (else ``-32002``);
2. a form's requested schema is checked against the restricted JSON Schema
   ACP allows (:func:`schema_problem`: string / number / integer / boolean
   properties, single-select enums, string multi-selects; ``required`` names
   existing fields; defaults valid); a bad one is answered ``-32602``;
3. the handler answers; an ``accept`` of a form is checked against the schema
   (:func:`answer_problem`). An invalid answer is a bug of the program: it is
   logged and ``cancel`` is sent instead, so the agent never gets data its
   schema forbids.

A ``pattern`` is the agent's regular expression, and one may backtrack for longer
than anyone waits (``(a|aa)+$`` against 60 ``a``) while holding the interpreter: the
values a form's checks match against patterns are matched first in a short-lived
child Python (only ``re``, none of the program's code: :mod:`wireproto._childcheck`),
stopped after :data:`PATTERN_TIME` (the request is then refused, or the answer sent as ``cancel``).

``elicitation/complete`` notifications go to ``on_complete`` when given.
A ``$/cancel_request`` from the agent cancels the handler (the peer answers
``-32800``).
"""

from __future__ import annotations

import logging
import math
import re
from collections.abc import Awaitable, Callable, Sequence
from contextvars import ContextVar
from typing import Any

import msgspec
from msgspec import UNSET

from wireproto._childcheck import CHECK_TIME, CheckFailed, search_apart
from wireproto.adapters.acp import codec as acp_codec
from wireproto.adapters.acp import schema as s
from wireproto.errors import RpcError
from wireproto.jsonrpc.messages import ErrorCode
from wireproto.rpc.router import Router

__all__ = [
    "ElicitationHandler",
    "ElicitationRequests",
    "FormOrUrl",
    "answer_problem",
    "bounded_answer_problem",
    "bounded_schema_problem",
    "bounded_value_problem",
    "schema_problem",
    "value_problem",
]

log = logging.getLogger(__name__)

FormOrUrl = s.CreateFormElicitationRequest | s.CreateUrlElicitationRequest
"""The requests a handler gets (other modes never reach it)."""

ElicitationHandler = Callable[[FormOrUrl], Awaitable[s.CreateElicitationResponse]]
"""Answers one elicitation: ``AcceptElicitationResponse(content=...)``,
``DeclineElicitationResponse()`` or ``CancelElicitationResponse()``."""

PATTERN_TIME = CHECK_TIME
"""Seconds the checks of a form with ``pattern`` fields may take (see the module docstring)."""

_MODE: dict[type, str] = {
    s.CreateFormElicitationRequest: "form",
    s.CreateUrlElicitationRequest: "url",
}


def _set(value: Any) -> bool:
    return value is not UNSET and value is not None


# ------------------------------------------------------------------ schema


def _string_problem(p: s.StringPropertySchema) -> str | None:
    if _set(p.min_length) and _set(p.max_length) and p.min_length > p.max_length:  # type: ignore[operator]
        return "minLength is greater than maxLength"
    if _set(p.pattern):
        try:
            re.compile(str(p.pattern))
        except re.error as exc:
            return f"invalid pattern: {exc}"
    if _set(p.enum) and _set(p.one_of):
        return "both enum and oneOf"
    if _set(p.default):
        return _string_value_problem(p, p.default)
    return None


def _range_problem(p: s.NumberPropertySchema | s.IntegerPropertySchema) -> str | None:
    if _set(p.minimum) and _set(p.maximum) and p.minimum > p.maximum:  # type: ignore[operator]
        return "minimum is greater than maximum"
    if _set(p.default):
        return _number_value_problem(p, p.default)
    return None


def _choices(items: s.MultiSelectItems) -> list[str] | None:
    if isinstance(items, s.StringMultiSelectItems):
        return list(items.enum)
    if isinstance(items, s.TitledMultiSelectItems):
        return [option.const for option in items.any_of]
    return None


def _array_problem(p: s.MultiSelectPropertySchema) -> str | None:
    if _choices(p.items) is None:
        return "multi-select items must be strings with enum or anyOf"
    if _set(p.min_items) and _set(p.max_items) and p.min_items > p.max_items:  # type: ignore[operator]
        return "minItems is greater than maxItems"
    if _set(p.default):
        return _array_value_problem(p, p.default)
    return None


_SCHEMA_CHECKS: dict[type, Callable[[Any], str | None]] = {
    s.StringPropertySchema: _string_problem,
    s.NumberPropertySchema: _range_problem,
    s.IntegerPropertySchema: _range_problem,
    s.BooleanPropertySchema: lambda p: None,
    s.MultiSelectPropertySchema: _array_problem,
}
"""Property schema class -> its check (others are not allowed in a form)."""


def schema_problem(schema: s.ElicitationSchema) -> str | None:
    """What makes ``schema`` unfit for a form, or ``None`` when it is fine.

    Its ``pattern`` checks run here with no time bound, and a pattern (the agent's
    regular expression) may backtrack for ever, holding the interpreter: for a form
    from a peer use :func:`bounded_schema_problem`, which runs them in a child Python stopped
    after :data:`PATTERN_TIME` seconds.
    """
    for name, prop in schema.properties.items():
        check = _SCHEMA_CHECKS.get(type(prop))
        if check is None:
            kind = getattr(prop, "type", type(prop).__name__)
            return f"field {name!r}: unsupported type {kind!r}"
        problem = check(prop)
        if problem is not None:
            return f"field {name!r}: {problem}"
    for name in schema.required or ():
        if name not in schema.properties:
            return f"required field {name!r} is not among the properties"
    return None


# ------------------------------------------------------------------ answers


def _string_value_problem(p: s.StringPropertySchema, value: Any) -> str | None:
    if not isinstance(value, str):
        return "expected a string"
    allowed = list(p.enum) if _set(p.enum) else None  # type: ignore[arg-type]
    if _set(p.one_of):
        allowed = [option.const for option in p.one_of]  # type: ignore[union-attr]
    if allowed is not None and value not in allowed:
        return f"{value!r} is not one of {allowed}"
    if _set(p.min_length) and len(value) < p.min_length:  # type: ignore[operator]
        return f"shorter than {p.min_length} characters"
    if _set(p.max_length) and len(value) > p.max_length:  # type: ignore[operator]
        return f"longer than {p.max_length} characters"
    if _set(p.pattern) and not _matches(str(p.pattern), value):
        return f"does not match {p.pattern!r}"
    return None


def _number_value_problem(
    p: s.NumberPropertySchema | s.IntegerPropertySchema, value: Any
) -> str | None:
    if isinstance(value, bool) or not isinstance(value, int | float):
        return "expected a number"
    if isinstance(p, s.IntegerPropertySchema) and not isinstance(value, int):
        return "expected an integer"
    if isinstance(value, float) and not math.isfinite(value):  # (JSON has none: sent as null)
        return "expected a finite number"
    if _set(p.minimum) and value < p.minimum:  # type: ignore[operator]
        return f"less than {p.minimum}"
    if _set(p.maximum) and value > p.maximum:  # type: ignore[operator]
        return f"greater than {p.maximum}"
    return None


def _array_value_problem(p: s.MultiSelectPropertySchema, value: Any) -> str | None:
    if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
        return "expected a list of strings"
    allowed = _choices(p.items) or []
    wrong = [v for v in value if v not in allowed]
    if wrong:
        return f"{wrong[0]!r} is not one of {allowed}"
    if _set(p.min_items) and len(value) < p.min_items:  # type: ignore[operator]
        return f"fewer than {p.min_items} choices"
    if _set(p.max_items) and len(value) > p.max_items:  # type: ignore[operator]
        return f"more than {p.max_items} choices"
    return None


_VALUE_CHECKS: dict[type, Callable[[Any, Any], str | None]] = {
    s.StringPropertySchema: _string_value_problem,
    s.NumberPropertySchema: _number_value_problem,
    s.IntegerPropertySchema: _number_value_problem,
    s.BooleanPropertySchema: lambda p, v: None if isinstance(v, bool) else "expected a boolean",
    s.MultiSelectPropertySchema: _array_value_problem,
}


def value_problem(prop: s.ElicitationPropertySchema, value: Any) -> str | None:
    """What makes ``value`` invalid for the field ``prop``, or ``None``.

    Its ``pattern`` checks run here with no time bound, and a pattern (the agent's
    regular expression) may backtrack for ever, holding the interpreter: for a form
    from a peer use :func:`bounded_value_problem`, which runs them in a child Python stopped
    after :data:`PATTERN_TIME` seconds.
    """
    check = _VALUE_CHECKS.get(type(prop))
    return check(prop, value) if check is not None else "unsupported field"


def answer_problem(schema: s.ElicitationSchema, content: dict[str, Any] | None) -> str | None:
    """What makes ``content`` an invalid answer to ``schema``, or ``None``.

    Its ``pattern`` checks run here with no time bound, and a pattern (the agent's
    regular expression) may backtrack for ever, holding the interpreter: for a form
    from a peer use :func:`bounded_answer_problem`, which runs them in a child Python stopped
    after :data:`PATTERN_TIME` seconds.
    """
    content = content or {}
    for name in schema.required or ():
        if name not in content:
            return f"required field {name!r} is missing"
    for name, value in content.items():
        prop = schema.properties.get(name)
        if prop is None:
            return f"field {name!r} is not in the form"
        problem = value_problem(prop, value)
        if problem is not None:
            return f"field {name!r}: {problem}"
    return None


_MATCHED: ContextVar[dict[tuple[str, str], bool] | None] = ContextVar("_MATCHED", default=None)
"""(pattern, value) -> whether it matches, found apart by :func:`_bounded` for its check."""

def _matches(pattern: str, value: str) -> bool:
    known = _MATCHED.get()
    found = None if known is None else known.get((pattern, value))
    return re.search(pattern, value) is not None if found is None else found


def _pattern_pairs(
    schema: s.ElicitationSchema, content: dict[str, Any] | None = None
) -> list[tuple[str, str]]:
    """The (pattern, value) pairs a check of ``schema`` (and ``content``) may search."""
    pairs = set()
    for name, p in schema.properties.items():
        if isinstance(p, s.StringPropertySchema) and _set(p.pattern):
            for value in (p.default, (content or {}).get(name)):
                if isinstance(value, str):
                    pairs.add((str(p.pattern), value))
    return sorted(pairs)


async def _bounded(check: Callable[..., str | None], schema: s.ElicitationSchema,
                   *args: Any) -> str | None:
    """``check(schema, *args)``, its pattern searches done first in a child process
    stopped after :data:`PATTERN_TIME` seconds."""
    pairs = _pattern_pairs(schema, *args)
    if not pairs:
        return check(schema, *args)
    try:
        found = await search_apart(pairs, PATTERN_TIME)
    except CheckFailed as exc:
        return f"a pattern could not be checked ({exc})"
    if found is not None:
        token = _MATCHED.set(found)
        try:
            return check(schema, *args)
        finally:
            _MATCHED.reset(token)
    return f"a pattern takes longer than {PATTERN_TIME:g} s to check"


async def bounded_value_problem(prop: s.ElicitationPropertySchema, value: Any) -> str | None:
    """:func:`value_problem`, its ``pattern`` searched apart for at most :data:`PATTERN_TIME`
    seconds (for a value typed by a person: the agent's pattern may backtrack for ever)."""
    def check(schema: s.ElicitationSchema, content: dict[str, Any]) -> str | None:
        return value_problem(prop, value)

    return await _bounded(check, s.ElicitationSchema(properties={"v": prop}), {"v": value})


async def bounded_schema_problem(schema: s.ElicitationSchema) -> str | None:
    """:func:`schema_problem`, its ``pattern`` checks (of the defaults) run in a child
    Python stopped after :data:`PATTERN_TIME` seconds (past that, the problem says so):
    for a form from a peer."""
    return await _bounded(schema_problem, schema)


async def bounded_answer_problem(
    schema: s.ElicitationSchema, content: dict[str, Any] | None
) -> str | None:
    """:func:`answer_problem`, its ``pattern`` checks run in a child Python stopped after
    :data:`PATTERN_TIME` seconds (past that, the problem says so): for a form from a peer."""
    return await _bounded(answer_problem, schema, content)


# ------------------------------------------------------------------ serving


class ElicitationRequests:
    """Serve ``elicitation/create`` / ``elicitation/complete`` (see the module docstring).

    Args:
        handler: answers the requests.
        modes: the modes advertised (``form``, ``url``).
        session: resolves a session id (raises ``RpcError`` -32002 when unknown).
        on_complete: called with the id of each ``elicitation/complete``.
        name: a label for log lines.
    """

    def __init__(
        self,
        handler: ElicitationHandler,
        *,
        modes: Sequence[str],
        session: Callable[[str], Awaitable[Any]],
        on_complete: Callable[[str], Awaitable[None]] | None = None,
        name: str = "acp client",
    ) -> None:
        self.handler = handler
        self.modes = tuple(modes)
        self._session = session
        self.on_complete = on_complete
        self.name = name

    def capabilities(self) -> s.ElicitationCapabilities:
        """The ``elicitation`` capability advertising :attr:`modes`."""
        return s.ElicitationCapabilities(
            form=s.ElicitationFormCapabilities() if "form" in self.modes else UNSET,
            url=s.ElicitationUrlCapabilities() if "url" in self.modes else UNSET,
        )

    def add_routes(self, router: Router) -> None:
        """Route both methods."""
        router.add("elicitation/create", self._on_create, s.CreateElicitationRequest,
                   dec_hook=acp_codec.dec_hook, lenient=_decoder(s.CreateElicitationRequest))
        router.add("elicitation/complete", self._on_complete, s.CompleteElicitationNotification,
                   notification=True, dec_hook=acp_codec.dec_hook,
                   lenient=_decoder(s.CompleteElicitationNotification))

    async def _on_create(self, request: Any) -> s.CreateElicitationResponse:
        mode = _MODE.get(type(request), getattr(request, "mode", "?"))
        if mode not in self.modes:
            raise RpcError(ErrorCode.INVALID_PARAMS,
                           f"Invalid params: elicitation mode {mode!r} was not advertised")
        if request.session_id is not UNSET:
            await self._session(request.session_id)
        if isinstance(request, s.CreateFormElicitationRequest):
            problem = await bounded_schema_problem(request.requested_schema)
            if problem is not None:
                raise RpcError(ErrorCode.INVALID_PARAMS,
                               f"Invalid params: requestedSchema: {problem}")
        answer = await self.handler(request)
        if isinstance(request, s.CreateFormElicitationRequest) and isinstance(
            answer, s.AcceptElicitationResponse
        ):
            content = answer.content if isinstance(answer.content, dict) else None
            problem = await bounded_answer_problem(request.requested_schema, content)
            if problem is not None:
                log.error("%s: the elicitation handler's answer is invalid (%s); "
                          "sending cancel instead", self.name, problem)
                return s.CancelElicitationResponse()
        return answer

    async def _on_complete(self, note: s.CompleteElicitationNotification) -> None:
        if self.on_complete is not None:
            await self.on_complete(note.elicitation_id)


def _decoder(type_: Any) -> Callable[[msgspec.Raw], Any]:
    def decode(raw: msgspec.Raw) -> Any:
        return acp_codec.decode(raw, type_)

    return decode
