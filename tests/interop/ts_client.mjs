// Drive a wireproto ACP agent with the official TypeScript SDK's client API.
//
// Usage: node ts_client.mjs '<agent command as a JSON array>' <absolute workdir>
//
// Spawns the agent as a subprocess (stdio), runs a fixed scenario and prints
// one JSON summary on stdout for tests/interop/test_ts_sdk.py to check. The
// SDK validates every message it receives with its own zod schemas; a
// violation rejects the call and ends the script with a non-zero status.

import { spawn } from "node:child_process";
import { Readable, Writable } from "node:stream";
import * as acp from "@agentclientprotocol/sdk";

const [command, workdir] = [JSON.parse(process.argv[2]), process.argv[3]];
const child = spawn(command[0], command.slice(1), { stdio: ["pipe", "pipe", "inherit"] });
const stream = acp.ndJsonStream(Writable.toWeb(child.stdin), Readable.toWeb(child.stdout));

const files = new Map(); // the client's file system (its editor buffers)
const updates = []; // every session/update, in arrival order
const summary = {
  permissions: [], reads: [], writes: [], cancelledPermission: null, elicitations: [],
};
let holdPermission = false;
let permissionHeld = () => {}; // called when a held permission request arrives

const app = acp
  .client({ name: "wireproto-interop" })
  .onNotification(acp.methods.client.session.update, ({ params }) => {
    updates.push(params);
  })
  .onRequest(acp.methods.client.session.requestPermission, async ({ params, signal }) => {
    summary.permissions.push({
      toolCallId: params.toolCall.toolCallId,
      kinds: params.options.map((option) => option.kind),
    });
    if (holdPermission) {
      permissionHeld();
      // wait until the agent abandons the request with $/cancel_request
      await new Promise((resolve) => signal.addEventListener("abort", resolve, { once: true }));
      summary.cancelledPermission = true;
      return { outcome: { outcome: "cancelled" } };
    }
    const allow = params.options.find((option) => option.kind === "allow_once");
    return { outcome: { outcome: "selected", optionId: allow.optionId } };
  })
  .onRequest(acp.methods.client.elicitation.create, async ({ params }) => {
    summary.elicitations.push(params);
    const field = params.requestedSchema.properties.q1;
    return { action: "accept", content: { q1: field.enum[field.enum.length - 1] } };
  })
  .onRequest(acp.methods.client.fs.readTextFile, async ({ params }) => {
    summary.reads.push(params.path);
    if (!files.has(params.path)) {
      throw new acp.RequestError(-32002, "Resource not found");
    }
    return { content: files.get(params.path) };
  })
  .onRequest(acp.methods.client.fs.writeTextFile, async ({ params }) => {
    summary.writes.push(params.path);
    files.set(params.path, params.content);
    return {};
  });

async function nextTick(session) {
  for (;;) {
    const message = await session.nextUpdate();
    if (message.kind === "session_update" && message.update.content?.text === "tick 1") {
      return;
    }
  }
}

async function turn(session, text) {
  const response = session.prompt(text);
  const reply = await session.readText();
  return { reply, stopReason: (await response).stopReason };
}

await app.connectWith(stream, async (ctx) => {
  const init = await ctx.request(acp.methods.agent.initialize, {
    protocolVersion: acp.PROTOCOL_VERSION,
    clientCapabilities: {
      fs: { readTextFile: true, writeTextFile: true },
      elicitation: { form: {} },
      session: { notices: {} },
    },
    clientInfo: { name: "wireproto-interop", version: "1.0.0" },
  });
  summary.initialize = {
    protocolVersion: init.protocolVersion,
    agentName: init.agentInfo?.name,
    loadSession: init.agentCapabilities?.loadSession,
    authMethods: init.authMethods.map((method) => method.id),
  };

  const session = await ctx.buildSession(workdir).start();
  const sessionId = session.sessionId;
  summary.newSession = {
    currentModeId: session.modes?.currentModeId,
    configOptions: session.newSessionResponse.configOptions.map((option) => option.id),
  };

  summary.echo = await turn(session, "hello from the TypeScript SDK");

  summary.write = await turn(session, "/write out.txt written by the SDK");
  summary.written = files.get(`${workdir}/out.txt`) ?? null;

  files.set(`${workdir}/in.txt`, "one\ntwo\nthree");
  summary.read = await turn(session, "/read in.txt");

  const mark = updates.length;
  summary.ask = await turn(session, "/ask Which color? red|blue");
  summary.title = await turn(session, "/title Named by the SDK");
  summary.retry = await turn(session, "/retry");
  summary.subagent = await turn(session, "/subagent hello from a sub-agent");
  const since = updates.slice(mark).map((u) => u.update);
  summary.titles = since
    .filter((u) => u.sessionUpdate === "session_info_update")
    .map((u) => u.title);
  summary.notices = since.filter((u) => u.sessionUpdate === "notice").map((u) => u.severity);
  const subCall = since.find((u) => u.sessionUpdate === "tool_call" && u.kind === "think");
  summary.subagentContent = since
    .filter((u) => u.sessionUpdate === "tool_call_update" && u.toolCallId === subCall?.toolCallId)
    .map((u) => u.content?.[0]?.content?.text ?? null);

  const slow = session.prompt("/slow 1000");
  await nextTick(session);
  await ctx.notify(acp.methods.agent.session.cancel, { sessionId });
  summary.cancel = { stopReason: (await slow).stopReason };
  await session.readText(); // drain to the stop message

  const asked = new Promise((resolve) => {
    permissionHeld = resolve;
  });
  holdPermission = true;
  const held = session.prompt("/write held.txt never");
  await asked;
  await ctx.notify(acp.methods.agent.session.cancel, { sessionId });
  summary.cancelDuringPermission = { stopReason: (await held).stopReason };
  holdPermission = false;
  await session.readText();

  const liveIds = new Set(
    updates
      .filter((u) => u.sessionId === sessionId && u.update.sessionUpdate === "agent_message_chunk")
      .map((u) => u.update.messageId),
  );
  const before = updates.length;
  await ctx.request(acp.methods.agent.session.load, { sessionId, cwd: workdir, mcpServers: [] });
  const replayed = updates.slice(before).filter((u) => u.sessionId === sessionId);
  const replayedIds = new Set(
    replayed
      .filter((u) => u.update.sessionUpdate === "agent_message_chunk")
      .map((u) => u.update.messageId),
  );
  summary.load = {
    updates: replayed.length,
    userTexts: replayed
      .filter((u) => u.update.sessionUpdate === "user_message_chunk")
      .map((u) => u.update.content.text),
    sameMessageIds: [...liveIds].every((id) => replayedIds.has(id)) && liveIds.size > 0,
  };

  const options = await ctx.request(acp.methods.agent.session.setConfigOption, {
    sessionId,
    configId: "model",
    value: "demo-large",
  });
  summary.model = options.configOptions.find((option) => option.id === "model").currentValue;

  const listed = await ctx.request(acp.methods.agent.session.list, { cwd: workdir });
  summary.list = listed.sessions.map((info) => info.sessionId);
  summary.listTitles = listed.sessions.map((info) => info.title);
  summary.sessionId = sessionId;

  await ctx.request(acp.methods.agent.session.close, { sessionId });
  session.dispose();
});

child.stdin.end();
const code = await new Promise((resolve) => child.on("exit", (status) => resolve(status)));
summary.agentExitCode = code;
process.stdout.write(`${JSON.stringify(summary)}\n`);
