"""``wireproto connect``: script, interactive and trace modes against real servers."""

from __future__ import annotations

import json
import os
import select
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest

SCRIPT = """\
hello there

/read notes.txt
/write out.txt written by the script
/plan
"""


@pytest.fixture
def workdir(tmp_path: Path) -> Path:
    work = tmp_path / "work"
    work.mkdir()
    (work / "notes.txt").write_text("one\ntwo\n")
    (work / "script.txt").write_text(SCRIPT)
    return work


def test_script_against_acp_with_approvals_and_a_trace(kit: Any, workdir: Path) -> None:
    proc = kit.spawn("connect", "acp", "--script", "script.txt", "--approve", "always",
                     "--trace", "trace.jsonl", "--", *kit.wireproto, "acp", cwd=workdir,
                     stdin=subprocess.DEVNULL, lines=False)
    assert proc.wait() == 0, proc.err
    out = proc.out.decode()
    assert "> hello there\nYou said: hello there\n[end_turn]" in out
    assert "Read 2 lines from notes.txt" in out
    assert "[approval] Write out.txt\n  -> allowed (--approve always)" in out
    assert "Wrote out.txt" in out
    assert "  [x] Check the result" in out and "Plan done" in out
    assert out.count("[end_turn]") == 4  # the blank line was skipped
    assert (workdir / "out.txt").read_text() == "written by the script"
    records = [json.loads(line) for line in (workdir / "trace.jsonl").read_text().splitlines()]
    assert records[0]["dir"] == "send" and records[0]["msg"]["method"] == "initialize"
    assert records[1]["dir"] == "recv" and records[1]["msg"]["id"] == records[0]["msg"]["id"]
    assert {r["dir"] for r in records} == {"send", "recv"}
    assert all(set(r) == {"t", "dir", "msg"} for r in records)
    times = [r["t"] for r in records]
    assert times == sorted(times) and times[0] >= 0
    methods = [r["msg"].get("method") for r in records]
    assert "session/request_permission" in methods and "session/prompt" in methods


def test_script_against_wire_rejects_approvals_by_default(kit: Any, workdir: Path) -> None:
    proc = kit.spawn("connect", "wire", "--script", "script.txt", "--",
                     *kit.wireproto, "wire", cwd=workdir, stdin=subprocess.DEVNULL, lines=False)
    assert proc.wait() == 0, proc.err
    out = proc.out.decode()
    assert "You said: hello there" in out
    assert "-> rejected (--approve never)" in out
    assert "Write to out.txt rejected" in out
    assert out.count("[finished]") == 4
    assert not (workdir / "out.txt").exists()


@pytest.mark.parametrize("protocol", ["acp", "wire"])
def test_script_over_websocket(kit: Any, workdir: Path, protocol: str) -> None:
    server, base, token = kit.ws(protocol, "--ws", "0", cwd=workdir)
    (workdir / "short.txt").write_text("over the socket\n")
    proc = kit.spawn("connect", protocol, "--ws", f"{base}/", "--token", token,
                     "--script", "short.txt", cwd=workdir, stdin=subprocess.DEVNULL,
                     lines=False)
    assert proc.wait() == 0, proc.err
    assert "You said: over the socket" in proc.out.decode()
    assert kit.stop(server) == 0


def test_interactive_from_a_pipe_until_end_of_input(kit: Any, workdir: Path) -> None:
    proc = kit.spawn("connect", "acp", "--", *kit.wireproto, "acp", cwd=workdir, lines=False)
    proc.write("first\n")
    proc.wait_out("You said: first")
    proc.write("\n/help\n")
    proc.wait_out("/slow - Stream N ticks")
    proc.close_stdin()
    assert proc.wait() == 0, proc.err


@pytest.mark.parametrize("protocol, done", [("acp", "[end_turn]"), ("wire", "[finished]")])
def test_ctrl_c_cancels_the_turn_and_a_second_one_quits(
    kit: Any, workdir: Path, protocol: str, done: str
) -> None:
    # Ctrl-C in a terminal signals the whole foreground process group: the
    # client and the server it spawned. The server (stdin is a pipe) ignores
    # it; the client cancels the turn, and the session goes on.
    proc = kit.spawn("connect", protocol, "--", *kit.wireproto, protocol, cwd=workdir,
                     lines=False, group=True)
    proc.write("/slow 1000\n")
    proc.wait_out("tick 2")
    proc.signal_group(signal.SIGINT)
    proc.wait_out("[cancelled]")
    assert "tick 1000" not in proc.out.decode()
    proc.write("still here\n")  # the session goes on after a cancelled turn
    proc.wait_out(f"You said: still here\n{done}")
    proc.signal_group(signal.SIGINT)  # at the prompt: quit
    assert proc.wait() == 0, proc.err
    assert "closed the connection" not in proc.err


