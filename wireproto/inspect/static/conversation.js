// The conversation view, rendered from the recorded messages alone (so a
// trace shows the same view, read-only): one view per session, a prompt box
// with the agent's slash commands, and the buttons and forms that answer it.

import { $, el, clear, short } from "./dom.js";
import { toolCard, acpToolContent, contentBlock, wireDisplay, planList, choiceCard, markAnswered, elicitationForm, wireQuestionForm, noteLine } from "./cards.js";

const WIRE = "wire";
const APPROVALS = [["approve", "Approve", "primary"], ["approve_for_session", "Approve for session", ""], ["reject", "Reject", "danger"]];

class SessionView {
  constructor(id) {
    this.id = id;
    this.node = el("div", { class: "session", "data-session": id });
    this.bubble = null;      // the agent reply being streamed
    this.bubbleKey = null;
    this.thought = null;
    this.thoughtKey = null;
    this.tools = new Map();
    this.running = null;     // JSON id of the running prompt
    this.commands = [];
    this.options = [];       // ACP session config options, as the agent last sent them
    this.title = "";
  }

  append(node) {
    this.node.append(node);
    this.bubble = null;
    this.thought = null;
    return node;
  }

  // Append streamed text to the bubble of `kind` (agent, thought, user) that
  // ends the view, or start a new one (also when the message key changes).
  stream(kind, key, text) {
    const slot = kind === "thought" ? "thought" : "bubble";
    const keySlot = `${slot}Key`;
    const fresh = !this[slot] || (key && this[keySlot] !== key) || this.node.lastChild !== this[slot]
      || !this[slot].classList.contains(kind);
    if (fresh) {
      const node = el("div", { class: `msg ${kind}` });
      this.node.append(node);
      this.bubble = null;
      this.thought = null;
      this[slot] = node;
      this[keySlot] = key;
    }
    this[slot].append(document.createTextNode(text));
  }
}

export class Conversation {
  constructor(model, app) {
    this.model = model;
    this.app = app;
    this.sessions = new Map();
    this.current = null;
    this.protocol = null;
    this.wireCommands = [];
    this.cards = new Map();     // JSON id of an agent request -> its card
    this.synced = false;
    this.autoSession = false;
    $("session").addEventListener("change", () => this.show($("session").value));
    $("new-session").addEventListener("click", () => this.newSession());
    $("list-sessions").addEventListener("click", () => this.listSessions());
    $("load-session").addEventListener("click", () => this.loadSession($("stored-session").value));
    $("prompt-form").addEventListener("submit", (e) => { e.preventDefault(); this.sendPrompt(); });
    $("cancel").addEventListener("click", () => this.cancel());
    const prompt = $("prompt");
    prompt.addEventListener("input", () => this.complete());
    prompt.addEventListener("keydown", (e) => this.promptKey(e));
  }

  setInfo(info) {
    this.protocol = info.protocol || this.protocol;
    $("new-session").hidden = this.protocol === WIRE;
    $("list-sessions").hidden = this.protocol === WIRE;
    if (info.synced) this.synced = true;
    this.maybeStart(info);
    this.updateButtons();
  }

  // A live ACP agent without a session gets one, once, when the page opens.
  maybeStart(info) {
    if (this.autoSession || !this.synced || info.readOnly || info.state !== "running" || this.protocol === WIRE) return;
    this.autoSession = true;
    const asked = this.model.records.some((r) => r.dir === "send" && ["session/new", "session/load", "session/resume"].includes(r.method));
    if (!asked) this.newSession();
  }

  newSession() {
    this.app.send({ jsonrpc: "2.0", method: "session/new", params: { cwd: this.app.info.cwd || "/", mcpServers: [] } }, true).catch((err) => this.flash(err.message));
  }

  async listSessions() {
    try {
      this.listing = JSON.stringify(await this.app.send({ jsonrpc: "2.0", method: "session/list", params: { cwd: this.app.info.cwd || undefined } }, true));
    } catch (err) { this.flash(err.message); }
  }

  showStored(result) {
    const select = $("stored-session");
    clear(select);
    for (const s of (result && result.sessions) || []) {
      select.append(el("option", { value: s.sessionId, text: short(`${s.title || "(untitled)"} \u00b7 ${s.sessionId}`, 60) }));
    }
    $("stored").hidden = false;
    $("load-session").disabled = select.options.length === 0;
    if (!select.options.length) this.flash("the agent has no stored sessions");
  }

