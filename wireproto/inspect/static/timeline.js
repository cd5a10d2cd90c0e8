// The timeline: a virtual list (only the visible rows exist in the DOM), so
// that tens of thousands of messages stay responsive; filters; pause; clear.

import { $, el, clear, formatSize, short } from "./dom.js";

const ROW = 22;
const ARROW = { send: "\u2192 agent", recv: "\u2190 agent" };

export class Timeline {
  constructor(model, onSelect) {
    this.model = model;
    this.onSelect = onSelect;
    this.visible = [];       // filtered records, in order
    this.paused = false;
    this.clearedBefore = -1; // records with seq <= this are hidden
    this.selected = null;
    this.dirty = false;
    this.box = $("timeline");
    this.rows = $("rows");
    this.spacer = $("spacer");
    this.filters = { text: "", method: "", session: "", dir: "" };
    this.knownMethods = new Set();
    this.knownSessions = new Set();
    this.box.addEventListener("scroll", () => this.draw());
    this.box.addEventListener("keydown", (e) => this.key(e));
    for (const [id, name] of [["f-text", "text"], ["f-method", "method"], ["f-session", "session"], ["f-dir", "dir"]]) {
      $(id).addEventListener("input", () => { this.filters[name] = $(id).value.trim().toLowerCase(); this.refilter(); });
    }
    $("pause").addEventListener("click", () => this.setPaused(!this.paused));
    $("clear").addEventListener("click", () => this.clearView());
    window.addEventListener("resize", () => this.draw());
  }

  matches(rec) {
    const f = this.filters;
    if (rec.seq <= this.clearedBefore) return false;
    if (f.dir && rec.dir !== f.dir) return false;
    if (f.session && rec.session.toLowerCase() !== f.session) return false;
    if (f.method && !rec.label.toLowerCase().includes(f.method)) return false;
    if (f.text && !this.model.searchText(rec).includes(f.text)) return false;
    return true;
  }

  // A new record: shown unless paused (then it waits for resume).
  add(rec) {
    if (this.paused) { this.updateCount(); return; }
    if (this.matches(rec)) this.visible.push(rec);
    this.schedule();
  }

  refilter() {
    const started = performance.now();
    const limit = this.paused ? this.pausedAt : Infinity;
    this.visible = this.model.records.filter((r) => r.seq <= limit && this.matches(r));
    this.lastFilterMs = performance.now() - started;
    this.schedule();
  }

  setPaused(paused) {
    this.paused = paused;
    $("pause").textContent = paused ? "Resume" : "Pause";
    $("pause").classList.toggle("active", paused);
    const last = this.model.records[this.model.records.length - 1];
    this.pausedAt = paused ? (last ? last.seq : -1) : Infinity;
    if (!paused) this.refilter();
    this.updateCount();
  }

  clearView() {
    const last = this.model.records[this.model.records.length - 1];
    this.clearedBefore = last ? last.seq : -1;
    this.visible = [];
    this.select(null);
    this.schedule();
  }

  schedule() {
    if (this.dirty) return;
    this.dirty = true;
    requestAnimationFrame(() => { this.dirty = false; this.syncOptions(); this.draw(true); });
  }

  syncOptions() {
    for (const m of this.model.methods) {
      if (!this.knownMethods.has(m)) { this.knownMethods.add(m); $("methods").append(el("option", { value: m })); }
    }
    for (const s of this.model.sessions) {
      if (!this.knownSessions.has(s)) { this.knownSessions.add(s); $("f-session").append(el("option", { value: s.toLowerCase(), text: short(s, 30) })); }
    }
  }

  updateCount() {
    const waiting = this.paused ? this.model.records.filter((r) => r.seq > this.pausedAt).length : 0;
    $("count").textContent = `${this.visible.length} shown / ${this.model.records.length}` + (waiting ? ` (${waiting} new while paused)` : "");
  }

  draw(appended = false) {
    const box = this.box;
    const atBottom = box.scrollTop + box.clientHeight >= box.scrollHeight - ROW * 2;
    this.spacer.style.height = `${this.visible.length * ROW}px`;
    if (appended && atBottom && !this.paused) box.scrollTop = box.scrollHeight;
    const first = Math.max(0, Math.floor(box.scrollTop / ROW) - 5);
    const count = Math.ceil(box.clientHeight / ROW) + 10;
    clear(this.rows);
    this.rows.style.transform = `translateY(${first * ROW}px)`;
    for (const rec of this.visible.slice(first, first + count)) this.rows.append(this.row(rec));
    this.updateCount();
  }

  row(rec) {
    const latency = rec.latency === null ? "" : `${(rec.latency * 1000).toFixed(1)} ms`;
    const pairNote = rec.pair ? (rec.kind === "request" ? `\u21b3 #${rec.pair.seq}` : `\u21b0 #${rec.pair.seq}`) : "";
    const node = el("div", {
      class: `row ${rec.dir} k-${rec.kind}${this.selected === rec ? " selected" : ""}`,
      "data-seq": rec.seq, title: pairNote,
      onclick: () => this.select(rec),
    },
      el("span", { class: "c-seq", text: String(rec.seq) }),
      el("span", { class: "c-time", text: rec.t.toFixed(3) }),
      el("span", { class: "c-dir", text: ARROW[rec.dir] || rec.dir }),
      el("span", { class: "c-kind", text: rec.kind }),
      el("span", { class: "c-method", text: rec.label }),
      el("span", { class: "c-id", text: rec.id === undefined ? "" : short(rec.id, 24) }),
      el("span", { class: "c-size", text: formatSize(rec.size) }),
      el("span", { class: "c-lat", text: latency ? `${latency} ${pairNote}` : pairNote }),
    );
    return node;
  }

  select(rec) {
    this.selected = rec;
    for (const row of this.rows.children) row.classList.toggle("selected", rec !== null && row.dataset.seq === String(rec.seq));
    this.onSelect(rec);
  }

  key(event) {
    if (!this.selected || (event.key !== "ArrowDown" && event.key !== "ArrowUp")) return;
    const index = this.visible.indexOf(this.selected) + (event.key === "ArrowDown" ? 1 : -1);
    if (index >= 0 && index < this.visible.length) {
      event.preventDefault();
      this.select(this.visible[index]);
      const top = index * ROW;
      if (top < this.box.scrollTop || top > this.box.scrollTop + this.box.clientHeight - ROW) this.box.scrollTop = top - ROW * 3;
      this.draw();
    }
  }
}
