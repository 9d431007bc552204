// The runner's page: fetch the read-only API, draw it, and fetch again each time the event
// stream says the version moved. Every value is put in the page as text (textContent), never
// as HTML: a task's output or an item's subject is whatever an agent wrote.
"use strict";

let clockSkew = 0; // runner's clock minus ours, so heartbeat ages are the runner's

function el(tag, attrs, ...children) {
  const node = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs || {})) {
    if (k === "class") node.className = v; else node.setAttribute(k, v);
  }
  for (const child of children) {
    if (child === null || child === undefined) continue;
    node.append(child instanceof Node ? child : document.createTextNode(String(child)));
  }
  return node;
}

const badge = (state) => el("span", { class: "badge state-" + String(state).replace(/[^a-z_]/g, "") }, state);
const age = (t) => Math.max(0, Math.round(Date.now() / 1000 + clockSkew - t)) + " s ago";
// A heartbeat's age keeps counting between updates (a local clock, no request).
const ago = (t) => (t ? el("span", { "data-at": String(t) }, age(t)) : "-");
function tick() {
  for (const node of document.querySelectorAll("[data-at]")) node.textContent = age(Number(node.dataset.at));
}
const mb = (b) => (b == null ? "-" : (b / 1048576).toFixed(1) + " MB");
const cpu = (s) => (s == null ? "-" : s.toFixed(2) + " s");

function table(headers, rows) {
  return el("table", {}, el("thead", {}, el("tr", {}, ...headers.map((h) => el("th", {}, h)))),
    el("tbody", {}, ...rows.map((cells) => el("tr", {}, ...cells.map((c) => el("td", {}, c))))));
}

function fill(id, nodes, emptyText) {
  const box = document.getElementById(id);
  box.replaceChildren(...(nodes.length ? nodes : [el("p", { class: "empty" }, emptyText)]));
}

function drawTasks(data) {
  const rows = data.tasks.map((t) => [
    String(t.task_id), badge(t.state),
    el("div", {}, t.role ? t.lang + " · " + t.role : t.lang, el("div", { class: "muted" }, t.cwd)),
    t.session_id, cpu(t.cpu_s), mb(t.memory_peak_bytes),
    el("div", {}, t.message || "", t.tail ? el("pre", {}, t.tail) : null),
  ]);
  fill("tasks", rows.length ? [table(["id", "state", "what", "session", "CPU", "memory", "output"], rows)] : [], "no task");
}

const HELD = new Set(["waiting", "paused", "blocked", "rejected", "failed", "timed_out"]);

// Spend against each cap (runner/core/work/budget.py): tokens and USD its workers reported.
function budgetLine(run) {
  const caps = Object.entries(run.caps || {});
  if (!caps.length) return null;
  const amount = (what, x) => what.endsWith("tokens") ? Math.floor(x) + " tokens"
    : what === "worker_s" ? (x / 60).toFixed(2) + " min" : "$" + x.toFixed(4);
  const parts = caps.map(([name, limit]) => {
    const what = name.startsWith("day_") ? name : name.endsWith("cost") ? "cost" : name === "item_min" ? "worker_s" : "tokens";
    const cap = what === "worker_s" ? limit * 60 : limit;
    const spent = name.startsWith("item_")
      ? Math.max(0, ...run.items.map((i) => i[what] || 0)) : (run.spend || {})[what] || 0;
    return amount(what, spent) + (name.startsWith("item_") ? " (most by one item)" : "") + " of " + name + " " + amount(what, cap);
  });
  return el("div", { class: "muted" }, "budget: " + parts.join("; "));
}