def test_failures_exit_nonzero_with_one_line(kit: Any, workdir: Path) -> None:
    dead = kit.spawn("connect", "acp", "--script", "script.txt", "--", sys.executable, "-c",
                     "pass", cwd=workdir, stdin=subprocess.DEVNULL)
    neither = kit.spawn("connect", "wire", cwd=workdir, stdin=subprocess.DEVNULL)
    both = kit.spawn("connect", "acp", "--ws", "ws://127.0.0.1:1/", "--", "true", cwd=workdir,
                     stdin=subprocess.DEVNULL)
    usage = "give either --ws URL or the agent command after --"
    for proc, reason, status in ((dead, "the agent closed the connection", 1),
                                 (neither, usage, 2), (both, usage, 2)):
        assert proc.wait() == status, proc.err
        errors = [line for line in proc.err.splitlines() if line.startswith("wireproto: error")]
        assert len(errors) == 1 and reason in errors[0], proc.err
        assert "Traceback" not in proc.err


def test_a_refused_websocket_is_one_line(kit: Any, workdir: Path) -> None:
    server, base, _ = kit.ws("acp", "--ws", "0")
    proc = kit.spawn("connect", "acp", "--ws", f"{base}/?token=wrong", "--script",
                     "script.txt", cwd=workdir, stdin=subprocess.DEVNULL)
    assert proc.wait() == 1
    assert "wireproto: error: cannot reach the agent: websocket handshake refused: HTTP 401" \
        in proc.err
    assert kit.stop(server) == 0


def test_tab_completes_the_advertised_slash_commands() -> None:
    from wireproto.cli import keyboard

    class FakeReadline:
        def set_completer(self, fn: Any) -> None:
            self.complete = fn

        def set_completer_delims(self, delims: str) -> None:
            self.delims = delims

        def parse_and_bind(self, text: str) -> None:
            self.binding = text

    fake = FakeReadline()
    keyboard._install_completer(fake, lambda: ["/help", "/slow", "/select"])
    assert [fake.complete("/s", i) for i in range(3)] == ["/slow ", "/select ", None]
    assert fake.complete("/h", 0) == "/help " and fake.complete("x", 0) is None
    assert "/" not in fake.delims


class _Terminal:
    """The master side of a pseudo-terminal the client runs in."""

    def __init__(self) -> None:
        self.master, self.slave = os.openpty()
        self.seen = b""

    def read_until(self, text: str, limit: float = 20) -> str:
        deadline = time.monotonic() + limit
        while text.encode() not in self.seen:
            left = deadline - time.monotonic()
            assert left > 0, f"the terminal never showed {text!r}: {self.seen!r}"
            if select.select([self.master], [], [], left)[0]:
                try:
                    self.seen += os.read(self.master, 4096)
                except OSError:  # the client closed the terminal
                    break
        return self.seen.decode("utf-8", "replace")

    def type(self, text: str) -> None:
        os.write(self.master, text.encode())


def test_interactive_in_a_terminal_completes_commands_and_asks_approvals(
    kit: Any, workdir: Path
) -> None:
    term = _Terminal()
    env = dict(kit.env, TERM="xterm")
    proc = subprocess.Popen([*kit.wireproto, "connect", "acp", "--", *kit.wireproto, "acp"],
                            stdin=term.slave, stdout=term.slave, stderr=subprocess.DEVNULL,
                            cwd=workdir, env=env)
    os.close(term.slave)
    try:
        term.read_until("Ctrl-D quits.\r\n> ")
        term.type("hello\r")
        term.read_until("You said: hello\r\n[end_turn]\r\n> ")
        term.type("/sl\t")  # completes to "/slow " (the commands the agent advertised)
        term.read_until("/slow ")
        term.type("2\r")
        term.read_until("tick 1tick 2\r\n[end_turn]\r\n> ")
        term.type("/write typed.txt by hand\r")
        term.read_until("allow? [y]es / [a]lways / [N]o: ")
        term.type("y\r")
        term.read_until("Wrote typed.txt\r\n[end_turn]\r\n> ")
        term.type("\x04")  # Ctrl-D at the prompt
        assert proc.wait(20) == 0
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
        os.close(term.master)
    assert (workdir / "typed.txt").read_text() == "by hand"


