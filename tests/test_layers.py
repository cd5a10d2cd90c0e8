"""The layering rules of docs/architecture.md#layers, checked on what each module really imports.

Every module of the package is discovered on disk, imported alone in a fresh
interpreter, and its ``sys.modules`` is checked against the table below. A new
module in an existing layer is covered automatically; a new top-level layer
fails :func:`test_every_layer_has_a_rule` until the table says what it may use.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

import wireproto

PACKAGE = "wireproto"
ROOT = Path(wireproto.__file__).parent

# Importing every module in its own interpreter is the slowest fixture of the
# suite (about 20 CPU-seconds): give it room on a loaded machine.
pytestmark = pytest.mark.timeout(300)
IMPORT_TIMEOUT = 120  # one module alone

IO_LIBRARIES = ("anyio", "asyncio", "trio", "sniffio", "websockets")
TEST_LIBRARIES = ("pytest", "_pytest", "hypothesis")
EVERYTHING = ("*",)

# Layer (first component under wireproto) -> the wireproto modules or
# packages it may import (its own layer is always allowed). "*" = any.
INTERNAL: dict[str, tuple[str, ...]] = {
    "__init__": (),  # importing the package must not pull in any layer
    "errors": (),
    "_lazy": (),  # the package roots' lazy re-exports, usable by every layer
    "_switches": (),  # process-wide switches (WIREPROTO_NO_FAST_PATHS), likewise
    "_backend": (),  # which event loop runs the current task, likewise
    "_childcheck": (),  # checks run in a child Python, bounded in time, likewise
    "_childsignal": (),  # a signal to a child by pid, while the pid is still its, likewise
    "_masking": (),  # secrets masked in text (log lines, a child's stderr), likewise
    "jsonrpc": ("errors",),
    # transports depend only on jsonrpc.framing and errors
    "transports": ("errors", "jsonrpc.framing"),
    "rpc": ("errors", "jsonrpc"),
    "agent": ("errors", "jsonrpc", "rpc"),
    # adapters: rpc, jsonrpc, agent and their own package, never each other
    # (checked per adapter below) and no concrete transport at import time
    "adapters": ("errors", "jsonrpc", "rpc", "agent"),
    "host": ("errors", "jsonrpc", "rpc", "agent", "adapters", "transports"),
    # the proxy composes both adapters, the transports and the host's MCP bridge
    "proxy": ("errors", "jsonrpc", "rpc", "agent", "adapters", "transports", "host"),
    "cli": (
        "errors", "jsonrpc", "rpc", "agent", "adapters", "transports", "host", "proxy", "inspect",
    ),
    # the inspector composes like cli; it shares cli's listener security rules
    "inspect": ("errors", "jsonrpc", "rpc", "agent", "adapters", "transports", "cli.wsauth",
                "proxy.relay"),
    "__main__": EVERYTHING,
    # public test helpers compose layers, like cli, but never pull in cli or host
    "testing": ("errors", "jsonrpc", "rpc", "transports", "agent", "adapters"),
}

# Top-level private modules that every layer may import.
PRIVATE_HELPERS = (f"{PACKAGE}._lazy", f"{PACKAGE}._switches", f"{PACKAGE}._backend",
                   f"{PACKAGE}._childcheck", f"{PACKAGE}._childsignal",
                   f"{PACKAGE}._masking")

# Layer -> third-party top-level packages it must never import.
EXTERNAL: dict[str, tuple[str, ...]] = {
    "__init__": IO_LIBRARIES,
    "errors": IO_LIBRARIES,
    "_lazy": IO_LIBRARIES,
    "_switches": IO_LIBRARIES,
    "_masking": IO_LIBRARIES,
    "jsonrpc": IO_LIBRARIES,  # sans-I/O: bytes in, typed messages out
    "rpc": ("websockets",),  # only the ObjectStream interface
}


def discover() -> list[str]:
    """Every importable module of the package, found on disk."""
    modules = []
    for path in sorted(ROOT.rglob("*.py")):
        rel = path.relative_to(ROOT)
        if not all(
            (ROOT / Path(*rel.parts[:i]) / "__init__.py").exists() for i in range(1, len(rel.parts))
        ):
            continue  # a data directory (e.g. vendored files), not a package
        parts = [PACKAGE, *rel.with_suffix("").parts]
        if parts[-1] == "__init__":
            parts.pop()
        if parts[-1] == "__main__":
            continue  # running it starts the CLI
        modules.append(".".join(parts))
    return modules


MODULES = discover()


def layer_of(module: str) -> str:
    parts = module.split(".")
    return parts[1] if len(parts) > 1 else "__init__"


def within(module: str, prefix: str) -> bool:
    return module == prefix or module.startswith(prefix + ".")


@pytest.fixture(scope="module")
def imported() -> dict[str, list[str]]:
    """Module -> the sorted ``sys.modules`` after importing it alone."""
    code = (
        "import importlib, json, sys; importlib.import_module(sys.argv[1]); "
        "print(json.dumps(sorted(sys.modules)))"
    )

    def import_alone(module: str) -> subprocess.CompletedProcess[bytes]:
        return subprocess.run(
            [sys.executable, "-c", code, module], capture_output=True, timeout=IMPORT_TIMEOUT
        )

    # One interpreter per core at a time: as fast as all at once, without
    # a hundred interpreters competing for memory and CPU.
    with ThreadPoolExecutor(max_workers=os.cpu_count() or 2) as pool:
        done = dict(zip(MODULES, pool.map(import_alone, MODULES), strict=True))
    result: dict[str, list[str]] = {}
    failures = []
    for module, proc in done.items():
        if proc.returncode:
            failures.append(f"{module}: {proc.stderr.decode(errors='replace').strip()[-500:]}")
        else:
            result[module] = json.loads(proc.stdout)
    assert not failures, "\n".join(failures)
    return result


def test_discovery_finds_the_core() -> None:
    for module in (
        "wireproto",
        "wireproto.errors",
        "wireproto.jsonrpc.codec",
        "wireproto.jsonrpc.framing",
        "wireproto.rpc.peer",
    ):
        assert module in MODULES


def test_every_layer_has_a_rule() -> None:
    missing = {layer_of(m) for m in MODULES} - set(INTERNAL)
    assert not missing, f"add layering rules for {sorted(missing)}"


def violations(module: str, loaded: list[str]) -> Iterator[str]:
    layer = layer_of(module)
    allowed = INTERNAL[layer]
    own = f"{PACKAGE}.{layer}" if layer != "__init__" else module
    if layer == "adapters" and len(module.split(".")) > 2:
        own = ".".join(module.split(".")[:3])  # only its own adapter
    for name in loaded:
        if name == PACKAGE or not within(name, PACKAGE):
            top = name.split(".")[0]
            if top in EXTERNAL.get(layer, ()) or (top in TEST_LIBRARIES and layer != "testing"):
                yield f"{module} imports {name}"
            continue
        if name in PRIVATE_HELPERS or within(name, own) or within(own, name):
            continue  # helpers every layer may use, itself, its own layer, its parents
        if allowed == EVERYTHING:
            continue
        if layer == "adapters" and name in (f"{PACKAGE}.adapters", f"{PACKAGE}.adapters._shared"):
            continue  # the package, and the helpers every adapter shares
        targets = [f"{PACKAGE}.{a}" for a in allowed]
        if any(within(name, t) or within(t, name) for t in targets):
            continue  # an allowed module, or a parent package needed to reach it
        yield f"{module} imports {name}"


@pytest.mark.parametrize("module", MODULES)
def test_layering(module: str, imported: dict[str, list[str]]) -> None:
    assert list(violations(module, imported[module])) == []


def test_rules_catch_violations() -> None:
    """The checker itself: known-bad import sets are reported."""
    assert list(violations("wireproto.jsonrpc.codec", ["anyio", "wireproto.errors"])) == [
        "wireproto.jsonrpc.codec imports anyio"
    ]
    assert list(violations("wireproto.transports.stdio", ["wireproto.rpc.peer"])) == [
        "wireproto.transports.stdio imports wireproto.rpc.peer"
    ]
    assert list(violations("wireproto.transports.stdio", ["wireproto.jsonrpc.codec"])) == [
        "wireproto.transports.stdio imports wireproto.jsonrpc.codec"
    ]
    assert (
        list(
            violations(
                "wireproto.transports.stdio",
                ["wireproto.jsonrpc", "wireproto.jsonrpc.framing", "wireproto.errors", "anyio"],
            )
        )
        == []
    )
    assert list(violations("wireproto.adapters.acp.x", ["wireproto.adapters.wire"])) == [
        "wireproto.adapters.acp.x imports wireproto.adapters.wire"
    ]
    assert list(violations("wireproto.adapters.acp.x", ["wireproto.transports.stdio"])) == [
        "wireproto.adapters.acp.x imports wireproto.transports.stdio"
    ]
    assert list(violations("wireproto.rpc.peer", ["wireproto.transports.memory"])) != []
    assert list(violations("wireproto.agent.api", ["wireproto.adapters.acp"])) != []
    assert list(violations("wireproto.errors", ["wireproto.jsonrpc"])) != []
    assert list(violations("wireproto.rpc.peer", ["pytest"])) != []
    assert list(violations("wireproto.testing", ["wireproto.cli"])) != []


# The adapters group their modules by role: a subpackage per role (ACP: agent/
# and client/; Wire: server/ and client/), each with its connection module;
# what both roles share (codec, schema, messages, translation) stays at the top.
ROLES = {"acp": ("agent", "client"), "wire": ("server", "client")}


@pytest.mark.parametrize("adapter", sorted(ROLES))
def test_adapters_group_their_modules_by_role(adapter: str) -> None:
    root = ROOT / "adapters" / adapter
    for role in ROLES[adapter]:
        assert (root / role / "__init__.py").exists(), f"{adapter} has no {role}/ subpackage"
        assert (root / role / "connection.py").exists(), f"{adapter}/{role} has no connection.py"
    prefixed = [p.name for p in root.glob("*.py")
                if p.stem.startswith(("agent", "client", "server"))]
    assert prefixed == [], f"role modules outside their subpackage: {prefixed}"
