"""The host end to end: a real external harness process (``tests/helpers/mcp_harness.py``)
bound by the host, connecting to the bridge it is given and calling tools on command.

Each binding starts a harness (and, on first tool use, a bridge) process;
like every async test, these run on asyncio and on trio (they are in the
``slow`` tier, so the default run leaves them out).
"""

from __future__ import annotations

import json
import logging
import os
import sys
from pathlib import Path
from typing import Any

import pytest

from wireproto.adapters.acp import schema as s
from wireproto.adapters.mcp import connect_mcp
from wireproto.errors import InvalidArgument, LocalProtocolError, NotFound, RpcError
from wireproto.host.channel import CREDENTIAL_INVALID, TOKEN_ENV
from wireproto.host.config import ConfigError, HostConfig, parse_config
from wireproto.host.host import DEFAULT_BRIDGE_COMMAND, Host
from wireproto.host.policy import NativeTool
from wireproto.host.store import AuthState
from wireproto.transports.subprocess import stderr_log

# each test starts several harness and bridge processes: room for a busy machine
pytestmark = [pytest.mark.anyio, pytest.mark.timeout(120)]

PLAIN = ["kiki_read", "kiki_write", "kiki_grep"]


def denied(answer: Any, reason: str) -> bool:
    return (isinstance(answer, dict) and answer.get("error") == -32602
            and reason in answer.get("message", ""))


async def test_bridge_tools_are_listed_with_the_prefix_and_calls_work(
    host: Host, ask: Any, tmp_path: Path
) -> None:
    record = host.new_session("harness", str(tmp_path))
    async with host.bind(record.session_id) as binding:
        assert binding.bridged and binding.how == "new"
        assert binding.bridge_reason == "bridge injected (the engine default of executor 'harness')"
        servers = await ask(binding, "servers")  # wireproto mcp-bridge, this interpreter
        assert host.bridge_command == DEFAULT_BRIDGE_COMMAND
        assert servers == [{"name": "kiki", "command": sys.executable,
                            "args": ["-m", "wireproto", "mcp-bridge"],
                            "env": ["WIREPROTO_BRIDGE_ADDRESS", "WIREPROTO_BRIDGE_TOKEN"]}]
        assert await ask(binding, "tools") == {"kiki": PLAIN}
        answer = await ask(binding, 'call kiki kiki_read {"path": "/x"}')
        assert answer == {"text": 'read {"path": "/x"} for main', "isError": False}
        assert denied(await ask(binding, "call kiki kiki_notes {}"), "context group")
        assert denied(await ask(binding, "call kiki kiki_nope {}"), "Unknown tool: kiki_nope")
        assert denied(await ask(binding, "call kiki read {}"), "Unknown tool: read")
    assert host.session(record.session_id).harness_sessions == {"main": binding.harness_session_id}


async def test_denied_names_allow_lists_and_live_rechecks(
    host: Host, ask: Any, tmp_path: Path
) -> None:
    sid = host.new_session("harness", str(tmp_path), profile="strict").session_id
    async with host.bind(sid) as binding:
        # strict allows kiki_read, grep, notes (context group opened as kiki_notes); denies write
        assert await ask(binding, "tools") == {"kiki": ["kiki_read", "kiki_grep", "kiki_notes"]}
        assert denied(await ask(binding, "call kiki kiki_write {}"),
                      "write is denied by profile 'strict'")
        # a deny under the vendor name, set while the bridge runs, applies to the next request
        host.set_override(sid, "denied_tools", ["kiki_grep"])
        assert await ask(binding, "tools") == {"kiki": ["kiki_read", "kiki_notes"]}
        assert denied(await ask(binding, "call kiki kiki_grep {}"),
                      "kiki_grep is denied by the session override")
        # a second allow-list: each list must name the tool under one of its names
        host.set_override(sid, "allowed_tools", ["read"])
        assert await ask(binding, "tools") == {"kiki": ["kiki_read"]}
        assert denied(await ask(binding, "call kiki kiki_notes {}"),
                      "allow-list of the session override")
        assert (await ask(binding, "call kiki kiki_read {}"))["isError"] is False
        host.set_override(sid, "allowed_tools", None)
        host.set_override(sid, "denied_tools", None)
        assert await ask(binding, "tools") == {"kiki": ["kiki_read", "kiki_grep", "kiki_notes"]}


