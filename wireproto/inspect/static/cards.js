// Builders for the conversation's cards: tool calls, plans, approvals, forms.
// Every agent-controlled string goes in as text.

import { el, diffView, jsonTree, short } from "./dom.js";

export function toolCard(id, title, kind) {
  const status = el("span", { class: "status" });
  const body = el("div", { class: "tool-body" });
  const head = el("div", { class: "card-head" }, el("span", { class: "tool-title", text: title || id }), kind ? el("span", { class: "tag", text: kind }) : null, status);
  const card = el("div", { class: "card tool", "data-tool": id }, head, body);
  card.setStatus = (value) => { status.textContent = value || ""; status.className = `status st-${value || "none"}`; card.dataset.status = value || ""; };
  card.setTitle = (value) => { head.querySelector(".tool-title").textContent = value; };
  card.body = body;
  return card;
}

// ACP ToolCallContent[] -> elements.
export function acpToolContent(items) {
  const out = [];
  for (const item of items || []) {
    if (!item || typeof item !== "object") continue;
    if (item.type === "diff") out.push(diffView(item.path, item.oldText, item.newText));
    else if (item.type === "content" && item.content) out.push(contentBlock(item.content));
    else if (item.type === "terminal") out.push(el("div", { class: "note", text: `terminal ${item.terminalId}` }));
    else out.push(jsonTree(item));
  }
  return out;
}

export function contentBlock(block) {
  if (!block || typeof block !== "object") return el("div", { text: String(block) });
  if (block.type === "text") return el("pre", { class: "tool-text", text: block.text });
  if (block.type === "resource_link") return el("div", { class: "note", text: `resource ${block.uri}` });
  if (block.type === "resource" && block.resource) return el("pre", { class: "tool-text", text: block.resource.text !== undefined ? block.resource.text : `[${block.resource.mimeType || "blob"}]` });
  return el("div", { class: "note", text: `[${block.type}]` });
}

// Wire DisplayBlock[] -> elements.
export function wireDisplay(blocks) {
  const out = [];
  for (const b of blocks || []) {
    if (!b || typeof b !== "object") continue;
    if (b.type === "diff") out.push(diffView(b.path, b.old_text === "" ? null : b.old_text, b.new_text));
    else if (b.type === "todo") out.push(planList((b.items || []).map((i) => ({ content: i.title, status: i.status }))));
    else if (b.type === "brief") out.push(el("div", { class: "note", text: b.text }));
    else if (b.type === "shell") out.push(el("pre", { class: "tool-text", text: `$ ${b.command}` }));
    else out.push(jsonTree(b));
  }
  return out;
}

const PLAN_MARK = { completed: "\u2611", done: "\u2611", in_progress: "\u25b6", pending: "\u2610" };

export function planList(entries) {
  const list = el("ul", { class: "plan" });
  for (const e of entries) {
    list.append(el("li", { class: `plan-${e.status}` }, el("span", { class: "mark", text: PLAN_MARK[e.status] || "\u2022" }), el("span", { text: ` ${e.content}` })));
  }
  return list;
}

// Buttons answering a request; `answer(result)` sends it. The card is marked
// answered when the answer shows up in the recording (see markAnswered).
export function choiceCard(cls, head, details, choices, answer) {
  const buttons = el("div", { class: "buttons" });
  const card = el("div", { class: `card ${cls}` }, el("div", { class: "card-head", text: head }), ...details, buttons);
  for (const choice of choices) {
    buttons.append(el("button", { type: "button", class: choice.cls || "", "data-choice": choice.id, text: choice.label, onclick: () => answer(choice.result) }));
  }
  return card;
}

export function markAnswered(card, text) {
  card.classList.add("answered");
  for (const control of card.querySelectorAll("button, input, select, textarea")) control.disabled = true;
  card.append(el("div", { class: "answered-note", text }));
}

