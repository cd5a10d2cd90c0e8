// A Claude-Code-shaped ACP agent on the official TypeScript SDK, for the host guide and tests.
//
// Usage: node host_agent.mjs [--linger]
//
// It serves ACP on stdio. The first text block of a prompt is a command:
//
//   use TOOL JSON   ask permission for the MCP tool TOOL the way Claude Code
//                   does (title "mcp__<server>__<tool>"), and when allowed call
//                   it through the stdio MCP server <server> the session was
//                   given (its "<server>_" prefix names it); streams a plan, the
//                   tool call and its result, then a message with the result
//   ask TITLE       ask permission with that title; answers the chosen option kind
//   wait            stream "waiting" and end only when cancelled
//   anything else   echo it back
//
// With --linger the process does not exit when its stdin closes (as
// claude-agent-acp does not): only a signal ends it.

import { spawn } from "node:child_process";
import { createInterface } from "node:readline";
import { Readable, Writable } from "node:stream";
import * as acp from "@agentclientprotocol/sdk";

const sessions = new Map(); // sessionId -> { servers, cancelled }
let next = 0;

// ---------------------------------------------------------------- MCP over stdio

function mcpClient(server) {
  const env = { ...process.env };
  for (const { name, value } of server.env) env[name] = value;
  const child = spawn(server.command, server.args, { env, stdio: ["pipe", "pipe", "inherit"] });
  const waiting = new Map();
  createInterface({ input: child.stdout }).on("line", (line) => {
    const message = JSON.parse(line);
    waiting.get(message.id)?.(message);
  });
  let id = 0;
  const call = (method, params) =>
    new Promise((resolve) => {
      id += 1;
      waiting.set(id, resolve);
      child.stdin.write(JSON.stringify({ jsonrpc: "2.0", id, method, params }) + "\n");
    });
  const ready = call("initialize", {
    protocolVersion: "2025-06-18",
    capabilities: {},
    clientInfo: { name: "host-agent", version: "1" },
  }).then(() =>
    child.stdin.write(JSON.stringify({ jsonrpc: "2.0", method: "notifications/initialized" }) + "\n"),
  );
  return {
    async callTool(name, args) {
      await ready;
      return call("tools/call", { name, arguments: args });
    },
    close() {
      child.stdin.end();
    },
  };
}

// --------------------------------------------------------------------- the agent

async function say(client, sessionId, update) {
  await client.notify(acp.methods.client.session.update, { sessionId, update });
}

async function ask(client, sessionId, toolCallId, title) {
  const answer = await client.request(acp.methods.client.session.requestPermission, {
    sessionId,
    toolCall: { toolCallId, title, kind: "read", status: "pending" },
    options: [
      { optionId: "allow", name: "Allow", kind: "allow_once" },
      { optionId: "reject", name: "Reject", kind: "reject_once" },
    ],
  });
  return answer.outcome.outcome === "selected" ? answer.outcome.optionId : "cancelled";
}

async function useTool(client, sessionId, session, rest) {
  const [tool, ...json] = rest.split(" ");
  const server = session.servers.find((s) => tool.startsWith(`${s.name}_`));
  const title = `mcp__${server?.name ?? "none"}__${tool}`;
  const toolCallId = `call-${++next}`;
  await say(client, sessionId, {
    sessionUpdate: "plan",
    entries: [{ content: `run ${tool}`, priority: "high", status: "in_progress" }],
  });
  await say(client, sessionId, {
    sessionUpdate: "tool_call", toolCallId, title, kind: "read", status: "pending",
  });
  const choice = await ask(client, sessionId, toolCallId, title);
  if (choice !== "allow" || server === undefined) {
    await say(client, sessionId, { sessionUpdate: "tool_call_update", toolCallId, status: "failed" });
    return `refused ${tool}: ${choice}`;
  }
  const mcp = session.mcp.get(server.name) ?? mcpClient(server);
  session.mcp.set(server.name, mcp);
  const reply = await mcp.callTool(tool, JSON.parse(json.join(" ") || "{}"));
  const text = reply.error ? `error ${reply.error.code}: ${reply.error.message}` : reply.result.content[0].text;
  await say(client, sessionId, {
    sessionUpdate: "tool_call_update", toolCallId, status: reply.error ? "failed" : "completed",
    content: [{ type: "content", content: { type: "text", text } }],
  });
  return text;
}

const COMMANDS = {
  use: (client, sessionId, session, rest) => useTool(client, sessionId, session, rest),
  ask: async (client, sessionId, session, rest) => ask(client, sessionId, `call-${++next}`, rest),
  wait: async (client, sessionId, session) => {
    await say(client, sessionId, {
      sessionUpdate: "agent_message_chunk", content: { type: "text", text: "waiting" },
    });
    await new Promise((resolve) => { session.cancelled = resolve; });
    return null;
  },
};

const app = acp
  .agent({ name: "host-agent" })
  .onRequest(acp.methods.agent.initialize, async () => ({
    protocolVersion: acp.PROTOCOL_VERSION,
    agentCapabilities: { loadSession: false },
    agentInfo: { name: "host-agent", version: "1.0.0" },
    authMethods: [],
  }))
  .onRequest(acp.methods.agent.session.new, async ({ params }) => {
    const sessionId = `s-${++next}`;
    sessions.set(sessionId, { servers: params.mcpServers, mcp: new Map(), cancelled: null });
    return { sessionId };
  })
  .onNotification(acp.methods.agent.session.cancel, async ({ params }) => {
    sessions.get(params.sessionId)?.cancelled?.();
  })
  .onRequest(acp.methods.agent.session.prompt, async ({ params, client }) => {
    const session = sessions.get(params.sessionId);
    const text = params.prompt.find((block) => block.type === "text")?.text ?? "";
    const [word, ...rest] = text.split(" ");
    const command = COMMANDS[word];
    const answer = command ? await command(client, params.sessionId, session, rest.join(" ")) : text;
    if (answer === null) return { stopReason: "cancelled" };
    await say(client, params.sessionId, {
      sessionUpdate: "agent_message_chunk", content: { type: "text", text: String(answer) },
    });
    return { stopReason: "end_turn" };
  });

const connection = app.connect(acp.ndJsonStream(Writable.toWeb(process.stdout), Readable.toWeb(process.stdin)));
await connection.closed;
for (const session of sessions.values()) for (const mcp of session.mcp.values()) mcp.close();
if (process.argv.includes("--linger")) {
  setInterval(() => {}, 1 << 30); // like claude-agent-acp: stdin closed, still running
}
