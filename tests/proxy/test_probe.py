"""``--agent-protocol auto``: the probe tells ACP agents from Wire ones."""

from __future__ import annotations

import os
import sys
from pathlib import Path

import pytest

from wireproto.proxy import ProbeError, probe_protocol

pytestmark = pytest.mark.anyio

WIREPROTO = [sys.executable, "-m", "wireproto"]


@pytest.mark.parametrize("protocol", ["acp", "wire"])
async def test_probe_finds_the_protocol(tmp_path: Path, protocol: str) -> None:
    env = {**os.environ, "WIREPROTO_HOME": str(tmp_path)}
    assert await probe_protocol([*WIREPROTO, protocol], env=env) == protocol


@pytest.mark.slow  # waits out a timeout (seconds): slow tier
async def test_probe_of_a_silent_command_names_the_way_out() -> None:
    with pytest.raises(ProbeError, match="--agent-protocol"):
        await probe_protocol([sys.executable, "-c", "import time; time.sleep(30)"],
                             timeout=1)


async def test_probe_of_a_command_that_exits() -> None:
    with pytest.raises(ProbeError, match="exited without answering"):
        await probe_protocol([sys.executable, "-c", "print('hello')"])


DEEP_AGENT = str(Path(__file__).resolve().parents[1] / "helpers" / "deep_agent.py")


async def test_probe_reads_past_lines_nested_too_deeply() -> None:
    assert await probe_protocol([sys.executable, DEEP_AGENT, "answer"]) == "acp"
