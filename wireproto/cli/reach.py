"""Why an agent could not be reached, in the words a command line user needs.

``wireproto connect`` and ``wireproto inspect`` spawn an agent (``-- CMD ...``) or
open a websocket (``--ws URL``); when that fails, :func:`unreachable` turns the
exception into a one-line :class:`~wireproto.cli.common.CliError` that says what
happened and what to do, and :func:`check_ws_url` refuses a URL that is not a
websocket one before anything is opened.
"""

from __future__ import annotations

from collections.abc import Sequence
from urllib.parse import urlsplit

from wireproto.cli.common import CliError

__all__ = ["check_ws_url", "unreachable"]

_WS_HINTS = (
    ("HTTP 401", "the server wants its token: pass --token TOKEN, or use the whole URL it "
                 "printed (ws://HOST:PORT/?token=...)"),
    ("HTTP 403", "the server refuses this origin (see its --allow-origin)"),
)
"""Text in a websocket failure -> what to do about it (no token given)."""

_WS_HINTS_WITH_TOKEN = (
    ("HTTP 401", "the server refused this token: give the one it printed (--token, or "
                 "?token= in the URL)"),
    *_WS_HINTS[1:],
)
"""The same when a token was given."""


def check_ws_url(url: str) -> None:
    """Refuse ``url`` unless it is a ``ws://`` or ``wss://`` URL with a host."""
    parts = urlsplit(url)
    if parts.scheme not in ("ws", "wss") or not parts.hostname:
        raise CliError(f"--ws {url!r} is not a websocket URL: give the ws://HOST:PORT/?token=... "
                       "address the agent printed")


def unreachable(
    exc: BaseException, cmd: Sequence[str] | None, url: str | None, token: str | None
) -> CliError:
    """The :class:`CliError` for failing to spawn ``cmd`` (or, without it, to open ``url``)."""
    if cmd:
        program = cmd[0]
        if isinstance(exc, FileNotFoundError):
            return CliError(f"cannot start the agent: {program!r} was not found; check the "
                            "command after -- (a program on PATH, or a path to one)")
        if isinstance(exc, PermissionError):
            return CliError(f"cannot start the agent: {program!r} is not executable; run it "
                            f"through its interpreter (e.g. -- python {program}) or chmod +x it")
        return CliError(f"cannot start the agent: {exc}")
    given = bool(token) or "token=" in urlsplit(url or "").query
    hints = _WS_HINTS_WITH_TOKEN if given else _WS_HINTS
    text = str(exc)
    hint = next((f"; {hint}" for needle, hint in hints if needle in text), "")
    return CliError(f"cannot reach the agent: {text}{hint}")
