// The memory page's HTML, CSS and script (memory_page.h). The data replaces the marker inside the
// "ferry-data" script element; the script draws it on canvases and fills the tables.
//
// Attributes the script writes for readers that check a page (tests, other tools):
//   body:          data-status ("ok" once everything is drawn, "error" otherwise), data-errors (any
//                  script error, recorded by window.onerror), data-peak-bytes and
//                  data-host-peak-bytes (the first plan's maxima of the stacks drawn), data-plans
//   section.plan:  the same peaks for each plan, data-plan-peak-bytes (the plan's own figure),
//                  data-peak-position (the schedule position of the device peak)
//   aside#detail:  the selected buffer (a click, or the link page.html#plan=0&buffer=12): data-plan,
//                  data-buffer, and lists ul[data-list="made-by"] and ul[data-list="read-by"] whose
//                  items carry data-equation (the equation's position in the schedule)
//   table.peak-list (data-lane="device" or "host"): one row per buffer live at that peak, with
//                  data-buffer (its index in the plan's buffers; -1 for an argument or output),
//                  data-role ("argument 3", "output 0", "arena" for a buffer of values, "body",
//                  "carry", "workspace", "stream"), data-category, data-bytes, data-type,
//                  data-kind, data-primitive, data-source; the arena's slack is a row with
//                  data-role "slack"; an aggregate of small buffers has data-role "aggregate",
//                  data-group and data-count; past the largest 250, one row (data-role "rest",
//                  data-count) sums the others. The rows' data-bytes add up to the peak.
#include "driver/memory_page.h"