// The next command for a held item: the one its message names (`...`), else the usual one.
// Shown as text to copy into a terminal: the page itself changes nothing.
function nextCommand(item) {
  if (!HELD.has(item.state)) return null;
  const named = (item.message || "").match(/`(plugkit [^`]+)`/);
  const command = named ? named[1]
    : item.state === "waiting" ? "plugkit approve " + item.id : "plugkit work logs " + item.id;
  return el("div", { class: "next" }, "next: " + command);
}

function drawWork(data) {
  const runs = data.runs.map((run) => {
    const items = run.items.map((i) => [
      el("div", {}, i.id, el("div", { class: "muted" }, i.subject)),
      badge(i.state),
      String(i.attempt),
      i.task_id == null ? "-" : String(i.task_id),
      ago(i.last_beat_at),
      i.verify ? el("div", {}, badge(i.verify), i.receipt ? el("div", { class: "muted" }, i.receipt) : null) : "-",
      i.landed ? el("code", {}, i.landed.slice(0, 12)) : "-",
      el("div", {}, i.reason || "", i.message ? el("div", { class: "muted" }, i.message) : null, nextCommand(i)),
      i.refused.length ? el("div", { class: "muted" }, i.refused.join("; ")) : "-",
      i.last ? el("div", { class: "muted" }, i.last) : "-",
    ]);
    // The landing queue (runner/core/work/queue.py): oldest green first; an eviction shows why and its context.
    const queue = (run.queue || []).map((e) => [
      e.item, badge(e.state), String(e.attempt), el("code", {}, e.sha.slice(0, 12)),
      e.landed ? el("code", {}, e.landed.slice(0, 12)) : "-",
      el("div", {}, e.note || "", e.context ? el("details", {}, el("summary", {}, "context"), el("pre", {}, e.context)) : null),
    ]);
    const journal = run.journal.map((e) => el("div", {},
      el("span", { class: "muted" }, "+" + (e.t - run.started_at).toFixed(1) + "s "),
      (e.item || "run") + " " + e.text));
    return el("div", { class: "run" },
      el("h3", {}, "run " + run.id + " ", badge(run.state), " ", el("span", { class: "muted" }, run.workspace + " on " + run.branch)),
      run.halt ? el("div", { class: "halt" }, run.halt) : null,
      budgetLine(run),
      table(["item", "state", "attempt", "worker task", "heartbeat", "check", "landed", "why", "refused", "last"], items),
      queue.length ? el("div", { class: "queue" }, el("h4", {}, "landing queue on " + run.branch),
        table(["item", "queue", "attempt", "green", "landed", "why"], queue)) : null,
      journal.length ? el("details", {}, el("summary", {}, "journal (newest " + journal.length + "; `plugkit work trace ITEM` has each attempt's)"), ...journal) : null);
  });
  fill("work", runs, "no run");
}

function drawGates(data) {
  const boxes = data.workspaces.map((w) => el("div", { class: "run" },
    el("h3", {}, w.workspace + " ", badge(w.phase), " ", el("span", { class: "muted" }, "next: " + (w.next_phase || "-") + ", mode " + w.mode)),
    w.conditions.length ? table(["condition", "holds", "value"], w.conditions.map((c) => [
      c.name, badge(c.holds ? "holds" : "fails"), c.value == null ? "" : JSON.stringify(c.value)])) : null,
    ...w.notices.map((n) => el("div", { class: "muted" }, n))));
  fill("gates", boxes, "no gated workspace");
}

function drawSessions(data) {
  const rows = data.sessions.map((s) => [s.session_id, s.root, String(s.tasks.length), Math.round(s.idle_s) + " s"]);
  fill("sessions", rows.length ? [table(["session", "workspace", "tasks", "idle"], rows)] : [], "no session");
}

async function get(name) {
  const response = await fetch("/api/v1/" + name, { credentials: "same-origin", cache: "no-store" });
  if (!response.ok) throw new Error(name + ": HTTP " + response.status);
  return response.json();
}

let drawing = null, again = null;
async function refresh(version) {
  if (drawing) { again = version; return drawing; }
  drawing = (async () => {
    try {
      const [runner, tasks, work, gates, sessions] = await Promise.all(
        ["runner", "tasks", "work", "gates", "sessions"].map(get));
      clockSkew = runner.now - Date.now() / 1000;
      document.getElementById("runner").textContent =
        "pid " + runner.pid + " · v" + runner.version + " · port " + runner.port + (version != null ? " · version " + version : "");
      drawTasks(tasks); drawWork(work); drawGates(gates); drawSessions(sessions);
      document.body.dataset.version = String(version);
    } catch (err) {
      document.getElementById("live").textContent = String(err.message || err);
    }
  })();
  await drawing;
  drawing = null;
  if (again !== null) { const v = again; again = null; return refresh(v); }
}

function listen() {
  const live = document.getElementById("live");
  const events = new EventSource("/api/v1/events");
  events.addEventListener("version", (e) => {
    live.textContent = "live"; live.className = "badge state-live";
    refresh(JSON.parse(e.data).version);
  });
  events.onerror = () => { live.textContent = "disconnected (retrying)"; live.className = "badge state-stale"; };
}

document.addEventListener("DOMContentLoaded", () => { listen(); setInterval(tick, 1000); });
