// Entry point: the websocket to the inspector, and the wiring of the views.

import { $, el, clear, jsonTree, formatSize } from "./dom.js";
import { Model } from "./model.js";
import { Timeline } from "./timeline.js";
import { Conversation } from "./conversation.js";
import { Composer } from "./composer.js";

const token = new URLSearchParams(location.search).get("token");
const model = new Model();
const app = {
  info: { readOnly: true, protocol: null, state: "connecting" },
  ws: null,
  refs: new Map(),
  nextRef: 1,
  // Send a message to the agent; resolves with the id it went out with.
  send(msg, fresh = false) {
    if (!this.ws || this.ws.readyState !== WebSocket.OPEN) return Promise.reject(new Error("not connected to the inspector"));
    const ref = this.nextRef++;
    return new Promise((resolve, reject) => {
      this.refs.set(ref, { resolve, reject });
      this.ws.send(JSON.stringify({ type: "send", msg, fresh, ref }));
    });
  },
  decode(rec) {
    if (this.ws && this.ws.readyState === WebSocket.OPEN) {
      this.ws.send(JSON.stringify({ type: "decode", seq: rec.seq, pair: rec.kind === "response" || rec.kind === "error" ? (rec.pair ? rec.pair.seq : null) : null }));
    }
  },
};
window.inspector = { model, app };  // for tests and the console

const timeline = new Timeline(model, showDetail);
const conversation = new Conversation(model, app);
const composer = new Composer(model, app);
model.onRecord((rec) => { timeline.add(rec); conversation.add(rec); composer.add(rec); });

function showDetail(rec) {
  clear($("json"));
  clear($("meaning"));
  if (rec === null) { $("detail-head").textContent = ""; return; }
  const parts = [`#${rec.seq}`, rec.kind, rec.label, formatSize(rec.size), `t=${rec.t.toFixed(6)} s`];
  if (rec.pair) parts.push(rec.kind === "request" ? `answered by #${rec.pair.seq}` : `answers #${rec.pair.seq}`);
  if (rec.latency !== null) parts.push(`${(rec.latency * 1000).toFixed(2)} ms`);
  $("detail-head").textContent = parts.filter(Boolean).join(" \u00b7 ");
  $("json").append(rec.msg !== undefined ? jsonTree(rec.msg) : el("pre", { class: "raw-text", text: rec.text }));
  if (rec.pair) {
    $("json").append(el("button", { type: "button", class: "link", text: `go to #${rec.pair.seq}`, onclick: () => timeline.select(rec.pair) }));
  }
  $("meaning").append(el("span", { class: "count", text: "decoding\u2026" }));
  app.decode(rec);
}

function showMeaning(frame) {
  if (!timeline.selected || timeline.selected.seq !== frame.seq) return;
  const m = frame.meaning || {};
  clear($("meaning"));
  $("meaning").append(el("div", { class: "m-type", text: m.type || "" }));
  if (m.errors && m.errors.length) {
    const list = el("ul", { class: "m-errors" });
    for (const e of m.errors) list.append(el("li", { text: e }));
    $("meaning").append(list);
  } else if (m.value !== null && m.value !== undefined) {
    $("meaning").append(el("div", { class: "m-ok", text: "valid" }));
  }
  if (m.value !== null && m.value !== undefined) {
    const box = el("details", { class: "m-value" }, el("summary", { text: "as the library decodes it" }));
    box.append(jsonTree(m.value));
    $("meaning").append(box);
  }
}

function setInfo(frame) {
  app.info = { ...app.info, ...frame };
  $("title").textContent = app.info.title || "";
  $("protocol").textContent = app.info.protocol ? app.info.protocol.toUpperCase() : "protocol ?";
  const gone = ["disconnected", "no token"].includes(app.info.state);
  const state = app.info.mode === "trace" && !gone ? "read-only trace" : app.info.state;
  $("state").textContent = state;
  $("state").className = `badge s-${state.replace(/[^a-z]+/g, "-")}`;
  $("detail").textContent = app.info.detail || "";
  document.body.classList.toggle("read-only", Boolean(app.info.readOnly));
  conversation.setInfo(app.info);
  composer.setInfo(app.info);
}

function receive(event) {
  const frame = JSON.parse(event.data);
  switch (frame.type) {
    case "hello": setInfo(frame); break;
    case "status": setInfo(frame); break;
    case "synced": setInfo({ synced: true }); break;
    case "records": for (const item of frame.items) model.add(item); break;
    case "record": model.add(frame); break;
    case "decoded": showMeaning(frame); break;
    case "sent": {
      const waiter = app.refs.get(frame.ref);
      app.refs.delete(frame.ref);
      if (waiter) waiter.resolve(frame.id);
      break;
    }
    case "error": {
      const waiter = app.refs.get(frame.ref);
      app.refs.delete(frame.ref);
      if (waiter) waiter.reject(new Error(frame.message));
      else $("detail").textContent = frame.message;
      break;
    }
    default: break;
  }
}

function connect() {
  if (!token) {
    setInfo({ state: "no token", detail: "This page needs its token: open the whole URL that wireproto inspect printed." });
    return;
  }
  const scheme = location.protocol === "https:" ? "wss:" : "ws:";
  const ws = new WebSocket(`${scheme}//${location.host}/ws?token=${encodeURIComponent(token)}`);
  app.ws = ws;
  ws.addEventListener("message", receive);
  ws.addEventListener("close", () => {
    setInfo({ state: "disconnected", detail: "The inspector is gone (reload the page when it runs again)." });
    for (const waiter of app.refs.values()) waiter.reject(new Error("disconnected"));
    app.refs.clear();
  });
}

// Export: the inspector's own recording (byte for byte) while it runs; once it
// is gone, what this page received (re-encoded from the parsed messages).
$("export").addEventListener("click", () => {
  const name = `wireproto-trace-${new Date().toISOString().replace(/[:.]/g, "-")}.jsonl`;
  const live = app.ws && app.ws.readyState === WebSocket.OPEN;
  let href = `/export.jsonl?token=${encodeURIComponent(token)}`;
  if (!live) href = URL.createObjectURL(new Blob([model.exportTrace()], { type: "application/x-ndjson" }));
  const link = el("a", { href, download: name });
  document.body.append(link);
  link.click();
  link.remove();
  if (!live) setTimeout(() => URL.revokeObjectURL(href), 10000);
});

for (const tab of document.querySelectorAll(".tab")) {
  tab.addEventListener("click", () => {
    for (const other of document.querySelectorAll(".tab")) other.classList.toggle("active", other === tab);
    for (const page of document.querySelectorAll(".tabpage")) page.hidden = page.id !== `tab-${tab.dataset.tab}`;
  });
}

window.inspector.timeline = timeline;
connect();
