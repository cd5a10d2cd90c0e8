"""Shared fixtures and the test tiers.

Backends: every async test runs on asyncio and on trio, and (marker
``asyncio_modes``, not in the default run) also on asyncio in debug mode and,
on Python 3.12+, with the eager task factory, as anyio's own suite does. Tests
that need the backend's name take ``anyio_backend_name``.

Tiers (markers, registered in ``pyproject.toml``): ``slow``, ``interop`` and
``browser`` are given by path below, so a new test file placed by those rules
gets its marker without saying so; a few runs of end-to-end tests go to
``slow`` by their parameters (:data:`SLOW_RUNS`). The default run (``pytest``) is the fast
core, spread over one pytest-xdist worker per core (at most 8; ``-n 0`` runs
it in one process); ``pytest -m ''`` runs every tier (what ``.ci/run`` does),
in one process unless given ``-n``. ``fastpath``
marks tests of the fast paths themselves, skipped when
``WIREPROTO_NO_FAST_PATHS`` turns them off.

Time limits are multiples of :data:`timeouts.UNIT`, scaled by
``WIREPROTO_TESTS_TIMEOUT_FACTOR`` (pytest-timeout's limits too).
"""

from __future__ import annotations

import asyncio
import compileall
import fnmatch
import functools
import importlib.util
import inspect
import os
import shutil
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import anyio
import pytest
from timeouts import FACTOR

from wireproto._switches import FAST_PATHS

TESTS = Path(__file__).resolve().parent


def _eager_loop() -> asyncio.AbstractEventLoop:
    loop = asyncio.new_event_loop()
    loop.set_task_factory(asyncio.eager_task_factory)  # type: ignore[attr-defined]
    return loop


_BACKENDS = [
    pytest.param("asyncio", id="asyncio"),
    pytest.param("trio", id="trio"),
    pytest.param(("asyncio", {"debug": True}), id="asyncio-debug", marks=pytest.mark.asyncio_modes),
]
if sys.version_info >= (3, 12):
    _BACKENDS.append(
        pytest.param(
            ("asyncio", {"debug": True, "loop_factory": _eager_loop}),
            id="asyncio-eager",
            marks=pytest.mark.asyncio_modes,
        )
    )


@pytest.fixture(params=_BACKENDS)
def anyio_backend(request: pytest.FixtureRequest) -> Any:
    return request.param


# --------------------------------------------------------------------------- tiers

# marker -> test paths (relative to tests/, glob patterns) that get it
TIERS: dict[str, tuple[str, ...]] = {
    "interop": (
        "interop/*",  # the official TypeScript SDK, on Node
        "adapters/acp/client/test_client_sdk.py",  # the official ACP Python SDK
        "adapters/mcp/test_interop.py",  # the official MCP package
        "**/test_*interop*.py",
    ),
    "browser": ("**/test_*browser*.py", "browser/*"),
    "slow": (
        "test_layers.py",  # every module imported in its own interpreter
        "test_benchmarks_smoke.py",
        "test_childcheck.py",  # child processes left to run out their time
        "test_bench_proxy_smoke.py",
        "proxy/test_*front*.py",  # a proxy and its backend processes per test
        "host/*",  # harness and bridge processes per test
        "cli/*",  # the wireproto command end to end, as real processes
        "adapters/acp/agent/test_subprocess.py",  # agent processes, signals
        "jsonrpc/test_properties.py",  # generated input
        "**/test_*fuzz*.py",  # generated input
        "**/test_*load*.py",
        "**/test_*soak*.py",
    ),
}
FASTPATH_TESTS = ("jsonrpc/test_codec_onepass.py", "adapters/acp/test_codec_onepass.py")

# Runs of end-to-end tests that go to the slow tier: on trio through an agent
# process. The same tests' other runs cover the behaviour (on trio in memory
# and over websocket, through the process on asyncio), and the transport
# tests cover the process transports on trio (transports/test_subprocess.py,
# transports/test_transports.py, rpc/test_peer_transports.py).
# (test path, glob on the test's name) -> the parameters of those runs
SLOW_RUNS: dict[tuple[str, str], dict[str, str]] = {
    ("adapters/acp/client/test_client_demo.py", "*"): {
        "anyio_backend": "trio", "transport": "subprocess"},
    ("adapters/wire/test_demo_wire.py", "*"): {"anyio_backend": "trio", "kind": "subprocess"},
    ("adapters/wire/test_demo_coverage.py", "*"): {"anyio_backend": "trio", "kind": "subprocess"},
    ("adapters/test_turn_failure.py", "test_acp_*"): {"anyio_backend": "trio"},
    ("adapters/test_turn_failure.py", "test_wire_*"): {"anyio_backend": "trio"},
}


def _matches(path: Path, patterns: tuple[str, ...]) -> bool:
    rel = path.relative_to(TESTS)
    return any(rel.match(p) or (p.endswith("/*") and rel.parts[0] == p[:-2]) for p in patterns)


