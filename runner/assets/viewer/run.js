// The run page: header (machine, commit, floors, calibration, what is missing), a tab per
// scenario × profile, a level selector, filters by runtime model and I/O driver, the
// leaderboard (rank bands, not orders), the charts and a cell's detail.
"use strict";

const R = DATA;
const svcInfo = (s) => R.services[s] || { model: "unknown", io_driver: "unknown", runtime: "unknown" };
// The metrics, as results::metric::DEFINITIONS defines them (the page's data carries the
// table): the board's columns, their labels, directions, and where each cell keeps each value.
// Counted ones (syscalls, instructions, kernel events …) are shown as README's headline and
// results.md show them: the median over the counted repetitions with the range they spanned,
// each with why it is unmeasured where the run could not count it.
const path = (c, keys) => (keys || []).reduce((o, k) => (o === null || o === undefined ? null : o[k]), c);
const column = (d) => Object.assign({
  key: d.key, label: d.short, better: d.higher_is_better ? "higher" : "lower", median: d.shown === "median",
  bytes: d.unit === "bytes", title: d.tracepoint, why: (c) => d.unmeasured ? path(c, d.unmeasured) : null,
}, d.shown === "point" ? { point: (c) => path(c, d.summary) } : { stat: (c) => path(c, d.summary) });
const short = (key) => (R.metrics.find((d) => d.key === key) || { short: key }).short;
const METRICS = R.metrics.filter((d) => d.leaderboard && !d.counted).map(column);
const COUNTED = R.metrics.filter((d) => d.counted && d.relative).map(column);
const value = (m, c) => m.stat ? (m.stat(c) ? m.stat(c)[m.median ? "median" : "mean"] : null) : (m.point(c) === undefined ? null : m.point(c));
const tabOf = (c) => c.scenario + " · " + c.profile;
const tabs = uniq(R.cells.map(tabOf));

function header() {
  const r = R.run;
  const items = [];
  if (r) {
    const h = r.hardware;
    items.push(["machine", h.cpu_model + " · " + h.logical_cpus + " logical CPUs (" + h.physical_cores + " cores) · " + fmtNum(h.memory_total_bytes / 1073741824, 1) + " GiB · " + (h.virtualization || "bare metal?") + " · " + r.os.os + " " + r.os.kernel]);
    items.push(["commit", (r.git_commit || "unknown") + (r.git_dirty ? " (dirty tree)" : "")]);
    items.push(["started", fmtDate(r.started_unix_ms) + (r.finished_unix_ms ? " · took " + fmtNum((r.finished_unix_ms - r.started_unix_ms) / 60000, 1) + " min" : " · unfinished")]);
    items.push(["command", r.command_line.join(" ") + (r.quick ? " (quick)" : "")]);
    items.push(["toolchain", r.rustc + " · " + r.build_profile + " · " + r.provenance]);
    if (r.floors) {
      const f = r.floors;
      const parts = [];
      if (f.startup && f.startup.first_200_us) parts.push("start-up floor " + fmtNum(f.startup.first_200_us.median) + " µs (median exec → first 200 of a no-op responder)");
      const mr = f.machine && f.machine.report;
      if (mr) {
        for (const t of mr.timer || []) if (t.lateness) parts.push("timer wake-up lateness at " + fmtNum(t.rate_per_s, 0) + "/s: p50 " + fmtNum(t.lateness.p50_us) + " µs, p99 " + fmtNum(t.lateness.p99_us) + " µs");
        const rt = mr.loopback_echo && mr.loopback_echo.round_trip;
        if (rt) parts.push("loopback echo round trip p50 " + fmtNum(rt.p50_us) + " µs, p99 " + fmtNum(rt.p99_us) + " µs");
      } else if (f.machine && f.machine.unavailable) parts.push("machine floor unavailable: " + f.machine.unavailable);
      items.push(["floors", parts.length ? el("ul", { class: "floors" }, parts.map((x) => el("li", null, x))) : "recorded"]);
    }
  }
  items.push(["schema", "results schema v" + R.schema_version + " · status " + R.status + (R.baseline ? " · baseline " + R.baseline : "") + " · ceiling " + R.ceiling]);
  const dl = el("dl", { class: "meta" }, items.map(([k, v]) => [el("dt", null, k), el("dd", null, v)]));
  const missing = R.missing.length
    ? el("section", { id: "missing", class: "missing" }, el("h2", null, "What this run does not have"), el("ul", null, R.missing.map((m) => el("li", null, m))))
    : null;
  // The machine's verdict, first: the same line results.md and the terminal open with.
  const trust = el("p", { id: "trust", class: R.machine.startsWith("Machine: busy") ? "busy" : null }, R.machine);
  return [el("h1", null, "pingmatrix run ", el("code", null, R.run_id)), trust, answers(), dl, missing, calibration()];
}

