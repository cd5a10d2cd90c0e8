// Drive a Wire agent with the official Kimi agent SDK (npm @moonshot-ai/kimi-agent-sdk).
//
// Usage: node kimi_client.mjs <executable> <workdir> '<env as JSON>' <session id> <prompt>...
//
// The SDK spawns `<executable> --session ID --work-dir DIR --wire ...` with
// `env` added to the environment; each prompt runs as one turn. Prints
// [{"reply", "status", "types"}, ...] as JSON, one entry per prompt.

import { createSession } from "@moonshot-ai/kimi-agent-sdk";

const [executable, workDir, env, sessionId, ...prompts] = process.argv.slice(2);
const session = createSession({ workDir, sessionId, executable, env: JSON.parse(env) });
const turns = [];
for (const text of prompts) {
  const turn = session.prompt(text);
  let reply = "";
  const types = [];
  for await (const event of turn) {
    types.push(event.type);
    if (event.type === "ContentPart" && event.payload.type === "text") {
      reply += event.payload.text;
    }
  }
  turns.push({ reply, status: (await turn.result).status, types });
}
await session.close();
process.stdout.write(`${JSON.stringify(turns)}\n`);
