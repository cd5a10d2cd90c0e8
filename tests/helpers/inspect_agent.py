"""A small raw ACP agent on stdio for the inspector's browser tests (no library code).

Run as ``python inspect_agent.py``. It answers ``initialize`` and
``session/new`` (advertising ``/ask`` and ``/xss``), and prompts:

``/ask``   asks one form-mode ``elicitation/create`` question (a colour, a
           single-select string field) and replies ``You chose: LABEL``, or
           ``No answer`` when declined or cancelled;
``/xss``   puts markup (``<img src=x onerror=...>``, ``<script>``) in every
           place a page might render: reply and thought chunks, a tool call's
           title and content, a diff, a plan, an approval's options and an
           unknown agent -> client request; then ends the turn;
``/bad``   sends a plan whose entry has a status of the wrong type (7);
other      replies ``echo: TEXT`` and reports its usage (``usage_update``).
"""

from __future__ import annotations

import json
import sys
from typing import Any

SESSION = "sess_inspect"
IMG = "<img src=x onerror=\"window.__xss=(window.__xss||0)+1\">"
SCRIPT = "<script>window.__xss=(window.__xss||0)+1</script>"
PAYLOAD = f"{IMG} and {SCRIPT}"


def send(message: dict[str, Any]) -> None:
    sys.stdout.write(json.dumps(message) + "\n")
    sys.stdout.flush()


def update(body: dict[str, Any]) -> None:
    send({"jsonrpc": "2.0", "method": "session/update",
          "params": {"sessionId": SESSION, "update": body}})


def chunk(text: str, kind: str = "agent_message_chunk") -> None:
    update({"sessionUpdate": kind, "content": {"type": "text", "text": text}})


def xss() -> None:
    chunk(PAYLOAD)
    chunk(PAYLOAD, "agent_thought_chunk")
    update({"sessionUpdate": "tool_call", "toolCallId": "call_xss", "title": PAYLOAD,
            "kind": "edit", "status": "completed",
            "content": [{"type": "content", "content": {"type": "text", "text": PAYLOAD}},
                        {"type": "diff", "path": IMG, "oldText": SCRIPT, "newText": PAYLOAD}]})
    update({"sessionUpdate": "plan",
            "entries": [{"content": PAYLOAD, "priority": "high", "status": "pending"}]})
    send({"jsonrpc": "2.0", "id": 901, "method": "session/request_permission", "params": {
        "sessionId": SESSION, "toolCall": {"toolCallId": "call_xss", "title": PAYLOAD},
        "options": [{"optionId": "ok", "name": PAYLOAD, "kind": "allow_once"}]}})
    send({"jsonrpc": "2.0", "id": 902, "method": IMG, "params": {"x": SCRIPT}})


def main() -> None:
    asked: dict[int, Any] = {}  # elicitation id -> the prompt waiting for it
    next_id = 100
    for line in sys.stdin:
        if not line.strip():
            continue
        msg = json.loads(line)
        method, ident = msg.get("method"), msg.get("id")
        if method == "initialize":
            send({"jsonrpc": "2.0", "id": ident, "result": {
                "protocolVersion": 1, "agentCapabilities": {},
                "agentInfo": {"name": "inspect-test-agent", "version": "1"}}})
        elif method == "session/new":
            send({"jsonrpc": "2.0", "id": ident, "result": {"sessionId": SESSION}})
            update({"sessionUpdate": "available_commands_update", "availableCommands": [
                {"name": "ask", "description": "Ask a question"},
                {"name": "xss", "description": "Markup everywhere"}]})
        elif method == "session/prompt":
            text = "".join(b.get("text", "") for b in msg["params"]["prompt"])
            if text.strip() == "/ask":
                asked[next_id] = ident
                send({"jsonrpc": "2.0", "id": next_id, "method": "elicitation/create", "params": {
                    "sessionId": SESSION, "mode": "form", "message": "Which colour?",
                    "requestedSchema": {"type": "object", "properties": {
                        "colour": {"type": "string", "enum": ["red", "green", "blue"]}},
                        "required": ["colour"]}}})
                next_id += 1
                continue
            if text.strip() == "/xss":
                xss()
            elif text.strip() == "/bad":  # a plan entry with a status of the wrong type
                update({"sessionUpdate": "plan",
                        "entries": [{"content": "odd", "priority": "high", "status": 7}]})
            else:
                chunk(f"echo: {text}")
                update({"sessionUpdate": "usage_update", "used": 1234, "size": 200000})
            send({"jsonrpc": "2.0", "id": ident, "result": {"stopReason": "end_turn"}})
        elif method is None and ident in asked:
            prompt = asked.pop(ident)
            result = msg.get("result") or {}
            if result.get("action") == "accept":
                chunk(f"You chose: {result.get('content', {}).get('colour')}")
            else:
                chunk("No answer")
            send({"jsonrpc": "2.0", "id": prompt, "result": {"stopReason": "end_turn"}})
        elif ident is not None and method is not None:
            send({"jsonrpc": "2.0", "id": ident,
                  "error": {"code": -32601, "message": f"Method not found: {method}"}})


if __name__ == "__main__":
    main()
