"""The client's default handlers: a confined local file system and local terminals.

Called directly (no protocol): protocol-acp.md#sessions (roots), protocol-acp.md#file-system and
protocol-acp.md#terminals.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path
from typing import Any, TypeVar

import anyio
import pytest
from msgspec import UNSET

from wireproto.adapters.acp import schema as S
from wireproto.adapters.acp.client.fs import LocalFileSystem
from wireproto.adapters.acp.client.state import ClientSession
from wireproto.adapters.acp.client.terminals import LocalTerminals, OutputBuffer
from wireproto.errors import RpcError

pytestmark = pytest.mark.anyio
T = TypeVar("T")


@pytest.fixture
def roots(tmp_path: Path) -> tuple[Path, Path, Path]:
    """(cwd, an additional directory, a directory outside both)."""
    paths = tmp_path / "cwd", tmp_path / "extra", tmp_path / "outside"
    for path in paths:
        path.mkdir()
    return paths


def session(cwd: Path, *extra: Path) -> ClientSession:
    return ClientSession("s1", str(cwd), tuple(str(p) for p in extra))


async def read(fs: LocalFileSystem, sess: ClientSession, path: Path | str, **kw: int) -> str:
    return await fs.read_text_file(sess, S.ReadTextFileRequest(session_id="s1", path=str(path),
                                                               **kw))


async def write(fs: LocalFileSystem, sess: ClientSession, path: Path | str, text: str) -> None:
    request = S.WriteTextFileRequest(session_id="s1", path=str(path), content=text)
    await fs.write_text_file(sess, request)


# -------------------------------------------------------------- file system


async def test_files_inside_the_roots_are_read_and_written(roots: tuple[Path, ...]) -> None:
    cwd, extra, _ = roots
    fs, sess = LocalFileSystem(), session(cwd, extra)
    await write(fs, sess, cwd / "new" / "deep" / "a.txt", "one\r\ntwo\nthree\n")
    assert (cwd / "new" / "deep" / "a.txt").read_bytes() == b"one\r\ntwo\nthree\n"
    assert await read(fs, sess, cwd / "new" / "deep" / "a.txt") == "one\r\ntwo\nthree\n"
    assert await read(fs, sess, cwd / "new" / "deep" / "a.txt", line=2, limit=1) == "two\n"
    assert await read(fs, sess, cwd / "new" / "deep" / "a.txt", line=3) == "three\n"
    await write(fs, sess, extra / "b.txt", "é")
    assert await read(fs, sess, extra / "b.txt") == "é"


@pytest.mark.parametrize(
    ("make", "code"),
    [
        (lambda cwd, out: out / "secret.txt", -32602),  # outside the roots
        (lambda cwd, out: cwd / ".." / "outside" / "secret.txt", -32602),  # dot-dot escape
        (lambda cwd, out: cwd / "link" / "secret.txt", -32602),  # symlink escape
        (lambda cwd, out: "relative.txt", -32602),
        (lambda cwd, out: cwd / "missing.txt", -32002),
        (lambda cwd, out: cwd, -32602),  # a directory
    ],
    ids=["outside", "dotdot", "symlink", "relative", "missing", "directory"],
)
async def test_bad_paths_are_refused(roots: tuple[Path, ...], make: object, code: int) -> None:
    cwd, _, outside = roots
    (outside / "secret.txt").write_text("top secret")
    (cwd / "link").symlink_to(outside)
    fs, sess = LocalFileSystem(), session(cwd)
    path = make(cwd, outside)  # type: ignore[operator]
    with pytest.raises(RpcError) as info:
        await read(fs, sess, path)
    assert info.value.code == code
    if code == -32602 and path != cwd:
        with pytest.raises(RpcError):
            await write(fs, sess, path, "overwritten")
        assert (outside / "secret.txt").read_text() == "top secret"


async def test_a_symlink_inside_the_roots_is_followed(roots: tuple[Path, ...]) -> None:
    cwd, extra, _ = roots
    (extra / "real.txt").write_text("real")
    (cwd / "alias.txt").symlink_to(extra / "real.txt")
    assert await read(LocalFileSystem(), session(cwd, extra), cwd / "alias.txt") == "real"


async def test_files_over_the_limit_are_refused(roots: tuple[Path, ...]) -> None:
    cwd = roots[0]
    (cwd / "big.txt").write_text("x" * 100 + "\nshort\n")
    fs = LocalFileSystem(max_bytes=50)
    with pytest.raises(RpcError) as info:
        await read(fs, session(cwd), cwd / "big.txt")
    assert info.value.code == -32603
    assert await read(fs, session(cwd), cwd / "big.txt", line=2) == "short\n"


needs_fifo = pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="no FIFOs on this system")


@needs_fifo
@pytest.mark.parametrize("kw", [{}, {"line": 1, "limit": 1}], ids=["whole", "lines"])
async def test_a_fifo_is_refused_not_waited_on(roots: tuple[Path, ...], kw: dict[str, int]) -> None:
    cwd = roots[0]
    os.mkfifo(cwd / "pipe")
    fs, sess = LocalFileSystem(), session(cwd)
    with pytest.raises(RpcError) as info:
        await read(fs, sess, cwd / "pipe", **kw)  # (used to block its thread forever)
    assert info.value.code == -32602 and "Not a regular file" in str(info.value)
    with pytest.raises(RpcError) as info:
        await write(fs, sess, cwd / "pipe", "x")
    assert info.value.code == -32602 and "Not a regular file" in str(info.value)


async def test_a_socket_file_is_refused(roots: tuple[Path, ...]) -> None:
    import socket

    cwd = roots[0]
    if not hasattr(socket, "AF_UNIX") or len(str(cwd / "sock")) > 100:
        pytest.skip("no short unix socket path here")
    with socket.socket(socket.AF_UNIX) as listener:
        listener.bind(str(cwd / "sock"))
        with pytest.raises(RpcError) as info:
            await read(LocalFileSystem(), session(cwd), cwd / "sock", line=1)
    assert info.value.code == -32602 and "Not a regular file" in str(info.value)


@pytest.mark.parametrize("kw", [{"line": 1, "limit": 1}, {"line": 2}], ids=["first", "skip"])
def test_a_line_range_reads_a_bounded_amount_of_a_line_without_end(
    roots: tuple[Path, ...], kw: dict[str, int]
) -> None:
    """A huge file with no newline is never loaded whole to select lines from it."""
    import tracemalloc

    cwd = roots[0]
    size = 8 * 1024 * 1024
    with open(cwd / "huge.txt", "wb") as f:
        f.write(b"x" * size)
    fs = LocalFileSystem(max_bytes=1000)
    tracemalloc.start()
    try:
        if "limit" in kw:
            with pytest.raises(RpcError) as info:
                fs._read(str(cwd / "huge.txt"), kw["line"], kw["limit"])
            assert info.value.code == -32603 and "Selection larger than 1000" in str(info.value)
        else:
            assert fs._read(str(cwd / "huge.txt"), kw["line"], None) == ""  # no line 2
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert peak < size // 8  # bytes held at once: a bounded piece, not the line


async def test_line_ranges_across_line_ends(roots: tuple[Path, ...]) -> None:
    cwd = roots[0]
    text = "a\r\nb\rc\n" + "d" * 70_000 + "\r\ne\n"
    (cwd / "mixed.txt").write_bytes(text.encode())
    fs, sess = LocalFileSystem(), session(cwd)
    assert await read(fs, sess, cwd / "mixed.txt", line=2, limit=2) == "b\rc\n"
    assert await read(fs, sess, cwd / "mixed.txt", line=5) == "e\n"
    assert await read(fs, sess, cwd / "mixed.txt", line=4, limit=1) == "d" * 70_000 + "\r\n"
    for n in range(65_534, 65_538):  # a "\r\n" around where a skipped line is cut in pieces
        (cwd / "cut.txt").write_bytes(b"f" * n + b"\r\ng\n")
        assert await read(fs, sess, cwd / "cut.txt", line=2) == "g\n", n


# -------------------------------------------------------------- terminals


@pytest.mark.parametrize(
    ("chunks", "limit", "text", "truncated"),
    [
        ([b"abc", b"def"], 10, "abcdef", False),
        ([b"abc", b"def"], 4, "cdef", True),
        (["aé€😀".encode()], 5, "😀", True),  # the cut never splits a character
        (["é€".encode()], 4, "€", True),
        ([b"x", "é".encode()[:1]], 10, "x", False),  # an incomplete last character waits
        ([], 0, "", False),
    ],
)
def test_output_keeps_the_tail_at_a_character_boundary(
    chunks: list[bytes], limit: int, text: str, truncated: bool
) -> None:
    buffer = OutputBuffer(limit)
    for c in chunks:
        buffer.append(c)
    assert buffer.text() == text
    assert buffer.truncated is truncated
    assert len(buffer.text().encode()) <= limit


def term(request_type: type[T], tid: str) -> T:
    return request_type(session_id="s1", terminal_id=tid)


async def test_terminal_runs_a_command_to_its_end(tmp_path: Path) -> None:
    code = "import os, sys; print(os.getcwd()); print(os.environ['GREETING']); sys.exit(3)"
    async with LocalTerminals() as terminals:
        sess = session(tmp_path)
        tid = await terminals.create(sess, S.CreateTerminalRequest(
            session_id="s1", command=sys.executable, args=["-c", code],
            env=[S.EnvVariable(name="GREETING", value="hi")]))
        status = await terminals.wait_for_exit(sess, term(S.WaitForTerminalExitRequest, tid))
        assert (status.exit_code, status.signal) == (3, UNSET)
        out = await terminals.output(sess, term(S.TerminalOutputRequest, tid))
        assert out.output == f"{tmp_path}\nhi\n"
        assert not out.truncated
        assert isinstance(out.exit_status, S.TerminalExitStatus)
        assert out.exit_status.exit_code == 3
        await terminals.release(sess, term(S.ReleaseTerminalRequest, tid))
        with pytest.raises(RpcError) as info:
            await terminals.output(sess, term(S.TerminalOutputRequest, tid))
        assert info.value.code == -32002
        assert len(terminals) == 0


async def test_terminal_kill_keeps_it_readable_and_close_kills_the_rest(tmp_path: Path) -> None:
    # one write: a kill can land before it or after it, never inside the line
    code = "import os, time; os.write(1, b'ready\\n'); time.sleep(60)"
    sess = session(tmp_path)
    async with LocalTerminals() as terminals:
        first = await terminals.create(sess, S.CreateTerminalRequest(
            session_id="s1", command=sys.executable, args=["-c", code]))
        second = await terminals.create(sess, S.CreateTerminalRequest(
            session_id="s1", command=sys.executable, args=["-c", code]))
        out = await terminals.output(sess, term(S.TerminalOutputRequest, first))
        assert out.exit_status is UNSET
        await terminals.kill(sess, term(S.KillTerminalRequest, first))
        status = await terminals.wait_for_exit(sess, term(S.WaitForTerminalExitRequest, first))
        assert status.signal == "SIGKILL"
        out = await terminals.output(sess, term(S.TerminalOutputRequest, first))
        assert isinstance(out.exit_status, S.TerminalExitStatus)
        assert out.output in ("", "ready\n")  # killed maybe before it printed
        other = ClientSession("s2", str(tmp_path))
        with pytest.raises(RpcError) as info:  # another session's terminal
            await terminals.output(other, S.TerminalOutputRequest(session_id="s2",
                                                                  terminal_id=second))
        assert info.value.code == -32002
        pid = terminals._terminals[second].process.pid
    with pytest.raises(ProcessLookupError):  # killed and reaped on close
        os.kill(pid, 0)


async def test_terminal_errors(tmp_path: Path) -> None:
    sess = session(tmp_path)
    async with LocalTerminals() as terminals:
        with pytest.raises(RpcError) as info:
            await terminals.create(sess, S.CreateTerminalRequest(
                session_id="s1", command=str(tmp_path / "no-such-program")))
        assert info.value.code == -32002
        with pytest.raises(RpcError) as info:
            await terminals.create(sess, S.CreateTerminalRequest(
                session_id="s1", command=sys.executable, cwd="relative"))
        assert info.value.code == -32602
        with pytest.raises(RpcError) as info:
            await terminals.kill(sess, term(S.KillTerminalRequest, "term-99"))
        assert info.value.code == -32002


async def test_wait_for_exit_is_answered_when_the_terminal_is_released(tmp_path: Path) -> None:
    sess = session(tmp_path)
    async with LocalTerminals() as terminals:
        tid = await terminals.create(sess, S.CreateTerminalRequest(
            session_id="s1", command=sys.executable, args=["-c", "import time; time.sleep(60)"]))
        async with anyio.create_task_group() as tg:
            statuses: list[S.WaitForTerminalExitResponse] = []
            waiting = anyio.Event()

            async def wait() -> None:
                request = term(S.WaitForTerminalExitRequest, tid)
                waiting.set()  # no checkpoint before wait_for_exit blocks
                statuses.append(await terminals.wait_for_exit(sess, request))

            tg.start_soon(wait)
            await waiting.wait()
            await terminals.release(sess, term(S.ReleaseTerminalRequest, tid))
        assert statuses[0].signal == "SIGKILL"


@pytest.mark.parametrize("path", ["{cwd}/a\x00b", "\x00", "{cwd}/" + "n" * 5000])
async def test_nul_and_overlong_paths_are_invalid_params(roots: tuple[Path, ...],
                                                         path: str) -> None:
    cwd = roots[0]
    fs, sess = LocalFileSystem(), session(cwd)
    path = path.format(cwd=cwd)
    for call in (read(fs, sess, path), write(fs, sess, path, "x")):
        with pytest.raises(RpcError) as info:
            await call
        assert info.value.code == -32602
        assert "NUL" in info.value.message or "too long" in info.value.message


@pytest.mark.parametrize(("change", "reason"), [
    ({"command": "/bin/e\x00cho"}, "NUL"),
    ({"args": ["a\x00b"]}, "NUL"),
    ({"cwd": "/tmp/\x00"}, "NUL"),
    ({"env": [S.EnvVariable(name="A", value="x\x00y")]}, "NUL"),
    ({"env": [S.EnvVariable(name="A=B", value="x")]}, "variable name"),
    ({"env": [S.EnvVariable(name="", value="x")]}, "variable name"),
    ({"cwd": "/no/such/directory"}, "not a directory"),
    ({"output_byte_limit": -1}, "negative"),
])
async def test_terminal_requests_that_cannot_start_are_invalid_params(
    tmp_path: Path, change: dict[str, Any], reason: str
) -> None:
    sess = session(tmp_path)
    async with LocalTerminals() as terminals:
        fields: dict[str, Any] = {"session_id": "s1", "command": sys.executable}
        with pytest.raises(RpcError) as info:
            await terminals.create(sess, S.CreateTerminalRequest(**{**fields, **change}))
        assert info.value.code == -32602
        assert reason in info.value.message
