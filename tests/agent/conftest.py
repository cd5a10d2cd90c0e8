"""Fixtures for the agent API tests: an isolated WIREPROTO_HOME, a runtime, a channel."""

from __future__ import annotations

from pathlib import Path

import pytest

from wireproto.agent.demo import DemoAgent
from wireproto.agent.runtime import Runtime
from wireproto.agent.store import SessionStore
from wireproto.testing import RecordingChannel


@pytest.fixture(autouse=True)
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
def store(home: Path) -> SessionStore:
    return SessionStore()


@pytest.fixture
def runtime(store: SessionStore) -> Runtime:
    return Runtime(DemoAgent(), store)


@pytest.fixture
def channel() -> RecordingChannel:
    return RecordingChannel()
