"""Codec contender (informational): the ACP SDK's pydantic models at their fastest.

Not how the SDK works (see ``codec_acp_sdk.py``): here the whole line is
validated in one pass by ``model_validate_json`` on an envelope model whose
payload type is already known, and encoded with ``model_dump_json`` — no
intermediate dicts and no ``json`` module. It shows how much of the SDK's
cost is pydantic itself and how much is the glue around it.
Run by ``bench_codec.py``.
"""

from __future__ import annotations

from importlib import metadata
from typing import Any, Generic, Literal, TypeVar

from _codec_runner import Contender, main
from _messages import KINDS, MESSAGES
from acp import schema
from pydantic import BaseModel

P = TypeVar("P")


class Call(BaseModel, Generic[P]):
    """A request (``id`` set) or notification, with typed params."""

    jsonrpc: Literal["2.0"]
    id: int | str | None = None
    method: str
    params: P


class Result(BaseModel, Generic[P]):
    """A success response with a typed result."""

    jsonrpc: Literal["2.0"]
    id: int | str | None
    result: P


PARAMS = {
    "session_update_chunk": schema.SessionNotification,
    "session_prompt": schema.PromptRequest,
    "tool_call_update_diff": schema.SessionNotification,
}
ENVELOPES: dict[str, type[BaseModel]] = {
    case: Call[t] for case, t in PARAMS.items()  # type: ignore[valid-type]
}
ENVELOPES["initialize_result"] = Result[schema.InitializeResponse]


def prepare(case: str, message: dict[str, Any]) -> BaseModel:
    """The typed envelope model (untimed)."""
    return ENVELOPES[case].model_validate(message)


def encode(model: BaseModel) -> bytes:
    """Model -> one line via pydantic-core's serializer."""
    text = model.model_dump_json(by_alias=True, exclude_none=True, exclude_unset=True)
    return text.encode() + b"\n"


def to_plain(model: Any) -> Any:
    """The payload back as JSON values, for the correctness check."""
    payload = model.result if isinstance(model, Result) else model.params
    return payload.model_dump(mode="json", by_alias=True, exclude_none=True, exclude_unset=True)


CONTENDER = Contender(
    name="pydantic_direct",
    version=f"pydantic {metadata.version('pydantic')} with the SDK's models",
    validates=True,
    prepare=prepare,
    encode=encode,
    decoders={case: ENVELOPES[case].model_validate_json for case in MESSAGES},
    to_plain=to_plain,
    notes=[
        "informational, not the SDK's code path: one-pass model_validate_json with the "
        "payload type known in advance; model_dump_json",
    ],
)

assert set(KINDS) == set(ENVELOPES)

if __name__ == "__main__":
    main(CONTENDER)
