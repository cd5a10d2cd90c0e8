"""The inspector's page in a real browser (headless Chromium), against real agents.

Each test starts ``wireproto inspect`` as a process in front of a real agent
(the demo agent over ACP or Wire, or a small raw agent from tests/helpers),
opens the printed URL and clicks through the page like a person. Every page
must finish without a JavaScript error or a dialog (see ``page`` in
conftest.py); a screenshot of each test's last view is kept under
tests/artifacts/inspect/.
"""

from __future__ import annotations

import json
import sys
import time
from pathlib import Path
from typing import Any

import pytest
from playwright.sync_api import expect

from .conftest import ARTIFACTS, HELPERS, WIREPROTO

pytestmark = [pytest.mark.browser, pytest.mark.timeout(120)]

WAIT = 30_000  # ms: a generous bound for anything the page waits for
AGENTS = {
    "acp": [*WIREPROTO, "acp"],
    "wire": [*WIREPROTO, "wire"],
}


def opened(page: Any, url: str, state: str = "running") -> Any:
    """Open the inspector and wait until it reports ``state``."""
    page.goto(url)
    expect(page.locator("#state")).to_have_text(state, timeout=WAIT)
    return page


def prompt(page: Any, text: str) -> None:
    """Type ``text`` and send it: the page takes a prompt (and empties the box) only once the
    session it opens on an ACP agent exists, which may come after "running"."""
    page.fill("#prompt", text)
    deadline = time.monotonic() + WAIT / 1000
    page.press("#prompt", "Enter")
    while page.input_value("#prompt"):
        assert time.monotonic() < deadline, f"the inspector never took the prompt {text!r}"
        page.wait_for_timeout(50)
        page.press("#prompt", "Enter")


def agent_text(page: Any) -> Any:
    return page.locator("#conversation .msg.agent")


@pytest.mark.parametrize("protocol", ["acp", "wire"])
def test_demo_turn_streams_into_the_conversation(start_inspector: Any, page: Any,
                                                 protocol: str) -> None:
    inspector = start_inspector("--agent-protocol", "auto", "--", *AGENTS[protocol])
    opened(page, inspector.url)
    expect(page.locator("#protocol")).to_have_text(protocol.upper())
    prompt(page, "hello there")
    expect(agent_text(page).last).to_have_text("You said: hello there", timeout=WAIT)
    expect(page.locator("#conversation .stop").last).to_have_text(
        "[end_turn]" if protocol == "acp" else "[finished]")
    # slash commands from what the agent advertised, completed with Tab
    page.fill("#prompt", "/pl")
    page.dispatch_event("#prompt", "input")
    expect(page.locator("#completions .completion")).to_have_count(1)
    expect(page.locator("#completions .completion")).to_contain_text("/plan")
    page.press("#prompt", "Tab")
    expect(page.locator("#prompt")).to_have_value("/plan ")
    page.press("#prompt", "Enter")
    expect(agent_text(page).last).to_have_text("Plan done", timeout=WAIT)
    expect(page.locator("#conversation .plan").last.locator("li")).to_have_count(3)
    page.fill("#prompt", "/think pondering")
    page.press("#prompt", "Enter")
    expect(page.locator("#conversation .msg.thought").last).to_have_text("pondering",
                                                                          timeout=WAIT)
    page.screenshot(path=str(ARTIFACTS / f"conversation-{protocol}.png"))


@pytest.mark.parametrize(("protocol", "button"), [("acp", "Allow"), ("wire", "Approve")])
def test_an_approval_clicked_reaches_the_agent(start_inspector: Any, page: Any, tmp_path: Path,
                                               protocol: str, button: str) -> None:
    inspector = start_inspector("--agent-protocol", protocol, "--", *AGENTS[protocol])
    opened(page, inspector.url)
    target = tmp_path / "written.txt"
    prompt(page, f"/write {target} hello from the page")
    approval = page.locator("#conversation .card.approval")
    expect(approval).to_be_visible(timeout=WAIT)
    expect(approval.locator(".diff .diff-line.add")).to_have_text("+ hello from the page")
    assert not target.exists()  # nothing is written before the click
    approval.get_by_role("button", name=button, exact=True).click()
    expect(agent_text(page).last).to_have_text(f"Wrote {target}", timeout=WAIT)
    assert target.read_text() == "hello from the page"
    expect(approval.locator(".answered-note")).to_contain_text("answered")
    expect(page.locator("#conversation .card.tool").last).to_have_attribute(
        "data-status", "completed")
    page.screenshot(path=str(ARTIFACTS / f"approval-{protocol}.png"))


