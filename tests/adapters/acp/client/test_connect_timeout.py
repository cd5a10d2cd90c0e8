"""``connect_acp`` gives up on an agent that never answers ``initialize``, and says so."""

from __future__ import annotations

import inspect
import sys

import pytest

from wireproto.adapters.acp import connect_acp

pytestmark = pytest.mark.anyio

SILENT = [sys.executable, "-c", "import sys; sys.stdin.read()"]  # reads, never answers


def test_the_handshake_has_a_default_timeout() -> None:
    assert inspect.signature(connect_acp).parameters["initialize_timeout"].default == 30.0


@pytest.mark.slow  # waits out a timeout (seconds): slow tier
async def test_a_silent_agent_fails_the_handshake_with_a_clear_error(anyio_backend: str) -> None:
    with pytest.raises(TimeoutError, match=r"did not answer initialize within 1\.5 s after it"):
        async with connect_acp(SILENT, initialize_timeout=1.5):
            raise AssertionError("connected to an agent that never answered")