// The reader's summary: the same answers, measures and confidences README's headline and
// results.md open with (results::answers computes them once).
function answers() {
  if (!R.answers || !R.answers.length) return null;
  return el("section", { id: "answers" }, el("h2", null, "The answers"),
    el("ul", null, R.answers.map((a) => el("li", { "data-question": a.question },
      el("strong", null, a.question), ": ", el("span", { class: "answer" }, a.answer),
      a.decided_by ? " — by " + a.decided_by : "", a.confidence ? "; " + a.confidence : "", "."))),
    el("p", { class: "hint" }, "Each answer is the services the run cannot tell from the best one by that measure (band 1); \"cannot be told apart here\" when that is every service."));
}

function calibration() {
  const cal = R.calibration;
  if (!cal) return null;
  const names = uniq(cal.cells.flatMap((c) => c.metrics.map((m) => m.metric)));
  const rows = cal.cells.map((c) => el("tr", null, el("td", null, c.scenario + " · " + c.level + " · " + c.profile), el("td", { class: "num" }, c.pairs),
    names.map((n) => { const m = c.metrics.find((x) => x.metric === n); return el("td", { class: "num", title: m ? "A/A change " + fmtPct(m.aa && m.aa.change_pct) + ", verdict " + m.verdict : "" }, m ? fmtNum(m.mde_pct, 1) : "—"); })));
  return el("details", { id: "calibration" }, el("summary", null, "Calibration: minimum detectable effect per metric (%, 95 % confidence, 80 % power; " + cal.service + " against itself)"),
    el("table", { class: "board" }, el("thead", null, el("tr", null, el("th", null, "cell"), el("th", null, "pairs"), names.map((n) => el("th", { class: "num" }, n)))), el("tbody", null, rows)));
}

// One meaning per mark, the same as README's and results.md's legend: † generator saturated
// (its req/s a lower bound), ⚠ suspect, ✗ did not complete.
function marks(c) {
  const out = [];
  if (c.status && c.status !== "ok") out.push(mark("✗", [c.status + (c.failure ? ": " + c.failure : "")], "failed"));
  if (c.generator_saturated) out.push(mark("†", ["generator saturated: req/s is a lower bound"], "suspect"));
  if (c.suspect) out.push(mark("⚠", c.suspect_reasons.length ? c.suspect_reasons : ["suspect"], "suspect"));
  if (c.deviations && c.deviations.length) out.push(mark("*", c.deviations.map((d) => "deviation: " + d), "deviation"));
  return out;
}

