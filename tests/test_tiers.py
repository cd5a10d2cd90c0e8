"""The test tiers themselves: markers by path, the default selection, the time unit."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest
import timeouts
from conftest import TESTS, TIERS, _matches, _slow_run

REPO = TESTS.parent


def test_paths_get_their_tier() -> None:
    def tiers(rel: str) -> set[str]:
        return {m for m, patterns in TIERS.items() if _matches(TESTS / rel, patterns)}

    assert tiers("interop/test_ts_sdk.py") == {"interop"}
    assert tiers("adapters/acp/client/test_client_sdk.py") == {"interop"}
    assert tiers("test_layers.py") == {"slow"}
    assert tiers("host/test_host.py") == {"slow"}
    assert tiers("adapters/test_fuzz.py") == {"slow"}
    assert tiers("inspector/test_browser_ui.py") == {"browser"}
    assert tiers("cli/test_connect.py") == {"slow"}
    assert tiers("rpc/test_peer.py") == set()


def test_end_to_end_runs_on_trio_through_a_process_are_slow() -> None:
    demo = TESTS / "adapters/acp/client/test_client_demo.py"
    trio_process = {"anyio_backend": "trio", "transport": "subprocess"}
    assert _slow_run(demo, "test_a_conversation", trio_process)
    for other in ({"anyio_backend": "asyncio", "transport": "subprocess"},
                  {"anyio_backend": "trio", "transport": "memory"}):
        assert not _slow_run(demo, "test_a_conversation", other)
    failure = TESTS / "adapters/test_turn_failure.py"
    assert _slow_run(failure, "test_acp_error_details_opt_out", {"anyio_backend": "trio"})
    assert not _slow_run(failure, "test_a_pending_permission_request_is_withdrawn",
                         {"anyio_backend": "trio"})


def test_markers_are_registered_and_deselected_by_default() -> None:
    text = (REPO / "pyproject.toml").read_text()
    for marker in ("slow", "interop", "browser", "asyncio_modes", "fastpath"):
        assert f'"{marker}:' in text
    assert "-m 'not slow and not interop and not browser and not asyncio_modes'" in text


def test_the_unit_scales_with_the_factor() -> None:
    code = "import timeouts; print(timeouts.UNIT, timeouts.units(3))"
    env = {**os.environ, "WIREPROTO_TESTS_TIMEOUT_FACTOR": "2"}
    out = subprocess.run(
        [sys.executable, "-c", code], cwd=TESTS, env=env, capture_output=True, text=True,
        check=True,
    ).stdout.split()
    base = timeouts.UNIT / timeouts.FACTOR  # one unit at factor 1
    assert [float(x) for x in out] == [base * 2, base * 6]


@pytest.mark.parametrize("bad", ["abc", "0", "-1"])
def test_a_bad_factor_is_refused_with_a_reason(bad: str) -> None:
    env = {**os.environ, "WIREPROTO_TESTS_TIMEOUT_FACTOR": bad}
    done = subprocess.run(
        [sys.executable, "-c", "import timeouts"], cwd=TESTS, env=env, capture_output=True,
        text=True, check=False,
    )
    assert done.returncode != 0 and "WIREPROTO_TESTS_TIMEOUT_FACTOR" in done.stderr


def test_ci_runs_every_tier() -> None:
    ci = (REPO / ".ci" / "run").read_text()
    assert "python -m pytest -q -m ''" in ci
    assert "WIREPROTO_NO_FAST_PATHS=1 python -m pytest -q\n" in ci
    assert "for version in 3.10 3.13" in ci
    assert "mkdocs build --strict" in ci
    assert Path(TESTS / "conftest.py").is_file()


def test_tests_wait_for_quiet_without_anyios_polling() -> None:
    # anyio.wait_all_tasks_blocked sleeps 0.1 s per check on asyncio; wireproto.testing's does not
    used = [
        path.relative_to(TESTS).as_posix() for path in TESTS.rglob("*.py")
        if path.name != "test_tiers.py" and re.search(
            r"anyio\.wait_all_tasks_blocked|from anyio import .*wait_all_tasks_blocked",
            path.read_text(encoding="utf-8"))
    ]
    assert used == []
