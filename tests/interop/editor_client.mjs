// Start an agent exactly as an editor configuration says, with the official TypeScript SDK.
//
// Usage: node editor_client.mjs '<{"command", "args", "env"} as JSON>' <absolute workdir> <prompt>
//
// Spawns `command args...` with `env` added to the environment (as Zed's
// `agent_servers` and JetBrains' acp.json do), runs initialize, session/new and
// one prompt, and prints {"agent", "reply", "stopReason"} as JSON.

import { spawn } from "node:child_process";
import { Readable, Writable } from "node:stream";
import * as acp from "@agentclientprotocol/sdk";

const [config, workdir, text] = [JSON.parse(process.argv[2]), process.argv[3], process.argv[4]];
const child = spawn(config.command, config.args ?? [], {
  stdio: ["pipe", "pipe", "inherit"],
  env: { ...process.env, ...(config.env ?? {}) },
  cwd: workdir,
});
const stream = acp.ndJsonStream(Writable.toWeb(child.stdin), Readable.toWeb(child.stdout));

const app = acp.client({ name: "editor-config-check" });
let summary = {};
await app.connectWith(stream, async (ctx) => {
  const init = await ctx.request(acp.methods.agent.initialize, {
    protocolVersion: acp.PROTOCOL_VERSION,
    clientCapabilities: {},
    clientInfo: { name: "editor-config-check", version: "1.0.0" },
  });
  const session = await ctx.buildSession(workdir).start();
  const response = session.prompt(text);
  const reply = await session.readText();
  summary = { agent: init.agentInfo?.name, reply, stopReason: (await response).stopReason };
  session.dispose();
});
child.stdin.end();
summary.agentExitCode = await new Promise((resolve) => child.on("exit", (status) => resolve(status)));
process.stdout.write(`${JSON.stringify(summary)}\n`);
