"""The ``wireproto`` command."""

from __future__ import annotations


def main() -> None:
    """Entry point."""
