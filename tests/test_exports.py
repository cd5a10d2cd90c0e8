"""The public API: what each package root exports, and that the docs use only that.

The rule (``docs/api.md``): a name is public when it is in the ``__all__`` of a
package root (:data:`ROOTS`) or of a public module (:data:`PUBLIC_MODULES`);
every other module and name is private, whatever its spelling.
"""

from __future__ import annotations

import ast
import importlib
import inspect
import re
import textwrap
import types
from collections.abc import Iterator
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]

ROOTS = (
    "wireproto",
    "wireproto.jsonrpc",
    "wireproto.rpc",
    "wireproto.transports",
    "wireproto.agent",
    "wireproto.adapters.acp",
    "wireproto.adapters.wire",
    "wireproto.adapters.mcp",
    "wireproto.host",
    "wireproto.proxy",
)
"""Package roots: each re-exports its package's public names."""

PUBLIC_MODULES = (
    "wireproto.errors",
    "wireproto.testing",
    "wireproto.agent.store.conformance",  # the suite a third-party session store runs
    # The protocols' own vocabularies, used qualified (``schema.ToolCall``):
    # they keep each protocol's names, so they may repeat a root's name.
    "wireproto.adapters.acp.schema",
    "wireproto.adapters.wire.messages",
    "wireproto.adapters.wire.methods",
    "wireproto.adapters.wire.display",
    "wireproto.adapters.mcp.messages",
)
"""Public modules besides the roots."""

VOCABULARIES = PUBLIC_MODULES[3:]


def exported(module: str) -> dict[str, object]:
    mod = importlib.import_module(module)
    names = getattr(mod, "__all__", None)
    assert names is not None, f"{module} has no __all__"
    return {name: getattr(mod, name) for name in names}


@pytest.mark.parametrize("module", ROOTS + PUBLIC_MODULES)
def test_every_exported_name_exists(module: str) -> None:
    mod = importlib.import_module(module)
    names = mod.__all__
    assert len(names) == len(set(names)), f"{module}.__all__ repeats a name"
    missing = [name for name in names if not hasattr(mod, name)]
    assert missing == []
    assert set(names) <= set(dir(mod))


@pytest.mark.parametrize("module", ROOTS[1:])
def test_every_root_exports_something(module: str) -> None:
    assert exported(module)


def test_one_name_one_meaning() -> None:
    """No name is exported by two roots (or errors/testing) as different objects."""
    seen: dict[str, tuple[str, object]] = {}
    clashes = []
    for module in (*ROOTS, *PUBLIC_MODULES[:3]):
        for name, value in exported(module).items():
            if name.startswith("__"):
                continue
            if name in seen and seen[name][1] is not value:
                clashes.append(f"{name}: {seen[name][0]} and {module}")
            seen.setdefault(name, (module, value))
    assert clashes == []


def test_named_collisions_are_gone() -> None:
    """The pairs that once shared a name now have one meaning each."""
    from wireproto import agent, host
    from wireproto.adapters import acp, mcp, wire
    from wireproto.adapters.mcp import messages as mcp_messages
    from wireproto.adapters.wire import methods

    assert acp.PromptTurn is not agent.Turn and not hasattr(acp, "Turn")
    assert host.HostStore is not agent.SessionStore and not hasattr(host, "SessionStore")
    assert host.BridgeChannel is not agent.Channel and not hasattr(host, "Channel")
    assert methods.WireMethod and not hasattr(methods, "MethodSpec")
    assert not hasattr(methods, "ClientCapabilities")
    assert not hasattr(mcp_messages, "ClientCapabilities")
    assert wire.ExternalTool is agent.ExternalTool
    assert mcp.ToolClient.__module__ == "wireproto.adapters.mcp.client"


@pytest.mark.parametrize("module", ROOTS[1:])
def test_public_classes_and_functions_have_docstrings(module: str) -> None:
    undocumented = [
        name
        for name, value in exported(module).items()
        if (inspect.isclass(value) or inspect.isfunction(value))
        and str(getattr(value, "__module__", "")).startswith("wireproto")
        and not (value.__doc__ or "").strip()
    ]
    assert undocumented == []


# --------------------------------------------------------------------------- docs


def doc_files() -> list[Path]:
    return sorted([REPO / "README.md", *(REPO / "docs").rglob("*.md")])


def python_blocks(path: Path) -> Iterator[str]:
    for match in re.finditer(r"^```python\n(.*?)^```", path.read_text(), re.M | re.S):
        yield textwrap.dedent(match.group(1))  # a method shown on its own is indented


def imports(source: str) -> Iterator[tuple[str, str | None]]:
    """``(module, name)`` for every wireproto import (name ``None``: ``import module``)."""
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            if node.module.split(".")[0] == "wireproto":
                for alias in node.names:
                    yield node.module, alias.name
        elif isinstance(node, ast.Import):
            for alias in node.names:
                if alias.name.split(".")[0] == "wireproto":
                    yield alias.name, None


def public(module: str, name: str | None) -> bool:
    if module not in ROOTS + PUBLIC_MODULES:
        return False
    if name is None:
        return True
    full = f"{module}.{name}"
    if full in ROOTS + PUBLIC_MODULES:
        return True  # a public module imported from its package
    return name in importlib.import_module(module).__all__


def test_docs_and_examples_import_only_public_names() -> None:
    sources = [(p, block) for p in doc_files() for block in python_blocks(p)]
    sources += [(p, p.read_text()) for p in sorted((REPO / "examples").rglob("*.py"))]
    assert sources
    private = [
        f"{path.relative_to(REPO)}: {module}" + (f".{name}" if name else "")
        for path, source in sources
        for module, name in imports(source)
        if not public(module, name)
    ]
    assert private == []


def test_the_checker_catches_private_imports() -> None:
    assert not public("wireproto.agent.turn", "Turn")
    assert not public("wireproto.transports._framed", "FramedStream")
    assert public("wireproto.transports", "FramedStream")
    assert public("wireproto.adapters.acp", "schema")
    assert not public("wireproto.agent", "new_id")


def test_vocabularies_are_modules_of_their_adapter() -> None:
    for module in VOCABULARIES:
        mod = importlib.import_module(module)
        assert isinstance(mod, types.ModuleType)
        parent = importlib.import_module(module.rsplit(".", 1)[0])
        assert parent.__name__ in ROOTS


def test_adapter_roots_export_what_their_role_subpackages_define() -> None:
    """Regrouping by role moved modules, never a public name: each role's main names are
    exported by the root and defined in their role's subpackage."""
    for root, role_packages in (
        ("wireproto.adapters.acp", ("agent", "client")),
        ("wireproto.adapters.wire", ("server", "client")),
    ):
        names = exported(root)
        homes = {getattr(value, "__module__", "") for value in names.values()}
        for role in role_packages:
            assert any(home.startswith(f"{root}.{role}.") for home in homes), (root, role)
    roles = {
        "wireproto.adapters.acp": {"AgentConnection": "agent", "ClientConnection": "client",
                                   "PromptTurn": "client", "connect_acp": "client"},
        "wireproto.adapters.wire": {"WireServer": "server", "WireClient": "client",
                                    "WireTurn": "client"},
    }
    for root, homes_by_name in roles.items():
        names = exported(root)
        for name, role in homes_by_name.items():
            assert names[name].__module__.startswith(f"{root}.{role}."), (root, name)