  loadSession(id) {
    if (!id) return;
    this.app.send({ jsonrpc: "2.0", method: "session/load", params: { sessionId: id, cwd: this.app.info.cwd || "/", mcpServers: [] } }, true)
      .catch((err) => this.flash(err.message));
  }

  // A session being loaded is shown afresh: the agent replays its history.
  reset(id) {
    const old = this.sessions.get(id);
    if (!old) return;
    const view = new SessionView(id);
    view.commands = old.commands;
    view.options = old.options;
    this.sessions.set(id, view);
    if (this.current === old) this.show(id);
  }

  session(id) {
    let view = this.sessions.get(id);
    if (!view) {
      view = new SessionView(id);
      this.sessions.set(id, view);
      $("session").append(el("option", { value: id, text: short(id, 40) }));
      if (!this.current) this.show(id);
    }
    return view;
  }

  show(id) {
    this.current = this.sessions.get(id) || null;
    $("session").value = id;
    clear($("conversation"));
    if (this.current) $("conversation").append(this.current.node);
    this.renderOptions();
    this.updateButtons();
  }

  setOptions(view, options) {
    if (!Array.isArray(options)) return;
    view.options = options;
    if (view === this.current) this.renderOptions();
  }

  // The session's config options (mode, model, ...) as controls that set them.
  renderOptions() {
    const box = $("options");
    clear(box);
    const view = this.current;
    if (!view) return;
    for (const o of view.options) {
      if (!o || typeof o !== "object") continue;
      const label = el("label", { class: "option", title: o.description || "" }, el("span", { text: `${o.name || o.id} ` }));
      let control;
      if (o.type === "boolean") {
        control = el("input", { type: "checkbox", "data-option": o.id, checked: o.currentValue === true });
        control.addEventListener("change", () => this.setOption(view, o, control.checked));
      } else {
        control = el("select", { "data-option": o.id });
        const flat = (o.options || []).flatMap((item) => (Array.isArray(item.options) ? item.options : [item]));
        for (const choice of flat) control.append(el("option", { value: choice.value, text: choice.name || choice.value }));
        control.value = o.currentValue;
        control.addEventListener("change", () => this.setOption(view, o, control.value));
      }
      control.disabled = Boolean(this.app.info.readOnly);
      label.append(control);
      box.append(label);
    }
  }

  setOption(view, option, value) {
    const params = { sessionId: view.id, configId: option.id, value };
    if (option.type === "boolean") params.type = "boolean";
    this.app.send({ jsonrpc: "2.0", method: "session/set_config_option", params }, true).catch((err) => this.flash(err.message));
  }

  flash(text) {
    $("turn-state").textContent = text;
  }

  updateButtons() {
    const view = this.current;
    const live = !this.app.info.readOnly;
    $("send").disabled = !live;
    $("prompt").disabled = !live;
    $("cancel").disabled = !live || !view || view.running === null;
    $("turn-state").textContent = view && view.running !== null ? "turn running\u2026" : "";
  }

  scroll() {
    const box = $("conversation");
    box.scrollTop = box.scrollHeight;
  }

  add(rec) {
    if (rec.msg === undefined) return;
    if (rec.kind === "response" && rec.method === "initialize" && rec.msg.result && Array.isArray(rec.msg.result.slash_commands)) {
      this.wireCommands = rec.msg.result.slash_commands;
    }
    if ((rec.kind === "response" || rec.kind === "error") && rec.dir === "send") this.answered(rec);
    const wire = this.protocol === WIRE || (!this.protocol && ["event", "request", "prompt"].includes(rec.method));
    if (wire) this.wire(rec); else this.acp(rec);
    this.schedule();
  }

  // Scroll and button state once per frame, not once per message.
  schedule() {
    if (this.pending) return;
    this.pending = true;
    requestAnimationFrame(() => {
      this.pending = false;
      if (this.current && this.current.node.isConnected) this.scroll();
      this.updateButtons();
    });
  }

