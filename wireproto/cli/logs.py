"""Logging for the command line: stderr plus a size-bounded diagnostic file.

The library itself configures no handlers. The CLI logs to stderr and to
``$WIREPROTO_HOME/logs/<command>-<pid>.log`` (rotated at a size bound; the
oldest files beyond a count are pruned). Secrets registered with
:func:`redact` (e.g. the websocket token) are replaced by ``***`` in every
record before any handler sees it. Nothing is ever written to stdout.
"""

from __future__ import annotations

import logging
import logging.handlers
import os
import sys
from pathlib import Path

__all__ = ["home", "redact", "setup_logging"]

MAX_LOG_BYTES = 5 * 1024 * 1024
KEEP_LOG_FILES = 20

_secrets: set[str] = set()


def home() -> Path:
    """``$WIREPROTO_HOME`` (default ``~/.wireproto``)."""
    env = os.environ.get("WIREPROTO_HOME")
    return Path(env) if env else Path.home() / ".wireproto"


def redact(secret: str) -> None:
    """Never let ``secret`` appear in a log record."""
    if secret:
        _secrets.add(secret)


class _RedactFilter(logging.Filter):
    def filter(self, record: logging.LogRecord) -> bool:
        if _secrets:
            text = record.getMessage()
            if any(s in text for s in _secrets):
                for s in _secrets:
                    text = text.replace(s, "***")
                record.msg, record.args = text, None
        return True


def _prune(directory: Path) -> None:
    files = sorted(directory.glob("*.log*"), key=lambda p: p.stat().st_mtime, reverse=True)
    for old in files[KEEP_LOG_FILES:]:
        try:
            old.unlink()
        except OSError:
            pass


def setup_logging(command: str, level: str = "INFO") -> Path | None:
    """Log to stderr and to the diagnostic file; returns the file's path."""
    root = logging.getLogger()
    root.setLevel(logging.DEBUG)
    fmt = logging.Formatter("%(asctime)s %(levelname)s %(name)s: %(message)s")
    redactor = _RedactFilter()
    stderr = logging.StreamHandler(sys.stderr)
    stderr.setLevel(level.upper())
    stderr.setFormatter(fmt)
    stderr.addFilter(redactor)
    root.addHandler(stderr)
    path: Path | None = None
    try:
        directory = home() / "logs"
        directory.mkdir(parents=True, exist_ok=True)
        _prune(directory)
        path = directory / f"{command}-{os.getpid()}.log"
        file = logging.handlers.RotatingFileHandler(
            path, maxBytes=MAX_LOG_BYTES, backupCount=1, encoding="utf-8"
        )
        file.setLevel(min(logging.INFO, logging.getLevelName(level.upper())))
        file.setFormatter(fmt)
        file.addFilter(redactor)
        root.addHandler(file)
    except OSError as exc:
        logging.getLogger(__name__).warning("no log file: %s", exc)
    return path
