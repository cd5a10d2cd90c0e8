"""The documentation site builds in strict mode: what ``mkdocs build --strict`` checks.

Building the site needs the ``docs`` extra, so these tests check the two things that
broke it without it: a page of ``docs/`` missing from the navigation, and a Google-style
``Args:`` entry that names no parameter of its function (the API reference is
generated from the docstrings, and strict mode fails on both).
"""

from __future__ import annotations

import importlib
import importlib.util
import inspect
import pkgutil
import re
from pathlib import Path
from typing import Any

import wireproto

REPO = Path(__file__).resolve().parents[2]
ENTRY = re.compile(r"^(\s+)(\*{0,2}\w+)(?:\s*\([^)]*\))?:(?:\s|$)")


def nav_pages() -> list[str]:
    text = (REPO / "mkdocs.yml").read_text()
    nav = text[text.index("\nnav:") :]
    return re.findall(r"([\w/.-]+\.md)\s*$", nav, re.M)


def test_every_page_is_in_the_navigation_once() -> None:
    pages = {p.relative_to(REPO / "docs").as_posix() for p in (REPO / "docs").rglob("*.md")}
    listed = nav_pages()
    assert sorted(pages - set(listed)) == []
    assert sorted(set(listed) - pages) == []
    assert sorted(page for page in set(listed) if listed.count(page) > 1) == []


def args_entries(doc: str) -> list[str]:
    """The parameter names of the docstring's ``Args:`` section."""
    names: list[str] = []
    lines = doc.expandtabs().splitlines()
    for i, line in enumerate(lines):
        if line.strip() not in ("Args:", "Arguments:", "Parameters:"):
            continue
        indent: str | None = None
        for entry in lines[i + 1 :]:
            if not entry.strip():
                continue
            if len(entry) - len(entry.lstrip()) <= len(line) - len(line.lstrip()):
                break  # the section ended
            match = ENTRY.match(entry)
            if indent is None:
                indent = entry[: len(entry) - len(entry.lstrip())]
            if entry.startswith(indent) and not entry[len(indent)].isspace():
                names.append(match.group(2).lstrip("*") if match else entry.strip())
    return names


def documented_callables() -> list[tuple[str, Any]]:
    found: list[tuple[str, Any]] = []
    for info in pkgutil.walk_packages(wireproto.__path__, "wireproto."):
        if "._" in info.name or info.name.endswith("__main__"):
            continue
        module = importlib.import_module(info.name)
        for name, obj in vars(module).items():
            if name.startswith("_") or getattr(obj, "__module__", None) != info.name:
                continue
            found.append((f"{info.name}.{name}", obj))
            if inspect.isclass(obj):
                found.extend(
                    (f"{info.name}.{name}.{attr}", member)
                    for attr, member in vars(obj).items()
                    if (attr == "__init__" or not attr.startswith("_")) and callable(member)
                )
    return found


def test_every_args_entry_names_a_parameter() -> None:
    bad = []
    for qualname, obj in documented_callables():
        doc = inspect.getdoc(obj) or ""
        if "Args:" not in doc:
            continue
        try:
            params = set(inspect.signature(obj).parameters)  # a class: its __init__'s
        except (TypeError, ValueError):
            continue
        bad += [f"{qualname}: {name}" for name in args_entries(doc) if name not in params]
    assert bad == []


def test_the_api_reference_shows_docstring_roles_as_plain_code() -> None:
    spec = importlib.util.spec_from_file_location("mkdocs_roles", REPO / "scripts/mkdocs_roles.py")
    assert spec is not None and spec.loader is not None
    hook = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(hook)
    html = ("<p>Raises :class:<code>~wireproto.errors.ProcessExited</code>, see "
            ":meth:<code>Peer.request</code> and <code>~/.wireproto</code>.</p>")
    assert hook.on_page_content(html) == (
        "<p>Raises <code>ProcessExited</code>, see <code>Peer.request</code> and "
        "<code>~/.wireproto</code>.</p>")
    assert "scripts/mkdocs_roles.py" in (REPO / "mkdocs.yml").read_text()
