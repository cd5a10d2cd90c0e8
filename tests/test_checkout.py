"""A clean clone holds no virtual environment: CI (``.ci/run``) creates ``.venv`` and
``.venv-kimi`` itself, and a committed one (even a symlink to someone's copy) makes
``python -m venv`` fail there with "File exists"."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]


def _git(*args: str) -> str:
    return subprocess.run(["git", *args], cwd=REPO, capture_output=True, text=True,
                          check=True, timeout=60).stdout


@pytest.mark.skipif(shutil.which("git") is None or not (REPO / ".git").exists(),
                    reason="not a git checkout (e.g. an unpacked sdist)")
def test_no_virtual_environment_is_tracked_or_trackable() -> None:
    assert [p for p in _git("ls-files").splitlines() if p.startswith(".venv")] == []
    names = [".venv", ".venv-kimi", ".venv-3.10"]  # a directory or a symlink alike
    ignored = _git("check-ignore", "--no-index", *names).split()
    assert ignored == names
