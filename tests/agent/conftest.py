"""Fixtures for the agent API tests: a store in a temporary directory, a runtime, a channel.

Nothing here writes under ``WIREPROTO_HOME``: stores get their directory
explicitly. ``home`` (not automatic) isolates it for the tests of token files.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from wireproto.agent.demo import DemoAgent
from wireproto.agent.runtime import Runtime
from wireproto.agent.store import JsonlStore
from wireproto.testing import RecordingChannel


@pytest.fixture(autouse=True)
def no_token_env(monkeypatch: pytest.MonkeyPatch) -> None:
    """No login token from the environment."""
    monkeypatch.delenv("WIREPROTO_TOKEN", raising=False)


@pytest.fixture
def home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """Point WIREPROTO_HOME at a temporary directory; no token configured."""
    path = tmp_path / "home"
    monkeypatch.setenv("WIREPROTO_HOME", str(path))
    monkeypatch.delenv("WIREPROTO_TOKEN", raising=False)
    return path


@pytest.fixture
def workdir(tmp_path: Path) -> Path:
    """The sessions' working directory."""
    path = tmp_path / "work"
    path.mkdir()
    return path


@pytest.fixture
def store(tmp_path: Path) -> JsonlStore:
    """A JSON Lines store in a temporary directory."""
    return JsonlStore(tmp_path / "sessions")


@pytest.fixture
def runtime(store: JsonlStore) -> Runtime:
    return Runtime(DemoAgent(), store)


@pytest.fixture
def channel() -> RecordingChannel:
    return RecordingChannel()