def test_a_wire_question_is_answered_with_the_form(start_inspector: Any, page: Any) -> None:
    inspector = start_inspector("--agent-protocol", "wire", "--", *WIREPROTO, "wire",
                                "--agent", "asking_agent:AskingAgent")
    opened(page, inspector.url)
    prompt(page, "/ask Which colour? red|green|blue")
    form = page.locator("#conversation .card.question")
    expect(form).to_be_visible(timeout=WAIT)
    form.get_by_label("blue").check()
    form.get_by_role("button", name="Submit").click()
    expect(agent_text(page).last).to_have_text("You chose: blue", timeout=WAIT)
    # the timeline names Wire requests and events by their type
    page.fill("#f-method", "QuestionRequest")
    expect(page.locator("#rows .row .c-method")).to_have_text(
        ["request QuestionRequest", "request QuestionRequest"])
    expect(page.locator("#rows .row .c-kind")).to_have_text(["request", "response"])
    page.fill("#f-method", "event TurnBegin")
    expect(page.locator("#rows .row")).to_have_count(1)


def test_an_acp_elicitation_is_answered_with_the_form(start_inspector: Any, page: Any) -> None:
    inspector = start_inspector("--", sys.executable, str(HELPERS / "inspect_agent.py"))
    opened(page, inspector.url)
    expect(page.locator("#protocol")).to_have_text("ACP")
    expect(page.locator("#session option")).to_have_count(1, timeout=WAIT)
    prompt(page, "/ask")
    form = page.locator("#conversation .card.question")
    expect(form).to_contain_text("Which colour?", timeout=WAIT)
    form.locator("select[name=colour]").select_option("green")
    form.get_by_role("button", name="Submit").click()
    expect(agent_text(page).last).to_have_text("You chose: green", timeout=WAIT)
    page.screenshot(path=str(ARTIFACTS / "question-acp.png"))


@pytest.mark.parametrize("protocol", ["acp", "wire"])
def test_cancel_during_slow(start_inspector: Any, page: Any, protocol: str) -> None:
    inspector = start_inspector("--agent-protocol", protocol, "--", *AGENTS[protocol])
    opened(page, inspector.url)
    prompt(page, "/slow 1000000")  # (a turn that only the cancel ends)
    expect(agent_text(page).last).to_contain_text("tick 2", timeout=WAIT)
    expect(page.locator("#cancel")).to_be_enabled()
    page.click("#cancel")
    expect(page.locator("#conversation .stop").last).to_have_text("[cancelled]", timeout=WAIT)
    expect(page.locator("#cancel")).to_be_disabled()


