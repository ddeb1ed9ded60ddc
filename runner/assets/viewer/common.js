// Shared by the run page and the site: DOM building, number formats, the URL state and
// the SVG charts. Every number comes from the embedded JSON the Rust side computed; these
// scripts only lay it out, sort and filter. No library and no network.
"use strict";

const DATA = JSON.parse(document.getElementById("data").textContent);
const SVGNS = "http://www.w3.org/2000/svg";

// el("td", {class: "x", onclick: f}, child, "text", ...): children may be nodes, strings,
// arrays or null (skipped).
function el(tag, attrs, ...children) {
  const n = document.createElement(tag);
  setAttrs(n, attrs);
  append(n, children);
  return n;
}
function svg(tag, attrs, ...children) {
  const n = document.createElementNS(SVGNS, tag);
  setAttrs(n, attrs);
  append(n, children);
  return n;
}
function setAttrs(n, attrs) {
  for (const [k, v] of Object.entries(attrs || {})) {
    if (v === null || v === undefined || v === false) continue;
    if (k.startsWith("on")) n.addEventListener(k.slice(2), v);
    else n.setAttribute(k, v === true ? "" : v);
  }
}
function append(n, children) {
  for (const c of children.flat(Infinity)) {
    if (c === null || c === undefined || c === false) continue;
    n.append(c instanceof Node ? c : document.createTextNode(String(c)));
  }
}

// Number formats: the unit is in the column header, the cell shows the value.
function fmtNum(v, digits) {
  if (v === null || v === undefined || !isFinite(v)) return "—";
  // Three significant digits below 1 (a context switch per 1,000 requests is 0.001, not
  // 0.00), fewer decimals as values grow.
  const a = Math.abs(v);
  const d = digits !== undefined ? digits : a >= 100 ? 0 : a >= 10 ? 1 : a >= 1 || a === 0 ? 2 : Math.min(6, 2 - Math.floor(Math.log10(a)));
  return v.toLocaleString("en-US", { minimumFractionDigits: d, maximumFractionDigits: d });
}
function fmtBytes(v) {
  if (v === null || v === undefined) return "—";
  return fmtNum(v / 1048576, 2);
}
function fmtPct(v, digits) {
  if (v === null || v === undefined || !isFinite(v)) return "—";
  return (v > 0 ? "+" : "") + v.toFixed(digits === undefined ? 1 : digits) + " %";
}
function fmtDate(ms) {
  if (!ms) return "unknown";
  return new Date(ms).toISOString().replace("T", " ").slice(0, 16) + " UTC";
}

