"""Sans-I/O JSON-RPC 2.0 codec: bytes in, typed messages out, and back.

Theory of operation
-------------------
Every message can be decoded in two passes, each with a decoder built once:

1. :meth:`Decoder.decode` validates the *envelope* (``jsonrpc``, ``id``,
   ``method``, ``error``) and keeps ``params`` / ``result`` as undecoded
   :class:`msgspec.Raw` slices. The envelope is then classified with the
   :class:`Dialect` table of the protocol: what a missing ``jsonrpc`` means,
   whether ``"id": null`` with a method is a request or a notification, and
   whether a message with neither method nor id is answered.
2. :meth:`Decoder.decode_params` / :meth:`Decoder.decode_result` turn the raw
   payload into the type the router or the pending request expects, with a
   ``msgspec`` decoder cached per type. Validation errors become
   :class:`~wireproto.errors.InvalidMessage` carrying ``-32602`` and
   ``data: {"path": "$.a.b[0]", "reason": "..."}``.

A decoder given a :class:`ParamsTable` (a
:class:`~wireproto.rpc.router.Router`) first tries **one pass**: a msgspec
union of per-method envelope Structs tagged by ``method``, with ``params``
typed as the table says, built again after each change the table reports
(:meth:`ParamsTable.watch`: nothing is checked per message). The result of
that one msgspec call is the message: a :class:`Call` whose ``params`` need
no second pass. The envelope types accept only what needs no dialect rule
(``"jsonrpc": "2.0"``, a string or integer id or none, params present and
not ``null``), so nothing is checked around the call. A response has no
tag: it fails the union and is given to one msgspec call for a success
response, which accepts only what needs no dialect rule and keeps
``result`` raw; while :meth:`Decoder.expect` says one is expected (a peer's
request alone in flight, its id not matched), the next success response is
tried first instead, with ``result`` decoded into its type in the same call.
Whatever the one pass does not accept (unknown method, invalid or absent
params, ``"params": null``, a ``null`` id, a bad envelope, an error
response) is decoded in two passes, so error answers
are exactly those of the two-pass path. The params of a :class:`Call` are
those of the table at decoding time: a peer looks its route up at once.

Every malformed input maps to exactly one error answer (or a logged drop), as
the dialect says. Unknown members are ignored. Encoding reuses one buffer and
appends the ``\\n`` frame terminator; ``"jsonrpc": "2.0"``, ``id`` and
``method`` are written before the payload.
"""

from __future__ import annotations

import dataclasses
import logging
from collections.abc import Callable, Collection
from typing import Any, TypeVar, cast

import msgspec
from msgspec import UNSET, UnsetType

from wireproto._switches import FAST_PATHS
from wireproto.errors import InvalidMessage
from wireproto.jsonrpc._nesting import scan
from wireproto.jsonrpc._onepass import (
    Call,
    Data,
    DecHook,
    ParamsSpec,
    ParamsTable,
    Paths,
    Plan,
    answer_decoder,
    no_plan,
)
from wireproto.jsonrpc.messages import (
    Error,
    ErrorCode,
    ErrorResponse,
    Id,
    Message,
    Notification,
    Request,
    Response,
)

__all__ = [
    "ACP_DIALECT",
    "MCP_DIALECT",
    "TOO_DEEP",
    "WIRE_DIALECT",
    "Call",
    "DecHook",
    "Decoder",
    "Dialect",
    "Encoder",
    "Incoming",
    "IncomingResponse",
    "ParamsSpec",
    "ParamsTable",
    "is_too_deep",
    "too_deep",
    "validation_error_data",
]

T = TypeVar("T")
TOO_DEEP = "nested too deeply"
"""The ``reason`` of the error answering input nested deeper than the decoder goes."""
log = logging.getLogger(__name__)


