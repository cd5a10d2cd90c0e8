"""Fixtures for the interop tests with the official TypeScript SDK.

The npm packages are pinned in ``tests/interop/package.json`` and installed
by ``.ci/run``. For self-contained local runs, :func:`node_modules` runs
``npm install`` here when ``node_modules`` is absent. A missing ``node`` or
``npm`` skips the tests locally, with the reason; under CI (``CI`` set) it
fails them, as does a failed install: CI never skips them.
"""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

import pytest

INTEROP = Path(__file__).resolve().parent
SDK = INTEROP / "node_modules" / "@agentclientprotocol" / "sdk" / "package.json"


@pytest.fixture(scope="session")
def node() -> str:
    """The path of ``node`` (missing: skipped locally, failed under CI)."""
    path = shutil.which("node")
    if path is None:
        _missing("node is not on PATH: install Node.js 18+ to run the TypeScript SDK interop tests")
    assert path is not None
    return path


def _missing(reason: str) -> None:
    if os.environ.get("CI"):
        pytest.fail(f"{reason} (CI must run them: .ci/run installs the npm packages)")
    pytest.skip(reason)


@pytest.fixture(scope="session")
def node_modules(node: str) -> Path:
    """``tests/interop/node_modules`` with the pinned SDK (installed if absent)."""
    if not SDK.is_file():
        npm = shutil.which("npm")
        if npm is None:
            _missing("npm is not on PATH: it installs the TypeScript SDK into tests/interop")
        done = subprocess.run(
            [npm, "install", "--no-audit", "--no-fund"], cwd=INTEROP, capture_output=True,
            text=True, timeout=600, check=False,
        )
        if done.returncode != 0 or not SDK.is_file():
            pytest.fail(f"npm install failed in {INTEROP}:\n{done.stderr[-2000:]}")
    return INTEROP / "node_modules"