// The view's state lives in the URL's fragment (works from file:// too), so a link
// reproduces the view: #tab=ping%20%C2%B7%20pinned&level=c64&sort=requests_per_s
// (the tab as its button reads, "scenario · profile").
const state = {
  get() {
    const s = {};
    // A malformed fragment (a stray "%", a part without "=") is ignored part by part: it
    // must not stop the page from drawing.
    const decode = (x) => { try { return decodeURIComponent(x); } catch (e) { return null; } };
    for (const part of location.hash.replace(/^#/, "").split("&")) {
      const i = part.indexOf("=");
      if (i <= 0) continue;
      const k = decode(part.slice(0, i)), v = decode(part.slice(i + 1));
      if (k !== null && v !== null) s[k] = v;
    }
    return s;
  },
  set(changes) {
    const s = Object.assign(state.get(), changes);
    const parts = Object.entries(s)
      .filter(([, v]) => v !== null && v !== undefined && v !== "")
      .map(([k, v]) => encodeURIComponent(k) + "=" + encodeURIComponent(v));
    history.replaceState(null, "", "#" + parts.join("&"));
  },
};

// A sortable table: columns [{key, label, title, value(row), render(row), numeric, better}].
// Headers are buttons (Tab / Enter / Space sort); rows with `open` get Enter and click.
function table(columns, rows, opts) {
  const sortKey = opts.sort;
  const dir = opts.dir === "asc" ? 1 : -1;
  const col = columns.find((c) => c.key === sortKey);
  const sorted = rows.slice();
  const by = (c, d) => (a, b) => {
    const va = c.value(a), vb = c.value(b);
    const na = va === null || va === undefined, nb = vb === null || vb === undefined;
    if (na || nb) return na - nb; // missing values last, whatever the direction
    return (va < vb ? -1 : va > vb ? 1 : 0) * d;
  };
  // opts.then: a second column, lowest first, for rows the sorted one leaves equal or missing.
  const then = opts.then && columns.find((c) => c.key === opts.then);
  if (col) {
    const first = by(col, dir), second = then ? by(then, 1) : () => 0;
    sorted.sort((a, b) => first(a, b) || second(a, b));
  }
  const head = el("tr", null, columns.map((c) =>
    el("th", { scope: "col", "aria-sort": c.key === sortKey ? (dir > 0 ? "ascending" : "descending") : null, class: c.numeric ? "num" : null },
      c.value ? el("button", {
        type: "button", class: "sort", "data-key": c.key, title: c.title || null,
        onclick: () => opts.onSort(c.key, c.key === sortKey ? (dir > 0 ? "desc" : "asc") : (c.better === "lower" ? "asc" : "desc")),
      }, c.label, c.key === sortKey ? (dir > 0 ? " ▲" : " ▼") : "") : c.label)));
  const body = sorted.map((r, i) => {
    const tr = el("tr", {
      tabindex: opts.open ? "0" : null, "data-key": r.key || null,
      class: [opts.rowClass ? opts.rowClass(r, i, sorted) : null, opts.open ? "clickable" : null].filter(Boolean).join(" ") || null,
      onclick: opts.open ? (e) => { if (!e.target.closest("button,a,.mark")) opts.open(r); } : null,
      onkeydown: opts.open ? (e) => rowKeys(e, tr, () => opts.open(r)) : null,
    }, columns.map((c) => el("td", { class: c.numeric ? "num" : null, "data-col": c.key }, c.render ? c.render(r) : fmtNum(c.value(r)))));
    return tr;
  });
  return el("table", { class: "board" }, el("thead", null, head), el("tbody", null, body));
}

// Keyboard: Enter opens the row, ↑/↓ (or j/k) move between rows.
function rowKeys(e, tr, open) {
  if (e.key === "Enter") { e.preventDefault(); open(); }
  else if (e.key === "ArrowDown" || e.key === "j") { e.preventDefault(); (tr.nextElementSibling || tr).focus(); }
  else if (e.key === "ArrowUp" || e.key === "k") { e.preventDefault(); (tr.previousElementSibling || tr).focus(); }
}

// A mark (†, ⚠) whose reasons show on hover (title) and on click / Enter (a popover).
function mark(symbol, reasons, cls) {
  const text = reasons.join("\n");
  return el("span", {
    class: "mark " + (cls || ""), tabindex: "0", role: "button", title: text, "aria-label": symbol + " " + text,
    onclick: (e) => { e.stopPropagation(); togglePop(e.currentTarget, reasons); },
    onkeydown: (e) => { if (e.key === "Enter" || e.key === " ") { e.preventDefault(); e.stopPropagation(); togglePop(e.currentTarget, reasons); } },
  }, symbol);
}
function togglePop(anchor, reasons) {
  const open = anchor.querySelector(".pop");
  document.querySelectorAll(".pop").forEach((p) => p.remove());
  if (open) return;
  anchor.append(el("span", { class: "pop", role: "tooltip" }, el("ul", null, reasons.map((r) => el("li", null, r)))));
}

// Charts. Each returns an <svg>; series are [{name, points: [{x, y, lo, hi, label}]}].
const PALETTE = ["#1f77b4", "#d62728", "#2ca02c", "#9467bd", "#ff7f0e", "#17becf", "#8c564b", "#e377c2", "#7f7f7f", "#bcbd22"];
const W = 640, H = 300, M = { l: 70, r: 170, t: 20, b: 40 };

function scale(lo, hi, a, b, log) {
  if (log) { lo = Math.log10(lo); hi = Math.log10(hi); }
  if (hi === lo) { hi = lo + 1; }
  return (v) => a + ((log ? Math.log10(v) : v) - lo) / (hi - lo) * (b - a);
}
// At least 4 labelled ticks, so a value can be read off the axis: on a log axis 1, 2 and 5
// times the powers of ten (powers alone over many decades, finer over a narrow range); on a
// linear one the coarsest 1-2-5 step that gives 4.
function ticks(lo, hi, log) {
  if (log) {
    const at = (ms) => {
      const out = [];
      for (let e = Math.floor(Math.log10(lo)); e <= Math.ceil(Math.log10(hi)); e++) for (const m of ms) { const v = m * Math.pow(10, e); if (v >= lo * 0.999999 && v <= hi * 1.000001) out.push(v); }
      return out;
    };
    const t = at([1, 2, 5]);
    if (t.length > 12) return at([1]);
    return t.length >= 4 ? t : at([1, 1.5, 2, 3, 5, 7]);
  }
  const step = Math.pow(10, Math.floor(Math.log10((hi - lo) || 1)));
  const count = (s) => Math.floor(hi / s + 1e-9) - Math.ceil(lo / s - 1e-9) + 1;
  const s = [step * 2, step, step / 2, step / 5].find((x) => count(x) >= 4) || step / 5;
  const out = [];
  for (let v = Math.ceil(lo / s - 1e-9) * s; v <= hi + 1e-9; v += s) out.push(v);
  return out;
}

// A value-axis label short enough to clear the axis title: 250k, 1.5M, 0.02.
function tickLabel(t) {
  const p = (v) => String(+v.toPrecision(3));
  return t >= 1e6 ? p(t / 1e6) + "M" : t >= 1e4 ? p(t / 1e3) + "k" : t >= 1000 ? fmtNum(t, 0) : p(t);
}

// The interval to draw for a point {lo, hi, n}, or null: none from fewer than 3 repetitions
// (a 2-sample t interval spans ±12.7 standard deviations: it says "too few", not "this
// uncertain"), and never below 0 — every charted metric (req/s, times, counts, bytes) is.
function whisker(p) {
  const has = (v) => v !== null && v !== undefined;
  if (!has(p.lo) || !has(p.hi) || (has(p.n) && p.n < 3)) return null;
  return { lo: Math.max(0, p.lo), hi: p.hi };
}
const fewReps = (points) => points.some((p) => p.n !== null && p.n !== undefined && p.n < 3 && p.lo !== null && p.lo !== undefined);
const FEW = " · no interval drawn where fewer than 3 repetitions";

// Lines over categorical x (labels) or a numeric x; whiskers where an interval can be drawn.
function lineChart(title, series, o) {
  const xs = o.xLabels;
  if (fewReps(series.flatMap((s) => s.points))) title += FEW;
  const all = series.flatMap((s) => s.points.flatMap((p) => { const w = whisker(p); return w ? [p.y, w.lo, w.hi] : [p.y]; })).filter((v) => v !== null && v !== undefined && (!o.logY || v > 0));
  if (!all.length) return el("p", { class: "empty" }, title + ": nothing measured to draw.");
  let lo = o.logY ? Math.min(...all) : Math.min(0, ...all), hi = Math.max(...all);
  if (o.logY) { lo = Math.pow(10, Math.floor(Math.log10(lo))); hi = Math.pow(10, Math.ceil(Math.log10(hi))); }
  // Categories, each in the middle of its own slot: the first label clears the value axis's.
  const x = (i) => M.l + (i + 0.5) * (W - M.l - M.r) / xs.length;
  const y = scale(lo, hi, H - M.b, M.t, o.logY);
  const g = [];
  for (const t of ticks(lo, hi, o.logY)) {
    g.push(svg("line", { x1: M.l, x2: W - M.r, y1: y(t), y2: y(t), class: "grid" }));
    g.push(svg("text", { x: M.l - 6, y: y(t) + 4, "text-anchor": "end", class: "tick" }, tickLabel(t)));
  }
  // Every label where they fit; else every k-th, so none overlap.
  const every = Math.max(1, Math.ceil(xs.length * 8 * Math.max(...xs.map((l) => String(l).length)) / (W - M.l - M.r)));
  xs.forEach((l, i) => { if (i % every === 0) g.push(svg("text", { x: x(i), y: H - M.b + 16, "text-anchor": "middle", class: "tick" }, l)); });
  const x0 = x, slot = (W - M.l - M.r) / xs.length;
  series.forEach((s, si) => {
    const c = PALETTE[si % PALETTE.length];
    // o.points: no line between categories (load levels: nothing was measured between c1
    // and c64), the services side by side within each so whiskers do not hide each other.
    const x = o.points && series.length > 1 ? (i) => x0(i) + (si / (series.length - 1) - 0.5) * 0.6 * slot : x0;
    const pts = s.points.filter((p) => p.y !== null && p.y !== undefined && (!o.logY || p.y > 0));
    // The line breaks before a point that cannot be set beside the one before it (p.brk:
    // why not), marked by a dashed rule that says why.
    const segs = [[]];
    for (const p of pts) {
      if (p.brk && p.brk.length && segs[segs.length - 1].length) {
        segs.push([]);
        g.push(svg("line", { x1: x(p.i) - 6, x2: x(p.i) - 6, y1: M.t, y2: H - M.b, stroke: c, class: "break", "stroke-dasharray": "4 3" },
          svg("title", null, "not comparable with the run before: " + p.brk.join("; "))));
      }
      segs[segs.length - 1].push(p);
    }
    for (const sg of segs) {
      if (sg.length > 1 && !o.points) g.push(svg("polyline", { points: sg.map((p) => x(p.i) + "," + y(p.y)).join(" "), fill: "none", stroke: c, "stroke-width": 2, "data-series": s.name }));
    }
    for (const p of pts) {
      const w = whisker(p);
      if (w) {
        const l = o.logY ? Math.max(w.lo, lo) : w.lo;
        g.push(svg("line", { x1: x(p.i), x2: x(p.i), y1: y(l), y2: y(w.hi), stroke: c, class: "whisker", "data-series": s.name }));
      }
      g.push(svg("circle", { cx: x(p.i), cy: y(p.y), r: 3.5, fill: c }, svg("title", null, s.name + " · " + xs[p.i] + ": " + fmtNum(p.y) + (p.hi !== undefined && p.hi !== null ? " [" + fmtNum(p.lo) + " – " + fmtNum(p.hi) + "]" : ""))));
    }
    g.push(svg("rect", { x: W - M.r + 10, y: M.t + si * 16, width: 10, height: 10, fill: c }));
    g.push(svg("text", { x: W - M.r + 24, y: M.t + si * 16 + 9, class: "legend" }, s.name));
  });
  g.push(svg("text", { x: 12, y: M.t + (H - M.t - M.b) / 2, transform: "rotate(-90 12 " + (M.t + (H - M.t - M.b) / 2) + ")", "text-anchor": "middle", class: "axis" }, o.yLabel));
  g.push(svg("text", { x: M.l + (W - M.l - M.r) / 2, y: H - 4, "text-anchor": "middle", class: "axis" }, o.xLabel));
  return el("figure", { class: "chart", "data-kind": o.kind || null }, el("figcaption", null, title), svg("svg", { viewBox: "0 0 " + W + " " + H, role: "img", "aria-label": title }, g));
}

// Horizontal bars with interval whiskers: rows [{name, v, lo, hi}].
function barChart(title, rows, o) {
  rows = rows.filter((r) => r.v !== null && r.v !== undefined);
  if (!rows.length) return el("p", { class: "empty" }, title + ": nothing measured to draw.");
  if (fewReps(rows)) title += FEW;
  const rh = 20, h = M.t + rows.length * rh + 30, left = 170, right = W - 60;
  const hi = Math.max(...rows.map((r) => Math.max(r.v, whisker(r) ? whisker(r).hi : 0)));
  const x = scale(0, hi, left, right, false);
  const g = [];
  rows.forEach((r, i) => {
    const yy = M.t + i * rh;
    g.push(svg("text", { x: left - 6, y: yy + 13, "text-anchor": "end", class: "tick" }, r.name));
    g.push(svg("rect", { x: left, y: yy + 2, width: Math.max(1, x(r.v) - left), height: rh - 6, fill: PALETTE[0], opacity: 0.75 }, svg("title", null, r.name + ": " + fmtNum(r.v) + (r.hi !== null && r.hi !== undefined ? " [" + fmtNum(r.lo) + " – " + fmtNum(r.hi) + "]" : ""))));
    const w = whisker(r);
    if (w) {
      const a = x(w.lo), b = x(w.hi), m = yy + rh / 2 - 1;
      g.push(svg("line", { x1: a, x2: b, y1: m, y2: m, class: "whisker", stroke: "#000" }));
      g.push(svg("line", { x1: a, x2: a, y1: m - 4, y2: m + 4, stroke: "#000" }));
      g.push(svg("line", { x1: b, x2: b, y1: m - 4, y2: m + 4, stroke: "#000" }));
    }
    g.push(svg("text", { x: Math.min(right + 50, Math.max(x(r.v), w ? x(w.hi) : 0) + 4), y: yy + 13, class: "tick" }, fmtNum(r.v)));
  });
  g.push(svg("text", { x: (left + right) / 2, y: h - 6, "text-anchor": "middle", class: "axis" }, o.xLabel));
  return el("figure", { class: "chart" }, el("figcaption", null, title), svg("svg", { viewBox: "0 0 " + W + " " + h, role: "img", "aria-label": title }, g));
}

// Level labels sort by the numbers in them: c1 < c16 < c64 < c16p16.
function levelOrder(a, b) {
  const n = (s) => (s.match(/\d+/g) || ["0"]).map(Number);
  const na = n(a), nb = n(b);
  for (let i = 0; i < Math.max(na.length, nb.length); i++) {
    if ((na[i] || 0) !== (nb[i] || 0)) return (na[i] || 0) - (nb[i] || 0);
  }
  return a < b ? -1 : 1;
}
function uniq(xs) { return [...new Set(xs)]; }
