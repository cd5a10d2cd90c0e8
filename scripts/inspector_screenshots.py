"""Take the screenshots of docs/inspector.md: the inspector driving the demo agent.

Usage: ``python scripts/inspector_screenshots.py [OUT_DIR]`` (default
``docs/images``). Needs Debian's ``chromium`` and the ``playwright`` package
(both installed for the tests). Runs ``wireproto inspect -- wireproto acp`` in
a temporary folder, drives one session by clicking, and saves one PNG per
view: the conversation, the timeline with the detail pane, the raw composer
and a trace opened read-only.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
import tempfile
from pathlib import Path

from playwright.sync_api import Page, expect, sync_playwright

ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
        "--disable-background-networking", "--disable-component-update", "--disable-sync"]
WAIT = 30_000


def start(args: list[str], cwd: str) -> tuple[subprocess.Popen[bytes], str]:
    env = {**os.environ, "WIREPROTO_HOME": os.path.join(cwd, ".home")}
    proc = subprocess.Popen([sys.executable, "-m", "wireproto", "inspect", *args], cwd=cwd,
                            env=env, stdin=subprocess.DEVNULL, stderr=subprocess.PIPE)
    assert proc.stderr is not None
    for raw in proc.stderr:
        found = re.search(r"inspector on (http://\S+)", raw.decode())
        if found:
            return proc, found.group(1)
    raise RuntimeError("wireproto inspect printed no URL")


def say(page: Page, text: str, reply: str) -> None:
    page.fill("#prompt", text)
    page.press("#prompt", "Enter")
    expect(page.locator("#conversation .msg.agent").last).to_contain_text(reply, timeout=WAIT)


def live(page: Page, url: str, out: Path) -> None:
    page.goto(url)
    expect(page.locator("#state")).to_have_text("running", timeout=WAIT)
    say(page, "hello", "You said: hello")
    say(page, "/plan", "Plan done")
    page.fill("#prompt", "/write notes.txt first line")
    page.press("#prompt", "Enter")
    page.locator(".card.approval button", has_text="Allow").first.click(timeout=WAIT)
    expect(page.locator("#conversation .msg.agent").last).to_contain_text("Wrote", timeout=WAIT)
    say(page, "/think weighing the options", "Done thinking")
    page.fill("#prompt", "/")
    page.dispatch_event("#prompt", "input")
    page.screenshot(path=str(out / "inspector-conversation.png"))
    page.fill("#prompt", "")
    page.dispatch_event("#prompt", "input")
    page.fill("#f-method", "session/request_permission")
    page.locator("#rows .row").first.click()
    expect(page.locator("#meaning .m-type")).not_to_be_empty(timeout=WAIT)
    page.screenshot(path=str(out / "inspector-timeline.png"))
    page.fill("#f-method", "")
    page.click(".tab[data-tab=composer]")
    page.fill("#raw", '{"jsonrpc": "2.0", "method": "session/list", "params": {}}')
    page.click("#raw-send")
    expect(page.locator("#raw-status")).to_contain_text("answered", timeout=WAIT)
    page.screenshot(path=str(out / "inspector-composer.png"))
    with page.expect_download() as download:
        page.click("#export")
    download.value.save_as(str(out.parent / ".inspector-trace.jsonl"))


def main() -> None:
    out = Path(sys.argv[1] if len(sys.argv) > 1 else "docs/images").resolve()
    out.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory() as work, sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path="/usr/bin/chromium", args=ARGS)
        page = browser.new_page(viewport={"width": 1400, "height": 820}, accept_downloads=True)
        proc, url = start(["--", sys.executable, "-m", "wireproto", "acp"], work)
        try:
            live(page, url, out)
        finally:
            proc.terminate()
            proc.wait()
        trace = out.parent / ".inspector-trace.jsonl"
        proc, url = start(["--trace", str(trace)], work)
        try:
            page.goto(url)
            expect(page.locator("#state")).to_have_text("read-only trace", timeout=WAIT)
            page.screenshot(path=str(out / "inspector-trace.png"))
        finally:
            proc.terminate()
            proc.wait()
            trace.unlink()
        browser.close()
    print(f"screenshots in {out}")


if __name__ == "__main__":
    main()
