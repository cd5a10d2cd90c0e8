"""Fixtures for the host tests: a TOML config, native tools, and a running host.

The external harness is ``tests/helpers/mcp_harness.py`` (an ACP agent on the
official Python SDK that connects to the MCP servers it is given); the bridge
runs as the host starts it by default: ``python -m wireproto mcp-bridge``.
"""

from __future__ import annotations

import json
import sys
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import anyio
import pytest
from timeouts import units

from wireproto.host.config import HostConfig, load_config
from wireproto.host.host import Host
from wireproto.host.policy import Caller, NativeTool, ToolGroup

HELPERS = Path(__file__).resolve().parents[1] / "helpers"
HARNESS = [sys.executable, str(HELPERS / "mcp_harness.py")]
LIMIT = units(6)  # seconds: a generous bound for one harness command


def _toml_list(items: list[str]) -> str:
    return json.dumps(items)  # a JSON array of strings is a TOML array


CONFIG = f"""
prefix = "kiki"
no_stdio_mcp = ["openclaw", "pi"]

[executors.harness]
command = {_toml_list(HARNESS)}

[executors.harness_img]
command = {_toml_list([*HARNESS, "--image"])}

[executors.harness_auth]
command = {_toml_list([*HARNESS, "--require-auth"])}

[executors.leaky]
command = {_toml_list([*HARNESS, "--print-env", "LEAKY_KEY"])}
env = {{ LEAKY_KEY = "sk-test-0123456789abcdef", SHORT = "1" }}

[executors.plain]
command = {_toml_list(HARNESS)}

[executors.pi]
command = {_toml_list(HARNESS)}

[agent_executor_overrides.harness.defaults]
inject_kiki_mcp = true

[agent_executor_overrides.harness_auth.defaults]
inject_kiki_mcp = true

[agent_executor_overrides.leaky.defaults]
inject_kiki_mcp = true

[agent_executor_overrides.pi.defaults]
inject_kiki_mcp = true

[profiles.open]
kiki_context = ["notes"]
allow_kiki_subagents = true

[profiles.strict]
allowed_tools = ["kiki_read", "grep", "notes"]
denied_tools = ["write"]
kiki_context = ["kiki_notes"]

[profiles.off]
inject_kiki_mcp = false

[profiles.closed]
inject_kiki_mcp = true
kiki_context = []
allow_kiki_subagents = false
"""


async def _tool(name: str, arguments: dict[str, Any], caller: Caller) -> str:
    return f"{name} {json.dumps(arguments, sort_keys=True)} for {caller.agent}"


def _native(name: str, group: ToolGroup = ToolGroup.PLAIN) -> NativeTool:
    async def handler(arguments: dict[str, Any], caller: Caller) -> str:
        return await _tool(name, arguments, caller)

    return NativeTool(name=name, description=f"the {name} tool", handler=handler, group=group)


TOOLS = [
    _native("read"),
    _native("write"),
    _native("grep"),
    _native("notes", ToolGroup.CONTEXT),
    _native("delegate", ToolGroup.SUBAGENTS),
]


@pytest.fixture
def config(tmp_path: Path) -> HostConfig:
    path = tmp_path / "host.toml"
    path.write_text(CONFIG, encoding="utf-8")
    return load_config(path)


@pytest.fixture
def store_dir(tmp_path: Path) -> Path:
    return tmp_path / "store"


@pytest.fixture
def tools() -> list[NativeTool]:
    """The native tools: read, write, grep (plain), notes (context), delegate (subagents)."""
    return TOOLS


@pytest.fixture
async def host(config: HostConfig, store_dir: Path) -> AsyncIterator[Host]:
    async with Host(config, TOOLS, store_dir) as running:  # the default bridge command
        yield running


async def _ask(binding: Any, command: str) -> Any:
    with anyio.fail_after(LIMIT):
        outcome = await binding.prompt(command)
    assert outcome.stop_reason == "end_turn"
    return json.loads(outcome.text)


@pytest.fixture
def ask() -> Any:
    """``await ask(binding, command)``: one harness command, its JSON answer decoded."""
    return _ask