@dataclasses.dataclass(frozen=True)
class Dialect:
    """Envelope strictness and error texts of one protocol.

    Attributes:
        name: a short name for logs.
        require_jsonrpc: a missing ``jsonrpc`` member is ``-32600``.
        null_id_is_notification: ``"id": null`` with a method is a
            notification (Wire) rather than a request answered with
            ``id: null`` (ACP).
        answer_idless: a message with neither method nor id gets ``-32600``
            (ACP); otherwise it is only logged (Wire).
        null_params_as_absent: ``"params": null`` is treated like absent.
        error_data_null: error objects always carry ``data`` (``null`` when
            empty), as the Wire reference emits them.
        replace_invalid_utf8: invalid UTF-8 is decoded with replacement
            characters (Wire) instead of answering ``-32700``.
        reject_null_id: a request with ``"id": null`` is ``-32600`` (MCP:
            ids must not be null) instead of being answered with ``id: null``.
        answer_cancelled: a request cancelled by the peer is answered with
            ``-32800``; when false it gets no answer at all (MCP).
        cancel_method: the notification that cancels one request (its
            params name the request in ``requestId``); ``None`` when the
            protocol has none (Wire).
        parse_error: message text of ``-32700``.
        invalid_request: message text of ``-32600`` for a request.
        invalid_response: message text of ``-32600`` for a response.
        method_not_found: message text of ``-32601`` (``{method}`` is
            replaced with the method name, here and below).
        invalid_params: message text of ``-32602``.
        internal_error: message text of ``-32603``.
    """

    name: str
    require_jsonrpc: bool
    null_id_is_notification: bool
    answer_idless: bool
    null_params_as_absent: bool
    error_data_null: bool
    replace_invalid_utf8: bool = False
    reject_null_id: bool = False
    answer_cancelled: bool = True
    cancel_method: str | None = None
    parse_error: str = "Parse error"
    invalid_request: str = "Invalid request"
    invalid_response: str = "Invalid response"
    method_not_found: str = "Method not found"
    invalid_params: str = "Invalid params"
    internal_error: str = "Internal error"

    def error(self, code: int, message: str, data: Any = UNSET) -> Error:
        """Build an error object the way this dialect writes it.

        ``data`` of ``None`` or ``UNSET`` means "no data": written as
        ``"data": null`` when :attr:`error_data_null`, omitted otherwise.
        """
        if data is UNSET or data is None:
            data = None if self.error_data_null else UNSET
        return Error(code=code, message=message, data=data)


WIRE_DIALECT = Dialect(
    name="wire",
    require_jsonrpc=False,
    null_id_is_notification=True,
    answer_idless=False,
    null_params_as_absent=True,
    error_data_null=True,
    replace_invalid_utf8=True,
    parse_error="Invalid JSON format",
    method_not_found="Unexpected method received: {method}",
    invalid_params="Invalid parameters for method `{method}`",
)
"""Kimi CLI Wire: lenient envelope, reference error texts, ``data: null``."""

ACP_DIALECT = Dialect(
    name="acp",
    require_jsonrpc=True,
    null_id_is_notification=False,
    answer_idless=True,
    null_params_as_absent=False,
    error_data_null=False,
    cancel_method="$/cancel_request",
)
"""Agent Client Protocol: strict envelope, standard error texts."""

MCP_DIALECT = Dialect(
    name="mcp",
    require_jsonrpc=True,
    null_id_is_notification=False,
    answer_idless=True,
    null_params_as_absent=False,
    error_data_null=False,
    reject_null_id=True,
    answer_cancelled=False,
    cancel_method="notifications/cancelled",
)
"""Model Context Protocol: strict envelope, non-null request ids, and a request
cancelled with ``notifications/cancelled`` is never answered."""


class _Envelope(msgspec.Struct):
    """The first-pass view of any message; payloads stay raw."""

    jsonrpc: str | UnsetType = UNSET
    id: int | str | UnsetType | None = UNSET
    method: str | UnsetType = UNSET
    params: msgspec.Raw = msgspec.Raw()
    result: msgspec.Raw = msgspec.Raw()
    error: msgspec.Raw = msgspec.Raw()


class IncomingResponse(msgspec.Struct):
    """A decoded response: ``result`` stays raw until the caller decodes it (or,
    for the response :meth:`Decoder.expect` names, holds it decoded already)."""

    id: Id
    result: msgspec.Raw | UnsetType = UNSET
    error: Error | None = None


Incoming = Call | Request | Notification | IncomingResponse
"""What :meth:`Decoder.decode` returns. :class:`Request` / :class:`Notification`
params are raw (:class:`msgspec.Raw` or ``UNSET``); a :class:`Call` (only from
a decoder with a table) has them decoded, and is a notification when its
``id`` is ``UNSET``."""

_EMPTY_OBJECT = msgspec.Raw(b"{}")
_ANSWERS = ("result", "error")
_NULL = msgspec.Raw(b"null")
_MAX_KEPT = 64
"""Typed decoders a :class:`Decoder` keeps per kind (the oldest is dropped beyond: a new
hook per request must not grow it without end)."""


