"""Logging for the command line: stderr plus a size-bounded diagnostic file.

The library itself configures no handlers. The CLI logs to stderr and to
``$WIREPROTO_HOME/logs/<command>-<pid>.log`` (rotated at a size bound; the
oldest files beyond a count are pruned). Logs hold prompts and paths: the
directory is made 0700 and every file 0600, whatever the umask. Nothing is ever written to stdout.

Secrets never reach a handler: every record (message and traceback) is
scrubbed by :class:`_RedactFilter` before formatting (which also shows a
peer's terminal control characters as ``\\xNN``: a log line cannot be rewritten
on a terminal). It replaces the secrets
registered with :func:`redact` (e.g. the websocket token; one shorter than
:data:`WHOLE_BELOW` characters only where it stands alone, so that a client's
``--token t`` does not mangle every word with a ``t``) and, whatever their
value, anything that looks like a presented credential: a ``token`` query
parameter in any percent-encoded spelling, and ``Authorization`` header,
``Bearer`` and ``Basic`` values. The websockets library's debug dumps of raw
request lines, headers and frame payloads are dropped altogether (frames carry
whatever the peers send, e.g. MCP env values).
"""

from __future__ import annotations

import logging
import logging.handlers
import os
import re
import sys
from pathlib import Path
from typing import IO, Any
from urllib.parse import unquote_plus

from wireproto._masking import masked, words_pattern
from wireproto.cli.controls import printable

__all__ = ["LEVELS", "home", "log_failure", "open_private", "redact", "scrub", "setup_logging"]

MAX_LOG_BYTES = 5 * 1024 * 1024
"""The size at which a log file is rotated (one backup is kept)."""

KEEP_LOG_FILES = 20
"""Log files kept in ``$WIREPROTO_HOME/logs``; older ones are pruned."""

LEVELS = ("debug", "info", "warning", "error")
"""The values of ``--log-level``."""

WHOLE_BELOW = 16
"""A registered secret shorter than this is masked only as a whole word (not inside a
longer run of letters, digits, ``_`` or ``-``); a longer one wherever it appears."""

_secrets: set[str] = set()
_words: set[str] = set()  # the shorter secrets
_whole: list[re.Pattern[str]] = []  # them as one pattern, made again when one is added
_installed: list[logging.Handler] = []
_file: list[logging.Handler] = []  # the diagnostic file's handler, once installed

_CREDENTIALS = (
    (re.compile(r"(authorization:\s*)[^\r\n'\"]+", re.IGNORECASE), r"\1***"),
    (re.compile(r"((?:bearer|basic)\s+)[^\s'\",]+", re.IGNORECASE), r"\1***"),
)
"""Patterns of presented credentials -> their replacement."""
_QUERY = re.compile(r"([?&;])([^=&;#\s'\"]+)=([^&;#\s'\"]*)")
"""A query parameter: the token check reads ``token`` in any percent-encoded spelling."""
_WIRE_DUMP = ("<", ">")
"""How the websockets library starts its debug lines that dump a request line, a
header or a frame payload (``< GET /?token=...``, ``> TEXT '{...}'``)."""


def _query_value(match: re.Match[str]) -> str:
    sep, name, _ = match.groups()
    if unquote_plus(name).strip().lower() == "token":
        return f"{sep}{name}=***"
    return match.group(0)


def home() -> Path:
    """``$WIREPROTO_HOME`` (default ``~/.wireproto``)."""
    env = os.environ.get("WIREPROTO_HOME")
    return Path(env).expanduser() if env else Path.home() / ".wireproto"


def redact(secret: str) -> None:
    """Never let ``secret`` appear in a log record (see :data:`WHOLE_BELOW`)."""
    if len(secret) >= WHOLE_BELOW:
        _secrets.add(secret)
    elif secret and secret not in _words:
        _words.add(secret)
        _whole[:] = [words_pattern(_words)]


def scrub(text: str) -> str:
    """``text`` with registered secrets and credential-looking values replaced by ``***``."""
    text = masked(text, _secrets, "***", _whole[0] if _whole else None)  # (overlaps: whole)
    for pattern, replacement in _CREDENTIALS:
        text = pattern.sub(replacement, text)
    if "=" in text:
        text = _QUERY.sub(_query_value, text)
    return text


