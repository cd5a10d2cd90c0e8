// The raw composer: any JSON-RPC message by hand, and hand-written answers to
// the agent's requests that no other view answers.

import { $, el, clear, jsonTree, short } from "./dom.js";

export class Composer {
  constructor(model, app) {
    this.model = model;
    this.app = app;
    this.waitingFor = null;   // the id of the last request sent from here
    $("raw-send").addEventListener("click", () => this.sendRaw());
    this.renderPending();
  }

  setInfo(info) {
    $("raw-send").disabled = Boolean(info.readOnly);
    if (info.protocol === "wire" && $("raw").value.includes("session/list")) {
      $("raw").value = '{"jsonrpc": "2.0", "method": "replay", "params": {}}';
    }
  }

  status(text, bad = false) {
    $("raw-status").textContent = text;
    $("raw-status").classList.toggle("bad", bad);
  }

  async sendRaw() {
    let msg;
    try {
      msg = JSON.parse($("raw").value);
    } catch (err) {
      this.status(`not JSON: ${err.message}`, true);
      return;
    }
    const fresh = $("fresh").checked && msg && typeof msg === "object" && !Array.isArray(msg) && typeof msg.method === "string";
    if (fresh && !("id" in msg)) msg.id = 0;  // replaced by the inspector
    try {
      const id = await this.app.send(msg, fresh);
      this.waitingFor = id === undefined || id === null ? null : JSON.stringify(id);
      clear($("raw-answer"));
      this.status(this.waitingFor === null ? "sent" : `sent with id ${this.waitingFor}; waiting for the answer\u2026`);
    } catch (err) {
      this.status(err.message, true);
    }
  }

  add(rec) {
    if (rec.dir === "recv" && (rec.kind === "response" || rec.kind === "error") && this.waitingFor !== null && JSON.stringify(rec.id) === this.waitingFor) {
      this.waitingFor = null;
      this.status(`answered (#${rec.seq})`);
      clear($("raw-answer"));
      $("raw-answer").append(jsonTree(rec.msg));
    }
    if ((rec.kind === "request" && rec.dir === "recv") || ((rec.kind === "response" || rec.kind === "error") && rec.dir === "send")) {
      this.renderPending();
    }
  }

  // Every agent -> client request still open, with a form to answer it.
  renderPending() {
    const box = $("pending");
    clear(box);
    const waiting = this.model.waiting();
    if (!waiting.length) { box.append(el("p", { class: "hint", text: "none" })); return; }
    for (const rec of waiting) {
      const answer = el("textarea", { rows: 3, spellcheck: "false", class: "answer" });
      answer.value = JSON.stringify({ jsonrpc: "2.0", id: rec.id, result: {} }, null, 1);
      const error = el("button", { type: "button", text: "Answer with an error", onclick: () => {
        answer.value = JSON.stringify({ jsonrpc: "2.0", id: rec.id, error: { code: -32601, message: `Method not found: ${rec.method}` } }, null, 1);
      } });
      const send = el("button", { type: "button", text: "Send answer", onclick: async () => {
        let msg;
        try { msg = JSON.parse(answer.value); } catch (err) { note.textContent = `not JSON: ${err.message}`; return; }
        try { await this.app.send(msg, false); } catch (err) { note.textContent = err.message; }
      } });
      const note = el("span", { class: "count" });
      const card = el("div", { class: "card pending-request", "data-method": rec.method },
        el("div", { class: "card-head", text: `#${rec.seq} ${rec.method} (id ${short(rec.id, 40)})` }),
        el("details", {}, el("summary", { text: "params" }), jsonTree(rec.msg.params === undefined ? null : rec.msg.params)),
        answer, el("div", { class: "buttons" }, send, error, note));
      if (this.app.info.readOnly) { send.disabled = true; error.disabled = true; }
      box.append(card);
    }
  }
}