namespace ferry::driver {

const char* const kMemoryPageTemplate = R"FERRYPAGE(<!DOCTYPE html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<meta name="generator" content="ferry">
<title>ferry memory plan</title>
<style>
  :root { --ink: #1d232b; --muted: #5f6b78; --rule: #d9dee4; --paper: #ffffff; --wash: #f5f7f9; }
  * { box-sizing: border-box; }
  body { margin: 0; padding: 18px 22px 40px; font: 13px/1.45 system-ui, -apple-system, "Segoe UI", Roboto, "Liberation Sans", sans-serif;
         color: var(--ink); background: var(--paper); }
  h1 { font-size: 19px; margin: 0 0 2px; }
  h2 { font-size: 16px; margin: 0; }
  h3 { font-size: 13px; margin: 10px 0 4px; color: var(--muted); font-weight: 600; }
  .sub { color: var(--muted); margin: 0 0 10px; }
  #legend { display: flex; flex-wrap: wrap; gap: 4px 14px; margin: 8px 0 14px; }
  .sw { display: inline-flex; align-items: center; gap: 5px; white-space: nowrap; }
  .sw i { width: 13px; height: 13px; border-radius: 2px; display: inline-block; border: 1px solid rgba(0,0,0,.15); }
  #plans { display: grid; gap: 18px; grid-template-columns: 1fr; }
  #plans.compare { grid-template-columns: repeat(auto-fit, minmax(520px, 1fr)); }
  section.plan { border: 1px solid var(--rule); border-radius: 6px; padding: 10px 12px 12px; background: var(--paper); min-width: 0; }
  .plan-head { display: flex; align-items: baseline; gap: 14px; flex-wrap: wrap; }
  .peak-big { font-size: 15px; font-weight: 650; }
  .peak-big.over { color: #c62828; }
  .muted { color: var(--muted); }
  .chart { position: relative; }
  .chart canvas { display: block; width: 100%; }
  .chart canvas.overlay { position: absolute; left: 0; top: 0; pointer-events: none; }
  .peak-bars { margin: 0 0 14px; max-width: 1100px; }
  .lane-label { font-size: 11px; color: var(--muted); margin: 6px 0 1px; display: flex; justify-content: space-between; }
  .refused { color: #c62828; white-space: pre-wrap; font-family: ui-monospace, "DejaVu Sans Mono", monospace; font-size: 12px; }
  table.peak-list { border-collapse: collapse; width: 100%; font-size: 12px; margin-top: 4px; }
  table.peak-list th { text-align: left; font-weight: 600; color: var(--muted); border-bottom: 1px solid var(--rule); padding: 3px 6px; }
  table.peak-list td { border-bottom: 1px solid #eef1f4; padding: 2px 6px; vertical-align: top; }
  table.peak-list td.num { text-align: right; white-space: nowrap; font-variant-numeric: tabular-nums; }
  table.peak-list tr[data-bytes] { cursor: pointer; }
  table.peak-list tr[data-bytes]:hover { background: var(--wash); }
  code, .mono { font-family: ui-monospace, "DejaVu Sans Mono", monospace; font-size: 11.5px; }
  details > summary { cursor: pointer; color: var(--muted); margin-top: 8px; }
  #tooltip { position: fixed; pointer-events: none; background: #1d232b; color: #fff; padding: 5px 8px; border-radius: 4px;
             font-size: 12px; max-width: 520px; z-index: 10; box-shadow: 0 2px 8px rgba(0,0,0,.25); }
  #detail { position: fixed; right: 16px; bottom: 16px; width: min(620px, calc(100vw - 32px)); max-height: 60vh; overflow: auto;
            background: var(--paper); border: 1px solid var(--rule); border-radius: 6px; padding: 10px 12px;
            box-shadow: 0 6px 24px rgba(0,0,0,.18); z-index: 9; }
  #detail ul { margin: 2px 0 6px; padding-left: 18px; }
  #detail .close { float: right; cursor: pointer; border: 0; background: none; font-size: 16px; color: var(--muted); }
  .error-box { color: #c62828; border: 1px solid #c62828; padding: 8px; border-radius: 4px; margin: 8px 0; white-space: pre-wrap; }
</style>
<script>
  // Recorded before the page's script runs, so that a checker sees any error, not only a missing "ok".
  window.ferryErrors = [];
  window.onerror = function (message, source, line, column) {
    window.ferryErrors.push(String(message) + " (line " + line + ":" + column + ")");
    document.body && document.body.setAttribute("data-errors", window.ferryErrors.join("; "));
    document.body && document.body.setAttribute("data-status", "error");
  };
</script>
</head>
<body data-status="loading">
<noscript><p>This page draws the plan with JavaScript; the plan's numbers are in the "ferry-data" element of its source.</p></noscript>
<header>
  <h1 id="title">ferry memory plan</h1>
  <p class="sub" id="subtitle"></p>
</header>
<div id="legend"></div>
<div id="plans"></div>
<div id="tooltip" hidden></div>
<aside id="detail" hidden></aside>
<script id="ferry-data" type="application/json">/*FERRY_PAGE_DATA*/</script>
<script>
"use strict";
(function () {
  // The categories, in the order they stack (bottom to top), as memory_page.cpp numbers them.
  const CATS = [
    { name: "argument", label: "arguments (parameters, data)", color: "#9aa3ad" },
    { name: "output", label: "outputs", color: "#4f6d8f" },
    { name: "saved", label: "saved residual", color: "#e8833a" },
    { name: "offloaded", label: "offloaded residual (in host memory, or fetched back)", color: "#2a9d5c" },
    { name: "recomputed", label: "recomputed residual", color: "#a05cc4" },
    { name: "body", label: "scan / checkpoint body, carries", color: "#cdb13e" },
    { name: "temporary", label: "temporary", color: "#a9c4e6" },
    { name: "workspace", label: "kernel workspace", color: "#d9557a" },
    { name: "transfer", label: "transfer in flight", color: "#17b3cf" },
    { name: "slack", label: "arena slack (alignment, fragmentation)", color: "#e4e7eb" },
  ];
  const SLACK = 9;
  const LANES = ["device", "host"];
  const COPY_COLORS = ["#2a9d5c", "#17b3cf"];  // to host, to device
  const MAX_ROWS = 250;

  function human(b) {
    if (b < 1024) return b + " B";
    if (b < 1048576) return (b / 1024).toFixed(1) + " KiB";
    if (b < 1073741824) return (b / 1048576).toFixed(1) + " MiB";
    return (b / 1073741824).toFixed(2) + " GiB";
  }
  function el(tag, attrs, ...children) {
    const e = document.createElement(tag);
    for (const k in attrs || {}) {
      if (k === "class") e.className = attrs[k];
      else if (k === "text") e.textContent = attrs[k];
      else e.setAttribute(k, attrs[k]);
    }
    for (const c of children) if (c !== null && c !== undefined) e.append(c);
    return e;
  }

  // ---- The model of one plan: per lane, the items stacked at each position and their total. ----
  // An item is a buffer (one range), an aggregate of small buffers (a value per position) or the
  // arena's slack (the same value everywhere). The stack at position t is every item's value at t,
  // in the items' order; the drawn peak is the largest total.
  function buildLane(P, m) {
    const N = P.n + 1;
    const items = [];
    P.buffers.forEach(function (b, idx) {
      if (b.m === m) items.push({ kind: "buffer", b: b, idx: idx, cat: b.c, start: b.a, end: b.b, size: b.s });
    });
    for (const g of P.groups) {
      if (g.m !== m) continue;
      const vals = new Float64Array(N), counts = new Int32Array(N);
      let v = 0, c = 0, j = 0;
      for (let t = 0; t < N; t++) {
        while (j < g.d.length && g.d[j] <= t) { v += g.d[j + 1]; c += g.d[j + 2]; j += 3; }
        vals[t] = v; counts[t] = c;
      }
      items.push({ kind: "group", g: g, cat: g.c, start: 0, end: P.n, vals: vals, counts: counts, idx: 1e9 });
    }
    if (P.slack[m] > 0) items.push({ kind: "slack", cat: SLACK, start: 0, end: P.n, size: P.slack[m], idx: 2e9 });
    items.sort(function (a, b) { return a.cat - b.cat || a.start - b.start || a.idx - b.idx; });
    const total = new Float64Array(N), delta = new Float64Array(N + 1);
    for (const it of items) {
      if (it.kind === "group") { for (let t = 0; t < N; t++) total[t] += it.vals[t]; continue; }
      delta[it.start] += it.size;
      delta[it.end + 1] -= it.size;
    }
    let run = 0, peak = 0, at = 0;
    for (let t = 0; t < N; t++) {
      run += delta[t];
      total[t] += run;
      if (total[t] > peak) { peak = total[t]; at = t; }
    }
    return { m: m, N: N, items: items, total: total, peak: peak, peakAt: at };
  }
  function valueAt(it, t) {
    if (it.kind === "group") return it.vals[t];
    return it.start <= t && t <= it.end ? it.size : 0;
  }
  function phaseAt(it, t) {
    if (it.kind !== "buffer") return null;
    const ph = it.b.p;
    let k = 0;
    while (k + 1 < ph.length && ph[k + 1][0] <= t) k++;
    return ph[k];
  }
  function catAt(it, t) {
    const ph = phaseAt(it, t);
    return ph ? ph[1] : it.cat;
  }
  function describe(it, t) {
    if (it.kind === "slack") return "arena slack: " + human(it.size) + " the arena holds beyond its most live bytes (alignment, fragmentation)";
    if (it.kind === "group")
      return it.counts[t] + " small buffer" + (it.counts[t] === 1 ? "" : "s") + " (" + CATS[it.cat].label + ") drawn together, " +
             human(it.vals[t]) + " here (" + it.g.n + " in all)";
    return phaseAt(it, t)[2];
  }

  // Where each drawn column is: every position gets a column when they fit; otherwise each pixel
  // column shows the position with the largest total among those it covers, so no peak is lost.
  function segments(lane, width) {
    const N = lane.N, segs = [];
    if (N <= width) {
      for (let t = 0; t < N; t++) segs.push({ t: t, x0: t * width / N, x1: (t + 1) * width / N });
      return segs;
    }
    for (let c = 0; c < width; c++) {
      const a = Math.floor(c * N / width), z = Math.max(a + 1, Math.floor((c + 1) * N / width));
      let best = a;
      for (let t = a; t < z; t++) if (lane.total[t] > lane.total[best]) best = t;
      segs.push({ t: best, x0: c, x1: c + 1 });
    }
    return segs;
  }

  const AXIS_W = 62, PAD_T = 16, PAD_B = 16;

  function setupCanvas(canvas, cssWidth, cssHeight) {
    const r = window.devicePixelRatio || 1;
    canvas.width = Math.max(1, Math.round(cssWidth * r));
    canvas.height = Math.max(1, Math.round(cssHeight * r));
    canvas.style.height = cssHeight + "px";
    const g = canvas.getContext("2d");
    g.setTransform(r, 0, 0, r, 0, 0);
    return g;
  }
  function niceStep(max, ticks) {
    const raw = max / ticks, p = Math.pow(2, Math.floor(Math.log2(raw)));
    for (const f of [1, 2, 4, 8]) if (p * f >= raw) return p * f;
    return p * 8;
  }

  // Draws one lane's stack; returns what hovering and clicking need.
  // Widths are read from the layout once, before anything is drawn: reading one after a canvas
  // changed size makes the browser lay the whole page out again (slow with a long table).
  function drawLane(view, lane, P, scale, height, limit, cssW) {
    const canvas = view.canvas;
    const plotW = Math.max(50, Math.floor(cssW - AXIS_W - 8));
    const g = setupCanvas(canvas, cssW, height);
    const plotH = height - PAD_T - PAD_B;
    const y = function (b) { return PAD_T + plotH - (scale > 0 ? b / scale : 0) * plotH; };
    const segs = segments(lane, plotW);
    g.fillStyle = "#fbfcfd";
    g.fillRect(AXIS_W, PAD_T, plotW, plotH);
    // Grid and axis.
    g.font = "10px system-ui, sans-serif";
    g.fillStyle = "#5f6b78";
    g.strokeStyle = "#e3e7eb";
    g.lineWidth = 1;
    if (scale > 0) {
      const step = niceStep(scale, height > 120 ? 4 : 2);
      for (let v = 0; v <= scale * 1.0001; v += step) {
        const yy = Math.round(y(v)) + 0.5;
        g.beginPath(); g.moveTo(AXIS_W, yy); g.lineTo(AXIS_W + plotW, yy); g.stroke();
        g.textAlign = "right"; g.textBaseline = "middle";
        g.fillText(human(v), AXIS_W - 4, yy);
      }
    }
    // The stack: runs of one colour within a column are one rectangle. Columns come in order of
    // position, so the items live at each are kept by a sweep (added at their start, dropped once
    // past their end) rather than found among all of them every time.
    const lines = [];
    const byStart = lane.items.map(function (it, k) { return k; }).sort(function (a, b) { return lane.items[a].start - lane.items[b].start; });
    let active = [], next = 0;
    for (const s of segs) {
      while (next < byStart.length && lane.items[byStart[next]].start <= s.t) {
        const k = byStart[next++];
        let lo = 0, hi = active.length;
        while (lo < hi) { const mid = (lo + hi) >> 1; if (active[mid] < k) lo = mid + 1; else hi = mid; }
        active.splice(lo, 0, k);
      }
      active = active.filter(function (k) { return lane.items[k].end >= s.t; });
      const x0 = AXIS_W + s.x0, w = Math.max(1, s.x1 - s.x0);
      let base = 0, runStart = 0, runColor = null;
      for (const k of active) {
        const it = lane.items[k];
        const v = valueAt(it, s.t);
        if (!(v > 0)) continue;
        const color = it.kind === "buffer" && it.b.p.length === 1 ? CATS[it.b.p[0][1]].color : CATS[catAt(it, s.t)].color;
        if (color !== runColor) {
          if (runColor !== null) { g.fillStyle = runColor; g.fillRect(x0, y(base), w, y(runStart) - y(base)); }
          runColor = color; runStart = base;
        }
        base += v;
        if (y(base - v) - y(base) >= 5) lines.push([x0, w, y(base)]);
      }
      if (runColor !== null) { g.fillStyle = runColor; g.fillRect(x0, y(base), w, y(runStart) - y(base)); }
    }
    g.fillStyle = "rgba(255,255,255,0.55)";
    for (const l of lines) g.fillRect(l[0], l[2], l[1], 1);
    // The backward pass, the limit and the peak.
    const xOf = function (t) { return AXIS_W + (t + 0.5) * plotW / lane.N; };
    if (lane.m === 0 && P.turn > 0 && P.turn <= P.n) {
      const xt = Math.round(AXIS_W + P.turn * plotW / lane.N) + 0.5;
      g.strokeStyle = "rgba(29,35,43,0.35)"; g.setLineDash([2, 3]);
      g.beginPath(); g.moveTo(xt, PAD_T); g.lineTo(xt, PAD_T + plotH); g.stroke();
      g.setLineDash([]);
      g.fillStyle = "#5f6b78"; g.textAlign = "left"; g.textBaseline = "top";
      g.fillText("backward pass \u2192", xt + 3, PAD_T + plotH + 2);
    }
    if (limit > 0 && limit <= scale * 1.05) {
      const yl = Math.round(y(limit)) + 0.5;
      g.strokeStyle = "#c62828"; g.lineWidth = 1.5; g.setLineDash([6, 4]);
      g.beginPath(); g.moveTo(AXIS_W, yl); g.lineTo(AXIS_W + plotW, yl); g.stroke();
      g.setLineDash([]); g.lineWidth = 1;
      g.fillStyle = "#c62828"; g.textAlign = "right"; g.textBaseline = "bottom";
      g.fillText("limit " + human(limit), AXIS_W + plotW - 2, yl - 2);
    }
    if (lane.peak > 0) {
      const xp = xOf(lane.peakAt), yp = Math.round(y(lane.peak)) + 0.5;
      g.strokeStyle = "#1d232b"; g.setLineDash([3, 3]);
      g.beginPath(); g.moveTo(AXIS_W, yp); g.lineTo(AXIS_W + plotW, yp); g.stroke();
      g.setLineDash([]);
      g.fillStyle = "#1d232b";
      g.beginPath(); g.moveTo(xp, yp); g.lineTo(xp - 5, yp - 8); g.lineTo(xp + 5, yp - 8); g.closePath(); g.fill();
      g.font = "bold 11px system-ui, sans-serif";
      g.textAlign = xp > AXIS_W + plotW * 0.7 ? "right" : "left"; g.textBaseline = "bottom";
      g.fillText("peak " + human(lane.peak), xp + (g.textAlign === "right" ? -8 : 8), yp - 2);
    }
    g.strokeStyle = "#aab3bd";
    g.strokeRect(AXIS_W + 0.5, PAD_T + 0.5, plotW - 1, plotH - 1);
    return { segs: segs, plotW: plotW, plotH: plotH, y: y, scale: scale, height: height, cssW: cssW };
  }

  function drawCopies(view, P, lane, plotW, cssW) {
    const rowH = 11, height = rowH * 2 + 4;
    const g = setupCanvas(view.canvas, cssW, height);
    g.font = "10px system-ui, sans-serif"; g.fillStyle = "#5f6b78"; g.textAlign = "right"; g.textBaseline = "middle";
    g.fillText("to host", AXIS_W - 4, 2 + rowH / 2);
    g.fillText("to device", AXIS_W - 4, 2 + rowH + rowH / 2);
    g.fillStyle = "#f3f5f7"; g.fillRect(AXIS_W, 2, plotW, rowH * 2);
    const bars = [];
    for (const c of P.copies) {
      const x0 = AXIS_W + c[0] * plotW / lane.N, x1 = AXIS_W + (c[1] + 1) * plotW / lane.N;
      const w = Math.max(2, x1 - x0), yy = 2 + c[3] * rowH + 1;
      g.fillStyle = COPY_COLORS[c[3]]; g.globalAlpha = c[5] > 1 ? 0.55 : 0.8;
      g.fillRect(x0, yy, w, rowH - 2);
      bars.push({ x0: x0, x1: x0 + w, row: c[3], c: c });
    }
    g.globalAlpha = 1;
    return { bars: bars, rowH: rowH };
  }

  // ---- The page. ----
  const DATA = JSON.parse(document.getElementById("ferry-data").textContent);
  const plans = DATA.plans;
  const compare = plans.length > 1;
  document.getElementById("title").textContent = DATA.title;
  document.title = DATA.title;
  document.getElementById("plans").className = compare ? "compare" : "";
  const models = plans.map(function (P) { return P.refused ? null : [buildLane(P, 0), buildLane(P, 1)]; });
  // One scale for all plans: small multiples compare by height.
  const scales = [0, 1].map(function (m) {
    let s = m === 0 ? (DATA.limit || 0) : 0;
    for (const md of models) if (md) s = Math.max(s, md[m].peak);
    return s * 1.08;
  });
  const first = models.find(function (md) { return md; });
  if (first) {
    document.body.setAttribute("data-peak-bytes", String(first[0].peak));
    document.body.setAttribute("data-host-peak-bytes", String(first[1].peak));
  }
  document.body.setAttribute("data-plans", String(plans.length));
  document.getElementById("subtitle").textContent = compare
    ? "The same step under " + plans.length + " plans, on one scale. Hover a range to name its buffer; click it for the equations that make and read it."
    : "Device and host memory over the schedule, as the plan holds it. Hover a range to name its buffer; click it for the equations that make and read it.";

  const legend = document.getElementById("legend");
  const present = new Set([SLACK]);
  for (const P of plans) if (!P.refused) { for (const b of P.buffers) for (const ph of b.p) present.add(ph[1]); for (const gr of P.groups) present.add(gr.c); }
  CATS.forEach(function (c, i) {
    if (present.has(i)) legend.append(el("span", { class: "sw" }, el("i", { style: "background:" + c.color }), c.label));
  });
  legend.append(el("span", { class: "sw" }, el("i", { style: "background:" + COPY_COLORS[0] }), "copy to host"),
                el("span", { class: "sw" }, el("i", { style: "background:" + COPY_COLORS[1] }), "copy to device"));

  const tooltip = document.getElementById("tooltip");
  const detail = document.getElementById("detail");
  function showTip(ev, text) {
    tooltip.textContent = text;
    tooltip.hidden = false;
    const x = Math.min(ev.clientX + 14, window.innerWidth - tooltip.offsetWidth - 8);
    tooltip.style.left = Math.max(4, x) + "px";
    tooltip.style.top = (ev.clientY + 14) + "px";
  }
  function hideTip() { tooltip.hidden = true; }
  function eqText(P, e) { return P.eqs[String(e)] || ("equation " + e); }
  // "%17 = tanh", "%3, ... = scan": an equation named as memory_report names it, without its operands.
  function eqLabel(P, e) {
    const text = eqText(P, e), at = text.indexOf(" = ");
    if (at < 0) return text;
    const outs = text.slice(0, at).split(", "), prim = text.slice(at + 3).split(/[\[{ ]/)[0];
    return outs[0] + (outs.length > 1 ? ", ..." : "") + " = " + prim;
  }
  function placeText(P, t) { return t >= P.n ? "at the end of the program" : "while " + eqLabel(P, t) + " runs"; }

  // The item under a point of a lane's chart.
  function itemAt(lane, drawn, ev, canvas) {
    const r = canvas.getBoundingClientRect();
    const x = ev.clientX - r.left - AXIS_W, yy = ev.clientY - r.top;
    if (x < 0 || x >= drawn.plotW) return null;
    let s = null;
    for (const sg of drawn.segs) if (x >= sg.x0 && x < sg.x1) { s = sg; break; }
    if (!s) return null;
    const bytes = (PAD_T + drawn.plotH - yy) / drawn.plotH * drawn.scale;
    let base = 0;
    for (const it of lane.items) {
      const v = valueAt(it, s.t);
      if (!(v > 0)) continue;
      if (bytes >= base && bytes < base + v) return { it: it, t: s.t };
      base += v;
    }
    return { it: null, t: s.t };
  }

  // Outlines an item wherever it is drawn.
  function highlight(view, lane, drawn, target) {
    const g = setupCanvas(view.overlay, drawn.cssW, drawn.height);
    if (!target) return;
    g.fillStyle = "rgba(29,35,43,0.85)";
    for (const s of drawn.segs) {
      let base = 0;
      for (const it of lane.items) {
        const v = valueAt(it, s.t);
        if (!(v > 0)) continue;
        if (it === target) {
          const x0 = AXIS_W + s.x0, w = Math.max(1, s.x1 - s.x0), y0 = drawn.y(base + v), y1 = drawn.y(base);
          g.fillRect(x0, y0 - 1, w, 2);
          g.fillRect(x0, y1 - 1, w, 2);
          break;
        }
        base += v;
      }
    }
  }

  function select(P, model, views, m, it, t) {
    for (const k of [0, 1]) if (views[k]) highlight(views[k], model[k], views[k].drawn, k === m ? it : null);
    detail.replaceChildren();
    if (!it) { detail.hidden = true; return; }
    detail.setAttribute("data-plan", P.title);
    detail.setAttribute("data-buffer", it.kind === "buffer" ? String(it.b.i) : "-1");
    detail.append(el("button", { class: "close", title: "close", text: "\u00d7" }));
    detail.querySelector(".close").onclick = function () { select(P, model, views, m, null, 0); };
    detail.append(el("h2", { text: describe(it, t) }));
    if (it.kind !== "buffer") { detail.hidden = false; return; }
    const b = it.b;
    detail.append(el("p", { class: "muted", text: CATS[b.c].label + " \u00b7 " + b.k + " \u00b7 " + human(b.s) +
      (b.i >= 0 ? " \u00b7 buffer " + b.i + " of the plan" : " \u00b7 " + b.role) + " \u00b7 live from position " + b.a + " to " + b.b +
      (P.title ? " \u00b7 " + P.title : "") }));
    if (b.p.length > 1) {
      detail.append(el("h3", { text: "What it holds over its range" }));
      const ul = el("ul");
      for (const ph of b.p) ul.append(el("li", { text: "from position " + ph[0] + ": " + CATS[ph[1]].label + ", " + ph[2] }));
      detail.append(ul);
    }
    const list = function (title, name, eqs, more) {
      detail.append(el("h3", { text: title }));
      const ul = el("ul", { class: "mono", "data-list": name });
      if (!eqs.length) ul.append(el("li", { class: "muted", text: "none" }));
      for (const e of eqs) ul.append(el("li", { "data-equation": String(e), text: "position " + e + ": " + eqText(P, e) }));
      if (more > 0) ul.append(el("li", { class: "muted", text: "... and " + more + " more" }));
      detail.append(ul);
    };
    list(b.role.indexOf("argument") === 0 ? "Made by: the caller (a program argument)" : "Made by", "made-by", b.mk, 0);
    list("Read by", "read-by", b.rd, b.nr - b.rd.length);
    detail.hidden = false;
  }

  function peakTable(P, lane, m, onPick) {
    const t = lane.peakAt;
    const live = [];
    for (const it of lane.items) { const v = valueAt(it, t); if (v > 0) live.push({ it: it, v: v }); }
    live.sort(function (a, b) { return b.v - a.v; });
    const table = el("table", { class: "peak-list", "data-lane": LANES[m], "data-peak-position": String(t) });
    table.append(el("tr", {}, el("th", { text: "what" }), el("th", { text: "buffer" }), el("th", { text: "type" }),
      el("th", { text: "kind" }), el("th", { text: "primitive" }), el("th", { text: "source" }), el("th", { text: "bytes" })));
    const row = function (x) {
      const it = x.it;
      const cat = catAt(it, t);
      const attrs = { "data-bytes": String(x.v), "data-category": CATS[cat].name };
      let cells;
      if (it.kind === "buffer") {
        const b = it.b, ph = phaseAt(it, t);  // what the buffer holds at the peak
        Object.assign(attrs, { "data-buffer": String(b.i), "data-role": b.role, "data-type": ph[3], "data-kind": b.k,
                               "data-primitive": ph[4], "data-source": ph[5] });
        cells = [CATS[cat].label, ph[2], ph[3], b.k, ph[4], ph[5]];
      } else if (it.kind === "group") {
        Object.assign(attrs, { "data-group": CATS[it.cat].name, "data-count": String(it.counts[t]), "data-role": "aggregate" });
        cells = [CATS[cat].label, describe(it, t), "", LANES[m], "", ""];
      } else {
        Object.assign(attrs, { "data-role": "slack" });
        cells = [CATS[SLACK].label, describe(it, t), "", LANES[m], "", ""];
      }
      const tr = el("tr", attrs);
      cells.forEach(function (c, i) { tr.append(el("td", i === 1 ? { class: "mono", text: c } : { text: c })); });
      tr.append(el("td", { class: "num", text: human(x.v) }));
      tr.onclick = function () { onPick(it, t); };
      return tr;
    };
    // Thousands of rows would take the browser most of a second to lay out: the largest are shown,
    // the rest summed in one row (data-role "rest") until asked for.
    for (const x of live.slice(0, MAX_ROWS)) table.append(row(x));
    if (live.length > MAX_ROWS) {
      const rest = live.slice(MAX_ROWS);
      const bytes = rest.reduce(function (a, x) { return a + x.v; }, 0);
      const button = el("button", { text: "show all " + live.length });
      const tr = el("tr", { "data-role": "rest", "data-bytes": String(bytes), "data-count": String(rest.length) },
                    el("td", { colspan: "6", class: "muted" }, "... and " + rest.length + " smaller ", button),
                    el("td", { class: "num", text: human(bytes) }));
      button.onclick = function (ev) {
        ev.stopPropagation();
        for (const x of rest) table.append(row(x));
        tr.remove();
      };
      table.append(tr);
    }
    return table;
  }

  // Comparison mode's first picture: each plan's device and host peak as bars on one scale.
  function peakBars() {
    const box = el("div", { class: "peak-bars" });
    const canvas = el("canvas");
    box.append(el("h3", { text: "Peaks by plan" + (DATA.limit > 0 ? " (dashed: the device limit; a red bar is over it)" : "") }),
               el("div", { class: "chart" }, canvas));
    box.draw = function (width) {
      const cssW = Math.max(300, width || 800), rowH = 22, labelW = Math.min(360, cssW * 0.34);
      const height = plans.length * rowH + 22;
      const g = setupCanvas(canvas, cssW, height);
      const barW = (cssW - labelW - 120) / 2, scaleD = scales[0] || 1, scaleH = scales[1] || 1;
      g.font = "12px system-ui, sans-serif"; g.textBaseline = "middle";
      g.fillStyle = "#5f6b78"; g.textAlign = "left";
      g.fillText("device", labelW, 8); g.fillText("host", labelW + barW + 60, 8);
      plans.forEach(function (P, i) {
        const md = models[i], yy = 18 + i * rowH;
        g.fillStyle = "#1d232b"; g.textAlign = "right";
        g.fillText(P.title.length > 48 ? P.title.slice(0, 47) + "\u2026" : P.title, labelW - 8, yy + rowH / 2);
        if (!md) { g.fillStyle = "#c62828"; g.textAlign = "left"; g.fillText("refused", labelW, yy + rowH / 2); return; }
        const d = md[0].peak, h = md[1].peak;
        g.fillStyle = DATA.limit > 0 && d > DATA.limit ? "#c62828" : "#4f6d8f";
        g.fillRect(labelW, yy + 4, d / scaleD * barW, rowH - 8);
        g.fillStyle = "#2a9d5c";
        g.fillRect(labelW + barW + 60, yy + 4, h / scaleH * barW, rowH - 8);
        g.fillStyle = "#1d232b"; g.textAlign = "left";
        g.fillText(human(d), labelW + d / scaleD * barW + 4, yy + rowH / 2);
        g.fillText(human(h), labelW + barW + 60 + h / scaleH * barW + 4, yy + rowH / 2);
      });
      if (DATA.limit > 0) {
        const xl = Math.round(labelW + DATA.limit / scaleD * barW) + 0.5;
        g.strokeStyle = "#c62828"; g.lineWidth = 1.5; g.setLineDash([5, 3]);
        g.beginPath(); g.moveTo(xl, 14); g.lineTo(xl, height); g.stroke(); g.setLineDash([]);
      }
    };
    return box;
  }

  function drawMeasured(P, box, cssW) {
    const M = P.measured;
    const canvas = box.querySelector("canvas");
    const plotW = Math.max(50, cssW - AXIS_W - 8);
    const kinds = Object.keys(M.live);
    const rowH = 11, liveH = 90, height = rowH * 3 + 10 + (kinds.length ? liveH + PAD_T : 0);
    const g = setupCanvas(canvas, cssW, height);
    const x = function (ms) { return AXIS_W + (M.ms > 0 ? ms / M.ms : 0) * plotW; };
    g.font = "10px system-ui, sans-serif"; g.textAlign = "right"; g.textBaseline = "middle";
    const rows = [["compute", M.compute, "#4f6d8f"], ["to host", M.to_host, COPY_COLORS[0]], ["to device", M.to_device, COPY_COLORS[1]]];
    rows.forEach(function (r, i) {
      const yy = 2 + i * rowH;
      g.fillStyle = "#5f6b78"; g.fillText(r[0], AXIS_W - 4, yy + rowH / 2);
      g.fillStyle = "#f3f5f7"; g.fillRect(AXIS_W, yy, plotW, rowH - 1);
      g.fillStyle = r[2];
      for (const s of r[1]) g.fillRect(x(s[0]), yy + 1, Math.max(1, x(s[1]) - x(s[0])), rowH - 3);
    });
    if (kinds.length) {
      const top = rowH * 3 + 10 + PAD_T;
      let most = P.plan_peak[0].live + P.plan_peak[1].live;
      for (const k of kinds) for (const s of M.live[k]) most = Math.max(most, s[1]);
      most = most * 1.08 || 1;
      const y = function (b) { return top + liveH - b / most * liveH; };
      g.fillStyle = "#fbfcfd"; g.fillRect(AXIS_W, top, plotW, liveH);
      g.fillStyle = "#5f6b78"; g.fillText(human(most / 1.08), AXIS_W - 4, y(most / 1.08));
      g.fillText("0", AXIS_W - 4, y(0));
      const colors = { device: "#1d232b", pinned_host: COPY_COLORS[0], unpinned_host: "#8a6d3b" };
      for (const k of kinds) {
        g.strokeStyle = colors[k] || "#777"; g.lineWidth = 1.5;
        g.beginPath();
        let last = 0;
        M.live[k].forEach(function (s, i) {
          if (i === 0) g.moveTo(x(s[0]), y(0));
          g.lineTo(x(s[0]), y(last)); g.lineTo(x(s[0]), y(s[1])); last = s[1];
        });
        g.lineTo(x(M.ms), y(last));
        g.stroke();
      }
      g.lineWidth = 1;
      [[P.plan_peak[0].live, "#1d232b", "plan: most device arena bytes", "left"],
       [P.plan_peak[1].live, COPY_COLORS[0], "plan: most host arena bytes", "right"]].forEach(function (r) {
        if (!(r[0] > 0)) return;
        g.strokeStyle = r[1]; g.setLineDash([4, 4]);
        g.beginPath(); g.moveTo(AXIS_W, y(r[0]) + 0.5); g.lineTo(AXIS_W + plotW, y(r[0]) + 0.5); g.stroke();
        g.setLineDash([]);
        g.fillStyle = r[1]; g.textAlign = r[3]; g.textBaseline = "bottom";
        g.fillText(r[2] + " " + human(r[0]), r[3] === "left" ? AXIS_W + 4 : AXIS_W + plotW - 4, y(r[0]) - 1);
      });
      g.textAlign = "left"; g.textBaseline = "top"; g.fillStyle = "#5f6b78";
      g.fillText("measured arena bytes in use: " + kinds.join(", ") + " (solid); time \u2192", AXIS_W + 4, top + liveH + 2);
    }
  }

  // Every section's elements first, then the drawing: a canvas takes its width from the layout,
  // which is final only once all the sections are in it.
  const container = document.getElementById("plans");
  if (compare) container.before(peakBars());
  const built = plans.map(function (P, pi) {
    const model = models[pi];
    const section = el("section", { class: "plan", "data-title": P.title });
    container.append(section);
    const head = el("div", { class: "plan-head" }, el("h2", { text: P.title || "plan" }));
    section.append(head);
    if (!model) {
      section.setAttribute("data-refused", "true");
      section.append(el("div", { class: "refused", text: P.refused }));
      return null;
    }
    const dev = model[0], host = model[1];
    section.setAttribute("data-peak-bytes", String(dev.peak));
    section.setAttribute("data-host-peak-bytes", String(host.peak));
    section.setAttribute("data-plan-peak-bytes", String(P.stats.peak_memory_in_bytes));
    section.setAttribute("data-plan-host-peak-bytes", String(P.stats.host_peak_memory_in_bytes));
    section.setAttribute("data-peak-position", String(dev.peakAt));
    const over = DATA.limit > 0 && dev.peak > DATA.limit;
    head.append(el("span", { class: "peak-big" + (over ? " over" : ""), text: "device peak " + human(dev.peak) + (over ? " (over the limit)" : "") }),
                el("span", { class: "peak-big", text: "host peak " + human(host.peak) }));
    if (dev.peak !== P.stats.peak_memory_in_bytes || host.peak !== P.stats.host_peak_memory_in_bytes)
      section.append(el("div", { class: "error-box", text: "The drawing's peaks (" + dev.peak + ", " + host.peak + " bytes) differ from the plan's (" +
        P.stats.peak_memory_in_bytes + ", " + P.stats.host_peak_memory_in_bytes + "): a ferry bug." }));
    const s = P.stats;
    section.append(el("div", { class: "muted", text: "device peak = arguments " + human(s.argument_size_in_bytes) + " + outputs " +
      human(s.output_size_in_bytes) + " + temporaries " + human(s.temp_size_in_bytes) + " \u2212 aliased " + human(s.alias_size_in_bytes) +
      "; peak " + placeText(P, dev.peakAt) + "; " + P.n + " equations" }));
    const mkView = function (label) {
      const wrap = el("div", { class: "chart" });
      const canvas = el("canvas"), overlay = el("canvas", { class: "overlay" });
      wrap.append(canvas, overlay);
      section.append(el("div", { class: "lane-label" }, el("span", { text: label })), wrap);
      return { wrap: wrap, canvas: canvas, overlay: overlay };
    };
    const views = [mkView("device memory over the schedule (positions 0\u2013" + P.n + ")"), null, null];
    views[2] = mkView("copies between device and host");
    views[1] = mkView("host memory (pinned and unpinned)");
    const pick = function (m) { return function (it, t) { select(P, model, views, m, it, t); }; };
    const tables = el(compare ? "details" : "div", {});
    if (compare) tables.append(el("summary", { text: "buffers live at the peaks" }));
    tables.append(el("h3", { text: "Live at the device peak (" + human(dev.peak) + ", " + placeText(P, dev.peakAt) + ")" }),
                  peakTable(P, dev, 0, pick(0)));
    if (host.peak > 0)
      tables.append(el("h3", { text: "Live at the host peak (" + human(host.peak) + ", " + placeText(P, host.peakAt) + ")" }),
                    peakTable(P, host, 1, pick(1)));
    section.append(tables);
    const measured = P.measured ? el("div", { class: "measured" }) : null;
    if (measured) {
      measured.append(el("h3", { text: "Measured: the last recorded run (" + P.measured.ms.toFixed(2) + " ms), beside the plan" }),
                      el("div", { class: "chart" }, el("canvas")));
      section.append(measured);
    }
    return { P: P, model: model, views: views, measured: measured };
  });

  function drawAll() {
    const bars = compare ? document.querySelector(".peak-bars") : null;
    const barsWidth = bars ? bars.clientWidth : 0;
    built.forEach(function (B) {
      if (!B) return;
      B.width = Math.max(200, B.views[0].wrap.clientWidth || 800);
      if (B.measured) B.measuredWidth = Math.max(200, B.measured.clientWidth || 800);
    });
    if (bars) bars.draw(barsWidth);
    built.forEach(function (B) {
      if (!B) return;
      const P = B.P, model = B.model, views = B.views;
      const heights = compare ? [170, 80] : [300, 150];
      views[0].drawn = drawLane(views[0], model[0], P, scales[0], heights[0], DATA.limit, B.width);
      views[1].drawn = drawLane(views[1], model[1], P, scales[1] > 0 ? scales[1] : 1, heights[1], 0, B.width);
      for (const m of [0, 1]) highlight(views[m], model[m], views[m].drawn, null);
      B.copies = drawCopies(views[2], P, model[0], views[0].drawn.plotW, B.width);
      if (B.measured) drawMeasured(P, B.measured, B.measuredWidth);
    });
  }
  drawAll();

  // Hovering and clicking read what the last drawing made (drawAll runs again when the window's
  // width changes, e.g. a notebook's output area).
  built.forEach(function (B) {
    if (!B) return;
    const P = B.P, model = B.model, views = B.views, copyView = views[2];
    [0, 1].forEach(function (m) {
      const v = views[m];
      v.canvas.addEventListener("mousemove", function (ev) {
        const hit = itemAt(model[m], v.drawn, ev, v.canvas);
        if (hit && hit.it) showTip(ev, describe(hit.it, hit.t) + "  \u2014  " + CATS[catAt(hit.it, hit.t)].label);
        else if (hit) showTip(ev, "position " + hit.t + ": " + human(model[m].total[hit.t]) + " " + placeText(P, hit.t));
        else hideTip();
      });
      v.canvas.addEventListener("mouseleave", hideTip);
      v.canvas.addEventListener("click", function (ev) {
        const hit = itemAt(model[m], v.drawn, ev, v.canvas);
        select(P, model, views, m, hit ? hit.it : null, hit ? hit.t : 0);
      });
    });
    copyView.canvas.addEventListener("mousemove", function (ev) {
      const r = copyView.canvas.getBoundingClientRect(), x = ev.clientX - r.left, yy = ev.clientY - r.top;
      const row = yy < 2 + B.copies.rowH ? 0 : 1;
      const bar = B.copies.bars.find(function (b) { return b.row === row && x >= b.x0 && x <= b.x1; });
      if (!bar) { hideTip(); return; }
      const c = bar.c;
      showTip(ev, (c[3] ? "to device: " : "to host: ") + human(c[2]) + (c[5] > 1 ? " in " + c[5] + " copies inside " : ", started by ") +
                  eqText(P, c[4]) + (c[1] !== c[0] ? "; done at " + eqText(P, c[1]) : ""));
    });
    copyView.canvas.addEventListener("mouseleave", hideTip);
  });
  // A link to a buffer: page.html#buffer=12 (the plan's buffer 12) or #plan=1&buffer=12 selects it
  // as a click would.
  const wanted = new URLSearchParams(location.hash.slice(1));
  if (wanted.has("buffer")) {
    const B = built[Number(wanted.get("plan") || 0)];
    const index = Number(wanted.get("buffer"));
    for (const m of B ? [0, 1] : []) {
      const it = B.model[m].items.find(function (x) { return x.kind === "buffer" && x.b.i === index; });
      if (it) { select(B.P, B.model, B.views, m, it, it.start); break; }
    }
  }

  let lastWidth = window.innerWidth, pending = 0;
  window.addEventListener("resize", function () {
    if (window.innerWidth === lastWidth) return;
    lastWidth = window.innerWidth;
    clearTimeout(pending);
    pending = setTimeout(drawAll, 150);
  });

  document.addEventListener("keydown", function (ev) { if (ev.key === "Escape") detail.hidden = true; });
  // Milliseconds from the start of navigation until everything was drawn: how long the page takes to open.
  document.body.setAttribute("data-ready-ms", String(Math.round(performance.now())));
  if (!window.ferryErrors.length) document.body.setAttribute("data-status", "ok");
})();
</script>
</body>
</html>
)FERRYPAGE";

}  // namespace ferry::driver