def test_the_trace_file_is_private_whatever_the_umask(kit: Any, workdir: Path) -> None:
    (workdir / "trace.jsonl").write_text("")
    os.chmod(workdir / "trace.jsonl", 0o666)
    umask_0 = ["sh", "-c", 'umask 000 && exec "$@"', "sh"]
    done = subprocess.run(
        [*umask_0, *kit.wireproto, "connect", "acp", "--script", "script.txt", "--approve",
         "always", "--trace", "trace.jsonl", "--", *kit.wireproto, "acp"],
        env=kit.env, cwd=workdir, stdin=subprocess.DEVNULL, capture_output=True,
        timeout=kit.limit * 3, check=False,
    )
    assert done.returncode == 0, done.stderr
    assert (workdir / "trace.jsonl").stat().st_mode & 0o777 == 0o600
    assert (workdir / "trace.jsonl").stat().st_size > 0
    logs = kit.home / "logs"
    assert logs.stat().st_mode & 0o777 == 0o700
    assert {p.stat().st_mode & 0o777 for p in logs.iterdir()} == {0o600}


def test_a_loaded_acp_session_shows_its_banner_then_its_history(kit: Any, workdir: Path) -> None:
    first = kit.spawn("connect", "acp", "--script", "-", "--", *kit.wireproto, "acp",
                      cwd=workdir, stdin=subprocess.PIPE, lines=False)
    first.write("first prompt\n")
    first.close_stdin()
    assert first.wait() == 0, first.err
    banner = first.out.decode().splitlines()[0]
    assert banner.startswith("[wireproto-demo: session ") and banner.endswith("]")
    sid = banner.removeprefix("[wireproto-demo: session ").removesuffix("]")
    again = kit.spawn("connect", "acp", "--session", sid, "--script", "-", "--",
                      *kit.wireproto, "acp", cwd=workdir, stdin=subprocess.PIPE, lines=False)
    again.write("second prompt\n")
    again.close_stdin()
    assert again.wait() == 0, again.err
    lines = again.out.decode().splitlines()
    assert lines[0] == f"[wireproto-demo: session {sid}, loading its history]"
    assert lines[1].startswith("[fs] ")
    replayed, prompted = lines.index("> first prompt"), lines.index("> second prompt")
    assert 1 < replayed < prompted
    assert any("first prompt" in line for line in lines[replayed + 1 : prompted])
    assert lines[prompted - 1] == "[end of the history: new prompts follow]"


def test_a_wire_replay_is_framed_as_history(kit: Any, workdir: Path) -> None:
    server = [*kit.wireproto, "wire", "--session", "kept"]
    first = kit.spawn("connect", "wire", "--script", "-", "--", *server, cwd=workdir,
                      stdin=subprocess.PIPE, lines=False)
    first.write("first prompt\n")
    first.close_stdin()
    assert first.wait() == 0, first.err
    again = kit.spawn("connect", "wire", "--replay", "--script", "-", "--", *server,
                      cwd=workdir, stdin=subprocess.PIPE, lines=False)
    again.write("second prompt\n")
    again.close_stdin()
    assert again.wait() == 0, again.err
    lines = again.out.decode().splitlines()
    start, end = (lines.index("[the session's history]"),
                  lines.index("[end of the history: new prompts follow]"))
    assert start < lines.index("> first prompt") < end < lines.index("> second prompt")


def test_an_agents_terminal_control_characters_are_shown_not_obeyed(
    kit: Any, workdir: Path
) -> None:
    # the demo agent echoes the prompt: what a hostile agent would send, read back
    hostile = "clip \x1b]52;c;cm0gLXJmIH4=\x07 clear \x1b[2J back\x08\x08over \x9b31m"
    (workdir / "hostile.txt").write_text(hostile + "\n", newline="")
    proc = kit.spawn("connect", "acp", "--script", "hostile.txt", "--", *kit.wireproto, "acp",
                     cwd=workdir, stdin=subprocess.DEVNULL, lines=False)
    assert proc.wait() == 0, proc.err
    out = proc.out.decode()
    assert not any(c in out for c in "\x1b\x07\x08\x9b")
    assert ("You said: clip \\x1b]52;c;cm0gLXJmIH4=\\x07 clear \\x1b[2J back\\x08\\x08over "
            "\\x9b31m\n") in out
