"""``wireproto connect``: an agent's questions answered at the keyboard (ACP forms, Wire)."""

from __future__ import annotations

import subprocess
from pathlib import Path
from typing import Any

import pytest


@pytest.mark.parametrize("protocol", ["acp", "wire"])
def test_ask_is_answered_at_the_keyboard(kit: Any, tmp_path: Path, protocol: str) -> None:
    proc = kit.spawn("connect", protocol, "--", *kit.wireproto, protocol, cwd=tmp_path,
                     lines=False)
    proc.write("/ask Which color? red|blue|green\n")
    proc.wait_out("3) green")
    proc.write("purple\n")  # not an option: asked again
    proc.wait_out("try again")
    proc.write("2\n")
    proc.wait_out("You chose: blue")
    proc.write("/ask Which color? red|blue\n")
    proc.wait_out("2) blue\n")
    proc.write("/decline\n")
    proc.wait_out("No answer")
    proc.close_stdin()
    assert proc.wait() == 0, proc.err


@pytest.mark.parametrize("protocol", ["acp", "wire"])
def test_script_mode_declines_questions(kit: Any, tmp_path: Path, protocol: str) -> None:
    (tmp_path / "script.txt").write_text("/ask Which color? red|blue\n")
    proc = kit.spawn("connect", protocol, "--script", "script.txt", "--",
                     *kit.wireproto, protocol, cwd=tmp_path, stdin=subprocess.DEVNULL,
                     lines=False)
    assert proc.wait() == 0, proc.err
    out = proc.out.decode()
    assert "(no keyboard with --script)" in out
    assert "No answer" in out


def test_wire_progress_is_rendered(kit: Any, tmp_path: Path) -> None:
    (tmp_path / "script.txt").write_text("/retry\n/subagent from below\n")
    proc = kit.spawn("connect", "wire", "--script", "script.txt", "--",
                     *kit.wireproto, "wire", cwd=tmp_path, stdin=subprocess.DEVNULL, lines=False)
    assert proc.wait() == 0, proc.err
    out = proc.out.decode()
    assert "[retry] step 1 failed (TimeoutError); attempt 2 of 3\nRecovered" in out
    assert "  (subagent) from below\n" in out
    assert "Subagent done" in out


def test_acp_retry_notice_is_rendered(kit: Any, tmp_path: Path) -> None:
    (tmp_path / "script.txt").write_text("/retry\n")
    proc = kit.spawn("connect", "acp", "--script", "script.txt", "--",
                     *kit.wireproto, "acp", cwd=tmp_path, stdin=subprocess.DEVNULL, lines=False)
    assert proc.wait() == 0, proc.err
    assert "[warning] Retrying step 1 (attempt 2 of 3)" in proc.out.decode()
