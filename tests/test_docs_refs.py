"""The documentation stands on its own: every reference points inside the repository.

Docstrings, comments, the README and ``docs/`` refer to protocol rules as
``protocol-wire.md#<section>`` / ``protocol-acp.md#<section>`` (or any
``docs/<page>.md#<section>``); each such section must be a heading of that page.
References to documents that are not in the repository (section signs,
``IO-nn`` requirement ids, design proposal numbers, spec file names) fail.
"""

from __future__ import annotations

import re
import unicodedata
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
DOCS = REPO / "docs"

# What is scanned: the package (but not the vendored official schema), the
# README, the docs, the examples and the tests themselves.
SCANNED = sorted(
    [
        *(p for p in (REPO / "wireproto").rglob("*.py")),
        REPO / "README.md",
        *DOCS.rglob("*.md"),
        *(REPO / "examples").rglob("*.py"),
        *(REPO / "tests").rglob("*.py"),
    ]
)

OUTSIDE = re.compile(
    r"§\s*\d"  # numbered sections of documents we do not ship
    r"|\bIO-\d+"  # requirement ids of an outside list
    r"|\bKLIP-?\d+"  # an upstream design proposal used as a citation
    r"|(?<![\w/-])(?:spec/)?(?:wire|acp|interop-notes|design|demo-agent)\.md\b"
    r"|\bspec/demo-agent"
)
REFERENCE = re.compile(r"(?:docs/)?([a-z][a-z0-9-]*)\.md#([A-Za-z0-9_-]+)")
THIS_FILE = Path(__file__).resolve()


def slugify(heading: str) -> str:
    """The anchor MkDocs gives a heading (Python-Markdown's ``toc`` slugify)."""
    text = unicodedata.normalize("NFKD", heading).encode("ascii", "ignore").decode()
    text = re.sub(r"[^\w\s-]", "", text).strip().lower()
    return re.sub(r"[-\s]+", "-", text)


def anchors(page: Path) -> set[str]:
    found = set()
    in_code = False
    for line in page.read_text().splitlines():
        if line.startswith("```"):
            in_code = not in_code
        elif not in_code and (match := re.match(r"#{1,6}\s+(.*?)\s*#*$", line)):
            found.add(slugify(match.group(1)))
    return found


def test_slugify_matches_mkdocs() -> None:
    assert slugify("Type payload envelope") == "type-payload-envelope"
    assert slugify("`$/cancel_request` and more") == "cancel_request-and-more"
    assert slugify("Meta and extensions") == "meta-and-extensions"


@pytest.mark.parametrize("path", SCANNED, ids=lambda p: str(p.relative_to(REPO)))
def test_no_reference_to_documents_outside_the_repository(path: Path) -> None:
    if path == THIS_FILE:
        return
    bad = [
        f"{path.relative_to(REPO)}:{n}: {line.strip()}"
        for n, line in enumerate(path.read_text().splitlines(), 1)
        if OUTSIDE.search(line)
    ]
    assert bad == []


def test_every_section_reference_exists() -> None:
    pages = {page.stem: anchors(page) for page in DOCS.rglob("*.md")}
    assert {"protocol-wire", "protocol-acp", "architecture"} <= set(pages)
    broken = []
    count = 0
    for path in SCANNED:
        if path == THIS_FILE:
            continue
        for n, line in enumerate(path.read_text().splitlines(), 1):
            for page, anchor in REFERENCE.findall(line):
                if page not in pages:
                    continue  # another file (e.g. benchmarks/README.md): not a docs page
                count += 1
                if anchor not in pages[page]:
                    broken.append(f"{path.relative_to(REPO)}:{n}: {page}.md#{anchor}")
    assert broken == []
    assert count > 50  # the code does cite the protocol pages


def test_checks_catch_bad_references() -> None:
    assert OUTSIDE.search("see acp.md section 3")
    assert OUTSIDE.search("(spec §13.6)")
    assert OUTSIDE.search("interop-notes IO-44")
    assert not OUTSIDE.search("see protocol-acp.md#ordering and docs/demo-agent.md")
    wire = anchors(DOCS / "protocol-wire.md")
    assert "visible-resolution" in wire and "no-such-section" not in wire


def test_the_architecture_table_is_the_layering_rule() -> None:
    """docs/architecture.md's "may import" column is tests/test_layers.py's INTERNAL table."""
    from test_layers import INTERNAL

    table = {}
    for line in (DOCS / "architecture.md").read_text().splitlines():
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if len(cells) == 4 and re.fullmatch(r"`\w+`", cells[0]):
            allowed = () if cells[3] == "nothing" else tuple(re.findall(r"`([\w.]+)`", cells[3]))
            table[cells[0].strip("`")] = set(allowed)
    rules = {k: set(v) for k, v in INTERNAL.items() if not k.startswith("_") and v != ("*",)}
    rules.pop("__init__", None)
    assert table == rules
