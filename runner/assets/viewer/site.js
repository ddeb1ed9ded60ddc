// The site's index: every result set, the compare view (the comparisons the Rust side
// computed with the `compare` module — this script only picks one and lays it out) and a
// history per cell across the runs of one machine.
"use strict";

const S = DATA;
const VIEWS = ["runs", "compare", "history"];

// Each pair's comparison is a script of its own beside the index (S.pair_files names it),
// inserted when the pair is picked: a <script src> loads from file://, the fetch API does not.
// It calls pingmatrixPair(pair); a pair that fails to load is remembered as such.
const PAIRS = {};
window.pingmatrixPair = (pair) => { PAIRS[pair.file] = pair; render(); };
function pairFile(template, subs) { return template.replace(/\{(\w+)\}/g, (_, k) => subs[k]); }
function loadPair(file) {
  if (PAIRS[file]) return PAIRS[file];
  if (![...document.scripts].some((x) => x.dataset.pair === file)) {
    document.head.append(el("script", { src: file, "data-pair": file, onerror: () => { PAIRS[file] = { failed: true }; render(); } }));
  }
  return null;
}

function render() {
  const s = state.get();
  const view = VIEWS.includes(s.view) ? s.view : "runs";
  const app = document.getElementById("app");
  app.replaceChildren(el("h1", null, "pingmatrix results"),
    el("nav", { class: "tabs", role: "tablist" }, VIEWS.map((v) => el("button", {
      type: "button", role: "tab", "data-view": v, "aria-selected": v === view ? "true" : "false", class: v === view ? "active" : null,
      onclick: () => { state.set({ view: v }); render(); },
    }, v))));
  app.append(view === "runs" ? runs() : view === "compare" ? compare(s) : historyView(s));
}

function runs() {
  const cols = [
    { key: "date", label: "date", value: (r) => r.started_unix_ms, render: (r) => fmtDate(r.started_unix_ms) },
    { key: "run", label: "run", value: (r) => r.run_id, render: (r) => el("a", { href: r.page }, r.run_id) },
    { key: "commit", label: "commit", value: (r) => r.git_commit, render: (r) => r.git_commit ? r.git_commit.slice(0, 10) : "unknown" },
    { key: "machine", label: "machine", value: (r) => r.machine, render: (r) => r.machine },
    { key: "matrix", label: "matrix", value: (r) => r.matrix, render: (r) => r.matrix },
    { key: "cells", label: "cells", numeric: true, value: (r) => r.cells, render: (r) => String(r.cells) },
    { key: "failed", label: "failed", numeric: true, value: (r) => r.failed, render: (r) => String(r.failed) },
    { key: "suspect", label: "suspect", numeric: true, value: (r) => r.suspect, render: (r) => String(r.suspect) },
    { key: "status", label: "status", value: (r) => r.status, render: (r) => [r.status, r.missing.length ? [" ", mark("*", r.missing, "deviation")] : null] },
  ];
  const s = state.get();
  return el("section", { id: "runs" },
    table(cols, S.runs, { sort: s.sort || "date", dir: s.dir || "desc", onSort: (k, d) => { state.set({ sort: k, dir: d }); render(); },
      open: (r) => { location.href = r.page; } }),
    S.others.length ? el("div", null, el("h2", null, "Other result sets (no page)"), el("ul", null, S.others.map((o) => el("li", null, o.path + ": " + o.note)))) : null);
}

function select(id, label, options, current, onchange) {
  return el("label", null, label + " ", el("select", { id, onchange: (e) => onchange(e.target.value) },
    options.map(([v, t]) => el("option", { value: v, selected: v === current }, t))));
}