def test_the_timeline_pairs_requests_and_responses(start_inspector: Any, page: Any) -> None:
    inspector = start_inspector("--agent-protocol", "acp", "--", *AGENTS["acp"])
    opened(page, inspector.url)
    prompt(page, "pair me")
    expect(agent_text(page).last).to_have_text("You said: pair me", timeout=WAIT)
    page.fill("#f-method", "session/prompt")
    rows = page.locator("#rows .row")
    expect(rows).to_have_count(2)
    request, response = rows.nth(0), rows.nth(1)
    expect(request.locator(".c-kind")).to_have_text("request")
    expect(response.locator(".c-kind")).to_have_text("response")
    request_seq = request.locator(".c-seq").inner_text()
    response_seq = response.locator(".c-seq").inner_text()
    expect(request.locator(".c-lat")).to_contain_text(f"#{response_seq}")
    expect(response.locator(".c-lat")).to_contain_text(f"#{request_seq}")
    expect(response.locator(".c-lat")).to_contain_text(" ms")
    request.click()
    expect(page.locator("#detail-head")).to_contain_text(f"answered by #{response_seq}")
    expect(page.locator("#meaning .m-type")).to_have_text("session/prompt: PromptRequest",
                                                          timeout=WAIT)
    expect(page.locator("#meaning .m-ok")).to_have_text("valid")
    response.click()
    expect(page.locator("#meaning .m-type")).to_have_text(
        "session/prompt result: PromptResponse", timeout=WAIT)
    page.screenshot(path=str(ARTIFACTS / "timeline-detail.png"))
    # direction, session and text filters
    page.fill("#f-method", "")
    page.select_option("#f-dir", "send")
    expect(page.locator("#rows .row.recv")).to_have_count(0)
    page.select_option("#f-dir", "")
    page.fill("#f-text", "pair me")
    matching = page.evaluate("window.inspector.model.records.filter("
                             "r => JSON.stringify(r.msg).includes('pair me')).length")
    assert matching >= 1
    expect(page.locator("#rows .row")).to_have_count(matching)
    for row in page.locator("#rows .row").all():
        row.click()
        expect(page.locator("#json")).to_contain_text("pair me")
    page.fill("#f-text", "")
    # pause holds new messages back; resume shows them; clear empties the view
    total = page.evaluate("window.inspector.model.records.length")
    page.click("#pause")
    prompt(page, "while paused")
    expect(agent_text(page).last).to_have_text("You said: while paused", timeout=WAIT)
    expect(page.locator("#count")).to_contain_text("new while paused")
    assert page.locator("#rows .row").last.locator(".c-seq").inner_text() == str(total - 1)
    page.click("#pause")
    expect(page.locator("#count")).not_to_contain_text("paused")
    last = page.evaluate("window.inspector.model.records.length") - 1
    expect(page.locator("#rows .row").last.locator(".c-seq")).to_have_text(str(last))
    page.click("#clear")
    expect(page.locator("#rows .row")).to_have_count(0)


def test_a_stored_session_is_loaded_and_replayed(start_inspector: Any, page: Any) -> None:
    inspector = start_inspector("--agent-protocol", "acp", "--", *AGENTS["acp"])
    opened(page, inspector.url)
    expect(page.locator("#session option")).to_have_count(1, timeout=WAIT)
    first = page.locator("#session").input_value()
    prompt(page, "remember me")
    expect(agent_text(page).last).to_have_text("You said: remember me", timeout=WAIT)
    page.click("#new-session")
    expect(page.locator("#session option")).to_have_count(2, timeout=WAIT)
    expect(page.locator("#session")).not_to_have_value(first)
    expect(agent_text(page)).to_have_count(0)
    page.click("#list-sessions")
    expect(page.locator("#stored-session option")).not_to_have_count(0, timeout=WAIT)
    page.select_option("#stored-session", first)
    page.click("#load-session")
    expect(page.locator("#session")).to_have_value(first, timeout=WAIT)
    expect(page.locator("#conversation .msg.user").first).to_have_text("remember me")
    expect(agent_text(page)).to_have_count(1)  # replayed once, not added to the old view
    expect(agent_text(page).first).to_have_text("You said: remember me")


def test_session_options_are_set_from_the_page(start_inspector: Any, page: Any) -> None:
    inspector = start_inspector("--agent-protocol", "acp", "--", *AGENTS["acp"])
    opened(page, inspector.url)
    mode = page.locator("#options select[data-option=mode]")
    expect(mode).to_have_value("ask", timeout=WAIT)
    mode.select_option("code")
    expect(page.locator("#conversation .note").last).to_have_text("mode: code", timeout=WAIT)
    thinking = page.locator("#options input[data-option=thinking]")
    expect(thinking).not_to_be_checked()
    thinking.check()
    records = page.locator("#rows .row .c-method", has_text="session/set_config_option")
    expect(records).to_have_count(4, timeout=WAIT)  # two requests, two responses
    expect(thinking).to_be_checked()


