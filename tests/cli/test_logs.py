"""The command line's log file: location, size bound, pruning, redaction (in process)."""

from __future__ import annotations

import logging
import os
from collections.abc import Iterator
from pathlib import Path

import pytest

from wireproto.cli import logs
from wireproto.cli.controls import printable


@pytest.fixture
def home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    """A private ``WIREPROTO_HOME``; the handlers ``setup_logging`` installs are removed after."""
    monkeypatch.setenv("WIREPROTO_HOME", str(tmp_path / "home"))
    root = logging.getLogger()
    level = root.level
    yield tmp_path / "home"
    for handler in logs._installed:
        root.removeHandler(handler)
        handler.close()
    logs._installed.clear()
    logs._file.clear()
    root.setLevel(level)


def test_old_files_are_pruned_and_the_file_is_size_bounded(
    home: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    directory = home / "logs"
    directory.mkdir(parents=True)
    for n in range(logs.KEEP_LOG_FILES + 5):
        old = directory / f"acp-{n}.log"
        old.write_text("old\n")
        os.utime(old, (1_000_000 + n, 1_000_000 + n))
    monkeypatch.setattr(logs, "MAX_LOG_BYTES", 4096)
    path = logs.setup_logging("wire", "error")  # stderr quiet; the file still gets INFO
    assert path == directory / f"wire-{os.getpid()}.log"
    names = {p.name for p in directory.iterdir()}
    assert f"acp-{logs.KEEP_LOG_FILES + 4}.log" in names and "acp-0.log" not in names
    assert len(names) == logs.KEEP_LOG_FILES + 1  # the newest kept, plus this run's
    log = logging.getLogger("wireproto.test")
    for n in range(200):
        log.info("line %d %s", n, "x" * 60)
    assert path.stat().st_size <= 4096
    assert (directory / f"{path.name}.1").exists()  # rotated once, one backup kept
    assert "line 199" in path.read_text()


def test_secrets_never_reach_the_file(home: Path) -> None:
    path = logs.setup_logging("connect", "error")
    assert path is not None
    logs.redact("a-registered-secret")
    log = logging.getLogger("wireproto.test")
    log.info("connecting to ws://h:1/?token=presented-token with %s", "a-registered-secret")
    try:
        raise RuntimeError("Authorization: Bearer in-a-traceback")
    except RuntimeError:
        log.exception("failed")
    text = path.read_text()
    assert "connecting to ws://h:1/?token=***" in text and "failed" in text
    for secret in ("presented-token", "a-registered-secret", "in-a-traceback"):
        assert secret not in text


def test_a_short_secret_is_masked_where_it_stands_alone_only(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(logs, "_secrets", set())
    monkeypatch.setattr(logs, "_words", set())
    monkeypatch.setattr(logs, "_whole", [])
    for secret in ("t", "a|b", "t", "", "sixteen-chars-16"):
        logs.redact(secret)
    assert logs.scrub("listening on t, 'a|b' (not xa|b nor t-t)") == \
        "listening on ***, '***' (not xa|b nor t-t)"
    assert logs.scrub("in-sixteen-chars-16x") == "in-***x"  # a long one: anywhere


def test_a_peers_terminal_controls_cannot_rewrite_a_log_line(home: Path) -> None:
    path = logs.setup_logging("connect", "error")
    assert path is not None
    log = logging.getLogger("wireproto.test")
    forged = "s1\r2026-01-01 00:00:00,000 INFO all fine\x1b[2K\x9b1A"  # an agent's session id
    log.warning("update for unknown session %s dropped", forged)
    try:
        raise ValueError(f"bad id {forged}")
    except ValueError:
        log.exception("failed\tonce\nand again")  # (tabs and line feeds are ours)
    text = path.read_text()
    assert not any(c in text for c in "\r\x1b\x9b")
    assert ("update for unknown session s1\\x0d2026-01-01 00:00:00,000 INFO all fine"
            "\\x1b[2K\\x9b1A dropped") in text
    assert "failed\tonce\nand again" in text and "ValueError: bad id s1\\x0d2026" in text


def test_direction_marks_from_a_peer_are_shown_not_obeyed() -> None:
    # U+202E shows "rm -rf ~ #txt.exe" reversed after it: what is shown is not what runs
    assert (printable("run \u202eexe.txt# ~ fr- mr\u202c and \u2066x\u2069")
            == "run \\u202eexe.txt# ~ fr- mr\\u202c and \\u2066x\\u2069")
    assert printable("plain, caf\u00e9, \U0001f600, \u05e9\u05dc\u05d5\u05dd") == (
        "plain, caf\u00e9, \U0001f600, \u05e9\u05dc\u05d5\u05dd")  # (text itself is kept)

@pytest.mark.parametrize("text", [
    "GET /?%74oken=SECRET HTTP/1.1", "GET /?a=1&%74%6F%6B%65%6E=SECRET", "GET /?x=1;token=SECRET",
    "< Authorization: Basic SECRET", "authorization: Bearer SECRET", "header basic SECRET",
    "GET /?to%6Ben=SECRET&session=a",
])
def test_every_spelling_of_a_presented_credential_is_scrubbed(text: str) -> None:
    assert "SECRET" not in logs.scrub(text)
    assert logs.scrub("GET /?session=visible") == "GET /?session=visible"


@pytest.fixture
def open_umask() -> Iterator[None]:
    """Run with umask 000: whatever is private must be so by its own doing."""
    old = os.umask(0)
    yield
    os.umask(old)


def _mode(path: Path) -> int:
    return path.stat().st_mode & 0o777


def test_the_log_directory_and_files_are_private_whatever_the_umask(
    home: Path, monkeypatch: pytest.MonkeyPatch, open_umask: None
) -> None:
    directory = home / "logs"
    directory.mkdir(parents=True, mode=0o777)
    os.chmod(directory, 0o777)  # an old, too open directory is tightened
    monkeypatch.setattr(logs, "MAX_LOG_BYTES", 2048)
    path = logs.setup_logging("acp", "error")
    assert path is not None
    log = logging.getLogger("wireproto.test")
    for n in range(100):  # rotated: the new file is private too
        log.info("line %d %s", n, "x" * 60)
    assert (directory / f"{path.name}.1").exists()
    assert _mode(directory) == 0o700
    assert {p.name: _mode(p) for p in directory.iterdir()} == {
        path.name: 0o600, f"{path.name}.1": 0o600}


def test_open_private_tightens_an_existing_file(tmp_path: Path, open_umask: None) -> None:
    target = tmp_path / "trace.jsonl"
    target.write_text("old")
    os.chmod(target, 0o666)
    with logs.open_private(target, "wb") as f:
        f.write(b"new")
    assert target.read_bytes() == b"new" and _mode(target) == 0o600
    fresh = tmp_path / "fresh.log"
    with logs.open_private(fresh, encoding="utf-8") as f:
        f.write("a")
    assert _mode(fresh) == 0o600


def test_a_secret_holding_another_is_masked_whole(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(logs, "_secrets", set())
    long = "0123456789abcdef" + "-the-rest-of-a-longer-secret-" * 2
    for end in range(logs.WHOLE_BELOW, len(long) + 1):  # (every one a prefix of the next)
        logs.redact(long[:end])
    assert logs.scrub(f"key {long} end") == "key *** end"  # none of it left


def test_overlapping_secrets_are_masked_as_one(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(logs, "_secrets", set())
    monkeypatch.setattr(logs, "_words", set())
    monkeypatch.setattr(logs, "_whole", [])
    first, second = "0123456789abcdef-first", "abcdef-first-and-second"  # (overlapping)
    logs.redact(first)
    logs.redact(second)
    logs.redact("first pin")  # (a short one, where it stands alone)
    logs.redact("0123456789abcdef first")
    assert logs.scrub("key 0123456789abcdef-first-and-second end") == "key *** end"
    assert logs.scrub("key 0123456789abcdef first pin end") == "key *** end"
    assert logs.scrub("key abcdef-first-and-second first pin end") == "key *** *** end"
