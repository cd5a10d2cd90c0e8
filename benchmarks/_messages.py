"""The four ACP messages of the codec benchmark, as plain JSON values.

Every contender builds its own representation from these dicts once, outside
the timed region (pydantic models for the ACP SDK, msgspec Structs for
wireproto, the dicts themselves for json/orjson), so all of them encode and
decode the same content. The texts are deterministic and include what real
traffic has: newlines, quotes, backslashes and a little non-ASCII.
"""

from __future__ import annotations

from typing import Any

SESSION_ID = "sess_7f3a9c2e41d84b6f"

# ~60 characters of streamed assistant text.
CHUNK_TEXT = 'Sure — I\'ll add a test for `parse("")` covering empty input.'


def _python_source(lines: int, variant: str = "") -> str:
    """A deterministic block of Python-looking source code."""
    out = [f'"""Tokenizer helpers{variant}."""', "", "import re", ""]
    for i in range(lines):
        out.append(f"def rule_{i}(text: str, pos: int = 0) -> list[str]:")
        out.append(f'    """Match rule {i} at ``pos``; returns the tokens (\\t, "quoted")."""')
        out.append(f"    return re.findall(r'[a-z_]{{{i % 7 + 1}}}\\d*', text[pos:]){variant}")
        out.append("")
    return "\n".join(out)


def _sized(lines_per_kb: int, kb: float, variant: str = "") -> str:
    """Source text of about ``kb`` kilobytes."""
    text = _python_source(int(lines_per_kb * kb) + 1, variant)
    return text[: int(kb * 1024)]


RESOURCE_TEXT = _sized(12, 2.0)  # ~2 KB embedded file
DIFF_OLD = _sized(12, 2.0)
DIFF_NEW = _sized(12, 2.0, "  # patched")  # old + new ~4 KB

SESSION_UPDATE_CHUNK: dict[str, Any] = {
    "jsonrpc": "2.0",
    "method": "session/update",
    "params": {
        "sessionId": SESSION_ID,
        "update": {
            "sessionUpdate": "agent_message_chunk",
            "content": {"type": "text", "text": CHUNK_TEXT},
        },
    },
}

SESSION_PROMPT: dict[str, Any] = {
    "jsonrpc": "2.0",
    "id": 17,
    "method": "session/prompt",
    "params": {
        "sessionId": SESSION_ID,
        "prompt": [
            {"type": "text", "text": "Why does rule_3 fail on an empty string? Suggest a fix."},
            {
                "type": "resource",
                "resource": {
                    "uri": "file:///home/ana/proj/src/tokenizer.py",
                    "mimeType": "text/x-python",
                    "text": RESOURCE_TEXT,
                },
            },
        ],
    },
}

TOOL_CALL_UPDATE: dict[str, Any] = {
    "jsonrpc": "2.0",
    "method": "session/update",
    "params": {
        "sessionId": SESSION_ID,
        "update": {
            "sessionUpdate": "tool_call_update",
            "toolCallId": "call_0042",
            "kind": "edit",
            "status": "completed",
            "title": "Edit src/tokenizer.py",
            "content": [
                {
                    "type": "diff",
                    "path": "/home/ana/proj/src/tokenizer.py",
                    "oldText": DIFF_OLD,
                    "newText": DIFF_NEW,
                }
            ],
            "locations": [{"path": "/home/ana/proj/src/tokenizer.py", "line": 12}],
        },
    },
}

INITIALIZE_RESULT: dict[str, Any] = {
    "jsonrpc": "2.0",
    "id": 0,
    "result": {
        "protocolVersion": 1,
        "agentCapabilities": {
            "loadSession": True,
            "promptCapabilities": {"image": True, "audio": True, "embeddedContext": True},
            "mcpCapabilities": {"http": True, "sse": True},
            "sessionCapabilities": {
                "list": {},
                "delete": {},
                "additionalDirectories": {},
                "resume": {},
                "close": {},
            },
            "auth": {"logout": {}},
        },
        "authMethods": [
            {
                "id": "api-key",
                "name": "API key",
                "description": "Use the key from $WIREPROTO_API_KEY or the keychain.",
            },
        ],
        "agentInfo": {"name": "wireproto-agent", "title": "Wireproto Agent", "version": "0.1.0"},
    },
}

MESSAGES: dict[str, dict[str, Any]] = {
    "session_update_chunk": SESSION_UPDATE_CHUNK,
    "session_prompt": SESSION_PROMPT,
    "tool_call_update_diff": TOOL_CALL_UPDATE,
    "initialize_result": INITIALIZE_RESULT,
}
"""Benchmark case name -> the whole JSON-RPC message."""

KINDS: dict[str, str] = {
    "session_update_chunk": "notification",
    "session_prompt": "request",
    "tool_call_update_diff": "notification",
    "initialize_result": "response",
}
"""Case name -> the JSON-RPC message kind (what the decoder has to do with it)."""
