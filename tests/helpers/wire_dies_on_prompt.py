"""A Wire agent that answers initialize, then exits (status 3) at the first prompt."""

import json
import sys

INITIALIZED = {"protocol_version": "1.10", "server": {"name": "dies", "version": "1"},
               "slash_commands": []}

for line in sys.stdin:
    msg = json.loads(line)
    if msg.get("method") == "initialize":
        answer = {"jsonrpc": "2.0", "id": msg["id"], "result": INITIALIZED}
        print(json.dumps(answer), flush=True)
    elif msg.get("method") == "prompt":
        sys.exit(3)
