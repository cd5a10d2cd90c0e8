"""Codec contender: the ACP Python SDK (``agent-client-protocol``), used its own way.

What the SDK does per message, read from its 0.12.1 sources:

* receiving (``acp._transport.NdjsonTransport.receive``): ``json.loads`` of
  the stripped line into a dict; then the router looks the method up and
  runs ``Model.model_validate(params)`` (``acp.router.MessageRouter``); a
  response's ``result`` dict is validated by ``acp.utils.request_model`` with
  ``ResultModel.model_validate(result)``;
* sending a request/notification (``acp.utils.serialize_params`` +
  ``acp.connection.Connection.send_request``/``send_notification`` +
  ``acp.task.MessageSender.send``): ``model.model_dump(mode="json",
  by_alias=True, exclude_none=True, exclude_defaults=True)`` into an envelope
  dict, then ``(json.dumps(payload, separators=(",", ":")) + "\\n").encode()``;
* sending a result (``Connection._execute_request``): ``model_dump(mode="json",
  by_alias=True, exclude_none=True, exclude_unset=True)``, same envelope and
  ``json.dumps``.

This module calls the SDK's own helpers where they exist
(``serialize_params``) and repeats its one-line glue otherwise.
Run by ``bench_codec.py``.
"""

from __future__ import annotations

import json
from importlib import metadata
from typing import Any

from _codec_runner import Contender, main, payload_of
from _messages import KINDS, MESSAGES
from acp import schema
from acp.meta import AGENT_METHODS, CLIENT_METHODS
from acp.utils import serialize_params
from pydantic import BaseModel

# method -> params model, as the SDK's agent/client routers register them
ROUTES: dict[str, type[BaseModel]] = {
    AGENT_METHODS["session_prompt"]: schema.PromptRequest,
    CLIENT_METHODS["session_update"]: schema.SessionNotification,
}
RESULT_MODEL = schema.InitializeResponse  # known from the pending `initialize` request


class Outgoing:
    """A message to send: envelope fields plus the SDK model carrying its payload."""

    __slots__ = ("id", "kind", "method", "model")

    def __init__(self, kind: str, id: Any, method: str | None, model: BaseModel) -> None:
        self.kind, self.id, self.method, self.model = kind, id, method, model


def prepare(case: str, message: dict[str, Any]) -> Outgoing:
    """Build the SDK model for the message's payload (untimed)."""
    kind = KINDS[case]
    if kind == "response":
        return Outgoing(kind, message["id"], None, RESULT_MODEL.model_validate(message["result"]))
    model = ROUTES[message["method"]].model_validate(message["params"])
    return Outgoing(kind, message.get("id"), message["method"], model)


def _send(payload: dict[str, Any]) -> bytes:
    # acp.task.sender.MessageSender.send
    return (json.dumps(payload, separators=(",", ":")) + "\n").encode("utf-8")


def encode(out: Outgoing) -> bytes:
    """SDK model -> one line, the way the SDK's connection sends it."""
    if out.kind == "response":
        result = out.model.model_dump(
            mode="json", by_alias=True, exclude_none=True, exclude_unset=True
        )
        return _send({"jsonrpc": "2.0", "id": out.id, "result": result})
    params = serialize_params(out.model)
    if out.kind == "request":
        return _send({"jsonrpc": "2.0", "id": out.id, "method": out.method, "params": params})
    return _send({"jsonrpc": "2.0", "method": out.method, "params": params})


def decode_call(line: bytes) -> BaseModel:
    """A request or notification line -> its validated params model."""
    message = json.loads(line.strip())
    return ROUTES[message["method"]].model_validate(message.get("params"))


def decode_result(line: bytes) -> BaseModel:
    """A response line -> its validated result model."""
    message = json.loads(line.strip())
    return RESULT_MODEL.model_validate(message.get("result"))


def to_plain(model: BaseModel) -> Any:
    """Back to JSON values for the correctness check."""
    return model.model_dump(mode="json", by_alias=True, exclude_none=True, exclude_unset=True)


CONTENDER = Contender(
    name="acp_sdk",
    version=f"agent-client-protocol {metadata.version('agent-client-protocol')}, "
    f"pydantic {metadata.version('pydantic')}",
    validates=True,
    prepare=prepare,
    encode=encode,
    decoders={
        case: decode_result if KINDS[case] == "response" else decode_call for case in MESSAGES
    },
    to_plain=to_plain,
    notes=["json.loads + model_validate / model_dump(mode='json') + json.dumps, as the SDK does"],
)

assert all(payload_of(m) is not None for m in MESSAGES.values())

if __name__ == "__main__":
    main(CONTENDER)
