"""Fixtures for the inspector: a real ``wireproto inspect`` process and a headless Chromium.

:func:`inspector` starts ``python -m wireproto inspect ARGS`` with a private
``WIREPROTO_HOME``, waits for its one stderr line with the page's URL, and
stops it (SIGTERM, then SIGKILL) after the test. Browser tests use Debian's
``chromium`` through Playwright's own driver (never a downloaded browser).
"""

from __future__ import annotations

import os
import re
import shutil
import signal
import subprocess
import sys
import threading
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

HELPERS = Path(__file__).resolve().parents[1] / "helpers"
ARTIFACTS = Path(__file__).resolve().parents[1] / "artifacts" / "inspect"
WIREPROTO = [sys.executable, "-m", "wireproto"]
LIMIT = 30.0  # seconds: a generous bound for anything a test waits for
BANNER = re.compile(r"wireproto: inspector on (http://\S+)")
CHROMIUM = os.environ.get("WIREPROTO_CHROMIUM", "/usr/bin/chromium")
CHROMIUM_ARGS = [
    "--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
    "--disable-background-networking", "--disable-component-update", "--disable-sync",
]


class InspectorProc:
    """A running ``wireproto inspect``; ``url`` is the page with its token."""

    def __init__(self, args: list[str], env: dict[str, str], cwd: Path) -> None:
        self.popen = subprocess.Popen([*WIREPROTO, "inspect", *args], env=env, cwd=cwd,
                                      stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                                      stderr=subprocess.PIPE)
        self.lines: list[str] = []
        self._cond = threading.Condition()
        self._done = False
        self._thread = threading.Thread(target=self._read, daemon=True)
        self._thread.start()
        self.url = self.wait_for(BANNER).group(1)

    def _read(self) -> None:
        assert self.popen.stderr is not None
        for raw in self.popen.stderr:
            with self._cond:
                self.lines.append(raw.decode("utf-8", "replace").rstrip("\n"))
                self._cond.notify_all()
        with self._cond:
            self._done = True
            self._cond.notify_all()

    def wait_for(self, pattern: re.Pattern[str]) -> re.Match[str]:
        """The first stderr line matching ``pattern`` (waiting for it)."""
        found: list[re.Match[str]] = []

        def match() -> bool:
            found[:] = [m for line in self.lines if (m := pattern.search(line))]
            return bool(found) or self._done

        with self._cond:
            self._cond.wait_for(match, LIMIT)
        if not found:
            raise AssertionError(f"no stderr line matching {pattern.pattern!r}:\n"
                                 + "\n".join(self.lines))
        return found[0]

    @property
    def base(self) -> str:
        """``http://HOST:PORT`` without the path and token."""
        return self.url.split("/?", 1)[0]

    @property
    def token(self) -> str:
        return self.url.rsplit("token=", 1)[1]

    def stop(self) -> int:
        """SIGTERM, then SIGKILL if it does not end; returns the exit status."""
        if self.popen.poll() is None:
            self.popen.send_signal(signal.SIGTERM)
            try:
                self.popen.wait(LIMIT)
            except subprocess.TimeoutExpired:
                self.popen.kill()
        code = self.popen.wait()
        self._thread.join(LIMIT)
        if self.popen.stderr is not None and not self.popen.stderr.closed:
            self.popen.stderr.close()
        return code


@pytest.fixture
def inspector_env(tmp_path: Path) -> dict[str, str]:
    env = dict(os.environ)
    env["WIREPROTO_HOME"] = str(tmp_path / "home")
    env["HOME"] = str(tmp_path / "user-home")
    env.pop("WIREPROTO_WS_TOKEN", None)
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(HELPERS), env.get("PYTHONPATH")]))
    return env


@pytest.fixture
def start_inspector(
    inspector_env: dict[str, str], tmp_path: Path
) -> Iterator[Callable[..., InspectorProc]]:
    """``start_inspector(*args)``: a running inspector, stopped after the test."""
    started: list[InspectorProc] = []

    def start(*args: str) -> InspectorProc:
        proc = InspectorProc(list(args), inspector_env, tmp_path)
        started.append(proc)
        return proc

    yield start
    for proc in started:
        proc.stop()


@pytest.fixture(scope="module")
def browser() -> Iterator[Any]:
    """A headless Chromium (Debian's package) driven by Playwright.

    Module-scoped: Playwright's sync API keeps an event loop running in this
    thread while it is open, which the async tests of other modules cannot
    share.
    """
    if shutil.which(CHROMIUM) is None and not os.path.exists(CHROMIUM):
        reason = (f"the browser tests need Chromium at {CHROMIUM} "
                  "(apt-get install chromium; .ci/run installs it)")
        if os.environ.get("CI"):  # (CI never skips them)
            pytest.fail(reason)
        pytest.skip(reason)
    from playwright.sync_api import sync_playwright

    with sync_playwright() as playwright:
        chromium = playwright.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        try:
            yield chromium
        finally:
            chromium.close()


@pytest.fixture
def page(browser: Any, request: pytest.FixtureRequest) -> Iterator[Any]:
    """A fresh page; JavaScript errors, dialogs and CSP violations fail the test; a
    screenshot is kept at the end."""
    context = browser.new_context(viewport={"width": 1400, "height": 860},
                                  accept_downloads=True)
    tab = context.new_page()
    errors: list[str] = []
    tab.on("pageerror", lambda exc: errors.append(str(exc)))
    tab.on("dialog", lambda dialog: errors.append(f"dialog opened: {dialog.message}"))
    # the page must never trip its own Content-Security-Policy
    tab.on("console", lambda m: errors.append(m.text)
           if m.type == "error" and "Content Security Policy" in m.text else None)
    tab.errors = errors
    try:
        yield tab
    finally:
        ARTIFACTS.mkdir(parents=True, exist_ok=True)
        try:
            tab.screenshot(path=str(ARTIFACTS / f"{request.node.name}.png"))
        except Exception:  # a page already gone: nothing to keep
            pass
        context.close()
    assert not errors, f"errors on the page: {errors}"
