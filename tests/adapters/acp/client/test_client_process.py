"""The ACP client against a real agent process (``tests/helpers/acp_scripted.py``).

Shell lines in ``terminal/create`` (the shape Kimi CLI sends), deadlines on
set-up calls with ``$/cancel_request`` on the wire, extension calls, the
spawned process's handle and the environment it gets.
"""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path

import msgspec
import pytest

from wireproto.adapters.acp import LocalTerminals, connect_acp
from wireproto.adapters.acp import schema as s
from wireproto.adapters.acp.client.state import ClientSession
from wireproto.adapters.acp.client.terminals import command_line
from wireproto.errors import RpcError

pytestmark = pytest.mark.anyio

HELPERS = Path(__file__).resolve().parents[3] / "helpers"
SCRIPTED = [sys.executable, str(HELPERS / "acp_scripted.py")]


async def test_a_kimi_shell_line_runs_through_the_shell(tmp_path: Path) -> None:
    # Kimi CLI sends {"command": "echo kimi-shell"} with no args
    async with connect_acp([*SCRIPTED, "--shell", "echo kimi-shell"],
                           terminals=LocalTerminals()) as client:
        sid = (await client.new_session(str(tmp_path))).session_id
        async with client.prompt(sid, "run it") as turn:
            updates = await turn.collect()
    assert turn.stop_reason == "end_turn"
    [chunk] = [u for u in updates if isinstance(u, s.AgentMessageChunk)]
    assert isinstance(chunk.content, s.TextContent)
    assert json.loads(chunk.content.text) == {"exit": 0, "output": "kimi-shell\n"}


def test_which_commands_go_through_the_shell(tmp_path: Path) -> None:
    env = {"PATH": os.environ["PATH"], "SHELL": "/bin/sh"}
    assert command_line("echo kimi-shell", [], env) == ["/bin/sh", "-c", "echo kimi-shell"]
    assert command_line("echo", ["a b"], env) == ["echo", "a b"]  # args: never a shell
    assert command_line("ls", [], env) == ["ls"]  # an executable on PATH
    assert command_line(sys.executable, [], env) == [sys.executable]
    missing = str(tmp_path / "no-such-program")
    assert command_line(missing, [], env) == [missing]  # reported as not found
    no_shell = {"PATH": os.environ["PATH"], "SHELL": "relative/zsh"}
    assert command_line("ls | wc -l", [], no_shell) == ["/bin/sh", "-c", "ls | wc -l"]


async def test_a_terminal_cwd_outside_the_roots_is_refused(tmp_path: Path) -> None:
    root, extra, outside = tmp_path / "root", tmp_path / "extra", tmp_path / "outside"
    for path in (root, extra, outside):
        path.mkdir()
    (root / "escape").symlink_to(outside)
    session = ClientSession("s1", str(root), (str(extra),))
    async with LocalTerminals() as terminals:
        for cwd in (str(outside), str(root / "escape"), "/"):
            with pytest.raises(RpcError, match="outside the session's roots") as info:
                await terminals.create(session, s.CreateTerminalRequest(
                    session_id="s1", command="echo hi", cwd=cwd))
            assert info.value.code == -32602
        tid = await terminals.create(session, s.CreateTerminalRequest(
            session_id="s1", command="pwd", cwd=str(extra)))
        await terminals.wait_for_exit(session, s.WaitForTerminalExitRequest(
            session_id="s1", terminal_id=tid))
        out = await terminals.output(session, s.TerminalOutputRequest(
            session_id="s1", terminal_id=tid))
    assert out.output == f"{extra}\n"


@pytest.mark.parametrize("method", ["session/new", "authenticate"])
async def test_a_set_up_call_that_is_never_answered_times_out_and_is_cancelled(
    tmp_path: Path, method: str
) -> None:
    async with connect_acp([*SCRIPTED, "--auth", "--silent", method]) as client:
        with pytest.raises(TimeoutError):
            if method == "authenticate":
                await client.authenticate("token", timeout=0.1)
            else:
                await client.new_session(str(tmp_path), timeout=0.1)
        seen = await client.ext_request("_test/cancelled")
        assert len(seen["ids"]) == 1  # the timed-out request was cancelled on the wire
        assert not client.sessions