def test_validation_errors_show_in_the_detail_pane(start_inspector: Any, page: Any) -> None:
    inspector = start_inspector("--", sys.executable, str(HELPERS / "inspect_agent.py"))
    opened(page, inspector.url)
    expect(page.locator("#session option")).to_have_count(1, timeout=WAIT)
    prompt(page, "/bad")
    expect(page.locator("#conversation .stop").last).to_have_text("[end_turn]", timeout=WAIT)
    page.fill("#f-text", '"status":7')
    expect(page.locator("#rows .row")).to_have_count(1)
    page.locator("#rows .row").first.click()
    expect(page.locator("#meaning .m-type")).to_have_text(
        "session/update: SessionNotification / Plan", timeout=WAIT)
    expect(page.locator("#meaning .m-errors li").first).to_contain_text("status")
    expect(page.locator("#meaning .m-ok")).to_have_count(0)


def _record_trace(tmp_path: Path, env: dict[str, str]) -> Path:
    """A real trace: ``wireproto connect acp --script`` against the demo agent."""
    import subprocess

    script = tmp_path / "script.txt"
    script.write_text("hello trace\n/plan\n/write notes.txt first line\n")  # (an approval)
    trace = tmp_path / "session.jsonl"
    subprocess.run([*WIREPROTO, "connect", "acp", "--script", str(script), "--trace",
                    str(trace), "--", *AGENTS["acp"]], env=env, cwd=tmp_path, check=True,
                   capture_output=True, timeout=60)
    return trace


def test_a_trace_file_loads_read_only(start_inspector: Any, page: Any, tmp_path: Path,
                                      inspector_env: dict[str, str]) -> None:
    trace = _record_trace(tmp_path, inspector_env)
    lines = [json.loads(line) for line in trace.read_text().splitlines()]
    inspector = start_inspector("--trace", str(trace))
    opened(page, inspector.url, state="read-only trace")
    expect(page.locator("#protocol")).to_have_text("ACP")
    expect(page.locator("#count")).to_have_text(f"{len(lines)} shown / {len(lines)}",
                                                timeout=WAIT)
    expect(agent_text(page).first).to_have_text("You said: hello trace")
    # what acts on the agent is hidden, not shown disabled
    card = page.locator(".card.approval").first
    expect(card).to_contain_text("answered: reject")  # the answer stays, its buttons go
    expect(card.locator("button")).to_have_count(4)
    for hidden in ("#prompt-form", "#send", "#cancel", "#new-session", "#list-sessions",
                   "#options", ".card.approval .buttons"):
        expect(page.locator(hidden).first).to_be_hidden()
    assert page.locator("button:visible:disabled, input:visible:disabled, "
                        "select:visible:disabled, textarea:visible:disabled").count() == 0
    page.click(".tab[data-tab=composer]")
    expect(page.locator("#pending")).to_be_visible()  # what the agent asked stays readable
    for hidden in ("#raw", "#fresh", "#raw-send"):
        expect(page.locator(hidden)).to_be_hidden()
    assert page.locator("button:visible:disabled, input:visible:disabled, "
                        "select:visible:disabled, textarea:visible:disabled").count() == 0
    page.click(".tab[data-tab=conversation]")
    refused = page.evaluate(
        "window.inspector.app.send({jsonrpc: '2.0', method: 'x'}, true)"
        ".then(() => 'sent', (e) => e.message)")
    assert "read-only" in refused
    page.screenshot(path=str(ARTIFACTS / "trace-read-only.png"))
    with page.expect_download() as download:
        page.click("#export")
    assert Path(download.value.path()).read_bytes() == trace.read_bytes()  # byte for byte
    # once the inspector is gone, the page exports what it holds
    inspector.stop()
    expect(page.locator("#state")).to_have_text("disconnected", timeout=WAIT)
    with page.expect_download() as download:
        page.click("#export")
    exported = [json.loads(line) for line in Path(download.value.path()).read_text().splitlines()]
    assert [(e["dir"], e["msg"]) for e in exported] == [(e["dir"], e["msg"]) for e in lines]
    assert [round(e["t"], 6) for e in exported] == [round(e["t"], 6) for e in lines]


