"""Run an external ACP agent under the wireproto host, with one host tool bridged to it.

Usage: ``python examples/host_example.py [AGENT COMMAND ...]``

The default agent is ``node tests/interop/host_agent.mjs``, an agent built on
the official ACP TypeScript SDK that asks permission the way Claude Code does
(``mcp__kiki__kiki_read``) and calls MCP tools (run ``npm install`` in
``tests/interop`` first). ``docs/host.md`` walks through this file.
"""

from __future__ import annotations

import shutil
import sys
import tempfile
from pathlib import Path
from typing import Any

import anyio

from wireproto.adapters.acp import schema
from wireproto.host import Caller, Host, NativeTool, load_config

AGENT = Path(__file__).resolve().parents[1] / "tests" / "interop" / "host_agent.mjs"

CONFIG = """
prefix = "kiki"

[executors.ts]
command = {command}
shutdown_grace = 2.0

[agent_executor_overrides.ts.defaults]
inject_kiki_mcp = true
"""


def read_tool(root: Path) -> NativeTool:
    """The host's ``read`` tool (offered as ``kiki_read``): a file under ``root``."""

    async def read(arguments: dict[str, Any], caller: Caller) -> str:
        return (root / arguments["path"]).read_text(encoding="utf-8")

    schema = {"type": "object", "properties": {"path": {"type": "string"}}, "required": ["path"]}
    return NativeTool(name="read", description="Read a project file", handler=read,
                      input_schema=schema)


async def ask_the_user(request: schema.RequestPermissionRequest) -> str:
    """Permission for anything that is not a host tool: here, always the reject option."""
    print(f"asked the program about {request.tool_call.title!r}")
    return next(o.option_id for o in request.options if o.kind.startswith("reject"))


def show(update: Any) -> None:
    if isinstance(update, schema.Plan):
        print("plan:", ", ".join(entry.content for entry in update.entries))
    elif isinstance(update, schema.ToolCall):
        print(f"tool call {update.title}: {update.status}")
    elif isinstance(update, schema.ToolCallProgress):
        print(f"tool call update: {update.status}")
    elif isinstance(update, schema.AgentMessageChunk) and isinstance(update.content,
                                                                      schema.TextContent):
        print("message:", update.content.text)


async def main(command: list[str]) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp)
        (work / "notes.txt").write_text("hello from notes", encoding="utf-8")
        config_file = work / "host.toml"
        quoted = "[" + ", ".join(f'"{part}"' for part in command) + "]"
        config_file.write_text(CONFIG.format(command=quoted), encoding="utf-8")
        config = load_config(config_file)

        async with Host(config, [read_tool(work)], work / "store") as host:
            record = host.new_session("ts", str(work))
            async with host.bind(record.session_id, on_permission=ask_the_user) as binding:
                print(binding.bridge_reason)
                # 1. a turn you iterate: the host approves its own tool by policy
                async with binding.prompt('use kiki_read {"path": "notes.txt"}') as turn:
                    async for update in turn:
                        show(update)
                print("stop:", turn.stop_reason)
                # 2. arguments that do not fit the tool's input_schema never reach it
                outcome = await binding.prompt('use kiki_read {"path": 5}')
                print("bad arguments:", outcome.text)
                # 3. anything else is the program's decision
                outcome = await binding.prompt("ask Run rm -rf build")
                print("other permission:", outcome.text)
                # 4. cancel a running turn
                async with binding.prompt("wait") as turn:
                    async for _update in turn:  # the first update: it is running
                        await binding.cancel()
                print("cancelled turn:", turn.stop_reason)
        print("observations:", len(host.observations(record.session_id)))


if __name__ == "__main__":
    node = shutil.which("node") or "node"
    anyio.run(main, sys.argv[1:] or [node, str(AGENT)])
