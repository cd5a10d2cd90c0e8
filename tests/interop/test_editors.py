"""``docs/editors.md``: each editor configuration starts the agent, checked with the official SDK.

The JSON blocks of the page (Zed's and JetBrains' ``agent_servers``) are run by
``editor_client.mjs`` (the ACP TypeScript SDK) with the page's paths replaced by
this test's: the tutorial's ``coder.py`` and this environment's ``wireproto``.
The Kimi Wire SDK section is run by ``kimi_client.mjs`` with the official Kimi
agent SDK (``executable`` and ``WIREPROTO_AGENT`` as the page says), and its
spawn form once more by wireproto's own Wire client.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from wireproto.adapters.wire import connect_wire

ROOT = Path(__file__).resolve().parents[2]
EDITORS = ROOT / "docs" / "editors.md"
TUTORIAL = ROOT / "docs" / "tutorial.md"
INTEROP = Path(__file__).resolve().parent
BLOCK = re.compile(r"^```(\w+)\n(.*?)^```", re.MULTILINE | re.DOTALL)


def _blocks(path: Path, kind: str) -> list[str]:
    return [body for lang, body in BLOCK.findall(path.read_text()) if lang == kind]


@pytest.fixture
def project(tmp_path: Path) -> Path:
    """The page's ``/home/me/coder``: the tutorial's ``coder.py``."""
    folder = tmp_path / "coder"
    folder.mkdir()
    (folder / "coder.py").write_text("".join(_blocks(TUTORIAL, "python")))
    return folder


def _localize(text: str, project: Path) -> str:
    wireproto = str(Path(sys.executable).parent / "wireproto")
    return text.replace("/home/me/coder/.venv/bin/wireproto", wireproto).replace(
        "/home/me/coder", str(project))


@pytest.mark.parametrize("editor", [0, 1], ids=["zed", "jetbrains"])
def test_editor_configurations_start_the_agent(
    node: str, node_modules: Path, tmp_path: Path, project: Path, editor: int
) -> None:
    configs = [json.loads(_localize(b, project)) for b in _blocks(EDITORS, "json")]
    assert len(configs) == 2
    server = configs[editor]["agent_servers"]["Coder"]
    workdir = tmp_path / "work"
    workdir.mkdir()
    env = {**os.environ, "WIREPROTO_HOME": str(tmp_path / "home")}
    env.pop("WIREPROTO_AGENT", None)
    done = subprocess.run(
        [node, str(INTEROP / "editor_client.mjs"), json.dumps(server), str(workdir), "hello"],
        cwd=INTEROP, env=env, capture_output=True, text=True, timeout=60, check=False,
    )
    assert done.returncode == 0, done.stderr[-4000:]
    summary = json.loads(done.stdout)
    assert summary["agent"] == "coder"
    assert summary["reply"].strip() == "You said: hello (earlier prompts: 0)"
    assert summary["stopReason"] == "end_turn"
    assert summary["agentExitCode"] == 0


KIMI_SDK = INTEROP / "node_modules" / "@moonshot-ai" / "kimi-agent-sdk" / "package.json"


@pytest.fixture
def kimi_sdk(node_modules: Path) -> Path:
    """The pinned Kimi agent SDK (``npm install`` here when an older install lacks it)."""
    if not KIMI_SDK.is_file():
        subprocess.run(["npm", "install", "--no-audit", "--no-fund"], cwd=INTEROP,
                       capture_output=True, timeout=600, check=False)
    assert KIMI_SDK.is_file(), "npm install in tests/interop did not install the Kimi SDK"
    return KIMI_SDK


def _wire_setting(project: Path) -> tuple[str, str]:
    """The page's executable and ``WIREPROTO_AGENT``, localized."""
    code = _blocks(EDITORS, "typescript")[0]
    variable = re.search(r'WIREPROTO_AGENT: "([^"]+)"', code)
    executable = re.search(r'executable: "([^"]+)"', code)
    assert variable and executable
    return _localize(executable.group(1), project), _localize(variable.group(1), project)


def test_the_kimi_sdk_spawns_the_agent(
    node: str, kimi_sdk: Path, tmp_path: Path, project: Path
) -> None:
    executable, agent = _wire_setting(project)
    env = {**os.environ, "WIREPROTO_HOME": str(tmp_path / "home")}
    env.pop("WIREPROTO_AGENT", None)
    workdir = tmp_path / "work"
    workdir.mkdir()

    def run(*prompts: str) -> list[dict[str, object]]:
        done = subprocess.run(
            [node, str(INTEROP / "kimi_client.mjs"), executable, str(workdir),
             json.dumps({"WIREPROTO_AGENT": agent}), "kimi-1", *prompts],
            cwd=INTEROP, env=env, capture_output=True, text=True, timeout=60, check=False,
        )
        assert done.returncode == 0, done.stderr[-4000:]
        turns: list[dict[str, object]] = json.loads(done.stdout)
        return turns

    first = run("hello")
    assert first == [{"reply": "You said: hello (earlier prompts: 0) ", "status": "finished",
                      "types": ["TurnBegin", "StepBegin", *["ContentPart"] * 6, "TurnEnd"]}]
    again = run("/count 2")  # the same session id: a second run resumes the session
    assert again[0]["reply"] == "1 2 " and again[0]["status"] == "finished"
    log = (tmp_path / "home" / "sessions" / "kimi-1.jsonl").read_text()
    assert "hello" in log and "/count 2" in log


@pytest.mark.anyio
async def test_the_spawn_form_with_wireprotos_wire_client(tmp_path: Path, project: Path) -> None:
    executable, agent = _wire_setting(project)
    env = {**os.environ, "WIREPROTO_HOME": str(tmp_path / "home"), "WIREPROTO_AGENT": agent}
    cmd = [executable, "--session", "sdk-1", "--work-dir", str(tmp_path), "--wire"]
    async with connect_wire(cmd, env=env, cwd=str(tmp_path / ".."), event_buffer=0) as client:
        assert client.server_info is not None and client.server_info.name == "coder"
        result = await client.prompt("hello")
        assert result.status == "finished"