function render() {
  const s = state.get();
  const tab = tabs.includes(s.tab) ? s.tab : tabs[0];
  const inTab = R.cells.filter((c) => tabOf(c) === tab);
  const levels = uniq(inTab.map((c) => c.level)).sort(levelOrder);
  const def = defaultLevel(inTab, levels);
  const level = levels.includes(s.level) ? s.level : def.level;
  // A link naming a tab or level this run lacks says so, rather than quietly showing another.
  const notes = [];
  if (s.tab && !tabs.includes(s.tab)) notes.push("This link asks for the tab \u201c" + s.tab + "\u201d, which this run does not have (its tabs: " + tabs.join(", ") + "); showing " + tab + ".");
  if (s.level && !levels.includes(s.level)) notes.push("This link asks for the level \u201c" + s.level + "\u201d, which " + tab + " does not have (its levels: " + levels.join(", ") + "); showing " + level + ".");
  // A counted column only where this board has a count or a reason it has none.
  const counted = COUNTED.filter((k) => inTab.some((c) => c.level === level && (k.stat(c) || k.why(c))));
  // Where the board counted, it opens in its rank by counted cost (results.json's cells
  // carry it, computed by the rule README's headline uses): counts repeat where times on a
  // shared machine do not.
  const countedHere = (key) => counted.some((k) => k.key === key && inTab.some((c) => c.level === level && k.stat(c)));
  const ranked = inTab.some((c) => c.level === level && c.counted_rank);
  const sort = s.sort || (ranked ? "counted_cost" : "requests_per_s");
  const models = uniq(R.cells.map((c) => svcInfo(c.service).model)).sort();
  const ios = uniq(R.cells.map((c) => svcInfo(c.service).io_driver)).sort();
  const offModels = (s.nomodel || "").split(",").filter(Boolean);
  const offIo = (s.noio || "").split(",").filter(Boolean);
  const keep = (c) => !offModels.includes(svcInfo(c.service).model) && !offIo.includes(svcInfo(c.service).io_driver);
  const rows = inTab.filter((c) => c.level === level && keep(c));

  const app = document.getElementById("app");
  app.replaceChildren();
  app.append(...header().filter(Boolean));
  app.append(el("nav", { class: "tabs", role: "tablist" }, tabs.map((t) => el("button", {
    type: "button", role: "tab", "aria-selected": t === tab ? "true" : "false", class: t === tab ? "active" : null, "data-tab": t,
    onclick: () => { state.set({ tab: t, level: null }); render(); },
  }, t))));
  const filter = (name, all, off, param) => el("fieldset", { class: "filter", id: "filter-" + param }, el("legend", null, name),
    all.map((v) => el("label", null, el("input", {
      type: "checkbox", value: v, checked: !off.includes(v),
      onchange: (e) => { const o = off.filter((x) => x !== v); if (!e.target.checked) o.push(v); state.set({ [param]: o.join(",") }); render(); },
    }), " " + v + " (" + uniq(R.cells.filter((c) => svcInfo(c.service)[name === "runtime model" ? "model" : "io_driver"] === v).map((c) => c.service)).length + ")")));
  app.append(el("div", { class: "controls" },
    el("label", null, "level ", el("select", { id: "level", onchange: (e) => { state.set({ level: e.target.value }); render(); } },
      levels.map((l) => el("option", { value: l, selected: l === level }, l)))),
    filter("runtime model", models, offModels, "nomodel"), filter("I/O driver", ios, offIo, "noio")));
  if (notes.length) app.append(el("div", { id: "fragment-note", class: "missing", role: "status" }, notes.map((n) => el("p", null, n))));
  if (level === def.level) app.append(el("p", { id: "level-note", class: "hint" }, "Level " + level + ": " + def.why + "."));

  const m = METRICS.concat(counted).find((x) => x.key === sort);
  const band = (c) => m && c.bands[m.key];
  const byCost = sort === "counted_cost";
  const place = (c) => c.counted_rank && c.counted_rank.place;
  const rankCol = ranked
    ? { key: "counted_cost", label: "rank", better: "lower", title: "rank by counted cost: instructions per request, then syscalls (plus io_uring submissions where counted); counts that overlap over the repetitions tie (2=); services without an instruction count after, by syscalls", value: (c) => c.counted_rank ? c.counted_rank.order : null }
    : { key: "band", label: "rank", title: "services the run cannot tell apart share a band" };
  const cols = [
    Object.assign(rankCol, { render: (c) => byCost ? (place(c) ? el("span", { class: "band", title: "by counted cost" }, place(c)) : "—")
      : band(c) ? el("span", { class: "band", title: "band " + band(c) + " by " + (m ? m.label : "") + ": no paired difference from the band's leader" }, "=" + band(c)) : "—" }),
    { key: "service", label: "service", value: (c) => c.service, render: (c) => [el("strong", null, c.service.replace(/^ping-/, "")), " ", marks(c)] },
    { key: "model", label: "model", value: (c) => svcInfo(c.service).model, render: (c) => svcInfo(c.service).model },
    { key: "io", label: "I/O", value: (c) => svcInfo(c.service).io_driver, render: (c) => svcInfo(c.service).io_driver },
  ];
  const maxRps = Math.max(1, ...rows.map((c) => value(METRICS[0], c) || 0));
  for (const mm of METRICS) {
    cols.push({
      key: mm.key, label: mm.label, numeric: true, better: mm.better,
      value: (c) => value(mm, c),
      render: (c) => {
        const v = value(mm, c);
        const st = mm.stat && mm.stat(c);
        const txt = mm.bytes ? fmtBytes(v) : fmtNum(v);
        const title = st && mm.median ? "median of this cell's " + st.n + " starts (range " + fmtNum(st.min) + " – " + fmtNum(st.max) + ")" : st && st.ci95_low !== null ? "mean of " + st.n + "; 95 % CI " + (mm.bytes ? fmtBytes(Math.max(0, st.ci95_low)) + " – " + fmtBytes(st.ci95_high) : fmtNum(Math.max(0, st.ci95_low)) + " – " + fmtNum(st.ci95_high)) : null;
        const parts = [el("span", { class: "v", title: title }, txt)];
        if (mm.key === "requests_per_s" && v) parts.unshift(el("span", { class: "bar", style: "width:" + (60 * v / maxRps).toFixed(1) + "px" }));
        if (mm.key === "cpu_us_per_request" && c.ceiling_x) parts.push(el("span", { class: "x", title: "× the no-runtime ceiling's CPU per request at this position" }, " " + c.ceiling_x.toFixed(2) + "×"));
        return parts;
      },
    });
  }
  for (const k of counted) {
    cols.push({
      key: k.key, label: k.label, numeric: true, better: k.better,
      title: "counted per request (median over the counted repetitions, their range below); see results.md's counted cost",
      value: (c) => value(k, c),
      render: (c) => {
        const st = k.stat(c);
        if (!st) return k.why(c) ? mark("unmeasured", [k.why(c)], "unmeasured") : el("span", { class: "v" }, "—");
        // Marked as results.md and README mark it (results::counted::not_exact).
        const inexact = st.n > 1 && st.cv !== null && st.cv > R.not_exact.cv ? mark("≈", [R.not_exact.why], "suspect") : null;
        return [el("span", { class: "v", title: "median of " + st.n + " counted repetitions" }, fmtNum(st.median)), inexact,
          st.n > 1 ? el("span", { class: "ci", title: "the range over the repetitions" }, fmtNum(st.min) + " – " + fmtNum(st.max)) : null];
      },
    });
  }
  cols.push({ key: "n", label: "reps", numeric: true, value: (c) => c.n, render: (c) => String(c.n) });
  const churn = rows.some((c) => c.churn);
  if (churn) cols.push({ key: "churn", label: "churn RSS", value: (c) => c.churn && c.churn.growth_pct, render: (c) => c.churn ? c.churn.verdict + " (" + fmtPct(c.churn.growth_pct) + ")" : "—" });

  const tied = (a, b) => byCost ? Boolean(place(b) && place(b).includes("=") && place(a) === place(b)) : Boolean(band(b) && band(a) === band(b));
  const profile = inTab.length ? inTab[0].profile : null;
  const sec = el("section", { id: "board" }, el("h2", null, tab + " · " + level),
    profileNote(profile),
    rows.length ? table(cols, rows, {
      sort: sort, dir: s.dir || (byCost || (m && m.better === "lower") ? "asc" : "desc"),
      then: sort === "instructions_per_request" && countedHere("syscalls_per_request") ? "syscalls_per_request" : null,
      onSort: (k, d) => { state.set({ sort: k, dir: d }); render(); },
      open: (c) => { state.set({ cell: c.key }); render(); document.getElementById("detail").focus(); },
      rowClass: (c, i, all) => [c.status && c.status !== "ok" ? "failed" : null, c.suspect ? "suspect" : null, i > 0 && tied(all[i - 1], c) ? "tied" : null].filter(Boolean).join(" "),
    }) : el("p", { class: "empty" }, "No cell here passes the filters."),
    notServed(inTab.length ? inTab[0].scenario : null),
    el("p", { class: "hint" }, "Click a header to sort (Tab, Enter). Click a row or press Enter on it for the cell's detail; ↑ ↓ move. † generator saturated (a lower bound), ⚠ suspect, ✗ did not complete, * a deviation from the HTTP contract — hover or click for why. Rank: services sharing a band are ones the run cannot tell apart by the sorted metric. Where the board counted, it opens in rank by counted cost, README's headline's rule: instructions per request, then syscalls (plus io_uring submissions where counted); counts that overlap over the repetitions tie (2=); services without an instruction count after, by syscalls."));
  app.append(sec);
  const where = attribution(rows);
  if (where) app.append(where);
  app.append(charts(tab, inTab.filter(keep), levels, level));
  app.append(detail(s.cell));
}

