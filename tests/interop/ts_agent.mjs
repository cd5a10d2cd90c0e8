// A small ACP agent built on the official TypeScript SDK, for the proxy's interop tests.
//
// Usage: node ts_agent.mjs   (speaks ACP on stdin/stdout)
//
// Prompts: "/tool NAME" runs a tool call that asks permission (the file NAME is "written"
// only when allowed); "/plan" sends a plan; "/slow" streams ticks until cancelled;
// "/ask" asks the client to choose a color with a form elicitation (when the client
// advertised it); anything else is echoed as "echo: TEXT" in two chunks. Sessions can be loaded (their
// prompts are replayed as user messages).

import { Readable, Writable } from "node:stream";
import * as acp from "@agentclientprotocol/sdk";

const sessions = new Map(); // id -> { prompts: [], cancelled: false }
let next = 0;
let elicitation = false; // the client advertised form elicitation

const update = (client, sessionId, body) =>
  client.notify(acp.methods.client.session.update, { sessionId, update: body });
const say = (client, sessionId, text) =>
  update(client, sessionId, { sessionUpdate: "agent_message_chunk", content: { type: "text", text } });

const app = acp
  .agent({ name: "ts-sdk-agent" })
  .onRequest(acp.methods.agent.initialize, async ({ params }) => {
    elicitation = Boolean(params.clientCapabilities?.elicitation?.form);
    return {
    protocolVersion: acp.PROTOCOL_VERSION,
    agentCapabilities: { loadSession: true },
    agentInfo: { name: "ts-sdk-agent", version: "1.0.0" },
    authMethods: [],
  };
  })
  .onRequest(acp.methods.agent.session.new, async ({ client }) => {
    const sessionId = `ts-${++next}-${process.pid}`;
    sessions.set(sessionId, { prompts: [], cancelled: false });
    setTimeout(() => update(client, sessionId, {
      sessionUpdate: "available_commands_update",
      availableCommands: [{ name: "tool", description: "Run a tool that asks first" },
                          { name: "plan", description: "Make a plan" }],
    }), 0);
    return { sessionId };
  })
  .onRequest(acp.methods.agent.session.load, async ({ params, client }) => {
    const session = sessions.get(params.sessionId) ?? { prompts: [], cancelled: false };
    sessions.set(params.sessionId, session);
    for (const text of session.prompts) {
      await update(client, params.sessionId, { sessionUpdate: "user_message_chunk",
                                               content: { type: "text", text } });
    }
    return {};
  })
  .onNotification(acp.methods.agent.session.cancel, async ({ params }) => {
    const session = sessions.get(params.sessionId);
    if (session) session.cancelled = true;
  })
  .onRequest(acp.methods.agent.session.prompt, async ({ params, client }) => {
    const sid = params.sessionId;
    const session = sessions.get(sid);
    session.cancelled = false;
    const text = params.prompt.filter((b) => b.type === "text").map((b) => b.text).join("");
    session.prompts.push(text);
    if (text.startsWith("/tool ")) {
      const name = text.slice(6).trim();
      const toolCallId = `call-${session.prompts.length}`;
      await update(client, sid, { sessionUpdate: "tool_call", toolCallId, title: `Write ${name}`,
                                  kind: "edit", status: "pending", rawInput: { path: name } });
      const answer = await client.request(acp.methods.client.session.requestPermission, {
        sessionId: sid,
        toolCall: { toolCallId, title: `Write ${name}` },
        options: [
          { optionId: "yes", name: "Allow", kind: "allow_once" },
          { optionId: "always", name: "Always", kind: "allow_always" },
          { optionId: "no", name: "Reject", kind: "reject_once" },
        ],
      });
      const chosen = answer.outcome.outcome === "selected" ? answer.outcome.optionId : "cancelled";
      const ok = chosen === "yes" || chosen === "always";
      await update(client, sid, {
        sessionUpdate: "tool_call_update", toolCallId, status: ok ? "completed" : "failed",
        content: [{ type: "content", content: { type: "text", text: ok ? "written" : "rejected" } }],
      });
      await say(client, sid, `${name}: ${chosen}`);
      return { stopReason: "end_turn" };
    }
    if (text === "/ask") {
      if (!elicitation) {
        await say(client, sid, "no elicitation");
        return { stopReason: "end_turn" };
      }
      const answer = await client.request(acp.methods.client.elicitation.create, {
        mode: "form", sessionId: sid, message: "Pick a color",
        requestedSchema: { type: "object", required: ["color"], properties: {
          color: { type: "string", title: "Color", description: "Which color?",
                   enum: ["red", "blue"] } } },
      });
      await say(client, sid, answer.action === "accept" ? `chose ${answer.content.color}`
                                                        : `no answer (${answer.action})`);
      return { stopReason: "end_turn" };
    }
    if (text === "/plan") {
      await update(client, sid, { sessionUpdate: "plan", entries: [
        { content: "first", status: "completed", priority: "high" },
        { content: "second", status: "pending", priority: "low" },
      ] });
      await update(client, sid, { sessionUpdate: "usage_update", used: 300, size: 1000 });
      await say(client, sid, "planned");
      return { stopReason: "end_turn" };
    }
    if (text === "/slow") {
      for (let tick = 1; tick <= 2000 && !session.cancelled; tick++) {
        await say(client, sid, `tick ${tick} `);
        await new Promise((resolve) => setTimeout(resolve, 20));
      }
      return { stopReason: session.cancelled ? "cancelled" : "end_turn" };
    }
    await update(client, sid, { sessionUpdate: "agent_thought_chunk",
                                content: { type: "text", text: "hmm" } });
    await say(client, sid, "echo: ");
    await say(client, sid, text);
    return { stopReason: "end_turn" };
  });

const connection = app.connect(acp.ndJsonStream(Writable.toWeb(process.stdout),
                                                Readable.toWeb(process.stdin)));
await connection.closed;