def _slow_run(path: Path, name: str, params: dict[str, Any]) -> bool:
    """Whether this run of a test is one of :data:`SLOW_RUNS`."""
    rel = path.relative_to(TESTS).as_posix()
    return any(
        rel == test and fnmatch.fnmatchcase(name, glob)
        and all(params.get(key) == value for key, value in values.items())
        for (test, glob), values in SLOW_RUNS.items()
    )


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    for item in items:
        path = Path(str(item.path))
        if TESTS not in path.parents:
            continue
        for marker, patterns in TIERS.items():
            if _matches(path, patterns):
                item.add_marker(marker)
        callspec = getattr(item, "callspec", None)
        if callspec is not None and _slow_run(path, item.originalname, callspec.params):
            item.add_marker("slow")
        if _matches(path, FASTPATH_TESTS):
            item.add_marker("fastpath")
        if not FAST_PATHS and item.get_closest_marker("fastpath"):
            item.add_marker(
                pytest.mark.skip(reason="tests a fast path, turned off by WIREPROTO_NO_FAST_PATHS")
            )
        limit = item.get_closest_marker("timeout")
        if FACTOR != 1 and limit is not None and limit.args:
            item.add_marker(pytest.mark.timeout(float(limit.args[0]) * FACTOR), append=False)


FAST_CORE = "not slow and not interop and not browser and not asyncio_modes"
"""The default selection (``addopts`` in ``pyproject.toml``)."""


def _whole_fast_core(config: pytest.Config) -> bool:
    """Whether this run is the fast core over all of ``tests/`` (a plain ``pytest``)."""
    if config.option.markexpr != FAST_CORE or config.option.keyword:
        return False
    paths = [Path(str(arg).split("::")[0]).resolve() for arg in config.args]
    return all(path in (TESTS, TESTS.parent) for path in paths)


def pytest_ignore_collect(collection_path: Path, config: pytest.Config) -> bool | None:
    """Leave the files of the other tiers unimported when the fast core is selected.

    Every test in them would be deselected; importing them (and rewriting
    their assertions) costs each worker time. Only when the whole suite is
    collected: files and folders named on the command line are collected as
    they were, and ``-m ''`` or any other selection imports everything.
    """
    if config.option.markexpr != FAST_CORE or TESTS not in collection_path.parents:
        return None
    named = [Path(str(arg).split("::")[0]).resolve() for arg in config.args]
    if any(path not in (TESTS, TESTS.parent) for path in named):
        return None
    return any(_matches(collection_path, patterns) for patterns in TIERS.values()) or None


@pytest.hookimpl(tryfirst=True)
def pytest_cmdline_main(config: pytest.Config) -> None:
    """Spread a plain ``pytest`` (the whole fast core) over xdist workers, one per core.

    Only when nothing chose otherwise: no ``-n``, no other selection, not a
    worker itself. Single files and the other tiers stay in one process,
    where starting workers costs more than it saves.
    """
    if (
        config.pluginmanager.hasplugin("xdist")
        and getattr(config.option, "numprocesses", 0) is None
        and "PYTEST_XDIST_WORKER" not in os.environ
        and not config.option.collectonly
        and _whole_fast_core(config)
    ):
        cores = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count()
        config.option.numprocesses = min(cores or 1, 8)


def pytest_configure(config: pytest.Config) -> None:
    if FACTOR != 1 and getattr(config.option, "timeout", None) is None:
        config.option.timeout = float(config.getini("timeout")) * FACTOR
    _share_bytecode(config)


# --------------------------------------------------------------------------- bytecode


def _share_bytecode(config: pytest.Config) -> None:
    """Compile the package once for all the processes of the run, if Python may not.

    Under ``PYTHONDONTWRITEBYTECODE`` (usual in containers) each of the ~250
    agent, server and CLI processes the tests start would compile
    ``wireproto`` from source again, about half of its start-up. The run
    writes the missing bytecode where Python would (``__pycache__``, ignored by
    git) before its workers and children start, and deletes what it wrote at
    the end. (A ``PYTHONPYCACHEPREFIX`` would not do: it moves the lookup of
    the standard library's and the dependencies' bytecode too.)
    """
    if not sys.dont_write_bytecode or "PYTEST_XDIST_WORKER" in os.environ:
        return
    files: list[Path] = []
    folders: list[Path] = []
    for tree in (TESTS.parent / "wireproto", TESTS / "helpers"):
        for source in sorted(tree.rglob("*.py")):
            cached = Path(importlib.util.cache_from_source(str(source)))
            new_file, new_folder = not cached.exists(), not cached.parent.exists()
            if compileall.compile_file(source, quiet=2):  # (skips bytecode up to date)
                files += [cached] if new_file else []
                folders += [cached.parent] if new_folder else []

    def delete() -> None:
        for path in files:
            path.unlink(missing_ok=True)
        for folder in folders:
            shutil.rmtree(folder, ignore_errors=True)

    config.add_cleanup(delete)


# --------------------------------------------------------------------------- deadlines


def _deadline(item: pytest.Function) -> float:
    """Seconds an async test body may take: a margin below pytest-timeout's limit."""
    marker = item.get_closest_marker("timeout")
    if marker and marker.args:
        limit = float(marker.args[0])
    else:
        option = getattr(item.config.option, "timeout", None)
        limit = float(option if option is not None else item.config.getini("timeout"))
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
