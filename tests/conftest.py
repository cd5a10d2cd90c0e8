"""Shared fixtures: every async test runs on asyncio and trio, under a deadline."""

from __future__ import annotations

import functools
import inspect
from collections.abc import Iterator
from typing import Any

import anyio
import pytest


@pytest.fixture(params=["asyncio", "trio"])
def anyio_backend(request: pytest.FixtureRequest) -> str:
    return str(request.param)


def _deadline(item: pytest.Function) -> float:
    """Seconds an async test body may take: a margin below pytest-timeout's limit."""
    marker = item.get_closest_marker("timeout")
    limit = float(marker.args[0] if marker and marker.args else item.config.getini("timeout"))
    return max(limit - 10, limit * 0.8)


@pytest.hookimpl(hookwrapper=True)
def pytest_pyfunc_call(pyfuncitem: pytest.Function) -> Iterator[None]:
    """Run every async test inside ``anyio.fail_after``.

    A test stuck on an ``await`` then fails with ``TimeoutError`` and the
    traceback of where it waited, and the session goes on, instead of
    pytest-timeout stopping the whole run a little later.
    """
    test = pyfuncitem.obj
    if not inspect.iscoroutinefunction(test):
        yield
        return
    seconds = _deadline(pyfuncitem)

    @functools.wraps(test)
    async def bounded(**kwargs: Any) -> None:
        with anyio.fail_after(seconds):
            await test(**kwargs)

    pyfuncitem.obj = bounded
    try:
        yield
    finally:
        pyfuncitem.obj = test
