"""The conformance checker of ``tests/helpers/acp_raw.py`` catches what it claims to.

Every agent test relies on it ("every message our agent emits validates against schema.json",
gating protocol-acp.md#gating, ordering protocol-acp.md#ordering), so each rule is shown to fire
here on a message that breaks it, next to one that does not.
"""

from __future__ import annotations

from typing import Any

import anyio
import msgspec
import pytest
from timeouts import units

from wireproto.transports.memory import memory_pair

from ..conftest import acp_raw

Conformance = acp_raw.Conformance


def _update(sid: str, **update: Any) -> dict[str, Any]:
    return {"jsonrpc": "2.0", "method": "session/update",
            "params": {"sessionId": sid, "update": update}}


def _chunk(sid: str) -> dict[str, Any]:
    return _update(sid, sessionUpdate="agent_message_chunk",
                   content={"type": "text", "text": "hi"}, messageId="m1")


def _connected(caps: dict[str, Any] | None = None) -> Any:
    """A checker that saw initialize and a session/new answered with ``s1``."""
    check = Conformance()
    check.client_sent({"jsonrpc": "2.0", "id": 0, "method": "initialize",
                       "params": {"protocolVersion": 1, "clientCapabilities": caps or {}}})
    check.agent_sent({"jsonrpc": "2.0", "id": 0, "result": {"protocolVersion": 1}})
    check.client_sent({"jsonrpc": "2.0", "id": 1, "method": "session/new",
                       "params": {"cwd": "/w", "mcpServers": []}})
    check.agent_sent({"jsonrpc": "2.0", "id": 1, "result": {"sessionId": "s1"}})
    return check


def test_results_are_checked_against_the_schema_of_their_method() -> None:
    check = Conformance()
    check.client_sent({"jsonrpc": "2.0", "id": 0, "method": "initialize",
                       "params": {"protocolVersion": 1}})
    with pytest.raises(AssertionError, match="breaks the schema"):
        check.agent_sent({"jsonrpc": "2.0", "id": 0, "result": {"protocolVersion": "1"}})
    with pytest.raises(AssertionError, match="never sent"):
        check.agent_sent({"jsonrpc": "2.0", "id": 7, "result": {}})
    with pytest.raises(AssertionError, match="breaks the schema"):
        check.agent_sent({"jsonrpc": "2.0", "id": None, "error": {"code": "x", "message": 1}})


def test_updates_need_a_known_session_and_turn_updates_a_turn() -> None:
    check = _connected()
    check.agent_sent(_update("s1", sessionUpdate="available_commands_update",
                             availableCommands=[]))
    with pytest.raises(AssertionError, match="does not know"):
        check.agent_sent(_chunk("s2"))
    with pytest.raises(AssertionError, match="outside a turn"):
        check.agent_sent(_chunk("s1"))
    check.client_sent({"jsonrpc": "2.0", "id": 2, "method": "session/prompt",
                       "params": {"sessionId": "s1", "prompt": []}})
    check.agent_sent(_chunk("s1"))
    check.agent_sent({"jsonrpc": "2.0", "id": 2, "result": {"stopReason": "end_turn"}})
    with pytest.raises(AssertionError, match="outside a turn"):  # after the response
        check.agent_sent(_chunk("s1"))


def test_only_history_while_a_session_loads() -> None:
    check = _connected()
    check.client_sent({"jsonrpc": "2.0", "id": 2, "method": "session/load",
                       "params": {"sessionId": "old", "cwd": "/w", "mcpServers": []}})
    check.agent_sent(_chunk("old"))
    with pytest.raises(AssertionError, match="before the load/resume response"):
        check.agent_sent(_update("old", sessionUpdate="available_commands_update",
                                 availableCommands=[]))


def test_gated_traffic_needs_the_capability() -> None:
    notice = _update("s1", sessionUpdate="notice", severity="info", title="t")
    read = {"jsonrpc": "2.0", "id": 5, "method": "fs/read_text_file",
            "params": {"sessionId": "s1", "path": "/w/a"}}
    boolean = _update("s1", sessionUpdate="config_option_update", configOptions=[
        {"id": "t", "name": "T", "type": "boolean", "currentValue": True}])
    terminal = {"jsonrpc": "2.0", "id": 6, "method": "terminal/create",
                "params": {"sessionId": "s1", "command": "ls"}}
    bare = _connected()
    for message in (notice, read, boolean):
        with pytest.raises(AssertionError, match="not advertised"):
            bare.agent_sent(message)
    full = _connected({"fs": {"readTextFile": True},
                       "session": {"notices": {}, "configOptions": {"boolean": {}}}})
    for message in (notice, read, boolean):
        full.agent_sent(message)
    with pytest.raises(AssertionError, match="not expected"):  # the agent never uses them
        full.agent_sent(terminal)


@pytest.mark.anyio
async def test_checked_stream_collects_what_the_agent_breaks() -> None:
    ours, theirs = memory_pair()
    checked = acp_raw.CheckedStream(ours, agent_side=False)
    async with ours, theirs:
        await checked.send(msgspec.json.encode({"jsonrpc": "2.0", "id": 0,
                                                "method": "initialize",
                                                "params": {"protocolVersion": 1}}))
        assert msgspec.json.decode(await theirs.receive())["method"] == "initialize"
        await theirs.send(b'{"jsonrpc":"2.0","id":0,"result":{"protocolVersion":1}}')
        await theirs.send(b'{"jsonrpc":"2.0","method":"session/update","params":{}}')
        with anyio.fail_after(units(1)):
            await checked.receive()
            await checked.receive()
    assert checked.conformance.checked == 2
    assert len(checked.errors) == 1 and "breaks the schema" in checked.errors[0]