// An ACP form-mode elicitation: fields from the restricted JSON schema.
export function elicitationForm(message, schema, answer) {
  const fields = [];
  const form = el("form", { class: "elicitation" });
  const props = (schema && schema.properties) || {};
  const required = new Set((schema && schema.required) || []);
  for (const [name, prop] of Object.entries(props)) {
    const label = el("label", { class: "field" }, el("span", { text: `${prop.title || name}${required.has(name) ? " *" : ""}` }));
    let read;
    const options = prop.enum || (prop.oneOf || []).map((o) => o.const);
    const titles = prop.enum || (prop.oneOf || []).map((o) => o.title || o.const);
    if (prop.type === "string" && options.length) {
      const select = el("select", { name });
      options.forEach((value, i) => select.append(el("option", { value, text: titles[i] })));
      if (prop.default !== undefined) select.value = prop.default;
      label.append(select);
      read = () => select.value;
    } else if (prop.type === "boolean") {
      const box = el("input", { type: "checkbox", name, checked: prop.default === true });
      label.append(box);
      read = () => box.checked;
    } else if (prop.type === "number" || prop.type === "integer") {
      const input = el("input", { type: "number", name, value: prop.default !== undefined ? String(prop.default) : "" });
      label.append(input);
      read = () => (input.value === "" ? undefined : Number(input.value));
    } else if (prop.type === "array") {
      const items = prop.items || {};
      const values = items.enum || (items.anyOf || []).map((o) => o.const);
      const boxes = values.map((v) => el("input", { type: "checkbox", value: v }));
      boxes.forEach((b, i) => label.append(el("span", { class: "opt" }, b, ` ${values[i]}`)));
      read = () => boxes.filter((b) => b.checked).map((b) => b.value);
    } else {
      const input = el("input", { type: "text", name, value: prop.default !== undefined ? String(prop.default) : "" });
      label.append(input);
      read = () => input.value;
    }
    if (prop.description) label.append(el("small", { text: prop.description }));
    fields.push([name, read]);
    form.append(label);
  }
  const submit = el("button", { type: "submit", class: "primary", text: "Submit" });
  const decline = el("button", { type: "button", text: "Decline", onclick: () => answer({ action: "decline" }) });
  const cancel = el("button", { type: "button", text: "Cancel", onclick: () => answer({ action: "cancel" }) });
  form.append(el("div", { class: "buttons" }, submit, decline, cancel));
  form.addEventListener("submit", (event) => {
    event.preventDefault();
    const content = {};
    for (const [name, read] of fields) { const v = read(); if (v !== undefined) content[name] = v; }
    answer({ action: "accept", content });
  });
  return el("div", { class: "card question" }, el("div", { class: "card-head", text: "Question" }), el("div", { class: "q-text", text: message }), form);
}

// A Wire QuestionRequest: one group of choices per question.
export function wireQuestionForm(payload, answer) {
  const form = el("form", { class: "elicitation" });
  const reads = [];
  (payload.questions || []).forEach((q, qi) => {
    const group = el("fieldset", {}, el("legend", { text: q.header ? `${q.header}: ${q.question}` : q.question }));
    if (q.body) group.append(el("div", { class: "note", text: q.body }));
    const inputs = (q.options || []).map((o) => {
      const input = el("input", { type: q.multi_select ? "checkbox" : "radio", name: `q${qi}`, value: o.label });
      group.append(el("label", { class: "opt" }, input, ` ${o.label}`, o.description ? el("small", { text: ` ${o.description}` }) : null));
      return input;
    });
    reads.push([q.question, () => inputs.filter((i) => i.checked).map((i) => i.value).join(", ")]);
    form.append(group);
  });
  const submit = el("button", { type: "submit", class: "primary", text: "Submit" });
  const dismiss = el("button", { type: "button", text: "Dismiss", onclick: () => answer({ request_id: payload.id, answers: {} }) });
  form.append(el("div", { class: "buttons" }, submit, dismiss));
  form.addEventListener("submit", (event) => {
    event.preventDefault();
    const answers = {};
    for (const [question, read] of reads) { const v = read(); if (v) answers[question] = v; }
    answer({ request_id: payload.id, answers });
  });
  return el("div", { class: "card question" }, el("div", { class: "card-head", text: "Question" }), form);
}

export function noteLine(text, cls = "note") {
  return el("div", { class: cls, text: short(text, 400) });
}
