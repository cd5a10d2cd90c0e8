"""Secrets masked in text: every character of every occurrence, in one pass.

Masking one secret after another leaves pieces readable where two occurrences overlap
without one holding the other: with ``abcdef`` and ``defghi`` registered, ``abcdefghi``
masked for the first reads ``***ghi``, and for the second first ``abc***``. So the
spans of all occurrences (those of one secret overlapping each other too: ``aba`` in
``ababa``) are found first, in the text as it is, and each run of overlapping spans is
replaced once. Text that holds no secret, the usual case, costs one substring search
per secret (and one search of ``words`` when given).
"""

from __future__ import annotations

import re
from collections.abc import Iterable

__all__ = ["masked", "words_pattern"]


def words_pattern(words: Iterable[str]) -> re.Pattern[str]:
    """A pattern for :func:`masked` that finds ``words`` where they stand alone (not
    inside a longer run of letters, digits, ``_`` or ``-``), overlapping ones included:
    its matches are empty, their group 1 the word."""
    alternatives = "|".join(map(re.escape, sorted(words, key=len, reverse=True)))
    return re.compile(rf"(?<![\w-])(?=((?:{alternatives}))(?![\w-]))")


def masked(text: str, secrets: Iterable[str], replacement: str,
           words: re.Pattern[str] | None = None) -> str:
    """``text`` with each run of overlapping occurrences of ``secrets`` (non-empty
    strings) and of ``words`` (a :func:`words_pattern`) replaced by ``replacement``."""
    spans = []
    if words is not None and words.search(text) is not None:  # (rarely: one search)
        spans = [match.span(1) for match in words.finditer(text)]
    for secret in secrets:
        if secret in text:  # (rarely: the one search of a text that holds none)
            start = text.find(secret)
            while start >= 0:
                spans.append((start, start + len(secret)))
                start = text.find(secret, start + 1)
    if not spans:
        return text
    spans.sort()
    runs: list[list[int]] = []  # [start, stop] of each run of overlapping spans
    for start, stop in spans:
        if runs and start < runs[-1][1]:  # (adjacent occurrences stay two)
            runs[-1][1] = max(runs[-1][1], stop)
        else:
            runs.append([start, stop])
    pieces: list[str] = []
    shown = 0
    for start, stop in runs:
        pieces += (text[shown:start], replacement)
        shown = stop
    pieces.append(text[shown:])
    return "".join(pieces)