// The services the run did not run in this scenario, because they do not serve its protocol
// (run.json's `not_applicable`): "n/a", never a 0 or a failure.
function notServed(scenario) {
  const na = (R.not_applicable || []).filter((n) => n.scenario === scenario);
  return na.length ? el("ul", { class: "na" }, na.map((n) => el("li", null, el("strong", null, n.service), " — " + n.words))) : null;
}

// The tab's profile in words (results.json's recorded matrix file, described on the Rust
// side as results.md's "Profiles" section gives it), so its quota's effect is read beside
// the numbers it shapes.
function profileNote(profile) {
  const d = profile && R.profiles && R.profiles[profile];
  return d ? el("p", { id: "profile-note", class: "hint" }, el("strong", null, "Profile " + profile), ": " + d + ".") : null;
}

// The level a tab opens at: where it counted instructions (else its first counted level), the
// level README's headline ranks by, so the page and the headline show the same order;
// without counts, the third lowest level (or the highest of fewer).
function defaultLevel(inTab, levels) {
  const counted = inTab.filter((c) => c.counted);
  const ins = counted.find((c) => c.counted.instructions || c.counted.instructions_unmeasured);
  if (ins) return { level: ins.level, why: "where this run counted instructions, the level README's headline rule ranks by (the page opens here)" };
  if (counted.length) return { level: counted[0].level, why: "the first level this run counted, the level README's headline rule ranks by (the page opens here)" };
  const l = levels[levels.length > 2 ? 2 : levels.length - 1];
  return { level: l, why: (levels.length > 2 ? "the third lowest level of this tab" : "this tab's highest level") + ", where the page opens; pick another above" };
}

