"""A scripted ACP agent process (plain JSON lines on stdio) for client tests.

Usage: ``python acp_scripted.py [--shell LINE] [--silent METHOD ...] [--auth]``

* ``initialize`` and ``session/new`` are answered (``--auth`` advertises one
  auth method ``token``), except the methods named by ``--silent``: those are
  never answered (an agent that hangs).
* ``session/prompt``: with ``--shell``, sends ``terminal/create`` with the
  shell line in ``command`` and no ``args`` (the shape Kimi CLI sends), waits
  for its exit, reads its output, streams the output back as an agent message
  chunk and ends the turn; without it, answers ``end_turn`` at once.
* ``$/cancel_request`` notifications are recorded; the extension request
  ``_test/cancelled`` answers ``{"ids": [...]}`` with the ids seen so far, and
  ``_test/echo`` answers its params, ``_test/env`` the values of the environment
  variables it names (``{"names": [...]}``). ``_test/note`` notifications are recorded
  and reported by ``_test/notes``.

The process ends when its stdin ends.
"""

from __future__ import annotations

import argparse
import itertools
import json
import os
import sys
from typing import Any

_ids = itertools.count(1000)


def send(message: dict[str, Any]) -> None:
    sys.stdout.write(json.dumps({"jsonrpc": "2.0", **message}) + "\n")
    sys.stdout.flush()


def read() -> dict[str, Any] | None:
    line = sys.stdin.readline()
    if not line:
        return None
    message: dict[str, Any] = json.loads(line)
    return message


class Agent:
    def __init__(self, args: argparse.Namespace) -> None:
        self.args = args
        self.cancelled: list[Any] = []
        self.notes: list[Any] = []
        self.waiting: dict[int, dict[str, Any] | None] = {}

    def call(self, method: str, params: dict[str, Any]) -> dict[str, Any]:
        """Send a request to the client and handle other messages until it is answered."""
        rid = next(_ids)
        send({"id": rid, "method": method, "params": params})
        while True:
            message = read()
            if message is None:
                raise SystemExit(0)
            if message.get("id") == rid and "method" not in message:
                if "error" in message:
                    raise RuntimeError(f"{method} failed: {message['error']}")
                result: dict[str, Any] = message["result"]
                return result
            self.handle(message)

    def handle(self, message: dict[str, Any]) -> None:
        method = message.get("method")
        params = message.get("params") or {}
        if method is None:
            return
        if method == "$/cancel_request":
            self.cancelled.append(params.get("requestId"))
            return
        if method == "_test/note":
            self.notes.append(params)
            return
        if "id" not in message or method in self.args.silent:
            return
        answer = ANSWERS.get(method)
        if answer is None:
            send({"id": message["id"], "error": {"code": -32601,
                                                 "message": f"Method not found: {method}"}})
            return
        send({"id": message["id"], "result": answer(self, params)})


def initialize(agent: Agent, params: dict[str, Any]) -> dict[str, Any]:
    methods = [{"id": "token", "name": "Token"}] if agent.args.auth else []
    return {"protocolVersion": 1, "agentCapabilities": {"loadSession": True},
            "authMethods": methods, "agentInfo": {"name": "scripted", "version": "1"}}


def prompt(agent: Agent, params: dict[str, Any]) -> dict[str, Any]:
    sid = params["sessionId"]
    if agent.args.shell:
        created = agent.call("terminal/create", {"sessionId": sid, "command": agent.args.shell})
        tid = created["terminalId"]
        exited = agent.call("terminal/wait_for_exit", {"sessionId": sid, "terminalId": tid})
        output = agent.call("terminal/output", {"sessionId": sid, "terminalId": tid})
        agent.call("terminal/release", {"sessionId": sid, "terminalId": tid})
        text = json.dumps({"exit": exited.get("exitCode"), "output": output["output"]})
        send({"method": "session/update", "params": {"sessionId": sid, "update": {
            "sessionUpdate": "agent_message_chunk", "content": {"type": "text", "text": text}}}})
    return {"stopReason": "end_turn"}


ANSWERS = {
    "initialize": initialize,
    "authenticate": lambda agent, params: {},
    "session/new": lambda agent, params: {"sessionId": "scripted-1"},
    "session/load": lambda agent, params: {},
    "session/prompt": prompt,
    "session/cancel": lambda agent, params: None,
    "_test/cancelled": lambda agent, params: {"ids": agent.cancelled},
    "_test/notes": lambda agent, params: {"notes": agent.notes},
    "_test/echo": lambda agent, params: params,
    "_test/env": lambda agent, params: {k: os.environ.get(k) for k in params["names"]},
}


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--shell", default="")
    parser.add_argument("--silent", nargs="*", default=[])
    parser.add_argument("--auth", action="store_true")
    agent = Agent(parser.parse_args())
    while True:
        message = read()
        if message is None:
            return
        agent.handle(message)


if __name__ == "__main__":
    main()