function compare(s) {
  const kind = s.kind === "services" ? "services" : "runs";
  const ids = S.runs.map((r) => r.run_id);
  const box = el("section", { id: "compare" });
  box.append(select("kind", "compare", [["runs", "two runs"], ["services", "two services in one run"]], kind, (v) => { state.set({ kind: v }); render(); }));
  let file;
  if (kind === "runs") {
    if (ids.length < 2) { box.append(el("p", { class: "empty" }, "One run only: nothing to compare it with.")); return box; }
    const old = ids.includes(s.old) ? s.old : ids[ids.length - 2];
    const nw = ids.includes(s.new) && s.new !== old ? s.new : ids.find((i) => i !== old && ids.indexOf(i) > ids.indexOf(old)) || ids.find((i) => i !== old);
    box.append(" ", select("old", "old", ids.map((i) => [i, i]), old, (v) => { state.set({ old: v }); render(); }),
      " ", select("new", "new", ids.map((i) => [i, i]), nw, (v) => { state.set({ new: v }); render(); }));
    const [io, inw] = [ids.indexOf(old), ids.indexOf(nw)];
    file = pairFile(S.pair_files.runs, { old: S.runs[Math.min(io, inw)].slug, new: S.runs[Math.max(io, inw)].slug });
    if (io > inw) box.append(el("p", { class: "hint" }, "Shown with the older run as the baseline, as the site computes each pair once."));
  } else {
    const run = ids.includes(s.run) ? s.run : ids[ids.length - 1];
    const row = S.runs.find((r) => r.run_id === run);
    const svcs = row.services;
    const a = svcs.includes(s.a) ? s.a : svcs[0];
    const b = svcs.includes(s.b) && s.b !== a ? s.b : svcs.find((x) => x !== a);
    box.append(" ", select("run", "run", ids.map((i) => [i, i]), run, (v) => { state.set({ run: v }); render(); }),
      " ", select("a", "baseline", svcs.map((x) => [x, x]), a, (v) => { state.set({ a: v }); render(); }),
      " ", select("b", "against", svcs.map((x) => [x, x]), b, (v) => { state.set({ b: v }); render(); }));
    if (!b) { box.append(el("p", { class: "empty" }, "One service only: nothing to compare it with.")); return box; }
    const [ia, ib] = [svcs.indexOf(a), svcs.indexOf(b)];
    file = pairFile(S.pair_files.services, { run: row.slug, a: Math.min(ia, ib), b: Math.max(ia, ib) });
  }
  const entry = loadPair(file);
  if (!entry) { box.append(el("p", { class: "empty", id: "loading" }, "Loading " + file + " …")); return box; }
  if (entry.failed) { box.append(el("p", { class: "missing", id: "load-failed" }, "Could not load " + file + ": the site's compare/ directory should be beside this index.html (matrix site writes both).")); return box; }
  const only = s.only === "1";
  box.append(" ", el("label", null, el("input", { type: "checkbox", id: "only-changes", checked: only, onchange: (e) => { state.set({ only: e.target.checked ? "1" : "" }); render(); } }), " only changes"));
  const c = entry.comparison;
  box.append(el("p", null, "old: ", el("code", null, c.old.label), " · new: ", el("code", null, c.new.label), " · noise threshold " + c.noise_pct + " % · " + c.method));
  if (entry.refused.length) box.append(el("div", { class: "refused", id: "refused" }, el("strong", null, "matrix compare refuses this pair; shown forced:"), el("ul", null, entry.refused.map((r) => el("li", null, r)))));
  for (const w of c.warnings || []) box.append(el("p", { class: "missing" }, w));
  if (c.only_old.length || c.only_new.length) box.append(el("p", { class: "hint" }, c.only_old.length + " cells only in old, " + c.only_new.length + " only in new."));
  const rows = [];
  for (const cell of c.cells) {
    for (const m of cell.metrics) {
      if (only && m.verdict !== "better" && m.verdict !== "worse") continue;
      rows.push({ cell, m });
    }
  }
  const num = (v) => (v ? fmtNum(v.mean) : "—");
  // Counts resolve hundredths of a percent: two decimals, as compare prints them.
  const pct = (m, v) => fmtPct(v, m.unit === "count" ? 2 : 1);
  box.append(el("table", { class: "board", id: "compare-table" },
    el("thead", null, el("tr", null, ["cell", "metric", "old", "new", "ratio", "change", "95 % CI", "MDE", "verdict"].map((h) => el("th", null, h)))),
    el("tbody", null, rows.map(({ cell, m }) => el("tr", { "data-cell": cell.key, "data-metric": m.metric },
      el("td", null, [cell.id.service, cell.id.scenario, cell.id.level, cell.id.profile].join(" · "), " ",
        cell.suspect_reasons.length ? mark("⚠", cell.suspect_reasons, "suspect") : null,
        cell.failures.length ? mark("†", cell.failures, "failed") : null,
        cell.not_comparable.length ? mark("≠", cell.not_comparable, "failed") : null),
      el("td", null, m.metric), el("td", { class: "num" }, num(m.old)), el("td", { class: "num" }, num(m.new)),
      el("td", { class: "num", "data-col": "ratio" }, m.difference ? fmtNum(m.difference.ratio, 3) + "×" : "—"),
      el("td", { class: "num" }, m.difference ? pct(m, m.difference.change_pct) : "—"),
      el("td", { class: "num" }, m.difference && m.difference.ci95_low_pct !== null ? "[" + pct(m, m.difference.ci95_low_pct) + ", " + pct(m, m.difference.ci95_high_pct) + "]" : "—"),
      el("td", { class: "num", title: m.mde_source ? "from " + m.mde_source : null }, m.mde_pct !== null ? fmtNum(m.mde_pct, 1) + " %" : "—"),
      el("td", { class: "verdict-" + m.verdict, "data-col": "verdict" }, m.verdict.replace("_", " ")))))));
  if (!rows.length) box.append(el("p", { class: "empty" }, only ? "No metric changed beyond its interval and the noise threshold." : "No metric compared."));
  box.append(el("details", { id: "markdown" }, el("summary", null, "Markdown (as matrix compare --format markdown writes it)"),
    el("textarea", { readonly: true, "aria-label": "Markdown" }, entry.markdown),
    el("button", { type: "button", onclick: (e) => { const t = e.target.previousElementSibling; t.select(); if (navigator.clipboard) navigator.clipboard.writeText(t.value).catch(() => {}); } }, "copy")));
  return box;
}