async def test_group_switches(host: Host, ask: Any, tmp_path: Path) -> None:
    sid = host.new_session("harness", str(tmp_path), profile="open").session_id
    async with host.bind(sid) as binding:
        assert await ask(binding, "tools") == {"kiki": [*PLAIN, "kiki_notes", "kiki_delegate"]}
        assert (await ask(binding, "call kiki kiki_delegate {}"))["text"] == "delegate {} for main"
        host.set_override(sid, "kiki_context", [])
        host.set_override(sid, "allow_kiki_subagents", False)
        assert await ask(binding, "tools") == {"kiki": PLAIN}
        assert denied(await ask(binding, "call kiki kiki_delegate {}"), "subagents group")
    # enabling injection opens no group: the "closed" profile injects with both groups closed
    host.set_override(sid, "kiki_context", None)
    host.set_override(sid, "allow_kiki_subagents", None)
    host.set_profile(sid, "closed")
    async with host.bind(sid) as binding:
        assert binding.bridged
        assert await ask(binding, "tools") == {"kiki": PLAIN}


async def test_layered_setting_null_inheritance_and_cold_resume(
    config: HostConfig, store_dir: Path, tools: list[NativeTool], ask: Any, tmp_path: Path
) -> None:
    async with Host(config, tools, store_dir) as host:
        sid = host.new_session("harness", str(tmp_path), profile="off").session_id
        async with host.bind(sid) as binding:  # engine default true < profile false
            assert not binding.bridged and await ask(binding, "servers") == []
            assert binding.bridge_reason == "no bridge: profile 'off'"
            host.set_override(sid, "inject_kiki_mcp", True)
            assert not binding.bridged  # takes effect at the next binding
            first = binding.harness_session_id
        async with host.bind(sid) as binding:  # session override true
            assert binding.bridged and binding.how == "resume"
            assert binding.harness_session_id == first
            assert await ask(binding, "tools") == {"kiki": PLAIN}
        host.set_override(sid, "inject_kiki_mcp", None)  # null: the profile again
        assert "inject_kiki_mcp" not in host.session(sid).execution.overrides
        assert host.policy(sid).inject().source == "profile 'off'"
        assert host.policy(sid, "reviewer").inject().value is False  # sub-agents too
        host.set_override(sid, "inject_kiki_mcp", True)
    # cold resume: a new host process reads the saved choice
    async with Host(config, tools, store_dir) as host:
        async with host.bind(sid) as binding:
            assert binding.bridged and binding.how == "resume"
            assert binding.harness_session_id == first
            assert binding.inject.source == "the session override"
            assert await ask(binding, "session") == {"id": first, "how": "resume"}
            assert await ask(binding, "tools") == {"kiki": PLAIN}


async def test_previous_behaviour_without_any_layer(host: Host, ask: Any, tmp_path: Path) -> None:
    sid = host.new_session("plain", str(tmp_path)).session_id
    assert host.policy(sid).inject().value is False  # an unmodified main agent: no bridge
    async with host.bind(sid, agent="reviewer", approved_tools=["read", "kiki_grep"]) as binding:
        assert binding.bridged  # a compatible sub-agent gets its approved native tools
        assert binding.bridge_reason == (
            "bridge injected (default: a compatible sub-agent gets its approved tools)")
        assert await ask(binding, "tools") == {"kiki": ["kiki_read", "kiki_grep"]}
        answer = await ask(binding, 'call kiki kiki_grep {"q": 1}')
        assert answer["text"] == 'grep {"q": 1} for reviewer'
    host.set_override(sid, "allow_kiki_subagents", True)  # the main agent asks for delegation
    assert host.policy(sid).inject().value is True


