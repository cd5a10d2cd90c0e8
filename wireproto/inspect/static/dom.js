// DOM helpers. Agent data only ever reaches the page as text (textContent) or
// as a form control's value: never as markup.

export function el(tag, attrs, ...children) {
  const node = document.createElement(tag);
  if (attrs) {
    for (const [key, value] of Object.entries(attrs)) {
      if (value === undefined || value === null || value === false) continue;
      if (key === "class") node.className = value;
      else if (key === "text") node.textContent = value;
      else if (key.startsWith("on")) node.addEventListener(key.slice(2), value);
      else if (key === "value") node.value = value;
      else if (key === "checked") node.checked = Boolean(value);
      else node.setAttribute(key, String(value));
    }
  }
  for (const child of children) {
    if (child === undefined || child === null || child === false) continue;
    node.append(child instanceof Node ? child : String(child));
  }
  return node;
}

export function clear(node) {
  while (node.firstChild) node.removeChild(node.firstChild);
}

export function $(id) {
  return document.getElementById(id);
}

export function short(value, max = 80) {
  const text = typeof value === "string" ? value : JSON.stringify(value);
  if (text === undefined) return "";
  return text.length > max ? text.slice(0, max - 1) + "\u2026" : text;
}

export function formatSize(bytes) {
  if (bytes < 1024) return `${bytes} B`;
  if (bytes < 1024 * 1024) return `${(bytes / 1024).toFixed(1)} kB`;
  return `${(bytes / 1024 / 1024).toFixed(1)} MB`;
}

// A collapsible JSON tree built from elements and text nodes only.
export function jsonTree(value, depth = 0) {
  if (depth > 100) return el("span", { class: "j-more", text: "\u2026 (too deep)" });
  if (value === null) return el("span", { class: "j-null", text: "null" });
  if (Array.isArray(value) || typeof value === "object") {
    const entries = Array.isArray(value) ? value.map((v, i) => [i, v]) : Object.entries(value);
    const open = Array.isArray(value) ? "[" : "{";
    const close = Array.isArray(value) ? "]" : "}";
    if (entries.length === 0) return el("span", { class: "j-punct", text: open + close });
    const details = el("details", { class: "j-node", open: depth < 3 ? "" : null });
    const noun = (Array.isArray(value) ? "item" : "key") + (entries.length === 1 ? "" : "s");
    details.append(el("summary", { class: "j-punct", text: `${open} ${entries.length} ${noun}` }));
    const list = el("div", { class: "j-children" });
    for (const [key, child] of entries) {
      const row = el("div", { class: "j-row" });
      row.append(el("span", { class: "j-key", text: Array.isArray(value) ? `${key}: ` : `${JSON.stringify(key)}: ` }));
      row.append(jsonTree(child, depth + 1));
      list.append(row);
    }
    details.append(list, el("span", { class: "j-punct", text: close }));
    return details;
  }
  const kind = typeof value;
  return el("span", { class: `j-${kind}`, text: kind === "string" ? JSON.stringify(value) : String(value) });
}

// Line diff (longest common subsequence) for diff content; big texts fall
// back to "all old lines removed, all new lines added".
export function lineDiff(oldText, newText) {
  const a = oldText ? oldText.split("\n") : [];
  const b = newText ? newText.split("\n") : [];
  if (a.length * b.length > 250000) {
    return [...a.map((l) => ["-", l]), ...b.map((l) => ["+", l])];
  }
  const n = a.length, m = b.length;
  const table = Array.from({ length: n + 1 }, () => new Uint32Array(m + 1));
  for (let i = n - 1; i >= 0; i--) {
    for (let j = m - 1; j >= 0; j--) {
      table[i][j] = a[i] === b[j] ? table[i + 1][j + 1] + 1 : Math.max(table[i + 1][j], table[i][j + 1]);
    }
  }
  const out = [];
  let i = 0, j = 0;
  while (i < n && j < m) {
    if (a[i] === b[j]) { out.push([" ", a[i]]); i++; j++; }
    else if (table[i + 1][j] >= table[i][j + 1]) out.push(["-", a[i++]]);
    else out.push(["+", b[j++]]);
  }
  while (i < n) out.push(["-", a[i++]]);
  while (j < m) out.push(["+", b[j++]]);
  return out;
}

export function diffView(path, oldText, newText) {
  const box = el("div", { class: "diff" });
  box.append(el("div", { class: "diff-path", text: `${path || "(no path)"}${oldText === null || oldText === undefined ? " (new file)" : ""}` }));
  for (const [mark, line] of lineDiff(oldText || "", newText || "")) {
    const cls = mark === "+" ? "add" : mark === "-" ? "del" : "same";
    box.append(el("div", { class: `diff-line ${cls}`, text: `${mark} ${line}` }));
  }
  return box;
}
