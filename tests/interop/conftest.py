"""Fixtures for the interop tests with the official TypeScript SDK.

The npm packages are pinned in ``tests/interop/package.json`` and installed
by ``.ci/run``. For self-contained local runs, :func:`node_modules` runs
``npm install`` here when ``node_modules`` is absent. A missing ``node`` or
``npm``, or a failed install, fails the tests: they are never skipped.
"""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest

INTEROP = Path(__file__).resolve().parent
SDK = INTEROP / "node_modules" / "@agentclientprotocol" / "sdk" / "package.json"


@pytest.fixture(scope="session")
def node() -> str:
    """The path of ``node`` (the test fails when it is missing)."""
    path = shutil.which("node")
    if path is None:
        pytest.fail("node is required for the TypeScript SDK interop tests")
    return path


@pytest.fixture(scope="session")
def node_modules(node: str) -> Path:
    """``tests/interop/node_modules`` with the pinned SDK (installed if absent)."""
    if not SDK.is_file():
        npm = shutil.which("npm")
        if npm is None:
            pytest.fail("npm is required to install the TypeScript SDK (tests/interop)")
        done = subprocess.run(
            [npm, "install", "--no-audit", "--no-fund"], cwd=INTEROP, capture_output=True,
            text=True, timeout=600, check=False,
        )
        if done.returncode != 0 or not SDK.is_file():
            pytest.fail(f"npm install failed in {INTEROP}:\n{done.stderr[-2000:]}")
    return INTEROP / "node_modules"
