"""What ``wireproto connect`` answers and says: approval keys, wrong protocol, tokens, --fs.

Real ``wireproto connect`` processes driving real servers; the approval
decisions are read back from the server's recorded history.
"""

from __future__ import annotations

import json
import signal
import subprocess
import textwrap
from pathlib import Path
from typing import Any

import pytest

KEYS = {"y": "allow_once", "yes": "allow_once", "n": "reject", "": "reject",
        "maybe": "reject", "a": "allow_session", "always": "allow_session"}


def _decisions(kit: Any) -> list[str]:
    """Every recorded approval decision, oldest first, over all sessions."""
    found = []
    for path in sorted((kit.home / "sessions").glob("*.jsonl")):
        for line in path.read_text().splitlines():
            record = json.loads(line)
            event = record.get("event", record)
            if event.get("type") == "approval":
                found.append(event["decision"])
    return found


@pytest.mark.parametrize("protocol", ["acp", "wire"])
@pytest.mark.parametrize("keys", [["y", "yes", "n", "", "maybe", "a"], ["always"]])
def test_every_approval_key(kit: Any, tmp_path: Path, protocol: str, keys: list[str]) -> None:
    lines = []
    for number, key in enumerate(keys):
        lines += [f"/write out{number}.txt text {number}", key]
    lines.append("/write after.txt asked again?")  # after "always": not asked again
    proc = kit.spawn("connect", protocol, "--", *kit.wireproto, protocol, cwd=tmp_path,
                     lines=False)
    proc.write("\n".join(lines) + "\n")
    proc.close_stdin()
    assert proc.wait() == 0, proc.err
    assert _decisions(kit) == [KEYS[key] for key in keys]
    out = proc.out.decode()
    assert out.count("[approval] ") - out.count("[approval] answered") == len(keys)
    assert (tmp_path / "after.txt").read_text() == "asked again?"


def test_require_auth_without_auth_methods_refuses_to_start(kit: Any, tmp_path: Path) -> None:
    (tmp_path / "plain.py").write_text(textwrap.dedent("""
        from wireproto.agent.api import Agent, AgentInfo
        class Plain(Agent):
            info = AgentInfo(name="plain", version="1")
        agent = Plain()
    """))
    proc = kit.spawn("acp", "--require-auth", "--agent", f"{tmp_path / 'plain.py'}:agent")
    assert proc.wait() == 1
    errors = [line for line in proc.err.splitlines() if line.startswith("wireproto: error:")]
    assert errors == ["wireproto: error: --require-auth: the agent 'plain' declares no "
                      "authentication method (Agent.auth_methods), so no client could open a "
                      "session; declare one or drop --require-auth"]


@pytest.mark.parametrize("ours, theirs", [("acp", "wire"), ("wire", "acp")])
def test_the_wrong_protocol_is_named(kit: Any, tmp_path: Path, ours: str, theirs: str) -> None:
    (tmp_path / "s.txt").write_text("hello\n")
    proc = kit.spawn("connect", ours, "--script", "s.txt", "--", *kit.wireproto, theirs,
                     cwd=tmp_path, stdin=subprocess.DEVNULL)
    assert proc.wait() == 1
    errors = [line for line in proc.err.splitlines() if line.startswith("wireproto: error:")]
    article = "an ACP" if theirs == "acp" else "a Wire"
    assert len(errors) == 1 and errors[0].endswith(
        f"this looks like {article} agent; use 'wireproto connect {theirs}'"), proc.err


@pytest.mark.parametrize("token", [None, "wrong"])
def test_a_missing_or_wrong_token_says_what_to_do(
    kit: Any, tmp_path: Path, token: str | None
) -> None:
    server, base, _ = kit.ws("acp", "--ws", "0")
    (tmp_path / "s.txt").write_text("hello\n")
    extra = ["--token", token] if token else []
    proc = kit.spawn("connect", "acp", "--ws", f"{base}/", *extra, "--script", "s.txt",
                     cwd=tmp_path, stdin=subprocess.DEVNULL)
    assert proc.wait() == 1
    errors = [line for line in proc.err.splitlines() if line.startswith("wireproto: error:")]
    assert len(errors) == 1 and "HTTP 401" in errors[0], proc.err
    wanted = ("the server refused this token: give the one it printed" if token
              else "pass --token TOKEN, or use the whole URL it printed")
    assert wanted in errors[0]
    assert kit.stop(server) == 0


@pytest.mark.parametrize("fs", [True, False])
def test_the_transcript_shows_which_way_files_went(kit: Any, tmp_path: Path, fs: bool) -> None:
    (tmp_path / "notes.txt").write_text("one\ntwo\n")
    (tmp_path / "s.txt").write_text("/read notes.txt\n/write new.txt hello\n")
    proc = kit.spawn("connect", "acp", *(["--fs"] if fs else []), "--approve", "always",
                     "--script", "s.txt", "--",
                     *kit.wireproto, "acp", cwd=tmp_path, stdin=subprocess.DEVNULL, lines=False)
    assert proc.wait() == 0, proc.err
    out = proc.out.decode()
    if fs:
        assert "[fs] the agent reads and writes files through this client (--fs)" in out
        assert f"[fs] read {tmp_path / 'notes.txt'} through this client" in out
        # (a write reads the old text first, for its diff: a new file is no failure)
        assert f"[fs] read {tmp_path / 'new.txt'} through this client: no such file (yet)" in out
        assert f"[fs] wrote {tmp_path / 'new.txt'} through this client" in out
        assert "refused" not in out
    else:
        assert "[fs] the agent reads and writes files on its own (pass --fs" in out
        assert "through this client\n" not in out



STUBBORN = textwrap.dedent("""
    import os
    import anyio
    from wireproto.agent.api import Agent
    from wireproto.agent.events import StopReason

    class Stubborn(Agent):
        async def prompt(self, turn):
            await turn.say("working")
            with anyio.CancelScope(shield=True):  # finishes its step before it stops:
                while not os.path.exists(RELEASED):  # (the test's word, after its Ctrl-Cs)
                    await anyio.sleep(0.05)
            return StopReason.END_TURN

    agent = Stubborn()
""")


def test_a_script_stopped_with_ctrl_c_exits_130(kit: Any, tmp_path: Path) -> None:
    released = tmp_path / "released"
    (tmp_path / "stubborn.py").write_text(f"RELEASED = {str(released)!r}\n" + STUBBORN)
    (tmp_path / "s.txt").write_text("go\nnever sent\n")
    proc = kit.spawn("connect", "acp", "--script", "s.txt", "--", *kit.wireproto, "acp",
                     "--agent", "stubborn.py:agent", cwd=tmp_path, stdin=subprocess.DEVNULL,
                     lines=False, group=True)
    proc.wait_out("working")
    proc.signal_group(signal.SIGINT)  # asks the agent to cancel the turn
    proc.wait_out("^C cancelling the turn")
    proc.signal_group(signal.SIGINT)  # quits (while the turn still runs)
    proc.wait_out("(Ctrl-C again to quit)\n^C\n")
    released.touch()  # the turn ends only now: a script that went on would show it
    assert proc.wait() == 130
    assert "> never sent" not in proc.out.decode()
