"""Time limits of the test suite, as multiples of one unit.

``WIREPROTO_TESTS_TIMEOUT_FACTOR`` (default 1) scales every limit: raise it
on a slow or loaded machine instead of editing tests. Limits bound how long a
test may wait for something that should happen; no test asserts on time.
"""

from __future__ import annotations

import os

__all__ = ["FACTOR", "UNIT", "units"]


def _factor() -> float:
    text = os.environ.get("WIREPROTO_TESTS_TIMEOUT_FACTOR", "1")
    try:
        value = float(text)
    except ValueError:
        raise SystemExit(
            f"WIREPROTO_TESTS_TIMEOUT_FACTOR={text!r} is not a number: use e.g. 2 or 0.5"
        ) from None
    if value <= 0:
        raise SystemExit("WIREPROTO_TESTS_TIMEOUT_FACTOR must be positive")
    return value


FACTOR: float = _factor()
"""The scale of every limit."""

UNIT: float = 5.0 * FACTOR
"""Seconds of one unit."""


def units(n: float) -> float:
    """``n`` units, in seconds."""
    return n * UNIT
