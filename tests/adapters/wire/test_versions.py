"""Wire protocol versions: table, parsing, comparison, negotiation
(protocol-wire.md#version-history, protocol-wire.md#version-negotiation)."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from wireproto.adapters.wire.methods import INITIALIZE
from wireproto.adapters.wire.versions import (
    CURRENT_VERSION,
    SUPPORTED_VERSIONS,
    VERSION_HISTORY,
    compare_versions,
    negotiate_version,
    parse_version,
)
from wireproto.errors import InvalidVersion, RpcError, WireprotoError


def test_version_table_is_the_spec_table() -> None:
    assert SUPPORTED_VERSIONS == (
        "1", "1.1", "1.2", "1.3", "1.4", "1.5", "1.6", "1.7", "1.8", "1.9", "1.10",
    )  # fmt: skip
    assert CURRENT_VERSION == "1.10"
    keys = [parse_version(v) for v in SUPPORTED_VERSIONS]
    assert keys == sorted(keys) and len(set(keys)) == len(keys)
    assert all(changes for _, changes in VERSION_HISTORY)
    assert dict(VERSION_HISTORY)["1.10"] == "StepRetry"


@pytest.mark.parametrize(
    ("text", "parsed"),
    [
        ("1", (1,)),
        ("1.0", (1,)),
        ("1.0.0", (1,)),
        ("1.10", (1, 10)),
        ("1.9", (1, 9)),
        ("01.02", (1, 2)),
        ("0", ()),
        ("2.0.1", (2, 0, 1)),
    ],
)
def test_parse_version(text: str, parsed: tuple[int, ...]) -> None:
    assert parse_version(text) == parsed


@pytest.mark.parametrize(
    "text",
    ["", "1.", ".1", "1..2", "a", "1.a", " 1", "1 ", "1\n", "-1", "+1", "1.-1", "1_0", "١", "v1.1"],
)
def test_unparsable_versions(text: str) -> None:
    with pytest.raises(InvalidVersion) as info:
        parse_version(text)
    assert isinstance(info.value, ValueError) and isinstance(info.value, WireprotoError)


@pytest.mark.parametrize("value", [None, 1.1, 1, ["1"]])
def test_non_string_versions(value: Any) -> None:
    with pytest.raises(InvalidVersion):
        parse_version(value)


@pytest.mark.parametrize(
    ("a", "b", "expected"),
    [
        ("1.10", "1.9", 1),
        ("1.9", "1.10", -1),
        ("1", "1.0", 0),
        ("1.0.0", "1", 0),
        ("1.0.1", "1", 1),
        ("2", "1.10", 1),
        ("1.1", "1.01", 0),
    ],
)
def test_compare_versions(a: str, b: str, expected: int) -> None:
    assert compare_versions(a, b) == expected


components = st.lists(st.integers(min_value=0, max_value=30), min_size=1, max_size=4)


@given(components, components)
def test_comparison_is_zero_padded_numeric(a: list[int], b: list[int]) -> None:
    width = max(len(a), len(b))
    pa, pb = a + [0] * (width - len(a)), b + [0] * (width - len(b))
    expected = (pa > pb) - (pa < pb)
    assert compare_versions(".".join(map(str, a)), ".".join(map(str, b))) == expected


@pytest.mark.parametrize(
    ("client", "answer"),
    [
        ("1.10", "1.10"),
        ("1.1", "1.1"),
        ("1.0", "1"),
        ("1", "1"),
        ("1.0.0", "1"),
        ("1.4", "1.4"),
        ("1.4.0", "1.4"),
        ("1.9.5", "1.9"),
        ("1.11", "1.10"),
        ("2", "1.10"),
        ("10.0", "1.10"),
    ],
)
def test_negotiate_version(client: str, answer: str) -> None:
    assert negotiate_version(client) == answer


def test_negotiate_is_capped_by_our_own_version() -> None:
    assert negotiate_version("1.10", own="1.4") == "1.4"
    assert negotiate_version("1.3", own="1.4") == "1.3"
    assert negotiate_version("2", own="1.4.7") == "1.4"


@pytest.mark.parametrize("client", [None, "", "abc", "1.x", "0", "0.9"])
def test_negotiate_rejects_missing_unparsable_or_too_old(client: str | None) -> None:
    with pytest.raises(InvalidVersion):
        negotiate_version(client)


def test_huge_component_never_raises_anything_but_invalid_version() -> None:
    text = "1." + "9" * 5000
    try:
        answer = negotiate_version(text)
    except InvalidVersion:
        return
    assert answer == "1.10"


@pytest.mark.parametrize(
    ("version", "ok"), [("1.10", True), ("1", True), ("1.a", False), ("1.1\n", False)]
)
def test_initialize_params_check_the_version_syntax(version: str, ok: bool) -> None:
    params = {"protocol_version": version}
    if ok:
        decoded = INITIALIZE.decode_params(params)
        assert decoded is not None and decoded.protocol_version == version
    else:
        with pytest.raises(RpcError) as info:
            INITIALIZE.decode_params(params)
        assert info.value.data["path"] == "$.protocol_version"
