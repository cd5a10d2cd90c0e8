"""Interop: the official TypeScript SDK (npm ``@agentclientprotocol/sdk`` 2.4.0) drives our agent.

``ts_client.mjs`` uses the SDK's client API (``client()``, ``connectWith``,
``buildSession``, typed handlers for permissions, files and elicitation) to
spawn ``wireproto acp`` (the demo agent, ``python -m wireproto acp``) over
stdio and run a scenario: initialize (with form elicitation and notices),
session/new, an echo prompt, ``/write`` with a permission the SDK client
allows and a write through its fs handler, ``/read`` through its fs handler,
``/ask`` answered by the SDK's elicitation handler, ``/title``, ``/retry`` (a
warning notice), ``/subagent``, cancel of a running turn, cancel during a
pending permission request (the agent abandons it with ``$/cancel_request``,
which the SDK turns into an aborted handler signal), session/load (replay),
set_config_option, list and close. The SDK validates everything it receives
with its zod schemas; the script prints a JSON summary that this test checks.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from wireproto.adapters.acp.validation import SCHEMA_PATH

INTEROP = Path(__file__).resolve().parent


def test_the_sdk_uses_the_vendored_schema(node_modules: Path) -> None:
    package = json.loads((node_modules / "@agentclientprotocol/sdk/package.json").read_text())
    shipped = node_modules / "@agentclientprotocol/sdk/schema/v1/schema.json"
    assert package["version"] == "2.4.0"
    assert json.loads(shipped.read_text()) == json.loads(SCHEMA_PATH.read_text())


def test_typescript_sdk_client_drives_our_agent(
    node: str, node_modules: Path, tmp_path: Path
) -> None:
    workdir = tmp_path / "work"
    workdir.mkdir()
    env = {**os.environ, "WIREPROTO_HOME": str(tmp_path / "home")}
    env.pop("WIREPROTO_TOKEN", None)
    command = json.dumps([sys.executable, "-m", "wireproto", "acp", "--log-level", "warning"])
    done = subprocess.run(
        [node, str(INTEROP / "ts_client.mjs"), command, str(workdir)],
        cwd=INTEROP, env=env, capture_output=True, text=True, timeout=60, check=False,
    )
    assert done.returncode == 0, done.stderr[-4000:]
    summary = json.loads(done.stdout)

    assert summary["initialize"] == {
        "protocolVersion": 1, "agentName": "wireproto-demo", "loadSession": True,
        "authMethods": ["login"],
    }
    assert summary["newSession"] == {
        "currentModeId": "ask", "configOptions": ["mode", "model", "thinking"],
    }
    assert summary["echo"] == {"reply": "You said: hello from the TypeScript SDK",
                               "stopReason": "end_turn"}
    assert summary["write"] == {"reply": "Wrote out.txt", "stopReason": "end_turn"}
    assert summary["written"] == "written by the SDK"
    assert summary["writes"] == [str(workdir / "out.txt")]
    assert not (workdir / "out.txt").exists()  # written by the client, not the agent
    assert summary["read"] == {"reply": "Read 3 lines from in.txt", "stopReason": "end_turn"}
    assert str(workdir / "in.txt") in summary["reads"]
    assert summary["permissions"][0]["kinds"] == ["allow_once", "allow_always", "reject_once"]
    assert summary["cancel"] == {"stopReason": "cancelled"}
    assert summary["cancelDuringPermission"] == {"stopReason": "cancelled"}
    assert summary["cancelledPermission"] is True  # $/cancel_request reached the SDK
    assert summary["load"]["userTexts"] == [
        "hello from the TypeScript SDK", "/write out.txt written by the SDK", "/read in.txt",
        "/ask Which color? red|blue", "/title Named by the SDK", "/retry",
        "/subagent hello from a sub-agent", "/slow 1000", "/write held.txt never",
    ]
    assert summary["load"]["sameMessageIds"] is True
    assert summary["model"] == "demo-large"
    assert summary["list"] == [summary["sessionId"]]
    assert summary["agentExitCode"] == 0
    # elicitation (the SDK checked the request against its schema), titles, retries, sub-agents
    assert summary["ask"] == {"reply": "You chose: blue", "stopReason": "end_turn"}
    [asked] = summary["elicitations"]
    assert asked["mode"] == "form" and asked["message"] == "Which color?"
    assert asked["requestedSchema"]["properties"]["q1"]["enum"] == ["red", "blue"]
    assert summary["title"]["reply"] == "Title set"
    assert "Named by the SDK" in summary["titles"]
    assert summary["listTitles"] == ["Named by the SDK"]
    assert summary["retry"] == {"reply": "Recovered", "stopReason": "end_turn"}
    assert summary["notices"] == ["warning"]
    assert summary["subagent"] == {"reply": "Subagent done", "stopReason": "end_turn"}
    assert summary["subagentContent"][-1] == "hello from a sub-agent"
