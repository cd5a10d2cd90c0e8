// Drive a Wire agent with the official Kimi Wire SDK (@moonshot-ai/kimi-agent-sdk).
//
// Usage: node wire_sdk_client.mjs <executable> <absolute workdir> '<JSON list of steps>'
//          ['<JSON options: {sessionId?, tools?: [{name, description, reply}], replay?}>']
//
// The SDK spawns "<executable> --session ID --work-dir DIR --wire ..." (its own
// convention). Each step is {prompt, approve?: "approve"|"reject"|"interrupt", interrupt?:
// true, answer?: LABEL}: the prompt is sent, approvals are answered as told ("interrupt":
// the turn is interrupted instead of answering), questions are answered with LABEL, and
// with interrupt the turn is interrupted at its first text. Each tool in the options is declared as an external tool (one string
// parameter "key"; its calls are recorded and answered "REPLY KEY"). With replay, the
// session is then opened again by a new process (the SDK's ProtocolClient, same session
// id) and its history replayed. One JSON summary is printed on stdout for the Python
// test to check.

import { createExternalTool, createSession, ProtocolClient } from "@moonshot-ai/kimi-agent-sdk";
import { z } from "zod";

const [executable, workDir, stepsJson, optionsJson] = process.argv.slice(2);
const steps = JSON.parse(stepsJson);
const options = JSON.parse(optionsJson ?? "{}");
const toolCalls = [];
const externalTools = (options.tools ?? []).map((tool) => createExternalTool({
  name: tool.name,
  description: tool.description,
  parameters: z.object({ key: z.string() }),
  handler: async (params) => {
    toolCalls.push({ name: tool.name, params });
    return { output: `${tool.reply} ${params.key}`, message: "ok" };
  },
}));
const session = createSession({ workDir, executable, sessionId: options.sessionId,
                                thinking: false, externalTools });
const summary = { sessionId: session.sessionId, turns: [], toolCalls };

for (const step of steps) {
  const turn = session.prompt(step.prompt);
  const record = { prompt: step.prompt, text: "", events: [], approvals: [], results: [],
                   questions: [], status: null };
  let interrupted = false;
  for await (const event of turn) {
    record.events.push(event.type);
    if (event.type === "ContentPart" && event.payload.type === "text") {
      record.text += event.payload.text;
      if (step.interrupt && !interrupted) {
        interrupted = true;
        await turn.interrupt();
      }
    } else if (event.type === "QuestionRequest") {
      const answers = {};
      for (const item of event.payload.questions) {
        record.questions.push({ question: item.question,
                                options: item.options.map((o) => o.label) });
        if (step.answer !== undefined) answers[item.question] = step.answer;
      }
      await turn.respondQuestion(event.payload.id, event.payload.id, answers);
    } else if (event.type === "ToolResult") {
      const value = event.payload.return_value;
      record.results.push({ isError: value.is_error, output: value.output });
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
if (options.replay) {
  const client = new ProtocolClient();
  await client.start({ sessionId: session.sessionId, workDir, executablePath: executable });
  const { events, result } = client.sendReplay();
  const replay = { events: [], userInputs: [], text: "" };
  for await (const event of events) {
    replay.events.push(event.type);
    if (event.type === "TurnBegin") replay.userInputs.push(event.payload.user_input);
    if (event.type === "ContentPart" && event.payload.type === "text") {
      replay.text += event.payload.text;
    }
  }
  replay.result = await result;
  await client.stop();
  summary.replay = replay;
}
console.log(JSON.stringify(summary));