async def test_revocation_of_a_running_bridge(host: Host, ask: Any, tmp_path: Path) -> None:
    sid = host.new_session("harness", str(tmp_path)).session_id
    async with host.bind(sid) as binding:
        assert (await ask(binding, "call kiki kiki_read {}"))["isError"] is False
        host.set_override(sid, "inject_kiki_mcp", False)
        assert binding.revoked_reason == "injection turned off (the session override)"
        for command in ("tools", "call kiki kiki_read {}"):
            answer = await ask(binding, command)
            answer = answer.get("kiki", answer)
            assert answer["error"] == CREDENTIAL_INVALID
    host.set_override(sid, "inject_kiki_mcp", None)
    async with host.bind(sid) as old:
        assert await ask(old, "tools") == {"kiki": PLAIN}
        token = {e.name: e.value for e in old.mcp_servers[0].env}
        async with host.bind(sid) as new:  # rebinding ends the old binding
            assert old.ended and old.revoked_reason == "the binding was replaced"
            with pytest.raises(LocalProtocolError, match="has ended"):
                await old.prompt("tools")
            # the old harness and its bridge still run: drive it with the raw ACP client
            assert old.harness_session_id is not None
            async with old.client.prompt(old.harness_session_id, "call kiki kiki_read {}") as turn:
                texts = [u.content.text async for u in turn
                         if isinstance(u, s.AgentMessageChunk)
                         and isinstance(u.content, s.TextContent)]
            assert json.loads("".join(texts))["error"] == CREDENTIAL_INVALID
            assert (await ask(new, "call kiki kiki_read {}"))["isError"] is False
    # the binding ended: a bridge started later with its credential can do nothing
    assert not host.bindings
    async with connect_mcp(DEFAULT_BRIDGE_COMMAND, env={**os.environ, **token}) as client:
        with pytest.raises(RpcError) as info:
            await client.list_tools()
        assert info.value.code == CREDENTIAL_INVALID


async def test_executor_without_stdio_mcp_gets_no_bridge(
    host: Host, ask: Any, tmp_path: Path
) -> None:
    sid = host.new_session("pi", str(tmp_path)).session_id
    host.set_override(sid, "inject_kiki_mcp", True)
    async with host.bind(sid) as binding:
        assert not binding.bridged
        assert binding.bridge_reason == (
            "no bridge: executor 'pi' cannot take a stdio MCP server (no_stdio_mcp)")
        assert await ask(binding, "servers") == []


async def test_auth_observations_kept_after_close_and_cleared_on_rebinding(
    host: Host, ask: Any, tmp_path: Path
) -> None:
    sid = host.new_session("harness_auth", str(tmp_path)).session_id
    async with host.bind(sid) as binding:
        assert not binding.opened
        with pytest.raises(RpcError):
            await binding.authenticate("bogus")
        await binding.authenticate("login")
        assert binding.opened and binding.how == "new"
        assert await ask(binding, "tools") == {"kiki": PLAIN}
        first_id = binding.id
    seen = host.observations(sid)  # readable after the binding closed
    assert [(o.state, o.source) for o in seen] == [
        (AuthState.NEEDS_AUTHENTICATION.value, "acp session/new error -32000"),
        (AuthState.UNKNOWN.value, "acp authenticate error -32602"),
        (AuthState.AUTHENTICATED.value, "acp authenticate"),
    ]
    assert seen[0].detail["authMethods"] == ["login"]
    assert all(o.cwd == str(tmp_path) and o.binding_id == first_id and o.kind == "auth"
               for o in seen)
    assert seen[0].observed_at <= seen[2].observed_at and seen[0].observed_at.endswith("Z")
    async with host.bind(sid) as binding:  # the binding changed: cleared, then observed anew
        assert [(o.state, o.binding_id) for o in host.observations(sid)] == [
            (AuthState.NEEDS_AUTHENTICATION.value, binding.id)]
        assert host.observations(sid)[0].source == "acp session/resume error -32000"


async def test_image_prompt_refused_without_image_support(
    host: Host, ask: Any, tmp_path: Path
) -> None:
    image = s.ImageContent(data="iVBORw0KGgo=", mime_type="image/png")
    sid = host.new_session("harness", str(tmp_path)).session_id
    async with host.bind(sid) as binding:
        assert binding.prompt_capabilities.image is False
        with pytest.raises(InvalidArgument, match="does not accept image prompts"):
            await binding.prompt([s.TextContent(text="session"), image])
        assert (await ask(binding, "session"))["how"] == "new"  # nothing was sent
    host.session(sid)
    sid = host.new_session("harness_img", str(tmp_path)).session_id
    async with host.bind(sid) as binding:
        outcome = await binding.prompt([s.TextContent(text="session"), image])
        assert outcome.stop_reason == "end_turn" and '"how": "new"' in outcome.text