// Where each service's user-space instructions per request go (results.json counted
// instruction_crates / instruction_functions, where Valgrind counted them per function): its
// crates with their shares and its costliest functions, as results.md's section shows them.
function attribution(rows) {
  const counted = rows.filter((c) => c.counted && c.counted.instruction_crates && c.counted.instruction_crates.length);
  if (!counted.length) return null;
  const body = counted.map((c) => {
    const crates = c.counted.instruction_crates;
    const total = crates.reduce((a, [, st]) => a + st.median, 0);
    const byCrate = crates.slice(0, 6).map(([name, st]) => name + " " + fmtNum(st.median) + (total > 0 ? " (" + (100 * st.median / total).toFixed(0) + " %)" : "")).join(" · ") + (crates.length > 6 ? " · " + (crates.length - 6) + " more" : "");
    const fns = (c.counted.instruction_functions || []).slice(0, 5).map((f) => f.function + " " + fmtNum(f.per_request)).join(" · ") || "—";
    return el("tr", null, el("td", null, c.service), el("td", { class: "num" }, fmtNum(c.counted.instructions && c.counted.instructions.median)), el("td", null, byCrate), el("td", { class: "fns" }, fns));
  });
  return el("section", { id: "attribution" }, el("h2", null, "Where the instructions go"),
    el("table", { class: "board" }, el("thead", null, el("tr", null, ["service", short("instructions_per_request"), "by crate (share)", "costliest functions"].map((h) => el("th", null, h)))), el("tbody", null, body)),
    el("p", { class: "hint" }, "User-space instructions per request by crate and function: cachegrind's per-function counts in the same two Valgrind runs as the instructions, differenced the same way, median over repetitions. Inlined code is counted in the function it was inlined into; a function's crate is the one its symbol names (C functions such as the allocator are libc). The crates add up to the total."));
}