def too_deep() -> msgspec.ValidationError:
    """The error that stands for input nested deeper than msgspec decodes.

    Decoders raise it instead of the :class:`RecursionError` msgspec raises,
    so that callers handle it like any other invalid value.
    """
    return msgspec.ValidationError(TOO_DEEP)


def is_too_deep(exc: BaseException) -> bool:
    """Whether ``exc`` is the error :func:`too_deep` builds."""
    return isinstance(exc, msgspec.ValidationError) and str(exc) == TOO_DEEP


def validation_error_data(exc: msgspec.ValidationError) -> dict[str, str]:
    """Split a msgspec validation message into ``{"path", "reason"}``."""
    text = str(exc)
    reason, sep, path = text.rpartition(" - at `")
    if not sep:
        return {"path": "$", "reason": text}
    return {"path": path.rstrip("`"), "reason": reason}


def _is_json(data: bytes | bytearray | memoryview) -> bool:
    """Whether ``data`` is one well-formed JSON value (only called on errors)."""
    try:
        msgspec.json.decode(data)
    except msgspec.DecodeError:
        return False
    return True


def _repair_utf8(data: bytes | bytearray | memoryview) -> bytes | None:
    """Return ``data`` with invalid UTF-8 replaced by U+FFFD, or ``None`` if it was valid."""
    raw = bytes(data)
    try:
        raw.decode("utf-8")
    except UnicodeDecodeError:
        return raw.decode("utf-8", "replace").encode("utf-8")
    return None


class _Kept(dict[tuple[Any, "DecHook | None"], T]):
    """(type, dec_hook) -> what ``build`` makes of them: built on first use, the oldest
    dropped beyond :data:`_MAX_KEPT` (``TypeError`` for an unhashable type or hook)."""

    def __init__(self, build: Callable[[Any, DecHook | None], T]) -> None:
        super().__init__()
        self._build = build

    def __missing__(self, key: tuple[Any, DecHook | None]) -> T:
        made = self[key] = self._build(*key)
        if len(self) > _MAX_KEPT:
            del self[next(iter(self))]
        return made


def _typed_decoder(type_: Any, dec_hook: DecHook | None) -> msgspec.json.Decoder[Any]:
    return msgspec.json.Decoder(type_, dec_hook=dec_hook)


class _NoTable:
    """The table of a decoder given none: never changes, no one-pass methods."""

    def params_specs(self) -> list[ParamsSpec]:
        return []

    def watch(self, callback: Callable[[], object]) -> None:
        pass


