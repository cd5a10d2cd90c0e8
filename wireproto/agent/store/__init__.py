"""Session storage: the :class:`Store` protocol and the two stores that ship.

* :class:`JsonlStore` (also named :class:`SessionStore`): one JSON Lines file
  per session under ``$WIREPROTO_HOME/sessions``; what the ``wireproto`` CLI
  uses.
* :class:`MemoryStore`: nothing leaves the process; the default of an
  embedded :class:`~wireproto.agent.runtime.Runtime` and of ``serve_acp`` /
  ``serve_wire``.

:func:`open_store` turns what an embedding program passes as ``store=``
(a store, a directory, or nothing) into a store. A new store implements
:class:`Store` and runs the suite of :mod:`wireproto.agent.store.conformance`.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import TypeAlias

from wireproto.agent.store.base import (
    PAGE_SIZE,
    Store,
    StoredSession,
    title_of,
    valid_session_id,
    wireproto_home,
)
from wireproto.agent.store.jsonl import JsonlStore
from wireproto.agent.store.memory import MemoryStore

__all__ = [
    "PAGE_SIZE",
    "JsonlStore",
    "MemoryStore",
    "SessionStore",
    "Store",
    "StoreArg",
    "StoredSession",
    "open_store",
    "title_of",
    "valid_session_id",
    "wireproto_home",
]

SessionStore = JsonlStore
"""The JSON Lines store under its first name (kept for existing code)."""

StoreArg: TypeAlias = Store | str | os.PathLike[str] | None
"""What ``store=`` accepts: a store, a directory for a :class:`JsonlStore`, or ``None``."""


def open_store(store: StoreArg) -> Store:
    """The store an embedding program asked for.

    Args:
        store: a :class:`Store` (used as is); a directory (a
            :class:`JsonlStore` there); ``None`` (a new :class:`MemoryStore`:
            nothing is written unless the program asks).
    """
    if store is None:
        return MemoryStore()
    if isinstance(store, (str, os.PathLike)):
        return JsonlStore(Path(store).expanduser())
    return store