function charts(tab, cells, levels, level) {
  const svcs = uniq(cells.map((c) => c.service));
  const at = (svc, l) => cells.find((c) => c.service === svc && c.level === l);
  // Open loop: req/s is the generator's setting, not a result, so no throughput chart.
  const open = cells.some((c) => c.offered_rate_per_s !== null && c.offered_rate_per_s !== undefined);
  const thr = open ? null : lineChart("Throughput vs load level (" + tab + "), mean with 95 % CI; measured levels only", svcs.map((svc) => ({
    name: svc.replace(/^ping-/, ""),
    points: levels.map((l, i) => { const c = at(svc, l); const st = c && c.requests_per_s; return { i, y: st ? st.mean : null, lo: st && st.ci95_low, hi: st && st.ci95_high, n: st && st.n }; }),
  })), { xLabels: levels, xLabel: "level (measured levels only, services side by side)", yLabel: short("requests_per_s"), points: true });
  const pcts = [["p50", "p50_us", "p50"], ["p90", "p90_us", "p90"], ["p99", "p99_us", "p99"], ["p99.9", "p999_us", "p999"], ["max", "max_us", "max"]];
  let single = false;
  const specSeries = svcs.map((svc) => ({
    name: svc.replace(/^ping-/, ""),
    points: pcts.map(([, k, rk], i) => {
      const c = at(svc, level);
      const y = c && c.latency ? c.latency[k] : null;
      const r = repRange(c, rk);
      if (y !== null && y !== undefined && !r) single = true;
      return { i, y, lo: r && r.lo, hi: r && r.hi };
    }),
  }));
  const spec = lineChart("Latency percentile spectrum at " + level + " (µs, log axis; whisker: min–max of the repetitions' own percentiles" + (single ? "; none where one repetition" : "") + ")",
    specSeries, { xLabels: pcts.map((p) => p[0]), xLabel: "percentile", yLabel: "µs", logY: true, kind: "latency" });
  const cpu = barChart("Server CPU per request at " + level + " (µs), mean with 95 % CI", svcs.map((svc) => {
    const c = at(svc, level); const st = c && c.server_cpu_us_per_request;
    return { name: svc.replace(/^ping-/, ""), v: st ? st.mean : null, lo: st && st.ci95_low, hi: st && st.ci95_high, n: st && st.n };
  }), { xLabel: "µs per request" });
  return el("section", { id: "charts" }, el("h2", null, "Charts"), thr, spec, cpu);
}

// The lowest and highest value a single measured repetition of cell `c` had at latency
// percentile `k` (its generator report), or null with fewer than 2 repetitions or no cell file.
function repRange(c, k) {
  const d = c && R.details[c.key];
  const vs = d ? d.reps.map((r) => r.report.latency_us && r.report.latency_us[k]).filter((v) => v !== null && v !== undefined) : [];
  return vs.length >= 2 ? { lo: Math.min(...vs), hi: Math.max(...vs) } : null;
}

