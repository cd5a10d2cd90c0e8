"""Secrets masked in text: every character of every occurrence, overlapping ones included."""

from __future__ import annotations

import itertools

import pytest

from wireproto._masking import masked, words_pattern


@pytest.mark.parametrize(("text", "secrets", "expected"), [
    ("abcdefghi", ["abcdef", "defghi"], "***"),  # overlapping: neither end left
    ("abcdefghi", ["defghi", "abcdef"], "***"),  # (whatever their order)
    ("x abcdefgh y", ["abcdef", "cdefgh", "efgh"], "x *** y"),
    ("x ababa y", ["aba"], "x *** y"),  # one secret overlapping itself
    ("key abcdef-long end", ["abcdef", "abcdef-long"], "key *** end"),  # one holding another
    ("abcdef", ["abc", "def"], "******"),  # adjacent: two
    ("a abc b abc", ["abc"], "a *** b ***"),
    ("nothing here", ["abc", "xyz"], "nothing here"),
    ("", ["abc"], ""),
])
def test_each_run_of_overlapping_occurrences_is_masked_once(
    text: str, secrets: list[str], expected: str
) -> None:
    assert masked(text, secrets, "***") == expected


def test_no_character_of_an_occurrence_is_left() -> None:
    secrets = ["aba", "bb", "abba", "baab"]
    for size in range(9):
        for letters in itertools.product("ab", repeat=size):
            text = "".join(letters)
            covered = {i + k for secret in secrets for i in range(size)
                       if text.startswith(secret, i) for k in range(len(secret))}
            kept = "".join(c for i, c in enumerate(text) if i not in covered)
            assert masked(text, secrets, "\0").replace("\0", "") == kept, text


def test_words_are_masked_where_they_stand_alone_overlapping_ones_whole() -> None:
    words = words_pattern(["ab cd", "cd ef", "t"])
    assert masked("x ab cd ef y", [], "***", words) == "x *** y"
    assert masked("t-t at t, t_1 t", [], "***", words) == "t-t at ***, t_1 ***"
    assert masked("the secret-xyz-0123456789 t", ["xyz-0123456789 t"], "***", words) == \
        "the secret-***"  # (a word inside a secret's span: one run)
