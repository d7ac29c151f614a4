// hsched run report: draws the tables and figures from the JSON embedded in
// the page (inlined into the report by crates/report/src/html.rs). Plain
// JavaScript, no library: canvases for the figures, one tooltip element.
(function () {
  "use strict";

  // Errors land in the page (#errors, and a count in body[data-errors]) so
  // that a headless browser's dumped DOM shows them.
  var errorCount = 0;
  function recordError(message) {
    errorCount += 1;
    document.getElementById("errors").textContent += message + "\n";
    document.body.setAttribute("data-errors", String(errorCount));
  }
  window.addEventListener("error", function (e) {
    recordError("error: " + e.message + " (line " + e.lineno + ")");
  });
  window.addEventListener("unhandledrejection", function (e) {
    recordError("unhandled rejection: " + e.reason);
  });
  var consoleError = console.error;
  console.error = function () {
    recordError("console.error: " + Array.prototype.join.call(arguments, " "));
    consoleError.apply(console, arguments);
  };

  var D = JSON.parse(document.getElementById("report-data").textContent);
  var M = D.metrics;
  var HORIZON = M.global.horizon_ns;
  var PALETTE = ["#4e79a7", "#f28e2b", "#e15759", "#76b7b2", "#59a14f",
    "#edc948", "#b07aa1", "#ff9da7", "#9c755f", "#86bcb6"];
  var SWITCH_COLOUR = "#8a8f96";
  var INTERRUPT_COLOUR = "#c0392b";
  // Slot::code of interrupt handlers (figures.rs, INTERRUPT_CODE).
  var INTERRUPT_CODE = 1099511627776;

  // ---- formatting ----
  function trimNumber(x) {
    var digits = Math.abs(x) >= 100 ? 1 : Math.abs(x) >= 10 ? 2 : 3;
    return x.toFixed(digits).replace(/\.?0+$/, "");
  }
  function fmtNs(ns) {
    var a = Math.abs(ns);
    if (a === 0) return "0";
    if (a >= 1e9) return trimNumber(ns / 1e9) + " s";
    if (a >= 1e6) return trimNumber(ns / 1e6) + " ms";
    if (a >= 1e3) return trimNumber(ns / 1e3) + " µs";
    return trimNumber(ns) + " ns";
  }
  function fmtShare(x) { return x === null || x === undefined ? "—" : (100 * x).toFixed(2) + " %"; }
  function fmtOpt(ns) { return ns === null || ns === undefined ? "—" : fmtNs(ns); }
  function niceStep(span, count) {
    var raw = span / Math.max(1, count);
    var p = Math.pow(10, Math.floor(Math.log10(raw)));
    var steps = [1, 2, 5, 10];
    for (var i = 0; i < steps.length; i++) if (steps[i] * p >= raw) return steps[i] * p;
    return 10 * p;
  }

  // ---- threads and colours ----
  var threadIndex = {};
  D.threads.forEach(function (t, i) { threadIndex[t.id] = i; });
  function threadName(id) {
    var i = threadIndex[id];
    return i === undefined ? "thread" + id : D.threads[i].name;
  }
  function colourAt(i) {
    if (i < PALETTE.length) return PALETTE[i];
    return "hsl(" + ((i * 137.508) % 360).toFixed(1) + ", 55%, 52%)";
  }
  function threadColour(id) {
    var i = threadIndex[id];
    return colourAt(i === undefined ? id : i);
  }

  // ---- DOM helpers ----
  function el(tag, attrs, children) {
    var e = document.createElement(tag);
    Object.keys(attrs || {}).forEach(function (k) {
      if (k === "text") e.textContent = attrs[k];
      else if (k === "class") e.className = attrs[k];
      else e.setAttribute(k, attrs[k]);
    });
    (children || []).forEach(function (c) { e.appendChild(typeof c === "string" ? document.createTextNode(c) : c); });
    return e;
  }
  function swatch(colour) {
    var s = el("span", { class: "swatch" });
    s.style.background = colour;
    return s;
  }
  function table(id, head, rows) {
    var t = document.getElementById(id);
    t.textContent = "";
    var tr = el("tr");
    head.forEach(function (h) { tr.appendChild(el("th", { text: h.label, class: h.text ? "text" : "" })); });
    t.appendChild(el("thead", {}, [tr]));
    var body = el("tbody");
    rows.forEach(function (r) {
      var row = el("tr");
      r.forEach(function (cell, i) {
        var td = el("td", { class: (head[i].text ? "text " : "") + (cell && cell.bad ? "bad" : "") });
        if (cell && cell.node) td.appendChild(cell.node);
        td.appendChild(document.createTextNode(cell && cell.value !== undefined ? cell.value : cell));
        row.appendChild(td);
      });
      body.appendChild(row);
    });
    t.appendChild(body);
  }

  var tooltip = document.getElementById("tooltip");
  function showTip(e, text) {
    if (!text) { tooltip.hidden = true; return; }
    tooltip.textContent = text;
    tooltip.hidden = false;
    var x = e.clientX + 14, y = e.clientY + 14;
    var w = tooltip.offsetWidth, h = tooltip.offsetHeight;
    if (x + w > window.innerWidth - 4) x = e.clientX - w - 10;
    if (y + h > window.innerHeight - 4) y = e.clientY - h - 10;
    tooltip.style.left = x + "px";
    tooltip.style.top = y + "px";
  }
  function hideTip() { tooltip.hidden = true; }

  function setupCanvas(canvas, height) {
    var width = canvas.parentNode.clientWidth || 800;
    var dpr = window.devicePixelRatio || 1;
    canvas.width = Math.round(width * dpr);
    canvas.height = Math.round(height * dpr);
    canvas.style.height = height + "px";
    var ctx = canvas.getContext("2d");
    ctx.setTransform(dpr, 0, 0, dpr, 0, 0);
    ctx.clearRect(0, 0, width, height);
    return { ctx: ctx, w: width, h: height };
  }

  // ---- summary ----
  function summary() {
    var g = M.global;
    var facts = [
      ["scenario", g.scenario], ["platform", g.platform], ["seed", String(g.seed)],
      ["CPUs", String(g.cpus)], ["horizon", fmtNs(g.horizon_ns)],
      ["decisions", String(g.decisions)], ["events", String(g.events)],
      ["busy (all CPUs)", fmtNs(g.busy_ns)], ["switch overhead", fmtNs(g.overhead_ns)],
      ["idle", fmtShare(g.idle_fraction)], ["jobs", String(g.jobs)],
      ["deadline misses", String(g.deadline_misses)]
    ];
    var box = document.getElementById("global");
    facts.forEach(function (f) { box.appendChild(el("div", {}, [el("b", { text: f[0] }), f[1]])); });
    // The bounds the run reached: what the figures below leave out or
    // count another way.
    var limits = M.limits || [];
    if (limits.length > 0) {
      var lbox = document.getElementById("limits");
      lbox.appendChild(el("b", { text: "limits reached" }));
      var list = el("ul", {}, limits.map(function (l) { return el("li", { text: l }); }));
      lbox.appendChild(list);
    }

    table("thread-table", [
      { label: "thread", text: true }, { label: "scheduler", text: true }, { label: "CPU time" },
      { label: "share" }, { label: "guarantee", text: true }, { label: "guaranteed" },
      { label: "wakeups" }, { label: "latency p50" }, { label: "p99" }, { label: "max" },
      { label: "jobs" }, { label: "misses" }, { label: "max gap" }, { label: "switches" },
      { label: "migrations" }
    ], M.threads.map(function (t) {
      var l = t.wakeup_latency;
      return [
        { node: swatch(threadColour(t.id)), value: t.name }, t.scheduler, fmtNs(t.cpu_time_ns),
        fmtShare(t.share), t.guarantee || "—", fmtShare(t.guaranteed_share),
        String(l.count), fmtOpt(l.p50_ns), fmtOpt(l.p99_ns), fmtOpt(l.max_ns),
        String(t.jobs), { value: String(t.deadline_misses), bad: t.deadline_misses > 0 },
        fmtNs(t.max_gap_ns), String(t.context_switches), String(t.migrations)
      ];
    }));
    table("sched-table", [
      { label: "scheduler", text: true }, { label: "policy", text: true }, { label: "alive", text: true },
      { label: "received" }, { label: "share" }, { label: "guarantee", text: true }, { label: "guaranteed" }
    ], M.schedulers.map(function (s) {
      return [s.name, s.policy, s.alive ? "yes" : "no", fmtNs(s.received_ns),
        fmtShare(s.share), s.guarantee || "—", fmtShare(s.guaranteed_share)];
    }));
    var logRows = M.log.map(function (e) { return [fmtNs(e.at_ns), e.kind, e.text]; });
    if (D.log_dropped > 0) logRows.push(["", "", "… and " + D.log_dropped + " more entries (see --json)"]);
    if (logRows.length === 0) logRows.push(["", "", "(nothing logged)"]);
    table("log-table", [{ label: "at" }, { label: "kind", text: true }, { label: "what", text: true }], logRows);
  }

  // ---- timeline ----
  // Rows: [{label, starts, ends, keys}] where a key is what to colour: a
  // thread id for a run, -1 a switch, -2 idle (not drawn).
  function buildRows() {
    var rows = [];
    var perThread = {};
    D.threads.forEach(function (t) { perThread[t.id] = []; });
    D.timeline.cpus.forEach(function (cpu, c) {
      var n = cpu.d.length;
      var starts = new Float64Array(n), ends = new Float64Array(n), keys = new Int32Array(n);
      var at = 0;
      for (var i = 0; i < n; i++) {
        var code = cpu.k[i];
        starts[i] = at;
        at += cpu.d[i];
        ends[i] = at;
        if (code === 0) keys[i] = -2;
        else if (code === INTERRUPT_CODE) keys[i] = -3;
        else if (code % 2 === 1) {
          keys[i] = (code - 1) / 2;
          (perThread[keys[i]] = perThread[keys[i]] || []).push([starts[i], ends[i], c]);
        } else keys[i] = -1;
      }
      rows.push({ label: "cpu" + c, kind: "cpu", starts: starts, ends: ends, keys: keys, height: 22 });
    });
    D.threads.forEach(function (t) {
      var segs = perThread[t.id].sort(function (a, b) { return a[0] - b[0]; });
      var n = segs.length;
      var row = { label: t.name, kind: "thread", id: t.id, starts: new Float64Array(n),
        ends: new Float64Array(n), keys: new Int32Array(n), cpus: new Int32Array(n), height: 18 };
      segs.forEach(function (s, i) { row.starts[i] = s[0]; row.ends[i] = s[1]; row.keys[i] = t.id; row.cpus[i] = s[2]; });
      rows.push(row);
    });
    return rows;
  }
  // First index whose end is after `t` (ends ascend within a row).
  function firstEndingAfter(ends, t) {
    var lo = 0, hi = ends.length;
    while (lo < hi) { var mid = (lo + hi) >> 1; if (ends[mid] <= t) lo = mid + 1; else hi = mid; }
    return lo;
  }

  var TL = { rows: null, t0: 0, t1: HORIZON, left: 130, top: 26, gap: 8 };
  function tlLayout() {
    var y = TL.top;
    TL.rows.forEach(function (r, i) {
      if (i > 0 && r.kind !== TL.rows[i - 1].kind) y += TL.gap;
      r.y = y;
      y += r.height;
    });
    return y + 6;
  }
  function drawTimeline() {
    var canvas = document.getElementById("tl-canvas");
    var height = tlLayout();
    var c = setupCanvas(canvas, height);
    var ctx = c.ctx, left = TL.left, plotW = c.w - left - 10;
    TL.plotW = plotW;
    // Where the rows are drawn, in page pixels (for tests that look at a
    // screenshot): x, y, width, height.
    var box = canvas.getBoundingClientRect();
    canvas.setAttribute("data-plot-box", [box.left + window.scrollX + left, box.top + window.scrollY + TL.top,
      plotW, height - TL.top - 6].map(Math.round).join(","));
    var span = TL.t1 - TL.t0, k = plotW / span;
    function X(t) { return left + (t - TL.t0) * k; }
    // Axis and grid.
    var step = niceStep(span, plotW / 110);
    ctx.font = "11px system-ui, sans-serif";
    ctx.textBaseline = "middle";
    ctx.fillStyle = "#5b6570";
    ctx.textAlign = "center";
    for (var t = Math.ceil(TL.t0 / step) * step; t <= TL.t1; t += step) {
      var x = X(t);
      ctx.fillStyle = "#eef1f4";
      ctx.fillRect(Math.round(x), TL.top, 1, height - TL.top - 6);
      ctx.fillStyle = "#5b6570";
      var label = fmtNs(t), half = ctx.measureText(label).width / 2;
      ctx.fillText(label, Math.min(x, c.w - half - 2), 11);
    }
    ctx.textAlign = "right";
    TL.rows.forEach(function (r, i) {
      ctx.fillStyle = i % 2 ? "#fafbfc" : "#f3f5f7";
      ctx.fillRect(left, r.y, plotW, r.height - 2);
      ctx.fillStyle = "#1d232b";
      ctx.fillText(r.label.length > 18 ? r.label.slice(0, 17) + "…" : r.label, left - 8, r.y + r.height / 2);
      drawRow(ctx, r, X, left, plotW);
    });
    drawMarks(ctx, X, left, plotW);
  }
  function keyColour(key) {
    return key === -1 ? SWITCH_COLOUR : key === -3 ? INTERRUPT_COLOUR : threadColour(key);
  }
  // Segments at least a pixel wide are drawn as they are; narrower ones are
  // summed per pixel column, which is drawn in the colour of what covered
  // most of it, as opaque as the column is covered.
  function drawRow(ctx, r, X, left, plotW) {
    var y = r.y, h = r.height - 2;
    var col = -1, acc = {}, covered = 0;
    function flush() {
      if (col < 0) return;
      var best = null, bestW = 0;
      Object.keys(acc).forEach(function (key) { if (acc[key] > bestW) { bestW = acc[key]; best = +key; } });
      if (best !== null) {
        ctx.globalAlpha = Math.max(0.35, Math.min(1, covered));
        ctx.fillStyle = keyColour(best);
        ctx.fillRect(col, y, 1, h);
        ctx.globalAlpha = 1;
      }
      col = -1; acc = {}; covered = 0;
    }
    var right = left + plotW;
    for (var i = firstEndingAfter(r.ends, TL.t0); i < r.starts.length && r.starts[i] < TL.t1; i++) {
      var x0 = Math.max(left, X(r.starts[i])), x1 = Math.min(right, X(r.ends[i]));
      var key = r.keys[i];
      if (x1 - x0 >= 1) {
        flush();
        if (key === -2) continue;
        ctx.fillStyle = keyColour(key);
        ctx.fillRect(x0, y, x1 - x0, h);
      } else {
        var c = Math.floor(x0);
        if (c !== col) { flush(); col = c; }
        if (key !== -2) { acc[key] = (acc[key] || 0) + (x1 - x0); covered += x1 - x0; }
      }
    }
    flush();
  }
  function markRange() {
    var lo = 0, hi = D.marks.length;
    while (lo < hi) { var mid = (lo + hi) >> 1; if (D.marks[mid][0] < TL.t0) lo = mid + 1; else hi = mid; }
    return lo;
  }
  function drawMarks(ctx, X) {
    var rowOf = {};
    TL.rows.forEach(function (r) { if (r.kind === "thread") rowOf[r.id] = r; });
    var first = markRange(), releases = 0, i;
    for (i = first; i < D.marks.length && D.marks[i][0] <= TL.t1; i++) if (D.marks[i][2] === "release") releases++;
    // Release ticks closer than a few pixels would be a solid bar: zoom in
    // to see them.
    var showReleases = releases * 4 <= TL.plotW * Math.max(1, Object.keys(rowOf).length);
    for (i = first; i < D.marks.length && D.marks[i][0] <= TL.t1; i++) {
      var m = D.marks[i], x = X(m[0]);
      if (m[2] === "eject") {
        ctx.fillStyle = "#c62828";
        ctx.fillRect(Math.round(x), TL.top, 2, TL.rows[TL.rows.length - 1].y + 18 - TL.top);
        continue;
      }
      var r = rowOf[m[1]];
      if (!r) continue;
      if (m[2] === "release") {
        if (!showReleases) continue;
        ctx.fillStyle = "#1d232b";
        ctx.fillRect(Math.round(x), r.y, 1, 5);
      } else if (m[2] === "miss") {
        ctx.fillStyle = "#c62828";
        ctx.beginPath();
        ctx.moveTo(x, r.y + r.height - 9);
        ctx.lineTo(x - 4, r.y + r.height - 2);
        ctx.lineTo(x + 4, r.y + r.height - 2);
        ctx.closePath();
        ctx.fill();
      }
    }
  }
  function timelineTip(e) {
    var canvas = document.getElementById("tl-canvas");
    var rect = canvas.getBoundingClientRect();
    var mx = e.clientX - rect.left, my = e.clientY - rect.top;
    if (mx < TL.left || mx > TL.left + TL.plotW) return null;
    var t = TL.t0 + (mx - TL.left) / TL.plotW * (TL.t1 - TL.t0);
    var row = null;
    TL.rows.forEach(function (r) { if (my >= r.y && my < r.y + r.height) row = r; });
    if (!row) return null;
    var lines = [row.label + " at " + fmtNs(t)];
    var i = firstEndingAfter(row.ends, t);
    if (i < row.starts.length && row.starts[i] <= t) {
      var key = row.keys[i], what;
      if (key === -2) what = "idle";
      else if (key === -1) what = "context switch";
      else if (key === -3) what = "interrupt handlers";
      else what = threadName(key) + " runs" + (row.kind === "thread" ? " on cpu" + row.cpus[i] : "");
      lines.push(what + ": " + fmtNs(row.starts[i]) + " → " + fmtNs(row.ends[i]) +
        " (" + fmtNs(row.ends[i] - row.starts[i]) + ")");
    } else if (row.kind === "thread") {
      lines.push("not running");
    }
    var slack = 4 / TL.plotW * (TL.t1 - TL.t0);
    D.marks.forEach(function (m) {
      if (Math.abs(m[0] - t) <= slack && (m[1] === row.id || m[2] === "eject") && lines.length < 8) {
        lines.push(m[3] + " at " + fmtNs(m[0]));
      }
    });
    return lines.join("\n");
  }
  function setView(t0, t1) {
    var span = Math.min(HORIZON, Math.max(1000, t1 - t0));
    t0 = Math.max(0, Math.min(HORIZON - span, t0));
    TL.t0 = t0;
    TL.t1 = t0 + span;
    drawTimeline();
  }
  function timeline() {
    TL.rows = buildRows();
    if (D.marks_dropped > 0) {
      document.getElementById("tl-note").appendChild(document.createTextNode(" Only the first " +
        D.marks_per_kind + " marks of each kind are shown (" + D.marks_dropped + " left out)."));
    }
    var legend = document.getElementById("tl-legend");
    D.threads.forEach(function (t) { legend.appendChild(el("span", {}, [swatch(threadColour(t.id)), t.name])); });
    legend.appendChild(el("span", {}, [swatch(SWITCH_COLOUR), "context switch"]));
    var canvas = document.getElementById("tl-canvas");
    var drag = null;
    canvas.addEventListener("wheel", function (e) {
      e.preventDefault();
      var rect = canvas.getBoundingClientRect();
      var frac = Math.min(1, Math.max(0, (e.clientX - rect.left - TL.left) / TL.plotW));
      var span = TL.t1 - TL.t0, at = TL.t0 + frac * span;
      var next = span * Math.exp(e.deltaY * 0.0015);
      setView(at - frac * next, at - frac * next + next);
    }, { passive: false });
    canvas.addEventListener("mousedown", function (e) {
      drag = { x: e.clientX, t0: TL.t0, t1: TL.t1 };
      canvas.classList.add("dragging");
    });
    window.addEventListener("mouseup", function () { drag = null; canvas.classList.remove("dragging"); });
    canvas.addEventListener("mousemove", function (e) {
      if (drag) {
        var dt = (e.clientX - drag.x) / TL.plotW * (drag.t1 - drag.t0);
        setView(drag.t0 - dt, drag.t1 - dt);
        hideTip();
      } else showTip(e, timelineTip(e));
    });
    canvas.addEventListener("mouseleave", hideTip);
    canvas.addEventListener("dblclick", function () { setView(0, HORIZON); });
    document.getElementById("tl-reset").addEventListener("click", function () { setView(0, HORIZON); });
    drawTimeline();
  }

  // ---- a small x/y chart ----
  function axes(c, opts) {
    var ctx = c.ctx, box = { l: 64, r: c.w - 14, t: 12, b: c.h - 40 };
    var xlog = !!opts.xlog;
    var xmin = opts.x[0], xmax = opts.x[1];
    if (xlog) { xmin = Math.log10(Math.max(xmin, 1)); xmax = Math.log10(Math.max(xmax, 10)); }
    if (xmax <= xmin) xmax = xmin + 1;
    function X(v) {
      var u = xlog ? Math.log10(Math.max(v, Math.pow(10, xmin))) : v;
      return box.l + (u - xmin) / (xmax - xmin) * (box.r - box.l);
    }
    function Y(v) { return box.b - (v - opts.y[0]) / (opts.y[1] - opts.y[0]) * (box.b - box.t); }
    ctx.font = "11px system-ui, sans-serif";
    ctx.fillStyle = "#5b6570";
    ctx.textAlign = "right";
    ctx.textBaseline = "middle";
    var ys = niceStep(opts.y[1] - opts.y[0], 5);
    for (var v = Math.ceil(opts.y[0] / ys) * ys; v <= opts.y[1] + 1e-12; v += ys) {
      ctx.fillStyle = "#eef1f4";
      ctx.fillRect(box.l, Math.round(Y(v)), box.r - box.l, 1);
      ctx.fillStyle = "#5b6570";
      ctx.fillText(opts.yfmt(v), box.l - 6, Y(v));
    }
    ctx.textAlign = "center";
    ctx.textBaseline = "top";
    if (xlog) {
      for (var p = Math.ceil(xmin); p <= Math.floor(xmax); p++) {
        ctx.fillText(fmtNs(Math.pow(10, p)), X(Math.pow(10, p)), box.b + 6);
        ctx.fillStyle = "#eef1f4";
        ctx.fillRect(Math.round(X(Math.pow(10, p))), box.t, 1, box.b - box.t);
        ctx.fillStyle = "#5b6570";
      }
    } else {
      var xs = niceStep(xmax - xmin, (box.r - box.l) / 90);
      for (var x = Math.ceil(xmin / xs) * xs; x <= xmax; x += xs) ctx.fillText(fmtNs(x), X(x), box.b + 6);
    }
    ctx.strokeStyle = "#9aa3ad";
    ctx.lineWidth = 1;
    ctx.strokeRect(box.l + 0.5, box.t + 0.5, box.r - box.l, box.b - box.t);
    ctx.fillStyle = "#1d232b";
    ctx.fillText(opts.xlabel, (box.l + box.r) / 2, box.b + 22);
    ctx.save();
    ctx.translate(14, (box.t + box.b) / 2);
    ctx.rotate(-Math.PI / 2);
    ctx.textBaseline = "middle";
    ctx.fillText(opts.ylabel, 0, 0);
    ctx.restore();
    return { X: X, Y: Y, box: box, ctx: ctx };
  }
  function toggleLegend(id, series, hidden, redraw) {
    var legend = document.getElementById(id);
    legend.textContent = "";
    series.forEach(function (s) {
      var label = el("label", { class: hidden[s.name] ? "off" : "" }, [swatch(s.colour), s.name]);
      label.addEventListener("click", function () { hidden[s.name] = !hidden[s.name]; redraw(); });
      legend.appendChild(label);
    });
  }

  // ---- CPU share over time ----
  var shareMode = "threads", shareHidden = {};
  function binLen(i) {
    var b = D.shares.bin_ns, s = b * i;
    return Math.min(HORIZON, s + b) - s;
  }
  function shareSeries() {
    if (shareMode === "threads") {
      return D.shares.threads.map(function (t) { return { name: threadName(t[0]), colour: threadColour(t[0]), ns: t[1] }; });
    }
    if (shareMode === "nodes") {
      return D.shares.nodes.map(function (n, i) { return { name: n[0], colour: colourAt(i), ns: n[1] }; });
    }
    return D.shares.cpus.map(function (ns, i) { return { name: "cpu" + i, colour: colourAt(i), ns: ns }; });
  }
  // Each bin's share, averaged over `w` bins centred on it (w = 1: as
  // recorded), so a line of 10 ms bins that flips between 0 and 1 reads as
  // the share it averages to.
  function smoothed(ns, w) {
    var share = ns.map(function (v, i) { return v / binLen(i); });
    if (w <= 1) return share;
    var half = Math.floor(w / 2);
    return share.map(function (_, i) {
      var lo = Math.max(0, i - half), hi = Math.min(share.length, i + half + 1), sum = 0;
      for (var k = lo; k < hi; k++) sum += share[k];
      return sum / (hi - lo);
    });
  }
  function shareWindow() {
    var select = document.getElementById("share-smooth");
    return select ? Math.max(1, +select.value) : 1;
  }
  function drawShares() {
    var series = shareSeries();
    toggleLegend("share-legend", series, shareHidden, drawShares);
    var c = setupCanvas(document.getElementById("share-canvas"), 300);
    var w = shareWindow();
    var stacked = document.getElementById("share-stacked").checked;
    var shown = series.filter(function (s) { return !shareHidden[s.name]; });
    shown.forEach(function (s) { s.values = smoothed(s.ns, w); });
    // Stacked: each series sits on the sum of those before it.
    var base = [];
    for (var i = 0; i < D.shares.bins; i++) base.push(0);
    shown.forEach(function (s) {
      s.low = base.slice();
      if (stacked) s.values.forEach(function (v, i) { base[i] += v; });
      s.high = stacked ? base.slice() : s.values;
    });
    var ymax = 1;
    shown.forEach(function (s) { s.high.forEach(function (v) { ymax = Math.max(ymax, v); }); });
    var a = axes(c, { x: [0, HORIZON], y: [0, ymax * 1.05], xlabel: "time",
      ylabel: "share of one CPU", yfmt: function (v) { return trimNumber(v); } });
    var ctx = a.ctx;
    ctx.lineWidth = 1.6;
    // Smoothed values are drawn through the bins' middles; recorded ones as steps.
    function trace(values, forward) {
      var n = values.length;
      for (var k = 0; k < n; k++) {
        var i = forward ? k : n - 1 - k;
        var t0 = i * D.shares.bin_ns, t1 = t0 + binLen(i), y = a.Y(values[i]);
        if (w > 1) {
          var x = a.X((t0 + t1) / 2);
          if (k === 0 && forward) ctx.moveTo(x, y); else ctx.lineTo(x, y);
        } else {
          var xa = a.X(forward ? t0 : t1), xb = a.X(forward ? t1 : t0);
          if (k === 0 && forward) ctx.moveTo(xa, y); else ctx.lineTo(xa, y);
          ctx.lineTo(xb, y);
        }
      }
    }
    shown.forEach(function (s) {
      ctx.beginPath();
      trace(s.high, true);
      if (stacked) {
        trace(s.low, false);
        ctx.closePath();
        ctx.globalAlpha = 0.75;
        ctx.fillStyle = s.colour;
        ctx.fill();
        ctx.globalAlpha = 1;
      } else {
        ctx.strokeStyle = s.colour;
        ctx.stroke();
      }
    });
    var canvas = document.getElementById("share-canvas");
    canvas.onmousemove = function (e) {
      var rect = canvas.getBoundingClientRect(), mx = e.clientX - rect.left;
      if (mx < a.box.l || mx > a.box.r) return hideTip();
      var t = (mx - a.box.l) / (a.box.r - a.box.l) * HORIZON;
      var i = Math.min(D.shares.bins - 1, Math.floor(t / D.shares.bin_ns));
      var rows = series.filter(function (s) { return !shareHidden[s.name]; })
        .map(function (s) { return [s.name, smoothed(s.ns, shareWindow())[i]]; })
        .sort(function (x, y) { return y[1] - x[1]; }).slice(0, 14);
      showTip(e, fmtNs(i * D.shares.bin_ns) + " → " + fmtNs(i * D.shares.bin_ns + binLen(i)) + "\n" +
        rows.map(function (r) { return r[0] + ": " + fmtShare(r[1]); }).join("\n"));
    };
    canvas.onmouseleave = hideTip;
  }
  function shares() {
    document.getElementById("share-note").textContent =
      "CPU time in bins of " + fmtNs(D.shares.bin_ns) + ", as a share of one CPU (1 = a whole CPU). " +
      "A scheduler node's line counts the time of every thread below it, under the scheduler it was " +
      "attached to at that moment. Approximate for a join: it passes its time to its parents in " +
      "proportion to the VPs it holds from each. Click a legend entry to hide or show it.";
    document.querySelectorAll("input[name=share-by]").forEach(function (input) {
      input.addEventListener("change", function () { shareMode = input.value; drawShares(); });
    });
    // Views: the bins as recorded, and moving averages over about 1/100 and
    // 1/25 of the run (the smoothest is the default).
    var select = document.getElementById("share-smooth");
    var choices = [[1, "bins of " + fmtNs(D.shares.bin_ns) + " (as recorded)"]];
    [100, 25].forEach(function (parts) {
      var w = Math.max(1, Math.round(D.shares.bins / parts));
      if (w > 1 && choices.every(function (c) { return c[0] !== w; })) {
        choices.push([w, "averaged over " + fmtNs(w * D.shares.bin_ns)]);
      }
    });
    choices.forEach(function (c) { select.appendChild(el("option", { value: String(c[0]), text: c[1] })); });
    select.value = String(choices[choices.length - 1][0]);
    select.addEventListener("change", drawShares);
    document.getElementById("share-stacked").addEventListener("change", drawShares);
    drawShares();
  }

  // ---- latency CDFs ----
  var cdfHidden = {};
  function drawCdf() {
    var canvas = document.getElementById("cdf-canvas");
    var series = D.latency.map(function (s) {
      return { name: threadName(s.thread), colour: threadColour(s.thread), n: s.samples, points: s.points };
    });
    toggleLegend("cdf-legend", series, cdfHidden, drawCdf);
    var c = setupCanvas(canvas, 300);
    if (series.length === 0) {
      c.ctx.fillStyle = "#5b6570";
      c.ctx.fillText("No wakeups were measured.", 20, 30);
      return;
    }
    var xmax = 1, xmin = Infinity;
    series.forEach(function (s) {
      if (cdfHidden[s.name]) return;
      s.points.forEach(function (p) { xmax = Math.max(xmax, p[0]); if (p[0] > 0) xmin = Math.min(xmin, p[0]); });
    });
    // A thread woken once or twice can stretch the axis so far that every
    // other curve is a wall at 0: unless the whole range is asked for, the
    // axis ends past the 99th percentile of the threads woken often enough
    // to have one, and what lies beyond runs off the right edge.
    var OFTEN = 20, whole = document.getElementById("cdf-all").checked, focus = 0;
    series.forEach(function (s) {
      if (cdfHidden[s.name] || s.n < OFTEN) return;
      var p99 = s.points.find(function (p) { return p[1] >= 0.99 * s.n; });
      if (p99) focus = Math.max(focus, p99[0]);
    });
    var full = xmax, cut = !whole && focus > 0 && focus * 1.25 < xmax;
    if (cut) xmax = focus * 1.25;
    var beyond = 0;
    if (cut) series.forEach(function (s) {
      if (cdfHidden[s.name]) return;
      var within = 0;
      s.points.forEach(function (p) { if (p[0] <= xmax) within = p[1]; });
      beyond += s.n - within;
    });
    document.getElementById("cdf-note").textContent = cut ?
      "The axis ends at " + fmtNs(xmax) + " (past the 99th percentile of the threads woken " + OFTEN +
      " times or more); " + beyond + " wakeup" + (beyond === 1 ? "" : "s") + " up to " + fmtNs(full) +
      " lie beyond it. Tick \u201cwhole range\u201d to see them." : "";
    var log = document.getElementById("cdf-log").checked;
    var a = axes(c, { x: [log ? Math.min(xmin, xmax) / 2 : 0, xmax * 1.02], y: [0, 1], xlog: log,
      xlabel: "wakeup-to-dispatch latency", ylabel: "fraction of wakeups",
      yfmt: function (v) { return (100 * v).toFixed(0) + " %"; } });
    var ctx = a.ctx;
    ctx.lineWidth = 1.8;
    ctx.save();
    ctx.beginPath();
    ctx.rect(a.box.l, a.box.t - 2, a.box.r - a.box.l, a.box.b - a.box.t + 4);
    ctx.clip();
    series.forEach(function (s) {
      if (cdfHidden[s.name]) return;
      ctx.strokeStyle = s.colour;
      ctx.beginPath();
      var prev = 0;
      ctx.moveTo(a.X(s.points[0][0]), a.Y(0));
      s.points.forEach(function (p) {
        ctx.lineTo(a.X(p[0]), a.Y(prev));
        prev = p[1] / s.n;
        ctx.lineTo(a.X(p[0]), a.Y(prev));
      });
      ctx.lineTo(Math.max(a.box.r, a.X(s.points[s.points.length - 1][0])), a.Y(prev));
      ctx.stroke();
    });
    ctx.restore();
    canvas.onmousemove = function (e) {
      var rect = canvas.getBoundingClientRect(), mx = e.clientX - rect.left;
      if (mx < a.box.l || mx > a.box.r) return hideTip();
      var lo = 0, hi = xmax * 1.02, x = 0;
      for (var k = 0; k < 50; k++) { x = (lo + hi) / 2; if (a.X(x) < mx) lo = x; else hi = x; }
      var lines = ["latency ≤ " + fmtNs(x)];
      series.forEach(function (s) {
        if (cdfHidden[s.name]) return;
        var below = 0;
        s.points.forEach(function (p) { if (p[0] <= x) below = p[1]; });
        lines.push(s.name + ": " + fmtShare(below / s.n) + " of " + s.n);
      });
      showTip(e, lines.join("\n"));
    };
    canvas.onmouseleave = hideTip;
  }

  // ---- response-time histograms ----
  function histograms() {
    var grid = document.getElementById("hist-grid");
    if (D.response.length === 0) grid.appendChild(el("p", { class: "note", text: "No jobs were recorded." }));
    D.response.forEach(function (h) {
      var canvas = el("canvas");
      var caption = threadName(h.thread) + " — " + h.jobs + " jobs, " + h.missed + " missed, " +
        h.unfinished + " unfinished; deadline " + (h.deadline_min_ns === h.deadline_max_ns ?
          fmtNs(h.deadline_min_ns) : fmtNs(h.deadline_min_ns) + "–" + fmtNs(h.deadline_max_ns));
      var fig = el("figure", {}, [el("figcaption", {}, [swatch(threadColour(h.thread)), caption]),
        el("div", { class: "canvas-box" }, [canvas])]);
      grid.appendChild(fig);
      h.canvas = canvas;
    });
    drawHistograms();
  }
  function drawHistograms() {
    D.response.forEach(function (h) {
      var c = setupCanvas(h.canvas, 210);
      var ymax = Math.max(1, Math.max.apply(null, h.counts));
      var xmax = h.counts.length * h.bin_ns;
      var a = axes(c, { x: [0, xmax], y: [0, ymax * 1.1], xlabel: "response time", ylabel: "jobs",
        yfmt: function (v) { return Number.isInteger(v) ? String(v) : ""; } });
      var ctx = a.ctx;
      ctx.globalAlpha = 0.25;
      ctx.fillStyle = "#c62828";
      if (h.deadline_max_ns > h.deadline_min_ns) {
        ctx.fillRect(a.X(h.deadline_min_ns), a.box.t, a.X(h.deadline_max_ns) - a.X(h.deadline_min_ns), a.box.b - a.box.t);
      }
      ctx.globalAlpha = 1;
      ctx.fillStyle = threadColour(h.thread);
      h.counts.forEach(function (n, i) {
        if (n === 0) return;
        var x0 = a.X(i * h.bin_ns), x1 = a.X((i + 1) * h.bin_ns);
        ctx.fillRect(x0 + 0.5, a.Y(n), Math.max(1, x1 - x0 - 1), a.Y(0) - a.Y(n));
      });
      ctx.strokeStyle = "#c62828";
      ctx.lineWidth = 2;
      ctx.setLineDash([5, 3]);
      ctx.beginPath();
      ctx.moveTo(a.X(h.deadline_min_ns), a.box.t);
      ctx.lineTo(a.X(h.deadline_min_ns), a.box.b);
      ctx.stroke();
      ctx.setLineDash([]);
      h.canvas.onmousemove = function (e) {
        var rect = h.canvas.getBoundingClientRect(), mx = e.clientX - rect.left;
        if (mx < a.box.l || mx > a.box.r) return hideTip();
        var i = Math.floor((mx - a.box.l) / (a.box.r - a.box.l) * h.counts.length);
        showTip(e, fmtNs(i * h.bin_ns) + " – " + fmtNs((i + 1) * h.bin_ns) + ": " + h.counts[i] + " jobs");
      };
      h.canvas.onmouseleave = hideTip;
    });
  }

  summary();
  timeline();
  shares();
  document.getElementById("cdf-log").addEventListener("change", drawCdf);
  document.getElementById("cdf-all").addEventListener("change", drawCdf);
  drawCdf();
  histograms();
  var resizeTimer = null;
  window.addEventListener("resize", function () {
    clearTimeout(resizeTimer);
    resizeTimer = setTimeout(function () { drawTimeline(); drawShares(); drawCdf(); drawHistograms(); }, 150);
  });
  document.body.setAttribute("data-ready", "1");
})();