  answered(rec) {
    const card = this.cards.get(JSON.stringify(rec.id));
    if (!card || card.classList.contains("answered")) return;
    const r = rec.msg.result || {};
    let text = "answered";
    if (rec.kind === "error") text = `answered with error ${rec.msg.error && rec.msg.error.message}`;
    else if (r.outcome) text = r.outcome.outcome === "selected" ? `answered: ${r.outcome.optionId}` : `answered: ${r.outcome.outcome}`;
    else if (r.action) text = `answered: ${r.action}${r.content ? " " + JSON.stringify(r.content) : ""}`;
    else if (r.response) text = `answered: ${r.response}`;
    else if (r.answers) text = Object.keys(r.answers).length ? `answered: ${Object.values(r.answers).join("; ")}` : "dismissed";
    markAnswered(card, text);
  }

  reply(request, result) {
    this.app.send({ jsonrpc: "2.0", id: request.id, result }, false).catch((err) => this.flash(err.message));
  }

  // ---------------------------------------------------------------- ACP

  acp(rec) {
    const msg = rec.msg;
    if (rec.dir === "send" && rec.method === "session/prompt") {
      const view = this.session(msg.params.sessionId);
      const text = (msg.params.prompt || []).map((b) => (b.type === "text" ? b.text : `[${b.type}]`)).join("\n");
      view.append(el("div", { class: "msg user", text }));
      view.running = JSON.stringify(msg.id);
      return;
    }
    if (rec.dir === "send" && rec.method === "session/load" && msg.params) this.reset(msg.params.sessionId);
    if (rec.dir !== "recv") return;
    if ((rec.kind === "response" || rec.kind === "error") && rec.pair) {
      const method = rec.method;
      if (method === "session/list" && rec.kind === "response" && JSON.stringify(rec.id) === this.listing) this.showStored(msg.result);
      if (["session/new", "session/load", "session/resume"].includes(method)) {
        const id = (msg.result && msg.result.sessionId) || (rec.pair.msg.params && rec.pair.msg.params.sessionId);
        if (id && rec.kind === "response") {
          this.setOptions(this.session(id), msg.result.configOptions);
          this.show(id);
        }
        else if (rec.kind === "error") this.flash(`${method} failed: ${msg.error.message}`);
      } else if (method === "session/set_config_option" && rec.kind === "response") {
        this.setOptions(this.session(rec.pair.msg.params.sessionId), msg.result && msg.result.configOptions);
      } else if (method === "session/prompt") {
        const view = this.session(rec.pair.msg.params.sessionId);
        if (view.running === JSON.stringify(rec.id)) view.running = null;
        view.append(rec.kind === "error" ? noteLine(`error ${msg.error.code}: ${msg.error.message}`, "error") : noteLine(`[${msg.result && msg.result.stopReason}]`, "stop"));
      }
      return;
    }
    if (rec.method === "session/update" && msg.params && msg.params.update) {
      this.acpUpdate(this.session(msg.params.sessionId), msg.params.update);
      return;
    }
    if (rec.kind === "request") this.acpRequest(rec);
  }

  acpUpdate(view, u) {
    const kind = u.sessionUpdate;
    const text = (c) => (c && c.type === "text" ? c.text : `[${c && c.type}]`);
    if (kind === "agent_message_chunk") view.stream("agent", u.messageId, text(u.content));
    else if (kind === "agent_thought_chunk") view.stream("thought", u.messageId, text(u.content));
    else if (kind === "user_message_chunk") view.stream("user", u.messageId, text(u.content));
    else if (kind === "tool_call" || kind === "tool_call_update") {
      let card = view.tools.get(u.toolCallId);
      if (!card) { card = toolCard(u.toolCallId, u.title, u.kind); view.tools.set(u.toolCallId, card); view.append(card); }
      if (u.title) card.setTitle(u.title);
      if (u.status) card.setStatus(u.status);
      if (Array.isArray(u.content)) { clear(card.body); card.body.append(...acpToolContent(u.content)); }
    } else if (kind === "plan") view.append(el("div", { class: "card plan-card" }, el("div", { class: "card-head", text: "Plan" }), planList(u.entries || [])));
    else if (kind === "available_commands_update") view.commands = u.availableCommands || [];
    else if (kind === "session_info_update") {
      if (u.title) { view.title = u.title; const opt = [...$("session").options].find((o) => o.value === view.id); if (opt) opt.textContent = short(`${u.title} (${view.id})`, 60); }
    } else if (kind === "usage_update") {
      const { sessionUpdate, ...rest } = u;
      view.append(noteLine(`usage: ${JSON.stringify(rest)}`, "usage"));
    } else if (kind === "current_mode_update") view.append(noteLine(`mode: ${u.currentModeId}`));
    else if (kind === "config_option_update") this.setOptions(view, u.configOptions);
    else view.append(noteLine(`${kind}: ${JSON.stringify(u)}`));
  }

