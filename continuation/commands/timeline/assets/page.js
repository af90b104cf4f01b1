"use strict";
// The timeline page: renders the data embedded in the file, or fetched from `continuation serve`.
// Every recorded text is put in the page as text (never as markup).
(function () {
  const DATA = JSON.parse(document.getElementById("continuation-data").textContent);
  const LIVE = DATA.mode === "live";
  const CALLS_SINGLE = 40;     // up to this many calls, one mark each; more are grouped in runs
  const RUNS_MAX = 120;        // runs drawn at most; past it runs are by status only
  const ROWS_STEP = 50;        // call rows shown at a time
  const STATUS_ORDER = ["error", "unknown", "in_flight", "reconciled", "ok", "rolled_back"];
  const STATE_ORDER = ["queued", "pending", "reconciling", "interrupted", "handled", "superseded", "rolled_back"];

  const S = {
    outline: DATA.outline, windows: DATA.windows || {}, details: DATA.details || {},
    page: null, win: null, items: [], focus: -1, query: "", matches: [], match: -1,
  };

  // -- small helpers --------------------------------------------------------------------------
  function h(tag, attrs, ...children) {
    const el = document.createElement(tag);
    for (const [k, v] of Object.entries(attrs || {})) {
      if (v === null || v === undefined || v === false) continue;
      if (k === "class") el.className = v;
      else if (k === "text") el.textContent = v;
      else if (k.startsWith("on")) el.addEventListener(k.slice(2), v);
      else if (k === "dataset") Object.assign(el.dataset, v);
      else el.setAttribute(k, v === true ? "" : String(v));
    }
    for (const c of children.flat()) {
      if (c === null || c === undefined || c === false) continue;
      el.append(c instanceof Node ? c : document.createTextNode(String(c)));
    }
    return el;
  }
  const $ = (id) => document.getElementById(id);
  const add = (el, ...kids) => el.append(...kids.flat().filter((c) => c !== null && c !== undefined && c !== false));
  const NUMBERS = new Intl.NumberFormat("en-US");
  const num = (n) => NUMBERS.format(Number(n || 0));
  function time(ts) {
    if (ts === null || ts === undefined) return "";
    // the command line's one time format (host/units.py): UTC, to the second
    return new Date(ts * 1000).toISOString().replace("T", " ").replace(/\.\d+Z$/, "Z");
  }
  function span(a, b) {
    if (a == null || b == null) return "";
    let s = Math.max(0, Math.round(b - a));
    const hh = Math.floor(s / 3600), mm = Math.floor((s % 3600) / 60); s %= 60;
    return hh ? `${hh}h ${mm}m` : mm ? `${mm}m ${s}s` : `${s}s`;
  }
  const short = (id) => (id && id.length > 14 ? id.slice(0, 13) + "\u2026" : id || "");
  function text(shown, cls) {
    const el = h("span", { class: cls || "text" }, shown ? shown.text : "");
    if (shown && shown.length > shown.text.length) {
      el.append(" ", h("span", { class: "clipped", text: `\u2026 (${num(shown.length - shown.text.length)} more characters)` }));
    }
    return el;
  }
  function badge(state, label) {
    return h("span", { class: `badge st-${state} state`, dataset: { state } }, label || state.replace("_", " "));
  }
  function query(params) {
    const q = new URLSearchParams(params);
    if (DATA.token) q.set("t", DATA.token);
    return q.toString();
  }
  async function api(path, params) {
    const res = await fetch(`${path}?${query(params)}`, { cache: "no-store" });
    if (!res.ok) throw new Error(`${path}: ${res.status} ${await res.text()}`);
    return res.json();
  }
  const pages = () => S.outline.pages;
  function pageOf(seq) {
    const p = pages();
    let lo = 0, hi = p.length - 1;
    while (lo < hi) { const m = (lo + hi + 1) >> 1; if (p[m].lo <= seq) lo = m; else hi = m - 1; }
    return lo;
  }

  // -- loading ----------------------------------------------------------------------------------
  async function loadWindow(i) {
    const p = pages()[i];
    const key = String(p.lo);
    if (S.windows[key] && S.windows[key].hi === p.hi) return S.windows[key];
    if (!LIVE) return null;
    const w = await api("api/window", { thread: DATA.thread, lo: p.lo, hi: p.hi });
    S.windows[key] = w;
    return w;
  }
  async function loadDetail(id) {
    if (S.details[id]) return S.details[id];
    if (!LIVE) return null;
    S.details[id] = await api("api/checkpoint", { thread: DATA.thread, id });
    return S.details[id];
  }

  // -- header, threads, summary, strip ----------------------------------------------------------
  function renderHeader() {
    const t = S.outline.thread;
    document.title = `continuation \u00b7 ${t.name || t.thread_key}`;
    $("title-thread").textContent = t.name ? `${t.name} (${t.thread_key})` : t.thread_key;
    const r = S.outline.runtime || {};
    $("runtime").textContent = `${t.runtime} \u00b7 runtime: ${r.verdict || "?"}${r.detail ? " - " + r.detail : ""}`;
  }
  function renderThreads() {
    const all = S.outline.threads;
    const byParent = {};
    const keys = new Set(all.map((t) => t.thread_key));
    for (const t of all) {
      const parent = t.forked_from && keys.has(t.forked_from) ? t.forked_from : "";
      (byParent[parent] = byParent[parent] || []).push(t);
    }
    const tree = $("thread-tree");
    tree.replaceChildren();
    const embedded = new Set(DATA.embedded_threads || [DATA.thread]);
    function node(t) {
      const here = t.thread_key === DATA.thread;
      const label = t.name || t.thread_key;
      let link;
      if (here) link = h("span", { class: "tname", "aria-current": "page", text: label });
      else if (LIVE) link = h("a", { class: "tname", href: `?${query({ thread: t.thread_key })}`, text: label });
      else link = h("span", { class: "tname", title: `not in this file: continuation show --thread ${t.thread_key} --html`, text: label });
      const li = h("li", { class: here ? "current" : null, dataset: { thread: t.thread_key } }, link,
        h("div", { class: "muted" }, `${t.runtime} \u00b7 ${num(t.last_seq)} events`),
        t.forked_from ? h("div", { class: "fork-at", text: `fork of ${short(t.forked_from)} at event ${num(t.forked_at_seq)}` }) : null);
      const kids = byParent[t.thread_key];
      if (kids) li.append(h("ul", {}, kids.map(node)));
      return li;
    }
    for (const t of byParent[""] || []) tree.append(node(t));
    void embedded;
  }
  function renderSummary() {
    const o = S.outline, t = o.thread, box = $("summary");
    box.replaceChildren();
    const counts = o.counts || {};
    const states = Object.keys(counts).sort((a, b) => STATE_ORDER.indexOf(a) - STATE_ORDER.indexOf(b));
    box.append(h("span", { class: "muted" }, `${num(t.last_seq)} events \u00b7 ${num(o.turns)} turn${o.turns === 1 ? "" : "s"} \u00b7 inputs:`));
    for (const s of states) box.append(h("span", { class: "count", dataset: { countState: s } }, badge(s), " ", num(counts[s])));
    const calls = o.calls || {};
    const total = Object.values(calls).reduce((a, b) => a + b, 0);
    const parts = STATUS_ORDER.filter((s) => calls[s]).map((s) => `${num(calls[s])} ${s.replace("_", " ")}`);
    box.append(h("span", { class: "muted" }, `calls: ${num(total)}${parts.length ? " (" + parts.join(", ") + ")" : ""}`));
    const lineage = h("div", { class: "lineage muted" });
    if (t.forked_from) lineage.append(`fork of ${t.forked_from} at event ${num(t.forked_at_seq)}. `);
    const forks = o.threads.filter((x) => x.forked_from === t.thread_key);
    if (forks.length) lineage.append(`forks: ${forks.map((f) => `${f.name || f.thread_key} at event ${num(f.forked_at_seq)}`).join(", ")}. `);
    lineage.append(`checkpoints: ${o.checkpoints.length}.`);
    if (t.workspace_root) lineage.append(` workspace: ${t.workspace_root}`);
    box.append(lineage);
  }
  function renderStrip() {
    const st = S.outline.strip, strip = $("strip");
    strip.replaceChildren();
    const n = st.buckets;
    const inputs = new Map(st.events.input_admitted || []);
    const calls = {};
    for (const [s, pairs] of Object.entries(st.calls)) calls[s] = new Map(pairs);
    let max = 1;
    const totals = [];
    for (let b = 0; b < n; b++) {
      let c = inputs.get(b) || 0;
      for (const m of Object.values(calls)) c += m.get(b) || 0;
      totals.push(c); max = Math.max(max, c);
    }
    const ticks = {};
    for (const m of S.outline.marks) ticks[Math.floor((m.seq - 1) / st.width)] = m.type;
    const cur = S.page === null ? null : pages()[S.page];
    for (let b = 0; b < n; b++) {
      const lo = b * st.width + 1, hi = (b + 1) * st.width;
      const here = cur && hi >= cur.lo && lo <= cur.hi;
      const col = h("div", { class: "bucket" + (here ? " here" : ""), role: "listitem",
        title: `events ${num(lo)}-${num(hi)}: ${num(inputs.get(b) || 0)} inputs, ${num(totals[b] - (inputs.get(b) || 0))} calls`,
        dataset: { seq: lo } });
      for (const s of STATUS_ORDER) {
        const c = calls[s] && calls[s].get(b);
        if (c) col.append(h("span", { class: `call-${s}`, style: `height:${(100 * c / max).toFixed(1)}%` }));
      }
      const i = inputs.get(b);
      if (i) col.append(h("span", { class: "strip-input", style: `height:${(100 * i / max).toFixed(1)}%` }));
      if (ticks[b]) col.append(h("span", { class: `tick t-${ticks[b]}` }));
      strip.append(col);
    }
    const legend = $("strip-legend");
    legend.replaceChildren(
      h("span", {}, h("i", { class: "strip-input" }), "inputs"),
      ...STATUS_ORDER.filter((s) => calls[s]).map((s) => h("span", {}, h("i", { class: `call-${s}` }), `calls ${s.replace("_", " ")}`)),
      h("span", {}, h("i", { class: "tick t-boundary", style: "position:static" }), "compaction"),
      h("span", {}, h("i", { class: "tick t-crash_detected", style: "position:static" }), "crash"),
      h("span", {}, h("i", { class: "tick t-rolled_back", style: "position:static" }), "rewind"),
      h("span", {}, h("i", { class: "tick t-checkpoint_committed", style: "position:static" }), "checkpoint"),
      h("span", {}, "click to go there"));
  }

  // -- one page ----------------------------------------------------------------------------------
  function discardedRanges() {
    return S.outline.marks.filter((m) => m.type === "rolled_back").map((m) => [m.to_seq, m.seq]);
  }
  function pageItems(w) {
    const turnIds = new Set(w.turns.map((t) => t.turn_id));
    const items = [];
    const inputsBy = {}, callsBy = {}, claimsBy = {};
    // inputs and calls of a turn that is not on the page (it started on another page, or a
    // rewind removed it from the conversation) are grouped under their turn's id
    const ghosts = new Map();
    function ghost(turnId, seq) {
      const id = turnId || "";
      if (!ghosts.has(id)) ghosts.set(id, { turn_id: turnId, started_seq: seq, ended_seq: null, ghost: true, status: "" });
      const g = ghosts.get(id);
      g.started_seq = Math.min(g.started_seq, seq);
      return id;
    }
    for (const i of w.inputs) {
      const id = i.turn_id && turnIds.has(i.turn_id) ? i.turn_id : "\u0000" + ghost(i.turn_id, i.admitted_seq);
      (inputsBy[id] = inputsBy[id] || []).push(i);
    }
    for (const c of w.calls) {
      const id = c.turn_id && turnIds.has(c.turn_id) ? c.turn_id : "\u0000" + ghost(c.turn_id, c.started_seq);
      (callsBy[id] = callsBy[id] || []).push(c);
    }
    for (const c of w.claims) if (c.turn_id && turnIds.has(c.turn_id)) (claimsBy[c.turn_id] = claimsBy[c.turn_id] || []).push(c);
    for (const [id, g] of ghosts) {
      const ins = inputsBy["\u0000" + id] || [], cs = callsBy["\u0000" + id] || [];
      const gone = ins.every((i) => i.state === "rolled_back") && cs.every((c) => c.status === "rolled_back");
      g.status = gone ? "rolled back" : "started on another page";
      items.push({ kind: "turn", seq: g.started_seq, turn: g, marks: [], inputs: ins, calls: cs, claims: [] });
    }
    const turnItems = [];
    for (const t of w.turns) {
      const it = { kind: "turn", seq: Math.max(t.started_seq, w.lo), turn: t, marks: [],
        inputs: inputsBy[t.turn_id] || [], calls: callsBy[t.turn_id] || [], claims: claimsBy[t.turn_id] || [] };
      items.push(it); turnItems.push(it);
    }
    for (const m of w.marks) {
      // a boundary inside a turn (a compaction while it ran) is drawn inside its band
      const inside = turnItems.find((it) => m.seq > it.turn.started_seq && m.seq < (it.turn.ended_seq || w.hi + 1));
      if (inside) inside.marks.push(m); else items.push({ kind: "mark", seq: m.seq, mark: m });
    }
    for (const f of S.outline.threads) {
      if (f.forked_from === DATA.thread && f.forked_at_seq >= w.lo && f.forked_at_seq <= w.hi) {
        items.push({ kind: "mark", seq: f.forked_at_seq + 0.5,
          mark: { type: "fork", seq: f.forked_at_seq, label: `fork \u2192 ${f.name || f.thread_key}`, thread: f.thread_key } });
      }
    }
    items.sort((a, b) => a.seq - b.seq || (a.kind === "turn" ? -1 : 1));
    const ranges = discardedRanges();
    for (const it of items) {
      const s = it.kind === "turn" ? it.turn.started_seq : Math.floor(it.seq);
      it.discarded = ranges.find(([to, at]) => s > to && s < at) || null;
    }
    return items;
  }
  function renderInput(i) {
    const steps = i.trail.steps;
    const trail = h("div", { class: "trail", "aria-label": "state over time" });
    if (i.trail.partial) trail.append(h("span", { class: "muted", text: "(earlier states not kept) " }));
    steps.forEach(([seq, state, trigger], k) => {
      if (k) trail.append(h("span", { class: "arrow", "aria-hidden": "true", text: "\u2192" }));
      trail.append(h("span", { title: `${trigger || ""} at event ${seq}` }, badge(state), h("span", { class: "muted", text: ` @${num(seq)}` })));
    });
    if (i.awaits_delivery) trail.append(h("span", { class: "muted", text: " (not yet told to the model)" }));
    if (i.unknown_calls && i.unknown_calls.length) trail.append(h("span", { class: "muted", text: ` waits on ${i.unknown_calls.length} call(s) with unknown outcome` }));
    return h("div", { class: "input", dataset: { inputId: i.input_id, state: i.state, seq: i.admitted_seq } },
      h("span", { class: "current" }, badge(i.state)),
      h("div", {}, text(i.text), h("span", { class: "muted mono", text: `  ${i.input_id}` })),
      trail);
  }
  // consecutive calls of one tool and status are one run; a boundary between two calls (a
  // compaction while the turn ran) ends a run and is drawn as a bar
  function runsOf(calls, marks) {
    const sorted = marks.slice().sort((a, b) => a.seq - b.seq);
    function build(key, cuts) {
      const runs = [];
      let k = 0;
      for (const c of calls) {
        let cut = null;
        while (k < cuts.length && cuts[k].seq < c.started_seq) cut = cuts[k++];
        if (cut) runs.push({ mark: cut });
        const last = runs[runs.length - 1];
        if (last && last.calls && key && key(last.calls[0]) === key(c)) last.calls.push(c);
        else runs.push({ calls: [c], mixed: key === byStatus });
      }
      return runs;
    }
    const byTool = (c) => `${c.tool}\u0000${c.status}`, byStatus = (c) => c.status;
    let runs = build(calls.length <= CALLS_SINGLE ? null : byTool, sorted);
    if (runs.length > RUNS_MAX) runs = build(byStatus, sorted);
    if (runs.length > RUNS_MAX) runs = build(byStatus, []);  // the boundaries stay listed below
    return runs;
  }
  function renderCalls(calls, marks) {
    if (!calls.length) return null;
    marks = (marks || []).filter((m) => m.type !== "checkpoint_committed");
    const box = h("div", { class: "calls" });
    const counts = {}, tools = {};
    for (const c of calls) { counts[c.status] = (counts[c.status] || 0) + 1; tools[c.tool || "?"] = (tools[c.tool || "?"] || 0) + 1; }
    const parts = STATUS_ORDER.filter((s) => counts[s]).map((s) => `${num(counts[s])} ${s.replace("_", " ")}`);
    const toolParts = Object.entries(tools).sort((a, b) => b[1] - a[1]).slice(0, 6).map(([t, n]) => `${t} \u00d7${num(n)}`);
    box.append(h("div", {}, h("strong", {}, `${num(calls.length)} tool call${calls.length === 1 ? "" : "s"}`),
      `: ${parts.join(", ")} \u00b7 ${toolParts.join(", ")}${Object.keys(tools).length > 6 ? ", \u2026" : ""}`));
    const strip = h("div", { class: "callstrip", "aria-hidden": "true" });
    const runs = runsOf(calls, marks);
    const details = h("details", { class: "calllist" });
    const table = h("table", { class: "calltable" });
    let filter = null, shown = ROWS_STEP, range = null;
    function rows() {
      let list = calls;
      if (filter) list = list.filter((c) => c.status === filter);
      if (range) list = list.filter((c) => c.started_seq >= range[0] && c.started_seq <= range[1]);
      const body = h("tbody", {}, list.slice(0, shown).map((c) => h("tr", { dataset: { callId: c.call_id, status: c.status, seq: c.started_seq } },
        h("td", {}, h("span", { class: `badge call-${c.status}`, text: c.status.replace("_", " ") })),
        h("td", { class: "mono", text: num(c.started_seq) }),
        h("td", { text: c.tool }),
        h("td", { class: "args mono" }, text(c.args), c.output && c.output.text ? h("div", { class: "muted" }, text(c.output)) : null),
        h("td", { class: "mono", text: c.exit_code === null || c.exit_code === undefined ? "" : `exit ${c.exit_code}` }),
        h("td", { class: "mono muted", text: short(c.call_id) }))));
      table.replaceChildren(h("thead", {}, h("tr", {}, ["status", "event", "tool", "command / arguments, output", "exit", "id"].map((x) => h("th", { scope: "col", text: x })))), body);
      more.hidden = list.length <= shown;
      more.textContent = `show ${Math.min(ROWS_STEP, list.length - shown)} more of ${num(list.length - shown)}`;
    }
    const more = h("button", { type: "button", onclick: () => { shown += ROWS_STEP; rows(); } });
    const filters = h("div", { class: "filters" }, h("span", { class: "muted", text: "show:" }));
    const fbuttons = [];
    for (const s of [null, ...STATUS_ORDER.filter((x) => counts[x])]) {
      const b = h("button", { type: "button", "aria-pressed": s === null ? "true" : "false",
        onclick: () => { filter = s; range = null; shown = ROWS_STEP; fbuttons.forEach((x) => x.setAttribute("aria-pressed", x === b ? "true" : "false")); rows(); } },
        s === null ? `all ${num(calls.length)}` : `${s.replace("_", " ")} ${num(counts[s])}`);
      fbuttons.push(b); filters.append(b);
    }
    for (const r of runs) {
      if (r.mark) {
        strip.append(h("span", { class: `sep tick t-${r.mark.type}`, title: `${markName(r.mark)} at event ${r.mark.seq}` }));
        continue;
      }
      const c0 = r.calls[0], n = r.calls.length;
      const last = r.calls[n - 1];
      const label = r.mixed ? `${c0.status} \u00d7${n}` : `${c0.tool} \u00d7${n}`;
      const el = h("span", { class: `run call-${c0.status}${n === 1 ? " single" : ""}`,
        title: n === 1 ? `${c0.tool} ${c0.status} at event ${c0.started_seq}: ${c0.args.text.slice(0, 200)}` : `${label} ${c0.status} (events ${c0.started_seq}-${last.started_seq})`,
        style: n > 1 ? `flex-grow:${Math.min(n, 400)}` : null,
        onclick: () => { range = [c0.started_seq, last.started_seq]; filter = null; shown = ROWS_STEP; details.open = true; rows(); } },
        n > 1 ? label : "");
      strip.append(el);
    }
    details.append(h("summary", {}, calls.length === 1 ? "the call" : `the ${num(calls.length)} calls`), filters, table, more);
    rows();
    box.append(strip, details);
    return box;
  }
  function renderTurn(it) {
    const t = it.turn;
    const li = h("li", { class: `item turn s-${t.ghost ? "ghost" : t.status}${it.discarded ? " discarded" : ""}`, tabindex: "-1",
      dataset: { seq: t.started_seq, turnId: t.turn_id || "", kind: "turn" } });
    li.append(h("div", { class: "turn-head" },
      h("span", { class: "tid" }, t.turn_id ? `turn ${short(t.turn_id)}` : "no turn"),
      h("span", { class: "badge", style: "border:1px solid #6b7280" }, t.status),
      h("span", { class: "muted" }, `events ${num(t.started_seq)}\u2013${t.ended_seq ? num(t.ended_seq) : "\u2026"}`),
      h("span", { class: "muted" }, t.started_ts ? `${time(t.started_ts)}${t.ended_ts ? " (" + span(t.started_ts, t.ended_ts) + ")" : ""}` : ""),
      t.earlier ? h("span", { class: "muted", text: "(started on an earlier page)" }) : null,
      it.discarded ? h("span", { class: "warn", text: `rolled back by event ${num(it.discarded[1])}` }) : null));
    for (const i of it.inputs) li.append(renderInput(i));
    const calls = renderCalls(it.calls, it.marks);
    if (calls) li.append(calls);
    li.append(...renderInnerMarks(it.marks));
    for (const c of it.claims.slice(-3)) {
      li.append(h("div", { class: "claim", dataset: { seq: c.seq } }, h("span", { class: "label", text: "assistant claim (unverified)" }), text(c.text)));
    }
    return li;
  }
  const MARK_NAMES = { boundary: "boundary", crash_detected: "crash", rolled_back: "rewind", workspace_restored: "files restored",
    checkpoint_committed: "checkpoint", session_started: "session start", session_ended: "session end", reconciled: "reconciled",
    input_superseded: "input superseded", input_reopened: "input reopened", context_delivered: "context delivered",
    plan_updated: "plan", fork: "fork" };
  const markName = (m) => (m.type === "boundary" && m.kind === "compact" ? "compaction" : MARK_NAMES[m.type] || m.type);
  function checkpointButton(m) {
    return h("button", { type: "button", class: "checkpoint", dataset: { checkpoint: m.checkpoint_id },
      "aria-label": `checkpoint ${m.checkpoint_id}: show its capsule and rewind`, onclick: () => openCheckpoint(m.checkpoint_id) },
      `\u25cf checkpoint ${m.checkpoint_id}`);
  }
  // the boundaries inside a turn: checkpoints one by one (each opens its capsule), the rest
  // counted by kind with the list behind a disclosure
  function renderInnerMarks(marks) {
    const out = [];
    const groups = new Map();
    for (const m of marks) {
      if (m.type === "checkpoint_committed" && m.checkpoint_id) {
        out.push(h("div", { class: "inner-mark", dataset: { seq: m.seq, type: m.type } }, checkpointButton(m), " ",
          h("span", { class: "muted", text: `${m.label || ""} \u00b7 event ${num(m.seq)}` })));
        continue;
      }
      const name = markName(m);
      if (!groups.has(name)) groups.set(name, []);
      groups.get(name).push(m);
    }
    for (const [name, ms] of groups) {
      const head = `${num(ms.length)} ${name}${ms.length === 1 ? "" : "s"} during this turn (event${ms.length === 1 ? "" : "s"} ${num(ms[0].seq)}${ms.length > 1 ? "\u2013" + num(ms[ms.length - 1].seq) : ""})`;
      const d = h("details", { class: `inner-mark t-${ms[0].type}`, dataset: { seq: ms[0].seq, type: ms[0].type } },
        h("summary", {}, head),
        h("ul", {}, ms.map((m) => h("li", { dataset: { seq: m.seq } }, `event ${num(m.seq)}: ${m.label || name}${m.ts ? " \u00b7 " + time(m.ts) : ""}`))));
      out.push(d);
    }
    return out;
  }
  function renderMark(it) {
    const m = it.mark;
    const name = markName(m);
    const li = h("li", { class: `item mark t-${m.type}${it.discarded ? " discarded" : ""}`, tabindex: "-1",
      dataset: { seq: m.seq, kind: "mark", type: m.type } });
    if (m.type === "checkpoint_committed" && m.checkpoint_id) {
      li.dataset.checkpoint = m.checkpoint_id;
      li.append(checkpointButton(m), " ");
    } else {
      li.append(h("span", { class: "what", text: name }));
    }
    li.append(h("span", { class: "muted", text: `${m.label || ""} \u00b7 event ${num(m.seq)}${m.ts ? " \u00b7 " + time(m.ts) : ""}` }));
    if (m.type === "fork" && LIVE) li.append(" ", h("a", { href: `?${query({ thread: m.thread })}`, text: "open the fork" }));
    if (m.type === "rolled_back") li.append(h("span", { class: "muted", text: ` \u00b7 events ${num(m.to_seq + 1)}\u2013${num(m.seq - 1)} left the conversation` }));
    return li;
  }
  async function showPage(i, focusSeq) {
    i = Math.max(0, Math.min(pages().length - 1, i));
    S.page = i;
    const p = pages()[i];
    $("page-label").textContent = `page ${num(i + 1)} of ${num(pages().length)} \u00b7 events ${num(p.lo)}\u2013${num(p.hi)}`;
    $("older").disabled = i === 0;
    $("newer").disabled = i === pages().length - 1;
    const list = $("timeline");
    let w = null;
    try { w = await loadWindow(i); } catch (e) { console.warn(String(e)); }
    list.replaceChildren();
    if (!w) {
      list.append(h("li", { class: "item" }, LIVE ? "This page could not be read (see the server's output)." :
        `This page is not in the file (it holds the newest ${num(DATA.embedded_pages)} pages). ` +
        `\`continuation show --thread ${DATA.thread} --html --all\` writes them all; \`continuation serve\` reads any page.`));
      S.items = []; S.win = null;
    } else {
      S.win = w;
      S.items = pageItems(w);
      for (const it of S.items) {
        list.append(it.kind === "turn" ? renderTurn(it) : renderMark(it));
      }
      if (!S.items.length) list.append(h("li", { class: "item muted", text: "nothing recorded in these events" }));
    }
    renderStrip();
    markHits();
    const els = itemEls();
    let k = -1;
    if (focusSeq !== undefined) {
      k = els.findIndex((el, n) => Number(el.dataset.seq) <= focusSeq && (n === els.length - 1 || Number(els[n + 1].dataset.seq) > focusSeq));
    }
    S.focus = -1;
    if (k >= 0) focusItem(k);
    document.body.dataset.page = String(i);
  }

  // -- checkpoint panel ---------------------------------------------------------------------------
  async function openCheckpoint(id) {
    const panel = $("detail");
    panel.hidden = false;
    panel.replaceChildren(h("p", { class: "muted", text: `reading checkpoint ${id}\u2026` }));
    let d = null;
    try { d = await loadDetail(id); } catch (e) { console.warn(String(e)); }
    panel.replaceChildren();
    const close = h("button", { type: "button", onclick: closeDetail, text: "close (Esc)" });
    if (!d) { panel.append(h("p", { text: `checkpoint ${id} is not in this file: \`continuation capsule show --thread ${DATA.thread}\`` }), close); panel.focus({ preventScroll: true }); panel.scrollTop = 0; return; }
    const r = d.rewind;
    const ic = r.inputs.counts, cc = r.calls.counts;
    const nIn = Object.values(ic).reduce((a, b) => a + b, 0), nCalls = Object.values(cc).reduce((a, b) => a + b, 0);
    panel.dataset.checkpoint = d.checkpoint_id;
    add(panel,
      h("div", { class: "turn-head" }, h("h2", { id: "detail-title", text: `checkpoint ${d.checkpoint_id}` }), close),
      h("div", { class: "muted" }, `generation ${d.generation} \u00b7 ${d.reason} \u00b7 covers events 1\u2013${num(d.seq)} \u00b7 ${time(d.created_at)} \u00b7 sha256 ${String(d.sha256).slice(0, 12)}`),
      d.workspace ? h("div", { class: "muted" }, `workspace ${d.workspace.root || ""}${d.workspace.branch ? " on " + d.workspace.branch : ""}${d.workspace.snapshot_ref ? " \u00b7 snapshot " + d.workspace.snapshot_ref : ""}${d.workspace.error ? " \u00b7 no snapshot: " + d.workspace.error : ""}`) : null,
      d.problem ? h("p", { class: "warn", text: d.problem }) : null,
      h("h2", { text: "The capsule as the model received it" }),
      h("pre", { id: "capsule", tabindex: "0" }, d.capsule.text),
      d.capsule.text.includes("[redacted: ") ? h("p", { class: "muted", text: "Secrets are hidden here; the model received them as written (--show-secrets shows them)." }) : null,
      d.capsule.length > d.capsule.text.length ? h("p", { class: "clipped", text: `\u2026 (${num(d.capsule.length - d.capsule.text.length)} more characters: continuation capsule show --thread ${DATA.thread} --generation ${d.generation})` }) : null,
      h("h2", { text: "Rewind to here" }),
      h("p", { id: "rewind-preview" }, `The conversation goes back to event ${num(r.to_seq)} of ${num(r.last_seq)}: `,
        h("strong", {}, `${num(nIn)} input${nIn === 1 ? "" : "s"}`), " become rolled back",
        nIn ? " (" + Object.entries(ic).map(([s, n]) => `${num(n)} now ${s.replace("_", " ")}`).join(", ") + ")" : "",
        ", ", h("strong", {}, `${num(nCalls)} tool call${nCalls === 1 ? "" : "s"}`), " leave the current view",
        nCalls ? " (" + Object.entries(cc).map(([s, n]) => `${num(n)} ${s.replace("_", " ")}`).join(", ") + ")" : "", "."),
      r.inputs.first.length ? h("ul", {}, r.inputs.first.map((i) => h("li", {}, badge(i.state), " ", text(i.text)))) : null,
      nIn > r.inputs.first.length ? h("p", { class: "muted", text: `and ${num(nIn - r.inputs.first.length)} more` }) : null,
      r.calls.first.length ? h("ul", {}, r.calls.first.map((c) => h("li", {}, h("span", { class: `badge call-${c.status}`, text: c.status }), ` ${c.tool} `, h("span", { class: "mono muted", text: c.call_id })))) : null,
      nCalls > r.calls.first.length ? h("p", { class: "muted", text: `and ${num(nCalls - r.calls.first.length)} more calls` }) : null,
      h("p", { class: "muted", text: "The command (the page changes nothing; the command previews again before it acts):" }),
      ...Object.entries(r.commands).map(([mode, cmd]) => commandLine(cmd, mode)),
      commandLine(r.dry_run, "preview only"));
    panel.focus({ preventScroll: true }); panel.scrollTop = 0;
  }
  function commandLine(cmd, label) {
    const code = h("code", { class: "rewind-command", dataset: { mode: label }, text: cmd });
    const copy = h("button", { type: "button", onclick: async () => {
      try { await navigator.clipboard.writeText(cmd); copy.textContent = "copied"; }
      catch (e) { const r = document.createRange(); r.selectNodeContents(code); getSelection().removeAllRanges(); getSelection().addRange(r); copy.textContent = "selected"; }
    } }, "copy");
    return h("div", { class: "cmd" }, h("span", { class: "muted", text: label }), code, copy);
  }
  function closeDetail() {
    const panel = $("detail");
    if (panel.hidden) return;
    const id = panel.dataset.checkpoint;
    panel.hidden = true;
    const back = id && document.querySelector(`button.checkpoint[data-checkpoint="${CSS.escape(id)}"]`);
    if (back) back.focus();
  }

  // -- keyboard ----------------------------------------------------------------------------------
  const itemEls = () => Array.from(document.querySelectorAll("#timeline > li.item[data-seq]"));
  function focusItem(k) {
    const els = itemEls();
    if (!els.length) return;
    k = Math.max(0, Math.min(els.length - 1, k));
    S.focus = k;
    els.forEach((el, n) => el.setAttribute("tabindex", n === k ? "0" : "-1"));
    els[k].focus();
    els[k].scrollIntoView({ block: "nearest" });
  }
  function currentIndex() {
    const els = itemEls();
    const at = els.indexOf(document.activeElement && document.activeElement.closest("#timeline > li.item"));
    return at >= 0 ? at : S.focus;
  }
  async function move(step) {
    const els = itemEls(), k = currentIndex();
    if (k + step >= els.length && S.page < pages().length - 1) { await showPage(S.page + 1); focusItem(0); return; }
    if (k + step < 0 && S.page > 0) { await showPage(S.page - 1); focusItem(itemEls().length - 1); return; }
    focusItem(k < 0 ? (step > 0 ? 0 : els.length - 1) : k + step);
  }
  async function nextCheckpoint() {
    const buttons = Array.from(document.querySelectorAll("#timeline button.checkpoint"));
    const at = buttons.indexOf(document.activeElement);
    const item = document.activeElement && document.activeElement.closest("#timeline > li.item");
    const next = at >= 0 ? buttons[at + 1] : buttons.find((b) => !item || (item.compareDocumentPosition(b) & Node.DOCUMENT_POSITION_FOLLOWING) || item.contains(b));
    if (next) { next.focus(); next.scrollIntoView({ block: "nearest" }); return; }
    const seq = S.win ? S.win.hi : 0;
    const cp = S.outline.checkpoints.find((c) => c.seq > seq);
    if (cp) {
      await showPage(pageOf(cp.seq));
      const b = document.querySelector(`#timeline button.checkpoint[data-checkpoint="${CSS.escape(cp.checkpoint_id)}"]`);
      if (b) { b.focus(); b.scrollIntoView({ block: "nearest" }); }
    }
  }
  document.addEventListener("keydown", async (e) => {
    if (e.altKey || e.ctrlKey || e.metaKey) return;
    const inField = e.target.matches && e.target.matches("input, textarea");
    if (e.key === "Escape") {
      if (inField) { e.target.blur(); return; }
      if (!$("detail").hidden) { e.preventDefault(); closeDetail(); return; }
      if (!$("results").hidden) { $("results").hidden = true; return; }
      return;
    }
    if (inField) return;
    const k = e.key;
    if (k === "j" || k === "ArrowDown") { e.preventDefault(); await move(1); }
    else if (k === "k" || k === "ArrowUp") { e.preventDefault(); await move(-1); }
    else if (k === "Home") { e.preventDefault(); focusItem(0); }
    else if (k === "End") { e.preventDefault(); focusItem(itemEls().length - 1); }
    else if (k === "[") { e.preventDefault(); if (S.page > 0) { await showPage(S.page - 1); focusItem(0); } }
    else if (k === "]") { e.preventDefault(); if (S.page < pages().length - 1) { await showPage(S.page + 1); focusItem(0); } }
    else if (k === "c") { e.preventDefault(); await nextCheckpoint(); }
    else if (k === "/") { e.preventDefault(); $("search").focus(); $("search").select(); }
    else if (k === "n") { e.preventDefault(); await gotoMatch(S.match + 1); }
    else if (k === "N") { e.preventDefault(); await gotoMatch(S.match - 1); }
    else if (k === "Enter") {
      const el = document.activeElement;
      if (el && el.matches("#timeline > li.item")) {
        e.preventDefault();
        const cp = el.querySelector("button.checkpoint");
        if (cp) cp.click();
        const d = el.querySelector("details.calllist");
        if (d) d.open = !d.open;
      }
    }
  });

  // -- search --------------------------------------------------------------------------------------
  function haystacks(w) {
    const out = [];
    for (const i of w.inputs) out.push([i.admitted_seq, `input ${i.input_id} ${i.text.text}`]);
    for (const c of w.calls) out.push([c.started_seq, `call ${c.call_id} ${c.tool} ${c.args.text} ${c.output.text}`]);
    for (const c of w.claims) out.push([c.seq, `claim ${c.text.text}`]);
    for (const m of w.marks) out.push([m.seq, `${m.type} ${m.label || ""} ${m.checkpoint_id || ""}`]);
    for (const t of w.turns) out.push([t.started_seq, `turn ${t.turn_id}`]);
    return out;
  }
  async function search(q) {
    S.query = q.trim().toLowerCase();
    S.matches = []; S.match = -1;
    const box = $("results");
    if (!S.query) { box.hidden = true; $("search-count").textContent = ""; markHits(); return; }
    const found = new Map();
    for (const w of Object.values(S.windows)) {
      for (const [seq, hay] of haystacks(w)) {
        const at = hay.toLowerCase().indexOf(S.query);
        if (at >= 0 && !found.has(seq)) found.set(seq, hay.slice(Math.max(0, at - 40), at + 80));
      }
    }
    let more = 0;
    if (LIVE) {
      try {
        const r = await api("api/search", { thread: DATA.thread, q: S.query });
        for (const [seq, type] of r.matches) if (!found.has(seq)) found.set(seq, type.replace("_", " "));
        more = r.more ? 1 : 0;
      } catch (e) { console.warn(String(e)); }
    }
    S.matches = Array.from(found.entries()).sort((a, b) => a[0] - b[0]);
    $("search-count").textContent = `${num(S.matches.length)}${more ? "+" : ""} match${S.matches.length === 1 ? "" : "es"}`;
    box.hidden = false;
    box.replaceChildren(h("strong", {}, `${num(S.matches.length)}${more ? "+" : ""} event${S.matches.length === 1 ? "" : "s"} match \u201c${q.trim()}\u201d`),
      !LIVE && DATA.embedded_pages < pages().length ? h("span", { class: "muted", text: ` (in the ${num(DATA.embedded_pages)} pages this file holds)` }) : null,
      h("ul", {}, S.matches.slice(0, 300).map(([seq, snip], n) => h("li", {},
        h("button", { type: "button", class: "link", onclick: () => gotoMatch(n) }, `event ${num(seq)}`), ` (page ${num(pageOf(seq) + 1)}) `,
        h("span", { class: "muted", text: snip })))));
    markHits();
  }
  function markHits() {
    const q = S.query;
    document.querySelectorAll(".hit").forEach((el) => el.classList.remove("hit"));
    if (!q) return;
    for (const el of document.querySelectorAll("#timeline .input, #timeline .calltable tr, #timeline .claim, #timeline > li.mark")) {
      if (el.textContent.toLowerCase().includes(q)) el.classList.add("hit");
    }
  }
  async function gotoMatch(n) {
    if (!S.matches.length) return;
    S.match = (n + S.matches.length) % S.matches.length;
    const seq = S.matches[S.match][0];
    const p = pageOf(seq);
    await showPage(p, seq);
    $("search-count").textContent = `${num(S.match + 1)} of ${num(S.matches.length)}`;
  }
  $("search-form").addEventListener("submit", async (e) => {
    e.preventDefault();
    const q = $("search").value;
    if (q.trim().toLowerCase() !== S.query) await search(q);
    await gotoMatch(S.match + 1);
  });

  // -- wiring ----------------------------------------------------------------------------------------
  $("older").addEventListener("click", () => showPage(S.page - 1));
  $("newer").addEventListener("click", () => showPage(S.page + 1));
  $("strip").addEventListener("click", (e) => {
    const b = e.target.closest(".bucket");
    if (b) showPage(pageOf(Number(b.dataset.seq)), Number(b.dataset.seq));
  });

  async function poll() {
    try {
      const head = await api("api/head", { thread: DATA.thread });
      const was = S.outline.thread.last_seq;
      $("live").textContent = `live \u00b7 ${num(head.last_seq)} events \u00b7 checked ${time(Date.now() / 1000)}`;
      if (head.last_seq !== was) {
        const atEnd = S.page === pages().length - 1;
        S.outline = await api("api/outline", { thread: DATA.thread });
        S.windows = {};
        renderHeader(); renderThreads(); renderSummary();
        const keep = currentIndex();
        await showPage(atEnd ? pages().length - 1 : S.page);
        if (keep >= 0) focusItem(keep);
      }
    } catch (e) {
      $("live").textContent = "live view: the server does not answer";
    }
  }

  function fitHeader() {
    document.documentElement.style.setProperty("--head", `${$("top").offsetHeight}px`);
  }
  async function start() {
    fitHeader();
    window.addEventListener("resize", fitHeader);
    renderHeader(); renderThreads(); renderSummary();
    await showPage(pages().length - 1);
    if (LIVE) { $("live").textContent = "live"; setInterval(poll, DATA.poll_ms || 2000); }
    else $("live").textContent = `written ${time(DATA.generated_at)}`;
    document.body.dataset.ready = "1";
    window.__timelineGo = (seq) => showPage(pageOf(seq), seq);  // for the benchmark
    window.__timelineReady = performance.now();
  }
  start();
})();