class Decoder:
    """Decode inbound messages under one :class:`Dialect`.

    One instance per connection (or shared, without :meth:`expect`: it holds
    no per-message state).

    Args:
        dialect: the protocol's envelope rules and error texts.
        table: the method table (a :class:`~wireproto.rpc.router.Router`)
            whose calls (and success responses) are decoded in one pass;
            ``None``: always two passes.
        two_pass: methods always decoded in two passes whatever the table
            says (e.g. a peer's cancel notification, which it reads as
            plain JSON).
    """

    def __init__(
        self,
        dialect: Dialect,
        table: ParamsTable | None = None,
        *,
        two_pass: Collection[str] = (),
    ) -> None:
        self.dialect = dialect
        self._envelope = msgspec.json.Decoder(_Envelope)
        self._error = msgspec.json.Decoder(Error)
        self._typed: _Kept[msgspec.json.Decoder[Any]] = _Kept(_typed_decoder)
        self._two_pass_methods = frozenset(two_pass)
        self._answer = answer_decoder(IncomingResponse, dialect.require_jsonrpc).decode
        # For the peer's read loop (rpc/peer.py), which saves a call per message:
        # _fast[0](data) returns what decode returns or raises InvalidMessage as
        # it does, or raises anything else for a message it leaves to
        # _decode_refused; while nothing is expected it is msgspec's own decode
        # of the table's union, while a response is, that of its answer decoder.
        # expect() is `_fast[0] = _expecting[type, hook]`, which the peer does
        # inline; a read loop that takes a response stores _paths.idle[0] there.
        paths = self._paths = Paths(self._two_pass)
        self._fast: list[Callable[[Data], Incoming]] = paths.fast
        self._expecting: _Kept[Callable[[Data], Any]] = _Kept(self._expected)
        # what the read loop calls for whatever _fast[0] raised (but InvalidMessage):
        # a success response (its result raw), or the two passes
        self._decode_refused: Callable[[Data], Incoming]
        if FAST_PATHS:
            self._decode: Callable[[Data], Incoming] = paths.decode
            paths.decode.__doc__ = Decoder.decode.__doc__  # (help(decoder.decode))
            self._decode_refused = paths.refused
        else:  # (two passes, whatever happens)
            two = self._decode = self._decode_refused = self._two_pass
            paths.use(two, two)
        if type(self).decode is Decoder.decode:  # (a subclass's own decode is kept)
            self.decode = self._decode  # type: ignore[method-assign]
        self.table = table

    @property
    def table(self) -> ParamsTable | None:
        """The method table whose calls are decoded in one pass (``None``: none)."""
        return None if isinstance(self._table, _NoTable) else self._table

    @table.setter
    def table(self, table: ParamsTable | None) -> None:
        self._table: ParamsTable = _NoTable() if table is None else table
        self._expecting.clear()  # (expect: only with a table)
        self._paths.end()
        self._table_changed()
        self._table.watch(self._table_changed)

    def _table_changed(self) -> None:
        """Build the plan again at the next call (the table changed, or is new)."""
        if FAST_PATHS:
            self._paths.use(self._first, self._first)

    def decode(self, data: Data) -> Incoming:
        """Decode and classify one message.

        Returns:
            a :class:`Call` (params decoded: a call the table's one pass
            accepted), a :class:`Request` or :class:`Notification` whose
            ``params`` is a :class:`msgspec.Raw` (``UNSET`` when absent), or
            an :class:`IncomingResponse` (its ``result`` decoded already
            when it answers the request :meth:`expect` names).

        Raises:
            InvalidMessage: the message cannot be accepted; the exception
                carries the answer (``reply`` is false when the protocol
                wants only a log line).
        """
        return self._decode(data)

    def _first(self, data: Data) -> Any:
        """The decoders before the plan is built: build it, then :meth:`decode` again."""
        plan = self._build()
        if plan is None:
            self._paths.use(no_plan, no_plan)
            raise LookupError("no one-pass plan")  # (two passes)
        self._paths.use(plan.typed_decode, self._answer)
        return self._decode(data)

    def _build(self) -> Plan | None:
        try:
            plan = Plan(
                self._table.params_specs(), self.dialect.require_jsonrpc, self._two_pass_methods
            )
        except Exception:  # a type msgspec rejects: never fatal, two passes answer it
            log.warning("%s: one-pass decoding disabled", self.dialect.name, exc_info=True)
            return None
        return plan if plan else None

    def expect(
        self, id: Id | None, result_type: Any = None, dec_hook: DecHook | None = None
    ) -> None:
        """Decode the response to request ``id`` with its result, in one msgspec call.

        For a request alone in flight: if the next message :meth:`decode`
        returns is a success response whose result the strict decode into
        ``result_type`` (with ``dec_hook``) accepts, it holds that result
        already decoded. Whatever comes first ends the expectation: any
        other response, a call (its response then keeps its result raw), or
        a result the strict decode refuses. The id is not matched (that would
        cost every expected response): a response to another id (e.g. a late
        answer to a request given up) is decoded the same way, and answers
        no request. A later call replaces the expectation, ``id`` ``None``
        ends it; end it when the request ends, and as soon as another
        request is sent. (Only with the fast paths on, for a decoder with a
        table, and for a type msgspec can decode.)
        """
        if id is not None:
            try:
                self._fast[0] = self._expecting[result_type, dec_hook]
            except TypeError:  # (an unhashable type or hook: the raw result it is)
                pass
            else:
                return
        self._paths.end()

    def _expected(self, result_type: Any, dec_hook: DecHook | None) -> Callable[[Data], Any]:
        """What ``_fast`` holds while a response with this result is expected."""
        if not FAST_PATHS:
            return self._decode  # (what _fast holds, always)
        decode: Callable[[Data], Any] = no_plan  # (no table: the raw result it is)
        if type(self._table) is not _NoTable:
            try:
                decode = answer_decoder(
                    IncomingResponse, self.dialect.require_jsonrpc, result_type, dec_hook
                ).decode
            except Exception:  # (msgspec cannot decode the type: the raw result it is)
                pass
        return self._paths.expecting(decode)

    def _two_pass(self, data: bytes | bytearray | memoryview) -> Incoming:
        try:
            d = self.dialect
            try:
                env = self._envelope.decode(data)
            except msgspec.DecodeError as exc:
                # msgspec may report a wrong type before reaching malformed JSON
                # later in the input: only well-formed JSON is an invalid request.
                if isinstance(exc, msgspec.ValidationError) and _is_json(data):
                    raise InvalidMessage(ErrorCode.INVALID_REQUEST, d.invalid_request) from exc
                repaired = _repair_utf8(data) if d.replace_invalid_utf8 else None
                if repaired is None:
                    raise InvalidMessage(ErrorCode.PARSE_ERROR, d.parse_error) from exc
                return self._decode(repaired)
            if env.jsonrpc is UNSET:
                if d.require_jsonrpc:
                    raise InvalidMessage(ErrorCode.INVALID_REQUEST, d.invalid_request)
            elif env.jsonrpc != "2.0":
                raise InvalidMessage(ErrorCode.INVALID_REQUEST, d.invalid_request)
            if env.method is not UNSET:
                return self._call(env, env.method)
            if env.id is UNSET or env.id is None:
                if env.id is None and (env.result or env.error):
                    # An answer to something the peer could not parse: never reply
                    # to it (two peers would ping-pong errors forever).
                    raise InvalidMessage(
                        ErrorCode.INVALID_REQUEST, "response with null id", reply=False
                    )
                raise InvalidMessage(
                    ErrorCode.INVALID_REQUEST, d.invalid_request, reply=d.answer_idless
                )
            return self._response(env, env.id)
        except RecursionError:  # (no extra call on the hot path)
            raise self._too_deep(data) from None

    def _too_deep(self, data: bytes | bytearray | memoryview) -> InvalidMessage:
        """The error for input msgspec found nested too deeply (see :mod:`._nesting`)."""
        d = self.dialect
        found = scan(data)
        if not found.json:
            repaired = _repair_utf8(data) if d.replace_invalid_utf8 else None
            if repaired is not None:
                found = scan(repaired)
        log.debug("%s: input nested %d levels deep refused", d.name, found.depth)
        if not found.json:
            return InvalidMessage(ErrorCode.PARSE_ERROR, d.parse_error)
        if found.method is None and found.id is not None and found.deepest_in in _ANSWERS:
            # a response to one of our requests: it fails that request, never answered
            return InvalidMessage(
                ErrorCode.INVALID_REQUEST, f"{d.invalid_response}: {TOO_DEEP}",
                id=found.id, reply=False, response=True,
            )
        if found.deepest_in == "params" and found.method is not None:
            return InvalidMessage(
                ErrorCode.INVALID_PARAMS,
                d.invalid_params.format(method=found.method),
                {"path": "$.params", "reason": TOO_DEEP},
                id=found.id,
                reply=found.id is not None,  # (a notification is only logged)
            )
        return InvalidMessage(
            ErrorCode.INVALID_REQUEST, d.invalid_request, {"path": "$", "reason": TOO_DEEP},
            id=found.id,
            reply=not found.members or found.id is not None or d.answer_idless,
        )

    def _call(self, env: _Envelope, method: str) -> Request | Notification:
        params: Any = env.params if env.params else UNSET
        if self.dialect.null_params_as_absent and params == _NULL:  # (Raw == Raw: no copy)
            params = UNSET
        if env.id is UNSET or (env.id is None and self.dialect.null_id_is_notification):
            return Notification(method=method, params=params)
        if env.id is None and self.dialect.reject_null_id:
            raise InvalidMessage(ErrorCode.INVALID_REQUEST, self.dialect.invalid_request)
        return Request(id=env.id, method=method, params=params)

    def _response(self, env: _Envelope, id: Id) -> IncomingResponse:
        if env.error and env.result:  # exactly one of the two is allowed
            raise self._invalid_response(id)
        if env.error:
            try:
                return IncomingResponse(id=id, error=self._error.decode(env.error))
            except msgspec.DecodeError as exc:
                raise self._invalid_response(id) from exc
        if env.result:
            return IncomingResponse(id=id, result=env.result)
        raise self._invalid_response(id)

    def _invalid_response(self, id: Id) -> InvalidMessage:
        """A response to request ``id`` that cannot be read: it fails that request (and is
        answered, with a null id)."""
        return InvalidMessage(
            ErrorCode.INVALID_REQUEST, self.dialect.invalid_response, id=id, response=True
        )

    def _decoder_for(self, type_: Any, dec_hook: DecHook | None) -> msgspec.json.Decoder[Any]:
        try:
            return self._typed[type_, dec_hook]
        except TypeError:  # an unhashable type or hook: not kept
            return _typed_decoder(type_, dec_hook)

    def _decode_typed(self, raw: msgspec.Raw, type_: Any, dec_hook: DecHook | None) -> Any:
        # A Raw payload was skipped, not checked, by the envelope pass: invalid
        # UTF-8 inside it only shows up here.
        dec = self._decoder_for(type_, dec_hook)
        try:
            return dec.decode(raw)
        except msgspec.ValidationError:
            raise
        except msgspec.DecodeError:
            repaired = _repair_utf8(raw) if self.dialect.replace_invalid_utf8 else None
            if repaired is None:
                raise
            return dec.decode(repaired)

    def decode_params(
        self,
        method: str,
        params: Any,
        type_: type[T],
        decode: Callable[[msgspec.Raw], Any] | None = None,
    ) -> T:
        """Decode a request's raw ``params`` into ``type_`` (or with ``decode``).

        Absent params decode as ``{}`` (so a Struct with all-optional fields
        is satisfied and a required field is reported by name). ``decode``, a
        custom decoder, replaces the msgspec decoder for ``type_``; its
        :class:`msgspec.ValidationError` is converted like msgspec's own.
        (The params of a :class:`Call` are decoded already: they never come here.)

        Raises:
            InvalidMessage: ``-32602`` with ``data: {"path", "reason"}``, or
                ``-32700`` when the params hold invalid UTF-8 (and the
                dialect does not replace it).
        """
        raw = _EMPTY_OBJECT if params is UNSET else cast(msgspec.Raw, params)
        try:
            if decode is not None:
                return cast(T, decode(raw))
            return cast(T, self._decode_typed(raw, type_, None))
        except msgspec.ValidationError as exc:
            raise InvalidMessage(
                ErrorCode.INVALID_PARAMS,
                self.dialect.invalid_params.format(method=method),
                validation_error_data(exc),
            ) from exc
        except msgspec.DecodeError as exc:
            raise InvalidMessage(ErrorCode.PARSE_ERROR, self.dialect.parse_error) from exc
        except RecursionError:
            raise InvalidMessage(
                ErrorCode.INVALID_PARAMS,
                self.dialect.invalid_params.format(method=method),
                {"path": "$", "reason": TOO_DEEP},
            ) from None

    def decode_result(
        self, result: msgspec.Raw, type_: type[T], dec_hook: DecHook | None = None
    ) -> T:
        """Decode a response's raw ``result`` into ``type_`` (with ``dec_hook``).

        Raises:
            msgspec.DecodeError: the result does not match ``type_``
                (:class:`msgspec.ValidationError`, also when it is nested
                too deeply) or holds invalid UTF-8; the peer converts it
                into a remote protocol error.
        """
        try:
            return cast(T, self._decode_typed(result, type_, dec_hook))
        except RecursionError:
            raise too_deep() from None