  acpRequest(rec) {
    const msg = rec.msg;
    const p = msg.params || {};
    const view = this.session(p.sessionId || this.current?.id || "(no session)");
    let card;
    if (rec.method === "session/request_permission") {
      const tool = p.toolCall || {};
      const details = [el("div", { class: "q-text", text: tool.title || tool.toolCallId || "a tool call" }), ...acpToolContent(tool.content)];
      const choices = (p.options || []).map((o) => ({ id: o.optionId, label: o.name || o.optionId, cls: o.kind && o.kind.startsWith("reject") ? "danger" : o.kind === "allow_once" ? "primary" : "", result: { outcome: { outcome: "selected", optionId: o.optionId } } }));
      choices.push({ id: "cancelled", label: "Dismiss", result: { outcome: { outcome: "cancelled" } } });
      card = choiceCard("approval", "Approval requested", details, choices, (result) => this.reply(msg, result));
    } else if (rec.method === "elicitation/create" && p.mode === "form") {
      card = elicitationForm(p.message, p.requestedSchema, (result) => this.reply(msg, result));
    } else {
      card = el("div", { class: "card unknown-request" }, el("div", { class: "card-head", text: `The agent asks ${rec.method}` }), el("div", { class: "note", text: "No view answers this request: answer it by hand in the Raw composer tab." }));
    }
    this.cards.set(JSON.stringify(msg.id), card);
    view.append(card);
  }

  // ---------------------------------------------------------------- Wire

  wire(rec) {
    const msg = rec.msg;
    const view = this.session(WIRE);
    if (rec.dir === "send" && rec.method === "prompt") { view.running = JSON.stringify(msg.id); return; }
    if (rec.dir !== "recv") return;
    if ((rec.kind === "response" || rec.kind === "error") && rec.method === "prompt") {
      if (view.running === JSON.stringify(rec.id)) view.running = null;
      view.append(rec.kind === "error" ? noteLine(`error ${msg.error.code}: ${msg.error.message}`, "error") : noteLine(`[${msg.result && msg.result.status}]`, "stop"));
      return;
    }
    const p = msg.params || {};
    if (rec.method === "event") this.wireEvent(view, p.type, p.payload || {});
    else if (rec.method === "request") this.wireRequest(view, msg, p.type, p.payload || {});
  }

  wireEvent(view, type, e, parent = null) {
    if (type === "TurnBegin") view.append(el("div", { class: "msg user", text: typeof e.user_input === "string" ? e.user_input : JSON.stringify(e.user_input) }));
    else if (type === "ContentPart") {
      if (parent) { parent.body.append(el("span", { text: e.text || e.think || "" })); return; }
      if (e.type === "text") view.stream("agent", null, e.text);
      else if (e.type === "think") view.stream("thought", null, e.think);
      else view.append(noteLine(`[${e.type}]`));
    } else if (type === "ToolCall") {
      const fn = e.function || {};
      const card = toolCard(e.id, fn.name, null);
      card.setStatus("in_progress");
      card.body.append(el("pre", { class: "tool-text", text: fn.arguments || "" }));
      view.tools.set(e.id, card);
      view.append(card);
    } else if (type === "ToolResult") {
      const card = view.tools.get(e.tool_call_id);
      const rv = e.return_value || {};
      if (!card) { view.append(noteLine(`tool result for ${e.tool_call_id}`)); return; }
      card.setStatus(rv.is_error ? "failed" : "completed");
      const shown = wireDisplay(rv.display);
      if (shown.length) { clear(card.body); card.body.append(...shown); }
      if (rv.message) card.body.append(el("div", { class: "note", text: rv.message }));
    } else if (type === "SubagentEvent") {
      const card = view.tools.get(e.parent_tool_call_id);
      const inner = e.event || {};
      this.wireEvent(view, inner.type, inner.payload || {}, card || null);
    } else if (type === "StatusUpdate") {
      const usage = { ...(e.token_usage ? { tokens: e.token_usage } : {}), ...(e.context_usage !== undefined && e.context_usage !== null ? { context: e.context_usage } : {}) };
      if (Object.keys(usage).length) view.append(noteLine(`usage: ${JSON.stringify(usage)}`, "usage"));
    } else if (type === "StepInterrupted") view.append(noteLine("step interrupted"));
    else if (type === "StepRetry") view.append(noteLine(`retry ${e.n} (next attempt ${e.next_attempt} of ${e.max_attempts})`));
    else if (["StepBegin", "TurnEnd", "ApprovalResponse", "ApprovalRequestResolved", "ToolCallPart", "CompactionBegin", "CompactionEnd"].includes(type)) { /* timeline only */ }
    else view.append(noteLine(`${type}: ${JSON.stringify(e)}`));
  }

