"""``Router.request`` / ``Router.notification`` are checked by mypy against the params type."""

from __future__ import annotations

from pathlib import Path

import pytest

mypy_api = pytest.importorskip("mypy.api")

pytestmark = pytest.mark.slow  # one mypy run

SOURCE = '''
import msgspec
from wireproto.rpc import Router

class AddParams(msgspec.Struct):
    a: int
    b: int

class Other(msgspec.Struct):
    c: str

router = Router()

@router.request("add", AddParams)
async def add(p: AddParams) -> int:
    return p.a + p.b

@router.request("wrong", AddParams)
async def wrong(p: Other) -> int:  # the handler does not take AddParams
    return 0

@router.notification("note", AddParams)
async def note(p: Other) -> None:
    return None

@router.request("raw")
async def raw(p: object) -> object:
    return p
'''


def test_a_handler_of_the_wrong_params_type_is_a_type_error(tmp_path: Path) -> None:
    module = tmp_path / "routes.py"
    module.write_text(SOURCE)
    out, err, status = mypy_api.run(
        ["--strict", "--no-incremental", "--cache-dir", str(tmp_path / "cache"), str(module)]
    )
    errors = [line for line in out.splitlines() if ": error:" in line]
    assert status == 1, out + err
    lines = SOURCE.splitlines()
    wanted = {str(n) for n, text in enumerate(lines, 1) if text.startswith(
        ('@router.request("wrong"', '@router.notification("note"'))}
    assert len(wanted) == 2
    assert {line.split(":")[1] for line in errors} == wanted, out
