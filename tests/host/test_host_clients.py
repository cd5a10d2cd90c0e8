"""The host as a client program sees it: argument checks, deadlines, what is masked.

Real harness processes: ``tests/helpers/mcp_harness.py`` (official Python
SDK) and ``tests/helpers/acp_scripted.py`` (an agent that never answers some
methods).
"""

from __future__ import annotations

import json
import logging
import sys
from pathlib import Path
from typing import Any

import pytest

from wireproto.host import Caller, Host, NativeTool, load_config
from wireproto.host.host import _secrets
from wireproto.host.store import AuthState
from wireproto.transports.subprocess import stderr_log

from .conftest import HARNESS, HELPERS

pytestmark = pytest.mark.anyio

SCRIPTED = [sys.executable, str(HELPERS / "acp_scripted.py")]


def _toml(items: list[str]) -> str:
    return json.dumps(items)


async def _read(arguments: dict[str, Any], caller: Caller) -> str:
    return f"read {arguments['path']}"


READ = NativeTool(
    name="read", description="read a file", handler=_read,
    input_schema={"type": "object", "properties": {"path": {"type": "string"},
                                                   "limit": {"type": "integer"}},
                  "required": ["path"], "additionalProperties": False},
)


@pytest.fixture
def config_file(tmp_path: Path) -> Path:
    home = tmp_path / "home"
    home.mkdir()
    path = tmp_path / "host.toml"
    path.write_text(f"""
prefix = "kiki"

[executors.harness]
command = {_toml(HARNESS)}

[executors.home]
command = {_toml([*HARNESS, "--print-env", "HOME"])}
env = {{ HOME = "{home}" }}

[executors.marked]
command = {_toml([*HARNESS, "--print-env", "PLAIN_SETTING"])}
env = {{ PLAIN_SETTING = "do-not-show-me" }}
secret_env = ["PLAIN_SETTING"]

[executors.hangs]
command = {_toml([*SCRIPTED, "--silent", "session/new"])}

[executors.auth_hangs]
command = {_toml([*SCRIPTED, "--auth", "--silent", "authenticate"])}

[agent_executor_overrides.harness.defaults]
inject_kiki_mcp = true
""", encoding="utf-8")
    return path


async def test_native_tool_arguments_are_checked_against_the_input_schema(
    config_file: Path, tmp_path: Path, ask: Any
) -> None:
    async with Host(load_config(config_file), [READ], tmp_path / "store") as host:
        record = host.new_session("harness", str(tmp_path))
        async with host.bind(record.session_id) as binding:
            good = await ask(binding, 'call kiki kiki_read {"path": "a.txt"}')
            bad = await ask(binding, 'call kiki kiki_read {"path": 5}')
            missing = await ask(binding, 'call kiki kiki_read {"limit": 1}')
            extra = await ask(binding, 'call kiki kiki_read {"path": "a", "mode": "x"}')
    assert good == {"text": "read a.txt", "isError": False}
    assert bad["error"] == -32602
    assert bad["message"].startswith("Invalid arguments for kiki_read: path: 5 is not of type")
    assert missing["error"] == -32602 and "'path' is a required property" in missing["message"]
    assert extra["error"] == -32602 and "'mode' was unexpected" in extra["message"]


async def test_only_secret_looking_values_are_masked(
    config_file: Path, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.INFO, logger=stderr_log.name)
    config = load_config(config_file)
    async with Host(config, [READ], tmp_path / "store") as host:
        for executor in ("home", "marked"):
            record = host.new_session(executor, str(tmp_path))
            async with host.bind(record.session_id):
                pass
    lines = [r.getMessage() for r in caplog.records if r.name == stderr_log.name]
    assert any(line.endswith(f"my HOME={tmp_path / 'home'}") for line in lines)
    assert any(line.endswith("my PLAIN_SETTING=[redacted]") for line in lines)
    assert "do-not-show-me" not in caplog.text


def test_what_counts_as_a_secret(config_file: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("SOME_API_TOKEN", "tok-123456")
    monkeypatch.setenv("DB_PASSWORD", "hunter22")
    monkeypatch.setenv("HOME", "/home/someone")

    class NoBridge:
        mcp_servers: tuple[Any, ...] = ()

    executor = load_config(config_file).executor("marked")
    found = set(_secrets(NoBridge(), executor))  # type: ignore[arg-type]
    assert {"tok-123456", "hunter22", "do-not-show-me"} <= found
    assert "/home/someone" not in found


async def test_bind_and_authenticate_have_deadlines(config_file: Path, tmp_path: Path) -> None:
    async with Host(load_config(config_file), [READ], tmp_path / "store") as host:
        record = host.new_session("hangs", str(tmp_path))
        with pytest.raises(TimeoutError):
            async with host.bind(record.session_id, timeout=0.5):
                pass
        assert not host.bindings
        record = host.new_session("auth_hangs", str(tmp_path))
        async with host.bind(record.session_id) as binding:
            assert binding.opened
            with pytest.raises(TimeoutError):
                await binding.authenticate("token", timeout=0.5)
            cancelled = await binding.client.ext_request("_test/cancelled")
        assert len(cancelled["ids"]) == 1  # the timed-out request was cancelled on the wire
        [observation] = host.observations(record.session_id)
        assert observation.state == AuthState.UNKNOWN.value
