"""ACP params decoded in one pass with the envelope equal the two-pass, lenient decode.

The routes of both roles declare ``params type + acp dec_hook + lenient
fallback``; the codec then decodes calls in one pass (typed, or builtins +
convert for large input with union tags last, the ACP SDK's order). Every
path must give the same Structs as ``acp.codec.decode`` of the raw params,
and the agent's "initialize first" rule must hold whichever path ran.
"""

from __future__ import annotations

import importlib.util
import json
import sys
from pathlib import Path
from typing import Any

import msgspec
import pytest

from wireproto.adapters.acp import codec as acp_codec
from wireproto.adapters.acp import schema as S
from wireproto.adapters.acp.client.connection import ClientConnection
from wireproto.jsonrpc._onepass import Plan
from wireproto.jsonrpc.codec import ACP_DIALECT, Call, Decoder
from wireproto.jsonrpc.messages import Notification
from wireproto.rpc.router import Router
from wireproto.transports.memory import memory_pair

from .conftest import OpenAcp
from .test_schema import SESSION_UPDATES, sample

ROOT = Path(__file__).resolve().parents[3]
TAG_KEYS = ("type", "sessionUpdate", "outcome", "action", "mode")


def _bench_messages() -> Any:
    path = ROOT / "benchmarks" / "_messages.py"
    spec = importlib.util.spec_from_file_location("wireproto_bench_messages", path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return module


BENCH = _bench_messages()


def tags_last(value: Any) -> Any:
    """``value`` with every union tag key moved to the end of its object (pydantic's order)."""
    if isinstance(value, list):
        return [tags_last(v) for v in value]
    if not isinstance(value, dict):
        return value
    out = {k: tags_last(v) for k, v in value.items() if k not in TAG_KEYS}
    out.update({k: value[k] for k in TAG_KEYS if k in value})
    return out


async def _handler(params: Any) -> None:
    """Never called: decoding only."""


def acp_router() -> Router:
    """Every ACP method, declared the way the adapters declare theirs."""
    router = Router()
    for method, spec in S.METHODS.items():
        router.add(
            method, _handler, spec.params, notification=spec.result is None,
            dec_hook=acp_codec.dec_hook,
            lenient=lambda raw, t=spec.params: acp_codec.decode(raw, t),
        )
    return router


def _line(method: str, params: Any, id: int | None) -> bytes:
    msg: dict[str, Any] = {"jsonrpc": "2.0"}
    if id is not None:
        msg["id"] = id
    msg.update(method=method, params=params)
    return json.dumps(msg, separators=(",", ":")).encode()


def _cases() -> list[Any]:
    cases = []
    for name, message in BENCH.MESSAGES.items():
        if "method" in message:
            cases.append(pytest.param(message["method"], message["params"], id=f"bench-{name}"))
    for text, cls in SESSION_UPDATES:
        params = {"sessionId": "sess_1", "update": json.loads(text)}
        cases.append(pytest.param("session/update", params, id=f"update-{cls.__name__}"))
    for method, spec in sorted(S.METHODS.items()):
        for full in (True, False):
            params = msgspec.to_builtins(sample(spec.params, full))
            cases.append(pytest.param(method, params, id=f"{method}-{'full' if full else 'min'}"))
    return cases


@pytest.mark.parametrize("order", ["tags_first", "tags_last"])
@pytest.mark.parametrize(("method", "params"), _cases())
def test_one_pass_equals_the_lenient_two_pass_decode(
    method: str, params: Any, order: str
) -> None:
    if order == "tags_last":
        params = tags_last(params)
    router = acp_router()
    route = router.get(method)
    assert route is not None and route.one_pass
    data = _line(method, params, None if route.notification else 7)
    expected = acp_codec.decode(msgspec.json.encode(params), route.params_type)

    decoder = Decoder(ACP_DIALECT, router)
    msg = decoder.decode(data)
    assert isinstance(msg, Call) and msg.method == method
    assert msg.id == (msgspec.UNSET if route.notification else 7)
    assert msg.params == expected
    assert type(msg.params) is type(expected)

    assert Plan(router.params_specs()).typed.decode(data).params == expected


def test_unknown_fields_are_ignored_in_one_pass() -> None:
    router = acp_router()
    params = {"sessionId": "s", "extra": {"deep": [1, 2]}, "prompt": [
        {"type": "text", "text": "hi", "future": True}]}
    decoder = Decoder(ACP_DIALECT, router)
    msg = decoder.decode(_line("session/prompt", params, 1))
    assert isinstance(msg, Call) and msg.id == 1
    assert msg.params == S.PromptRequest(session_id="s", prompt=[S.TextContent(text="hi")])


def test_lenient_input_falls_back_to_the_route_decoder() -> None:
    router = acp_router()
    decoder = Decoder(ACP_DIALECT, router)
    # an invalid plan entry is dropped by x-deserialize-skip-invalid-items
    update = {"sessionUpdate": "plan", "entries": [
        {"content": "a", "priority": "high", "status": "pending"},
        {"content": "b", "priority": "urgent", "status": "pending"}]}
    msg = decoder.decode(_line("session/update", {"sessionId": "s", "update": update}, None))
    assert isinstance(msg, Notification) and isinstance(msg.params, msgspec.Raw)
    route = router.get("session/update")
    assert route is not None
    note = decoder.decode_params(msg.method, msg.params, route.params_type, route.decode)
    assert isinstance(note.update, S.Plan)
    assert [e.content for e in note.update.entries] == ["a"]


@pytest.mark.anyio
async def test_the_client_declares_one_pass_routes() -> None:
    a, b = memory_pair()
    async with a, b:
        client = ClientConnection(a)
    specs = {spec.method: spec for spec in client._router().params_specs()}
    assert specs["session/update"].type is S.SessionNotification
    assert specs["session/update"].dec_hook is acp_codec.dec_hook
    assert specs["session/request_permission"].type is S.RequestPermissionRequest
    data = _line("session/update", BENCH.MESSAGES["session_update_chunk"]["params"], None)
    msg = Decoder(ACP_DIALECT, client._router()).decode(data)
    assert isinstance(msg, Call) and isinstance(msg.params, S.SessionNotification)


@pytest.mark.anyio
async def test_initialize_comes_first_whichever_path_decodes(acp: OpenAcp) -> None:
    async with acp() as client:
        early = [
            await client.error("session/prompt", {"sessionId": "s", "prompt": []}),  # one pass
            await client.error("session/prompt", {"sessionId": 5}),  # invalid: lenient path
            await client.error("session/list", {"cursor": 5}),
            await client.error("session/set_mode", {"sessionId": "s", "modeId": "m"}),
        ]
        await client.initialize()
        invalid = await client.error("session/prompt", {"sessionId": 5, "prompt": []})
    assert [e["code"] for e in early] == [-32600] * 4
    assert {e["message"] for e in early} == {"Invalid request: initialize must come first"}
    assert invalid["code"] == -32602
    assert invalid["data"]["path"] == "$.sessionId"