function detail(key) {
  const box = el("section", { id: "detail", tabindex: "-1" });
  const c = R.cells.find((x) => x.key === key);
  if (!c) return box;
  const d = R.details[key];
  box.append(el("h2", null, "Cell ", el("code", null, key), " ", el("button", { type: "button", id: "close-detail", onclick: () => { state.set({ cell: null }); render(); } }, "close")));
  box.append(el("p", null, "status " + (c.status || "unknown") + " · " + c.n + " repetitions" + (c.failure ? " · failure: " + c.failure : "") + (c.stopped ? " · stopped: " + JSON.stringify(c.stopped) : "")));
  if (c.suspect_reasons.length) box.append(el("ul", { class: "reasons" }, c.suspect_reasons.map((r) => el("li", null, "⚠ " + r))));
  if (!d) { box.append(el("p", { class: "missing" }, "No cells/" + key + ".json in this run: the repetitions are not available.")); return box; }
  if (d.failure) box.append(el("pre", null, JSON.stringify(d.failure, null, 2)));
  if (d.reps.length) {
    box.append(el("h3", null, "Repetitions"));
    box.append(el("table", { class: "board", id: "reps" }, el("thead", null, el("tr", null, ["rep", short("requests_per_s"), short("latency_p50_us"), short("latency_p99_us"), "p99.9 µs", "server CPU µs/req", "RSS peak MiB", "threads", "loadgen exit", "generator limits"].map((h) => el("th", null, h)))),
      el("tbody", null, d.reps.map((r) => el("tr", null,
        el("td", null, r.rep), el("td", { class: "num" }, fmtNum(r.report.requests_per_s)),
        el("td", { class: "num" }, fmtNum(r.report.latency_us && r.report.latency_us.p50, 0)), el("td", { class: "num" }, fmtNum(r.report.latency_us && r.report.latency_us.p99, 0)),
        el("td", { class: "num" }, fmtNum(r.report.latency_us && r.report.latency_us.p999, 0)), el("td", { class: "num" }, fmtNum(r.server.cpu_us_per_request)),
        el("td", { class: "num" }, fmtBytes(r.server.rss_peak_bytes)), el("td", { class: "num" }, r.server.threads === undefined ? "—" : r.server.threads),
        el("td", null, r.loadgen_exit_code === null ? "—" : r.loadgen_exit_code), el("td", null, r.generator_limits.join("; ") || "none"))))));
    box.append(el("details", null, el("summary", null, "Generator reports (every field but " + d.omitted.join(", ") + ")"), d.reps.map((r) => el("pre", null, "rep " + r.rep + "\n" + JSON.stringify(r.report, null, 1)))));
    box.append(el("details", null, el("summary", null, "Server samples and cgroup counters"), d.reps.map((r) => el("pre", null, "rep " + r.rep + "\n" + JSON.stringify({ server: r.server, cgroup: r.cgroup, floor_check: r.floor_check }, null, 1)))));
  } else box.append(el("p", { class: "missing" }, "No measured repetitions (the cell did not get to load, or it is a churn cell)."));
  if (d.starts.length) box.append(el("details", null, el("summary", null, d.starts.length + " starts"), el("pre", null, JSON.stringify(d.starts, null, 1))));
  if (d.churn.length) box.append(el("details", { open: true }, el("summary", null, "Churn cycles"), d.churn.map((r) => el("p", null, "rep " + r.rep + ": RSS after close per cycle (MiB) " + r.cycles.map((x) => fmtBytes(x.rss_closed_bytes)).join(" → ")))));
  if (d.verification.length) box.append(el("details", null, el("summary", null, "Verification"), el("ul", null, d.verification.map((v) => el("li", null, (v.passed ? "✓ " : "✗ ") + v.path + " " + (v.status || "") + " " + v.problems.join("; "))))));
  if (d.limits_notes.length) box.append(el("ul", null, d.limits_notes.map((n) => el("li", null, n))));
  return box;
}

window.addEventListener("hashchange", render);
render();