const HMETRICS = [["requests_per_s", "req/s"], ["cpu_us_per_request", "server CPU µs/req"], ["latency_p50_us", "p50 µs"], ["latency_p99_us", "p99 µs"], ["startup_us", "start-up µs"], ["idle_rss_bytes", "idle RSS bytes"]];

function historyView(s) {
  const box = el("section", { id: "history" });
  const machines = Object.keys(S.history);
  if (!machines.length) { box.append(el("p", { class: "empty" }, "No runs.")); return box; }
  const machine = machines.includes(s.machine) ? s.machine : machines[0];
  const cells = Object.keys(S.history[machine]).sort();
  const cell = cells.includes(s.hcell) ? s.hcell : cells[0];
  const metric = HMETRICS.some((m) => m[0] === s.metric) ? s.metric : "requests_per_s";
  box.append(select("machine", "machine", machines.map((m) => [m, m]), machine, (v) => { state.set({ machine: v, hcell: null }); render(); }), " ",
    select("hcell", "cell", cells.map((c) => [c, c]), cell, (v) => { state.set({ hcell: v }); render(); }), " ",
    select("metric", "metric", HMETRICS, metric, (v) => { state.set({ metric: v }); render(); }));
  const pts = S.history[machine][cell];
  box.append(lineChart(cell + ": " + metric + " across runs (mean, 95 % CI)", [{
    name: cell.split("/")[0].replace(/^ping-/, ""),
    points: pts.map((p, i) => ({ i, y: p.metrics[metric][0], lo: p.metrics[metric][1], hi: p.metrics[metric][2], n: p.metrics[metric][3], brk: p.not_comparable })),
  }], { xLabels: pts.map((p) => p.run_id.slice(5, 16).replace("T", " ").replace(/-(\d\d)$/, ":$1")), xLabel: "run (UTC month-day hour:minute; hover a point for its id)", yLabel: metric }));
  const breaks = pts.filter((p) => p.not_comparable && p.not_comparable.length).length;
  if (breaks) box.append(el("p", { class: "hint" }, "The line breaks (dashed rule) where matrix compare would not set a run beside the one before it: " + breaks + " place(s); hover the rule for why."));
  box.append(el("table", { class: "board" }, el("thead", null, el("tr", null, ["run", "mean", "95 % CI", "suspect"].map((h) => el("th", null, h)))),
    el("tbody", null, pts.map((p) => el("tr", null, el("td", null, p.run_id), el("td", { class: "num" }, fmtNum(p.metrics[metric][0])),
      el("td", { class: "num" }, p.metrics[metric][1] !== null ? fmtNum(p.metrics[metric][1]) + " – " + fmtNum(p.metrics[metric][2]) : "—"), el("td", null, p.suspect ? "⚠" : ""))))));
  return box;
}

window.addEventListener("hashchange", render);
render();
