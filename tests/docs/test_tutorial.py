"""``docs/tutorial.md`` works as written: its Python blocks make ``coder.py``, its commands run.

The Python blocks are concatenated, in order, into ``coder.py``; every line of
every ``sh`` block (but the installation) runs in a shell, in that directory,
with this environment's ``wireproto`` first on ``PATH``, and must exit 0 and
print what the tutorial says it prints.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

TUTORIAL = Path(__file__).resolve().parents[2] / "docs" / "tutorial.md"
BLOCK = re.compile(r"^```(\w+)\n(.*?)^```", re.MULTILINE | re.DOTALL)

EXPECTED = {
    '"hello"': ["You said: hello (earlier prompts: 0)"],
    "/read notes.txt": ["[fs] read ", "notes.txt through this client", "notes.txt has 2 lines."],
    "/write hello.txt": ["[approval]", "Wrote hello.txt.", "[finished]"],
    "/write draft.txt": ["draft.txt through this client: no such file (yet)",
                         "[fs] wrote ", "Wrote draft.txt.", "[end_turn]"],
    "/count 3": ["1 2 3", "[end_turn]"],
    '"first"': ["You said: first (earlier prompts: 0)"],
    '"second"': ["> first", "You said: second (earlier prompts: 1)"],
    "demo --generic": ["Summary: 9 passed, 0 failed, 0 not run: all checks passed"],
}
"""A command's distinctive text -> what its output must contain."""


def _blocks(kind: str) -> list[str]:
    return [body for lang, body in BLOCK.findall(TUTORIAL.read_text()) if lang == kind]


def _commands() -> list[str]:
    lines = [line for body in _blocks("sh") for line in body.splitlines() if line.strip()]
    return [line for line in lines if not line.startswith("python3 -m venv")]


def test_every_command_has_an_expectation() -> None:
    commands = [c for c in _commands() if c.split()[0] != "printf"]
    assert commands and all(any(k in c for k in EXPECTED) for c in commands), commands


@pytest.mark.slow  # runs every step of the tutorial, seconds: slow tier
@pytest.mark.timeout(180)
def test_the_tutorial_runs_as_written(tmp_path: Path) -> None:
    source = "".join(_blocks("python"))
    (tmp_path / "coder.py").write_text(source)
    compile(source, "coder.py", "exec")  # the blocks assemble into one valid module
    env = {**os.environ, "WIREPROTO_HOME": str(tmp_path / "home"),
           "PATH": f"{Path(sys.executable).parent}{os.pathsep}{os.environ.get('PATH', '')}"}
    env.pop("WIREPROTO_AGENT", None)
    (tmp_path / "hello.txt").unlink(missing_ok=True)
    (tmp_path / "draft.txt").unlink(missing_ok=True)
    for command in _commands():
        done = subprocess.run(["bash", "-c", command], cwd=tmp_path, env=env,
                              capture_output=True, text=True, timeout=120)
        assert done.returncode == 0, f"{command}\n{done.stdout}\n{done.stderr}"
        for key, wanted in EXPECTED.items():
            if key in command:
                for text in wanted:
                    assert text in done.stdout, f"{command}: no {text!r} in\n{done.stdout}"
    assert (tmp_path / "hello.txt").read_text() == "Hello from coder"
    assert (tmp_path / "draft.txt").read_text() == "Written through the client"
