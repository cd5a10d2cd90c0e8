"""A hostile peer for the client APIs: it writes JSON nested 100,000 levels deep.

``python deep_agent.py MODE``. Before answering each request it writes a
line that is not JSON (``[`` x 100k), a well-formed deep line, a deep
notification and a deep request of its own. Then, with MODE:

``answer``  it answers the request properly (ACP, Wire or MCP, by method);
``deep``    it answers with a result nested 100k levels deep.

Every line it reads is also copied to stderr, so a test can see the client's
answers to the deep requests.
"""

from __future__ import annotations

import json
import sys

N = 100_000
DEEP = "[" * N + "]" * N
RESULTS = {
    "initialize": {  # every protocol's initialize answer in one object
        "protocolVersion": 1, "agentCapabilities": {}, "authMethods": [],
        "protocol_version": "1.9", "server": {"name": "deep", "version": "1"},
        "slash_commands": [],
    },
    "tools/list": {"tools": []},
    "session/new": {"sessionId": "deep-session"},
    "session/prompt": {"stopReason": "end_turn"},
}
MCP_INIT = {"protocolVersion": "2025-06-18", "capabilities": {"tools": {}},
            "serverInfo": {"name": "deep", "version": "1"}}


def write(text: str) -> None:
    sys.stdout.write(text + "\n")
    sys.stdout.flush()


def main() -> None:
    mode = sys.argv[1]
    for line in sys.stdin:
        sys.stderr.write("got " + line[:200])
        sys.stderr.flush()
        message = json.loads(line)
        if "id" not in message or "method" not in message:
            continue
        write("[" * N)
        write(DEEP)
        write('{"jsonrpc":"2.0","method":"session/update","params":' + DEEP + "}")
        write('{"jsonrpc":"2.0","id":"deep-1","method":"fs/read_text_file","params":' + DEEP + "}")
        ident = json.dumps(message["id"])
        if mode == "deep":
            write('{"jsonrpc":"2.0","id":' + ident + ',"result":' + DEEP + "}")
            continue
        result = RESULTS.get(message["method"], {})
        if isinstance(message.get("params", {}).get("protocolVersion"), str):  # MCP
            result = MCP_INIT
        write(json.dumps({"jsonrpc": "2.0", "id": message["id"], "result": result}))


if __name__ == "__main__":
    main()
