"""Interop: official SDK clients drive agents of the other protocol through ``wireproto proxy``.

* The official ACP TypeScript client (``ts_proxy_client.mjs``) drives a Wire agent
  (the demo agent over Wire) behind ``proxy --serve acp``: streamed text, an approved
  and a rejected tool call, a cancel, and a ``session/load`` replay.
* The official Wire SDK (npm ``@moonshot-ai/kimi-agent-sdk``, ``wire_sdk_client.mjs``)
  drives an ACP agent built on the official TypeScript SDK (``ts_agent.mjs``) behind
  ``proxy --serve wire``, spawned the SDK's way (``EXE --session ID --work-dir DIR
  --wire ...``, EXE being a two-line wrapper script around ``wireproto proxy``), then
  a Wire ``replay`` of the session from a new process.
"""

from __future__ import annotations

import json
import os
import shlex
import subprocess
import sys
from pathlib import Path
from typing import Any

INTEROP = Path(__file__).resolve().parent
PYTHON = [sys.executable, "-m", "wireproto"]


def _env(tmp_path: Path) -> dict[str, str]:
    return {**os.environ, "WIREPROTO_HOME": str(tmp_path / "home")}


def _node(node: str, args: list[str], env: dict[str, str]) -> dict[str, Any]:
    done = subprocess.run([node, *args], cwd=INTEROP, env=env, capture_output=True, text=True,
                          timeout=120, check=False)
    assert done.returncode == 0, done.stderr[-3000:]
    summary: dict[str, Any] = json.loads(done.stdout.strip().splitlines()[-1])
    return summary


def wrapper(tmp_path: Path, agent: list[str], name: str = "proxy.sh") -> Path:
    """An executable for the Wire SDK: ``wireproto proxy`` with the SDK's arguments."""
    script = tmp_path / name
    proxy = [*PYTHON, "proxy", "--log-level", "warning", "--agent-protocol", "acp"]
    script.write_text(f'#!/bin/sh\nexec {shlex.join(proxy)} "$@" -- {shlex.join(agent)}\n')
    script.chmod(0o755)
    return script


def test_ts_acp_client_drives_a_wire_agent_through_the_proxy(
    node: str, node_modules: Path, tmp_path: Path
) -> None:
    cmd = [*PYTHON, "proxy", "--log-level", "warning", "--serve", "acp", "--", *PYTHON, "wire"]
    steps = [
        {"prompt": "hello"},
        {"prompt": "/write ok.txt yes", "permission": "allow_once"},
        {"prompt": "/write no.txt no", "permission": "reject_once"},
        {"prompt": "/slow 400", "cancel": True},
        {"prompt": "after the cancel"},
    ]
    summary = _node(node, ["ts_proxy_client.mjs", json.dumps(cmd), str(tmp_path),
                           json.dumps(steps)], _env(tmp_path))
    hello, ok, no, slow, after = summary["turns"]
    assert (hello["stopReason"], hello["text"]) == ("end_turn", "You said: hello")
    assert ok["text"] == "Wrote ok.txt" and ok["toolStatuses"][-1] == "completed"
    assert ok["asked"] == [["allow_once", "allow_always", "reject_once"]]
    assert (tmp_path / "ok.txt").read_text() == "yes"
    assert no["text"] == "Write to no.txt rejected" and no["toolStatuses"][-1] == "failed"
    assert not (tmp_path / "no.txt").exists()
    assert slow["stopReason"] == "cancelled" and slow["text"].startswith("tick 1")
    assert after["text"] == "You said: after the cancel"
    assert summary["load"]["userTexts"] == [step["prompt"] for step in steps]
    assert "You said: hello" in summary["load"]["agentText"]


def test_wire_sdk_drives_a_ts_sdk_acp_agent_through_the_proxy(
    node: str, node_modules: Path, tmp_path: Path
) -> None:
    exe = wrapper(tmp_path, [node, str(INTEROP / "ts_agent.mjs")])
    steps = [
        {"prompt": "hello"},
        {"prompt": "/tool a.txt", "approve": "approve"},
        {"prompt": "/tool b.txt", "approve": "reject"},
        {"prompt": "/plan"},
        {"prompt": "/slow", "interrupt": True},
        {"prompt": "after"},
    ]
    summary = _node(node, ["wire_sdk_client.mjs", str(exe), str(tmp_path), json.dumps(steps),
                           json.dumps({"replay": True})], _env(tmp_path))
    hello, allowed, rejected, plan, slow, after = summary["turns"]
    assert (hello["status"], hello["text"]) == ("finished", "echo: hello")
    assert "ContentPart" in hello["events"] and hello["events"][0] == "TurnBegin"
    assert allowed["approvals"] == [{"sender": "Write a.txt", "action": "Write a.txt"}]
    assert allowed["text"] == "a.txt: yes"
    assert "ToolResult" in allowed["events"]
    assert rejected["text"] == "b.txt: no"
    assert "SetTodoList" not in plan["text"] and plan["text"] == "planned"
    assert {"ToolCall", "ToolResult", "StatusUpdate"} <= set(plan["events"])
    assert slow["status"] == "cancelled" and slow["text"].startswith("tick 1")
    assert (after["status"], after["text"]) == ("finished", "echo: after")
    replay = summary["replay"]
    assert replay["userInputs"] == [step["prompt"] for step in steps]
    assert "echo: hello" in replay["text"] and replay["text"].endswith("echo: after")


def test_wire_questions_become_ts_client_form_elicitations(
    node: str, node_modules: Path, tmp_path: Path
) -> None:
    env = _env(tmp_path)
    env["PYTHONPATH"] = os.pathsep.join([str(INTEROP.parent / "helpers"),
                                         env.get("PYTHONPATH", "")])
    cmd = [*PYTHON, "proxy", "--log-level", "warning", "--serve", "acp", "--agent-protocol",
           "wire", "--", *PYTHON, "wire", "--agent", "proxy_wire_agent:agent"]
    steps = [{"prompt": "ask", "answer": "right"}, {"prompt": "ask"}]
    summary = _node(node, ["ts_proxy_client.mjs", json.dumps(cmd), str(tmp_path),
                           json.dumps(steps)], env)
    answered, declined = summary["turns"]
    assert answered["elicited"] == [{"message": "Which?", "choices": ["left", "right"]}]
    assert answered["text"] == "answer: ['right']"
    assert declined["text"] == "answer: []"


def test_ts_agent_elicitations_become_wire_sdk_questions(
    node: str, node_modules: Path, tmp_path: Path
) -> None:
    exe = wrapper(tmp_path, [node, str(INTEROP / "ts_agent.mjs")])
    steps = [{"prompt": "/ask", "answer": "blue"}, {"prompt": "/ask"}]
    summary = _node(node, ["wire_sdk_client.mjs", str(exe), str(tmp_path), json.dumps(steps)],
                    _env(tmp_path))
    answered, dismissed = summary["turns"]
    assert answered["questions"] == [{"question": "Which color?", "options": ["red", "blue"]}]
    assert answered["text"] == "chose blue"
    assert dismissed["text"] == "no answer (decline)"