def test_markup_from_the_agent_stays_text(start_inspector: Any, page: Any) -> None:
    inspector = start_inspector("--", sys.executable, str(HELPERS / "inspect_agent.py"))
    opened(page, inspector.url)
    expect(page.locator("#session option")).to_have_count(1, timeout=WAIT)
    prompt(page, "/xss")
    expect(page.locator("#conversation .card.unknown-request")).to_be_visible(timeout=WAIT)
    expect(page.locator("#conversation .stop").last).to_have_text("[end_turn]")
    payload = "<img src=x onerror="
    expect(agent_text(page).last).to_contain_text(payload)
    expect(agent_text(page).last).to_contain_text("<script>window.__xss")
    expect(page.locator("#conversation .msg.thought").last).to_contain_text(payload)
    expect(page.locator("#conversation .card.tool .tool-title")).to_contain_text(payload)
    expect(page.locator("#conversation .diff .diff-path")).to_contain_text(payload)
    expect(page.locator("#conversation .plan li").last).to_contain_text(payload)
    expect(page.locator("#conversation .card.approval button").first).to_contain_text(payload)
    expect(page.locator("#conversation .card.unknown-request")).to_contain_text(payload)
    # and in the timeline, the detail pane and the composer
    page.fill("#f-text", "onerror")
    page.locator("#rows .row").first.click()
    expect(page.locator("#json")).to_contain_text(payload)
    page.click(".tab[data-tab=composer]")
    expect(page.locator("#pending .card")).to_have_count(2)
    expect(page.locator("#pending")).to_contain_text(payload)
    prompt_echo = "<script>window.__xss=1</script><img src=x onerror=window.__xss=1>"
    page.click(".tab[data-tab=conversation]")
    prompt(page, prompt_echo)
    expect(agent_text(page).last).to_have_text(f"echo: {prompt_echo}", timeout=WAIT)
    expect(page.locator("#conversation .usage").last).to_have_text(
        'usage: {"used":1234,"size":200000}')
    page.evaluate("new Promise((done) => setTimeout(done, 200))")  # let any handler run
    assert page.evaluate("window.__xss") is None
    assert page.evaluate("document.querySelectorAll('img').length") == 0
    assert page.evaluate("document.querySelectorAll('script').length") == 1  # our module


def test_the_raw_composer_sends_and_answers_by_hand(start_inspector: Any, page: Any) -> None:
    inspector = start_inspector("--", sys.executable, str(HELPERS / "inspect_agent.py"))
    opened(page, inspector.url)
    expect(page.locator("#session option")).to_have_count(1, timeout=WAIT)
    prompt(page, "/xss")
    page.click(".tab[data-tab=composer]")
    pending = page.locator("#pending .card")
    expect(pending).to_have_count(2, timeout=WAIT)
    unknown = page.locator("#pending .card", has_text="id 902")
    unknown.get_by_role("button", name="Answer with an error").click()
    unknown.get_by_role("button", name="Send answer").click()
    expect(pending).to_have_count(1, timeout=WAIT)
    answer = page.evaluate("window.inspector.model.records.filter("
                           "r => r.dir === 'send' && r.id === 902).map(r => r.msg)")
    assert answer[0]["error"]["code"] == -32601
    # a request with a fresh id, and its answer
    page.fill("#raw", json.dumps({"jsonrpc": "2.0", "method": "session/list", "params": {}}))
    page.click("#raw-send")
    expect(page.locator("#raw-status")).to_contain_text("answered", timeout=WAIT)
    expect(page.locator("#raw-answer")).to_contain_text("Method not found: session/list")
    page.fill("#raw", "{not json")
    page.click("#raw-send")
    expect(page.locator("#raw-status")).to_contain_text("not JSON")
    page.screenshot(path=str(ARTIFACTS / "composer.png"))


