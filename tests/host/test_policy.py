"""The host policy and configuration, without processes: names, layers, groups, injection."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from wireproto.host.config import ConfigError, HostConfig, check_setting, load_config, parse_config
from wireproto.host.policy import MAIN_AGENT, NativeTool, Policy, ToolGroup


async def _noop(arguments: dict[str, Any], caller: Any) -> str:
    return ""


READ = NativeTool("read", "", _noop)
WRITE = NativeTool("write", "", _noop)
GREP = NativeTool("grep", "", _noop)
NOTES = NativeTool("notes", "", _noop, group=ToolGroup.CONTEXT)
MEMORY = NativeTool("memory", "", _noop, group=ToolGroup.CONTEXT)
DELEGATE = NativeTool("delegate", "", _noop, group=ToolGroup.SUBAGENTS)
ALL = [READ, WRITE, GREP, NOTES, MEMORY, DELEGATE]


def policy(
    config: HostConfig,
    executor: str = "harness",
    agent: str = MAIN_AGENT,
    profile: str | None = None,
    approved: list[str] | None = None,
    **overrides: Any,
) -> Policy:
    return Policy(config, config.executor(executor), agent, profile=profile,
                  overrides=overrides, approved_tools=approved)


def permitted(p: Policy) -> list[str]:
    return [t.name for t in ALL if p.check(t).allowed]


def test_config_is_read_with_tomllib(config: HostConfig) -> None:
    assert config.prefix == "kiki"
    assert config.keys.inject == "inject_kiki_mcp"
    assert config.keys.context == "kiki_context"
    assert config.keys.subagents == "allow_kiki_subagents"
    assert config.engine_defaults["harness"] == {"inject_kiki_mcp": True}
    assert config.profiles["closed"] == {"inject_kiki_mcp": True, "kiki_context": (),
                                         "allow_kiki_subagents": False}
    assert config.executors["harness_img"].command[-1] == "--image"
    assert not config.executors["pi"].stdio_mcp and config.executors["harness"].stdio_mcp


def test_names(config: HostConfig) -> None:
    p = policy(config)
    assert p.vendor_name("read") == "kiki_read"
    assert p.native_name("kiki_read") == "read"
    assert p.native_name("read") is None
    assert p.native_name("kiki_") is None
    assert p.native_name("other_read") is None


def test_plain_tools_by_default_groups_closed(config: HostConfig) -> None:
    assert permitted(policy(config)) == ["read", "write", "grep"]
    verdict = policy(config).check(NOTES)
    assert not verdict.allowed and "kiki_context" in verdict.reason
    assert "allow_kiki_subagents" in policy(config).check(DELEGATE).reason


@pytest.mark.parametrize("name", ["write", "kiki_write"])
def test_deny_under_either_name(config: HostConfig, name: str) -> None:
    p = policy(config, denied_tools=(name,))
    verdict = p.check(WRITE)
    assert not verdict.allowed
    assert verdict.reason == f"{name} is denied by the session override"
    assert permitted(p) == ["read", "grep"]


def test_deny_wins_over_allow_and_any_layer_denies(config: HostConfig) -> None:
    p = policy(config, profile="strict", allowed_tools=("kiki_write", "read"))
    assert not p.check(WRITE).allowed  # the profile denies "write"
    assert "profile 'strict'" in p.check(WRITE).reason


def test_every_allow_list_must_name_the_tool(config: HostConfig) -> None:
    # strict: ["kiki_read", "grep", "notes"]; session: ["read", "kiki_grep", "delegate"]
    p = policy(config, profile="strict", allowed_tools=("read", "kiki_grep", "delegate"))
    assert p.check(READ).allowed and p.check(GREP).allowed  # one name in each list
    verdict = p.check(DELEGATE)
    assert not verdict.allowed
    assert "allow-list of profile 'strict'" in verdict.reason
    p = policy(config, profile="strict", allowed_tools=("read",))
    assert permitted(p) == ["read"]
    assert "allow-list of the session override" in p.check(GREP).reason


def test_sub_agent_approval_is_an_allow_list(config: HostConfig) -> None:
    p = policy(config, agent="reviewer", approved=["read", "kiki_notes"])
    assert permitted(p) == ["read"]  # notes: the context group is still closed
    p = policy(config, agent="reviewer", profile="open", approved=["read", "kiki_notes"])
    assert permitted(p) == ["read", "notes"]
    assert "sub-agent 'reviewer'" in p.check(GREP).reason


def test_group_switches(config: HostConfig) -> None:
    assert permitted(policy(config, profile="open")) == [
        "read", "write", "grep", "notes", "delegate"]
    closed = policy(config, profile="open", kiki_context=(), allow_kiki_subagents=False)
    assert permitted(closed) == ["read", "write", "grep"]
    assert permitted(policy(config, kiki_context=("*",))) == [
        "read", "write", "grep", "notes", "memory"]
    assert permitted(policy(config, kiki_context=("kiki_memory",))) == [
        "read", "write", "grep", "memory"]


def test_injection_opens_no_groups(config: HostConfig) -> None:
    p = policy(config, profile="closed")
    assert p.inject().value is True
    assert permitted(p) == ["read", "write", "grep"]


def test_inject_layers_and_null_inheritance(config: HostConfig) -> None:
    assert policy(config).inject().value is True  # engine default of "harness"
    assert "engine default" in str(policy(config).inject().source)
    off = policy(config, profile="off")
    assert off.inject().value is False and off.inject().source == "profile 'off'"
    on = policy(config, profile="off", inject_kiki_mcp=True)
    assert on.inject().value is True and on.inject().source == "the session override"
    back = policy(config, profile="off", inject_kiki_mcp=None)  # null: inherit again
    assert back.inject().value is False and back.inject().source == "profile 'off'"
    sub = policy(config, agent="reviewer", profile="off")
    assert sub.inject().value is False  # named sub-agents follow the same layers


def test_previous_behaviour_when_no_layer_sets_it(config: HostConfig) -> None:
    main = policy(config, executor="plain")
    assert main.inject().value is False
    assert main.inject().source == (
        "default: the main agent does not ask for the context or delegation group")
    assert policy(config, executor="plain", profile="open").inject().value is True
    assert policy(config, executor="plain", allow_kiki_subagents=True).inject().value is True
    assert policy(config, executor="plain", kiki_context=()).inject().value is False
    sub = policy(config, executor="plain", agent="reviewer", approved=["read"])
    assert sub.inject().value is True
    assert permitted(sub) == ["read"]


def test_no_stdio_mcp_executor_never_gets_the_bridge(config: HostConfig) -> None:
    p = policy(config, executor="pi", inject_kiki_mcp=True)
    decision = p.inject()
    assert decision.value is False
    assert decision.source == "executor 'pi' cannot take a stdio MCP server (no_stdio_mcp)"


def test_default_no_stdio_list_names_openclaw_and_pi() -> None:
    config = parse_config({"prefix": "kiki", "executors": {
        "openclaw": {"command": ["openclaw"]}, "pi": {"command": ["pi"]},
        "codex": {"command": ["codex-acp"]}}})
    assert {e.id for e in config.executors.values() if not e.stdio_mcp} == {"openclaw", "pi"}


@pytest.mark.parametrize(("data", "match"), [
    ({"prefix": "Kiki!"}, "prefix"),
    ({"prefix": "kiki", "executors": {"x": {"command": []}}}, "executors.x.command"),
    ({"prefix": "kiki", "profiles": {"p": {"inject_kiki_mcp": "yes"}}}, "true or false"),
    ({"prefix": "kiki", "profiles": {"p": {"inject_other_mcp": True}}}, "unknown setting"),
    ({"prefix": "kiki", "profiles": {"p": {"kiki_context": "notes"}}}, "list of tool names"),
    ({"prefix": "kiki", "agent_executor_overrides": {"x": {"defaults": {"denied_tools": [1]}}}},
     "agent_executor_overrides.x.defaults"),
    ({"prefix": "kiki", "no_stdio_mcp": "pi"}, "no_stdio_mcp"),
])
def test_config_errors(data: dict[str, Any], match: str) -> None:
    with pytest.raises(ConfigError, match=match):
        parse_config(data)


def test_config_file_errors(tmp_path: Path) -> None:
    bad = tmp_path / "bad.toml"
    bad.write_text("prefix = \n", encoding="utf-8")
    with pytest.raises(ConfigError, match=r"bad\.toml"):
        load_config(bad)
    with pytest.raises(ConfigError, match="unknown executor"):
        parse_config({"prefix": "kiki"}).executor("nope")
    keys = parse_config({"prefix": "kiki"}).keys
    assert check_setting(keys, "allowed_tools", ["a"], "here") == ("a",)
    assert check_setting(keys, "inject_kiki_mcp", None, "here") is None
