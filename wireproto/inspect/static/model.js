// The message model: every record, classified and paired, shared by the views.

const OPPOSITE = { send: "recv", recv: "send" };

export function kindOf(msg) {
  if (msg === null || typeof msg !== "object" || Array.isArray(msg)) return "invalid";
  if (typeof msg.method === "string") return "id" in msg && msg.id !== null ? "request" : "notification";
  if ("error" in msg) return "error";
  if ("result" in msg) return "response";
  return "invalid";
}

// What the timeline shows as the method: with the Wire event or request type,
// or the ACP session update kind, which say more than "event" or "session/update".
function labelOf(method, msg) {
  const p = msg && typeof msg === "object" ? msg.params : null;
  if (!p || typeof p !== "object") return method;
  if ((method === "event" || method === "request") && typeof p.type === "string") return `${method} ${p.type}`;
  if (method === "session/update" && p.update && typeof p.update.sessionUpdate === "string") return `${method} ${p.update.sessionUpdate}`;
  return method;
}

function sessionOf(msg) {
  if (!msg || typeof msg !== "object") return "";
  const p = msg.params;
  if (p && typeof p === "object" && typeof p.sessionId === "string") return p.sessionId;
  const r = msg.result;
  if (r && typeof r === "object" && typeof r.sessionId === "string") return r.sessionId;
  return "";
}

export class Model {
  constructor() {
    this.records = [];          // by position; record.seq may start above 0
    this.bySeq = new Map();
    this.open = new Map();      // "dir:id" -> request record waiting for its answer
    this.methods = new Set();
    this.sessions = new Set();
    this.listeners = [];
  }

  onRecord(listener) { this.listeners.push(listener); }

  add(frame) {
    const rec = {
      seq: frame.seq, t: frame.t, dir: frame.dir, size: frame.size,
      msg: "msg" in frame ? frame.msg : undefined,
      text: "text" in frame ? frame.text : undefined,
    };
    rec.kind = rec.msg === undefined ? "invalid" : kindOf(rec.msg);
    rec.method = rec.kind === "request" || rec.kind === "notification" ? rec.msg.method : "";
    rec.id = rec.msg && typeof rec.msg === "object" && "id" in rec.msg ? rec.msg.id : undefined;
    rec.label = labelOf(rec.method, rec.msg);
    rec.session = sessionOf(rec.msg);
    rec.pair = null;
    rec.latency = null;
    if (rec.kind === "request") {
      this.open.set(`${rec.dir}:${JSON.stringify(rec.id)}`, rec);
    } else if (rec.kind === "response" || rec.kind === "error") {
      const key = `${OPPOSITE[rec.dir]}:${JSON.stringify(rec.id)}`;
      const request = this.open.get(key);
      if (request) {
        this.open.delete(key);
        rec.pair = request;
        request.pair = rec;
        rec.method = request.method;
        rec.label = request.label;
        if (!rec.session) rec.session = request.session;
        rec.latency = rec.t - request.t;
        request.latency = rec.latency;
      }
    }
    if (rec.method) this.methods.add(rec.method);
    if (rec.session) this.sessions.add(rec.session);
    rec.search = null;  // lower-cased text, computed on the first text filter
    this.records.push(rec);
    this.bySeq.set(rec.seq, rec);
    for (const listener of this.listeners) listener(rec);
    return rec;
  }

  // Agent -> client requests not answered yet.
  waiting() {
    return [...this.open.values()].filter((r) => r.dir === "recv");
  }

  searchText(rec) {
    if (rec.search === null) {
      rec.search = (rec.msg !== undefined ? JSON.stringify(rec.msg) : rec.text || "").toLowerCase();
    }
    return rec.search;
  }

  exportTrace() {
    const lines = this.records.map((r) => JSON.stringify(
      r.msg !== undefined ? { t: r.t, dir: r.dir, msg: r.msg } : { t: r.t, dir: r.dir, text: r.text }));
    return lines.join("\n") + (lines.length ? "\n" : "");
  }
}