class Encoder:
    """Encode outbound messages into a reused buffer, newline-terminated."""

    def __init__(self, dialect: Dialect) -> None:
        self.dialect = dialect
        self._encoder = msgspec.json.Encoder()
        self._buf = bytearray()  # grows to the largest message (up to 1 MiB) on first use

    def encode(self, message: Message) -> bytes:
        """Return one message as compact UTF-8 JSON followed by ``\\n``.

        Raises:
            TypeError: the payload holds an object msgspec cannot encode.
        """
        buf = self._buf
        self._encoder.encode_into(message, buf)
        buf.append(10)
        out = bytes(buf)
        if len(buf) > 1 << 20:  # do not pin a huge buffer after a big message
            self._buf = bytearray()
        return out

    def request(self, id: Id, method: str, params: Any = UNSET) -> bytes:
        """Encode a request."""
        return self.encode(Request(id=id, method=method, params=params))

    def notification(self, method: str, params: Any = UNSET) -> bytes:
        """Encode a notification."""
        return self.encode(Notification(method=method, params=params))

    def response(self, id: Id | None, result: Any) -> bytes:
        """Encode a success response (``result`` may be ``None``)."""
        return self.encode(Response(id=id, result=result))

    def error(self, id: Id | None, code: int, message: str, data: Any = UNSET) -> bytes:
        """Encode an error response in this dialect's style."""
        return self.encode(ErrorResponse(id=id, error=self.dialect.error(code, message, data)))
