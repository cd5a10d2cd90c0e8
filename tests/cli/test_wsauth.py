"""The websocket listener's security decisions and the log scrubbing, without processes."""

from __future__ import annotations

import re

import pytest

from wireproto.cli.logs import redact, scrub
from wireproto.cli.wsauth import WsGuard, is_loopback, new_token, parse_listen


def test_generated_tokens_are_hex_and_never_look_like_an_option() -> None:
    tokens = {new_token() for _ in range(200)}
    assert len(tokens) == 200
    assert all(re.fullmatch(r"[0-9a-f]{48}", token) for token in tokens)


@pytest.mark.parametrize("spec, expected", [
    ("0", ("127.0.0.1", 0)),
    ("8765", ("127.0.0.1", 8765)),
    ("0.0.0.0:80", ("0.0.0.0", 80)),
    ("[::1]:9", ("::1", 9)),
    ("localhost:1", ("localhost", 1)),
    ("[::]:0", ("::", 0)),
])
def test_parse_listen(spec: str, expected: tuple[str, int]) -> None:
    assert parse_listen(spec) == expected


@pytest.mark.parametrize("spec", ["", "x", "host:", "1:65536", "1:-1"])
def test_parse_listen_refuses(spec: str) -> None:
    with pytest.raises(ValueError):
        parse_listen(spec)


@pytest.mark.parametrize("spec", [
    "[::1:0", "::1]:0", "[::1]]:0", "[[::1]:0", "[]:0", "[localhost]:0", "[127.0.0.1]:0",
    "::1:0",
])
def test_parse_listen_refuses_malformed_ipv6_with_one_clear_line(spec: str) -> None:
    with pytest.raises(ValueError) as info:
        parse_listen(spec)
    message = str(info.value)
    assert "\n" not in message and spec in message and "[ADDR]:PORT" in message


@pytest.mark.parametrize("host, loopback", [
    ("127.0.0.1", True), ("127.1.2.3", True), ("::1", True), ("localhost", True),
    ("0.0.0.0", False), ("192.168.1.2", False), ("::", False), ("example.org", False),
])
def test_is_loopback(host: str, loopback: bool) -> None:
    assert is_loopback(host) is loopback


def test_guard_decisions() -> None:
    guard = WsGuard("s3cret", ["https://Allowed.example/"])
    assert guard.check("/?token=s3cret", {}) is None
    assert guard.check("/", {"Authorization": "Bearer s3cret"}) is None
    assert guard.check("/", {"authorization": "bearer s3cret"}) is None
    assert guard.check("/?token=s3cret", {"Origin": "https://allowed.example"}) is None
    assert guard.check("/", {}) == (401, "Missing token")
    assert guard.check("/?token=wrong", {}) == (401, "Invalid token")
    assert guard.check("/", {"Authorization": "Basic s3cret"}) == (401, "Missing token")
    # the origin is checked first: a browser page never learns whether its token was right
    assert guard.check("/?token=s3cret", {"Origin": "https://evil.example"}) == (
        403, "Origin not allowed")
    with pytest.raises(ValueError):
        WsGuard("")


def test_scrub_hides_registered_secrets_and_presented_credentials() -> None:
    redact("registered-secret-value")
    text = ("registered-secret-value ws://h/?token=abc&session=s GET /x?a=1&token=def "
            "Authorization: Bearer ghi, bearer jkl")
    clean = scrub(text)
    for secret in ("registered-secret-value", "abc", "def", "ghi", "jkl"):
        assert secret not in clean, clean
    assert "session=s" in clean and "a=1" in clean