async def test_session_records_and_setting_errors(
    config: HostConfig, store_dir: Path, tools: list[NativeTool], tmp_path: Path
) -> None:
    host = Host(config, tools, store_dir)
    record = host.new_session("harness", str(tmp_path), profile="open", session_id="s-1")
    with pytest.raises(LocalProtocolError, match="not running"):
        async with host.bind("s-1"):
            pass
    assert host.session("s-1") == record
    with pytest.raises(InvalidArgument, match="already exists"):
        host.new_session("harness", str(tmp_path), session_id="s-1")
    with pytest.raises(InvalidArgument, match="absolute"):
        host.new_session("harness", "relative/dir")
    with pytest.raises(InvalidArgument, match="invalid session id"):
        host.new_session("harness", str(tmp_path), session_id="../escape")
    with pytest.raises(ConfigError, match="unknown executor"):
        host.new_session("nope", str(tmp_path))
    with pytest.raises(ConfigError, match="unknown profile"):
        host.set_profile("s-1", "nope")
    with pytest.raises(ConfigError, match="unknown setting"):
        host.set_override("s-1", "inject_other_mcp", True)
    with pytest.raises(ConfigError, match="true or false"):
        host.set_override("s-1", "inject_kiki_mcp", "yes")
    with pytest.raises(NotFound):
        host.session("s-2")
    host.set_override("s-1", "denied_tools", ["write"])
    assert host.session("s-1").execution.overrides == {"denied_tools": ["write"]}
    assert host.observations("s-1") == []
    with pytest.raises(ValueError, match="duplicate"):
        Host(config, [*tools, tools[0]], store_dir)


async def test_a_wireproto_harness_needs_allow_client_stdio_mcp(
    store_dir: Path, tools: list[NativeTool], tmp_path: Path
) -> None:
    env = {"WIREPROTO_HOME": str(tmp_path / "harness-home")}
    acp = [sys.executable, "-m", "wireproto", "acp"]
    config = parse_config({
        "prefix": "kiki",
        "executors": {
            "wp": {"command": [*acp, "--allow-client-stdio-mcp"], "env": env},
            "wp_default": {"command": acp, "env": env},
        },
        "agent_executor_overrides": {"wp": {"defaults": {"inject_kiki_mcp": True}},
                                     "wp_default": {"defaults": {"inject_kiki_mcp": True}}},
    })
    async with Host(config, tools, store_dir) as host:
        sid = host.new_session("wp", str(tmp_path)).session_id
        async with host.bind(sid) as binding:
            assert binding.bridged and binding.opened
            assert (await binding.prompt("/mcp")).text == "kiki (stdio)"
        sid = host.new_session("wp_default", str(tmp_path)).session_id
        with pytest.raises(RpcError, match="--allow-client-stdio-mcp") as info:
            async with host.bind(sid):
                pass
        assert info.value.code == -32602
        assert not host.bindings


async def test_secrets_handed_to_a_harness_never_reach_the_log(
    host: Host, ask: Any, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    # The "leaky" harness prints its executor's API key and the bridge
    # credential it was given to stderr, which the host drains into its log.
    caplog.set_level(logging.INFO, logger=stderr_log.name)
    record = host.new_session("leaky", str(tmp_path))
    async with host.bind(record.session_id) as binding:
        assert binding.bridged
        token = next(v.value for v in binding.mcp_servers[0].env if v.name == TOKEN_ENV)
        assert await ask(binding, "tools") == {"kiki": PLAIN}  # the credential still works
    lines = [r.getMessage() for r in caplog.records if r.name == stderr_log.name]
    assert any(line.endswith("my LEAKY_KEY=[redacted]") for line in lines)
    assert any(f"{TOKEN_ENV}=[redacted]" in line for line in lines)
    assert token not in caplog.text
    assert "sk-test-0123456789abcdef" not in caplog.text
