"""The host against an agent built on the official ACP TypeScript SDK (``host_agent.mjs``).

The guide's example (``examples/host_example.py``) runs as it is and prints what
the guide (``docs/host.md``) says; permission requests about the host's tools in
the title forms of Claude Code and Kimi CLI are answered by policy; an agent that
outlives its stdin is ended after its executor's grace, and the log says by which
signal.
"""

from __future__ import annotations

import json
import logging
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from wireproto.adapters.acp import schema
from wireproto.host import Caller, Host, NativeTool, load_config

pytestmark = pytest.mark.anyio

ROOT = Path(__file__).resolve().parents[2]
AGENT = ROOT / "tests" / "interop" / "host_agent.mjs"


async def _read(arguments: dict[str, Any], caller: Caller) -> str:
    return "read it"


TOOLS = [NativeTool(name=name, description=name, handler=_read) for name in ("read", "write")]


def test_the_guide_example_runs(node: str, node_modules: Path) -> None:
    done = subprocess.run(
        [sys.executable, str(ROOT / "examples" / "host_example.py"), node, str(AGENT)],
        capture_output=True, text=True, timeout=120, check=False,
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines() == _printed_in_the_guide()
    assert "observations: 0" in done.stdout  # (the guide shows a run that passed)


def _printed_in_the_guide() -> list[str]:
    """The lines ``docs/host.md`` says the example prints (its block after "It prints:")."""
    guide = (ROOT / "docs" / "host.md").read_text()
    block = guide.split("It prints:", 1)[1].split("```text\n", 1)[1].split("```", 1)[0]
    return block.splitlines()


def _config(tmp_path: Path, node: str, linger: bool = False) -> Path:
    command = [node, str(AGENT), *(["--linger"] if linger else [])]
    path = tmp_path / "host.toml"
    path.write_text(f"""
prefix = "kiki"

[executors.ts]
command = {json.dumps(command)}
shutdown_grace = 2.0

[agent_executor_overrides.ts.defaults]
inject_kiki_mcp = true

[profiles.no_write]
denied_tools = ["write"]
""", encoding="utf-8")
    return path


async def test_permissions_for_host_tools_follow_the_policy(
    tmp_path: Path, node: str, node_modules: Path
) -> None:
    asked: list[str] = []

    async def program(request: schema.RequestPermissionRequest) -> str:
        asked.append(str(request.tool_call.title))
        return "allow"

    config = load_config(_config(tmp_path, node))
    async with Host(config, TOOLS, tmp_path / "store") as host:
        record = host.new_session("ts", str(tmp_path), profile="no_write")
        async with host.bind(record.session_id, on_permission=program) as binding:
            answers = {title: (await binding.prompt(f"ask {title}")).text for title in (
                "mcp__kiki__kiki_read",             # Claude Code
                'kiki_read: {"path": "a.txt"}',     # Kimi CLI
                "mcp__kiki__kiki_write",            # denied by the profile
                "kiki_write",
                "mcp__other__kiki_read",            # another server's tool
                "Run ls",
            )}
    assert answers == {
        "mcp__kiki__kiki_read": "allow",
        'kiki_read: {"path": "a.txt"}': "allow",
        "mcp__kiki__kiki_write": "reject",
        "kiki_write": "reject",
        "mcp__other__kiki_read": "allow",
        "Run ls": "allow",
    }
    assert asked == ["mcp__other__kiki_read", "Run ls"]  # only those reached the program


async def test_an_agent_that_outlives_its_stdin_is_ended_after_the_grace(
    tmp_path: Path, node: str, node_modules: Path, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.INFO)
    config = load_config(_config(tmp_path, node, linger=True))
    assert config.executor("ts").shutdown_grace == 2.0
    async with Host(config, TOOLS, tmp_path / "store") as host:
        record = host.new_session("ts", str(tmp_path))
        async with host.bind(record.session_id) as binding:
            assert (await binding.prompt("hello")).text == "hello"
            process = binding.client.process
    assert process is not None and process.ended_by == "SIGTERM"
    assert process.returncode is not None and process.returncode != 0
    assert f"harness (pid {process.pid}) ended by SIGTERM" in caplog.text
