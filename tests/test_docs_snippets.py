"""Every Python snippet of ``docs/`` and of the README runs.

The ``python`` code blocks of a page run in order, in one namespace (a later
block may use what an earlier one defined), in a temporary directory with
``WIREPROTO_HOME`` inside it. Top-level ``await`` is allowed (the page then
runs in an event loop). A block that cannot run on its own (it serves on this
process's stdio, say) is preceded by ``<!-- not executed: REASON -->``; such
blocks must stay rare, and are still compiled.
"""

from __future__ import annotations

import ast
import re
import types
from pathlib import Path

import anyio
import pytest

REPO = Path(__file__).resolve().parents[1]
DOCS = REPO / "docs"
BLOCK = re.compile(
    r"(?:<!--\s*not executed:\s*(?P<why>[^>]*?)\s*-->\s*\n)?^```python\n(?P<code>.*?)^```",
    re.M | re.S,
)
PAGES = [REPO / "README.md",
         *sorted(p for p in DOCS.rglob("*.md") if "```python" in p.read_text())]
MAX_NOT_EXECUTED = 4


def blocks(page: Path) -> list[tuple[str | None, str]]:
    return [(m.group("why"), m.group("code")) for m in BLOCK.finditer(page.read_text())]


def test_pages_with_snippets_are_found() -> None:
    assert {"README.md", "index.md", "api.md", "clients.md"} <= {p.name for p in PAGES}


def test_few_snippets_are_exempt() -> None:
    exempt = [(p.name, why) for p in PAGES for why, _ in blocks(p) if why is not None]
    assert all(why for _, why in exempt), "give the reason a block is not executed"
    assert len(exempt) <= MAX_NOT_EXECUTED, exempt


@pytest.mark.parametrize("page", PAGES, ids=lambda p: str(p.relative_to(REPO)))
def test_snippets_run(page: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("WIREPROTO_HOME", str(tmp_path / "home"))
    monkeypatch.delenv("WIREPROTO_AGENT", raising=False)  # the snippets spawn the demo agent
    namespace: dict[str, object] = {"__name__": f"docs_{page.stem.replace('-', '_')}"}
    module = types.ModuleType(str(namespace["__name__"]))
    namespace = module.__dict__
    flags = ast.PyCF_ALLOW_TOP_LEVEL_AWAIT
    for n, (why, code) in enumerate(blocks(page), 1):
        compiled = compile(code, f"{page.name} (block {n})", "exec", flags=flags)
        if why is not None:
            continue
        if compiled.co_flags & 0x80:  # CO_COROUTINE: the block awaits at top level

            async def run(compiled: types.CodeType = compiled) -> None:
                await eval(compiled, namespace)

            anyio.run(run)
        else:
            exec(compiled, namespace)
