"""Terminal control characters from a peer, made visible.

An agent's text, a question's title, a session id in a log line: whatever a
peer sends reaches the user's terminal (or the log file read in one). Escape
sequences in it could write to the clipboard (OSC 52), clear the screen,
rewrite a line shown earlier (``\\r``) or hide text, so a hostile agent could
make an approval look like another; bidirectional overrides (U+202E...) could
show a command's text in another order than it runs. :func:`printable` shows
every control character but the line feed and the tab as ``\\xNN``, and those
direction marks as ``\\uNNNN``.
"""

from __future__ import annotations

__all__ = ["printable"]

_CONTROLS = {
    **{code: f"\\x{code:02x}"
       for code in (*range(0x20), 0x7F, *range(0x80, 0xA0)) if code not in (0x09, 0x0A)},
    **{code: f"\\u{code:04x}"
       for code in (0x061C, 0x200E, 0x200F, *range(0x202A, 0x202F), *range(0x2066, 0x206A))},
}
"""C0 (but tab and line feed), DEL, C1 and the direction marks -> a visible escape."""


def printable(text: str) -> str:
    """``text`` with its terminal control characters and direction marks made visible."""
    return text.translate(_CONTROLS) if not text.isprintable() else text