def test_the_page_refuses_a_missing_token(start_inspector: Any, page: Any,
                                          tmp_path: Path, inspector_env: dict[str, str]) -> None:
    inspector = start_inspector("--", *AGENTS["acp"])
    for url in (f"{inspector.base}/", f"{inspector.base}/?token=wrong"):
        response = page.goto(url)
        assert response.status == 401
        expect(page.locator("body")).to_contain_text("needs its token")
        assert page.evaluate("typeof window.inspector") == "undefined"  # no script ran
    # the page's own origin, without the token, cannot open the websocket
    page.goto(f"{inspector.base}/static/inspector.css")
    outcome = page.evaluate("""(url) => new Promise((done) => {
        const ws = new WebSocket(url);
        ws.onopen = () => done('open');
        ws.onerror = () => done('refused');
    })""", inspector.base.replace("http:", "ws:") + "/ws")
    assert outcome == "refused"
    opened(page, inspector.url)  # and with it, the page works


def test_ten_thousand_messages(start_inspector: Any, page: Any, tmp_path: Path) -> None:
    """Loads a 10,000-message trace; reports render and filter times (not asserted)."""
    trace = tmp_path / "big.jsonl"
    lines = []
    for n in range(2500):
        t = n * 0.01
        lines.append({"t": t, "dir": "send", "msg": {
            "jsonrpc": "2.0", "id": n, "method": "session/prompt",
            "params": {"sessionId": f"s{n % 3}", "prompt": [{"type": "text", "text": f"p{n}"}]}}})
        for k in range(2):
            lines.append({"t": t + 0.001 * (k + 1), "dir": "recv", "msg": {
                "jsonrpc": "2.0", "method": "session/update", "params": {
                    "sessionId": f"s{n % 3}", "update": {
                        "sessionUpdate": "agent_message_chunk",
                        "content": {"type": "text", "text": f"chunk {n}.{k} "}}}}})
        lines.append({"t": t + 0.005, "dir": "recv", "msg": {
            "jsonrpc": "2.0", "id": n, "result": {"stopReason": "end_turn"}}})
    trace.write_text("".join(json.dumps(line) + "\n" for line in lines))
    inspector = start_inspector("--trace", str(trace))
    page.goto(inspector.url)
    expect(page.locator("#count")).to_have_text("10000 shown / 10000", timeout=WAIT * 2)
    render = page.evaluate("""() => new Promise((done) => requestAnimationFrame(() =>
        done(performance.now())))""")
    expect(page.locator("#count")).to_have_text("10000 shown / 10000")
    timings = page.evaluate("""() => {
        const tl = window.inspector.timeline;
        const input = document.getElementById('f-method');
        const t0 = performance.now();
        input.value = 'session/prompt';
        input.dispatchEvent(new Event('input'));
        tl.draw();
        const t1 = performance.now();
        const methodRows = tl.visible.length;
        const text = document.getElementById('f-text');
        text.value = 'chunk 2499';
        text.dispatchEvent(new Event('input'));
        tl.draw();
        const t2 = performance.now();
        return {method_ms: t1 - t0, method_rows: methodRows,
                text_ms: t2 - t1, text_rows: tl.visible.length};
    }""")
    assert timings["method_rows"] == 5000, timings  # 2,500 requests and their 2,500 responses
    assert timings["text_rows"] == 0  # no prompt message mentions a chunk
    page.fill("#f-method", "")
    expect(page.locator("#count")).to_have_text("2 shown / 10000")
    report = {"messages": 10000, "navigation_to_all_rendered_ms": round(render, 1),
              "filter_by_method_ms": round(timings["method_ms"], 1),
              "filter_by_text_ms": round(timings["text_ms"], 1)}
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    (ARTIFACTS / "timeline-10k.json").write_text(json.dumps(report, indent=1))
    print(f"\ninspector timeline, 10,000 messages: {report}")