class Echo(msgspec.Struct):
    word: str
    n: int


async def test_extension_requests_and_notifications() -> None:
    async with connect_acp(SCRIPTED) as client:
        typed = await client.ext_request("_test/echo", {"word": "hi", "n": 2}, result_type=Echo)
        assert typed == Echo("hi", 2)
        assert await client.ext_request("_test/echo", Echo("x", 1)) == {"word": "x", "n": 1}
        await client.ext_notify("_test/note", {"k": "v"})
        assert await client.ext_request("_test/notes") == {"notes": [{"k": "v"}]}
        with pytest.raises(RpcError, match="Method not found: _test/nothing"):
            await client.ext_request("_test/nothing")
        with pytest.raises(ValueError, match="start with '_'"):
            await client.ext_request("session/new")


async def test_the_process_handle_and_the_merged_environment(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("WIREPROTO_INHERITED", "from-us")
    names = {"names": ["WIREPROTO_INHERITED", "WIREPROTO_ADDED"]}
    async with connect_acp(SCRIPTED, env={"WIREPROTO_ADDED": "added"}) as client:
        assert client.process is not None
        pid = client.process.pid
        assert pid > 0 and client.process.returncode is None
        merged = await client.ext_request("_test/env", names)
    assert merged == {"WIREPROTO_INHERITED": "from-us", "WIREPROTO_ADDED": "added"}
    assert client.process.returncode == 0  # it exited when its stdin closed
    assert client.process.ended_by == "stdin closed"
    replaced_env = {"WIREPROTO_ADDED": "only", "PATH": os.environ["PATH"]}
    async with connect_acp(SCRIPTED, env=replaced_env, inherit_env=False) as client:
        replaced = await client.ext_request("_test/env", names)
    assert replaced == {"WIREPROTO_INHERITED": None, "WIREPROTO_ADDED": "only"}


def test_mcp_server_entries_need_only_what_matters() -> None:
    from wireproto.adapters.acp import http_server, stdio_server

    stdio = stdio_server("notes", "/usr/bin/notes", env={"TOKEN": "t"})
    assert msgspec.json.decode(msgspec.json.encode(stdio)) == {
        "name": "notes", "command": "/usr/bin/notes", "args": [],
        "env": [{"name": "TOKEN", "value": "t"}]}
    http = http_server("search", "https://search.example/mcp")
    assert msgspec.json.decode(msgspec.json.encode(http)) == {
        "type": "http", "name": "search", "url": "https://search.example/mcp", "headers": []}


async def test_terminal_env_is_set_on_top_of_ours(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("WIREPROTO_INHERITED", "from-us")
    session = ClientSession("s1", str(tmp_path))
    line = "echo $WIREPROTO_INHERITED-$WIREPROTO_ADDED"
    for terminals, expected in (
        (LocalTerminals(env={"WIREPROTO_ADDED": "added"}), "from-us-added\n"),
        (LocalTerminals(env={"WIREPROTO_ADDED": "only"}, inherit_env=False), "-only\n"),
    ):
        async with terminals:
            tid = await terminals.create(session, s.CreateTerminalRequest(
                session_id="s1", command=line))
            await terminals.wait_for_exit(session, s.WaitForTerminalExitRequest(
                session_id="s1", terminal_id=tid))
            out = await terminals.output(session, s.TerminalOutputRequest(
                session_id="s1", terminal_id=tid))
        assert out.output == expected


def test_mcp_server_structs_default_their_lists_and_still_write_them() -> None:
    stdio = s.McpServerStdio(name="notes", command="/usr/bin/notes")
    http = s.McpServerHttp(name="search", url="https://search.example/mcp")
    assert msgspec.json.decode(msgspec.json.encode(stdio)) == {
        "name": "notes", "command": "/usr/bin/notes", "args": [], "env": []}
    assert msgspec.json.decode(msgspec.json.encode(http))["headers"] == []
