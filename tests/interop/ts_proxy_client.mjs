// Drive an ACP agent (here: wireproto proxy in front of a Wire agent) with the official
// ACP TypeScript SDK's client API, through a list of steps.
//
// Usage: node ts_proxy_client.mjs '<agent command as a JSON array>' <workdir> '<steps JSON>'
//
// A step is {prompt, permission?: "allow_once"|"reject_once"|"cancel", cancel?: true,
// answer?: LABEL}: the
// prompt is sent, permission requests are answered with the option of that kind (with
// "cancel": a session/cancel is sent instead and the request is left to the agent to
// abandon), with cancel a session/cancel is sent at the first agent text, and a form
// elicitation (the client advertises form elicitation) is answered with LABEL in its
// (only) field. After the steps the session
// is loaded again (session/load) and the replayed updates are counted. One JSON summary
// is printed on stdout.

import { spawn } from "node:child_process";
import { Readable, Writable } from "node:stream";
import * as acp from "@agentclientprotocol/sdk";

const [command, workdir, stepsJson] = [JSON.parse(process.argv[2]), process.argv[3],
                                       JSON.parse(process.argv[4])];
const child = spawn(command[0], command.slice(1), { stdio: ["pipe", "pipe", "inherit"] });
const stream = acp.ndJsonStream(Writable.toWeb(child.stdin), Readable.toWeb(child.stdout));

const updates = [];
let current = null; // the running step: { permission, cancel, onText }
const summary = { turns: [] };

const app = acp
  .client({ name: "wireproto-proxy-interop" })
  .onNotification(acp.methods.client.session.update, ({ params }) => {
    updates.push(params);
    if (params.update.sessionUpdate === "agent_message_chunk" && current?.onText) {
      const fire = current.onText;
      current.onText = null;
      fire();
    }
  })
  .onRequest(acp.methods.client.elicitation.create, async ({ params }) => {
    const [name] = Object.keys(params.requestedSchema.properties); // one field per question
    const field = params.requestedSchema.properties[name];
    current.elicited.push({ message: params.message, choices: field.enum ?? null });
    if (current.answer === undefined) return { action: "decline" };
    return { action: "accept", content: { [name]: current.answer } };
  })
  .onRequest(acp.methods.client.session.requestPermission, async ({ params, signal }) => {
    const kind = current?.permission ?? "reject_once";
    current.asked.push(params.options.map((o) => o.kind));
    if (kind === "cancel") {
      await current.ctx.notify(acp.methods.agent.session.cancel, { sessionId: params.sessionId });
      await new Promise((resolve) => {
        if (signal.aborted) resolve();
        signal.addEventListener("abort", resolve, { once: true });
        setTimeout(resolve, 5000); // agents that answer the cancel without abandoning it
      });
      return { outcome: { outcome: "cancelled" } };
    }
    const option = params.options.find((o) => o.kind === kind);
    return { outcome: { outcome: "selected", optionId: option.optionId } };
  });

await app.connectWith(stream, async (ctx) => {
  await ctx.request(acp.methods.agent.initialize, {
    protocolVersion: acp.PROTOCOL_VERSION,
    clientCapabilities: { elicitation: { form: {} } },
    clientInfo: { name: "wireproto-proxy-interop", version: "1.0.0" },
  });
  const { sessionId } = await ctx.request(acp.methods.agent.session.new,
                                          { cwd: workdir, mcpServers: [] });
  summary.sessionId = sessionId;
  for (const step of stepsJson) {
    const before = updates.length;
    current = { permission: step.permission, answer: step.answer, asked: [], elicited: [],
                onText: null, ctx };
    if (step.cancel) {
      current.onText = () => ctx.notify(acp.methods.agent.session.cancel, { sessionId });
    }
    const response = await ctx.request(acp.methods.agent.session.prompt,
                                       { sessionId, prompt: [{ type: "text", text: step.prompt }] });
    const mine = updates.slice(before).map((u) => u.update);
    summary.turns.push({
      prompt: step.prompt,
      stopReason: response.stopReason,
      text: mine.filter((u) => u.sessionUpdate === "agent_message_chunk")
        .map((u) => u.content.text).join(""),
      kinds: [...new Set(mine.map((u) => u.sessionUpdate))],
      toolStatuses: mine.filter((u) => u.sessionUpdate.startsWith("tool_call"))
        .map((u) => u.status).filter(Boolean),
      asked: current.asked,
      elicited: current.elicited,
    });
  }
  const before = updates.length;
  await ctx.request(acp.methods.agent.session.load, { sessionId, cwd: workdir, mcpServers: [] });
  const replayed = updates.slice(before).map((u) => u.update);
  summary.load = {
    userTexts: replayed.filter((u) => u.sessionUpdate === "user_message_chunk")
      .map((u) => u.content.text),
    agentText: replayed.filter((u) => u.sessionUpdate === "agent_message_chunk")
      .map((u) => u.content.text).join(""),
  };
});
child.stdin.end();
console.log(JSON.stringify(summary));
