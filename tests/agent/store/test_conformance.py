"""The store conformance suite on both stores that ship."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from wireproto.agent.store import JsonlStore, MemoryStore, Store
from wireproto.agent.store.conformance import StoreConformance


class TestStores(StoreConformance):
    @pytest.fixture(params=["jsonl", "memory"])
    def store(self, request: pytest.FixtureRequest, tmp_path: Path) -> Store:
        if request.param == "jsonl":
            return JsonlStore(tmp_path / "sessions")
        return MemoryStore()

    def reopen(self, store: Any) -> Store:
        return JsonlStore(store.root) if isinstance(store, JsonlStore) else store