class _RedactFilter(logging.Filter):
    def filter(self, record: logging.LogRecord) -> bool:
        if record.name.startswith("websockets") and isinstance(record.msg, str) \
                and record.msg.startswith(_WIRE_DUMP):
            return False  # raw frames and headers: payloads, tokens, Authorization
        text = record.getMessage()
        clean = printable(scrub(text))
        if clean != text:
            record.msg, record.args = clean, None
        if record.exc_info and not record.exc_text:
            record.exc_text = logging.Formatter().formatException(record.exc_info)
        if record.exc_text:
            record.exc_text = printable(scrub(record.exc_text))
        return True


def open_private(path: str | os.PathLike[str], mode: str = "a", **kwargs: Any) -> IO[Any]:
    """Open ``path`` as a file only its owner may read or write (0600), whatever the umask.

    An existing file keeps its content (unless ``mode`` truncates) and loses any
    wider permission. ``kwargs`` go to :func:`open` (``encoding`` ...).
    """
    flags = os.O_WRONLY | os.O_CREAT | (os.O_TRUNC if "w" in mode else os.O_APPEND)
    fd = os.open(path, flags, 0o600)
    try:
        os.fchmod(fd, 0o600)
        return open(fd, mode, **kwargs)
    except BaseException:
        os.close(fd)
        raise


class _PrivateFileHandler(logging.handlers.RotatingFileHandler):
    """A rotating log file created 0600 (also after each rotation)."""

    def _open(self) -> Any:
        return open_private(self.baseFilename, self.mode, encoding=self.encoding,
                            errors=self.errors)


def _private_dir(directory: Path) -> None:
    """Create ``directory`` (and parents) and make it 0700, whatever the umask."""
    directory.mkdir(mode=0o700, parents=True, exist_ok=True)
    os.chmod(directory, 0o700)


def _prune(directory: Path) -> None:
    def mtime(path: Path) -> float:
        try:
            return path.stat().st_mtime
        except OSError:
            return 0.0

    files = sorted(directory.glob("*.log*"), key=mtime, reverse=True)
    for old in files[KEEP_LOG_FILES:]:
        try:
            old.unlink()
        except OSError:
            pass


def setup_logging(command: str, level: str = "info") -> Path | None:
    """Log to stderr (at ``level``) and to the diagnostic file (at INFO or finer).

    Calling it again replaces the handlers it installed before.

    Returns:
        the log file's path, or ``None`` when it could not be opened (a
        warning says why; logging to stderr still works).

    Raises:
        ValueError: ``level`` is not one of :data:`LEVELS`.
    """
    if level.lower() not in LEVELS:
        raise ValueError(f"unknown log level {level!r}")
    numeric = getattr(logging, level.upper())
    root = logging.getLogger()
    for handler in _installed:
        root.removeHandler(handler)
        handler.close()
    _installed.clear()
    _file.clear()
    root.setLevel(min(logging.INFO, numeric))
    # websockets logs every connection at INFO and raw headers at DEBUG.
    logging.getLogger("websockets").setLevel(logging.DEBUG if numeric <= logging.DEBUG
                                             else logging.WARNING)
    fmt = logging.Formatter("%(asctime)s %(levelname)s %(name)s: %(message)s")
    redactor = _RedactFilter()
    stderr = logging.StreamHandler(sys.stderr)
    stderr.setLevel(numeric)
    stderr.setFormatter(fmt)
    stderr.addFilter(redactor)
    root.addHandler(stderr)
    _installed.append(stderr)
    path: Path | None = None
    try:
        directory = home() / "logs"
        _private_dir(directory)
        _prune(directory)
        path = directory / f"{command}-{os.getpid()}.log"
        file = _PrivateFileHandler(
            path, maxBytes=MAX_LOG_BYTES, backupCount=1, encoding="utf-8"
        )
    except OSError as exc:
        logging.getLogger(__name__).warning("no log file: %s", exc)
        return None
    file.setLevel(min(logging.INFO, numeric))
    file.setFormatter(fmt)
    file.addFilter(redactor)
    root.addHandler(file)
    _installed.append(file)
    _file.append(file)
    return path


def log_failure(command: str, exc: BaseException) -> None:
    """Write ``exc`` with its traceback to the diagnostic file only (stderr gets one line)."""
    if not _file or not Path(getattr(_file[0], "baseFilename", "")).parent.is_dir():
        return  # no file, or its directory is gone (the demo's temporary home)
    record = logging.getLogger("wireproto.cli").makeRecord(
        "wireproto.cli", logging.ERROR, __file__, 0, "%s failed", (command,),
        (type(exc), exc, exc.__traceback__),
    )
    _file[0].handle(record)
