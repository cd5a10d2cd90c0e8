// Drive a Wire agent with the official Kimi Wire SDK (@moonshot-ai/kimi-agent-sdk).
//
// Usage: node wire_sdk_client.mjs <executable> <absolute workdir> '<JSON list of steps>'
//
// The SDK spawns "<executable> --session ID --work-dir DIR --wire ..." (its own
// convention). Each step is {prompt, approve?: "approve"|"reject"|"interrupt", interrupt?:
// true}: the prompt is sent, approvals are answered as told ("interrupt": the turn is
// interrupted instead of answering), and with interrupt the turn is interrupted at its
// first text. One JSON summary is printed on stdout for the
// Python test to check.

import { createSession } from "@moonshot-ai/kimi-agent-sdk";

const [executable, workDir, stepsJson, sessionId] = process.argv.slice(2);
const steps = JSON.parse(stepsJson);
const session = createSession({ workDir, executable, sessionId, thinking: false });
const summary = { sessionId: session.sessionId, turns: [] };

for (const step of steps) {
  const turn = session.prompt(step.prompt);
  const record = { prompt: step.prompt, text: "", events: [], approvals: [], status: null };
  let interrupted = false;
  for await (const event of turn) {
    record.events.push(event.type);
    if (event.type === "ContentPart" && event.payload.type === "text") {
      record.text += event.payload.text;
      if (step.interrupt && !interrupted) {
        interrupted = true;
        await turn.interrupt();
      }
    } else if (event.type === "ApprovalRequest") {
      record.approvals.push({ sender: event.payload.sender, action: event.payload.action });
      if (step.approve === "interrupt") {
        await turn.interrupt();
      } else {
        await turn.approve(event.payload.id, step.approve ?? "reject");
      }
    }
  }
  const result = await turn.result;
  record.status = result?.status ?? null;
  summary.turns.push(record);
}
await session.close();
console.log(JSON.stringify(summary));