  wireRequest(view, msg, type, payload) {
    let card;
    if (type === "ApprovalRequest") {
      const details = [el("div", { class: "q-text", text: `${payload.sender}: ${payload.action}` }), el("div", { class: "note", text: payload.description }), ...wireDisplay(payload.display)];
      const choices = APPROVALS.map(([id, label, cls]) => ({ id, label, cls, result: { request_id: payload.id, response: id, feedback: "" } }));
      card = choiceCard("approval", "Approval requested", details, choices, (result) => this.reply(msg, result));
    } else if (type === "QuestionRequest") {
      card = wireQuestionForm(payload, (result) => this.reply(msg, result));
    } else {
      card = el("div", { class: "card unknown-request" }, el("div", { class: "card-head", text: `The agent asks ${type}` }), el("div", { class: "note", text: "No view answers this request: answer it by hand in the Raw composer tab." }));
    }
    this.cards.set(JSON.stringify(msg.id), card);
    view.append(card);
  }

  // ---------------------------------------------------------------- prompt box

  commands() {
    if (this.protocol === WIRE) return this.wireCommands.map((c) => ({ name: c.name, description: c.description || "" }));
    return (this.current ? this.current.commands : []).map((c) => ({ name: c.name, description: c.description || "", hint: c.input && c.input.hint }));
  }

  matches() {
    const value = $("prompt").value;
    if (!value.startsWith("/") || /\s/.test(value)) return [];
    return this.commands().filter((c) => `/${c.name}`.startsWith(value));
  }

  complete() {
    const box = $("completions");
    clear(box);
    const found = this.matches();
    box.hidden = found.length === 0;
    for (const c of found) {
      box.append(el("button", { type: "button", class: "completion", "data-command": c.name, onclick: () => this.choose(c) },
        el("strong", { text: `/${c.name}` }), c.hint ? el("span", { text: ` ${c.hint}` }) : null, el("span", { class: "count", text: ` ${c.description}` })));
    }
  }

  choose(command) {
    $("prompt").value = `/${command.name} `;
    $("completions").hidden = true;
    $("prompt").focus();
  }

  promptKey(event) {
    if (event.key === "Tab") {
      const found = this.matches();
      if (found.length) { event.preventDefault(); this.choose(found[0]); }
    } else if (event.key === "Enter" && !event.shiftKey) {
      event.preventDefault();
      this.sendPrompt();
    } else if (event.key === "Escape") {
      $("completions").hidden = true;
    }
  }

  async sendPrompt() {
    const text = $("prompt").value;
    if (!text.trim() || this.app.info.readOnly) return;
    let msg;
    if (this.protocol === WIRE) msg = { jsonrpc: "2.0", method: "prompt", params: { user_input: text } };
    else {
      if (!this.current) { this.flash("no session yet: press New session"); return; }
      msg = { jsonrpc: "2.0", method: "session/prompt", params: { sessionId: this.current.id, prompt: [{ type: "text", text }] } };
    }
    $("prompt").value = "";
    $("completions").hidden = true;
    try { await this.app.send(msg, true); } catch (err) { this.flash(err.message); }
  }

  async cancel() {
    const view = this.current;
    if (!view || view.running === null) return;
    const msg = this.protocol === WIRE
      ? { jsonrpc: "2.0", method: "cancel", params: {} }
      : { jsonrpc: "2.0", method: "session/cancel", params: { sessionId: view.id } };
    try { await this.app.send(msg, this.protocol === WIRE); } catch (err) { this.flash(err.message); }
  }
}
